//! The terminal's side of every training run: the one stop handler for Ctrl-C, TERM and HUP
//! (the first stops the run after its round, with a checkpoint; a second ends the process), a progress line, and the
//! call into `meeple_learn::run` that owns the loop, the run directory and resume.

use anyhow::{Result, anyhow};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use meeple_game::{Game, limits};
use meeple_learn::LearnError;
use meeple_learn::flags::{Given, Settings};
use meeple_learn::ladder::Evaluation;
use meeple_learn::metrics::{Event, Metrics};
use meeple_learn::run::{Every, Hooks, Learner, Progress, Round, RunOptions, run};
use meeple_learn::trainers::{Trainer, train_with};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

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

/// A progress line on the terminal (a logged line now and then where there is no terminal),
/// the last evaluation beside it, and the stop flag.
pub struct Terminal {
    pub bar: ProgressBar,
    stop: Arc<AtomicBool>,
    /// The last evaluation in words (a resumed run's from its metrics until it evaluates).
    last_eval: String,
    /// The round in words ("gen 12", "1200 games") the next evaluation is of.
    at: String,
    /// Rounds played since this process started.
    rounds: u64,
    /// When a round line was last logged without a terminal.
    logged: Option<Instant>,
}

/// Without a terminal (a run in the background), a round's line is logged at most this often.
const LOG_EVERY: Duration = Duration::from_secs(20);

impl Terminal {
    /// The display of a run in `options.out` (showing a resumed run's last evaluation).
    pub fn new(options: &RunOptions) -> Result<Self> {
        let bar = ProgressBar::new_spinner();
        bar.set_style(ProgressStyle::with_template("{elapsed_precise} {msg}").expect("template"));
        let last_eval = if options.resume {
            last_evaluation(&meeple_learn::run::Layout { root: options.out.clone() }.metrics())
        } else {
            String::new()
        };
        Ok(Terminal { bar, stop: stop_flag()?, last_eval, at: String::new(), rounds: 0, logged: None })
    }

    /// Whether the run was asked to stop (Ctrl-C, TERM or HUP).
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Where a run stands after a round: AlphaZero's generation where the round names one.
fn round_label(p: &Progress, round: &Round) -> String {
    match round.get("generation") {
        Some(g) => format!("gen {g}"),
        None => format!("{} games", p.episodes),
    }
}

/// The status line after a round: where the run stands, the round's figures (a round that
/// trained nothing shows no losses, not zeros), and the last evaluation.
fn status_line(p: &Progress, round: &Round, last_eval: &str) -> String {
    let mut line =
        format!("{} | {} games {} positions | steps {}", round_label(p, round), p.episodes, p.decisions, p.steps);
    let figures = round.summary();
    if !figures.is_empty() {
        line += &format!(" | {figures}");
    }
    if !last_eval.is_empty() {
        line += &format!(" | {last_eval}");
    }
    line
}

impl Hooks for Terminal {
    fn round(&mut self, p: &Progress, round: &Round) {
        self.rounds += 1;
        self.at = round_label(p, round);
        let line = status_line(p, round, &self.last_eval);
        if self.bar.is_hidden() {
            if self.logged.is_none_or(|t| t.elapsed() >= LOG_EVERY) {
                eprintln!("{:.1} min {line}", p.seconds / 60.0);
                self.logged = Some(Instant::now());
            }
        } else {
            self.bar.set_message(line);
            self.bar.tick();
        }
    }

    fn evaluating(&mut self, _p: &Progress) {
        self.bar.set_message(format!("{}: evaluating against the ladder", self.at));
    }

    fn evaluated(&mut self, p: &Progress, evaluation: &Evaluation) {
        self.last_eval = format!("eval {}: {}", self.at, evaluation_line(evaluation));
        let line = format!("{:.1} min {}", p.seconds / 60.0, self.last_eval);
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
        let eval = if self.last_eval.is_empty() { String::new() } else { format!(" | {}", self.last_eval) };
        self.bar.set_message(format!("{text}{eval}"));
        self.bar.tick();
    }
}

/// The summary of the last evaluation in a run's metrics, so that a resumed run shows it
/// before its own first one; empty where there is none (or the file cannot be read: the
/// trainer itself reports that).
fn last_evaluation(metrics: &Path) -> String {
    let mut last = None;
    let read = limits::read_lines(metrics, limits::MAX_RECORD_LINE, "metrics file", |line| {
        if let Ok(Metrics { event: Event::Evaluation, generation, evaluation: Some(e), .. }) =
            Metrics::from_line(line.text)
        {
            last = Some(format!("eval {generation}: {}", evaluation_line(&e)));
        }
        Ok(())
    });
    read.ok().and(last).unwrap_or_default()
}

/// Runs a trainer through the one loop with a progress line, then says where its network is.
pub fn drive<G: Game, L: Learner>(
    game: &G,
    options: &RunOptions,
    make: impl FnOnce(Option<&Path>) -> Result<L, LearnError>,
) -> Result<()> {
    let mut terminal = Terminal::new(options)?;
    let progress = run(game, options, make, &mut terminal)?;
    terminal.bar.finish_and_clear();
    finished(&progress, options, &terminal)
}

/// Runs the trainer `kind` by name (as Python's `meeple.train` does), its settings those the
/// user gave over the trainer's defaults, with a progress line; then says where its network is.
pub fn drive_named<G: Game>(game: &G, kind: &str, settings: &serde_json::Value, options: &RunOptions) -> Result<()> {
    let mut terminal = Terminal::new(options)?;
    let progress = meeple_learn::trainers::train(game, kind, settings, options, &mut terminal)?;
    terminal.bar.finish_and_clear();
    finished(&progress, options, &terminal)
}

fn finished(progress: &Progress, options: &RunOptions, terminal: &Terminal) -> Result<()> {
    let file = meeple_learn::run::read_run(&options.out)?;
    let stopped = terminal.stopped();
    if terminal.rounds == 0 && options.resume && !stopped {
        eprintln!(
            "nothing left to do: the run already has {:.1} min, {} games and {} steps; give --extend with a new \
             --minutes, --games or --steps to go on",
            progress.seconds / 60.0,
            progress.episodes,
            progress.steps
        );
    }
    println!(
        "{} games, {} positions, {} steps in {:.1} min; checkpoint in {}{}",
        progress.episodes,
        progress.decisions,
        progress.steps,
        progress.seconds / 60.0,
        options.out.join(&file.last).display(),
        if stopped { " (stopped; go on with the same command and --resume)" } else { "" }
    );
    let metrics = meeple_learn::run::Layout { root: options.out.clone() }.metrics();
    println!("metrics {}; plot them with meeple plot {}", metrics.display(), metrics.display());
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

    /// Runs `trainer` with the settings given, in `--out` or `runs/NAME`.
    pub fn run<G: Game, R: Trainer<Config = T>>(&self, game: &G, trainer: &R) -> Result<()> {
        let options = self.run.options(trainer.kind().name)?;
        let mut terminal = Terminal::new(&options)?;
        let progress = train_with(trainer, game, &self.settings.json(), &options, &mut terminal)?;
        terminal.bar.finish_and_clear();
        finished(&progress, &options, &terminal)
    }

    /// Runs the trainer `kind` by name, for a command whose flags serve several trainers
    /// (`value`'s two data sources).
    pub fn run_named<G: Game>(&self, game: &G, kind: &str) -> Result<()> {
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
    /// Evaluation opponents (repeat; default: random, mcts:iters=100, mcts:iters=1000 and the game's
    /// own ladder agents).
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
            Some(t) => limits::check_threads("--threads", t)?,
            None => limits::cores(),
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

#[cfg(test)]
mod tests {
    use super::{Progress, Round, last_evaluation, status_line};

    #[test]
    fn a_resumed_run_shows_its_last_evaluation() {
        let dir = std::env::temp_dir().join(format!("meeple-last-eval-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let metrics = dir.join("metrics.jsonl");
        assert_eq!(last_evaluation(&metrics), "", "no file, no evaluation");
        let lines = [
            r#"{"event":"evaluation","generation":10,"wall_seconds":60,"opponents":[{"opponent":"random","score":0.9}]}"#,
            r#"{"event":"generation","generation":11}"#,
            r#"{"event":"evaluation","generation":20,"wall_seconds":120,"opponents":[{"opponent":"random","score":1.0},{"opponent":"mcts:iters=100","score":0.6}]}"#,
            r#"{"event":"generation","generation":21}"#,
            // The typed schema's evaluation line, as the trainer writes it now.
            r#"{"schema":1,"event":"evaluation","generation":25,"wall_seconds":150,"evaluation":{"opponents":[{"opponent":"random","score":0.95,"ci":[0.8,0.99]}]}}"#,
            "not json",
        ];
        std::fs::write(&metrics, lines.join("\n")).unwrap();
        assert_eq!(last_evaluation(&metrics), "eval 25: random 95% [80, 99]");
        std::fs::write(&metrics, lines[..4].join("\n")).unwrap();
        assert!(last_evaluation(&metrics).starts_with("eval 20: random 100% "), "{}", last_evaluation(&metrics));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_round_that_did_not_train_shows_no_losses() {
        let p = Progress { episodes: 640, decisions: 9000, steps: 300, seconds: 60.0 };
        let mut round = Round::default();
        round.loss("policy", 1.25);
        round.stat("generation", 7.0);
        let line = status_line(&p, &round, "");
        assert!(line.starts_with("gen 7 | 640 games 9000 positions | steps 300 | policy loss 1.2500"), "{line}");
        let mut cut = Round::default();
        cut.figure("entropy", 0.0);
        let line = status_line(&p, &cut, "eval 5: random 100%");
        assert!(!line.contains("loss") && line.ends_with("| eval 5: random 100%"), "{line}");
    }
}
