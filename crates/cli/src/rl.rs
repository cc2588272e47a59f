//! `meeple train dqn|ppo GAME`: report 001's model-free learners on any two-player game, driven
//! by the shared learner loop (progress, metrics, ladder, Ctrl-C checkpoint, `--resume`).

use crate::learner::{command_line, drive, equal_time};
use anyhow::Result;
use clap::{Args, ValueEnum};
use meeple_game::{Game, limits};
use meeple_learn::dqn::{DqnConfig, DqnRun, Exploration};
use meeple_learn::ppo::{Opponents, PoolSampling, PpoConfig, PpoRun, SoftUpdate};
use meeple_learn::replay::Priorities;
use meeple_learn::rl::Anneal;
use std::path::PathBuf;

/// What every learner's run takes: limits, evaluation, output, seed and threads.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Stop after this many games (episodes, this session and earlier ones together).
    #[arg(long, value_name = "N")]
    pub games: Option<u64>,
    /// Stop after this many minutes (this session and earlier ones together).
    #[arg(long, value_name = "M")]
    pub minutes: Option<f64>,
    /// Evaluate against the ladder (and keep a checkpoint in ckpt/) every this many minutes;
    /// 0 never.
    #[arg(long, default_value_t = 10.0)]
    pub eval_minutes: f64,
    /// Games against each ladder opponent per evaluation, a multiple of the seatings.
    #[arg(long)]
    pub eval_games: Option<usize>,
    /// Ladder opponents (repeat; default: random and the game's own ladder agents).
    #[arg(long = "ladder", value_name = "SPEC")]
    pub ladder: Vec<String>,
    /// An opponent given the evaluated agent's own mean time a move in each evaluation (an
    /// agent spec without time=), so the curves show strength at equal cost; "none" leaves it out.
    #[arg(long, value_name = "SPEC", default_value = meeple_learn::ladder::DEFAULT_EQUAL_TIME)]
    pub equal_time: String,
    /// The run directory (run.json, metrics.jsonl, ladder.json, ckpt/last.safetensors with its
    /// sidecar and optimiser state, and the checkpoints kept at evaluations).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Continue the run in --out from its last checkpoint.
    #[arg(long)]
    pub resume: bool,
    /// Seed of the initial weights, the games and the exploration.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Network threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Anneal the learning rate by a cosine to a tenth of --lr over the run (its --minutes or
    /// --games, whichever it reaches first at its pace so far); default: constant.
    #[arg(long)]
    pub lr_decay: bool,
}

impl RunArgs {
    fn options(&self, out: &std::path::Path, threads: usize) -> meeple_learn::run::RunOptions {
        meeple_learn::run::RunOptions {
            resume: self.resume,
            minutes: self.minutes,
            games: self.games,
            seed: self.seed,
            threads,
            eval_minutes: self.eval_minutes,
            eval_games: self.eval_games,
            ladder: self.ladder.clone(),
            equal_time: equal_time(&self.equal_time),
            commands: vec![command_line()],
            needs_limit: self.lr_decay.then_some("--lr-decay anneals the learning rate over the run"),
            ..meeple_learn::run::RunOptions::new(out)
        }
    }
}

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
    /// Optimiser steps over which β reaches 1.
    #[arg(long, default_value_t = 100_000)]
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
    if args.run.lr_decay {
        c.train.decay = 0;
    }
    c.train.huber = Some(args.huber);
    (c.encoder, c.fine_tune_encoder) = (args.encoder.file.clone(), args.encoder.fine_tune);
    c.seed = args.run.seed;
    c.threads = threads;
    c.check()?;
    let out = args.run.out.clone().unwrap_or_else(|| PathBuf::from("runs/dqn"));
    drive(game, &args.run.options(&out, threads), |resume| DqnRun::new(game.clone(), c, resume))
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
    if args.run.lr_decay {
        c.train.decay = 0;
    }
    c.train.clip_norm = args.clip_norm;
    (c.encoder, c.fine_tune_encoder) = (args.encoder.file.clone(), args.encoder.fine_tune);
    c.seed = args.run.seed;
    c.threads = threads;
    c.check()?;
    let out = args.run.out.clone().unwrap_or_else(|| PathBuf::from("runs/ppo"));
    drive(game, &args.run.options(&out, threads), |resume| PpoRun::new(game.clone(), c, resume))
}

#[derive(Args, Debug)]
pub struct VaeArgs {
    /// Game spec, e.g. `cathedral:size=8`.
    game: String,
    /// Agents whose games give the positions, taking turns game by game (repeat; report 001:
    /// half random, half a trained PPO agent).
    #[arg(long = "players", value_name = "SPEC", default_value = "random")]
    players: Vec<String>,
    /// Games played for positions (report 001: 4,000).
    #[arg(long, default_value_t = 4000)]
    games: u64,
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
    /// Seed of the games, the weights and the noise.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The autoencoder file (with its .json sidecar); metrics go to FILE.metrics.jsonl.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Continue the run in --out (the same positions, the epochs not yet done).
    #[arg(long)]
    resume: bool,
    /// Replace an existing --out.
    #[arg(long, conflicts_with = "resume")]
    force: bool,
}

impl VaeArgs {
    pub fn game(&self) -> &String {
        &self.game
    }
}

/// `meeple train vae`: positions from games of the given agents, then epochs of the ELBO, the
/// reconstruction on held-out positions after each; the file is rewritten after every epoch.
pub fn vae<G: Game>(game: &G, args: &VaeArgs) -> Result<()> {
    use indicatif::{ProgressBar, ProgressStyle};
    use meeple_nn::{Vae, VaeConfig};
    use rand::RngExt;
    use std::io::Write;
    if !(args.lr.is_finite() && args.lr > 0.0) {
        anyhow::bail!("--lr {} must be a positive number", args.lr);
    }
    if !(args.held_out > 0.0 && args.held_out < 1.0) {
        anyhow::bail!("--held-out {} must be within 0 and 1 (excluded)", args.held_out);
    }
    if !(1..=65_536).contains(&args.batch) || args.games == 0 || args.games > 10_000_000 {
        anyhow::bail!("--batch {} (1..=65536) and --games {} (1..=10000000)", args.batch, args.games);
    }
    meeple_arena::files::check_new_output(&args.out, "autoencoder", args.resume || args.force, true)
        .map_err(|e| anyhow::anyhow!(e))?;
    let spec = game.spec().to_string();
    let n: usize = game.observation_shape().iter().product();
    let config = VaeConfig { input: n, hidden: args.hidden, latent: args.latent };
    let metrics = PathBuf::from(format!("{}.metrics.jsonl", args.out.display()));
    let (mut vae, mut epoch) = if args.resume {
        let (vae, side) = Vae::load(&args.out, Some(&spec))?;
        if side.vae != config {
            anyhow::bail!("--resume: '{}' is a VAE of {:?}, not {config:?}", args.out.display(), side.vae);
        }
        (vae, side.run.get("epochs").and_then(|e| e.as_u64()).unwrap_or(0))
    } else {
        if metrics.exists() {
            std::fs::remove_file(&metrics)?;
        }
        (Vae::new(config, args.seed)?, 0)
    };
    eprintln!("playing {} games of {spec} for positions ({})", args.games, args.players.join(", "));
    let data = meeple_learn::vae::positions(game, &args.players, args.games, args.seed)?;
    let rows = data.len() / n;
    // The held-out positions are whole games' worth at the end (the last games played).
    let test_rows = ((rows as f64 * args.held_out) as usize).max(1).min(rows.saturating_sub(1));
    let train_rows = rows - test_rows;
    if train_rows == 0 {
        anyhow::bail!("{rows} positions: too few to hold some out; play more --games");
    }
    let (train, test) = data.split_at(train_rows * n);
    eprintln!("{rows} positions: {train_rows} to train on, {test_rows} held out");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let stop = stop.clone();
        let _ = ctrlc::set_handler(move || stop.store(true, std::sync::atomic::Ordering::Relaxed));
    }
    let bar = ProgressBar::new(args.epochs);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} epochs {elapsed_precise} {msg}").expect("template"),
    );
    bar.set_position(epoch);
    let mut log = std::fs::OpenOptions::new().create(true).append(true).open(&metrics)?;
    let mut rng = meeple_game::rng_from_seed(meeple_game::derive_seed(args.seed, 0x7a3));
    let mut order: Vec<usize> = (0..train_rows).collect();
    let mut batch = Vec::with_capacity(args.batch * n);
    let started = std::time::Instant::now();
    while epoch < args.epochs && !stop.load(std::sync::atomic::Ordering::Relaxed) {
        for i in (1..order.len()).rev() {
            order.swap(i, rng.random_range(0..=i));
        }
        let (mut recon, mut kl, mut steps) = (0.0, 0.0, 0u64);
        for chunk in order.chunks(args.batch) {
            batch.clear();
            for &r in chunk {
                batch.extend_from_slice(&train[r * n..(r + 1) * n]);
            }
            let l = vae.train_step(&batch, chunk.len(), args.lr as f32)?;
            recon += l.reconstruction;
            kl += l.kl;
            steps += 1;
        }
        epoch += 1;
        let held = vae.reconstruction(test, test_rows);
        let run = serde_json::json!({
            "trainer": "vae", "epochs": epoch, "games": args.games, "players": args.players,
            "positions": rows, "held_out": test_rows, "reconstruction": held,
        });
        vae.save(&args.out, &spec, run)?;
        let line = serde_json::json!({
            "schema": meeple_learn::metrics::SCHEMA, "event": "generation", "trainer": "vae", "generation": epoch,
            "steps": vae.step(), "positions": train_rows, "wall_seconds": started.elapsed().as_secs_f64(),
            "losses": { "reconstruction": recon / steps as f64, "kl": kl / steps as f64 },
            "figures": { "accuracy": held.accuracy, "on_accuracy": held.on_accuracy },
        });
        writeln!(log, "{line}")?;
        bar.set_position(epoch);
        bar.set_message(format!(
            "loss {:.3} + kl {:.3}; held out: {:.2}% of inputs, {:.2}% of those on",
            recon / steps as f64,
            kl / steps as f64,
            100.0 * held.accuracy,
            100.0 * held.on_accuracy
        ));
    }
    bar.finish();
    let held = vae.reconstruction(test, test_rows);
    println!(
        "{epoch} epochs; held-out reconstruction {:.2}% of inputs ({:.2}% of those on); autoencoder in {}",
        100.0 * held.accuracy,
        100.0 * held.on_accuracy,
        args.out.display()
    );
    Ok(())
}
