//! The observation autoencoder's data and its use under the model-free learners (report 001):
//! positions from games of given agents, and a frozen encoder that turns each observation into
//! its latent mean before a DQN or PPO network sees it.

use crate::{LearnError, make_agent};
use meeple_game::{Game, State, Turn, derive_seed, rng_from_seed, sample_chance};
use meeple_nn::Vae;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Observations of the player to move at every decision of `games` games: game `i` is played
/// by `players[i % players.len()]` in every seat (report 001: half of the games by random
/// players, half by a trained agent). Gives the observations laid end to end.
pub fn positions<G: Game>(game: &G, players: &[String], games: u64, seed: u64) -> Result<Vec<f32>, LearnError> {
    if players.is_empty() {
        return Err(LearnError::Config("give at least one agent to play the games".into()));
    }
    let n: usize = game.observation_shape().iter().product();
    let mut out = Vec::new();
    let mut view = Vec::new();
    let mut outcomes = Vec::new();
    for i in 0..games {
        let spec = &players[(i % players.len() as u64) as usize];
        let s = derive_seed(seed, i);
        let mut agents = (0..game.num_players())
            .map(|p| make_agent(game, spec, derive_seed(s, 1 + p as u64)))
            .collect::<Result<Vec<_>, _>>()?;
        let mut rng = rng_from_seed(s);
        let mut state = game.initial_state();
        loop {
            match state.turn() {
                Turn::Terminal => break,
                Turn::Chance => {
                    state.chance_outcomes(&mut outcomes);
                    state.apply_unchecked(sample_chance(&outcomes, &mut rng));
                }
                Turn::Player(p) => {
                    state.observation(p, &mut view);
                    out.extend_from_slice(&view[..n]);
                    let a = agents[p].act(&state, &meeple_game::Budget::UNLIMITED)?;
                    state.apply(a)?;
                }
            }
        }
    }
    Ok(out)
}

/// A frozen encoder in front of a learner's network: observations become latent means.
#[derive(Clone)]
pub struct Encoder {
    vae: Arc<Vae>,
    /// The file it was read from, as given (kept in the learner's sidecar).
    pub path: String,
    scratch: Vec<f32>,
}

impl Encoder {
    /// Reads an autoencoder checkpoint for `game` (its observations must be the game's).
    pub fn load<G: Game>(game: &G, path: &Path, given: &str) -> Result<Self, LearnError> {
        let (vae, _) =
            Vae::load(path, Some(&game.spec().to_string())).map_err(|e| LearnError::Config(e.to_string()))?;
        let n: usize = game.observation_shape().iter().product();
        if vae.config().input != n {
            return Err(LearnError::Config(format!(
                "encoder '{given}' reads observations of {}, {} has {n}",
                vae.config().input,
                game.spec()
            )));
        }
        Ok(Encoder { vae: Arc::new(vae), path: given.to_string(), scratch: Vec::new() })
    }

    /// The latent size (the learner network's input).
    pub fn latent(&self) -> usize {
        self.vae.config().latent
    }

    /// Replaces `rows` observations in `obs` by their latent means.
    pub fn encode_in_place(&mut self, obs: &mut Vec<f32>, rows: usize) {
        self.vae.encode(obs, rows, &mut self.scratch);
        std::mem::swap(obs, &mut self.scratch);
    }
}

/// Where a learner's sidecar names its encoder: a file of that name beside the checkpoint
/// first (so the two can be moved together), then the path as given.
pub fn encoder_path(checkpoint: &Path, named: &str) -> PathBuf {
    let beside = Path::new(named).file_name().and_then(|f| checkpoint.parent().map(|d| d.join(f)));
    match beside {
        Some(p) if p.is_file() => p,
        _ => PathBuf::from(named),
    }
}
