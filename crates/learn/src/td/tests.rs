use super::*;

/// Sutton and Barto's random walk: states 1..=5 between two ends, right end pays 1; true
/// values k/6. Tabular TD(λ) through the same λ-returns the trainer uses converges there.
#[test]
fn td_lambda_on_a_random_walk_converges_to_the_true_values() {
    for lambda in [0.0f32, 0.5, 0.9] {
        let mut v = [0.5f32; 7];
        let mut rng = rng_from_seed(3);
        let mut targets = Vec::new();
        for episode in 0..20_000 {
            let alpha = 0.05 / (1.0 + episode as f32 / 2000.0);
            let mut s = 3usize;
            let mut visited = vec![s];
            while s != 0 && s != 6 {
                s = if rng.random_bool(0.5) { s + 1 } else { s - 1 };
                if s != 0 && s != 6 {
                    visited.push(s);
                }
            }
            let result = [if s == 6 { 1.0f32 } else { 0.0 }];
            let values: Vec<[f32; 1]> = visited.iter().map(|&k| [v[k]]).collect();
            let refs: Vec<&[f32]> = values.iter().map(|x| &x[..]).collect();
            let cut = vec![None; refs.len()];
            lambda_returns(&refs, &cut, &result, lambda, &mut targets);
            for (&k, &g) in visited.iter().zip(&targets) {
                v[k] += alpha * (g - v[k]);
            }
        }
        for (k, value) in v.iter().enumerate().take(6).skip(1) {
            let truth = k as f32 / 6.0;
            assert!((value - truth).abs() < 0.04, "λ {lambda}: state {k} valued {value} (true {truth})");
        }
    }
}

#[test]
fn lambda_returns_by_hand() {
    let values: [&[f32]; 3] = [&[0.2, 0.8], &[0.4, 0.6], &[0.6, 0.4]];
    let mut out = Vec::new();
    lambda_returns(&values, &[None, None, None], &[1.0, 0.0], 0.5, &mut out);
    // G2 = z = (1, 0); G1 = 0.5 * V2 + 0.5 * G2 = (0.8, 0.2); G0 = 0.5 * V1 + 0.5 * G1 = (0.6, 0.4).
    let want = [0.6, 0.4, 0.8, 0.2, 1.0, 0.0];
    assert!(out.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-6), "{out:?}");
    // A random move after prediction 0 cuts it off: it learns the greedy value given.
    lambda_returns(&values, &[Some(&[0.9, 0.1]), None, None], &[1.0, 0.0], 0.5, &mut out);
    assert!((out[0] - 0.9).abs() < 1e-6 && (out[2] - 0.8).abs() < 1e-6, "{out:?}");
    // λ = 0: each prediction learns the next one (the Catan self-play study's targets).
    lambda_returns(&values, &[None, None, None], &[1.0, 0.0], 0.0, &mut out);
    assert_eq!(&out[..4], &[0.4, 0.6, 0.6, 0.4]);
}

/// A round's targets on a scripted three-seat game, by hand: seats 0, 1, 2 predict in turn
/// (each prediction its value vector seen from the predicting seat, its own value first),
/// seat 1's second move was a random one (its next record carries the greedy value it
/// passed up), and seat 2 wins. Each seat's last prediction learns the result turned to
/// its view; earlier ones the λ-mix of its next prediction and its return, or the greedy
/// value where a random move cut the line. The observation of each record says which it is.
#[test]
fn a_rounds_targets_rotate_the_result_to_each_seat_and_cut_at_random_moves() {
    let record = |seat: usize, tag: f32, values: [f32; 3], greedy: Option<[f32; 3]>| Record {
        seat,
        obs: vec![tag],
        values: values.to_vec(),
        greedy: greedy.map(|g| g.to_vec()),
    };
    let records = vec![
        record(0, 0.0, [0.5, 0.3, 0.2], None),
        record(1, 1.0, [0.4, 0.4, 0.2], None),
        record(2, 2.0, [0.6, 0.2, 0.2], None),
        record(0, 3.0, [0.3, 0.3, 0.4], None),
        record(1, 4.0, [0.2, 0.3, 0.5], None),
        record(2, 5.0, [0.8, 0.1, 0.1], None),
        // Seat 1's move after its prediction 4.0 was random: greedy, it valued (0.5, 0.2, 0.3).
        record(1, 6.0, [0.1, 0.1, 0.8], Some([0.5, 0.2, 0.3])),
    ];
    let result = [0.0, 0.0, 1.0];
    let (mut scratch, mut batch) = (Vec::new(), Batch::default());
    game_targets(&records, &result, 3, 0.5, &mut scratch, &mut batch);
    let target = |tag: f32| {
        let i = batch.obs.iter().position(|&o| o == tag).unwrap();
        batch.value[3 * i..3 * i + 3].to_vec()
    };
    let near = |a: Vec<f32>, b: [f32; 3]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-6);
    assert_eq!(batch.size, 7);
    // Seat 0: the result from its view (0, 0, 1) -> (0, 0, 1); before it, 0.5 V(3.0) + 0.5 G.
    assert!(near(target(3.0), [0.0, 0.0, 1.0]), "{:?}", target(3.0));
    assert!(near(target(0.0), [0.15, 0.15, 0.7]), "{:?}", target(0.0));
    // Seat 1: the result turned to it, (seat 1, seat 2, seat 0) = (0, 1, 0); its prediction
    // 4.0 cut to the greedy value; 1.0 mixes 4.0's prediction with that cut value.
    assert!(near(target(6.0), [0.0, 1.0, 0.0]), "{:?}", target(6.0));
    assert!(near(target(4.0), [0.5, 0.2, 0.3]), "{:?}", target(4.0));
    assert!(near(target(1.0), [0.35, 0.25, 0.4]), "{:?}", target(1.0));
    // Seat 2, the winner: (seat 2, seat 0, seat 1) = (1, 0, 0).
    assert!(near(target(5.0), [1.0, 0.0, 0.0]), "{:?}", target(5.0));
    assert!(near(target(2.0), [0.9, 0.05, 0.05]), "{:?}", target(2.0));
}

fn dice_net() -> Network {
    let config = NetConfig::from_spec("mlp:layers=1,width=8", &[8], 2, 2, None).unwrap();
    Network::new(config, 1, 1)
}

/// The last decision of the dice game: every afterstate ends the game or rolls a die that
/// does, so the values are exact: staying on 3 against 5 loses, rerolling wins on a 6 and
/// ties on a 5 (1.5 / 6); on 5 against 5 staying ties (0.5) and rerolling is worth 0.25.
#[test]
fn the_one_ply_agent_averages_chance_outcomes() {
    use meeple_game::testing::{Dice, DiceState};
    let game = Dice::default();
    let net = dice_net();
    let mut scorer = Scorer::new(2, 8);
    let mut rng = rng_from_seed(1);
    for (dice, stay, reroll, best) in [([5, 3], 0.0, 0.25, 1), ([5, 5], 0.5, 0.25, 0)] {
        let s = DiceState::with_dice(&game, &dice, 1);
        scorer.clear();
        let range = scorer.add(&s, 1, &[0, 1]);
        assert_eq!(scorer.rows(), 0, "every leaf is a result");
        scorer.evaluate(&net, true).unwrap();
        let (a, v) = scorer.candidate(range.start);
        assert_eq!(a, 0);
        assert!((v[0] - stay).abs() < 1e-6 && (v[1] - (1.0 - stay)).abs() < 1e-6, "{v:?}");
        let (_, v) = scorer.candidate(range.start + 1);
        assert!((v[0] - reroll).abs() < 1e-6 && (v[1] - (1.0 - reroll)).abs() < 1e-6, "{v:?}");
        assert_eq!(scorer.candidate(scorer.best(range, &mut rng)).0, best);
    }
}

/// `--lr-decay`: the full rate until the run's share done is known, then a cosine that
/// reaches a tenth of it at the run's end; without it the rate stays.
#[test]
fn the_rate_anneals_over_the_runs_plan_and_goes_on_from_where_it_stands_when_extended() {
    use crate::run::{Learner, Plan};
    let game = meeple_games::TicTacToe;
    // Rounds of one optimiser step each, the rate set from `plan` before each (a plan changed
    // to `then` after `switch` rounds, extended from where the run stands).
    let rate = |lr_decay: bool, rounds: usize, plan: &Plan, then: Option<(usize, &Plan)>| {
        let mut config = TdConfig::report("tictactoe");
        config.net = "mlp:layers=1,width=8".into();
        config.parallel = 2;
        config.lr = 1e-3;
        config.lr_decay = lr_decay;
        let mut run = TdRun::new(game, config, None).unwrap();
        let mut plan = plan.clone();
        let mut seen = Vec::new();
        for k in 0..rounds {
            let p = Learner::progress(&run);
            if let Some((switch, next)) = then
                && k == switch
            {
                plan = next.extending(&plan, &p);
            }
            assert_eq!(p.steps, k as u64, "one step a round");
            run.trainer.set_anneal(plan.anneal(&p));
            seen.push(run.trainer.lr());
            TdRun::round(&mut run).unwrap();
        }
        seen
    };
    let at = |t: f64| 1e-4 + 0.9e-3 * 0.5 * (1.0 + (std::f64::consts::PI * t).cos());
    let forty = Plan { steps: Some(40), ..Plan::default() };
    let seen = rate(true, 44, &forty, None);
    // Step 0 warms up (one step); step k stands at k/40 of the cosine, the floor from 40 on.
    assert!((seen[0] - 1e-3).abs() < 1e-12, "{seen:?}");
    for (k, &lr) in seen.iter().enumerate().skip(1) {
        assert!((lr - at((k as f64 / 40.0).min(1.0))).abs() < 1e-12, "step {k}: {lr}");
    }
    // Extended at its floor to 60 steps: the rate stays at the floor, no jump back up.
    let sixty = Plan { steps: Some(60), ..Plan::default() };
    let floor = rate(true, 50, &forty, Some((40, &sixty)));
    assert!(floor[40..].iter().all(|&lr| (lr - 1e-4).abs() < 1e-12), "{:?}", &floor[40..]);
    // Extended halfway (20 of 40) to 60: from 0.5 of the way, the rest over 40 more steps.
    let half = rate(true, 45, &forty, Some((20, &sixty)));
    assert_eq!(half[..20], seen[..20]);
    for (k, &lr) in half.iter().enumerate().skip(20) {
        let t = 0.5 + 0.5 * (k - 20) as f64 / 40.0;
        assert!((lr - at(t)).abs() < 1e-12, "step {k}: {lr}, not {}", at(t));
    }
    // Without --lr-decay the plan changes nothing.
    let constant = rate(false, 5, &forty, None);
    assert!(constant.iter().all(|&lr| (lr - 1e-3).abs() < 1e-12), "{constant:?}");
}

/// Scoring the games in flight on several threads plays the same games as on one: each
/// thread takes a share of the slots, and the moves are chosen in slot order afterwards
/// (here 5 games on 3 threads: shares of 2, 2 and 1).
#[test]
fn threads_share_the_games_without_changing_them() {
    let play = |threads: usize| {
        let mut config = TdConfig::report("catan:players=3");
        config.net = "resmlp:blocks=1,width=16".into();
        config.parallel = 5;
        config.batch_games = 3;
        config.threads = threads;
        let spec: meeple_game::Spec = "catan:players=3".parse().unwrap();
        let game = meeple_games::catan::Catan::from_spec(&spec).unwrap();
        let mut run = TdRun::new(game, config, None).unwrap();
        let round = run.round().unwrap();
        (round.games, round.positions, round.mean_plies, round.metrics)
    };
    let one = play(1);
    assert_eq!(one.0, 3);
    assert_eq!(play(3), one);
    assert_eq!(play(2), one);
}

/// A run limited to N games trains on exactly N, although games in flight finish together
/// (sixteen tic-tac-toe games started at once end within a few plies of each other): the
/// games beyond the limit wait for a later round instead of passing it.
#[test]
fn a_limit_stops_at_exactly_its_games() {
    let mut config = TdConfig::report("tictactoe");
    config.net = "mlp:layers=1,width=8".into();
    config.parallel = 16;
    let mut run = TdRun::new(meeple_games::TicTacToe, config.clone(), None).unwrap();
    let together = run.round().unwrap().games;
    assert!(together > 1, "games that finish in one step train in one round: {together}");
    let mut run = TdRun::new(meeple_games::TicTacToe, config, None).unwrap();
    let mut rounds = Vec::new();
    while run.progress.episodes < 7 {
        run.set_left(Some(7 - run.progress.episodes));
        rounds.push(run.round().unwrap().games);
    }
    assert_eq!(run.progress.episodes, 7, "rounds {rounds:?}");
    assert_eq!(rounds[0], together.min(7));
}

/// Four-player Catan trains as three-player Catan does: a round's games finish (won or
/// stopped by the turn limit), every seat's predictions are trained on, and the network
/// gives one value a seat, each a probability.
#[test]
fn four_player_catan_trains() {
    use meeple_game::Game;
    let spec: meeple_game::Spec = "catan:players=4".parse().unwrap();
    let game = meeple_games::catan::Catan::from_spec(&spec).unwrap();
    let mut config = TdConfig::report("catan:players=4");
    config.net = "resmlp:blocks=1,width=16".into();
    config.parallel = 2;
    config.batch_games = 2;
    let mut run = TdRun::new(game.clone(), config, None).unwrap();
    let round = run.round().unwrap();
    assert_eq!(round.games, 2);
    assert!(round.positions > 100 && round.loss.is_finite(), "{round:?}");
    assert!(round.metrics.iter().any(|(k, v)| k == "dice_rolls" && *v > 0.0), "{:?}", round.metrics);
    let s = game.initial_state();
    let mut obs = Vec::new();
    s.observation(0, &mut obs);
    let values = run.network().evaluate(&obs, 1).unwrap().values;
    assert_eq!(values.len(), 4);
    assert!(values.iter().all(|v| (0.0..=1.0).contains(v)), "{values:?}");
}

/// A value net trained by TD self-play loads as `eval=(net:model=F)` with the value the
/// trainer's network gives (as a logit), and as the `value` agent.
#[test]
fn a_trained_value_net_loads_as_evaluator_and_agent() {
    use meeple_game::testing::{Dice, DiceState};
    let game = Dice::default();
    let mut config = TdConfig::report("dice:players=2");
    config.net = "mlp:layers=1,width=8".into();
    config.parallel = 4;
    config.lr = 1e-2;
    let mut run = TdRun::new(game.clone(), config, None).unwrap();
    for _ in 0..5 {
        run.round().unwrap();
    }
    let dir = std::env::temp_dir().join(format!("meeple-td-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("net.safetensors");
    run.trainer.save(&path, run.sidecar(0.0)).unwrap();
    let s = DiceState::with_dice(&game, &[4, 2], 0);
    let mut obs = Vec::new();
    s.observation(0, &mut obs);
    let v = run.network().evaluate(&obs, 1).unwrap().values[0] as f64;
    let spec = format!("net:model={}", path.display());
    let eval = meeple_search::make_evaluator_with(&game, &spec, &crate::extension()).unwrap();
    let logit = eval.evaluate(&s, 0);
    assert!((logit - (v / (1.0 - v)).ln()).abs() < 1e-4, "{logit} against the trainer's {v}");
    let mut agent = crate::make_agent(&game, &format!("value:model={}", path.display()), 1).unwrap();
    let a = agent.act(&s, &Budget::default()).unwrap();
    assert!(a < 2);
    assert!(crate::make_agent(&game, &format!("catan-td:model={}", path.display()), 1).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}
