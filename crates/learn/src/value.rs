//! Value networks from search data (report 004's MCTS_ANN, MCTS_CNN and "combined"): games
//! played by a search agent, every root child the search visited enough kept with the value
//! the search gave it, and a value network fitted to them.
//!
//! The search is any agent whose `analysis` gives each root move's value (`mcts`, `az`):
//! `mcts:iters=800` for the report's MCTS data, `mcts:iters=800,playout=(alphabeta:depth=1,
//! eval=linear8)` for its combined approach (rollouts that follow the linear agent).

use crate::LearnError;
use meeple_game::{Action, Budget, Game, State, Turn, rng_from_seed};
use meeple_nn::{Batch, Trainer};
use rand::RngExt;
use serde::{Deserialize, Serialize};

/// Positions and their value targets (each `seats` long, the viewer first).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Samples {
    pub input: usize,
    pub seats: usize,
    pub obs: Vec<f32>,
    pub value: Vec<f32>,
}

impl Samples {
    pub fn len(&self) -> usize {
        self.obs.len().checked_div(self.input).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn push(&mut self, obs: &[f32], value: &[f32]) {
        self.obs.extend_from_slice(obs);
        self.value.extend_from_slice(value);
    }

    fn extend(&mut self, other: Samples) {
        self.obs.extend(other.obs);
        self.value.extend(other.value);
    }
}

/// How search data is gathered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchDataConfig {
    /// The search agent that plays the games (its `analysis` must give root values).
    pub searcher: String,
    pub games: usize,
    /// Uniformly random plies opening each game, so the games differ.
    pub opening_plies: usize,
    /// Fewest visits a root move needs for its value to be kept.
    pub min_visits: u64,
    pub seed: u64,
    pub threads: usize,
}

/// A mover's value `v` as a target vector for `seats` seats: `v` for the viewer, the rest
/// shared equally by the others.
fn target(v: f64, seats: usize, out: &mut Vec<f32>) {
    out.clear();
    out.push(v as f32);
    let rest = if seats > 1 { (1.0 - v) / (seats - 1) as f64 } else { 0.0 };
    out.extend((1..seats).map(|_| rest as f32));
}

/// Plays `config.games` games with the search agent (on `threads` threads, game `i` on thread
/// `i % threads`) and keeps each well-visited root move's afterstate, seen from the mover, with
/// the search's value of it. `progress` is called after each game with the games done.
pub fn search_data<G: Game>(
    game: &G,
    config: &SearchDataConfig,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<Samples, LearnError> {
    crate::make_agent(game, &config.searcher, 0)
        .map_err(|e| LearnError::Config(format!("searcher '{}': {e}", config.searcher)))?;
    let threads = config.threads.max(1);
    let done = std::sync::atomic::AtomicUsize::new(0);
    let parts: Vec<Result<Samples, LearnError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let done = &done;
                scope.spawn(move || {
                    let mut samples = Samples {
                        input: game.observation_shape().iter().product(),
                        seats: game.num_players(),
                        ..Samples::default()
                    };
                    for i in (t..config.games).step_by(threads) {
                        play_one(game, config, i as u64, &mut samples)?;
                        progress(done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1);
                    }
                    Ok(samples)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a data worker does not panic")).collect()
    });
    let mut all =
        Samples { input: game.observation_shape().iter().product(), seats: game.num_players(), ..Samples::default() };
    for p in parts {
        all.extend(p?);
    }
    Ok(all)
}

fn play_one<G: Game>(game: &G, config: &SearchDataConfig, index: u64, out: &mut Samples) -> Result<(), LearnError> {
    let seed = meeple_game::derive_seed(config.seed, index);
    let mut rng = rng_from_seed(seed);
    let mut agent = crate::make_agent(game, &config.searcher, seed)?;
    let mut state = game.initial_state();
    let (mut buf, mut obs, mut t, mut outcomes) = (Vec::<Action>::new(), Vec::new(), Vec::new(), Vec::new());
    let seats = game.num_players();
    let mut plies = 0usize;
    loop {
        match state.turn() {
            Turn::Terminal => return Ok(()),
            Turn::Chance => {
                state.chance_outcomes(&mut outcomes);
                let mut x: f64 = rng.random();
                let mut pick = outcomes.last().expect("a chance node has outcomes").0;
                for &(a, p) in &outcomes {
                    if x < p {
                        pick = a;
                        break;
                    }
                    x -= p;
                }
                state.apply_unchecked(pick);
            }
            Turn::Player(mover) => {
                if plies < config.opening_plies {
                    let a = state.random_action(&mut rng, &mut buf);
                    state.apply_unchecked(a);
                    plies += 1;
                    continue;
                }
                let action = agent.act(&state, &Budget::default())?;
                for stat in agent.analysis() {
                    let (Some(visits), Some(value)) = (stat.visits, stat.value) else { continue };
                    if visits < config.min_visits {
                        continue;
                    }
                    let mut next = state.clone();
                    next.apply_unchecked(stat.action);
                    if next.is_terminal() {
                        continue;
                    }
                    next.observation(mover, &mut obs);
                    target(value, seats, &mut t);
                    out.push(&obs, &t);
                }
                state.apply(action)?;
                plies += 1;
            }
        }
    }
}

/// A value-only training batch of the positions `idx` of `obs` and `value` (`input` and `seats`
/// values each; `actions`: the network's policy size, whose targets stay empty).
pub(crate) fn value_batch(
    obs: &[f32],
    value: &[f32],
    (input, seats, actions): (usize, usize, usize),
    idx: &[usize],
) -> Batch {
    let b = idx.len();
    let mut mb = Batch {
        size: b,
        obs: Vec::with_capacity(b * input),
        legal: vec![0.0; b * actions],
        policy: vec![0.0; b * actions],
        policy_weight: vec![0.0; b],
        value: Vec::with_capacity(b * seats),
        ..Batch::default()
    };
    for &i in idx {
        mb.obs.extend_from_slice(&obs[i * input..(i + 1) * input]);
        mb.value.extend_from_slice(&value[i * seats..(i + 1) * seats]);
    }
    mb
}

/// Figures of one epoch of fitting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Epoch {
    pub epoch: usize,
    pub train_loss: f64,
    /// The mean squared error on the held-out share (the positions of the last games).
    pub holdout_loss: f64,
}

/// Fits the trainer's value head to `samples` for `epochs` epochs of shuffled minibatches,
/// keeping the last `holdout` share out of training to report; `each` gets every epoch.
pub fn fit(
    trainer: &mut Trainer,
    samples: &Samples,
    epochs: usize,
    minibatch: usize,
    holdout: f64,
    seed: u64,
    each: &mut dyn FnMut(&Epoch, &Trainer) -> bool,
) -> Result<Vec<Epoch>, LearnError> {
    let n = samples.len();
    let held = ((n as f64) * holdout.clamp(0.0, 0.5)) as usize;
    let train_n = n - held;
    if train_n == 0 {
        return Err(LearnError::Data("no positions to train on".into()));
    }
    let (input, seats, actions) = (samples.input, samples.seats, trainer.config().actions);
    let mut rng = rng_from_seed(seed);
    let mut order: Vec<usize> = (0..train_n).collect();
    let mut out = Vec::new();
    let make = |idx: &[usize]| value_batch(&samples.obs, &samples.value, (input, seats, actions), idx);
    for epoch in 1..=epochs {
        for i in (1..train_n).rev() {
            let j = rng.random_range(0..=i);
            order.swap(i, j);
        }
        let (mut total, mut steps) = (0.0, 0);
        for chunk in order.chunks(minibatch.max(1)) {
            let losses = trainer.train_step(&make(chunk)).map_err(|e| LearnError::Shape(e.to_string()))?;
            total += losses.value;
            steps += 1;
        }
        let holdout_loss = if held > 0 {
            let net = trainer.network(1);
            let idx: Vec<usize> = (train_n..n).collect();
            let mut err = 0.0;
            for chunk in idx.chunks(1024) {
                let mb = make(chunk);
                let o = net.evaluate(&mb.obs, mb.size).map_err(|e| LearnError::Shape(e.to_string()))?;
                err += o.values.iter().zip(&mb.value).map(|(a, b)| ((a - b) * (a - b)) as f64).sum::<f64>();
            }
            err / held as f64
        } else {
            f64::NAN
        };
        let e = Epoch { epoch, train_loss: total / steps as f64, holdout_loss };
        out.push(e);
        if !each(&e, trainer) {
            break;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_give_the_others_what_the_mover_lacks() {
        let mut t = Vec::new();
        target(0.75, 2, &mut t);
        assert_eq!(t, vec![0.75, 0.25]);
        target(0.4, 3, &mut t);
        assert!((t[1] - 0.3).abs() < 1e-6 && (t[2] - 0.3).abs() < 1e-6);
    }
}
