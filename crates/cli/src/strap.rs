//! `meeple train rootstrap|treestrap GAME`: report 004's bootstrap learners for a linear
//! evaluator, by self-play with meeple's alpha-beta. The weights file is rewritten whole after
//! every game (so Ctrl-C or a kill leaves the last game's weights) and one metrics line per game
//! is appended; `--resume` continues from both.

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use meeple_arena::{MatchConfig, run_match};
use meeple_game::Game;
use meeple_learn::strap::{Strap, StrapConfig, play_game, random_weights, weights_file};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

#[derive(Args, Debug, Clone)]
pub struct StrapArgs {
    /// Game spec, e.g. `santorini`.
    game: String,
    /// The linear evaluator whose weights are learned (one the game names, e.g. `linear8` or
    /// `linear22` for Santorini).
    #[arg(long, default_value = "linear8")]
    eval: String,
    /// Search depth of the self-play alpha-beta (the report: 3).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=12))]
    depth: u32,
    /// Every second game searches at this depth instead of --depth. An evaluator whose weights
    /// depend on the side to move (Santorini's `tempo16`) needs an odd and an even depth: TD-Leaf
    /// credits the principal variation's leaf, whose side to move the depth's parity sets.
    #[arg(long, value_name = "DEPTH", value_parser = clap::value_parser!(u32).range(1..=12))]
    odd_depth: Option<u32>,
    /// Self-play games.
    #[arg(long, default_value_t = 100)]
    games: u64,
    /// Stop after this many minutes (this session).
    #[arg(long, value_name = "M")]
    minutes: Option<f64>,
    /// Step size of the weights (summed over a search's nodes for TreeStrap).
    #[arg(long, default_value_t = 1e-4)]
    lr: f64,
    /// The target of a position the search proved won (lost: its negation); the hand weights'
    /// values stay within a few units.
    #[arg(long, default_value_t = 10.0)]
    win_value: f64,
    /// TreeStrap: update the nodes the search proved won or lost too (off: only the root's
    /// proven value teaches; the search never asks the evaluator about a proven position).
    #[arg(long)]
    proven_nodes: bool,
    /// Search by plain minimax, no pruning (report 004's TreeStrap(minimax): every node's value
    /// exact, at the cost of many more nodes a move).
    #[arg(long)]
    minimax: bool,
    /// TreeStrap: only nodes searched at least this many plies deep teach (1: every interior
    /// node, as the paper; shallow nodes' values are little more than the evaluator's own).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=12))]
    min_depth: u32,
    /// Two-player games: every node also teaches the other player's view, the negated value
    /// (a zero-sum game). Pins the offset an evaluator has when its features sum to a constant
    /// (Santorini's worker levels), which bootstrapped targets otherwise leave free to drift.
    #[arg(long)]
    zero_sum: bool,
    /// Two-player games: read the evaluator from the side to move, in training and in play
    /// (`eval=(mover:eval=(E:weights=FILE))`): the mover's features times the weights, negated
    /// for the other player, so values carry whose turn it is.
    #[arg(long)]
    mover: bool,
    /// Two-player games, TreeStrap: each node teaches only the view of the player who just moved
    /// there (with --zero-sum: every node, from that side), the positions a depth-limited search
    /// asks its evaluator about; the side to move's coming move is then never credited to the
    /// features it is about to leave.
    #[arg(long)]
    after_move: bool,
    /// TD-Leaf: λ of the temporal differences (KnightCap: 0.7).
    #[arg(long, default_value_t = 0.7)]
    lambda: f64,
    /// Uniformly random plies that open each game, so self-play sees varied positions.
    #[arg(long, default_value_t = 4)]
    opening_plies: usize,
    /// Seed of the initial weights (uniform in [-1, 1], as the report) and of the games.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Start from these weights instead (a file this command wrote, or numbers: 0,2,4,-1,...;
    /// a first number below zero is taken as numbers, not as an option).
    #[arg(long, value_name = "FILE|NUMBERS", allow_hyphen_values = true)]
    init: Option<String>,
    /// The weights file (`eval=(linear8:weights=FILE)` loads it); metrics go to FILE.metrics.jsonl.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Continue the run in --out.
    #[arg(long)]
    resume: bool,
    /// Replace an existing --out.
    #[arg(long, conflicts_with = "resume")]
    force: bool,
    /// Two-player games: train this many random starts (seeds --seed, --seed + 1, ...), each
    /// into its own file beside --out (`w.start1.txt`, ...), then play a round robin among them
    /// at the training depth and write the one that scores most to --out. For learners whose
    /// result depends on where they start (TreeStrap's centre-distance weight on Santorini):
    /// the choice is made by the learned weights' own games, none against other weights.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    starts: u64,
    /// Games each pair of starts plays in the round robin that picks among them (paired
    /// seats, --opening-plies random plies first).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(2..=100_000))]
    select_games: u64,
}

impl StrapArgs {
    pub fn game(&self) -> &String {
        &self.game
    }
}

/// Weights inline (`0,2,4,-1,...`) or from a file this command wrote, read the way `weights=`
/// reads them.
fn parse_weights(given: &str) -> Result<Vec<f64>> {
    meeple_game::access::numbers(given)?
        .ok_or_else(|| anyhow!("'{given}' holds something other than comma-separated numbers"))
}

pub fn run<G: Game>(game: &G, strap: Strap, args: &StrapArgs) -> Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        // Ctrl-C stops after the game being played; its weights are then written.
        let _ = ctrlc::set_handler(move || stop.store(true, Ordering::Relaxed));
    }
    let started = Instant::now();
    if args.starts == 1 {
        train_start(game, strap, args, &stop, started)?;
        return Ok(());
    }
    if game.num_players() != 2 {
        bail!(
            "--starts picks among its starts by a round robin, which needs a two-player game; {} has {} players",
            game.spec(),
            game.num_players()
        );
    }
    if !args.select_games.is_multiple_of(2) {
        bail!("--select-games {}: give an even number (each pair plays both seatings)", args.select_games);
    }
    if args.init.is_some() {
        bail!("--starts trains from random weights (one seed a start); --init gives them all one start");
    }
    meeple_arena::files::check_new_output(&args.out, "weights file", args.resume || args.force, true)
        .map_err(|e| anyhow!(e))?;
    let mut files = Vec::new();
    for k in 0..args.starts {
        let file = start_path(&args.out, k + 1);
        let resume = args.resume && file.exists();
        let one = StrapArgs {
            resume,
            force: args.force || (args.resume && !resume),
            out: file.clone(),
            seed: args.seed + k,
            starts: 1,
            ..args.clone()
        };
        println!("start {} of {} (--seed {}): {}", k + 1, args.starts, args.seed + k, file.display());
        if !train_start(game, strap, &one, &stop, started)? {
            println!("stopped before every start was trained; --resume goes on");
            return Ok(());
        }
        files.push(file);
    }
    let specs: Vec<String> =
        files.iter().map(|f| format!("alphabeta:depth={},eval={}", args.depth, plays_as(args, f))).collect();
    let mut config = MatchConfig::new(specs.clone(), args.select_games as usize, args.seed);
    config.opening_plies = args.opening_plies;
    let total = meeple_arena::total_games(2, &config);
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} round-robin games {elapsed_precise}").expect("template"),
    );
    let (summary, _) = run_match(game, &meeple_learn::extension(), &config, |_| bar.inc(1))?;
    bar.finish();
    // Each start's score, found by its spec; the highest wins, the earlier start on a tie.
    let scores: Vec<f64> = specs
        .iter()
        .map(|s| summary.agents.iter().find(|a| &a.spec == s).map(|a| a.score))
        .collect::<Option<_>>()
        .ok_or_else(|| anyhow!("the round robin's summary lacks a start"))?;
    let mut best = 0;
    for (i, &score) in scores.iter().enumerate() {
        println!("  start {} (--seed {}): {:.1}% of its round-robin games", i + 1, args.seed + i as u64, 100.0 * score);
        if score > scores[best] {
            best = i;
        }
    }
    let weights = parse_weights(&files[best].display().to_string())?;
    let made_by = format!(
        "{}\n# start {} of {} (--seed {}, {}), chosen by a round robin among the starts ({} games a pair, --seed {}): {}",
        command(strap, args),
        best + 1,
        args.starts,
        args.seed + best as u64,
        files[best].display(),
        args.select_games,
        args.seed,
        scores.iter().map(|s| format!("{:.1}%", 100.0 * s)).collect::<Vec<_>>().join(" "),
    );
    meeple_arena::files::write_atomic(
        &args.out,
        weights_file(&weights, &made_by, &plays_as(args, &args.out)).as_bytes(),
    )?;
    let json = PathBuf::from(format!("{}.select.json", args.out.display()));
    meeple_arena::files::write_atomic(&json, serde_json::to_string_pretty(&summary)?.as_bytes())?;
    println!(
        "start {} chosen; weights in {} (the round robin in {}); play them with eval={}",
        best + 1,
        args.out.display(),
        json.display(),
        plays_as(args, &args.out)
    );
    Ok(())
}

/// Where start `k` (from 1) of `--starts` keeps its weights: beside `out`, `.startK` before
/// its extension.
fn start_path(out: &std::path::Path, k: u64) -> PathBuf {
    let stem = out.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = match out.extension() {
        Some(ext) => format!("{stem}.start{k}.{}", ext.to_string_lossy()),
        None => format!("{stem}.start{k}"),
    };
    out.with_file_name(name)
}

/// How the weights in `file` are played: read from the side to move where they were learned so.
fn plays_as(args: &StrapArgs, file: &std::path::Path) -> String {
    if args.mover {
        format!("(mover:eval=({}:weights={}))", args.eval, file.display())
    } else {
        format!("({}:weights={})", args.eval, file.display())
    }
}

/// The command `args` stand for (for one start of `--starts`: the command that remakes it alone).
fn command(strap: Strap, args: &StrapArgs) -> String {
    format!(
        "meeple train {} {} --eval {} --depth {}{} --games {} --lr {} --win-value {}{}{}{}{}{} --min-depth {} --lambda {} --opening-plies {} --seed {}{}{}{} --out {}",
        strap.name(),
        args.game,
        args.eval,
        args.depth,
        args.odd_depth.map(|d| format!(" --odd-depth {d}")).unwrap_or_default(),
        args.games,
        args.lr,
        args.win_value,
        if args.proven_nodes { " --proven-nodes" } else { "" },
        if args.minimax { " --minimax" } else { "" },
        if args.zero_sum { " --zero-sum" } else { "" },
        if args.mover { " --mover" } else { "" },
        if args.after_move { " --after-move" } else { "" },
        args.min_depth,
        args.lambda,
        args.opening_plies,
        args.seed,
        args.minutes.map(|m| format!(" --minutes {m}")).unwrap_or_default(),
        // Quoted as the shell needs it: a file name or numbers with commas and minus signs.
        args.init.as_ref().map(|i| format!(" --init='{i}'")).unwrap_or_default(),
        if args.starts > 1 {
            format!(" --starts {} --select-games {}", args.starts, args.select_games)
        } else {
            String::new()
        },
        args.out.display()
    )
}

/// Trains one start into `args.out` (seeded by `args.seed`); whether it reached its games
/// (false: stopped by Ctrl-C or --minutes, counted from `started`).
fn train_start<G: Game>(game: &G, strap: Strap, args: &StrapArgs, stop: &AtomicBool, started: Instant) -> Result<bool> {
    let (seed, out) = (args.seed, args.out.as_path());
    if !(args.lr.is_finite() && args.lr > 0.0) {
        bail!("--lr {} must be a positive number", args.lr);
    }
    if !(0.0..=1.0).contains(&args.lambda) {
        bail!("--lambda {} must be within 0..=1", args.lambda);
    }
    let eval = meeple_search::make_evaluator(game, &args.eval)?;
    let n = eval.weights().len();
    if n == 0 {
        bail!("evaluator '{}' of {} is not linear (it exposes no features and weights)", args.eval, game.spec());
    }
    let config = StrapConfig {
        strap,
        eval: args.eval.clone(),
        depth: args.depth,
        odd_depth: args.odd_depth,
        learning_rate: args.lr,
        opening_plies: args.opening_plies,
        seed,
        win_value: args.win_value,
        proven_nodes: args.proven_nodes,
        minimax: args.minimax,
        lambda: args.lambda,
        min_depth: args.min_depth,
        zero_sum: args.zero_sum,
        mover: args.mover,
        after_move: args.after_move,
    };
    let loads = plays_as(args, out);
    let metrics = PathBuf::from(format!("{}.metrics.jsonl", out.display()));
    meeple_arena::files::check_new_output(out, "weights file", args.resume || args.force, true)
        .map_err(|e| anyhow!(e))?;
    let (mut weights, mut done) = if args.resume {
        let weights = parse_weights(&out.display().to_string())
            .with_context(|| format!("cannot resume from '{}'", out.display()))?;
        let lines = std::fs::read_to_string(&metrics).unwrap_or_default();
        (weights, lines.lines().filter(|l| !l.trim().is_empty()).count() as u64)
    } else {
        let w = match &args.init {
            Some(i) => parse_weights(i)?,
            None => random_weights(n, seed),
        };
        if metrics.exists() {
            std::fs::remove_file(&metrics)?;
        }
        (w, 0)
    };
    if weights.len() != n {
        bail!("{} weights given; {} takes {n}", weights.len(), args.eval);
    }
    let command = command(strap, args);
    let bar = ProgressBar::new(args.games);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} games {elapsed_precise} {msg}").expect("template"),
    );
    bar.set_position(done);
    let mut log = std::fs::OpenOptions::new().create(true).append(true).open(&metrics)?;
    while done < args.games && !stop.load(Ordering::Relaxed) {
        if args.minutes.is_some_and(|m| started.elapsed().as_secs_f64() >= m * 60.0) {
            break;
        }
        let t = Instant::now();
        let g = play_game(game, &config, &mut weights, done)?;
        if weights.iter().any(|w| !w.is_finite()) {
            bail!("the weights diverged at game {done}: give a smaller --lr");
        }
        done += 1;
        meeple_arena::files::write_atomic(out, weights_file(&weights, &command, &loads).as_bytes())?;
        let line = serde_json::json!({
            "schema": 1, "event": "generation", "trainer": strap.name(), "generation": done, "episodes": done,
            "positions": g.nodes, "wall_seconds": t.elapsed().as_secs_f64(),
            "losses": { "search_mse": g.mse }, "figures": { "plies": g.plies },
            "weights": weights,
        });
        writeln!(log, "{line}")?;
        bar.set_position(done);
        bar.set_message(format!("mse {:.4}", g.mse));
    }
    bar.finish();
    println!(
        "{done} games; weights in {} ({}); play them with eval={loads}",
        out.display(),
        weights.iter().map(|w| format!("{w:.4}")).collect::<Vec<_>>().join(","),
    );
    Ok(done >= args.games)
}
