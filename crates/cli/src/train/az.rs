//! `meeple train az GAME`: an AlphaZero training run with a progress line, periodic evaluation
//! against a fixed ladder through the arena, Ctrl-C to stop with a checkpoint, and `--resume`.

use anyhow::{Result, anyhow, bail};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use meeple_game::{Game, State, limits};
use meeple_learn::Root;
use meeple_learn::ladder::Evaluation;
use meeple_learn::metrics::{Event, Metrics};
use meeple_learn::train::{AzRun, GenerationMetrics, Generations, Hooks, RunDir, default_config, read_progress};
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

#[derive(Clone, Copy, Debug, PartialEq, ValueEnum)]
enum RootArg {
    /// Gumbel root with sequential halving (Danihelka et al. 2022): sound with few simulations.
    Gumbel,
    /// PUCT with Dirichlet noise (AlphaZero).
    Puct,
}

#[derive(Args, Debug)]
pub struct AzArgs {
    /// Game spec, e.g. `connect4`.
    pub(super) game: String,
    /// The network: `resnet:blocks=B,channels=C` (board planes) or `mlp:layers=L,width=W`
    /// (default resnet:blocks=4,channels=32 for board games, mlp:layers=2,width=256 otherwise).
    /// A tower takes `head=dense|planes`: `dense` (the default) has one weight row per action
    /// id; `planes`, where the game's actions are placements on its board (Cathedral), reads
    /// the policy off convolution planes. `ownership=true` adds an auxiliary head trained to
    /// say who holds each board cell at the game's end (games that say so: cathedral,
    /// connect4, tictactoe); `score=true` one trained toward the final score margin (any
    /// trunk; games whose scores say by how much: cathedral, catan, sagrada).
    /// `policy_filters=P` and `value_filters=V` set the planes of the dense policy head's and
    /// the value head's 1x1 convolutions (2 and 1 by default).
    #[arg(long, value_name = "SPEC")]
    net: Option<String>,
    /// Simulations per full self-play move.
    #[arg(long, default_value_t = 64)]
    sims: u32,
    /// Root policy of the self-play search.
    #[arg(long, value_enum, default_value_t = RootArg::Gumbel)]
    root: RootArg,
    /// With --root puct: KataGo's forced playouts and policy target pruning, K of each root
    /// child's quota sqrt(K x prior x visits) (KataGo uses 2); 0 leaves them out.
    #[arg(long, value_name = "K", default_value_t = 0.0)]
    forced_playouts: f32,
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
    /// Self-play games per generation.
    #[arg(long, default_value_t = 256)]
    games: usize,
    /// Self-play games in flight at once (their leaves share one forward pass); at most --games.
    #[arg(long, default_value_t = 128)]
    in_flight: usize,
    /// Share of self-play games (0 to 1) that open with 1 to --random-opening-plies uniformly
    /// random moves, so the network also learns the untidy positions its own play avoids.
    #[arg(long, value_name = "P", default_value_t = 0.0)]
    random_opening_share: f64,
    /// Most random moves opening such a game.
    #[arg(long, value_name = "N", default_value_t = 8)]
    random_opening_plies: u32,
    /// Positions per training batch.
    #[arg(long, default_value_t = 256)]
    batch: usize,
    /// Positions in the replay window.
    #[arg(long, default_value_t = 100_000)]
    window: usize,
    /// Training samples drawn per new self-play position: each generation trains
    /// new positions x reuse / batch steps. Higher trains more on each game (more steps an
    /// hour, fewer games).
    #[arg(long, value_name = "R", default_value_t = 4.0)]
    reuse: f64,
    /// The value target's share of the game's result; the rest is the search's root value at
    /// the position (1: the result alone, as AlphaZero; 0: the search's value alone).
    #[arg(long, value_name = "SHARE", default_value_t = 0.5)]
    value_mix: f64,
    /// Make that search value a short-term one (KataGo): the root values of the position and of
    /// the game's later decisions, weighted (1 - L) L^k k decisions ahead, the rest on the
    /// result; 0 (the default) is the position's own root value, 1 the result alone.
    #[arg(long, value_name = "L", default_value_t = 0.0)]
    value_lambda: f64,
    /// Generations over which the result's share of the value target grows from 0 (the
    /// search's value alone: early results say little about the positions that led to them)
    /// to --value-mix; 0 (the default) starts at --value-mix.
    #[arg(long, value_name = "G", default_value_t = 0)]
    value_mix_warmup: u64,
    /// Expert iteration's start: an agent spec (say `ismcts:iters=300`) that plays the first
    /// --teacher-generations generations' games in every seat instead of self-play; the
    /// network learns its visit shares (or its moves, for agents that report no visits) and the
    /// games' results, then goes on from its own searches.
    #[arg(long, value_name = "SPEC")]
    teacher: Option<String>,
    /// Generations the --teacher plays.
    #[arg(long, value_name = "G", default_value_t = 0)]
    teacher_generations: u64,
    /// After those generations, the share of every generation's games the --teacher still plays
    /// (expert iteration kept going, so self-play cannot wash its policy out); 0 (the default):
    /// self-play alone.
    #[arg(long, value_name = "SHARE", default_value_t = 0.0)]
    teacher_share: f64,
    /// The share of the game's result, in the value target, given to the final score margin
    /// rather than the win or loss: each seat's 0.5 + 0.5 x its lead over the best other seat on
    /// the game's score scale, clamped to 0..1 (games with scores: cathedral, catan, sagrada). 0
    /// (the default): win or loss alone.
    #[arg(long, value_name = "SHARE", default_value_t = 0.0)]
    value_score: f64,
    /// Peak learning rate.
    #[arg(long, default_value_t = 2e-3)]
    lr: f64,
    /// Evaluate (and keep a checkpoint) every this many generations; 0 never. A resumed run may
    /// change it.
    #[arg(long, default_value_t = 5)]
    eval_every: u64,
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
    if args.sims == 0 || args.eval_sims == 0 {
        bail!("--sims and --eval-sims must be at least 1");
    }
    if args.minutes.is_some_and(|m| !(m.is_finite() && m > 0.0)) {
        bail!("--minutes must be a positive number of minutes");
    }
    if args.minutes.is_none() && args.steps.is_none() {
        bail!("give --minutes M or --steps N: a training run needs an end");
    }
    for (what, n, max) in [
        ("--games", args.games, 65_536),
        ("--in-flight", args.in_flight, 4096),
        ("--batch", args.batch, 4096),
        ("--window", args.window, 5_000_000),
    ] {
        if n == 0 || n > max {
            bail!("{what} {n}: give 1 to {max}");
        }
    }
    if !(0.0..=1.0).contains(&args.random_opening_share) {
        bail!("--random-opening-share {}: give a share from 0 to 1", args.random_opening_share);
    }
    if !(args.reuse > 0.0 && args.reuse <= 64.0) {
        bail!("--reuse {}: give a number above 0 and at most 64", args.reuse);
    }
    if !(0.0..=1.0).contains(&args.value_mix) {
        bail!("--value-mix {}: give a share from 0 to 1", args.value_mix);
    }
    if !(0.0..=1.0).contains(&args.value_lambda) {
        bail!("--value-lambda {}: give a weight from 0 to 1", args.value_lambda);
    }
    if !(0.0..=1.0).contains(&args.value_score) {
        bail!("--value-score {}: give a share from 0 to 1", args.value_score);
    }
    if args.value_score > 0.0 && game.initial_state().score_scale().is_none() {
        bail!(
            "--value-score {}: {} has no score margin; the games with one are cathedral, catan and sagrada",
            args.value_score,
            game.spec()
        );
    }
    if !(0.0..=1.0).contains(&args.teacher_share) {
        bail!("--teacher-share {}: give a share from 0 to 1", args.teacher_share);
    }
    if args.teacher_share > 0.0 && args.teacher.is_none() {
        bail!("--teacher-share needs --teacher SPEC: the agent that plays those games");
    }
    if args.value_mix_warmup > 1_000_000 {
        bail!("--value-mix-warmup {}: give 0 (off) to 1000000 generations", args.value_mix_warmup);
    }
    if !(0.0..=100.0).contains(&args.forced_playouts) {
        bail!("--forced-playouts {}: give K from 0 (off) to 100; KataGo uses 2", args.forced_playouts);
    }
    if args.forced_playouts > 0.0 && args.root != RootArg::Puct {
        bail!("--forced-playouts is for --root puct: the Gumbel root plans its own visits");
    }
    if args.random_opening_share > 0.0 && !(1..=1000).contains(&args.random_opening_plies) {
        bail!("--random-opening-plies {}: give 1 to 1000", args.random_opening_plies);
    }
    match (&args.teacher, args.teacher_generations) {
        (None, 0) => {}
        (None, _) => bail!("--teacher-generations needs --teacher SPEC: the agent that plays them"),
        (Some(t), 0) => bail!("--teacher '{t}' needs --teacher-generations G: how many generations it plays"),
        (Some(_), g) if g > 1_000_000 => bail!("--teacher-generations {g}: give 1 to 1000000"),
        (Some(t), _) => {
            if args.selfplay == SelfplayArg::External {
                bail!("--teacher plays its games here; with --selfplay external the players play them all");
            }
            // A wrong spec is refused now, not an hour into a run.
            meeple_learn::make_agent(game, t, 0).map_err(|e| anyhow!("--teacher '{t}': {e}"))?;
        }
    }
    let mut config = default_config(game, args.sims, args.seed, threads);
    config.teacher = args.teacher.clone();
    config.teacher_generations = args.teacher_generations;
    config.teacher_share = args.teacher_share;
    config.value_score = args.value_score;
    if let Some(net) = &args.net {
        config.net = net.clone();
    }
    // Check the network spec against the game before anything starts.
    meeple_learn::train::fresh_network(game, &config.net, 0, 1).map_err(|e| anyhow!(e))?;
    config.selfplay.search.root = match args.root {
        RootArg::Gumbel => Root::Gumbel,
        RootArg::Puct => Root::Puct,
    };
    config.selfplay.search.forced_playouts = args.forced_playouts;
    config.games_per_generation = args.games;
    config.selfplay.in_flight = args.in_flight.min(args.games);
    config.selfplay.random_opening_share = args.random_opening_share;
    config.selfplay.random_opening_plies = if args.random_opening_share > 0.0 { args.random_opening_plies } else { 0 };
    config.batch = args.batch;
    config.window = args.window;
    config.reuse = args.reuse;
    config.value_mix = args.value_mix;
    config.value_lambda = args.value_lambda;
    config.value_mix_warmup = args.value_mix_warmup;
    config.min_window = config.min_window.min(args.window);
    config.train.lr = args.lr;
    config.eval_every = args.eval_every;
    config.external = match (args.selfplay, &args.shards) {
        (SelfplayArg::Local, None) => None,
        (SelfplayArg::Local, Some(_)) => bail!("--shards is for --selfplay external"),
        (SelfplayArg::External, None) => {
            bail!("--selfplay external needs --shards DIR: where the players write shards")
        }
        (SelfplayArg::External, Some(dir)) => {
            std::fs::create_dir_all(dir).map_err(|e| anyhow!("cannot make --shards '{}': {e}", dir.display()))?;
            Some(dir.clone())
        }
    };
    let options = meeple_learn::run::RunOptions {
        resume: args.resume,
        minutes: args.minutes,
        steps: args.steps,
        seed: args.seed,
        threads,
        eval_every: Some(args.eval_every),
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
        args.sims,
        args.root,
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
