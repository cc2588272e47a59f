//! `meeple train az GAME`: an AlphaZero training run with a progress line, periodic evaluation
//! against a fixed ladder through the arena, Ctrl-C (or TERM, HUP) to stop with a checkpoint,
//! and `--resume`.

use anyhow::{Result, anyhow, bail};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use meeple_game::{Game, limits};
use meeple_learn::az::train::{AzConfig, AzRun, GenerationMetrics, Generations, Hooks, RunDir, read_progress};
use meeple_learn::flags::Given;
use meeple_learn::ladder::Evaluation;
use meeple_learn::metrics::{Event, Metrics};
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
    /// Simulations of the evaluated agent (default 64).
    #[arg(long, value_name = "N")]
    eval_sims: Option<u32>,
    #[command(flatten)]
    run: super::learner::RunArgs,
}

pub fn run<G: Game>(game: &G, args: &AzArgs) -> Result<()> {
    if args.eval_sims == Some(0) {
        bail!("--eval-sims must be at least 1");
    }
    let run = &args.run;
    if run.minutes.is_none() && run.steps.is_none() && run.games.is_none() {
        bail!("give --minutes M, --games N or --steps N: a training run needs an end");
    }
    let mut options = run.options("az")?;
    if args.eval_sims.is_some() && options.eval == Some(meeple_learn::run::Every::Never) {
        bail!(
            "--eval-sims sets the evaluated agent's search, and --eval-every 0 evaluates nothing: give one or neither"
        );
    }
    let threads = options.threads;
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
    let config = meeple_learn::az::train::az_config(game, &settings.json(), options.seed, threads)?;
    if options.ladder.is_empty() && options.eval != Some(meeple_learn::run::Every::Never) {
        options.ladder = meeple_learn::ladder::default_opponents(game);
    }
    // A generation's checkpoint is written when it ends, as external players need it.
    options.save_seconds = 0.0;
    let out = options.out.clone();
    let agent = format!("az:model={{model}},sims={}", args.eval_sims.unwrap_or(64));
    // The one stop handler every trainer shares (a second signal ends the process).
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
        out.display(),
        if options.resume { " (resuming)" } else { "" }
    );
    let mut hooks = CliHooks {
        bar: bar.clone(),
        stop: stop.clone(),
        last_eval: if options.resume {
            last_evaluation(&RunDir { root: out.clone() }.metrics())
        } else {
            String::new()
        },
        generations: 0,
    };
    meeple_learn::run::run(
        game,
        &options,
        |resume| AzRun::new(game.clone(), config.clone(), &out, resume).map(|r| r.evaluated_as(&agent)),
        &mut Generations::new(&mut hooks),
    )?;
    let progress = read_progress(&out)?;
    bar.finish_and_clear();
    if hooks.generations == 0 && !stop.load(Ordering::SeqCst) {
        eprintln!(
            "nothing left to do: the run already has {:.1} min and {} steps; give --extend with a new --minutes or --steps to go on",
            progress.seconds / 60.0,
            progress.steps
        );
    }
    let run = RunDir { root: out.clone() };
    println!(
        "{} generations, {} games, {} positions, {} steps in {:.1} min{}; model {}",
        progress.generation,
        progress.games,
        progress.positions,
        progress.steps,
        progress.seconds / 60.0,
        if stop.load(Ordering::SeqCst) { " (stopped; go on with the same command and --resume)" } else { "" },
        run.last().display()
    );
    println!("metrics {}; plot them with meeple plot {}", run.metrics().display(), run.metrics().display());
    println!("{}", super::learner::run_summary(&meeple_learn::run::read_run(&out)?, &out));
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
            Some(_) => super::learner::evaluation_line(e),
            None => format!("eval gen {generation}: {}", super::learner::evaluation_line(e)),
        };
        if self.bar.is_hidden() {
            eprintln!("{}", self.last_eval);
        }
    }

    fn should_stop(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::{last_evaluation, status_line};
    use meeple_learn::az::train::GenerationMetrics;

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
