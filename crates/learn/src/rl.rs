//! What the model-free learners (DQN, PPO) share: how they start and save, exploration
//! schedules, and masked choices over a network's outputs. They are driven, like every
//! trainer, by [`crate::run`].

use crate::LearnError;
use crate::run::Progress;
use crate::vae::{Encoder, learner_encoder, save_encoder};
use meeple_game::{Game, Rng};
use meeple_nn::{NetConfig, Sidecar, TrainConfig, Trainer};
use rand::RngExt;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What a model-free learner of two-player games starts from: its encoder (if any), the trainer
/// (a fresh `net`, or the checkpoint `resume` written by the trainer `name`) and the progress so
/// far.
#[allow(clippy::too_many_arguments)]
pub(crate) fn start<G: Game>(
    game: &G,
    name: &str,
    net: &str,
    train: &TrainConfig,
    (seed, threads): (u64, usize),
    encoder: Option<&String>,
    fine_tune: Option<f64>,
    resume: Option<&Path>,
) -> Result<(Option<Encoder>, Trainer, Progress), LearnError> {
    if game.num_players() != 2 {
        return Err(LearnError::Config(format!(
            "{} learns two-player games; {} has {} players",
            name.to_uppercase(),
            game.spec(),
            game.num_players()
        )));
    }
    let encoder = learner_encoder(game, encoder, fine_tune, resume)?;
    let shape = encoder.as_ref().map_or_else(|| game.observation_shape(), |e| vec![e.latent()]);
    let (trainer, progress) = match resume {
        None => {
            let net = NetConfig::from_spec(net, &shape, game.num_actions(), 2, None)
                .map_err(|e| LearnError::Config(e.to_string()))?;
            (Trainer::new(net, train.clone(), seed, threads), Progress::default())
        }
        Some(path) => resumed(path, game, train, threads, name)?,
    };
    Ok((encoder, trainer, progress))
}

/// Reads a checkpoint to continue: the trainer and the run's progress.
fn resumed<G: Game>(
    path: &Path,
    game: &G,
    train: &TrainConfig,
    threads: usize,
    trainer: &str,
) -> Result<(Trainer, Progress), LearnError> {
    let r = Trainer::resume(path, &game.spec().to_string(), train.clone(), threads)
        .map_err(|e| LearnError::Config(e.to_string()))?;
    let found = r.sidecar.run.get("trainer").and_then(|t| t.as_str()).unwrap_or("");
    if found != trainer {
        return Err(LearnError::Config(format!(
            "'{}' was written by the {} trainer, not {trainer}",
            path.display(),
            if found.is_empty() { "an unknown" } else { found }
        )));
    }
    let progress = serde_json::from_value(r.sidecar.run.get("progress").cloned().unwrap_or_default())
        .map_err(|e| LearnError::Data(format!("'{}' has no {trainer} progress: {e}", path.display())))?;
    Ok((r.trainer, progress))
}

/// Writes a learner's checkpoint: the network (`theta` in place of the trainer's weights where
/// given: a moving average), its encoder where fine-tuned (beside it), and a sidecar whose `run`
/// is `run` with the name the agent finds the encoder by.
pub(crate) fn save_checkpoint<G: Game>(
    game: &G,
    trainer: &Trainer,
    encoder: &Option<Encoder>,
    path: &Path,
    resumable: bool,
    mut run: serde_json::Value,
    theta: Option<&[f32]>,
) -> Result<(), LearnError> {
    run["encoder"] = serde_json::json!(save_encoder(game, encoder, path)?);
    let sidecar = Sidecar {
        format: meeple_nn::SIDECAR_FORMAT,
        net: trainer.config().clone(),
        game: game.spec().to_string(),
        step: trainer.step(),
        run,
        commands: Vec::new(),
    };
    match theta {
        Some(theta) => trainer.save_with(theta, path, sidecar)?,
        None if resumable => trainer.save_resumable(path, sidecar)?,
        None => trainer.save(path, sidecar)?,
    }
    Ok(())
}

/// Where a learner that plays averaged weights keeps its online weights (and their optimiser
/// state) beside the checkpoint `path`: `last.safetensors` -> `last.online.safetensors`.
pub fn online_path(path: &Path) -> PathBuf {
    path.with_extension("online.safetensors")
}

/// Removes the online weights beside `path` (and their optimiser state), if any.
pub(crate) fn remove_online(path: &Path) -> Result<(), LearnError> {
    let online = online_path(path);
    for p in [meeple_nn::optimizer_path(&online), online] {
        match std::fs::remove_file(&p) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(LearnError::Data(format!("cannot remove '{}': {e}", p.display())));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The optimiser of the learners that train a head of their own (TD(λ)'s value, DQN's Q, PPO's
/// actor-critic): AdamW after a one-step warm-up, constant or (`lr_decay`) annealed by a cosine
/// over the run, no auxiliary heads; the caller sets what its loss reads (`value_weight`,
/// `huber`, `clip_global`).
pub fn head_optimiser(lr: f64, lr_decay: bool, weight_decay: f64, clip_norm: f64) -> TrainConfig {
    TrainConfig {
        lr,
        weight_decay,
        clip_norm,
        clip_global: false,
        warmup: 1,
        decay: if lr_decay { 0 } else { u64::MAX / 4 },
        value_weight: 0.0,
        ownership_weight: 0.0,
        score_weight: 0.0,
        huber: None,
    }
}

/// An observation autoencoder in front of a learner's network (DQN's, PPO's).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct EncoderSettings {
    /// Read observations through this autoencoder (from `meeple train vae`): the network sees
    /// its latent means (Defradas et al.'s learners on VAE features). Frozen unless
    /// --fine-tune-encoder.
    #[arg(long, value_name = "FILE")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoder: Option<String>,
    /// Fine-tune the --encoder with the network at this learning rate (it is saved beside
    /// each checkpoint, `NAME.encoder.safetensors`).
    #[arg(long, value_name = "LR", requires = "encoder")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fine_tune_encoder: Option<f64>,
}

impl EncoderSettings {
    pub fn check(&self) -> Result<(), LearnError> {
        if self.fine_tune_encoder.is_some() && self.encoder.is_none() {
            return Err(LearnError::Config("--fine-tune-encoder tunes the --encoder: give one".into()));
        }
        if self.fine_tune_encoder.is_some_and(|lr| !(lr.is_finite() && lr > 0.0)) {
            return Err(LearnError::Config("--fine-tune-encoder must be a positive learning rate".into()));
        }
        Ok(())
    }
}

/// A rate annealed from `start` toward `end` with the episodes played, as Defradas et al. anneals
/// ε and the Boltzmann temperature: `end + (start - end) · exp(-episode / decay)`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Anneal {
    pub start: f64,
    pub end: f64,
    /// Episodes for the gap to shrink by a factor e (0: `end` from the start).
    pub decay: f64,
}

impl Anneal {
    pub fn at(&self, episode: u64) -> f64 {
        if self.decay <= 0.0 {
            return self.end;
        }
        self.end + (self.start - self.end) * (-(episode as f64) / self.decay).exp()
    }

    pub(crate) fn check(&self, what: &str, most: f64) -> Result<(), LearnError> {
        let ok = |v: f64| v.is_finite() && (0.0..=most).contains(&v);
        if !(ok(self.start) && ok(self.end) && self.decay.is_finite() && self.decay >= 0.0) {
            return Err(LearnError::Config(format!(
                "{what}: start {} and end {} must be within 0..={most}, decay {} at least 0",
                self.start, self.end, self.decay
            )));
        }
        Ok(())
    }
}

/// The legal action with the largest output (the first of equals); `None` when none is legal.
pub fn masked_argmax(outputs: &[f32], mask: &[bool]) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (a, (&q, &legal)) in outputs.iter().zip(mask).enumerate() {
        if legal && best.is_none_or(|b| q > outputs[b]) {
            best = Some(a);
        }
    }
    best
}

/// The softmax of `outputs / temperature` over the legal actions into `probs` (0 elsewhere);
/// the log-sum-exp of the scaled legal outputs is returned. Needs a legal action.
pub fn masked_softmax(outputs: &[f32], mask: &[bool], temperature: f32, probs: &mut [f32]) -> f32 {
    let t = temperature.max(1e-6);
    let max = outputs.iter().zip(mask).filter(|(_, l)| **l).map(|(q, _)| *q / t).fold(f32::NEG_INFINITY, f32::max);
    let mut total = 0.0f32;
    for ((p, &q), &legal) in probs.iter_mut().zip(outputs).zip(mask) {
        *p = if legal { (q / t - max).exp() } else { 0.0 };
        total += *p;
    }
    for p in probs.iter_mut() {
        *p /= total;
    }
    max + total.ln()
}

/// An action drawn from `probs` (which sum to 1 over legal actions; 0 elsewhere).
pub fn sample(probs: &[f32], rng: &mut Rng) -> usize {
    let mut x = rng.random::<f32>();
    let mut last = 0;
    for (a, &p) in probs.iter().enumerate() {
        if p > 0.0 {
            last = a;
            x -= p;
            if x < 0.0 {
                return a;
            }
        }
    }
    last
}

/// A uniformly random legal action.
pub fn random_legal(mask: &[bool], rng: &mut Rng) -> Option<usize> {
    let n = mask.iter().filter(|l| **l).count();
    if n == 0 {
        return None;
    }
    let k = rng.random_range(0..n);
    mask.iter().enumerate().filter(|(_, l)| **l).nth(k).map(|(a, _)| a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use meeple_game::rng_from_seed;

    /// Masked choices never pick an illegal action, even where its output is the largest.
    #[test]
    fn masked_actions_are_never_chosen() {
        let mut rng = rng_from_seed(9);
        let mut probs = vec![0.0f32; 12];
        for _ in 0..2000 {
            let outputs: Vec<f32> = (0..12).map(|_| rng.random_range(-5.0..5.0)).collect();
            let mut mask: Vec<bool> = (0..12).map(|_| rng.random_bool(0.3)).collect();
            if !mask.iter().any(|&l| l) {
                assert_eq!(masked_argmax(&outputs, &mask), None);
                assert_eq!(random_legal(&mask, &mut rng), None);
                mask[rng.random_range(0..12)] = true;
            }
            // The illegal actions get the largest outputs of all.
            let outputs: Vec<f32> = outputs.iter().zip(&mask).map(|(&q, &l)| if l { q } else { q + 100.0 }).collect();
            let best = masked_argmax(&outputs, &mask).unwrap();
            assert!(mask[best]);
            assert!(mask.iter().zip(&outputs).all(|(&l, &q)| !l || q <= outputs[best]));
            assert!(mask[random_legal(&mask, &mut rng).unwrap()]);
            for t in [0.01f32, 1.0, 50.0] {
                let lse = masked_softmax(&outputs, &mask, t, &mut probs);
                assert!(lse.is_finite());
                assert!((probs.iter().sum::<f32>() - 1.0).abs() < 1e-4);
                assert!(probs.iter().zip(&mask).all(|(&p, &l)| l || p == 0.0));
                assert!(mask[sample(&probs, &mut rng)]);
            }
        }
    }

    #[test]
    fn the_schedule_anneals_from_start_to_end() {
        let a = Anneal { start: 1.0, end: 0.1, decay: 100.0 };
        assert_eq!(a.at(0), 1.0);
        assert!((a.at(100) - (0.1 + 0.9 / std::f64::consts::E)).abs() < 1e-12);
        assert!((a.at(10_000) - 0.1).abs() < 1e-9);
        assert_eq!(Anneal { decay: 0.0, ..a }.at(0), 0.1);
        assert!(a.check("epsilon", 1.0).is_ok());
        assert!(Anneal { start: 2.0, ..a }.check("epsilon", 1.0).is_err());
        assert!(Anneal { decay: f64::NAN, ..a }.check("epsilon", 1.0).is_err());
    }
}
