//! The model-free learners end to end on tic-tac-toe: each learns, within a CI-sized budget, to
//! beat `random` by a margin its untrained network does not reach.

use meeple_games::TicTacToe;
use meeple_learn::dqn::{DqnConfig, DqnRun, Exploration};
use meeple_learn::ppo::{Opponents, PpoConfig, PpoRun};
use meeple_learn::rl::Learner;
use std::path::PathBuf;

mod common;
use common::match_against_random;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("meeple-rl-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The score against random (wins plus half the draws) of `agent` over 200 games.
fn score(agent: &str) -> f64 {
    let (w, d, l) = match_against_random(agent, 100);
    (w as f64 + 0.5 * d as f64) / (w + d + l) as f64
}

/// Trains `run` for `episodes` games; gives the scores of the untrained and the trained network.
fn before_and_after(mut run: impl Learner, agent: &str, episodes: u64, name: &str) -> (f64, f64) {
    let d = dir(name);
    let (untrained, trained) = (d.join("untrained.safetensors"), d.join("trained.safetensors"));
    run.save(&untrained, false).unwrap();
    while run.progress().episodes < episodes {
        run.round().unwrap();
    }
    run.save(&trained, false).unwrap();
    let scores = (
        score(&format!("{agent}:model={}", untrained.display())),
        score(&format!("{agent}:model={}", trained.display())),
    );
    let _ = std::fs::remove_dir_all(&d);
    scores
}

fn small_dqn(exploration: Exploration) -> DqnConfig {
    let mut c = DqnConfig::report("tictactoe");
    c.net = "mlp:layers=2,width=64".into();
    c.exploration = exploration;
    c.rate.decay = 300.0;
    c.learning_starts = 200;
    c.buffer = 20_000;
    c.seed = 3;
    c
}

#[test]
fn dqn_learns_to_beat_random() {
    for exploration in [Exploration::Boltzmann, Exploration::Epsilon] {
        let mut c = small_dqn(exploration);
        if exploration == Exploration::Epsilon {
            // Uniform replay and three-step returns on this pass: both paths learn.
            c.priorities = None;
            c.n_step = 3;
        }
        let run = DqnRun::new(TicTacToe, c, None).unwrap();
        let (before, after) = before_and_after(run, "dqn", 2_000, "dqn");
        eprintln!("{exploration:?}: untrained {before:.3}, trained {after:.3}");
        assert!(after >= 0.85 && after > before + 0.3, "{exploration:?}: untrained {before}, trained {after}");
    }
}

#[test]
fn ppo_learns_to_beat_random() {
    // Self-play with both seats learning, and play against random itself. (The softly updated
    // older self learns here too, more slowly: its update is tested in the module.)
    for opponents in [Opponents::Mirror, Opponents::Agent("random".into())] {
        let mut c = PpoConfig::report("tictactoe");
        c.net = "mlp:layers=2,width=64".into();
        c.train.lr = 1e-3;
        c.entropy = 0.05;
        c.epochs = 8;
        c.opponents = opponents.clone();
        c.seed = 3;
        let run = PpoRun::new(TicTacToe, c, None).unwrap();
        let (before, after) = before_and_after(run, "ppo", 4_000, "ppo");
        eprintln!("{opponents:?}: untrained {before:.3}, trained {after:.3}");
        assert!(after >= 0.75 && after > before + 0.3, "{opponents:?}: untrained {before}, trained {after}");
    }
}
