//! `meeple train dqn|ppo GAME`: report 001's model-free learners on any two-player game, driven
//! by the shared learner loop (progress, metrics, ladder, Ctrl-C checkpoint, `--resume`).

use super::learner::{RunArgs, drive};
use anyhow::Result;
use clap::{Args, ValueEnum};
use meeple_game::{Game, limits};
use meeple_learn::dqn::{DqnConfig, DqnRun, Exploration};
use meeple_learn::ppo::{Opponents, PoolSampling, PpoConfig, PpoRun, SoftUpdate};
use meeple_learn::replay::Priorities;
use meeple_learn::rl::Anneal;
use meeple_learn::vae::{VaeRun, VaeRunConfig};

/// An autoencoder in front of a learner's network.
#[derive(Args, Debug)]
pub struct EncoderArgs {
    /// Read observations through this autoencoder (from `meeple train vae`): the network sees
    /// its latent means (report 001's learners on VAE features). Frozen unless
    /// --fine-tune-encoder.
    #[arg(long = "encoder", value_name = "FILE")]
    file: Option<String>,
    /// Fine-tune the --encoder with the network at this learning rate (it is saved beside
    /// each checkpoint, `NAME.encoder.safetensors`).
    #[arg(long = "fine-tune-encoder", value_name = "LR", requires = "file")]
    fine_tune: Option<f64>,
}

#[derive(Clone, Copy, Debug, PartialEq, ValueEnum)]
enum ExploreArg {
    Epsilon,
    Boltzmann,
}

#[derive(Args, Debug)]
pub struct DqnArgs {
    /// Game spec (two players), e.g. `cathedral:size=8` or `connect4`.
    game: String,
    /// The Q-network: `mlp:layers=L,width=W` or `resnet:blocks=B,channels=C`.
    #[arg(long, value_name = "SPEC", default_value = "mlp:layers=2,width=256")]
    net: String,
    /// How the learner explores: ε-greedy or Boltzmann (softmax of Q / T).
    #[arg(long, value_enum, default_value_t = ExploreArg::Boltzmann)]
    explore: ExploreArg,
    /// ε or temperature at the start, annealed as report 001: end + (start - end) exp(-episode / decay).
    #[arg(long, default_value_t = 1.0)]
    rate_start: f64,
    /// ε or temperature it anneals toward.
    #[arg(long, default_value_t = 0.02)]
    rate_end: f64,
    /// Episodes for the gap to shrink by a factor e.
    #[arg(long, default_value_t = 400.0)]
    rate_decay: f64,
    /// Sample the replay memory uniformly instead of by priority.
    #[arg(long)]
    uniform: bool,
    /// Priority exponent α of prioritized replay.
    #[arg(long, default_value_t = 0.6)]
    alpha: f64,
    /// Importance-sampling exponent β at the start (annealed to 1 over --beta-steps).
    #[arg(long, default_value_t = 0.4)]
    beta: f64,
    /// Optimiser steps over which β reaches 1; 0 (the default): over the run, as the paper
    /// anneals it (its --games or --minutes at its pace so far; 100,000 steps without either).
    #[arg(long, default_value_t = 0)]
    beta_steps: u64,
    /// Discount per decision (report 001: 0.95).
    #[arg(long, default_value_t = 0.95)]
    gamma: f64,
    /// Decisions summed before bootstrapping (n-step returns).
    #[arg(long, default_value_t = 1)]
    n_step: u32,
    /// Transitions the replay memory holds.
    #[arg(long, default_value_t = 40_000)]
    buffer: usize,
    /// Transitions per optimiser step.
    #[arg(long, default_value_t = 64)]
    batch: usize,
    /// Decisions played per optimiser step.
    #[arg(long, default_value_t = 4)]
    train_every: usize,
    /// Transitions in memory before training starts.
    #[arg(long, default_value_t = 1000)]
    learning_starts: usize,
    /// Optimiser steps between target-network updates.
    #[arg(long, default_value_t = 30)]
    target_every: u64,
    /// Share of the online weights mixed into the target at each update (1: copy).
    #[arg(long, default_value_t = 1.0)]
    tau: f64,
    /// Plain DQN targets (the target network picks and values the next move).
    #[arg(long)]
    no_double: bool,
    /// Play and save an exponential moving average of the weights, keeping this share of the
    /// average at each optimiser step (e.g. 0.9998: about the last 5,000 steps). Exploration
    /// still uses the online weights; the checkpoint holds the average, the online weights go
    /// beside it (`last.online.safetensors`) for --resume.
    #[arg(long, value_name = "D")]
    average: Option<f64>,
    /// Store each decision under every symmetry of the game (Cathedral: its 4 rotations;
    /// tic-tac-toe: 8), that many transitions a decision: more data from the same games. The
    /// memory counts transitions, so raise --buffer with it to keep as many games.
    #[arg(long)]
    symmetries: bool,
    /// Games played side by side.
    #[arg(long, default_value_t = 16)]
    parallel: usize,
    /// Play this fixed agent instead of self-play (e.g. `random`).
    #[arg(long, value_name = "SPEC")]
    opponent: Option<String>,
    /// AdamW's learning rate (report 001: 1e-3).
    #[arg(long, default_value_t = 1e-3)]
    lr: f64,
    /// Huber threshold of the TD error.
    #[arg(long, default_value_t = 1.0)]
    huber: f64,
    /// Anneal the learning rate by a cosine to a tenth of --lr over the run (its --minutes or
    /// --games, whichever it reaches first at its pace so far); default: constant.
    #[arg(long)]
    lr_decay: bool,
    #[command(flatten)]
    encoder: EncoderArgs,
    #[command(flatten)]
    run: RunArgs,
}

impl DqnArgs {
    pub fn game(&self) -> &String {
        &self.game
    }
}

pub fn dqn<G: Game>(game: &G, args: &DqnArgs) -> Result<()> {
    let threads = limits::check_threads("--threads", args.run.threads)?;
    let mut c = DqnConfig::report(&game.spec().to_string());
    c.net = args.net.clone();
    c.exploration = match args.explore {
        ExploreArg::Epsilon => Exploration::Epsilon,
        ExploreArg::Boltzmann => Exploration::Boltzmann,
    };
    c.rate = Anneal { start: args.rate_start, end: args.rate_end, decay: args.rate_decay };
    c.priorities = (!args.uniform).then_some(Priorities {
        alpha: args.alpha,
        beta: args.beta,
        beta_steps: args.beta_steps,
        ..Priorities::default()
    });
    c.gamma = args.gamma;
    c.n_step = args.n_step;
    c.buffer = args.buffer;
    c.batch = args.batch;
    c.train_every = args.train_every;
    c.learning_starts = args.learning_starts;
    c.target_every = args.target_every;
    c.tau = args.tau;
    c.double = !args.no_double;
    c.average = args.average;
    c.symmetries = args.symmetries;
    c.parallel = args.parallel;
    c.opponent = args.opponent.clone();
    c.train.lr = args.lr;
    if args.lr_decay {
        c.train.decay = 0;
    }
    c.train.huber = Some(args.huber);
    (c.encoder, c.fine_tune_encoder) = (args.encoder.file.clone(), args.encoder.fine_tune);
    c.seed = args.run.seed;
    c.threads = threads;
    c.check()?;
    let out = args.run.out("dqn");
    drive(game, &args.run.options(&out, threads, args.lr_decay), |resume| DqnRun::new(game.clone(), c, resume))
}

#[derive(Clone, Copy, Debug, PartialEq, ValueEnum)]
enum SelfPlayArg {
    /// One older self whose weights follow the learner's softly (report 001).
    Soft,
    /// A pool of earlier snapshots.
    Pool,
    /// Both seats are the learner, both learn.
    Mirror,
}

#[derive(Clone, Copy, Debug, PartialEq, ValueEnum)]
enum SamplingArg {
    Recency,
    WinRate,
}

#[derive(Args, Debug)]
pub struct PpoArgs {
    /// Game spec (two players), e.g. `cathedral:size=8` or `connect4`.
    game: String,
    /// The actor-critic network: `mlp:layers=L,width=W` or `resnet:blocks=B,channels=C`.
    #[arg(long, value_name = "SPEC", default_value = "mlp:layers=2,width=256")]
    net: String,
    /// Discount per decision of the learner (report 001: 0.97).
    #[arg(long, default_value_t = 0.97)]
    gamma: f64,
    /// GAE's λ (report 001: 0.95).
    #[arg(long, default_value_t = 0.95)]
    lambda: f64,
    /// Clipping range ε of the probability ratio (report 001: 0.2).
    #[arg(long, default_value_t = 0.2)]
    clip: f64,
    /// Weight of the entropy bonus (report 001: 0.01).
    #[arg(long, default_value_t = 0.01)]
    entropy: f64,
    /// Weight of the value loss.
    #[arg(long, default_value_t = 0.5)]
    value_weight: f64,
    /// Clip each value's change from its rollout value to this much (off by default).
    #[arg(long, value_name = "X")]
    value_clip: Option<f64>,
    /// Passes over each rollout.
    #[arg(long, default_value_t = 4)]
    epochs: usize,
    /// Decisions per optimiser step.
    #[arg(long, default_value_t = 64)]
    minibatch: usize,
    /// Learner episodes per rollout (one update each).
    #[arg(long, default_value_t = 32)]
    rollout: usize,
    /// Games played side by side.
    #[arg(long, default_value_t = 16)]
    parallel: usize,
    /// Play this fixed agent instead of self-play (e.g. `random`).
    #[arg(long, value_name = "SPEC", conflicts_with = "self_play")]
    opponent: Option<String>,
    /// Self-play against: `soft` (one older self following the learner: report 001), `pool`
    /// (earlier snapshots) or `mirror` (both seats learn).
    #[arg(long, value_enum, default_value_t = SelfPlayArg::Soft)]
    self_play: SelfPlayArg,
    /// Soft updates: share of the learner's weights mixed into the older self each time.
    #[arg(long, default_value_t = 0.3)]
    soft_tau: f64,
    /// Soft updates: episodes between them.
    #[arg(long, default_value_t = 10)]
    soft_every: u64,
    /// Soft updates: episodes between full copies.
    #[arg(long, default_value_t = 100)]
    soft_full_every: u64,
    /// Pool: snapshots kept.
    #[arg(long, default_value_t = 8)]
    pool_size: usize,
    /// Pool: episodes between snapshots.
    #[arg(long, default_value_t = 200)]
    pool_every: u64,
    /// Pool: draw opponents by recency (newer more often) or by how often they beat the learner.
    #[arg(long, value_enum, default_value_t = SamplingArg::Recency)]
    pool_sampling: SamplingArg,
    /// AdamW's learning rate.
    #[arg(long, default_value_t = 3e-4)]
    lr: f64,
    /// Largest gradient norm (clipped above).
    #[arg(long, default_value_t = 0.5)]
    clip_norm: f64,
    /// Anneal the learning rate by a cosine to a tenth of --lr over the run (its --minutes or
    /// --games, whichever it reaches first at its pace so far); default: constant.
    #[arg(long)]
    lr_decay: bool,
    #[command(flatten)]
    encoder: EncoderArgs,
    #[command(flatten)]
    run: RunArgs,
}

impl PpoArgs {
    pub fn game(&self) -> &String {
        &self.game
    }
}

pub fn ppo<G: Game>(game: &G, args: &PpoArgs) -> Result<()> {
    let threads = limits::check_threads("--threads", args.run.threads)?;
    let mut c = PpoConfig::report(&game.spec().to_string());
    c.net = args.net.clone();
    c.gamma = args.gamma;
    c.lambda = args.lambda;
    c.clip = args.clip;
    c.entropy = args.entropy;
    c.value_weight = args.value_weight;
    c.value_clip = args.value_clip;
    c.epochs = args.epochs;
    c.minibatch = args.minibatch;
    c.rollout = args.rollout;
    c.parallel = args.parallel;
    c.opponents = match (&args.opponent, args.self_play) {
        (Some(spec), _) => Opponents::Agent(spec.clone()),
        (None, SelfPlayArg::Soft) => {
            Opponents::Soft(SoftUpdate { tau: args.soft_tau, every: args.soft_every, full_every: args.soft_full_every })
        }
        (None, SelfPlayArg::Pool) => Opponents::Pool {
            size: args.pool_size,
            every: args.pool_every,
            sampling: match args.pool_sampling {
                SamplingArg::Recency => PoolSampling::Recency,
                SamplingArg::WinRate => PoolSampling::WinRate,
            },
        },
        (None, SelfPlayArg::Mirror) => Opponents::Mirror,
    };
    c.train.lr = args.lr;
    if args.lr_decay {
        c.train.decay = 0;
    }
    c.train.clip_norm = args.clip_norm;
    (c.encoder, c.fine_tune_encoder) = (args.encoder.file.clone(), args.encoder.fine_tune);
    c.seed = args.run.seed;
    c.threads = threads;
    c.check()?;
    let out = args.run.out("ppo");
    drive(game, &args.run.options(&out, threads, args.lr_decay), |resume| PpoRun::new(game.clone(), c, resume))
}

#[derive(Args, Debug)]
pub struct VaeArgs {
    /// Game spec, e.g. `cathedral:size=8`.
    game: String,
    /// Agents whose games give the positions, taking turns game by game (repeat; report 001:
    /// half random, half a trained PPO agent).
    #[arg(long = "players", value_name = "SPEC", default_value = "random")]
    players: Vec<String>,
    /// Size of the latent code (report 001: 32).
    #[arg(long, default_value_t = 32)]
    latent: usize,
    /// Width of the encoder's and decoder's hidden layer.
    #[arg(long, default_value_t = 256)]
    hidden: usize,
    /// Passes over the training positions (report 001: 300).
    #[arg(long, default_value_t = 30)]
    epochs: u64,
    /// Positions per optimiser step.
    #[arg(long, default_value_t = 256)]
    batch: usize,
    /// AdamW's learning rate.
    #[arg(long, default_value_t = 1e-3)]
    lr: f64,
    /// Share of the positions held out to measure the reconstruction.
    #[arg(long, default_value_t = 0.1)]
    held_out: f64,
    #[command(flatten)]
    run: RunArgs,
}

impl VaeArgs {
    pub fn game(&self) -> &String {
        &self.game
    }
}

/// Games a VAE run plays for positions unless given --games (report 001: 4,000).
const VAE_GAMES: u64 = 4000;

/// `meeple train vae`: positions from games of the given agents, then epochs of the ELBO, the
/// reconstruction on held-out positions after each, through the one run loop.
pub fn vae<G: Game>(game: &G, args: &VaeArgs) -> Result<()> {
    let threads = limits::check_threads("--threads", args.run.threads)?;
    let config = VaeRunConfig {
        players: args.players.clone(),
        games: args.run.games.unwrap_or(VAE_GAMES),
        hidden: args.hidden,
        latent: args.latent,
        epochs: args.epochs,
        batch: args.batch,
        lr: args.lr,
        held_out: args.held_out,
        seed: args.run.seed,
    };
    config.check()?;
    if args.run.eval_minutes.is_some_and(|m| m > 0.0) || !args.run.ladder.is_empty() {
        anyhow::bail!(
            "--eval-minutes and --ladder evaluate an agent; an autoencoder plays no games (dqn and ppo read it with --encoder)"
        );
    }
    let mut options = args.run.options(&args.run.out("vae"), threads, false);
    // The games are the data; the epochs end the run.
    options.games = None;
    options.eval_minutes = 0.0;
    options.save_seconds = 0.0;
    eprintln!("playing {} games of {} for positions ({})", config.games, game.spec(), args.players.join(", "));
    drive(game, &options, |resume| VaeRun::new(game, config, resume))
}
