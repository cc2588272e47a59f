//! The terminal's side of every training run: the one stop handler for Ctrl-C, TERM and HUP
//! (the first stops the run after its round, with a checkpoint; a second ends the process), a progress line, and the
//! call into `meeple_learn::run` that owns the loop, the run directory and resume.

use anyhow::{Result, anyhow};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use meeple_game::Game;
use meeple_learn::LearnError;
use meeple_learn::flags::{Given, Settings};
use meeple_learn::ladder::Evaluation;
use meeple_learn::run::{Every, Hooks, Learner, Progress, Round, RunOptions, run};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// The process's stop flag, set by Ctrl-C, TERM (what a job scheduler or a reclaimed machine
/// sends) or HUP (a closed terminal); the handler is installed once, for every trainer.
pub fn stop_flag() -> Result<Arc<AtomicBool>> {
    static FLAG: OnceLock<Result<Arc<AtomicBool>, String>> = OnceLock::new();
    FLAG.get_or_init(|| {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = stop.clone();
        // A second signal while the checkpoint is written ends the process the usual way.
        ctrlc::set_handler(move || {
            if seen.swap(true, Ordering::SeqCst) {
                std::process::exit(130);
            }
        })
        .map_err(|e| format!("cannot watch for Ctrl-C, TERM and HUP: {e}"))?;
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

    /// Whether the run was asked to stop (Ctrl-C, TERM or HUP).
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
        let line = format!("after {} games ({:.1} min): {}", p.episodes, p.seconds / 60.0, evaluation_line(evaluation));
        // Without a terminal (a run in the background) the bar draws nothing: log the line.
        if self.bar.is_hidden() {
            eprintln!("{line}");
        } else {
            self.bar.println(line);
        }
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
    let progress = meeple_learn::trainers::train(game, kind, settings, options, &mut terminal)?;
    terminal.bar.finish();
    finished(&progress, options)
}

fn finished(progress: &Progress, options: &RunOptions) -> Result<()> {
    let file = meeple_learn::run::read_run(&options.out)?;
    println!(
        "{} games, {} steps; checkpoint in {}{}",
        progress.episodes,
        progress.steps,
        options.out.join(&file.last).display(),
        if stop_flag()?.load(Ordering::SeqCst) { " (stopped; go on with the same command and --resume)" } else { "" }
    );
    println!("{}", run_summary(&file, &options.out));
    Ok(())
}

/// What a finished or stopped run has: its best checkpoint by the evaluations, and the files
/// that carry it to another machine.
pub fn run_summary(file: &meeple_learn::run::RunFile, out: &Path) -> String {
    let mut lines = Vec::new();
    if let Some(b) = &file.best {
        let ext = Path::new(&file.last).extension().and_then(|e| e.to_str()).unwrap_or("safetensors");
        lines.push(format!(
            "best so far: {} (round {}, {} {:.3})",
            out.join(format!("ckpt/best.{ext}")).display(),
            b.generation,
            b.by,
            b.merit
        ));
    }
    lines.push(format!("to go on elsewhere, keep {}: {}", out.display(), file.resume_files.join(", ")));
    lines.join("\n")
}

/// An evaluation on one line: each opponent's score with its 95% interval, and whether it made
/// the run's best checkpoint.
pub fn evaluation_line(e: &Evaluation) -> String {
    if let Some(why) = &e.error {
        return format!("evaluation failed: {why}");
    }
    let scores: Vec<String> = e
        .opponents
        .iter()
        .map(|r| format!("{} {:.0}% [{:.0}, {:.0}]", r.opponent, 100.0 * r.score, 100.0 * r.ci[0], 100.0 * r.ci[1]))
        .collect();
    format!("{}{}", scores.join(", "), if e.best { " (best so far: ckpt/best)" } else { "" })
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
        drive_named(game, kind, &self.settings.json(), &self.run.options(kind)?)
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
    /// Stop after this many games (episodes, every piece of the run together). For the
    /// trainers that learn from a fixed set of games (`vae`, `value --data search`): the games
    /// played for it.
    #[arg(long, value_name = "N")]
    pub games: Option<u64>,
    /// Stop after this many minutes (every piece of the run together).
    #[arg(long, value_name = "M")]
    pub minutes: Option<f64>,
    /// Stop after this many optimiser steps.
    #[arg(long, value_name = "N")]
    pub steps: Option<u64>,
    /// Evaluate against the ladder, keeping that checkpoint in ckpt/: a time (`90s`, `10m`,
    /// `1h`), a count of the trainer's rounds as its checkpoints are numbered (`5`: every fifth
    /// generation of az, epoch of vae and value --data search, game of the others), or 0 for
    /// never. Default: az every 5 generations, rootstrap/treestrap/tdleaf and vae never, the
    /// others every 10m. A resumed run may change it.
    #[arg(long, value_name = "EVERY", value_parser = clap::value_parser!(Every))]
    pub eval_every: Option<Every>,
    /// The same as --eval-every Mm (the name commands written by older meeples use).
    #[arg(long, value_name = "M", hide = true, conflicts_with = "eval_every")]
    pub eval_minutes: Option<f64>,
    /// Games against each ladder opponent per evaluation, a multiple of the seatings.
    #[arg(long, value_name = "N")]
    pub eval_games: Option<usize>,
    /// Uniformly random plies that open each evaluation game (the same for both seatings of a
    /// seed): without them a deterministic pair plays the same game for every seed (default 2;
    /// 0 for games with chance of their own, such as Catan, whose dice vary the games and whose
    /// first plies, the settlements, random would decide).
    #[arg(long, value_name = "N")]
    pub eval_opening_plies: Option<usize>,
    /// Evaluation opponents (repeat; default: random and the game's own ladder agents).
    #[arg(long = "ladder", value_name = "SPEC")]
    pub ladder: Vec<String>,
    /// An opponent given the evaluated agent's own mean time a move in each evaluation (an
    /// agent spec without time=), so the curves show strength at equal cost; "none" leaves it out.
    #[arg(long, value_name = "SPEC", default_value = meeple_learn::ladder::DEFAULT_EQUAL_TIME)]
    pub equal_time: String,
    /// The run directory: run.json (settings and progress), metrics.jsonl, ladder.json,
    /// ckpt/last.* (the checkpoint to resume from) and the checkpoints kept at evaluations
    /// (default runs/TRAINER).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Continue the run in --out from its last checkpoint (with the same settings and limits;
    /// --threads may change). Stopped by Ctrl-C, TERM or HUP, a run writes its checkpoint
    /// first; run.json lists the files it needs to go on elsewhere (resume_files).
    #[arg(long)]
    pub resume: bool,
    /// With --resume: the limits given (--minutes, --games, --steps: the new totals) replace
    /// the run's plan, and a learning rate annealed over the run goes on from where it stands
    /// to the new end. Without it, a resumed run must give the limits it was started with.
    #[arg(long, requires = "resume")]
    pub extend: bool,
    /// Also write the last checkpoint to this file when the run ends (a bare network or
    /// weights file, with its sidecar).
    #[arg(long, value_name = "FILE")]
    pub export: Option<PathBuf>,
    /// Seed of every random choice of the run: the same seed and one thread give the same run.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Threads (default: all cores).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
}

impl RunArgs {
    /// The run's options, in `--out` or `runs/KIND`, its threads checked.
    pub fn options(&self, kind: &str) -> Result<RunOptions> {
        let threads = match self.threads {
            Some(t) => meeple_game::limits::check_threads("--threads", t)?,
            None => meeple_game::limits::cores(),
        };
        if self.minutes.is_some_and(|m| !(m.is_finite() && m > 0.0)) {
            anyhow::bail!("--minutes must be a positive number of minutes");
        }
        let eval = match (self.eval_every, self.eval_minutes) {
            (Some(e), _) => Some(e),
            (None, Some(m)) if m.is_finite() && m > 0.0 => Some(Every::Minutes(m)),
            (None, Some(0.0)) => Some(Every::Never),
            (None, Some(m)) => anyhow::bail!("--eval-minutes {m}: give 0 or more minutes"),
            (None, None) => None,
        };
        Ok(RunOptions {
            resume: self.resume,
            extend: self.extend,
            minutes: self.minutes,
            games: self.games,
            steps: self.steps,
            seed: self.seed,
            threads,
            eval,
            eval_games: self.eval_games,
            eval_opening_plies: self.eval_opening_plies,
            ladder: self.ladder.clone(),
            equal_time: equal_time(&self.equal_time),
            commands: vec![command_line()],
            export: self.export.clone(),
            ..RunOptions::new(self.out(kind))
        })
    }

    /// `--out`, or `runs/KIND`.
    pub fn out(&self, kind: &str) -> PathBuf {
        self.out.clone().unwrap_or_else(|| PathBuf::from("runs").join(kind))
    }
}
