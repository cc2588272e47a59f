//! Alpha-beta on Santorini with the report's evaluator: the plain baseline is exactly minimax,
//! and the engine's exact refinements (table, ordering, PVS, futility pruning) keep its values.

use meeple_game::{Action, Agent, Budget, Evaluator, Game, State, Turn, rng_from_seed};
use meeple_games::santorini::{Linear8, Santorini, SantoriniState};
use meeple_search::{AlphaBeta, AlphaBetaConfig};
use rand::RngExt;

fn alphabeta(spec: &str) -> AlphaBeta<SantoriniState> {
    AlphaBeta::new(&Santorini::default(), AlphaBetaConfig::from_spec(&spec.parse().unwrap()).unwrap(), 1).unwrap()
}

/// Plain minimax with the linear evaluator from `root`'s view; win = +inf-like, loss = -inf-like.
fn minimax(s: &SantoriniState, depth: u32, root: usize, eval: &Linear8) -> f64 {
    if let Some(r) = s.returns() {
        return if r[root] == 1.0 { 1e6 } else { -1e6 };
    }
    if depth == 0 {
        return eval.evaluate(s, root);
    }
    let mut legal = Vec::new();
    s.legal_actions(&mut legal);
    let values = legal.iter().map(|&a| {
        let mut c = *s;
        c.apply_unchecked(a);
        minimax(&c, depth - 1, root, eval)
    });
    if s.current_player() == Some(root) { values.fold(f64::MIN, f64::max) } else { values.fold(f64::MAX, f64::min) }
}

fn positions(n: usize) -> Vec<SantoriniState> {
    let mut rng = rng_from_seed(8);
    let mut legal = Vec::new();
    let mut out = Vec::new();
    while out.len() < n {
        let mut s = Santorini::default().initial_state();
        let plies = rng.random_range(4..24);
        for _ in 0..plies {
            if s.turn() == Turn::Terminal {
                break;
            }
            s.legal_actions(&mut legal);
            s.apply_unchecked(legal[rng.random_range(0..legal.len())]);
        }
        if s.turn() != Turn::Terminal {
            out.push(s);
        }
    }
    out
}

#[test]
fn plain_depth_three_is_exactly_minimax() {
    let eval = Linear8::default();
    for s in positions(12) {
        let root = s.current_player().unwrap();
        let mut legal = Vec::new();
        s.legal_actions(&mut legal);
        // Minimax's choice: the first move (in generator order) with the best value.
        let values: Vec<(Action, f64)> = legal
            .iter()
            .map(|&a| {
                let mut c = s;
                c.apply_unchecked(a);
                (a, minimax(&c, 2, root, &eval))
            })
            .collect();
        let best = values.iter().map(|v| v.1).fold(f64::MIN, f64::max);
        let expected = values.iter().find(|v| v.1 == best).unwrap().0;
        let mut ab = alphabeta("alphabeta:depth=3,eval=linear8,plain=true,order=false");
        assert_eq!(ab.act(&s, &Budget::UNLIMITED).unwrap(), expected, "\n{s}");
    }
}

#[test]
fn exact_refinements_keep_the_minimax_value() {
    // Table, killers, history, the report's ordering, PVS and futility pruning change the work,
    // never the value.
    for s in positions(20) {
        let mut plain = alphabeta("alphabeta:depth=4,eval=linear8,plain=true");
        let mut full = alphabeta("alphabeta:depth=4,eval=linear8");
        plain.act(&s, &Budget::UNLIMITED).unwrap();
        full.act(&s, &Budget::UNLIMITED).unwrap();
        let (p, f) = (plain.report().value, full.report().value);
        let mate = |v: f64| v.abs() > 500_000.0;
        if mate(p) || mate(f) {
            assert_eq!(p.signum(), f.signum(), "\n{s}");
        } else {
            assert!((p - f).abs() < 1e-9, "plain {p} vs full {f}\n{s}");
        }
    }
}

#[test]
fn the_greedy_agent_and_search_find_a_winning_climb() {
    let game = Santorini::default();
    let s = SantoriniState::from_parts(&game, "00000 00000 00300 02000 00000", "b2 e1 e5 d5", 0).unwrap();
    for spec in [
        "alphabeta:depth=1,eval=linear8",
        "alphabeta:depth=3",
        "alphabeta:depth=6,eval=linear8,lmr=true,lmp=true",
        "mcts:iters=200",
        "santorini-greedy",
    ] {
        let a = meeple_search::make_agent(&game, spec, 1).unwrap().act(&s, &Budget::UNLIMITED).unwrap();
        assert_eq!(s.action_to_string(a), "b2-c3", "{spec}");
    }
}

fn opponent_wins_next(s: &SantoriniState) -> bool {
    let mut legal = Vec::new();
    s.legal_actions(&mut legal);
    legal.iter().any(|&a| {
        let mut c = *s;
        c.apply_unchecked(a);
        c.returns().is_some_and(|r| r[s.current_player().unwrap()] == 1.0)
    })
}

#[test]
fn searches_block_a_climb_to_level_three() {
    // O's d4 worker stands on level 2 next to the level-3 e5: X has to step to d5 and dome e5.
    let game = Santorini::default();
    let s = SantoriniState::from_parts(&game, "00003 00020 00000 00000 00000", "c4 a1 d4 a5", 0).unwrap();
    let mut legal = Vec::new();
    s.legal_actions(&mut legal);
    let after = |a: Action| {
        let mut c = s;
        c.apply_unchecked(a);
        c
    };
    let saving: Vec<String> =
        legal.iter().filter(|&&a| !opponent_wins_next(&after(a))).map(|&a| s.action_to_string(a)).collect();
    assert_eq!(saving, ["c4-d5-e5"]);
    for spec in [
        "alphabeta:depth=2,eval=linear8",
        "alphabeta:depth=6,eval=linear8",
        "alphabeta:depth=8,eval=linear8,lmr=true,lmp=true",
        "alphabeta:time=200ms,eval=linear8,lmr=true,lmp=true",
        "mcts:iters=3000",
    ] {
        let a = meeple_search::make_agent(&game, spec, 1).unwrap().act(&s, &Budget::UNLIMITED).unwrap();
        assert_eq!(s.action_to_string(a), "c4-d5-e5", "{spec}");
    }
}

/// An evaluator that prefers batches (as a network does), counting its batched calls.
struct Batching {
    inner: Linear8,
    calls: std::sync::atomic::AtomicUsize,
}

impl Evaluator<SantoriniState> for Batching {
    fn evaluate(&self, state: &SantoriniState, player: usize) -> f64 {
        self.inner.evaluate(state, player)
    }

    fn evaluate_many(&self, states: &[SantoriniState], player: usize, out: &mut Vec<f64>) {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        out.clear();
        out.extend(states.iter().map(|s| self.inner.evaluate(s, player)));
    }

    fn prefers_batches(&self) -> bool {
        true
    }
}

/// An evaluator that prefers batches gets the leaves below each frontier node in one call, and
/// the search's values stay minimax's.
#[test]
fn batched_leaves_keep_the_minimax_value() {
    let eval = Linear8::default();
    let batching = std::sync::Arc::new(Batching { inner: Linear8::default(), calls: Default::default() });
    for spec in ["alphabeta:depth=3", "alphabeta:depth=3,plain=true"] {
        let config = AlphaBetaConfig::from_spec(&spec.parse().unwrap()).unwrap();
        let mut ab = AlphaBeta::with_evaluator(&Santorini::default(), config, batching.clone(), 1);
        for s in positions(12) {
            let root = s.current_player().unwrap();
            ab.act(&s, &Budget::default()).unwrap();
            let want = minimax(&s, 3, root, &eval);
            let got = ab.report().value;
            assert!((got - want).abs() < 1e-9 || (got.abs() > 9e5 && want.abs() > 9e5), "{spec}: {got} against {want}");
        }
    }
    assert!(batching.calls.load(std::sync::atomic::Ordering::Relaxed) > 0);
}

/// `mover:eval=(E)` reads a linear evaluator from the side to move: the mover's value, its
/// negation for the other player, both still features times weights (TreeStrap learns through
/// it); with weights that are not antisymmetric it differs from `E` itself for the other player.
#[test]
fn the_mover_view_is_linear_and_zero_sum() {
    let game = Santorini::default();
    let w = "0.3,1.2,2.5,-0.7,0.4,-1.1,-3.2,0.9";
    let plain = meeple_search::make_evaluator(&game, &format!("linear8:weights=({w})")).unwrap();
    let mover = meeple_search::make_evaluator(&game, &format!("mover:eval=(linear8:weights=({w}))")).unwrap();
    let weights = mover.weights();
    assert_eq!(weights, plain.weights());
    let (mut f, mut differs) = (Vec::new(), 0);
    for s in positions(200) {
        let Some(m) = s.current_player() else { continue };
        assert_eq!(mover.evaluate(&s, m), plain.evaluate(&s, m));
        assert_eq!(mover.evaluate(&s, 1 - m), -plain.evaluate(&s, m));
        differs += usize::from((plain.evaluate(&s, 1 - m) + plain.evaluate(&s, m)).abs() > 1e-9);
        for p in 0..2 {
            assert!(mover.features(&s, p, &mut f));
            let dot: f64 = f.iter().zip(&weights).map(|(a, b)| a * b).sum();
            assert!((dot - mover.evaluate(&s, p)).abs() < 1e-9);
        }
    }
    assert!(differs > 100, "{differs}");
    // Only two-player games, and the inner spec is checked.
    assert!(meeple_search::make_evaluator(&game, "mover:eval=(nothing)").is_err());
    let catan = <meeple_games::catan::Catan as Game>::from_spec(&"catan:players=3".parse().unwrap()).unwrap();
    let err = meeple_search::make_evaluator(&catan, "mover:eval=zero").err().unwrap().to_string();
    assert!(err.contains("two-player"), "{err}");
}
