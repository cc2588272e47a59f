//! `meeple train td GAME`: TD(λ) self-play of a value network on afterstates (report 002's Catan
//! learner), with a progress line, metrics, a ladder evaluation every few minutes, Ctrl-C to
//! stop with a checkpoint, and `--resume`.

use anyhow::{Result, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use meeple_game::{Game, limits};
use meeple_learn::ladder::{Ladder, LadderConfig};
use meeple_learn::metrics::{Event, Metrics};
use meeple_learn::td::{TdConfig, TdRun};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

#[derive(Args, Debug)]
pub struct TdArgs {
    /// Game spec, e.g. `catan:players=3` or `catan:players=3,board=shuffled`.
    game: String,
    /// The value network: `resmlp:blocks=B,width=W` (report 002: blocks=4,width=500, the
    /// default), `mlp:layers=L,width=W`, or `resnet:...` for board planes.
    #[arg(long, value_name = "SPEC", default_value = "resmlp:blocks=4,width=500")]
    net: String,
    /// λ of the λ-returns: 0 trains each prediction toward the mover's next one (report 002),
    /// 1 toward the game's result.
    #[arg(long, default_value_t = 0.0)]
    lambda: f64,
    /// Chance of a uniformly random move at each decision (report 002: 1 in 1,000).
    #[arg(long, default_value_t = 1e-3)]
    epsilon: f64,
    /// Games played side by side; their afterstates go through the network in one pass.
    #[arg(long, default_value_t = 32)]
    parallel: usize,
    /// Finished games per training round (report 002: 1, later 2 and 4).
    #[arg(long, default_value_t = 1)]
    batch_games: usize,
    /// Positions per optimiser step within a round (default: the whole round in one step, as
    /// the report).
    #[arg(long, default_value_t = 65_536)]
    minibatch: usize,
    /// AdamW's learning rate (report 002: 5e-5, later 1e-5).
    #[arg(long, default_value_t = 5e-5)]
    lr: f64,
    /// AdamW's decoupled weight decay.
    #[arg(long, default_value_t = 1e-2)]
    weight_decay: f64,
    /// Largest gradient norm (report 002: 0.1).
    #[arg(long, default_value_t = 0.1)]
    clip: f64,
    /// Threshold of the Huber value loss on the [0, 1] value scale (report 002's smooth L1 has
    /// 1 on a 1-3 place scale, i.e. 0.5 here); 0 for the squared error.
    #[arg(long, default_value_t = 0.5)]
    huber: f64,
    /// Every seat's target when a game ends undecided (Catan's turn limit): 0 teaches that
    /// stalling loses; default: the game's own returns (an even split).
    #[arg(long, value_name = "V")]
    undecided: Option<f64>,
    /// Share of each seat's final target from its score against the best score (0: the
    /// result alone): a denser signal, as report 002 trained toward finishing places.
    #[arg(long, default_value_t = 0.0)]
    score_weight: f64,
    /// Stop after this many minutes (this session and earlier ones together).
    #[arg(long, value_name = "M")]
    minutes: Option<f64>,
    /// Stop after this many games.
    #[arg(long, value_name = "N")]
    games: Option<u64>,
    /// Evaluate against the ladder (and keep a checkpoint) every this many minutes; 0 never.
    #[arg(long, default_value_t = 15.0)]
    eval_minutes: f64,
    /// Games against each ladder opponent per evaluation, a multiple of the seatings.
    #[arg(long)]
    eval_games: Option<usize>,
    /// Ladder opponents (repeat; default: random and the game's own ladder agents).
    #[arg(long = "opponent", value_name = "SPEC")]
    opponents: Vec<String>,
    /// The run directory (last.safetensors with its sidecar and optimiser state,
    /// metrics.jsonl, ckpt/).
    #[arg(long, value_name = "DIR", default_value = "runs/td")]
    out: PathBuf,
    /// Continue the run in --out from its last checkpoint.
    #[arg(long)]
    resume: bool,
    /// Seed of the network's initial weights and of the games.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Network threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

impl TdArgs {
    pub fn game(&self) -> &String {
        &self.game
    }
}

pub fn run<G: Game>(game: &G, args: &TdArgs) -> Result<()> {
    let threads = limits::check_threads("--threads", args.threads)?;
    let mut config = TdConfig::report(&game.spec().to_string());
    config.net = args.net.clone();
    config.lambda = args.lambda;
    config.epsilon = args.epsilon;
    config.parallel = args.parallel;
    config.batch_games = args.batch_games;
    config.minibatch = args.minibatch;
    config.train.lr = args.lr;
    config.train.weight_decay = args.weight_decay;
    config.train.clip_norm = args.clip;
    config.train.huber = (args.huber > 0.0).then_some(args.huber);
    config.seed = args.seed;
    config.threads = threads;
    config.undecided = args.undecided;
    config.score_weight = args.score_weight;
    if !(args.clip.is_finite() && args.clip > 0.0) {
        bail!("--clip {} must be a positive number", args.clip);
    }
    let run = Drive {
        out: &args.out,
        resume: args.resume,
        minutes: args.minutes,
        games: args.games,
        eval_minutes: args.eval_minutes,
        eval_games: args.eval_games,
        opponents: &args.opponents,
        seed: args.seed,
        trainer: "td",
    };
    drive(game, config, &run)
}

/// What [`drive`] needs besides the configuration.
pub struct Drive<'a> {
    pub out: &'a std::path::Path,
    pub resume: bool,
    pub minutes: Option<f64>,
    pub games: Option<u64>,
    pub eval_minutes: f64,
    pub eval_games: Option<usize>,
    pub opponents: &'a [String],
    pub seed: u64,
    /// The trainer's name in the metrics.
    pub trainer: &'static str,
}

/// Plays and trains rounds until a limit, Ctrl-C, or the game count; checkpoints every minute
/// and at the end, evaluates on the ladder every `eval_minutes`.
pub fn drive<G: Game>(game: &G, config: TdConfig, args: &Drive<'_>) -> Result<()> {
    let threads = config.threads;
    let last = args.out.join("last.safetensors");
    let metrics_path = args.out.join("metrics.jsonl");
    if args.resume {
        if !last.is_file() {
            bail!("--resume: no checkpoint '{}' to continue", last.display());
        }
    } else if last.exists() || metrics_path.exists() {
        bail!("'{}' holds a run already: give --resume to continue it, or another --out", args.out.display());
    }
    config.check()?;
    std::fs::create_dir_all(args.out.join("ckpt"))?;
    let mut run = TdRun::new(game.clone(), config, args.resume.then_some(last.as_path()))?;
    // The ladder rates two-player games (a pairwise round robin); with more seats the run's own
    // figures (Catan: dice rolls per game) show progress, and the arena measures a checkpoint.
    let ladder_fits = game.num_players() == 2;
    if args.eval_minutes > 0.0 && !ladder_fits {
        eprintln!(
            "note: no ladder evaluation for {} players (the ladder rates two-player games); measure checkpoints with \
             meeple arena",
            game.num_players()
        );
    }
    let mut ladder = if args.eval_minutes > 0.0 && ladder_fits {
        let mut c = LadderConfig::new(game, "value:model={model}", threads, args.seed);
        if !args.opponents.is_empty() {
            c.opponents = args.opponents.to_vec();
        } else {
            let mut o = vec!["random".to_string()];
            o.extend(game.ladder_agents());
            c.opponents = o;
        }
        if let Some(g) = args.eval_games {
            c.games = g;
        }
        Some(Ladder::new(game, c, args.out)?)
    } else {
        None
    };
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        // Ctrl-C stops after the round being played; the checkpoint is then written.
        let _ = ctrlc::set_handler(move || stop.store(true, Ordering::Relaxed));
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("{elapsed_precise} {msg}").expect("template"));
    let mut log = std::fs::OpenOptions::new().create(true).append(true).open(&metrics_path)?;
    let session = Instant::now();
    let base = run.progress.seconds;
    let mut last_eval = session;
    let mut last_save = session;
    let mut rounds = 0u64;
    loop {
        let seconds = base + session.elapsed().as_secs_f64();
        if stop.load(Ordering::Relaxed)
            || args.minutes.is_some_and(|m| seconds >= m * 60.0)
            || args.games.is_some_and(|g| run.progress.games >= g)
        {
            break;
        }
        let round = run.round()?;
        rounds += 1;
        run.progress.seconds = base + session.elapsed().as_secs_f64();
        let mut line = Metrics {
            schema: meeple_learn::metrics::SCHEMA,
            event: Event::Generation,
            trainer: args.trainer.into(),
            generation: run.progress.games,
            steps: run.progress.steps,
            episodes: run.progress.games,
            positions: run.progress.positions,
            wall_seconds: run.progress.seconds,
            trained: true,
            ..Metrics::default()
        };
        line.losses.insert("value".into(), round.loss);
        line.figures.insert("plies".into(), round.mean_plies);
        line.figures.insert("decided".into(), round.decided);
        if let Some(e) = run.progress.epsilon {
            line.figures.insert("epsilon".into(), e);
        }
        for (name, v) in &round.metrics {
            line.figures.insert(name.clone(), *v);
        }
        line.stats.insert("positions_per_second".into(), round.positions_per_second);
        line.stats.insert("round_positions".into(), round.positions as f64);
        writeln!(log, "{}", line.to_line())?;
        let extra: String = round.metrics.iter().map(|(n, v)| format!(" {n} {v:.1}")).collect();
        bar.set_message(format!(
            "{} games, {} steps, loss {:.4}, {:.0} plies{extra}, {:.0} positions/s",
            run.progress.games, run.progress.steps, round.loss, round.mean_plies, round.positions_per_second
        ));
        bar.tick();
        if last_save.elapsed().as_secs() >= 60 {
            run.trainer.save_resumable(&last, run.sidecar())?;
            last_save = Instant::now();
        }
        if let Some(ladder) = ladder.as_mut()
            && last_eval.elapsed().as_secs_f64() >= args.eval_minutes * 60.0
        {
            let path = args.out.join("ckpt").join(format!("games-{}.safetensors", run.progress.games));
            run.trainer.save(&path, run.sidecar())?;
            bar.set_message(format!("evaluating after {} games", run.progress.games));
            let evaluation = ladder.evaluate(&path, run.progress.games);
            let line = Metrics::evaluation(
                args.trainer,
                run.progress.games,
                run.progress.steps,
                run.progress.seconds,
                evaluation,
            );
            writeln!(log, "{}", line.to_line())?;
            let scores: Vec<String> = line
                .evaluation
                .iter()
                .flat_map(|e| e.opponents.iter().map(|r| format!("{} {:.3}", r.opponent, r.score)))
                .collect();
            bar.println(format!("after {} games: {}", run.progress.games, scores.join(", ")));
            last_eval = Instant::now();
        }
    }
    run.progress.seconds = base + session.elapsed().as_secs_f64();
    run.trainer.save_resumable(&last, run.sidecar())?;
    bar.finish();
    println!(
        "{} games ({rounds} rounds this session), {} steps; network in {}",
        run.progress.games,
        run.progress.steps,
        last.display()
    );
    Ok(())
}
