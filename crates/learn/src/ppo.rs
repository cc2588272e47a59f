//! PPO for two-player games (Defradas et al.'s second learner): an actor-critic network (the policy
//! head's logits masked to the legal moves, the value head's mover value), the clipped
//! objective, generalized advantage estimation, an entropy bonus, optional value clipping,
//! minibatch epochs. The learner plays one seat of each game against a pool of its earlier
//! selves (drawn by recency or by how often they beat it), against the report's softly updated
//! older self, against a fixed agent, or both seats itself.
//!
//! The value head answers mover first (as every meeple network): the mover's value `u` in 0..1
//! stands for `2u - 1` on the scale of the rewards (-1 loss, 1 win); the other seat's output is
//! trained toward the negation (a zero-sum game).

use crate::LearnError;
use crate::rl::{masked_softmax, sample, save_checkpoint, start};
use crate::run::{Budget, Kind, Learner, Progress, Round, Save};
use crate::vae::{Encoder, net_input, train_through};
use crate::vecenv::{DynVecEnv, Outputs, VecEnvConfig, VecEnvImpl};
use meeple_game::{Game, Rng, rng_from_seed};
use meeple_nn::{Network, TrainConfig, Trainer};
use rand::RngExt;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Instant;

/// How the pool's opponents are drawn for each game.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum PoolSampling {
    /// The k-th oldest of n with weight k + 1: recent selves most often.
    Recency,
    /// In proportion to how often each beat the learner (prioritized fictitious self-play):
    /// opponents it already beats are seldom drawn.
    #[serde(alias = "winrate")]
    WinRate,
}

/// Whom the learner plays when it has no fixed --opponent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum SelfPlay {
    /// One older self whose weights follow the learner's softly (Defradas et al.).
    Soft,
    /// A pool of earlier snapshots.
    Pool,
    /// Both seats are the learner, both learn.
    Mirror,
}

/// The report's older self: the opponent's weights move toward the learner's by `tau` every
/// `every` episodes, and become a copy every `full_every`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SoftUpdate {
    pub tau: f64,
    pub every: u64,
    pub full_every: u64,
}

impl SoftUpdate {
    /// Defradas et al.: 30% of the weights every 10 episodes, all of them every 100.
    pub const REPORT: SoftUpdate = SoftUpdate { tau: 0.3, every: 10, full_every: 100 };
}

/// Whom the learner plays.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Opponents {
    /// Both seats are the learner; both learn.
    Mirror,
    /// Earlier snapshots, one taken every `every` episodes, the newest `size` kept.
    Pool { size: usize, every: u64, sampling: PoolSampling },
    /// One older self, updated softly.
    Soft(SoftUpdate),
    /// A fixed agent spec (e.g. `random`).
    Agent(String),
}

/// A PPO run's settings; each is the flag of the same name (`--soft-tau`), its doc the flag's
/// help, [`PpoConfig::report`] the defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct PpoConfig {
    /// The game spec: the command's, not a flag.
    #[arg(skip)]
    pub game: String,
    /// The actor-critic network: `mlp:layers=L,width=W` or `resnet:blocks=B,channels=C`.
    #[arg(long, value_name = "SPEC")]
    pub net: String,
    /// Discount per decision of the learner (Defradas et al.: 0.97).
    #[arg(long)]
    pub gamma: f64,
    /// GAE's λ (Defradas et al.: 0.95).
    #[arg(long)]
    pub lambda: f64,
    /// Clipping range ε of the probability ratio (Defradas et al.: 0.2).
    #[arg(long)]
    pub clip: f64,
    /// Weight of the entropy bonus (Defradas et al.: 0.01).
    #[arg(long)]
    pub entropy: f64,
    /// Weight of the value loss.
    #[arg(long)]
    pub value_weight: f64,
    /// Clip each value's change from its rollout value to this much (off: plain squared error).
    #[arg(long, value_name = "X")]
    pub value_clip: Option<f64>,
    /// Passes over each rollout.
    #[arg(long)]
    pub epochs: usize,
    /// Decisions per optimiser step.
    #[arg(long)]
    pub minibatch: usize,
    /// Learner episodes per rollout, one update each (Defradas et al. waited 5 episodes between
    /// updates).
    #[arg(long)]
    pub rollout: usize,
    /// Games played side by side.
    #[arg(long)]
    pub parallel: usize,
    /// Play this fixed agent instead of self-play (e.g. `random`).
    #[arg(long, value_name = "SPEC", conflicts_with = "self_play")]
    #[serde(default)]
    pub opponent: Option<String>,
    /// Self-play against: `soft` (one older self following the learner: Defradas et al.), `pool`
    /// (earlier snapshots) or `mirror` (both seats learn).
    #[arg(long, value_enum)]
    pub self_play: SelfPlay,
    /// Soft updates: share of the learner's weights mixed into the older self each time.
    #[arg(long)]
    pub soft_tau: f64,
    /// Soft updates: episodes between them.
    #[arg(long)]
    pub soft_every: u64,
    /// Soft updates: episodes between full copies.
    #[arg(long)]
    pub soft_full_every: u64,
    /// Pool: snapshots kept.
    #[arg(long)]
    pub pool_size: usize,
    /// Pool: episodes between snapshots.
    #[arg(long)]
    pub pool_every: u64,
    /// Pool: draw opponents by recency (newer more often) or by how often they beat the learner.
    #[arg(long, value_enum)]
    pub pool_sampling: PoolSampling,
    /// AdamW's learning rate.
    #[arg(long)]
    pub lr: f64,
    /// Largest gradient norm (clipped above).
    #[arg(long)]
    pub clip_norm: f64,
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

impl crate::flags::Settings for PpoConfig {
    fn defaults() -> serde_json::Value {
        serde_json::to_value(PpoConfig::report("")).expect("configs serialise")
    }
}

impl PpoConfig {
    /// Defradas et al.'s settings (γ 0.97, GAE λ 0.95, ε 0.2, entropy 0.01, the softly updated
    /// older self) with common PPO defaults where it is silent.
    pub fn report(game: &str) -> Self {
        let soft = SoftUpdate::REPORT;
        PpoConfig {
            game: game.to_string(),
            net: "mlp:layers=2,width=256".into(),
            gamma: 0.97,
            lambda: 0.95,
            clip: 0.2,
            entropy: 0.01,
            value_weight: 0.5,
            value_clip: None,
            epochs: 4,
            minibatch: 64,
            rollout: 32,
            parallel: 16,
            opponent: None,
            self_play: SelfPlay::Soft,
            soft_tau: soft.tau,
            soft_every: soft.every,
            soft_full_every: soft.full_every,
            pool_size: 8,
            pool_every: 200,
            pool_sampling: PoolSampling::Recency,
            lr: 3e-4,
            clip_norm: 0.5,
            lr_decay: false,
            seed: 1,
            threads: 1,
            encoder: Default::default(),
        }
    }

    /// Whom the learner plays.
    pub fn opponents(&self) -> Opponents {
        match (&self.opponent, self.self_play) {
            (Some(spec), _) => Opponents::Agent(spec.clone()),
            (None, SelfPlay::Soft) => Opponents::Soft(SoftUpdate {
                tau: self.soft_tau,
                every: self.soft_every,
                full_every: self.soft_full_every,
            }),
            (None, SelfPlay::Pool) => {
                Opponents::Pool { size: self.pool_size, every: self.pool_every, sampling: self.pool_sampling }
            }
            (None, SelfPlay::Mirror) => Opponents::Mirror,
        }
    }

    /// The optimiser: AdamW without weight decay, constant or (--lr-decay) annealed over the run.
    pub fn train(&self) -> TrainConfig {
        crate::rl::head_optimiser(self.lr, self.lr_decay, 0.0, self.clip_norm)
    }

    pub fn check(&self) -> Result<(), LearnError> {
        let bad = |what: String| Err(LearnError::Config(what));
        let unit = |v: f64| v.is_finite() && (0.0..=1.0).contains(&v);
        if !(unit(self.gamma) && unit(self.lambda)) {
            return bad(format!("gamma {} and lambda {} must be within 0..=1", self.gamma, self.lambda));
        }
        if !(self.clip.is_finite() && self.clip > 0.0 && self.clip < 1.0) {
            return bad(format!("clip {} must be within 0 and 1 (excluded)", self.clip));
        }
        if !(self.entropy.is_finite()
            && self.entropy >= 0.0
            && self.value_weight.is_finite()
            && self.value_weight >= 0.0)
        {
            return bad(format!("entropy {} and value weight {} must be at least 0", self.entropy, self.value_weight));
        }
        if let Some(c) = self.value_clip
            && !(c.is_finite() && c > 0.0)
        {
            return bad(format!("value clip {c} must be a positive number"));
        }
        if !(1..=100).contains(&self.epochs) || !(1..=65_536).contains(&self.minibatch) {
            return bad(format!("epochs {} (1..=100) and minibatch {} (1..=65536)", self.epochs, self.minibatch));
        }
        if !(1..=100_000).contains(&self.rollout) || !(1..=4096).contains(&self.parallel) {
            return bad(format!("rollout {} (1..=100000) and parallel {} (1..=4096)", self.rollout, self.parallel));
        }
        let d = PpoConfig::report("");
        let soft =
            (self.soft_tau, self.soft_every, self.soft_full_every) != (d.soft_tau, d.soft_every, d.soft_full_every);
        let pool =
            (self.pool_size, self.pool_every, self.pool_sampling) != (d.pool_size, d.pool_every, d.pool_sampling);
        let playing = if self.opponent.is_some() { "--opponent" } else { "this --self-play" };
        if soft && !matches!(self.opponents(), Opponents::Soft(_)) {
            return bad(format!(
                "--soft-tau, --soft-every and --soft-full-every set --self-play soft; {playing} has no older self"
            ));
        }
        if pool && !matches!(self.opponents(), Opponents::Pool { .. }) {
            return bad(format!(
                "--pool-size, --pool-every and --pool-sampling set --self-play pool; {playing} keeps no pool"
            ));
        }
        match &self.opponents() {
            Opponents::Pool { size, every, .. } if *size == 0 || *size > 1000 || *every == 0 => {
                return bad(format!(
                    "pool of {size} every {every} episodes: give 1 to 1000 snapshots, at least 1 episode apart"
                ));
            }
            Opponents::Soft(s) if !(s.tau > 0.0 && s.tau <= 1.0 && s.every > 0 && s.full_every > 0) => {
                return bad(format!(
                    "soft update {s:?}: tau within 0 (excluded) and 1, every and full-every at least 1"
                ));
            }
            _ => {}
        }
        if !(self.lr.is_finite() && self.lr > 0.0) {
            return bad(format!("--lr {} must be a positive number", self.lr));
        }
        if !(self.clip_norm.is_finite() && self.clip_norm > 0.0) {
            return bad(format!("--clip-norm {} must be a positive number", self.clip_norm));
        }
        self.encoder.check()?;
        Ok(())
    }
}

/// One decision of the learner, waiting for its game to end.
struct Step {
    obs: Vec<f32>,
    mask: Vec<bool>,
    action: u32,
    logp: f32,
    /// The mover's value (-1..1) at the decision.
    value: f32,
    reward: f32,
}

/// Decisions ready to train on: advantages and returns computed.
#[derive(Default)]
struct Rollout {
    obs: Vec<f32>,
    mask: Vec<bool>,
    actions: Vec<u32>,
    logp: Vec<f32>,
    values: Vec<f32>,
    advantages: Vec<f32>,
    returns: Vec<f32>,
}

impl Rollout {
    fn len(&self) -> usize {
        self.actions.len()
    }

    fn clear(&mut self) {
        *self =
            Rollout { obs: std::mem::take(&mut self.obs), mask: std::mem::take(&mut self.mask), ..Rollout::default() };
        self.obs.clear();
        self.mask.clear();
    }
}

/// Generalized advantage estimation over one seat's decisions of one game: `values[t]` the
/// critic's value at decision t, `rewards[t]` what followed it, `last` the value after the
/// last decision (0 at a game's end). Writes the advantages and the returns (advantage plus
/// value), each `values.len()` long.
pub fn gae(
    values: &[f32],
    rewards: &[f32],
    last: f32,
    gamma: f32,
    lambda: f32,
    adv: &mut Vec<f32>,
    ret: &mut Vec<f32>,
) {
    let n = values.len();
    adv.clear();
    adv.resize(n, 0.0);
    let mut running = 0.0;
    for t in (0..n).rev() {
        let next = if t + 1 < n { values[t + 1] } else { last };
        let delta = rewards[t] + gamma * next - values[t];
        running = delta + gamma * lambda * running;
        adv[t] = running;
    }
    ret.clear();
    ret.extend(adv.iter().zip(values).map(|(a, v)| a + v));
}

/// An opponent network and how often it beat the learner (an average over recent games).
struct Member {
    net: Network,
    theta: Vec<f32>,
    /// The opponent's score against the learner (1 win, 0.5 draw), averaged.
    score: f64,
}

/// Self-play (or play against a fixed agent) and training.
pub struct PpoRun<G: Game> {
    game: G,
    config: PpoConfig,
    pub trainer: Trainer,
    acting: Network,
    pool: Vec<Member>,
    env: VecEnvImpl<G>,
    out: Outputs,
    next: Outputs,
    rng: Rng,
    progress: Progress,
    /// Per game: the learner's seat (`None`: it plays both), the pool member it meets, and each
    /// seat's decisions so far.
    seat: Vec<Option<usize>>,
    rival: Vec<usize>,
    steps: Vec<[Vec<Step>; 2]>,
    rollout: Rollout,
    spare: Vec<Step>,
    probs: Vec<f32>,
    episodes_since_snapshot: u64,
    /// The learner's results in the round being played: summed return, games, and the moves
    /// the networks made in them.
    results: (f64, u64, u64),
    /// Moves the networks made in each game's episode (a fixed agent's are not seen).
    moves: Vec<u32>,
    encoder: Option<Encoder>,
}

impl<G: Game> PpoRun<G> {
    /// A fresh run, or the one whose checkpoint is `resume` (weights, optimiser and progress; the
    /// pool starts again from the resumed weights).
    pub fn new(game: G, config: PpoConfig, resume: Option<&Path>) -> Result<Self, LearnError> {
        config.check()?;
        let (encoder, trainer, progress) = start(
            &game,
            "ppo",
            &config.net,
            &config.train(),
            (config.seed, config.threads),
            config.encoder.encoder.as_ref(),
            config.encoder.fine_tune_encoder,
            resume,
        )?;
        let env_seed = config.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(progress.episodes);
        let opponents = match &config.opponents() {
            Opponents::Agent(spec) => vec![spec.clone()],
            _ => Vec::new(),
        };
        let env = VecEnvImpl::new(
            game.clone(),
            VecEnvConfig {
                num_envs: config.parallel,
                seed: env_seed,
                threads: 1,
                opponents,
                seat: None,
                max_turns: None,
            },
        )?;
        let n = config.parallel;
        let mut run = PpoRun {
            acting: trainer.network(config.threads),
            pool: Vec::new(),
            env,
            out: Outputs::default(),
            next: Outputs::default(),
            rng: rng_from_seed(env_seed ^ 0x2545_f491_4f6c_dd1d),
            progress,
            seat: vec![None; n],
            rival: vec![0; n],
            steps: (0..n).map(|_| [Vec::new(), Vec::new()]).collect(),
            rollout: Rollout::default(),
            spare: Vec::new(),
            probs: vec![0.0; game.num_actions()],
            episodes_since_snapshot: 0,
            results: (0.0, 0, 0),
            moves: vec![0; n],
            encoder,
            trainer,
            game,
            config,
        };
        if matches!(run.config.opponents(), Opponents::Pool { .. } | Opponents::Soft(_)) {
            run.snapshot()?;
        }
        run.env.reset_into(&mut run.out)?;
        for i in 0..n {
            run.start_episode(i);
        }
        Ok(run)
    }

    /// The length of the observations the environment gives (before any encoder).
    fn obs_len(&self) -> usize {
        self.game.observation_shape().iter().product()
    }

    /// Adds the learner's weights to the pool (the oldest goes past the pool's size); for the
    /// soft opponent, the one member.
    fn snapshot(&mut self) -> Result<(), LearnError> {
        let theta = self.trainer.parameters().to_vec();
        let net = self.trainer.network_with(&theta, self.config.threads)?;
        let size = match self.config.opponents() {
            Opponents::Pool { size, .. } => size,
            _ => 1,
        };
        if self.pool.len() >= size {
            self.pool.remove(0);
        }
        self.pool.push(Member { net, theta, score: 0.5 });
        Ok(())
    }

    /// The report's soft update: the older self moves toward the learner by `tau` (1: a copy).
    fn soften(&mut self, tau: f32) -> Result<(), LearnError> {
        let m = &mut self.pool[0];
        for (t, &w) in m.theta.iter_mut().zip(self.trainer.parameters()) {
            *t = tau * w + (1.0 - tau) * *t;
        }
        m.net = self.trainer.network_with(&m.theta, self.config.threads)?;
        Ok(())
    }

    /// Seats the learner in game `i`'s new episode and draws its rival.
    fn start_episode(&mut self, i: usize) {
        self.seat[i] = match self.config.opponents() {
            // With a fixed agent the environment seats the learner and only shows its turns.
            Opponents::Mirror | Opponents::Agent(_) => None,
            _ => Some(self.rng.random_range(0..2)),
        };
        self.rival[i] = match self.config.opponents() {
            Opponents::Pool { sampling, .. } if self.pool.len() > 1 => {
                let weights: Vec<f64> = match sampling {
                    PoolSampling::Recency => (0..self.pool.len()).map(|k| (k + 1) as f64).collect(),
                    PoolSampling::WinRate => self.pool.iter().map(|m| m.score + 0.05).collect(),
                };
                let mut x = self.rng.random::<f64>() * weights.iter().sum::<f64>();
                let mut pick = weights.len() - 1;
                for (k, w) in weights.iter().enumerate() {
                    if x < *w {
                        pick = k;
                        break;
                    }
                    x -= w;
                }
                pick
            }
            _ => 0,
        };
    }

    /// Whether the learner decides in game `i` now.
    fn learner_moves(&self, i: usize) -> bool {
        self.seat[i].is_none_or(|s| s == self.out.player[i] as usize)
    }

    /// Every game makes one decision (the learner's from one forward pass, the rivals' from
    /// theirs); finished games are turned into training data.
    fn step(&mut self) -> Result<(), LearnError> {
        let n = self.config.parallel;
        let (o, a) = (self.obs_len(), self.game.num_actions());
        let mut actions = vec![0i64; n];
        // Rows grouped by who decides: the learner (usize::MAX) or a pool member.
        let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
        for i in 0..n {
            let who = if self.learner_moves(i) { usize::MAX } else { self.rival[i] };
            match groups.iter_mut().find(|(w, _)| *w == who) {
                Some((_, rows)) => rows.push(i),
                None => groups.push((who, vec![i])),
            }
        }
        let mut batch = Vec::new();
        for (who, rows) in &groups {
            batch.clear();
            for &i in rows {
                batch.extend_from_slice(&self.out.obs[i * o..(i + 1) * o]);
            }
            let net = if *who == usize::MAX { &self.acting } else { &self.pool[*who].net };
            let answer = net.evaluate(&net_input(&mut self.encoder, &batch, rows.len()), rows.len())?;
            for (r, &i) in rows.iter().enumerate() {
                let mask = &self.out.mask[i * a..(i + 1) * a];
                let logits = &answer.logits[r * a..(r + 1) * a];
                let lse = masked_softmax(logits, mask, 1.0, &mut self.probs);
                let choice = sample(&self.probs, &mut self.rng);
                actions[i] = choice as i64;
                if *who == usize::MAX {
                    let mover = self.out.player[i] as usize;
                    let mut s = self.spare.pop().unwrap_or(Step {
                        obs: Vec::new(),
                        mask: Vec::new(),
                        action: 0,
                        logp: 0.0,
                        value: 0.0,
                        reward: 0.0,
                    });
                    s.obs.clear();
                    s.obs.extend_from_slice(&self.out.obs[i * o..(i + 1) * o]);
                    s.mask.clear();
                    s.mask.extend_from_slice(mask);
                    s.action = choice as u32;
                    s.logp = logits[choice] - lse;
                    s.value = 2.0 * answer.values[r * 2] - 1.0;
                    s.reward = 0.0;
                    self.steps[i][mover].push(s);
                }
            }
        }
        self.env.step_into(&actions, &mut self.next)?;
        std::mem::swap(&mut self.out, &mut self.next);
        for i in 0..n {
            self.moves[i] += 1;
            // Rewards land on each seat's last decision (the game may end on the rival's move).
            for seat in 0..2 {
                if let Some(last) = self.steps[i][seat].last_mut() {
                    last.reward += self.out.rewards[i * 2 + seat];
                }
            }
            if self.out.terminated[i] || self.out.truncated[i] {
                self.finish(i);
                self.start_episode(i);
            }
        }
        self.progress.decisions +=
            groups.iter().filter(|(w, _)| *w == usize::MAX).map(|(_, r)| r.len() as u64).sum::<u64>();
        Ok(())
    }

    /// Game `i` ended: its learner decisions become training data.
    fn finish(&mut self, i: usize) {
        let ended = self.out.terminated[i];
        let (gamma, lambda) = (self.config.gamma as f32, self.config.lambda as f32);
        let mut adv = Vec::new();
        let mut ret = Vec::new();
        for seat in 0..2 {
            let steps = std::mem::take(&mut self.steps[i][seat]);
            if steps.is_empty() {
                continue;
            }
            let values: Vec<f32> = steps.iter().map(|s| s.value).collect();
            let rewards: Vec<f32> = steps.iter().map(|s| s.reward).collect();
            // A game cut off is worth what the critic last said of it.
            let last = if ended { 0.0 } else { values[values.len() - 1] };
            gae(&values, &rewards, last, gamma, lambda, &mut adv, &mut ret);
            let learner = self.seat[i].is_none_or(|s| s == seat);
            if learner {
                let total: f32 = rewards.iter().sum();
                self.results.0 += total as f64;
                self.results.1 += 1;
                if let Some(s) = self.seat[i]
                    && matches!(self.config.opponents(), Opponents::Pool { .. })
                {
                    // The rival's score: 1 for its win, 0.5 a draw.
                    let rival = 0.5 - 0.5 * self.out.rewards[i * 2 + s].signum() as f64;
                    let m = &mut self.pool[self.rival[i]];
                    m.score = 0.9 * m.score + 0.1 * rival;
                }
                let r = &mut self.rollout;
                for (k, s) in steps.iter().enumerate() {
                    r.obs.extend_from_slice(&s.obs);
                    r.mask.extend_from_slice(&s.mask);
                    r.actions.push(s.action);
                    r.logp.push(s.logp);
                    r.values.push(s.value);
                    r.advantages.push(adv[k]);
                    r.returns.push(ret[k]);
                }
            }
            self.spare.extend(steps);
        }
        self.results.2 += u64::from(std::mem::take(&mut self.moves[i]));
        self.progress.episodes += 1;
        self.episodes_since_snapshot += 1;
    }

    /// Epochs of minibatch steps over the rollout; gives the mean losses and statistics.
    fn update(&mut self) -> Result<Vec<(&'static str, f64)>, LearnError> {
        let n = self.rollout.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let (o, a) = (self.obs_len(), self.game.num_actions());
        // Advantages normalised over the rollout.
        let mean = self.rollout.advantages.iter().sum::<f32>() / n as f32;
        let var = self.rollout.advantages.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / n as f32;
        let std = var.sqrt().max(1e-6);
        let adv: Vec<f32> = self.rollout.advantages.iter().map(|x| (x - mean) / std).collect();
        let mut order: Vec<usize> = (0..n).collect();
        let (clip, ent_w, v_w) = (self.config.clip as f32, self.config.entropy as f32, self.config.value_weight as f32);
        let value_clip = self.config.value_clip.map(|c| c as f32);
        let mut sums = [0.0f64; 6];
        let mut batches = 0usize;
        let (mut obs, mut rows) = (Vec::new(), Vec::new());
        let mut probs = vec![0.0f32; a];
        for _ in 0..self.config.epochs {
            for i in (1..n).rev() {
                order.swap(i, self.rng.random_range(0..=i));
            }
            for chunk in order.chunks(self.config.minibatch) {
                obs.clear();
                rows.clear();
                for &k in chunk {
                    obs.extend_from_slice(&self.rollout.obs[k * o..(k + 1) * o]);
                    rows.push(k);
                }
                let b = rows.len();
                let r = &self.rollout;
                let mut stats = [0.0f64; 6];
                train_through(&mut self.trainer, &mut self.encoder, &obs, b, |logits, values, dl, dv| {
                    for (j, &k) in rows.iter().enumerate() {
                        let mask = &r.mask[k * a..(k + 1) * a];
                        let l = &logits[j * a..(j + 1) * a];
                        let lse = masked_softmax(l, mask, 1.0, &mut probs);
                        let act = r.actions[k] as usize;
                        let logp = l[act] - lse;
                        let ratio = (logp - r.logp[k]).exp();
                        let adv = adv[k];
                        let clipped = ratio.clamp(1.0 - clip, 1.0 + clip);
                        let surrogate = (ratio * adv).min(clipped * adv);
                        // The gradient flows where the unclipped term is the smaller.
                        let g_logp = if ratio * adv <= clipped * adv { -ratio * adv } else { 0.0 };
                        let mut entropy = 0.0f32;
                        for (p, &legal) in probs.iter().zip(mask) {
                            if legal && *p > 0.0 {
                                entropy -= p * p.ln();
                            }
                        }
                        let d = &mut dl[j * a..(j + 1) * a];
                        for (t, ((&p, &legal), g)) in probs.iter().zip(mask).zip(d.iter_mut()).enumerate() {
                            if !legal {
                                continue;
                            }
                            let onehot = if t == act { 1.0 } else { 0.0 };
                            let mut grad = g_logp * (onehot - p);
                            if p > 0.0 {
                                grad += ent_w * p * (p.ln() + entropy);
                            }
                            *g = grad / b as f32;
                        }
                        // The critic: mover value toward the return, the other seat toward its
                        // negation; through v = 2u - 1.
                        let v = 2.0 * values[j * 2] - 1.0;
                        let target = r.returns[k];
                        let e = v - target;
                        let (loss_v, grad_v) = match value_clip {
                            Some(c) => {
                                let vc = r.values[k] + (v - r.values[k]).clamp(-c, c);
                                let ec = vc - target;
                                if ec * ec > e * e {
                                    let inside = (v - r.values[k]).abs() < c;
                                    (0.5 * ec * ec, if inside { ec } else { 0.0 })
                                } else {
                                    (0.5 * e * e, e)
                                }
                            }
                            None => (0.5 * e * e, e),
                        };
                        let other = 2.0 * values[j * 2 + 1] - 1.0;
                        let e_other = other + target;
                        dv[j * 2] = v_w * grad_v * 2.0 / b as f32;
                        dv[j * 2 + 1] = v_w * e_other * 2.0 / b as f32;
                        stats[0] += -surrogate as f64;
                        stats[1] += (loss_v + 0.5 * e_other * e_other) as f64;
                        stats[2] += entropy as f64;
                        stats[3] += (r.logp[k] - logp) as f64;
                        stats[4] += f64::from(u8::from((ratio - 1.0).abs() > clip));
                        stats[5] += 1.0;
                    }
                })?;
                for (s, x) in sums.iter_mut().zip(stats) {
                    *s += x / stats[5].max(1.0);
                }
                batches += 1;
            }
        }
        self.progress.steps = self.trainer.step();
        self.acting = self.trainer.network(self.config.threads);
        let m = batches.max(1) as f64;
        Ok(vec![
            ("policy", sums[0] / m),
            ("value", sums[1] / m),
            ("entropy", sums[2] / m),
            ("approx_kl", sums[3] / m),
            ("clip_fraction", sums[4] / m),
        ])
    }
}

/// PPO's description.
pub static PPO: Kind = Kind::new("ppo");

impl<G: Game> Learner for PpoRun<G> {
    fn settings(&self) -> serde_json::Value {
        serde_json::to_value(&self.config).expect("configs serialise")
    }

    fn kind(&self) -> &'static Kind {
        &PPO
    }

    fn agent(&self) -> String {
        "ppo:model={model}".into()
    }

    fn round(&mut self, budget: &Budget<'_>) -> Result<Round, LearnError> {
        if let Some(anneal) = budget.anneal {
            self.trainer.set_anneal(anneal);
        }
        let started = Instant::now();
        let first = self.progress.episodes;
        let decisions = self.progress.decisions;
        self.results = (0.0, 0, 0);
        self.rollout.clear();
        while (self.progress.episodes - first) < self.config.rollout as u64 {
            self.step()?;
        }
        let played = started.elapsed().as_secs_f64().max(1e-9);
        let stats = self.update()?;
        // Opponents follow the learner between rounds.
        let episodes = self.progress.episodes;
        match self.config.opponents() {
            Opponents::Pool { every, .. } if self.episodes_since_snapshot >= every => {
                self.snapshot()?;
                self.episodes_since_snapshot = 0;
            }
            Opponents::Soft(s) => {
                // Every crossing of a multiple since the last round counts once.
                if episodes / s.full_every > first / s.full_every {
                    self.soften(1.0)?;
                } else if episodes / s.every > first / s.every {
                    self.soften(s.tau as f32)?;
                }
            }
            _ => {}
        }
        let mut round = Round::default();
        for (name, v) in &stats {
            match *name {
                "policy" | "value" => round.loss(name, *v),
                _ => round.figure(name, *v),
            }
        }
        // With both seats learning the rewards cancel: no figure.
        if self.results.1 > 0 && self.config.opponents() != Opponents::Mirror {
            round.figure("reward", self.results.0 / self.results.1 as f64);
        }
        round.figure("moves", self.results.2 as f64 / (self.progress.episodes - first).max(1) as f64);
        round.figure("pool", self.pool.len() as f64);
        round.stat("decisions_per_second", (self.progress.decisions - decisions) as f64 / played);
        round.stat("rollout", self.rollout.len() as f64);
        round.stat("lr", self.trainer.lr());
        Ok(round)
    }

    fn progress(&self) -> Progress {
        self.progress.clone()
    }

    fn save(&self, path: &Path, save: &Save<'_>) -> Result<(), LearnError> {
        let progress = Progress { seconds: save.seconds, ..self.progress.clone() };
        let run = serde_json::json!({ "trainer": "ppo", "config": self.config, "progress": progress });
        save_checkpoint(&self.game, &self.trainer, &self.encoder, path, save.resumable, run, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meeple_games::TicTacToe;

    /// The report's older self: after a round of 32 episodes (past a multiple of 10, not of 100)
    /// its weights are 30% the learner's and 70% its own; past a multiple of 100, a copy.
    #[test]
    fn the_older_self_follows_softly_then_copies() {
        let mut c = PpoConfig::report("tictactoe");
        c.net = "mlp:layers=1,width=16".into();
        c.rollout = 32;
        let mut run = PpoRun::new(TicTacToe, c, None).unwrap();
        let before = run.pool[0].theta.clone();
        assert_eq!(before, run.trainer.parameters());
        run.round(&Budget::unlimited()).unwrap();
        let episodes = run.progress.episodes;
        assert!((32..100).contains(&episodes), "{episodes}");
        let learner = run.trainer.parameters();
        assert_ne!(learner, &before[..]);
        for ((t, w), b) in run.pool[0].theta.iter().zip(learner).zip(&before) {
            assert!((t - (0.3 * w + 0.7 * b)).abs() < 1e-6);
        }
        while run.progress.episodes < 100 {
            run.round(&Budget::unlimited()).unwrap();
        }
        assert_eq!(run.pool[0].theta, run.trainer.parameters());
        // Its network plays with the mixed weights.
        let obs = vec![0.0f32; run.trainer.config().input_len()];
        let (a, b) = (run.pool[0].net.evaluate(&obs, 1).unwrap(), run.trainer.network(1).evaluate(&obs, 1).unwrap());
        assert_eq!(a.logits, b.logits);
    }

    /// GAE by hand: three decisions valued 0.5, 0.2, -0.1, rewards 0, 0, 1, the game over after
    /// them; γ 0.9, λ 0.8.
    #[test]
    fn gae_by_hand() {
        let (mut adv, mut ret) = (Vec::new(), Vec::new());
        gae(&[0.5, 0.2, -0.1], &[0.0, 0.0, 1.0], 0.0, 0.9, 0.8, &mut adv, &mut ret);
        // δ2 = 1 - (-0.1) = 1.1; δ1 = 0.9 * -0.1 - 0.2 = -0.29; δ0 = 0.9 * 0.2 - 0.5 = -0.32.
        // A2 = 1.1; A1 = -0.29 + 0.72 * 1.1 = 0.502; A0 = -0.32 + 0.72 * 0.502 = 0.04144.
        let want = [0.04144, 0.502, 1.1];
        for (x, w) in adv.iter().zip(want) {
            assert!((x - w).abs() < 1e-6, "{adv:?}");
        }
        for ((r, a), v) in ret.iter().zip(&adv).zip([0.5, 0.2, -0.1]) {
            assert!((r - (a + v)).abs() < 1e-6);
        }
        // λ 1: discounted returns minus values; λ 0: one-step TD errors.
        gae(&[0.5, 0.2, -0.1], &[0.0, 0.0, 1.0], 0.0, 0.9, 1.0, &mut adv, &mut ret);
        assert!((ret[0] - 0.81).abs() < 1e-6 && (ret[1] - 0.9).abs() < 1e-6 && (ret[2] - 1.0).abs() < 1e-6, "{ret:?}");
        gae(&[0.5, 0.2, -0.1], &[0.0, 0.0, 1.0], 0.3, 0.9, 0.0, &mut adv, &mut ret);
        assert!((adv[0] + 0.32).abs() < 1e-6 && (adv[2] - (1.0 + 0.27 + 0.1)).abs() < 1e-6, "{adv:?}");
    }
}
