//! The terminal's side of every training run: the one Ctrl-C handler (the first stops the run
//! after its round, with a checkpoint; a second ends the process), a progress line, and the
//! call into `meeple_learn::run` that owns the loop, the run directory and resume.

use anyhow::{Result, anyhow};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use meeple_game::Game;
use meeple_learn::LearnError;
use meeple_learn::flags::{Given, Settings};
use meeple_learn::ladder::Evaluation;
use meeple_learn::run::{Hooks, Learner, Progress, Round, RunOptions, run};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// The process's stop flag, set by Ctrl-C; the handler is installed once, for every trainer.
pub fn stop_flag() -> Result<Arc<AtomicBool>> {
    static FLAG: OnceLock<Result<Arc<AtomicBool>, String>> = OnceLock::new();
    FLAG.get_or_init(|| {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = stop.clone();
        // A second Ctrl-C while the checkpoint is written ends the process the usual way.
        ctrlc::set_handler(move || {
            if seen.swap(true, Ordering::SeqCst) {
                std::process::exit(130);
            }
        })
        .map_err(|e| format!("cannot watch for Ctrl-C: {e}"))?;
        Ok(stop)
    })
    .clone()
    .map_err(|e| anyhow!(e))
}

/// A progress line on the terminal, and the stop flag.
pub struct Terminal {
    pub bar: ProgressBar,
    stop: Arc<AtomicBool>,
}

impl Terminal {
    pub fn new() -> Result<Self> {
        let bar = ProgressBar::new_spinner();
        bar.set_style(ProgressStyle::with_template("{elapsed_precise} {msg}").expect("template"));
        Ok(Terminal { bar, stop: stop_flag()? })
    }

    /// Whether Ctrl-C was pressed.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

impl Hooks for Terminal {
    fn round(&mut self, p: &Progress, round: &Round) {
        self.bar.set_message(format!("{} games, {} steps, {}", p.episodes, p.steps, round.summary()));
        self.bar.tick();
    }

    fn evaluating(&mut self, p: &Progress) {
        self.bar.set_message(format!("evaluating after {} games", p.episodes));
    }

    fn evaluated(&mut self, p: &Progress, evaluation: &Evaluation) {
        let scores: Vec<String> =
            evaluation.opponents.iter().map(|r| format!("{} {:.3}", r.opponent, r.score)).collect();
        self.bar.println(format!("after {} games: {}", p.episodes, scores.join(", ")));
    }

    fn should_stop(&self) -> bool {
        self.stopped()
    }

    fn working(&self, text: &str) {
        self.bar.set_message(text.to_string());
        self.bar.tick();
    }
}

/// Runs a trainer through the one loop with a progress line, then says where its network is.
pub fn drive<G: Game, L: Learner>(
    game: &G,
    options: &RunOptions,
    make: impl FnOnce(Option<&Path>) -> Result<L, LearnError>,
) -> Result<()> {
    let mut terminal = Terminal::new()?;
    let progress = run(game, options, make, &mut terminal)?;
    terminal.bar.finish();
    finished(&progress, options)
}

/// Runs the trainer `kind` by name (as Python's `meeple.train` does), its settings those the
/// user gave over the trainer's defaults, with a progress line; then says where its network is.
pub fn drive_named<G: Game>(game: &G, kind: &str, settings: &serde_json::Value, options: &RunOptions) -> Result<()> {
    let mut terminal = Terminal::new()?;
    let progress = meeple_learn::run::train(game, kind, settings, options, &mut terminal)?;
    terminal.bar.finish();
    finished(&progress, options)
}

fn finished(progress: &Progress, options: &RunOptions) -> Result<()> {
    let file = meeple_learn::run::read_run(&options.out)?;
    println!(
        "{} games, {} steps; checkpoint in {}",
        progress.episodes,
        progress.steps,
        options.out.join(&file.last).display()
    );
    Ok(())
}

/// A trainer's command: the game, the trainer's own settings (its config's fields), the run's.
#[derive(Args, Debug)]
pub struct LearnerArgs<T: Settings + Send + Sync + 'static> {
    /// Game spec, e.g. `catan:players=3`, `cathedral:size=8` or `connect4` (dqn and ppo: two
    /// players).
    game: String,
    #[command(flatten)]
    settings: Given<T>,
    #[command(flatten)]
    run: RunArgs,
}

impl<T: Settings + Send + Sync + 'static> LearnerArgs<T> {
    pub fn game(&self) -> &String {
        &self.game
    }

    /// Runs trainer `kind` with the settings given, in `--out` or `runs/KIND`.
    pub fn run<G: Game>(&self, game: &G, kind: &str) -> Result<()> {
        let threads = meeple_game::limits::check_threads("--threads", self.run.threads)?;
        if kind == "vae" && self.run.eval_minutes.is_some_and(|m| m > 0.0) {
            anyhow::bail!(
                "--eval-minutes evaluates an agent; an autoencoder plays no games (dqn and ppo read it with --encoder)"
            );
        }
        drive_named(game, kind, &self.settings.json(), &self.run.options(&self.run.out(kind), threads, false))
    }
}

/// `--equal-time`'s value: an agent spec, or "none".
pub fn equal_time(spec: &str) -> Option<String> {
    (!spec.trim().eq_ignore_ascii_case("none")).then(|| spec.trim().to_string())
}

/// The command line this process was started with, kept in the run's `run.json`.
pub fn command_line() -> String {
    // The program by its name, not the path it was started by.
    std::iter::once("meeple".to_string())
        .chain(std::env::args().skip(1))
        .map(|a| if a.contains(' ') { format!("'{a}'") } else { a })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What every trainer's run takes: where it goes, its limits, its evaluation, seed and threads.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Stop after this many games (episodes, this session and earlier ones together). For the
    /// trainers that learn from a fixed set of games (`vae`, `value --data search`): the games
    /// played for it.
    #[arg(long, value_name = "N")]
    pub games: Option<u64>,
    /// Stop after this many minutes (this session and earlier ones together).
    #[arg(long, value_name = "M")]
    pub minutes: Option<f64>,
    /// Evaluate against the ladder (and keep a checkpoint in ckpt/) every this many minutes;
    /// 0 never.
    #[arg(long, value_name = "M")]
    pub eval_minutes: Option<f64>,
    /// Games against each ladder opponent per evaluation, a multiple of the seatings.
    #[arg(long, value_name = "N")]
    pub eval_games: Option<usize>,
    /// Evaluation opponents (repeat; default: random and the game's own ladder agents).
    #[arg(long = "ladder", value_name = "SPEC")]
    pub ladder: Vec<String>,
    /// An opponent given the evaluated agent's own mean time a move in each evaluation (an
    /// agent spec without time=), so the curves show strength at equal cost; "none" leaves it out.
    #[arg(long, value_name = "SPEC", default_value = meeple_learn::ladder::DEFAULT_EQUAL_TIME)]
    pub equal_time: String,
    /// The run directory: run.json (settings and progress), metrics.jsonl, ladder.json,
    /// ckpt/last.* (the checkpoint to resume from) and the checkpoints kept at evaluations.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Continue the run in --out from its last checkpoint (with the same settings).
    #[arg(long)]
    pub resume: bool,
    /// Also write the last checkpoint to this file when the run ends (a bare network or
    /// weights file, with its sidecar).
    #[arg(long, value_name = "FILE")]
    pub export: Option<PathBuf>,
    /// Seed of every random choice of the run.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
}

impl RunArgs {
    /// The run's options, in `--out` or `runs/KIND`; `needs_limit` where the trainer anneals
    /// over the run's length (the trainers run by name say so themselves).
    pub fn options(&self, out: &Path, threads: usize, lr_decay: bool) -> RunOptions {
        RunOptions {
            resume: self.resume,
            minutes: self.minutes,
            games: self.games,
            seed: self.seed,
            threads,
            eval_minutes: self.eval_minutes.unwrap_or(10.0),
            eval_games: self.eval_games,
            ladder: self.ladder.clone(),
            equal_time: equal_time(&self.equal_time),
            commands: vec![command_line()],
            needs_limit: lr_decay.then_some("--lr-decay anneals the learning rate over the run"),
            export: self.export.clone(),
            ..RunOptions::new(out)
        }
    }

    /// `--out`, or `runs/KIND`.
    pub fn out(&self, kind: &str) -> PathBuf {
        self.out.clone().unwrap_or_else(|| PathBuf::from("runs").join(kind))
    }
}
