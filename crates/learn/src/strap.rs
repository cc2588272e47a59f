//! RootStrap and TreeStrap (Veness, Silver, Uther and Blair, "Bootstrapping from game tree
//! search", 2009), as report 004 trained Santorini's linear evaluators: self-play with meeple's
//! own alpha-beta over a linear evaluator, the weights moved by gradient descent on the squared
//! error between the evaluator's value of a position and what the search found for it.
//!
//! - RootStrap(αβ): each move, the root's weights step toward the root's search value.
//! - TreeStrap(αβ): each move, every node the search valued steps toward its own value, using
//!   the bound alpha-beta proved there (a node that failed low only pulls a value above its upper
//!   bound down, one that failed high only pulls a value below its lower bound up), as in the
//!   paper. The updates of one search are summed, then applied.
//!
//! A proven win or loss in the tree is a target of `±win_value` (the search's own win scores are
//! far beyond any weighted sum): this is where the game's result teaches the weights.

use meeple_game::{Error, Game, State, derive_seed, rng_from_seed};
use meeple_search::alphabeta::{Bound, NodeRecord};
use meeple_search::{AlphaBeta, AlphaBetaConfig};
use rand::RngExt;

/// Which bootstrap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strap {
    Root,
    Tree,
}

impl Strap {
    pub fn name(self) -> &'static str {
        match self {
            Strap::Root => "rootstrap",
            Strap::Tree => "treestrap",
        }
    }
}

/// A bootstrap run.
#[derive(Clone, Debug)]
pub struct StrapConfig {
    pub strap: Strap,
    /// The linear evaluator's name (`linear8`).
    pub eval: String,
    pub depth: u32,
    pub learning_rate: f64,
    /// Random plies that open each game (the same seed gives the same games).
    pub opening_plies: usize,
    pub seed: u64,
    /// The target of a node proven won (its negation: lost).
    pub win_value: f64,
}

/// What one self-play game taught.
#[derive(Clone, Debug, Default)]
pub struct StrapGame {
    pub plies: usize,
    /// Nodes used for updates, and their mean squared error before the update.
    pub nodes: u64,
    pub mse: f64,
}

/// Uniform weights in [-1, 1] from `seed`, as the report starts.
pub fn random_weights(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = rng_from_seed(seed);
    (0..n).map(|_| rng.random_range(-1.0..=1.0)).collect()
}

/// The evaluator spec for `weights`.
pub fn eval_spec(eval: &str, weights: &[f64]) -> String {
    let w: Vec<String> = weights.iter().map(|x| format!("{x}")).collect();
    format!("{eval}:weights=({})", w.join(","))
}

fn searcher<G: Game>(game: &G, config: &StrapConfig, weights: &[f64], seed: u64) -> Result<AlphaBeta<G::State>, Error> {
    let spec = format!("alphabeta:depth={},tt=1mb,eval=({})", config.depth, eval_spec(&config.eval, weights));
    let parsed: meeple_game::Spec = spec.parse()?;
    let mut ab = AlphaBeta::new(game, AlphaBetaConfig::from_spec(&parsed)?, seed)?;
    ab.record_nodes(config.strap != Strap::Root);
    Ok(ab)
}

/// The error a node's record leaves, given the bound proved there (0 where the value already
/// lies within it); proven results count as `±win_value`.
fn error(r: &NodeRecord, weights: &[f64], win_value: f64) -> f64 {
    let h: f64 = r.features.iter().zip(weights).map(|(f, w)| f * w).sum();
    let target = match r.proven() {
        Some(true) => win_value,
        Some(false) => -win_value,
        None => r.value,
    };
    let e = target - h;
    match r.bound {
        Bound::Exact => e,
        Bound::Upper => e.min(0.0),
        Bound::Lower => e.max(0.0),
    }
}

/// Plays one game of self-play with `weights`, updating them after every search.
pub fn play_game<G: Game>(game: &G, config: &StrapConfig, weights: &mut [f64], index: u64) -> Result<StrapGame, Error> {
    let seed = derive_seed(config.seed, index);
    let mut rng = rng_from_seed(derive_seed(seed, 1));
    let mut state = game.initial_state();
    let (mut out, mut sq) = (StrapGame::default(), 0.0);
    let mut legal = Vec::new();
    let mut outcomes = Vec::new();
    while !state.is_terminal() {
        if state.turn() == meeple_game::Turn::Chance {
            state.chance_outcomes(&mut outcomes);
            let a = meeple_game::sample_chance(&outcomes, &mut rng);
            state.apply_unchecked(a);
            continue;
        }
        if out.plies < config.opening_plies {
            state.legal_actions(&mut legal);
            state.apply_unchecked(legal[rng.random_range(0..legal.len())]);
            out.plies += 1;
            continue;
        }
        let mut ab = searcher(game, config, weights, derive_seed(seed, 2 + out.plies as u64))?;
        let action = meeple_game::Agent::act(&mut ab, &state, &meeple_game::Budget::UNLIMITED)?;
        // The root is searched by its own loop: its record comes from the decision's value.
        let mut records: Vec<NodeRecord> = ab.root_record(&state).into_iter().collect();
        if config.strap == Strap::Tree {
            records.extend(ab.take_records());
        }
        sq += update(weights, &records, config.learning_rate, config.win_value);
        out.nodes += records.len() as u64;
        state.apply(action)?;
        out.plies += 1;
    }
    out.mse = if out.nodes > 0 { sq / out.nodes as f64 } else { 0.0 };
    Ok(out)
}

/// The weights of evaluator `eval` as a file `weights=FILE` loads: one line of numbers, and a
/// comment line naming how they were made.
pub fn weights_file(weights: &[f64], made_by: &str) -> String {
    let w: Vec<String> = weights.iter().map(|x| format!("{x}")).collect();
    format!("# {made_by}\n{}\n", w.join(","))
}

/// Moves `weights` by the summed TreeStrap step over `records`; gives the records' squared
/// error before the step.
pub fn update(weights: &mut [f64], records: &[NodeRecord], learning_rate: f64, win_value: f64) -> f64 {
    let mut step = vec![0.0; weights.len()];
    let mut sq = 0.0;
    for r in records {
        let e = error(r, weights, win_value);
        sq += e * e;
        for (s, f) in step.iter_mut().zip(&r.features) {
            *s += learning_rate * e * f;
        }
    }
    for (w, s) in weights.iter_mut().zip(&step) {
        *w += s;
    }
    sq
}

#[cfg(test)]
mod tests {
    use super::*;

    fn positions(n: usize, seed: u64) -> Vec<meeple_games::santorini::SantoriniState> {
        let game = meeple_games::santorini::Santorini::default();
        let mut rng = rng_from_seed(seed);
        let mut out = Vec::new();
        let mut legal = Vec::new();
        while out.len() < n {
            let mut s = game.initial_state();
            while !s.is_terminal() {
                s.legal_actions(&mut legal);
                s.apply_unchecked(legal[rng.random_range(0..legal.len())]);
                if !s.is_terminal() {
                    out.push(s);
                }
            }
        }
        out.truncate(n);
        out
    }

    #[test]
    fn features_times_weights_is_the_evaluators_value() {
        let spec8 = eval_spec("linear8", &random_weights(8, 1));
        let spec22 = eval_spec("linear22", &random_weights(22, 2));
        let game = meeple_games::santorini::Santorini::default();
        for spec in ["linear8".to_string(), spec8, "linear22".to_string(), spec22] {
            let eval = meeple_search::make_evaluator(&game, &spec).unwrap();
            let w = eval.weights();
            assert!(!w.is_empty(), "{spec}");
            let mut f = Vec::new();
            for s in positions(300, 5) {
                for p in 0..2 {
                    assert!(eval.features(&s, p, &mut f));
                    let dot: f64 = f.iter().zip(&w).map(|(a, b)| a * b).sum();
                    assert!((dot - eval.evaluate(&s, p)).abs() < 1e-9, "{spec}: {dot} vs {}", eval.evaluate(&s, p));
                }
            }
        }
    }

    #[test]
    fn a_bound_only_pulls_values_that_break_it() {
        let r = |value, bound| NodeRecord { features: vec![1.0], value, bound };
        let w = [2.0];
        let e = |r: &NodeRecord| error(r, &w, 10.0);
        assert_eq!(e(&r(3.0, Bound::Exact)), 1.0);
        assert_eq!(e(&r(1.0, Bound::Exact)), -1.0);
        // At most 3: a value of 2 keeps it; at most 1: 2 is pulled down.
        assert_eq!(e(&r(3.0, Bound::Upper)), 0.0);
        assert_eq!(e(&r(1.0, Bound::Upper)), -1.0);
        // At least 1: 2 keeps it; at least 3: 2 is pulled up.
        assert_eq!(e(&r(1.0, Bound::Lower)), 0.0);
        assert_eq!(e(&r(3.0, Bound::Lower)), 1.0);
        // A proven win is worth the win value; a proven loss its negation.
        assert_eq!(e(&r(1e9, Bound::Exact)), 8.0);
        assert_eq!(e(&r(-1e9, Bound::Lower)), 0.0);
        assert_eq!(e(&r(-1e9, Bound::Exact)), -12.0);
    }

    /// The update recovers a known evaluator: records valued by `linear8`'s hand weights teach
    /// weights that start at random, to within 1e-3 of the teacher's.
    #[test]
    fn the_update_recovers_the_weights_of_a_known_evaluator() {
        let game = meeple_games::santorini::Santorini::default();
        let teacher = meeple_search::make_evaluator(&game, "linear8").unwrap();
        let mut records = Vec::new();
        for s in positions(400, 8) {
            let mut f = Vec::new();
            teacher.features(&s, 0, &mut f);
            records.push(NodeRecord { features: f, value: teacher.evaluate(&s, 0), bound: Bound::Exact });
        }
        let mut w = random_weights(8, 4);
        for _ in 0..20_000 {
            update(&mut w, &records, 0.5 / records.len() as f64, 10.0);
        }
        for (a, b) in w.iter().zip(&teacher.weights()) {
            assert!((a - b).abs() < 1e-3, "{w:?} vs {:?}", teacher.weights());
        }
    }
}
