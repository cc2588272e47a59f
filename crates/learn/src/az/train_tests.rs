use super::*;
use crate::az::selfplay::Position;

/// A two-seat game of three decisions with root values 0.2, 0.6, 0.8 for seat 0 (and 1 minus
/// them for seat 1), won by seat 0.
fn record() -> SelfPlayGame {
    let position =
        |ply, q: f32| Position { ply, mover: (ply % 2) as usize, policy: Vec::new(), root_value: vec![q, 1.0 - q] };
    SelfPlayGame {
        seed: 0,
        actions: vec![0, 1, 2],
        positions: vec![position(0, 0.2), position(1, 0.6), position(2, 0.8)],
        returns: vec![1.0, 0.0],
    }
}

fn seat0(target: ValueTarget) -> Vec<f32> {
    target.targets(&record(), None).iter().map(|v| v[0]).collect()
}

fn close(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-6)
}

#[test]
fn the_score_margin_is_the_movers_lead_over_the_game_scale() {
    use meeple_games::{Cathedral, TicTacToe};
    let game = Cathedral::default();
    let mut rng = rng_from_seed(4);
    let mut state = game.initial_state();
    let mut legal = Vec::new();
    assert_eq!(score_margin(&state, 0), None, "an unfinished game has no margin");
    while state.returns().is_none() {
        let a = state.random_action(&mut rng, &mut legal);
        state.apply_unchecked(a);
    }
    let left = [state.squares_in_hand(0) as f32, state.squares_in_hand(1) as f32];
    let want = ((left[1] - left[0]) / 20.0).clamp(-1.0, 1.0);
    assert_eq!(score_margin(&state, 0), Some(want), "squares left {left:?}");
    assert_eq!(score_margin(&state, 1), Some(-want));
    // Random play leaves squares in hand: the target says by how much, not only who.
    assert!(left[0] != left[1], "{left:?}");
    let mut ttt = TicTacToe.initial_state();
    for a in [0, 3, 1, 4, 2] {
        ttt.apply_unchecked(a);
    }
    assert!(ttt.returns().is_some());
    assert_eq!(score_margin(&ttt, 0), None, "a game without a scale has no margin");
}

#[test]
fn value_targets_mix_the_result_with_the_short_term_search_value() {
    // λ 0: each position's own root value, half and half with the result.
    let own = seat0(ValueTarget::new(0.5, 0.0).unwrap());
    assert!(close(&own, &[0.6, 0.8, 0.9]), "{own:?}");
    // λ 0.5, search value alone: from the end, 0.5·0.8 + 0.5·1 = 0.9, 0.5·0.6 + 0.5·0.9 = 0.75,
    // 0.5·0.2 + 0.5·0.75 = 0.475.
    let short = seat0(ValueTarget::new(0.0, 0.5).unwrap());
    assert!(close(&short, &[0.475, 0.75, 0.9]), "{short:?}");
    // λ 1 is the result alone, whatever the mix; and the seats' targets still sum to 1.
    assert!(close(&seat0(ValueTarget::new(0.3, 1.0).unwrap()), &[1.0, 1.0, 1.0]));
    for v in ValueTarget::new(0.3, 0.5).unwrap().targets(&record(), None) {
        assert!((v[0] + v[1] - 1.0).abs() < 1e-6, "{v:?}");
    }
    for (mix, lambda) in [(1.5, 0.0), (0.5, -0.1), (0.5, f64::NAN)] {
        assert!(ValueTarget::new(mix, lambda).is_err(), "{mix} {lambda}");
    }
}

#[test]
fn the_value_mix_warms_up_from_the_search_value_over_its_generations() {
    let mut config = default_config(&meeple_games::TicTacToe, 8, 0, 1);
    config.value_mix = 0.8;
    config.value_lambda = 0.25;
    let mixes = |c: &AzConfig| [1, 2, 4, 5, 100].map(|g| ValueTarget::of(c, g).mix);
    assert_eq!(mixes(&config), [0.8; 5], "no warm-up: the mix from the start");
    config.value_mix_warmup = 4;
    assert_eq!(mixes(&config), [0.2, 0.4, 0.8, 0.8, 0.8]);
    assert!([1, 3, 9].iter().all(|&g| ValueTarget::of(&config, g).lambda == 0.25));
    // Generation 1's games teach the search's value mostly: 0.2 x 1 + 0.8 x 0.2 for the first
    // position of the record (won by seat 0, root value 0.2).
    let first = ValueTarget::of(&config, 1).targets(&record(), None)[0][0];
    let lambda_free = ValueTarget { mix: 0.2, lambda: 0.0, score: 0.0 }.targets(&record(), None)[0][0];
    assert!((lambda_free - (0.2 + 0.8 * 0.2)).abs() < 1e-6, "{lambda_free}");
    assert!(first > lambda_free, "the short-term value leans toward the result: {first}");
    // A run stored before the field existed resumes while it is off, and not once it is on.
    config.value_mix_warmup = 0;
    let now = serde_json::to_value(&config).unwrap();
    let mut older = now.clone();
    older.as_object_mut().unwrap().remove("value_mix_warmup");
    // By the walk over every setting, and by the flags a run names first.
    let named = &[("value_mix_warmup", "--value-mix-warmup")];
    assert_eq!(crate::run::settings_difference(&older, &now, &[], &[]), None);
    assert_eq!(crate::run::settings_difference(&older, &now, named, &[]), None);
    config.value_mix_warmup = 3;
    let now = serde_json::to_value(&config).unwrap();
    assert!(crate::run::settings_difference(&older, &now, named, &[]).is_some());
    let differs = crate::run::settings_difference(&older, &now, &[], &[]).unwrap();
    assert!(differs.starts_with("--value-mix-warmup"), "{differs}");
}

#[test]
fn the_value_score_share_puts_the_result_on_the_score_margin() {
    // Seat 0 won, by a margin worth 0.7 to it (0.3 to seat 1).
    let margins = [0.7, 0.3];
    let result_only = ValueTarget::new(1.0, 0.0).unwrap();
    let on = |score: f64| result_only.with_score(score).unwrap().targets(&record(), Some(&margins));
    assert!(on(0.0).iter().all(|v| close(v, &[1.0, 0.0])), "share 0: the win alone");
    assert!(on(1.0).iter().all(|v| close(v, &[0.7, 0.3])), "share 1: the margin alone");
    assert!(on(0.5).iter().all(|v| close(v, &[0.85, 0.15])), "{:?}", on(0.5));
    // With the search's value in the mix, the margin's share goes to the result's part only:
    // 0.5 x (0.5 x 1 + 0.5 x 0.7) + 0.5 x 0.2 at the first position.
    let mixed = ValueTarget::new(0.5, 0.0).unwrap().with_score(0.5).unwrap().targets(&record(), Some(&margins));
    assert!((mixed[0][0] - (0.5 * 0.85 + 0.5 * 0.2)).abs() < 1e-6, "{mixed:?}");
    // No margins given (a game without one): the result.
    assert!(close(&result_only.with_score(1.0).unwrap().targets(&record(), None)[0], &[1.0, 0.0]));
    for bad in [-0.1, 1.5, f64::NAN] {
        assert!(result_only.with_score(bad).is_err(), "{bad}");
    }
}

#[test]
fn margin_values_follow_a_finished_games_scores() {
    use meeple_games::{Cathedral, TicTacToe};
    let game = Cathedral::default();
    let (mut rng, mut legal) = (rng_from_seed(9), Vec::new());
    let mut state = game.initial_state();
    assert_eq!(margin_values(&state), None, "an unfinished game");
    while state.returns().is_none() {
        let a = state.random_action(&mut rng, &mut legal);
        state.apply_unchecked(a);
    }
    let m = margin_values(&state).unwrap();
    let lead = score_margin(&state, 0).unwrap() as f64;
    assert!((m[0] - (0.5 + 0.5 * lead)).abs() < 1e-6 && (m[0] + m[1] - 1.0).abs() < 1e-6, "{m:?} {lead}");
    // The winner's margin value is above a half, the loser's below.
    let r = state.returns().unwrap();
    let winner = if r[0] > r[1] { 0 } else { 1 };
    assert!(r[0] == r[1] || m[winner] > 0.5, "{m:?} {r:?}");
    let mut ttt = TicTacToe.initial_state();
    for a in [0, 3, 1, 4, 2] {
        ttt.apply_unchecked(a);
    }
    assert_eq!(margin_values(&ttt), None, "a game without a score scale");
    // A run asking for it there is refused before it starts, as is a teacher share without a
    // teacher or outside 0 to 1.
    let mut config = default_config(&TicTacToe, 8, 0, 1);
    config.value_score = 0.5;
    let err = check_targets(&TicTacToe, &config).unwrap_err().to_string();
    assert!(err.contains("score margin") && err.contains("sagrada"), "{err}");
    config.value_score = 0.0;
    config.teacher_share = 0.25;
    assert!(check_targets(&TicTacToe, &config).unwrap_err().to_string().contains("no teacher"));
    config.teacher = Some("random".into());
    assert!(check_targets(&TicTacToe, &config).is_ok());
    config.teacher_share = 1.5;
    assert!(check_targets(&TicTacToe, &config).unwrap_err().to_string().contains("outside 0 to 1"));
    let mut cathedral = default_config(&game, 8, 0, 1);
    cathedral.value_score = 1.0;
    assert!(check_targets(&game, &cathedral).is_ok());
}

#[test]
fn a_game_cut_at_the_ply_cap_teaches_its_result_where_the_margin_is_asked() {
    use meeple_games::Cathedral;
    let game = Cathedral::default();
    let (mut rng, mut legal) = (rng_from_seed(3), Vec::new());
    let mut state = game.initial_state();
    let mut actions = Vec::new();
    for _ in 0..4 {
        let a = state.random_action(&mut rng, &mut legal);
        state.apply_unchecked(a);
        actions.push(a);
    }
    assert!(state.returns().is_none(), "cut before its end");
    let position = Position { ply: 0, mover: 0, policy: Vec::new(), root_value: Vec::new() };
    let record = SelfPlayGame { seed: 0, actions, positions: vec![position], returns: vec![0.5, 0.5] };
    let target = ValueTarget::new(1.0, 0.0).unwrap().with_score(1.0).unwrap();
    let mut window = VecDeque::new();
    assert_eq!(add_game(&game, &record, target, &mut window).unwrap(), 1);
    assert_eq!(window[0].value, vec![0.5, 0.5]);
}
