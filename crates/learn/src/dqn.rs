//! DQN for two-player games (Defradas et al.'s learner): double DQN with a target network (hard or
//! soft updates), uniform or prioritized replay, n-step returns, ε-greedy or Boltzmann
//! exploration annealed per episode, illegal actions masked when acting and in the target's
//! max; self-play with both seats learning, or play against a fixed agent.
//!
//! The Q-values are the network's policy-head outputs, one per action id, for the seat to move,
//! on the scale of the result (-1 loss, 1 win). Two-player games alternate movers, so a target
//! is `r + d · Q_target(s', argmax_a' Q(s', a'))` with `d = -γ^n` when the opponent moves at
//! `s'` (`+γ^n` when the same seat does; 0 after the game's end): see [`crate::replay`].

use crate::LearnError;
use crate::replay::{NStep, Priorities, Replay, Sample};
use crate::rl::{
    Anneal, masked_argmax, masked_softmax, online_path, random_legal, remove_online, sample, save_checkpoint, start,
};
use crate::run::{Budget, Kind, Learner, Progress, Round, Save};
use crate::vae::{Encoder, net_input, train_through};
use crate::vecenv::{DynVecEnv, Outputs, VecEnvConfig, VecEnvImpl};
use meeple_game::{Action, Game, Rng, State, rng_from_seed};
use meeple_nn::{Network, TrainConfig, Trainer};
use rand::RngExt;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// How the learner explores while it plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Exploration {
    /// A uniformly random legal move with probability ε, the best otherwise.
    Epsilon,
    /// A move drawn from the softmax of Q / T over the legal moves.
    Boltzmann,
}

/// A DQN run's settings; each is the flag of the same name (`--n-step`), its doc the flag's
/// help, [`DqnConfig::report`] the defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct DqnConfig {
    /// The game spec: the command's, not a flag.
    #[arg(skip)]
    pub game: String,
    /// The Q-network: `mlp:layers=L,width=W` or `resnet:blocks=B,channels=C`.
    #[arg(long, value_name = "SPEC")]
    pub net: String,
    /// How the learner explores: ε-greedy or Boltzmann (softmax of Q / T).
    #[arg(long, value_enum)]
    #[serde(alias = "exploration")]
    pub explore: Exploration,
    /// ε or temperature at the start, annealed as Defradas et al.: end + (start - end) exp(-episode / decay).
    #[arg(long)]
    pub rate_start: f64,
    /// ε or temperature it anneals toward.
    #[arg(long)]
    pub rate_end: f64,
    /// Episodes for the gap to shrink by a factor e (0: the end rate from the start).
    #[arg(long)]
    pub rate_decay: f64,
    /// Sample the replay memory uniformly instead of by priority.
    #[arg(long)]
    pub uniform: bool,
    /// Priority exponent α of prioritized replay.
    #[arg(long)]
    pub alpha: f64,
    /// Importance-sampling exponent β at the start (annealed to 1 over --beta-steps).
    #[arg(long)]
    pub beta: f64,
    /// Optimiser steps over which β reaches 1; 0: over the run, as the paper anneals it (its
    /// --games or --minutes at its pace so far; 100,000 steps without either).
    #[arg(long)]
    pub beta_steps: u64,
    /// Discount per decision (Defradas et al.: 0.95).
    #[arg(long)]
    pub gamma: f64,
    /// Decisions summed before bootstrapping (n-step returns; 1: one-step Q-learning).
    #[arg(long)]
    pub n_step: u32,
    /// Transitions the replay memory holds (Defradas et al.: 40,000).
    #[arg(long)]
    pub buffer: usize,
    /// Transitions per optimiser step (Defradas et al.: 64).
    #[arg(long)]
    pub batch: usize,
    /// Decisions played per optimiser step.
    #[arg(long)]
    pub train_every: usize,
    /// Transitions in memory before training starts.
    #[arg(long)]
    pub learning_starts: usize,
    /// Optimiser steps between target-network updates (Defradas et al.: 30).
    #[arg(long)]
    pub target_every: u64,
    /// Share of the online weights mixed into the target at each update (1: copy).
    #[arg(long)]
    pub tau: f64,
    /// Double DQN: the online network picks the next move, the target values it;
    /// `--no-double`: plain DQN targets (the target network picks and values it).
    #[arg(long = "no-double", action = clap::ArgAction::SetFalse)]
    pub double: bool,
    /// Play and save an exponential moving average of the weights, keeping this share of the
    /// average at each optimiser step (e.g. 0.9998: about the last 5,000 steps). Exploration
    /// still uses the online weights; the checkpoint holds the average, the online weights go
    /// beside it (`last.online.safetensors`) for --resume.
    #[arg(long, value_name = "D")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub average: Option<f64>,
    /// Store each decision under every symmetry of the game (Cathedral: its 4 rotations;
    /// tic-tac-toe: 8), that many transitions a decision: more data from the same games. The
    /// memory counts transitions, so raise --buffer with it to keep as many games.
    #[arg(long)]
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub symmetries: bool,
    /// Games played side by side (one forward pass chooses all their moves).
    #[arg(long)]
    pub parallel: usize,
    /// Play this fixed agent instead of self-play (e.g. `random`): every other seat, the
    /// learner's drawn per game; none: self-play, both seats learning.
    #[arg(long, value_name = "SPEC")]
    pub opponent: Option<String>,
    /// AdamW's learning rate (Defradas et al.: 1e-3).
    #[arg(long)]
    pub lr: f64,
    /// Huber threshold of the TD error.
    #[arg(long)]
    pub huber: f64,
    /// Anneal the learning rate by a cosine to a tenth of --lr over the run (its --minutes or
    /// --games, whichever it reaches first at its pace so far); default: constant.
    #[arg(long)]
    #[serde(default)]
    pub lr_decay: bool,
    #[command(flatten)]
    #[serde(flatten)]
    pub encoder: crate::rl::EncoderSettings,
    /// The run's seed: `--seed`.
    #[arg(skip)]
    pub seed: u64,
    /// The run's threads: `--threads`.
    #[arg(skip)]
    pub threads: usize,
}

impl crate::flags::Settings for DqnConfig {
    fn defaults() -> serde_json::Value {
        serde_json::to_value(DqnConfig::report("")).expect("configs serialise")
    }
}

impl DqnConfig {
    /// Defradas et al.'s recipe: γ 0.95, batch 64, learning rate 1e-3, a 40,000-transition memory,
    /// the target copied every 30 steps, Boltzmann exploration with prioritized replay (its
    /// best pair), double DQN.
    pub fn report(game: &str) -> Self {
        let p = Priorities::default();
        DqnConfig {
            game: game.to_string(),
            net: "mlp:layers=2,width=256".into(),
            gamma: 0.95,
            n_step: 1,
            buffer: 40_000,
            batch: 64,
            uniform: false,
            alpha: p.alpha,
            beta: p.beta,
            beta_steps: p.beta_steps,
            explore: Exploration::Boltzmann,
            rate_start: 1.0,
            rate_end: 0.02,
            rate_decay: 400.0,
            target_every: 30,
            tau: 1.0,
            double: true,
            train_every: 4,
            learning_starts: 1_000,
            parallel: 16,
            opponent: None,
            lr: 1e-3,
            huber: 1.0,
            lr_decay: false,
            seed: 1,
            threads: 1,
            encoder: Default::default(),
            average: None,
            symmetries: false,
        }
    }

    /// Prioritized replay's settings; none with --uniform.
    pub fn priorities(&self) -> Option<Priorities> {
        (!self.uniform).then_some(Priorities {
            alpha: self.alpha,
            beta: self.beta,
            beta_steps: self.beta_steps,
            ..Priorities::default()
        })
    }

    /// ε or the temperature over the episodes.
    pub fn rate(&self) -> Anneal {
        Anneal { start: self.rate_start, end: self.rate_end, decay: self.rate_decay }
    }

    /// The optimiser: AdamW without weight decay, clipping at 10, the Huber loss on the TD
    /// error, constant or (--lr-decay) annealed over the run.
    pub fn train(&self) -> TrainConfig {
        TrainConfig { huber: Some(self.huber), ..crate::rl::head_optimiser(self.lr, self.lr_decay, 0.0, 10.0) }
    }

    pub fn check(&self) -> Result<(), LearnError> {
        let bad = |what: String| Err(LearnError::Config(what));
        if !(self.gamma.is_finite() && (0.0..=1.0).contains(&self.gamma)) {
            return bad(format!("gamma {} must be within 0..=1", self.gamma));
        }
        if !(1..=64).contains(&self.n_step) {
            return bad(format!("n-step {} must be within 1..=64", self.n_step));
        }
        if !(1..=65_536).contains(&self.batch) {
            return bad(format!("batch {} must be within 1..=65536", self.batch));
        }
        if !(1..=4096).contains(&self.parallel) {
            return bad(format!("parallel {} must be within 1..=4096", self.parallel));
        }
        if self.learning_starts > self.buffer {
            return bad(format!(
                "--learning-starts {} is more than --buffer {}: the memory never holds that many transitions, so \
                 nothing would train",
                self.learning_starts, self.buffer
            ));
        }
        if self.train_every == 0 || self.target_every == 0 {
            return bad("train-every and target-every must be at least 1".into());
        }
        if !(self.tau > 0.0 && self.tau <= 1.0) {
            return bad(format!("tau {} must be within 0 (excluded) and 1", self.tau));
        }
        if !((0.0..=1.0).contains(&self.alpha) && (0.0..=1.0).contains(&self.beta)) {
            return bad(format!("--alpha {} and --beta {} must be within 0..=1", self.alpha, self.beta));
        }
        let p = Priorities::default();
        if self.uniform && (self.alpha, self.beta, self.beta_steps) != (p.alpha, p.beta, p.beta_steps) {
            return bad("--alpha, --beta and --beta-steps set prioritized replay, which --uniform turns off".into());
        }
        let most = if self.explore == Exploration::Epsilon { 1.0 } else { 1e3 };
        self.rate().check(if self.explore == Exploration::Epsilon { "epsilon" } else { "temperature" }, most)?;
        if self.explore == Exploration::Boltzmann && self.rate_end <= 0.0 {
            return bad("the Boltzmann temperature must stay above 0 (give --rate-end above 0)".into());
        }
        if !(self.lr.is_finite() && self.lr > 0.0) {
            return bad(format!("--lr {} must be a positive number", self.lr));
        }
        if !(self.huber.is_finite() && self.huber > 0.0) {
            return bad(format!("--huber {} must be a positive number", self.huber));
        }
        self.encoder.check()?;
        if let Some(d) = self.average
            && !(d > 0.0 && d < 1.0)
        {
            return bad(format!("average {d} must lie strictly between 0 and 1 (e.g. 0.9998)"));
        }
        Ok(())
    }
}

/// Self-play (or play against a fixed agent) and training.
pub struct DqnRun<G: Game> {
    game: G,
    config: DqnConfig,
    pub trainer: Trainer,
    acting: Arc<Network>,
    target_theta: Vec<f32>,
    target: Network,
    env: VecEnvImpl<G>,
    out: Outputs,
    next: Outputs,
    replay: Replay,
    nstep: NStep,
    rng: Rng,
    sample: Sample,
    progress: Progress,
    actions: Vec<i64>,
    probs: Vec<f32>,
    /// Decisions played since the last optimiser step, in units of `train_every`.
    owed: usize,
    /// Decisions of each game's current episode.
    plies: Vec<u32>,
    encoder: Option<Encoder>,
    /// The moving average of the weights (with `config.average`).
    average: Option<Vec<f32>>,
    /// With `config.symmetries`: the transitions of the images under symmetries 1, 2, ...,
    /// each assembled like the played one's, and scratch for their views.
    images: Vec<NStep>,
    image_obs: Vec<f32>,
    image_mask: Vec<bool>,
    legal: Vec<Action>,
}

impl<G: Game> DqnRun<G> {
    /// A fresh run, or the one whose checkpoint is `resume` (weights, optimiser, progress and
    /// the exploration schedule; the replay memory starts empty, and the target from the
    /// online weights).
    ///
    /// An averaged run's checkpoint holds the average, and the online weights and optimiser
    /// beside it ([`online_path`]): the run resumes from those, and the average from the
    /// checkpoint.
    pub fn new(game: G, config: DqnConfig, resume: Option<&Path>) -> Result<Self, LearnError> {
        config.check()?;
        if config.symmetries && game.initial_state().symmetries() <= 1 {
            return Err(LearnError::Config(format!(
                "--symmetries adds each transition's images under the game's symmetries; {} has none but the \
                 identity, so it would change nothing",
                game.spec()
            )));
        }
        let online = resume.map(online_path).filter(|p| p.exists());
        let (encoder, trainer, progress) = start(
            &game,
            "dqn",
            &config.net,
            &config.train(),
            (config.seed, config.threads),
            config.encoder.encoder.as_ref(),
            config.encoder.fine_tune_encoder,
            online.as_deref().or(resume),
        )?;
        let average = match (config.average, resume, &online) {
            (None, ..) => None,
            (Some(_), Some(path), Some(_)) => Some(saved_weights(&game, &config, path, trainer.parameters().len())?),
            (Some(_), ..) => Some(trainer.parameters().to_vec()),
        };
        // Memory keeps observations; an encoder in front reads them when they are used, so a
        // fine-tuned one always sees them as they are.
        let obs_len: usize = game.observation_shape().iter().product();
        let env_seed = config.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(progress.episodes);
        let env = VecEnvImpl::new(
            game.clone(),
            VecEnvConfig {
                num_envs: config.parallel,
                seed: env_seed,
                threads: 1,
                opponents: config.opponent.iter().cloned().collect(),
                seat: None,
                max_turns: None,
            },
        )?;
        let replay = Replay::new(config.buffer, obs_len, game.num_actions(), config.priorities())?;
        let theta = trainer.parameters().to_vec();
        let target = trainer.network_with(&theta, config.threads)?;
        let symmetries = if config.symmetries { game.initial_state().symmetries().max(1) } else { 1 };
        let images = (1..symmetries).map(|_| NStep::new(config.parallel, config.n_step, config.gamma as f32)).collect();
        let mut run = DqnRun {
            acting: Arc::new(trainer.network(config.threads)),
            target_theta: theta,
            target,
            env,
            out: Outputs::default(),
            next: Outputs::default(),
            replay,
            nstep: NStep::new(config.parallel, config.n_step, config.gamma as f32),
            rng: rng_from_seed(env_seed ^ 0x5851_f42d_4c95_7f2d),
            sample: Sample::default(),
            progress,
            actions: vec![0; config.parallel],
            probs: vec![0.0; game.num_actions()],
            owed: 0,
            plies: vec![0; config.parallel],
            encoder,
            average,
            images,
            image_obs: Vec::new(),
            image_mask: vec![false; game.num_actions()],
            legal: Vec::new(),
            trainer,
            game,
            config,
        };
        run.env.reset_into(&mut run.out)?;
        Ok(run)
    }

    /// The exploration rate (ε or temperature) at the current episode.
    pub fn rate(&self) -> f64 {
        self.config.rate().at(self.progress.episodes)
    }

    pub fn network(&self) -> Arc<Network> {
        self.acting.clone()
    }

    /// The moving average of the weights the run plays and saves (with `average`).
    pub fn average(&self) -> Option<&[f32]> {
        self.average.as_deref()
    }

    /// The length of the observations the environment gives (before any encoder).
    fn obs_len(&self) -> usize {
        self.game.observation_shape().iter().product()
    }

    /// Every game makes one decision; finished transitions go to memory; training follows.
    /// Returns the episodes finished, the learner's summed reward in them (against a fixed
    /// agent), their plies, and the mean of the greedy Q-values seen.
    fn step(&mut self, stats: &mut Stats) -> Result<(), LearnError> {
        let n = self.config.parallel;
        let (o, a) = (self.obs_len(), self.game.num_actions());
        let q = self.acting.evaluate(&net_input(&mut self.encoder, &self.out.obs, n), n)?.logits;
        let rate = self.rate() as f32;
        for i in 0..n {
            let mask = &self.out.mask[i * a..(i + 1) * a];
            let qi = &q[i * a..(i + 1) * a];
            let greedy = masked_argmax(qi, mask).ok_or_else(|| LearnError::Data("a game with no legal move".into()))?;
            stats.q += qi[greedy] as f64;
            stats.decisions += 1;
            let choice = match self.config.explore {
                Exploration::Epsilon if self.rng.random::<f32>() < rate => {
                    random_legal(mask, &mut self.rng).unwrap_or(greedy)
                }
                Exploration::Epsilon => greedy,
                Exploration::Boltzmann => {
                    masked_softmax(qi, mask, rate, &mut self.probs);
                    sample(&self.probs, &mut self.rng)
                }
            };
            self.actions[i] = choice as i64;
            let mover = self.out.player[i] as usize;
            self.nstep.decide(i, &self.out.obs[i * o..(i + 1) * o], choice as u32, mover);
            let state = self.env.state(i);
            for (k, images) in self.images.iter_mut().enumerate() {
                state.symmetric(k + 1).observation(mover, &mut self.image_obs);
                images.decide(i, &self.image_obs, state.symmetric_action(choice as Action, k + 1), mover);
            }
        }
        self.env.step_into(&self.actions, &mut self.next)?;
        let seats = self.game.num_players();
        for i in 0..n {
            let (ended, cut) = (self.next.terminated[i], self.next.truncated[i]);
            let rewards = &self.next.rewards[i * seats..(i + 1) * seats];
            let replay = &mut self.replay;
            let (next_player, next_obs, next_mask) =
                (self.next.player[i] as usize, &self.next.obs[i * o..(i + 1) * o], &self.next.mask[i * a..(i + 1) * a]);
            self.nstep.step(i, rewards, ended, cut, next_player, next_obs, next_mask, |t| replay.push(t));
            for (k, images) in self.images.iter_mut().enumerate() {
                if ended || cut {
                    // The game restarted: nothing bootstraps from where it went.
                    images.step(i, rewards, ended, cut, next_player, next_obs, next_mask, |t| replay.push(t));
                    continue;
                }
                let image = self.env.state(i).symmetric(k + 1);
                image.observation(next_player, &mut self.image_obs);
                image.legal_actions(&mut self.legal);
                self.image_mask.fill(false);
                for &l in &self.legal {
                    self.image_mask[l as usize] = true;
                }
                images.step(i, rewards, ended, cut, next_player, &self.image_obs, &self.image_mask, |t| replay.push(t));
            }
            self.plies[i] += 1;
            if ended || cut {
                stats.episodes += 1;
                stats.plies += self.plies[i] as u64;
                self.plies[i] = 0;
                if self.config.opponent.is_some() {
                    stats.reward += rewards[self.out.player[i] as usize] as f64;
                }
            }
        }
        std::mem::swap(&mut self.out, &mut self.next);
        self.progress.decisions += n as u64;
        self.progress.episodes += stats.episodes_new();
        self.owed += n;
        let mut trained = false;
        while self.owed >= self.config.train_every && self.replay.len() >= self.config.learning_starts.max(1) {
            self.owed -= self.config.train_every;
            let loss = self.train_step()?;
            stats.loss += loss;
            stats.steps += 1;
            trained = true;
        }
        if self.replay.len() < self.config.learning_starts.max(1) {
            self.owed = 0;
        }
        if trained {
            self.acting = Arc::new(self.trainer.network(self.config.threads));
        }
        Ok(())
    }

    /// One optimiser step on a sampled batch; returns its mean weighted Huber loss.
    fn train_step(&mut self) -> Result<f64, LearnError> {
        let (b, a) = (self.config.batch, self.game.num_actions());
        self.replay.sample(b, self.trainer.step(), &mut self.rng, &mut self.sample);
        let s = &self.sample;
        let next = net_input(&mut self.encoder, &s.next_obs, b);
        let target_q = self.target.evaluate(&next, b)?.logits;
        let pick_q = if self.config.double { Some(self.acting.evaluate(&next, b)?.logits) } else { None };
        let mut y = vec![0.0f32; b];
        for i in 0..b {
            y[i] = s.rewards[i];
            if s.discounts[i] != 0.0 {
                let mask = &s.next_mask[i * a..(i + 1) * a];
                let chooser = pick_q.as_ref().unwrap_or(&target_q);
                if let Some(best) = masked_argmax(&chooser[i * a..(i + 1) * a], mask) {
                    y[i] += s.discounts[i] * target_q[i * a + best];
                }
            }
            // Returns lie within -1..1; so do the values a target may bootstrap from.
            y[i] = y[i].clamp(-1.0, 1.0);
        }
        let delta = self.config.huber as f32;
        let mut errors = vec![0.0f32; b];
        let mut loss = 0.0f64;
        let (actions, weights) = (&s.actions, &s.weights);
        train_through(&mut self.trainer, &mut self.encoder, &s.obs, b, |logits, _values, dl, _dv| {
            for i in 0..b {
                let k = i * a + actions[i] as usize;
                let e = logits[k] - y[i];
                errors[i] = e;
                let (l, g) = if e.abs() <= delta {
                    (0.5 * e * e, e)
                } else {
                    (delta * (e.abs() - 0.5 * delta), delta * e.signum())
                };
                loss += (weights[i] * l) as f64;
                dl[k] = weights[i] * g / b as f32;
            }
        })?;
        let indices = std::mem::take(&mut self.sample.indices);
        self.replay.update(&indices, &errors);
        self.sample.indices = indices;
        self.progress.steps = self.trainer.step();
        if let (Some(avg), Some(d)) = (self.average.as_mut(), self.config.average) {
            let d = d as f32;
            for (m, &w) in avg.iter_mut().zip(self.trainer.parameters()) {
                *m = d * *m + (1.0 - d) * w;
            }
        }
        if self.trainer.step().is_multiple_of(self.config.target_every) {
            let tau = self.config.tau as f32;
            for (t, &w) in self.target_theta.iter_mut().zip(self.trainer.parameters()) {
                *t = tau * w + (1.0 - tau) * *t;
            }
            self.target = self.trainer.network_with(&self.target_theta, self.config.threads)?;
        }
        Ok(loss / b as f64)
    }
}

/// The weights saved in the checkpoint `path` (an averaged run's average), checked against the
/// run's network size.
fn saved_weights<G: Game>(game: &G, config: &DqnConfig, path: &Path, len: usize) -> Result<Vec<f32>, LearnError> {
    let r = Trainer::resume(path, &game.spec().to_string(), config.train(), 1)
        .map_err(|e| LearnError::Config(e.to_string()))?;
    let theta = r.trainer.parameters();
    if theta.len() != len {
        return Err(LearnError::Data(format!(
            "'{}' holds {} weights, its run's network {len}",
            path.display(),
            theta.len()
        )));
    }
    Ok(theta.to_vec())
}

/// Figures gathered over a round.
#[derive(Default)]
struct Stats {
    episodes: u64,
    counted: u64,
    plies: u64,
    reward: f64,
    q: f64,
    decisions: u64,
    loss: f64,
    steps: u64,
}

impl Stats {
    /// Episodes finished since the last call.
    fn episodes_new(&mut self) -> u64 {
        let new = self.episodes - self.counted;
        self.counted = self.episodes;
        new
    }
}

/// DQN's description.
pub static DQN: Kind = Kind { flags: &[("double", "--no-double")], ..Kind::new("dqn") };

impl<G: Game> Learner for DqnRun<G> {
    fn settings(&self) -> serde_json::Value {
        serde_json::to_value(&self.config).expect("configs serialise")
    }

    fn kind(&self) -> &'static Kind {
        &DQN
    }

    fn agent(&self) -> String {
        "dqn:model={model}".into()
    }

    fn round(&mut self, budget: &Budget<'_>) -> Result<Round, LearnError> {
        if let Some(anneal) = budget.anneal {
            self.trainer.set_anneal(anneal);
            // β anneals to 1 over the run (Schaul et al.: "linearly ... reaching 1 only at the
            // end of learning"), aimed each round at the end the run reaches at its pace so far.
            if let Some(p) = self.config.priorities()
                && p.beta_steps == 0
                && let Some(end) = anneal.end
            {
                self.replay.set_beta_steps(end.max(self.trainer.step()));
            }
        }
        let started = Instant::now();
        let mut stats = Stats::default();
        let rate = self.rate();
        // A round: about one finished game per parallel slot, and at most 64 decisions each.
        let mut moves = 0;
        while stats.episodes < self.config.parallel as u64 && moves < 64 {
            self.step(&mut stats)?;
            moves += 1;
        }
        let seconds = started.elapsed().as_secs_f64().max(1e-9);
        let mut round = Round::default();
        if stats.steps > 0 {
            round.loss("q", stats.loss / stats.steps as f64);
        }
        round.figure(if self.config.explore == Exploration::Epsilon { "epsilon" } else { "temperature" }, rate);
        round.figure("mean_q", stats.q / stats.decisions.max(1) as f64);
        if stats.episodes > 0 {
            round.figure("plies", stats.plies as f64 / stats.episodes as f64);
            if self.config.opponent.is_some() {
                round.figure("reward", stats.reward / stats.episodes as f64);
            }
        }
        round.stat("decisions_per_second", stats.decisions as f64 / seconds);
        round.stat("replay", self.replay.len() as f64);
        round.stat("lr", self.trainer.lr());
        if !self.config.uniform {
            round.stat("beta", self.replay.beta_at(self.trainer.step()));
        }
        Ok(round)
    }

    fn progress(&self) -> Progress {
        self.progress.clone()
    }

    fn save(&self, path: &Path, save: &Save<'_>) -> Result<(), LearnError> {
        let resumable = save.resumable;
        let progress = Progress { seconds: save.seconds, ..self.progress.clone() };
        let run = serde_json::json!({ "trainer": "dqn", "config": self.config, "progress": progress });
        let Some(avg) = &self.average else {
            // A run resumed without its average writes the online weights here again: the
            // file beside would otherwise be taken for them on the next resume.
            if resumable {
                remove_online(path)?;
            }
            return save_checkpoint(&self.game, &self.trainer, &self.encoder, path, resumable, run, None);
        };
        if resumable {
            save_checkpoint(&self.game, &self.trainer, &self.encoder, &online_path(path), true, run.clone(), None)?;
        }
        save_checkpoint(&self.game, &self.trainer, &self.encoder, path, false, run, Some(avg))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meeple_games::TicTacToe;

    /// With `symmetries`, each decision goes to memory eight times on tic-tac-toe, each image
    /// consistent in itself: the image's move is legal in the image's view, and the view it
    /// leads to is that view with the move made, from the opponent's side.
    #[test]
    fn symmetric_images_are_whole_transitions() {
        let mut c = DqnConfig::report("tictactoe");
        c.net = "mlp:layers=1,width=8".into();
        (c.parallel, c.buffer, c.learning_starts, c.symmetries, c.seed) = (1, 1 << 20, 1 << 20, true, 5);
        let mut run = DqnRun::new(TicTacToe, c, None).unwrap();
        let mut stats = Stats::default();
        while stats.episodes == 0 {
            run.step(&mut stats).unwrap();
        }
        let replay = &run.replay;
        assert_eq!(replay.len() as u64, 8 * stats.plies);
        let first = replay.transition(0).action;
        let initial = TicTacToe.initial_state();
        let mut orbit: Vec<u32> = (0..8).map(|k| initial.symmetric_action(first, k)).collect();
        let mut images: Vec<u32> = (0..8).map(|k| replay.transition(k).action).collect();
        orbit.sort();
        images.sort();
        assert_eq!(images, orbit, "the first decision's eight images are its move's orbit");
        let mut distinct = std::collections::HashSet::new();
        for k in 0..replay.len() {
            let t = replay.transition(k);
            let cell = t.action as usize;
            assert_eq!(t.obs[18 + cell], 1.0, "transition {k}: the move's cell is empty in its view");
            distinct.insert((t.obs.iter().map(|&x| x as u8).collect::<Vec<_>>(), t.action));
            if t.discount == 0.0 {
                assert!([-1.0, 0.0, 1.0].contains(&t.reward), "transition {k}: a result, {}", t.reward);
                continue;
            }
            assert_eq!((t.discount, t.reward), (-0.95, 0.0), "transition {k}");
            for c in 0..9 {
                let placed = (c == cell) as u8 as f32;
                assert_eq!(t.next_obs[c], t.obs[9 + c], "transition {k}, cell {c}: their marks become mine");
                assert_eq!(t.next_obs[9 + c], t.obs[c] + placed, "transition {k}, cell {c}: my marks, and the move");
                assert_eq!(t.next_obs[18 + c], t.obs[18 + c] - placed, "transition {k}, cell {c}: empty cells");
                assert_eq!(t.next_mask[c], t.next_obs[18 + c] == 1.0, "transition {k}, cell {c}: legal where empty");
            }
        }
        // Unless the game's moves were all symmetric, the images add positions the game did not play.
        assert!(distinct.len() as u64 > stats.plies, "{} distinct of {} plies", distinct.len(), stats.plies);
    }
}
