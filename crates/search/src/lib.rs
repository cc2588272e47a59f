//! Game-agnostic agents, and the registry that builds them from spec strings.
//!
//! Search code never names a game: game knowledge reaches it only through traits, and a game's
//! own agents (rules-based players) come in through [`Game::game_agent`].

pub mod alphabeta;
mod evaluators;
pub mod ismcts;
pub mod mcts;
mod playout;
pub mod rollout;
mod simple;
mod tt;

pub use alphabeta::{AlphaBeta, AlphaBetaConfig};
pub use evaluators::{Mover, evaluator_infos, make_evaluator, make_evaluator_with};
pub use ismcts::Ismcts;
pub use mcts::{Mcts, MctsConfig};
pub use playout::random_playout;
pub use simple::{FirstAgent, RandomAgent};

use meeple_game::{AgentInfo, BoxedAgent, Error, Evaluator, Game, Spec};
use std::sync::Arc;

/// Agents and evaluators that a layer above this crate adds (meeple-learn's learned agents and
/// network evaluators), so this crate knows no network. Agents built through
/// [`make_agent_with`] build what their specs name (playout agents, evaluators) through the
/// same extension: `mcts:playout=(policy:model=F)` or `alphabeta:eval=(net:model=F)`.
pub trait Extension<G: Game>: Send + Sync {
    /// The agent `spec` names, or `None` when the name is not this extension's.
    fn agent(&self, game: &G, spec: &Spec, seed: u64) -> Option<Result<BoxedAgent<G::State>, Error>>;
    /// The evaluator `spec` names, or `None` when the name is not this extension's.
    fn evaluator(&self, game: &G, spec: &Spec) -> Option<Result<SharedEvaluator<G::State>, Error>>;
    /// The agents it adds (for listings and errors).
    fn agent_infos(&self) -> Vec<AgentInfo>;
    /// The evaluators it adds.
    fn evaluator_infos(&self) -> Vec<AgentInfo>;
}

/// An evaluator that several searches (and search threads) share.
pub type SharedEvaluator<S> = Arc<dyn Evaluator<S>>;

/// An extension, or none (this crate's agents and the game's alone).
pub type Ext<G> = Option<Arc<dyn Extension<G>>>;

/// The agents every game gets, in the order `meeple agents` lists them.
pub const AGENTS: &[AgentInfo] = &[simple::RANDOM_INFO, simple::FIRST_INFO, alphabeta::INFO, mcts::INFO, ismcts::INFO];

/// The tighter of an agent's own limit and the caller's budget (either may be absent).
pub(crate) fn tighter<T: Ord>(own: Option<T>, outside: Option<T>) -> Option<T> {
    match (own, outside) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Every agent that can play `game`: the generic ones, then the game's own.
pub fn agent_infos<G: Game>(game: &G) -> Vec<AgentInfo> {
    let mut all = AGENTS.to_vec();
    all.extend(game.game_agent_infos());
    all
}

/// Builds the agent named by `spec` for `game`. `seed` feeds every random choice it makes.
pub fn make_agent<G: Game>(game: &G, spec: &str, seed: u64) -> Result<BoxedAgent<G::State>, Error> {
    make_agent_with(game, spec, seed, &None)
}

/// [`make_agent`] with the agents and evaluators of an extension, which the agent's own
/// playout agents and evaluators may also name.
pub fn make_agent_with<G: Game>(game: &G, spec: &str, seed: u64, ext: &Ext<G>) -> Result<BoxedAgent<G::State>, Error> {
    let parsed: Spec = spec.parse()?;
    if let Some(e) = ext
        && let Some(agent) = e.agent(game, &parsed, seed)
    {
        return agent;
    }
    match parsed.name.as_str() {
        "random" => Ok(Box::new(RandomAgent::from_spec(&parsed, seed)?)),
        "first" => Ok(Box::new(FirstAgent::from_spec(&parsed)?)),
        "alphabeta" => Ok(Box::new(AlphaBeta::new_with(game, AlphaBetaConfig::from_spec(&parsed)?, seed, ext)?)),
        "mcts" => Ok(Box::new(Mcts::new_with(game, MctsConfig::from_spec(&parsed)?, parsed.to_string(), seed, ext)?)),
        "ismcts" => Ok(Box::new(Ismcts::from_spec_with(game, &parsed, seed, ext)?)),
        other => match game.game_agent(&parsed, seed) {
            Some(agent) => agent,
            None => {
                let mut names: Vec<&str> = agent_infos(game).iter().map(|a| a.name).collect();
                let extra = ext.as_ref().map(|e| e.agent_infos()).unwrap_or_default();
                names.extend(extra.iter().map(|a| a.name));
                Err(Error::UnknownName { kind: "agent", name: other.to_string(), accepted: names.join(", ") })
            }
        },
    }
}

/// When an iteration loop looks at the wall clock: often enough to stop within about a quarter
/// of a millisecond of its deadline (a Sagrada playout by a rules agent takes ~1 ms), rarely
/// enough to cost nothing when iterations take a microsecond.
pub(crate) struct Clock {
    start: std::time::Instant,
    deadline: Option<std::time::Instant>,
    cancel: Option<meeple_game::Cancel>,
    next_check: u64,
}

impl Clock {
    pub(crate) fn new(deadline: Option<std::time::Instant>, cancel: Option<meeple_game::Cancel>) -> Self {
        Clock { start: std::time::Instant::now(), deadline, cancel, next_check: 0 }
    }

    /// Whether the deadline has passed, or the decision was cancelled, after `done` iterations.
    pub(crate) fn expired(&mut self, done: u64) -> bool {
        if (self.deadline.is_none() && self.cancel.is_none()) || done < self.next_check {
            return false;
        }
        let now = std::time::Instant::now();
        if self.deadline.is_some_and(|d| now >= d) || self.cancel.is_some_and(meeple_game::Cancel::is_set) {
            return true;
        }
        let per_quarter_ms = done as f64 / (now - self.start).as_secs_f64().max(1e-9) * 0.000_25;
        self.next_check = done + (per_quarter_ms as u64).clamp(1, 256);
        false
    }
}

/// The most nodes each of `trees` search trees with nodes of `node_bytes` may hold: one
/// decision's trees take at most half of the memory divided by the cores (as many searches may
/// run at once in a tournament) or the process's tree cap, so a long or unlimited search stops
/// when its tree is full rather than exhaust the machine; and nodes stay below the `u32` ids they link by.
pub(crate) fn max_tree_nodes(trees: u64, node_bytes: usize) -> usize {
    let share = meeple_game::limits::max_tree_bytes();
    let per_tree = share / node_bytes as u64 / trees.max(1);
    per_tree.clamp(2, u32::MAX as u64 - 2) as usize
}

/// The only legal action of the player to move, if there is exactly one and the move is timed:
/// searches then play it at once instead of spending their clock on a forced move (untimed
/// searches still search it, so their reports stay complete).
pub(crate) fn forced_move<S: meeple_game::State>(state: &S, timed: bool) -> Option<meeple_game::Action> {
    if !timed {
        return None;
    }
    let mut legal = Vec::new();
    state.legal_actions(&mut legal);
    (legal.len() == 1).then(|| legal[0])
}

#[cfg(test)]
mod tests {
    use super::*;
    use meeple_game::{Budget, Game, State};
    use meeple_games::{Connect4, TicTacToe};

    #[test]
    fn a_timed_search_stops_at_its_overhead() {
        // With all of its second kept in reserve the search stops at its first look at the clock,
        // yet still answers with a legal move.
        let game = Connect4::default();
        let state = game.initial_state();
        let budget = Budget { overhead: Some(std::time::Duration::from_secs(1)), ..Budget::UNLIMITED };
        for spec in ["alphabeta:time=1s", "mcts:time=1s", "ismcts:time=1s"] {
            let mut agent = make_agent(&game, spec, 3).unwrap();
            let start = std::time::Instant::now();
            let a = agent.act(&state, &budget).unwrap();
            assert!(state.is_legal(a), "{spec}");
            assert!(start.elapsed() < std::time::Duration::from_millis(500), "{spec} took {:?}", start.elapsed());
        }
    }

    #[test]
    fn registry_builds_and_rejects() {
        let game = Connect4::default();
        assert_eq!(make_agent(&game, "random", 1).unwrap().spec(), "random");
        assert_eq!(make_agent(&game, " first ", 1).unwrap().spec(), "first");
        let err = make_agent(&game, "alphazero", 1).err().unwrap().to_string();
        assert_eq!(err, "unknown agent 'alphazero'; accepted: random, first, alphabeta, mcts, ismcts");
        let err = make_agent(&game, "random:depth=3", 1).err().unwrap().to_string();
        assert!(err.contains("agent random: unknown option 'depth'"), "{err}");
        assert!(make_agent(&game, "random:", 1).is_err());
    }

    #[test]
    fn first_plays_the_lowest_legal_action() {
        let game = TicTacToe;
        let mut s = game.initial_state();
        let mut first = make_agent(&game, "first", 0).unwrap();
        s.apply(0).unwrap();
        assert_eq!(first.act(&s, &Budget::UNLIMITED).unwrap(), 1);
    }

    #[test]
    fn random_is_uniform_over_legal_actions_and_seeded() {
        let game = Connect4::default();
        let s = game.initial_state().play_columns("444444").unwrap();
        let mut agent = make_agent(&game, "random", 5).unwrap();
        let mut counts = [0usize; 7];
        let picks: Vec<u32> = (0..6000).map(|_| agent.act(&s, &Budget::UNLIMITED).unwrap()).collect();
        for &a in &picks {
            counts[a as usize] += 1;
        }
        assert_eq!(counts[3], 0, "column 4 is full");
        for (c, &n) in counts.iter().enumerate().filter(|&(c, _)| c != 3) {
            assert!((850..1150).contains(&n), "column {c} picked {n} times of 6000");
        }
        let mut again = make_agent(&game, "random", 5).unwrap();
        let repeat: Vec<u32> = (0..6000).map(|_| again.act(&s, &Budget::UNLIMITED).unwrap()).collect();
        assert_eq!(picks, repeat, "same seed, same choices");
    }

    #[test]
    fn agents_refuse_finished_games() {
        let game = Connect4::default();
        let s = game.initial_state().play_columns("1212121").unwrap();
        for spec in ["random", "first"] {
            let err = make_agent(&game, spec, 0).unwrap().act(&s, &Budget::UNLIMITED).unwrap_err();
            assert!(err.to_string().contains("no legal action"), "{err}");
        }
    }
}
