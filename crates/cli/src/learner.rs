//! The terminal's side of every training run: the one Ctrl-C handler (the first stops the run
//! after its round, with a checkpoint; a second ends the process), a progress line, and the
//! call into `meeple_learn::run` that owns the loop, the run directory and resume.

use anyhow::{Result, anyhow};
use indicatif::{ProgressBar, ProgressStyle};
use meeple_game::Game;
use meeple_learn::LearnError;
use meeple_learn::ladder::Evaluation;
use meeple_learn::run::{Hooks, Learner, Progress, Round, RunOptions, run};
use std::path::Path;
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
    let file = meeple_learn::run::read_run(&options.out)?;
    println!(
        "{} games, {} steps; checkpoint in {}",
        progress.episodes,
        progress.steps,
        options.out.join(&file.last).display()
    );
    Ok(())
}

/// `--equal-time`'s value: an agent spec, or "none".
pub fn equal_time(spec: &str) -> Option<String> {
    (!spec.trim().eq_ignore_ascii_case("none")).then(|| spec.trim().to_string())
}

/// The command line this process was started with, kept in the run's `run.json`.
pub fn command_line() -> String {
    std::env::args().map(|a| if a.contains(' ') { format!("'{a}'") } else { a }).collect::<Vec<_>>().join(" ")
}
