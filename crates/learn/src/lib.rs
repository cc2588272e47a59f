//! Learning for meeple, generic over `Game`: the AlphaZero search (PUCT and Gumbel roots),
//! batched self-play, training runs with checkpoints and metrics, and the learned agents (`az`,
//! `policy`). Its agent registry ([`make_agent`]) is a layer above `meeple-search`'s, so the
//! search crate never knows a network.

pub mod agents;
pub mod az;
pub mod dqn;
pub mod flags;
pub mod ladder;
pub mod metrics;
pub mod ppo;
pub mod replay;
pub mod rl;
pub mod run;
pub mod strap;
pub mod td;
pub mod trainers;
pub mod vae;
pub mod value;
pub mod vecenv;

pub use agents::{AGENTS, EVALUATORS, NetValue, agent_infos, evaluator_infos, extension, make_agent};
pub use az::search::{Root, Search, SearchConfig, SearchResult, Step};
pub use az::selfplay::{
    Position, SelfPlayConfig, SelfPlayGame, SelfPlayStats, self_play, self_play_until, teacher_play_until,
};

use meeple_nn::{Network, Output};

/// What goes wrong while learning.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LearnError {
    #[error(transparent)]
    Nn(#[from] meeple_nn::NnError),
    #[error(transparent)]
    Game(#[from] meeple_game::Error),
    #[error("{0}")]
    Shape(String),
    #[error("{0}")]
    Data(String),
    #[error("{0}")]
    Io(String),
    #[error("{0}")]
    Config(String),
}

impl From<LearnError> for meeple_game::Error {
    fn from(e: LearnError) -> Self {
        match e {
            LearnError::Game(e) => e,
            other => meeple_game::Error::Invalid(other.to_string()),
        }
    }
}

/// A batched evaluator of positions: policy logits over every action id and each seat's value,
/// mover first. A network in practice; tests use simple stand-ins.
pub trait PolicyValue: Send + Sync {
    /// Values in one observation.
    fn input_len(&self) -> usize;
    /// Action ids (logits per position).
    fn actions(&self) -> usize;
    /// Seats (values per position).
    fn seats(&self) -> usize;
    /// Evaluates `batch` observations laid end to end.
    fn evaluate(&self, obs: &[f32], batch: usize) -> Result<Output, LearnError>;
    /// The same on the calling thread alone (each self-play worker keeps its own core busy).
    fn evaluate_serial(&self, obs: &[f32], batch: usize) -> Result<Output, LearnError> {
        self.evaluate(obs, batch)
    }
    /// The logits of listed actions alone (sample `b`'s are `actions[starts[b]..starts[b +
    /// 1]]`, its logits at the same places) and every value; on the calling thread where
    /// `serial`. A search reads only its legal moves' logits, and a network with a dense head
    /// computes just those (Sagrada's leaves list a few dozen of 5,574 ids). By default the
    /// full evaluation, picked out.
    fn evaluate_listed(
        &self,
        obs: &[f32],
        batch: usize,
        actions: &[meeple_game::Action],
        starts: &[usize],
        serial: bool,
    ) -> Result<Output, LearnError> {
        let full = if serial { self.evaluate_serial(obs, batch)? } else { self.evaluate(obs, batch)? };
        let n = self.actions();
        let mut logits = Vec::with_capacity(actions.len());
        for (b, w) in starts.windows(2).enumerate().take(batch) {
            logits.extend(actions[w[0]..w[1]].iter().map(|&a| full.logits[b * n + a as usize]));
        }
        Ok(Output { logits, values: full.values })
    }
}

impl PolicyValue for Network {
    fn input_len(&self) -> usize {
        self.config().input_len()
    }

    fn actions(&self) -> usize {
        self.config().actions
    }

    fn seats(&self) -> usize {
        self.config().seats
    }

    fn evaluate(&self, obs: &[f32], batch: usize) -> Result<Output, LearnError> {
        Ok(Network::evaluate(self, obs, batch)?)
    }

    fn evaluate_serial(&self, obs: &[f32], batch: usize) -> Result<Output, LearnError> {
        Ok(Network::evaluate_serial(self, obs, batch)?)
    }

    fn evaluate_listed(
        &self,
        obs: &[f32],
        batch: usize,
        actions: &[meeple_game::Action],
        starts: &[usize],
        serial: bool,
    ) -> Result<Output, LearnError> {
        Ok(Network::evaluate_listed(self, obs, batch, actions, starts, serial)?)
    }
}

/// An evaluator with no opinion: equal logits, every seat valued 0.5. Search with it is plain
/// MCTS without rollouts; tests use it where the answer must come from the tree alone.
#[derive(Clone, Copy, Debug)]
pub struct Uniform {
    pub input: usize,
    pub actions: usize,
    pub seats: usize,
}

impl PolicyValue for Uniform {
    fn input_len(&self) -> usize {
        self.input
    }

    fn actions(&self) -> usize {
        self.actions
    }

    fn seats(&self) -> usize {
        self.seats
    }

    fn evaluate(&self, obs: &[f32], batch: usize) -> Result<Output, LearnError> {
        if obs.len() != batch * self.input {
            return Err(LearnError::Shape("observations of the wrong size".into()));
        }
        Ok(Output { logits: vec![0.0; batch * self.actions], values: vec![0.5; batch * self.seats] })
    }
}
