//! The AlphaZero search on hand-made evaluators and positions with known answers.

use meeple_game::{Game, State};
use meeple_games::TicTacToe;
use meeple_games::tictactoe::TicTacToeState;
use meeple_learn::{LearnError, PolicyValue, Root, Search, SearchConfig, Step, Uniform};
use meeple_nn::Output;

/// Runs a search to the end with `eval` answering every leaf.
fn run<S: State>(mut search: Search<S>, eval: &dyn PolicyValue) -> meeple_learn::SearchResult {
    let mut obs = Vec::new();
    loop {
        match search.step() {
            Step::Done => return search.result(),
            Step::Evaluate(leaf) => {
                let p = leaf.current_player().unwrap();
                leaf.observation(p, &mut obs);
                let out = eval.evaluate(&obs, 1).unwrap();
                search.deliver(&out.logits, &out.values);
            }
        }
    }
}

fn uniform() -> Uniform {
    Uniform { input: 27, actions: 9, seats: 2 }
}

#[test]
fn both_roots_find_a_win_in_one_and_block_a_loss() {
    // X to move, wins at a1 (bottom left: x on a3, a2). Values are uniform: only the tree's
    // terminal results can say which move wins.
    let win = TicTacToeState::from_board("x.o x.o ...").unwrap();
    let a1 = win.parse_action("a1").unwrap();
    // O to move must block c1: X threatens the diagonal a3-b2-c1.
    let block = TicTacToeState::from_board("x.. .x. o..").unwrap();
    let c1 = block.parse_action("c1").unwrap();
    for root in [Root::Puct, Root::Gumbel] {
        let config = SearchConfig::new(root, 200).quiet();
        assert_eq!(run(Search::new(win, 2, config.clone(), 1), &uniform()).action, a1, "{root:?} win");
        let r = run(Search::new(block, 2, SearchConfig::new(root, 400).quiet(), 2), &uniform());
        assert_eq!(r.action, c1, "{root:?} block: {:?}", r.visits);
    }
}

/// An evaluator with fixed logits and a value by position: X wins from anything where it
/// holds the centre (value 0.9 for X), else 0.4 for X.
struct CentreLover;

impl PolicyValue for CentreLover {
    fn input_len(&self) -> usize {
        27
    }
    fn actions(&self) -> usize {
        9
    }
    fn seats(&self) -> usize {
        2
    }
    fn evaluate(&self, obs: &[f32], batch: usize) -> Result<Output, LearnError> {
        let mut out = Output::default();
        for b in 0..batch {
            let o = &obs[b * 27..(b + 1) * 27];
            // Planes from the mover's side: own, opponent, empty; the centre is cell 4.
            let (mine, theirs) = (o[4] == 1.0, o[9 + 4] == 1.0);
            let mover_value = if mine {
                0.9
            } else if theirs {
                0.1
            } else {
                0.4
            };
            out.logits.extend([0.0f32; 9]);
            out.values.extend([mover_value, 1.0 - mover_value]);
        }
        Ok(out)
    }
}

#[test]
fn gumbel_halving_follows_the_completed_values() {
    // With no noise and equal logits, the root's choice is decided by q alone: the centre (the
    // only move after which the evaluator likes X's position) must win the halving, and the
    // improved policy must put the most mass on it.
    let empty = TicTacToe.initial_state();
    let centre = empty.parse_action("b2").unwrap();
    for (sims, m) in [(16, 9), (32, 16), (64, 16)] {
        let config = SearchConfig { gumbel_m: m, ..SearchConfig::new(Root::Gumbel, sims).quiet() };
        let r = run(Search::new(empty, 2, config, 3), &CentreLover);
        let best = r.policy.iter().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap().0;
        assert_eq!(r.action, centre, "sims {sims}, m {m}");
        assert_eq!(best, centre, "sims {sims}, m {m}: {:?}", r.policy);
        let total: f32 = r.policy.iter().map(|p| p.1).sum();
        assert!((total - 1.0).abs() < 1e-4);
        assert!(r.sims <= sims);
    }
    // With m = 4 and equal logits and no noise, the first four actions are considered (ties
    // keep their order): the centre is not, and the choice stays among the considered.
    let config = SearchConfig { gumbel_m: 4, ..SearchConfig::new(Root::Gumbel, 32).quiet() };
    let r = run(Search::new(empty, 2, config, 3), &CentreLover);
    assert!(r.action < 4, "{:?}", r.visits);
    assert!(r.visits.iter().filter(|v| v.1 > 0).all(|v| v.0 < 4), "{:?}", r.visits);
}

#[test]
fn puct_visits_follow_priors_and_values() {
    // PUCT's visits concentrate on the centre under the same evaluator.
    let empty = TicTacToe.initial_state();
    let centre = empty.parse_action("b2").unwrap();
    let r = run(Search::new(empty, 2, SearchConfig::new(Root::Puct, 200).quiet(), 4), &CentreLover);
    let most = r.visits.iter().max_by_key(|v| v.1).unwrap();
    assert_eq!(most.0, centre, "{:?}", r.visits);
    assert_eq!(r.action, centre);
    assert_eq!(r.visits.iter().map(|v| v.1).sum::<u32>(), r.sims - 1, "every simulation but the root's");
    // The root value for X sits between the evaluator's 0.4 and 0.9.
    assert!(r.value[0] > 0.4 && r.value[0] < 0.9, "{:?}", r.value);
}

#[test]
fn a_forced_move_needs_one_evaluation() {
    let s = TicTacToeState::from_board("xox oox .xo").unwrap();
    let r = run(Search::new(s, 2, SearchConfig::new(Root::Gumbel, 100), 5), &uniform());
    assert_eq!(r.sims, 1);
    assert_eq!(r.action, s.parse_action("a1").unwrap());
}

#[test]
fn chance_and_many_players_are_searched() {
    // The three-player dice game of the test kit: chance nodes in the tree, three value seats.
    let game = meeple_game::testing::Dice { players: 3, bug: meeple_game::testing::Bug::None };
    let mut s = game.initial_state();
    let mut rng = meeple_game::rng_from_seed(1);
    let mut outcomes = Vec::new();
    while s.current_player().is_none() {
        s.apply_unchecked(meeple_game::draw_chance(&s, &mut outcomes, &mut rng));
    }
    let eval = Uniform { input: game.observation_shape().iter().product(), actions: game.num_actions(), seats: 3 };
    for root in [Root::Puct, Root::Gumbel] {
        let r = run(Search::new(s.clone(), 3, SearchConfig::new(root, 64), 6), &eval);
        assert!(s.is_legal(r.action), "{root:?}");
        assert_eq!(r.value.len(), 3);
    }
}

/// Runs a search to the end gathering up to `batch` leaves per evaluation.
fn run_batched<S: State>(
    mut search: Search<S>,
    eval: &dyn PolicyValue,
    batch: usize,
) -> (meeple_learn::SearchResult, usize) {
    let (mut obs, mut one, mut calls) = (Vec::new(), Vec::new(), 0);
    loop {
        let n = search.gather(batch);
        if n == 0 {
            return (search.result(), calls);
        }
        assert!(n <= batch);
        obs.clear();
        for leaf in search.leaves() {
            leaf.observation(leaf.current_player().unwrap(), &mut one);
            obs.extend_from_slice(&one);
        }
        let out = eval.evaluate(&obs, n).unwrap();
        search.deliver_all(&out.logits, &out.values, eval.actions(), eval.seats());
        calls += 1;
    }
}

#[test]
fn gathered_leaves_give_the_same_answers_in_fewer_calls() {
    let win = TicTacToeState::from_board("x.o x.o ...").unwrap();
    let a1 = win.parse_action("a1").unwrap();
    let block = TicTacToeState::from_board("x.. .x. o..").unwrap();
    let c1 = block.parse_action("c1").unwrap();
    let empty = TicTacToe.initial_state();
    let centre = empty.parse_action("b2").unwrap();
    for root in [Root::Puct, Root::Gumbel] {
        // One leaf at a time is the plain search, simulation for simulation.
        let config = SearchConfig::new(root, 300).quiet();
        let (one, _) = run_batched(Search::new(block, 2, config.clone(), 2), &uniform(), 1);
        assert_eq!(one, run(Search::new(block, 2, config.clone(), 2), &uniform()));
        for batch in [4, 8, 16] {
            let (r, _) = run_batched(Search::new(win, 2, SearchConfig::new(root, 200).quiet(), 1), &uniform(), batch);
            assert_eq!(r.action, a1, "{root:?} batch {batch} win");
            // Without the solver, which would end the search once the position is decided.
            let plain = SearchConfig { solver: false, ..SearchConfig::new(root, 400).quiet() };
            let (r, calls) = run_batched(Search::new(block, 2, plain.clone(), 2), &uniform(), batch);
            assert_eq!(r.action, c1, "{root:?} batch {batch} block: {:?}", r.visits);
            assert_eq!(r.sims, 400, "the budget is spent exactly");
            let (_, calls_one) = run_batched(Search::new(block, 2, plain, 2), &uniform(), 1);
            assert!(calls * 2 < calls_one, "batch {batch}: {calls} network calls, one at a time {calls_one}");
            let total: u32 = r.visits.iter().map(|v| v.1).sum();
            assert_eq!(total + 1, r.sims, "every simulation below the root went to one child");
            let (r, _) =
                run_batched(Search::new(empty, 2, SearchConfig::new(root, 64).quiet(), 3), &CentreLover, batch);
            assert_eq!(r.action, centre, "{root:?} batch {batch}");
        }
    }
}

#[test]
fn the_solver_values_decided_positions_exactly() {
    // O to move against three threats (a2, b1, b2): every move loses to X's next one. Values
    // are uniform, so only the tree's terminal states can say so.
    let lost = TicTacToeState::from_board("xoo ... x.x").unwrap();
    for root in [Root::Puct, Root::Gumbel] {
        let config = SearchConfig::new(root, 2000).quiet();
        let r = run(Search::new(lost, 2, config.clone(), 7), &uniform());
        assert_eq!(r.value, [1.0, 0.0], "{root:?}: decided, X wins");
        assert!(r.sims < 500, "{root:?}: a decided root ends the search ({} simulations)", r.sims);
        // Without the solver the values stay means over the network's 0.5s.
        let plain = run(Search::new(lost, 2, SearchConfig { solver: false, ..config }, 7), &uniform());
        assert!(plain.value[0] < 1.0, "{root:?}: {:?}", plain.value);
        assert_eq!(plain.sims, 2000);
    }
    // X to move wins at once at a1; the win is found, played and valued exactly.
    let win = TicTacToeState::from_board("x.o x.o ...").unwrap();
    let a1 = win.parse_action("a1").unwrap();
    for root in [Root::Puct, Root::Gumbel] {
        let r = run(Search::new(win, 2, SearchConfig::new(root, 200).quiet(), 8), &uniform());
        assert_eq!((r.action, r.value.clone()), (a1, vec![1.0, 0.0]), "{root:?}: {:?}", r.visits);
    }
    // A drawn position: X to move, every move draws under best play.
    let drawn = TicTacToeState::from_board("xox x.o o..").unwrap();
    let r = run(Search::new(drawn, 2, SearchConfig::new(Root::Gumbel, 500).quiet(), 9), &uniform());
    assert_eq!(r.value, [0.5, 0.5], "{:?}", r.visits);
}

#[test]
fn the_last_phase_of_sequential_halving_keeps_two_candidates() {
    // 4 candidates, 44 simulations after the root's: 5 each (20), then the best 2 get 11 each
    // (42); the last 2 go one to each of the pair, not both to a single survivor.
    let mut config = SearchConfig::new(Root::Gumbel, 45).quiet();
    config.gumbel_m = 4;
    let r = run(Search::new(TicTacToe.initial_state(), 2, config.clone(), 1), &uniform());
    let mut visits: Vec<u32> = r.visits.iter().map(|v| v.1).collect();
    visits.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(&visits[..4], &[17, 17, 5, 5], "{:?}", r.visits);
    assert!(r.visits.iter().any(|&(a, n)| a == r.action && n == 17), "the answer is one of the pair");
}

#[test]
fn a_proven_root_teaches_and_plays_its_proving_move() {
    let win = TicTacToeState::from_board("x.o x.o ...").unwrap();
    let a1 = win.parse_action("a1").unwrap();
    for root in [Root::Puct, Root::Gumbel] {
        let r = run(Search::new(win, 2, SearchConfig::new(root, 200), 8), &uniform());
        assert!(r.proven, "{root:?}");
        assert_eq!(r.action, a1);
        for &(a, p) in &r.policy {
            assert_eq!(p, if a == a1 { 1.0 } else { 0.0 }, "{root:?}: the policy target is the win alone");
        }
    }
    // An undecided root is not proven and keeps its improved policy.
    let open = TicTacToe.initial_state();
    let r = run(Search::new(open, 2, SearchConfig::new(Root::Gumbel, 32), 8), &uniform());
    assert!(!r.proven && r.policy.iter().filter(|p| p.1 > 0.0).count() > 1);
}

#[test]
fn the_solver_values_chance_nodes_with_three_players_exactly() {
    use meeple_game::testing::{Dice, DiceState};
    use meeple_game::{Turn, Values};
    let game = Dice { players: 3, ..Dice::default() };
    // Seat 2 holds a 2 against a 4 and a 5 and decides last: staying loses; a reroll (a chance
    // node of six outcomes, each ending the game) wins on a 6 and ties on a 5.
    let state = DiceState::with_dice(&game, &[4, 5, 2], 2);
    assert_eq!(state.turn(), Turn::Player(2));
    let mut exact = [0.0f64; 3];
    let mut reroll = state.clone();
    reroll.apply(1).unwrap();
    for roll in 0..6 {
        let mut s = reroll.clone();
        s.apply(roll).unwrap();
        let r: Values = s.returns().expect("the game is over");
        for (e, v) in exact.iter_mut().zip(r.iter()) {
            *e += v / 6.0;
        }
    }
    let mut stay = state.clone();
    stay.apply(0).unwrap();
    assert!(exact[2] > stay.returns().unwrap()[2], "rerolling is the better move");
    let eval = Uniform { input: game.observation_shape().iter().product(), actions: game.num_actions(), seats: 3 };
    for root in [Root::Puct, Root::Gumbel] {
        let r = run(Search::new(state.clone(), 3, SearchConfig::new(root, 400).quiet(), 4), &eval);
        assert!(r.proven, "{root:?}: every outcome is terminal, so the root is decided");
        assert_eq!(r.action, 1, "{root:?}: reroll");
        for (seat, (&v, &e)) in r.value.iter().zip(&exact).enumerate() {
            assert!((v as f64 - e).abs() < 1e-6, "{root:?} seat {seat}: {v} against the exact {e}");
        }
    }
}

#[test]
fn a_deadline_stops_descents_that_need_no_network() {
    // Three empty squares and no solver: once the small tree is expanded every descent ends at
    // a terminal state, so a plain gather would run the whole budget in one call.
    let s = TicTacToeState::from_board("xox oxo ...").unwrap();
    for root in [Root::Puct, Root::Gumbel] {
        let config = SearchConfig { solver: false, ..SearchConfig::new(root, 64).quiet() };
        let (_, calls) = run_batched(Search::new(s, 2, config.clone(), 1), &uniform(), 1);
        assert!(calls < 64, "{root:?}: some descents of the 64 needed no network");
        let mut search = Search::new(s, 2, config, 1);
        let _ = run_until_over(&mut search);
        search.extend_to(10_000_000);
        let before = search.sims();
        let past = std::time::Instant::now() - std::time::Duration::from_millis(1);
        assert_eq!(search.gather_until(8, Some(past)), 0, "{root:?}: the tree has no leaf left for the network");
        assert!(!search.is_over(), "{root:?}: the budget is far from spent");
        let ran = search.sims() - before;
        assert!((1..=64).contains(&ran), "{root:?}: {ran} descents after the deadline (the clock is read every 64)");
        // Without a deadline the same call runs on to the end of the budget.
        search.extend_to(search.sims() + 5_000);
        assert_eq!(search.gather(8), 0);
        assert!(search.is_over(), "{root:?}");
    }
}

/// Runs `search` to the end of its budget with uniform answers; returns the evaluations.
fn run_until_over<S: State>(search: &mut Search<S>) -> usize {
    let (mut obs, mut one, mut evaluated) = (Vec::new(), Vec::new(), 0);
    loop {
        let n = search.gather(1);
        if n == 0 {
            return evaluated;
        }
        obs.clear();
        for leaf in search.leaves() {
            leaf.observation(leaf.current_player().unwrap(), &mut one);
            obs.extend_from_slice(&one);
        }
        let out = uniform().evaluate(&obs, n).unwrap();
        search.deliver_all(&out.logits, &out.values, 9, 2);
        evaluated += n;
    }
}
