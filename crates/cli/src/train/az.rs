//! `meeple train az GAME`: an AlphaZero training run with a progress line, periodic evaluation
//! against a fixed ladder through the arena, Ctrl-C to stop with a checkpoint, and `--resume`.

use anyhow::{Result, anyhow, bail};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use meeple_game::{Game, limits};
use meeple_learn::flags::Given;
use meeple_learn::ladder::Evaluation;
use meeple_learn::metrics::{Event, Metrics};
use meeple_learn::train::{AzConfig, AzRun, GenerationMetrics, Generations, Hooks, RunDir, read_progress};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, ValueEnum)]
enum SelfplayArg {
    /// Self-play here, a generation at a time, between training steps.
    Local,
    /// Self-play elsewhere: players (`python -m meeple.distributed train az`, or anything
    /// calling `_meeple.play_external`) move whole shards into --shards DIR, playing the newest
    /// ckpt/last.safetensors; this process trains on them and publishes checkpoints.
    External,
}

#[derive(Args, Debug)]
pub struct AzArgs {
    /// Game spec, e.g. `connect4`.
    pub(super) game: String,
    #[command(flatten)]
    settings: Given<AzConfig>,
    /// Where self-play happens.
    #[arg(long, value_enum, default_value_t = SelfplayArg::Local)]
    selfplay: SelfplayArg,
    /// With --selfplay external: the directory the players write shards into (made if missing).
    #[arg(long, value_name = "DIR")]
    shards: Option<PathBuf>,
    /// Stop after this many minutes of training (this session and earlier ones together).
    #[arg(long, value_name = "M")]
    minutes: Option<f64>,
    /// Stop after this many optimiser steps.
    #[arg(long, value_name = "N")]
    steps: Option<u64>,
    /// The run directory (run.json, metrics.jsonl, selfplay/, ckpt/).
    #[arg(long, value_name = "DIR", default_value = "runs/az")]
    out: PathBuf,
    /// Continue the run in --out from its last checkpoint.
    #[arg(long)]
    resume: bool,
    /// Seed of the whole run: the same seed and one thread give the same run.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Threads for self-play (one worker a thread, each searching and evaluating its own share
    /// of the games), training and evaluation (default: all cores).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    threads: Option<u64>,
    /// Games against each ladder opponent per evaluation, a multiple of the seatings (default:
    /// 20 rounded up to one: 20 for two players, 24 for three or four).
    #[arg(long)]
    eval_games: Option<usize>,
    /// Simulations of the evaluated agent.
    #[arg(long, default_value_t = 64)]
    eval_sims: u32,
    /// Uniformly random plies that open each evaluation game (the same for both seatings of a
    /// seed): without them a deterministic pair, like the network against alpha-beta, plays
    /// the same game for every seed.
    #[arg(long, default_value_t = 2)]
    eval_opening_plies: usize,
    /// Ladder opponents (repeat; default: random, mcts:iters=100, mcts:iters=1000, and
    /// alpha-beta with the game's evaluator where it has one).
    #[arg(long = "ladder", value_name = "SPEC")]
    opponents: Vec<String>,
    /// An opponent given the evaluated agent's own mean time a move in each evaluation (an
    /// agent spec without time=), so the curves show strength at equal cost; "none" leaves it out.
    #[arg(long, value_name = "SPEC", default_value = meeple_learn::ladder::DEFAULT_EQUAL_TIME)]
    equal_time: String,
}

pub fn run<G: Game>(game: &G, args: &AzArgs) -> Result<()> {
    let threads = match args.threads {
        Some(t) => limits::check_threads("--threads", usize::try_from(t).unwrap_or(usize::MAX))?,
        None => limits::cores(),
    };
    if args.eval_sims == 0 {
        bail!("--eval-sims must be at least 1");
    }
    if args.minutes.is_some_and(|m| !(m.is_finite() && m > 0.0)) {
        bail!("--minutes must be a positive number of minutes");
    }
    if args.minutes.is_none() && args.steps.is_none() {
        bail!("give --minutes M or --steps N: a training run needs an end");
    }
    let mut settings = args.settings.clone();
    match (args.selfplay, &args.shards) {
        (SelfplayArg::Local, None) => {}
        (SelfplayArg::Local, Some(_)) => bail!("--shards is for --selfplay external"),
        (SelfplayArg::External, None) => {
            bail!("--selfplay external needs --shards DIR: where the players write shards")
        }
        (SelfplayArg::External, Some(dir)) => {
            std::fs::create_dir_all(dir).map_err(|e| anyhow!("cannot make --shards '{}': {e}", dir.display()))?;
            settings.set("external", serde_json::json!(dir));
        }
    }
    let config = meeple_learn::train::az_config(game, &settings.json(), args.seed, threads)?;
    let options = meeple_learn::run::RunOptions {
        resume: args.resume,
        minutes: args.minutes,
        steps: args.steps,
        seed: args.seed,
        threads,
        eval_every: Some(config.eval_every),
        eval_games: args.eval_games,
        eval_opening_plies: Some(args.eval_opening_plies),
        ladder: if args.opponents.is_empty() {
            meeple_learn::ladder::default_opponents(game)
        } else {
            args.opponents.clone()
        },
        equal_time: super::learner::equal_time(&args.equal_time),
        // A generation's checkpoint is written when it ends, as external players need it.
        save_seconds: 0.0,
        commands: vec![super::learner::command_line()],
        ..meeple_learn::run::RunOptions::new(&args.out)
    };
    let agent = format!("az:model={{model}},sims={}", args.eval_sims);
    // The one Ctrl-C handler every trainer shares (a second press ends the process).
    let stop = super::learner::stop_flag()?;
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("{spinner} {elapsed} {msg}").expect("valid template"));
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    eprintln!(
        "training az on {} with {} ({} simulations, {:?} root), {} threads, into {}{}",
        game.spec(),
        config.net,
        config.selfplay.search.sims,
        config.selfplay.search.root,
        threads,
        args.out.display(),
        if args.resume { " (resuming)" } else { "" }
    );
    let mut hooks = CliHooks {
        bar: bar.clone(),
        stop: stop.clone(),
        last_eval: if args.resume {
            last_evaluation(&RunDir { root: args.out.clone() }.metrics())
        } else {
            String::new()
        },
        generations: 0,
    };
    meeple_learn::run::run(
        game,
        &options,
        |resume| AzRun::new(game.clone(), config.clone(), &args.out, resume).map(|r| r.evaluated_as(&agent)),
        &mut Generations::new(&mut hooks),
    )?;
    let progress = read_progress(&args.out)?;
    bar.finish_and_clear();
    if hooks.generations == 0 && !stop.load(Ordering::SeqCst) {
        eprintln!(
            "nothing left to do: the run already has {:.1} min and {} steps; raise --minutes or --steps to go on",
            progress.seconds / 60.0,
            progress.steps
        );
    }
    let run = RunDir { root: args.out.clone() };
    println!(
        "{} generations, {} games, {} positions, {} steps in {:.1} min{}; model {}",
        progress.generation,
        progress.games,
        progress.positions,
        progress.steps,
        progress.seconds / 60.0,
        if stop.load(Ordering::SeqCst) { " (stopped by Ctrl-C; continue with --resume)" } else { "" },
        run.last().display()
    );
    println!("metrics {}; plot them with meeple plot {}", run.metrics().display(), run.metrics().display());
    Ok(())
}

/// The status line's summary of one evaluation: each opponent and the score against it.
fn eval_summary<'a>(generation: u64, scores: impl Iterator<Item = (&'a str, f64)>) -> String {
    let scores: Vec<String> = scores.map(|(name, score)| format!("{name} {:.0}%", 100.0 * score)).collect();
    format!("eval gen {generation}: {}", scores.join(", "))
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
            last = Some(eval_summary(generation, e.opponents.iter().map(|r| (r.opponent.as_str(), r.score))));
        }
        Ok(())
    });
    read.ok().and(last).unwrap_or_default()
}

struct CliHooks {
    bar: ProgressBar,
    stop: Arc<AtomicBool>,
    last_eval: String,
    /// Generations played in this session.
    generations: u64,
}

/// The status line after a generation. A generation cut short before it trained (the time ran
/// out during its self-play) has no losses to show, not zeros.
fn status_line(m: &GenerationMetrics, last_eval: &str) -> String {
    let loss = match (m.trained(), m.ownership_loss > 0.0) {
        (false, _) => "not trained".to_string(),
        (true, false) => format!("loss {:.3}+{:.3}", m.policy_loss, m.value_loss),
        (true, true) => format!("loss {:.3}+{:.3}+{:.3}", m.policy_loss, m.value_loss, m.ownership_loss),
    };
    format!(
        "gen {} | {} games {} positions | {:.0} pos/s {:.0} evals/s | steps {} {loss} | {last_eval}",
        m.generation, m.games, m.positions, m.positions_per_second, m.evaluations_per_second, m.steps,
    )
}

impl Hooks for CliHooks {
    fn generation(&mut self, m: &GenerationMetrics) {
        self.generations += 1;
        let line = status_line(m, &self.last_eval);
        // Without a terminal (a run in the background) the spinner draws nothing: log a line.
        if self.bar.is_hidden() {
            eprintln!("{:.1} min {line}", m.wall_seconds / 60.0);
        } else {
            self.bar.set_message(line);
        }
    }

    fn working(&self, text: &str) {
        self.bar.set_message(format!("{text} | {}", self.last_eval));
    }

    fn evaluating(&mut self, generation: u64) {
        self.bar.set_message(format!("generation {generation}: evaluating against the ladder"));
    }

    fn evaluated(&mut self, generation: u64, e: &Evaluation) {
        self.last_eval = match &e.error {
            Some(why) => format!("evaluation failed: {why}"),
            None => eval_summary(generation, e.opponents.iter().map(|r| (r.opponent.as_str(), r.score))),
        };
    }

    fn should_stop(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::{last_evaluation, status_line};
    use meeple_learn::train::GenerationMetrics;

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
            r#"{"schema":1,"event":"evaluation","generation":25,"wall_seconds":150,"evaluation":{"opponents":[{"opponent":"random","score":0.95}]}}"#,
            "not json",
        ];
        std::fs::write(&metrics, lines.join("\n")).unwrap();
        assert_eq!(last_evaluation(&metrics), "eval gen 25: random 95%");
        std::fs::write(&metrics, lines[..4].join("\n")).unwrap();
        assert_eq!(last_evaluation(&metrics), "eval gen 20: random 100%, mcts:iters=100 60%");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_generation_that_did_not_train_shows_no_losses() {
        let mut m =
            GenerationMetrics { generation: 7, steps: 300, policy_loss: 1.25, value_loss: 0.5, ..Default::default() };
        m.samples_per_second = 900.0;
        assert!(status_line(&m, "").contains("steps 300 loss 1.250+0.500"), "{}", status_line(&m, ""));
        m.samples_per_second = 0.0;
        let line = status_line(&m, "eval gen 5: random 100%");
        assert!(line.contains("steps 300 not trained | eval gen 5"), "{line}");
    }
}
