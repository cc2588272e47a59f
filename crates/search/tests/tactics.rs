//! Search agents on positions with known answers: solved games, wins in one, forced blocks,
//! proven wins, and agreement with brute-force minimax and expectimax.

use meeple_game::testing::{Dice, DiceState};
use meeple_game::{Action, Agent, Budget, Game, Player, State, Turn, derive_seed, rng_from_seed};
use meeple_games::connect4::{Connect4, Connect4State};
use meeple_games::tictactoe::{TicTacToe, TicTacToeState};
use meeple_search::alphabeta::WIN;
use meeple_search::mcts::Proof;
use meeple_search::{AlphaBeta, AlphaBetaConfig, Mcts, MctsConfig, make_agent};

fn alphabeta<G: Game>(game: &G, spec: &str) -> AlphaBeta<G::State> {
    AlphaBeta::new(game, AlphaBetaConfig::from_spec(&spec.parse().unwrap()).unwrap(), 1).unwrap()
}

fn mcts<G: Game>(game: &G, spec: &str, seed: u64) -> Mcts<G::State> {
    Mcts::new(game, MctsConfig::from_spec(&spec.parse().unwrap()).unwrap(), spec.to_string(), seed).unwrap()
}

/// Exact values for every player by plain recursion (max^n: each mover maximises their own
/// return; expectation at chance nodes). No pruning, no table: an independent reference.
fn values<S: State>(state: &S) -> Vec<f64> {
    match state.turn() {
        Turn::Terminal => state.returns().unwrap().to_vec(),
        Turn::Chance => {
            let mut outcomes = Vec::new();
            state.chance_outcomes(&mut outcomes);
            let mut total = Vec::new();
            for &(a, p) in &outcomes {
                let v = values(&after(state, a));
                total.resize(v.len(), 0.0);
                total.iter_mut().zip(&v).for_each(|(t, x)| *t += p * x);
            }
            total
        }
        Turn::Player(p) => {
            let mut legal = Vec::new();
            state.legal_actions(&mut legal);
            legal.iter().map(|&a| values(&after(state, a))).max_by(|x, y| x[p].total_cmp(&y[p])).unwrap()
        }
    }
}

fn after<S: State>(state: &S, a: Action) -> S {
    let mut c = state.clone();
    c.apply_unchecked(a);
    c
}

/// Exact value of `state` for the player to move.
fn minimax<S: State>(state: &S) -> f64 {
    values(state)[state.current_player().unwrap()]
}

/// Exact value for `player` of the position after `a`.
fn child_value<S: State>(state: &S, a: Action, player: Option<Player>) -> f64 {
    values(&after(state, a))[player.unwrap()]
}

/// Plays `games` games of `agent` against random, alternating seats; returns the agent's
/// results as (wins, draws, losses).
fn versus_random<G: Game>(game: &G, spec: &str, games: u64) -> (u32, u32, u32) {
    let mut tally = (0, 0, 0);
    for g in 0..games {
        let seat = (g % 2) as usize;
        let mut agents = [
            make_agent(game, spec, derive_seed(g, 1)).unwrap(),
            make_agent(game, "random", derive_seed(g, 2)).unwrap(),
        ];
        if seat == 1 {
            agents.swap(0, 1);
        }
        let mut s = game.initial_state();
        let mut chance = rng_from_seed(g);
        let mut outcomes = Vec::new();
        loop {
            let a = match s.turn() {
                Turn::Terminal => break,
                Turn::Chance => meeple_game::draw_chance(&s, &mut outcomes, &mut chance),
                Turn::Player(p) => agents[p].act(&s, &Budget::UNLIMITED).unwrap(),
            };
            s.apply(a).unwrap();
        }
        let r = s.returns().unwrap();
        match r[seat] {
            1.0 => tally.0 += 1,
            0.0 => tally.2 += 1,
            _ => tally.1 += 1,
        }
    }
    tally
}

#[test]
fn alphabeta_solves_tictactoe_as_a_draw() {
    let mut ab = alphabeta(&TicTacToe, "alphabeta:depth=9");
    ab.act(&TicTacToe.initial_state(), &Budget::UNLIMITED).unwrap();
    assert_eq!(ab.report().depth, 9);
    assert_eq!(ab.report().value, 0.0, "perfect play draws");
}

#[test]
fn alphabeta_agrees_with_brute_force_minimax() {
    // Every tic-tac-toe position after two to five plies of random play, and the value of the
    // chosen move must be the minimax value (win = WIN - plies, draw 0, loss < 0).
    let mut rng = rng_from_seed(3);
    let mut legal = Vec::new();
    for _ in 0..200 {
        let mut s = TicTacToe.initial_state();
        let plies = 2 + (meeple_game::zobrist::splitmix64(rand::Rng::next_u64(&mut rng)) % 4) as usize;
        for _ in 0..plies {
            if s.turn() == Turn::Terminal {
                break;
            }
            s.legal_actions(&mut legal);
            s.apply_unchecked(legal[(rand::Rng::next_u64(&mut rng) % legal.len() as u64) as usize]);
        }
        if s.turn() == Turn::Terminal {
            continue;
        }
        let exact = minimax(&s);
        let mut ab = alphabeta(&TicTacToe, "alphabeta:depth=9,tt=64kb");
        let a = ab.act(&s, &Budget::UNLIMITED).unwrap();
        let v = ab.report().value;
        let sign = if v > WIN / 2.0 {
            1.0
        } else if v < -WIN / 2.0 {
            0.0
        } else {
            0.5
        };
        assert_eq!(sign, exact, "{s}");
        assert_eq!(child_value(&s, a, s.current_player()), exact, "chosen move is optimal in\n{s}");
    }
}

#[test]
fn alphabeta_never_loses_to_random_at_tictactoe() {
    let (w, d, l) = versus_random(&TicTacToe, "alphabeta", 1000);
    assert_eq!(l, 0, "{w} wins {d} draws {l} losses");
    assert!(w > 800, "it should win most games: {w} wins {d} draws");
}

#[test]
fn mcts_never_loses_to_random_at_tictactoe() {
    let (w, d, l) = versus_random(&TicTacToe, "mcts:iters=10000", 200);
    assert_eq!(l, 0, "{w} wins {d} draws {l} losses");
}

/// Connect four positions (columns from 1) where the player to move wins at once.
const WIN_IN_ONE: &[&str] = &["112233", "121213", "1223343446", "7665545442", "445566"];
/// Positions where the opponent threatens one win and the player to move has none: it must block.
const MUST_BLOCK: &[&str] = &["11223", "12121", "717263", "123252"];

fn c4(moves: &str) -> Connect4State {
    Connect4::default().initial_state().play_columns(moves).unwrap()
}

fn wins_at_once(s: &Connect4State, a: Action) -> bool {
    let mut c = *s;
    c.apply(a).unwrap();
    c.returns().is_some_and(|r| r[s.current_player().unwrap()] == 1.0)
}

fn opponent_can_win(s: &Connect4State) -> bool {
    let mut legal = Vec::new();
    s.legal_actions(&mut legal);
    legal.iter().any(|&a| wins_at_once(s, a))
}

#[test]
fn both_searches_find_wins_in_one_and_forced_blocks() {
    let game = Connect4::default();
    let specs = [
        "alphabeta:depth=2",
        "alphabeta:depth=5",
        "alphabeta:depth=6,lmr=true,lmp=true",
        "mcts:iters=300",
        "mcts:iters=2000,solver=false",
    ];
    for spec in specs {
        for moves in WIN_IN_ONE {
            let s = c4(moves);
            let a = make_agent(&game, spec, 9).unwrap().act(&s, &Budget::UNLIMITED).unwrap();
            assert!(wins_at_once(&s, a), "{spec} missed the win in {moves}:\n{s}\nplayed {}", a + 1);
        }
        for moves in MUST_BLOCK {
            let s = c4(moves);
            // The position is what it claims: no win for the mover, exactly one saving move.
            let mut legal = Vec::new();
            s.legal_actions(&mut legal);
            assert!(!legal.iter().any(|&a| wins_at_once(&s, a)), "{moves}");
            let saving = legal.iter().filter(|&&a| !opponent_can_win(&after(&s, a))).count();
            assert_eq!(saving, 1, "{moves}:\n{s}");
            let a = make_agent(&game, spec, 9).unwrap().act(&s, &Budget::UNLIMITED).unwrap();
            assert!(!opponent_can_win(&after(&s, a)), "{spec} failed to block in {moves}:\n{s}\nplayed {}", a + 1);
        }
    }
}

#[test]
fn tictactoe_positions_agree_between_mcts_and_minimax() {
    // Small trees: MCTS with enough iterations picks a minimax-optimal move, and the solver
    // proves the exact result.
    for board in ["x.. .o. ...", "xo. ... ...", "x.. ... ..o", "xx. oo. ...", "x.o .x. ..."] {
        let s = TicTacToeState::from_board(board).unwrap();
        let exact = minimax(&s);
        let me = s.current_player();
        let mut plain = mcts(&TicTacToe, "mcts:iters=20000,solver=false", 5);
        let a = plain.act(&s, &Budget::UNLIMITED).unwrap();
        assert_eq!(child_value(&s, a, me), exact, "plain MCTS chose {a} in\n{s}");
        let mut solver = mcts(&TicTacToe, "mcts:iters=50000", 5);
        let a = solver.act(&s, &Budget::UNLIMITED).unwrap();
        assert_eq!(child_value(&s, a, me), exact, "solver MCTS chose {a} in\n{s}");
        let expected = match exact {
            1.0 => Proof::Win,
            0.0 => Proof::Loss,
            _ => Proof::Draw,
        };
        assert_eq!(solver.report().proof, Some(expected), "{s}");
    }
}

#[test]
fn root_parallel_is_reproducible_and_one_thread_matches_the_plain_search() {
    let s = c4("4455");
    let game = Connect4::default();
    let roots = |spec: &str| {
        let mut m = mcts(&game, spec, 42);
        m.act(&s, &Budget::UNLIMITED).unwrap();
        m.report().root.clone()
    };
    assert_eq!(roots("mcts:iters=3000,solver=false"), roots("mcts:iters=3000,solver=false,threads=1"));
    let two = roots("mcts:iters=3000,solver=false,threads=2");
    assert_eq!(two, roots("mcts:iters=3000,solver=false,threads=2"), "same seed, same result");
    assert_eq!(two.iter().map(|r| r.visits).sum::<u64>(), 3000, "1500 iterations in each of two trees");
}

#[test]
fn expectimax_matches_brute_force_on_dice() {
    // The dice game with every die visible (a determinized world): alpha-beta's expectimax
    // value of each move must equal the exact expectation.
    let game = Dice::default();
    for dice in [[1u8, 6], [3, 3], [6, 2], [4, 5], [2, 1]] {
        let s = DiceState::with_dice(&game, &dice, 0);
        let mut ab = alphabeta(&game, "alphabeta:depth=4,worlds=0");
        let a = ab.act(&s, &Budget::UNLIMITED).unwrap();
        let exact = minimax(&s);
        let reported = (ab.report().value / WIN + 1.0) / 2.0;
        // Won and lost leaves score WIN - plies, so the scaled value may differ by plies / WIN.
        assert!((reported - exact).abs() < 1e-5, "dice {dice:?}: alphabeta {reported}, exact {exact}");
        assert!((child_value(&s, a, Some(0)) - exact).abs() < 1e-9);
    }
}

/// Others on the dice game always stay: a model of their decisions, not a contest.
struct OthersStay;

impl meeple_game::Evaluator<DiceState> for OthersStay {
    fn evaluate(&self, _state: &DiceState, _player: Player) -> f64 {
        0.0
    }

    fn expected_move(&self, _state: &DiceState, _root: Player) -> Option<Action> {
        Some(0)
    }
}

/// Player 0's exact value when every other player stays.
fn value_if_others_stay(state: &DiceState) -> f64 {
    match state.turn() {
        Turn::Terminal => state.returns().unwrap()[0],
        Turn::Chance => {
            let mut outcomes = Vec::new();
            state.chance_outcomes(&mut outcomes);
            outcomes.iter().map(|&(a, p)| p * value_if_others_stay(&after(state, a))).sum()
        }
        Turn::Player(0) => [0, 1].iter().map(|&a| value_if_others_stay(&after(state, a))).fold(f64::MIN, f64::max),
        Turn::Player(_) => value_if_others_stay(&after(state, 0)),
    }
}

#[test]
fn alphabeta_follows_the_evaluators_expected_moves_without_spending_depth() {
    // Three players; player 0 decides first and the other two, as the evaluator models them,
    // stay. Depth 2 (player 0's decision, then a reroll's die) then reaches the end: the two
    // modelled decisions cost no depth (searched, they would put the horizon at player 2's
    // decision, valued 0 by the evaluator).
    let game = Dice { players: 3, ..Dice::default() };
    for dice in [[3u8, 5, 2], [6, 5, 2], [1, 1, 1], [4, 6, 6]] {
        let s = DiceState::with_dice(&game, &dice, 0);
        let config = AlphaBetaConfig::from_spec(&"alphabeta:depth=2,worlds=0".parse().unwrap()).unwrap();
        let mut ab = AlphaBeta::with_evaluator(&game, config, std::sync::Arc::new(OthersStay), 1);
        let a = ab.act(&s, &Budget::UNLIMITED).unwrap();
        let exact = value_if_others_stay(&s);
        let reported = (ab.report().value / WIN + 1.0) / 2.0;
        assert!((reported - exact).abs() < 1e-5, "dice {dice:?}: alphabeta {reported}, exact {exact}");
        assert!((value_if_others_stay(&after(&s, a)) - exact).abs() < 1e-9, "dice {dice:?}");
    }
}

#[test]
fn worlds_decide_under_hidden_information() {
    // Player 0 cannot see the other die: with a 1 rerolling is right, with a 6 staying is.
    for players in [2, 3] {
        let game = Dice { players, bug: meeple_game::testing::Bug::None };
        for (die, expected) in [(1u8, "reroll"), (6, "stay")] {
            let mut dice = vec![die];
            dice.extend(std::iter::repeat_n(6, players - 1)); // hidden from player 0
            let s = DiceState::with_dice(&game, &dice, 0);
            for spec in
                ["alphabeta:depth=6,worlds=16", "mcts:iters=4000,worlds=8", "mcts:iters=4000,worlds=4,threads=2"]
            {
                let mut agent = make_agent(&game, spec, 3).unwrap();
                let a = agent.act(&s, &Budget::UNLIMITED).unwrap();
                assert_eq!(s.action_to_string(a), expected, "{spec}, {players} players, die {die}");
            }
        }
    }
}

#[test]
fn progressive_widening_limits_children() {
    let mut m = mcts(&TicTacToe, "mcts:iters=16,widening=0.5,solver=false,reuse=false", 1);
    m.act(&TicTacToe.initial_state(), &Budget::UNLIMITED).unwrap();
    // ceil(0.5 * sqrt(16)) = 2 children at the root after 15 visits (3 once it is visited 16 times).
    assert!(m.report().root.len() <= 3, "{:?}", m.report().root);
    let mut full = mcts(&TicTacToe, "mcts:iters=16,solver=false,reuse=false", 1);
    full.act(&TicTacToe.initial_state(), &Budget::UNLIMITED).unwrap();
    assert_eq!(full.report().root.len(), 9);
}

#[test]
fn the_tree_is_reused_after_the_opponent_moves() {
    let game = Connect4::default();
    for (reuse, expect_reuse) in [("true", true), ("false", false)] {
        let mut m = mcts(&game, &format!("mcts:iters=2000,reuse={reuse},solver=false"), 1);
        let s = game.initial_state();
        let a = m.act(&s, &Budget::UNLIMITED).unwrap();
        let mut next = s;
        next.apply(a).unwrap();
        next.apply(3).unwrap();
        m.act(&next, &Budget::UNLIMITED).unwrap();
        let r = m.report();
        assert_eq!(
            r.nodes > r.iterations + 1,
            expect_reuse,
            "reuse={reuse}: {} nodes, {} iterations",
            r.nodes,
            r.iterations
        );
    }
}

#[test]
fn transposition_table_size_does_not_change_values() {
    for moves in ["4455", "112233", "3344", "1726355"] {
        let s = c4(moves);
        let mut small = alphabeta(&Connect4::default(), "alphabeta:depth=7,tt=1kb");
        let mut large = alphabeta(&Connect4::default(), "alphabeta:depth=7,tt=32mb");
        small.act(&s, &Budget::UNLIMITED).unwrap();
        large.act(&s, &Budget::UNLIMITED).unwrap();
        assert_eq!(small.report().value, large.report().value, "{moves}");
        assert!(large.report().nodes <= small.report().nodes, "{moves}: a bigger table searches less");
    }
}

#[test]
fn node_budget_is_respected() {
    let mut ab = alphabeta(&Connect4::default(), "alphabeta:nodes=5000");
    ab.act(&Connect4::default().initial_state(), &Budget::UNLIMITED).unwrap();
    assert!(ab.report().nodes <= 5000 + 1024, "{}", ab.report().nodes);
    assert!(ab.report().depth >= 3);
}

#[test]
fn bad_options_are_refused() {
    let game = Connect4::default();
    let cases = [
        ("alphabeta:depth=0", "bad value '0' for 'depth'"),
        ("alphabeta:tt=lots", "bad value 'lots' for 'tt'"),
        ("alphabeta:eval=magic", "unknown evaluator 'magic'; accepted: zero"),
        ("mcts:c=-1", "bad value '-1' for 'c'"),
        ("mcts:margin=huge", "bad value 'huge' for 'margin'"),
        ("mcts:playout=wizard", "unknown agent 'wizard'"),
        ("mcts:threads=0", "agent mcts: threads 0: give 1 to"),
        ("mcts:iters=0", "bad value '0' for 'iters'"),
        ("mcts:depth=3", "unknown option 'depth'"),
    ];
    for (spec, expected) in cases {
        let err = make_agent(&game, spec, 0).err().unwrap().to_string();
        assert!(err.contains(expected), "{spec}: '{err}'");
    }
    let err =
        make_agent(&Dice { players: 3, bug: meeple_game::testing::Bug::None }, "mcts:solver=true", 0).err().unwrap();
    assert!(err.to_string().contains("two-player"), "{err}");
}

#[test]
fn mcts_solver_proves_a_connect_four_win_in_three() {
    // O to move; column 5 is the only move that forces a win, on O's third move (five plies).
    // Found by alpha-beta (value WIN - 5 at depth 5) and checked here again.
    let s = c4("17476373662265133");
    let mut ab = alphabeta(&Connect4::default(), "alphabeta:depth=5");
    assert_eq!(ab.act(&s, &Budget::UNLIMITED).unwrap(), 4);
    assert_eq!(ab.report().value, WIN - 5.0);
    let winners: Vec<Action> = ab.report().root.iter().filter(|m| m.1 > WIN / 2.0).map(|m| m.0).collect();
    assert_eq!(winners, vec![4]);

    for seed in [1, 2, 3] {
        let mut m = mcts(&Connect4::default(), "mcts:iters=200000", seed);
        let a = m.act(&s, &Budget::UNLIMITED).unwrap();
        assert_eq!(m.report().proof, Some(Proof::Win), "{:?}", m.report().root);
        assert!(m.report().iterations < 200_000, "the search stops once the root is proven");
        // The solver proves a win, not the quickest one: check the chosen move is a forced win
        // (the opponent, to move after it, is lost whatever it does).
        let mut reply = alphabeta(&Connect4::default(), "alphabeta:depth=12");
        reply.act(&after(&s, a), &Budget::UNLIMITED).unwrap();
        assert!(reply.report().value < -WIN / 2.0, "column {} is not a forced win", a + 1);
    }
}

#[test]
fn solver_claims_hold_through_whole_games_with_tree_reuse() {
    // Two reusing MCTS players play tic-tac-toe; at every move each proof the solver claims and
    // every root action list is checked against exact minimax. A reused tree must never gain a
    // second child for one action, nor prove what is not so.
    for seed in 0..6 {
        let mut players = [mcts(&TicTacToe, "mcts:iters=3000", seed), mcts(&TicTacToe, "mcts:iters=3000", seed + 100)];
        let mut s = TicTacToe.initial_state();
        while let Some(p) = s.current_player() {
            let a = players[p].act(&s, &Budget::UNLIMITED).unwrap();
            let report = players[p].report();
            let mut actions: Vec<Action> = report.root.iter().map(|r| r.action).collect();
            actions.sort_unstable();
            actions.dedup();
            assert_eq!(actions.len(), report.root.len(), "duplicate root children in\n{s}");
            let exact = minimax(&s);
            if let Some(proof) = report.proof {
                let claimed = match proof {
                    Proof::Win => 1.0,
                    Proof::Loss => 0.0,
                    _ => 0.5,
                };
                assert_eq!(claimed, exact, "false proof {proof:?} in\n{s}");
            }
            for r in &report.root {
                let truth = child_value(&s, r.action, Some(p));
                match r.proof {
                    Proof::Win => assert_eq!(truth, 1.0, "move {} falsely proven won in\n{s}", r.action),
                    Proof::Loss => assert_eq!(truth, 0.0, "move {} falsely proven lost in\n{s}", r.action),
                    Proof::Draw => assert_eq!(truth, 0.5, "move {} falsely proven drawn in\n{s}", r.action),
                    Proof::Unknown => {}
                }
            }
            s.apply(a).unwrap();
        }
    }
}

/// A test evaluator: prefers high action ids, and its filter keeps only the highest one.
struct HighestOnly;

impl meeple_game::Evaluator<TicTacToeState> for HighestOnly {
    fn evaluate(&self, _: &TicTacToeState, _: Player) -> f64 {
        0.0
    }
    fn move_priority(&self, _: &TicTacToeState, action: Action) -> i32 {
        action as i32
    }
    fn has_move_priority(&self) -> bool {
        true
    }
    fn filter(&self, _: &TicTacToeState, actions: &mut Vec<Action>) {
        let top = *actions.iter().max().unwrap();
        actions.retain(|&a| a == top);
    }
}

#[test]
fn forward_pruning_and_ordering_hooks_are_used() {
    use std::sync::Arc;
    let s = TicTacToe.initial_state();
    let config = |spec: &str| AlphaBetaConfig::from_spec(&spec.parse().unwrap()).unwrap();
    // With the filter on, only the highest cell (c1) is ever searched at the root.
    let mut pruned =
        AlphaBeta::with_evaluator(&TicTacToe, config("alphabeta:depth=3,filter=true"), Arc::new(HighestOnly), 0);
    assert_eq!(pruned.act(&s, &Budget::UNLIMITED).unwrap(), 8);
    assert_eq!(pruned.report().root.len(), 1);
    let mut m = Mcts::with_evaluator(
        &TicTacToe,
        MctsConfig::from_spec(&"mcts:iters=200,filter=true".parse().unwrap()).unwrap(),
        "mcts".into(),
        Arc::new(HighestOnly),
        0,
    )
    .unwrap();
    assert_eq!(m.act(&s, &Budget::UNLIMITED).unwrap(), 8);
    assert_eq!(m.report().root.len(), 1);
    // Ordering changes the work, never the value.
    let game = Connect4::default();
    for moves in ["", "44", "4453", "3344"] {
        let s = c4(moves);
        let mut ordered = alphabeta(&game, "alphabeta:depth=8,eval=lines");
        let mut unordered = alphabeta(&game, "alphabeta:depth=8,eval=lines,order=false");
        ordered.act(&s, &Budget::UNLIMITED).unwrap();
        unordered.act(&s, &Budget::UNLIMITED).unwrap();
        assert_eq!(ordered.report().value, unordered.report().value, "{moves}");
        assert_ne!(ordered.report().nodes, unordered.report().nodes, "{moves}: ordering had no effect");
    }
}

#[test]
fn playout_policies_and_cutoffs() {
    let game = Connect4::default();
    // Any agent spec plays out simulations, and tactics still come through.
    for spec in [
        "mcts:iters=500,playout=first",
        "mcts:iters=300,playout=(alphabeta:depth=1)",
        "mcts:iters=500,cutoff=0,eval=lines,eval_scale=20",
        "mcts:iters=500,cutoff=4,eval=lines",
    ] {
        for moves in WIN_IN_ONE {
            let s = c4(moves);
            let a = make_agent(&game, spec, 1).unwrap().act(&s, &Budget::UNLIMITED).unwrap();
            assert!(wins_at_once(&s, a), "{spec} missed the win in {moves}");
        }
        let mut a1 = make_agent(&game, spec, 4).unwrap();
        let mut a2 = make_agent(&game, spec, 4).unwrap();
        let s = c4("44");
        assert_eq!(a1.act(&s, &Budget::UNLIMITED).unwrap(), a2.act(&s, &Budget::UNLIMITED).unwrap(), "{spec}: seeded");
    }
    // With no playout at all (cutoff=0), the evaluator alone steers: it prefers the centre.
    let mut m = mcts(&game, "mcts:iters=3000,cutoff=0,eval=lines,eval_scale=10", 1);
    assert_eq!(m.act(&game.initial_state(), &Budget::UNLIMITED).unwrap(), 3);
}

#[test]
fn ties_at_the_root_are_not_broken_by_action_id() {
    // With 25 iterations and about 2,000 moves every visited move has one visit, and many
    // share the best mean. Breaking that tie by action id picked the lowest ids, which in
    // Cathedral are the smallest buildings. Unbiased, the chosen buildings average well over
    // two squares (random play from this position averages about 3.7).
    use meeple_games::cathedral::Cathedral;
    let game = Cathedral::default();
    let mut s = game.initial_state();
    s.apply(s.parse_action("cathedral@e5").unwrap()).unwrap();
    let squares: Vec<u32> = (0..30)
        .map(|seed| {
            let a = mcts(&game, "mcts:iters=25,solver=false", seed).act(&s, &Budget::UNLIMITED).unwrap();
            let text = s.action_to_string(a);
            let name = text.split('@').next().unwrap().to_string();
            meeple_games::cathedral::BUILDINGS.iter().find(|b| b.name() == name).unwrap().squares()
        })
        .collect();
    let mean = squares.iter().sum::<u32>() as f64 / squares.len() as f64;
    assert!(mean > 3.0, "chosen buildings average {mean} squares: {squares:?}");
}

#[test]
fn ismcts_decides_under_hidden_information() {
    for players in [2, 3] {
        let game = Dice { players, bug: meeple_game::testing::Bug::None };
        for (die, expected) in [(1u8, "reroll"), (2, "reroll"), (6, "stay")] {
            let mut dice = vec![die];
            dice.extend(std::iter::repeat_n(4, players - 1)); // hidden from player 0
            let s = DiceState::with_dice(&game, &dice, 0);
            let a = make_agent(&game, "ismcts:iters=3000", 2).unwrap().act(&s, &Budget::UNLIMITED).unwrap();
            assert_eq!(s.action_to_string(a), expected, "{players} players, die {die}");
        }
    }
}

#[test]
fn ismcts_plays_perfect_information_games_soundly() {
    let (w, d, l) = versus_random(&TicTacToe, "ismcts:iters=3000", 100);
    assert_eq!(l, 0, "{w} wins {d} draws {l} losses");
    let game = Connect4::default();
    for moves in WIN_IN_ONE {
        let s = c4(moves);
        let a = make_agent(&game, "ismcts:iters=2000", 3).unwrap().act(&s, &Budget::UNLIMITED).unwrap();
        assert!(wins_at_once(&s, a), "missed the win in {moves}");
    }
    for moves in MUST_BLOCK {
        let s = c4(moves);
        let a = make_agent(&game, "ismcts:iters=2000", 3).unwrap().act(&s, &Budget::UNLIMITED).unwrap();
        assert!(!opponent_can_win(&after(&s, a)), "failed to block in {moves}");
    }
    let s = c4("44");
    let pick = |seed| make_agent(&game, "ismcts:iters=500", seed).unwrap().act(&s, &Budget::UNLIMITED).unwrap();
    assert_eq!(pick(9), pick(9), "same seed, same move");
    assert!(make_agent(&game, "ismcts:iters=0", 0).is_err());
    assert!(make_agent(&game, "ismcts:c=-2", 0).is_err());
}

#[test]
fn determinized_alphabeta_deepens_every_world_to_the_same_depth() {
    // With a time budget the worlds share iterative deepening: the result comes from one depth
    // completed in all of them, and deeper budgets reach deeper.
    let game = Dice { players: 2, bug: meeple_game::testing::Bug::None };
    let s = DiceState::with_dice(&game, &[1, 4], 0);
    let mut ab = alphabeta(&game, "alphabeta:worlds=8,depth=4");
    assert_eq!(s.action_to_string(ab.act(&s, &Budget::UNLIMITED).unwrap()), "reroll");
    assert_eq!(ab.report().depth, 4, "every world reached the depth limit");
    let c4game = Connect4::default();
    let start = c4game.initial_state();
    let mut short = alphabeta(&c4game, "alphabeta:worlds=4,nodes=20000");
    let mut long = alphabeta(&c4game, "alphabeta:worlds=4,nodes=400000");
    short.act(&start, &Budget::UNLIMITED).unwrap();
    long.act(&start, &Budget::UNLIMITED).unwrap();
    assert!(long.report().depth > short.report().depth, "{} vs {}", long.report().depth, short.report().depth);
    assert_eq!(long.report().root.len(), 7, "every root move has a summed value");
}
