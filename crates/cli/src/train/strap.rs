//! `meeple train rootstrap|treestrap|tdleaf GAME`: the bootstrap learners of a linear evaluator
//! (RootStrap and TreeStrap, Veness et al. 2009; TD-Leaf(λ), Baxter et al. 2000), by self-play
//! with meeple's alpha-beta, through the one run loop: the weights are the checkpoint
//! (`ckpt/last.txt`, written after every game), one metrics line a game, `--resume`.

use super::learner::{RunArgs, drive};
use anyhow::{Result, anyhow, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use meeple_arena::{MatchConfig, run_match};
use meeple_game::Game;
use meeple_learn::flags::Given;
use meeple_learn::flags::with_settings;
use meeple_learn::strap::{Strap, StrapConfig, StrapRun, weights_file};

#[derive(Args, Debug, Clone)]
pub struct StrapArgs {
    /// Game spec, e.g. `santorini`.
    game: String,
    #[command(flatten)]
    settings: Given<StrapConfig>,
    /// Two-player games: train this many random starts (seeds --seed, --seed + 1, ...), each
    /// a run of its own in --out (`DIR/start1`, ...), then play a round robin among them at
    /// the training depth and write the one that scores most to `DIR/chosen.txt` (the round
    /// robin in `DIR/select.json`). For learners whose
    /// result depends on where they start (TreeStrap's centre-distance weight on Santorini):
    /// the choice is made by the learned weights' own games, none against other weights.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    starts: u64,
    /// Games each pair of starts plays in the round robin that picks among them (paired
    /// seats, --opening-plies random plies first).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(2..=100_000))]
    select_games: u64,
    #[command(flatten)]
    run: RunArgs,
}

impl StrapArgs {
    pub fn game(&self) -> &String {
        &self.game
    }
}

/// Self-play games of a run given neither --games nor --minutes (the report's runs were longer).
const DEFAULT_GAMES: u64 = 100;

/// The bootstrap's settings from the flags (one definition each: `StrapConfig::check` refuses
/// those the chosen learner never reads).
fn config(strap: Strap, args: &StrapArgs, seed: u64) -> Result<StrapConfig> {
    let c = with_settings(&StrapConfig { seed, ..StrapConfig::new(strap, "linear8") }, &args.settings.json())?;
    c.check()?;
    Ok(c)
}

pub fn run<G: Game>(game: &G, strap: Strap, args: &StrapArgs) -> Result<()> {
    let out = args.run.out(strap.name());
    let mut options = args.run.options(strap.name())?;
    // A game takes seconds: keep a checkpoint after every one, as the weights file always was.
    options.save_seconds = 0.0;
    if options.games.is_none() && options.minutes.is_none() {
        options.games = Some(DEFAULT_GAMES);
    }
    if args.starts == 1 {
        let c = config(strap, args, args.run.seed)?;
        return drive(game, &options, |resume| StrapRun::new(game.clone(), c, resume));
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
    if args.settings.has("init") {
        bail!("--starts trains from random weights (one seed a start); --init gives them all one start");
    }
    if options.export.is_some() {
        bail!(
            "--export writes one run's checkpoint; with --starts the chosen start is in {}",
            out.join("chosen.txt").display()
        );
    }
    let chosen = out.join("chosen.txt");
    if chosen.exists() {
        bail!("'{}' holds a chosen start already: give another --out", out.display());
    }
    let stop = super::learner::stop_flag()?;
    let mut files = Vec::new();
    for k in 0..args.starts {
        let dir = out.join(format!("start{}", k + 1));
        let c = config(strap, args, args.run.seed + k)?;
        let mut one = options.clone();
        one.out = dir.clone();
        one.resume = args.run.resume && dir.join("run.json").exists();
        let finished =
            one.resume && meeple_learn::run::read_run(&dir)?.progress.episodes >= options.games.unwrap_or(u64::MAX);
        println!("start {} of {} (--seed {}): {}", k + 1, args.starts, args.run.seed + k, dir.display());
        if !finished {
            drive(game, &one, |resume| StrapRun::new(game.clone(), c, resume))?;
        }
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            println!("stopped before every start was trained; --resume goes on");
            return Ok(());
        }
        files.push(dir.join("ckpt/last.txt"));
    }
    let first = config(strap, args, args.run.seed)?;
    let agent = meeple_learn::strap::agent_spec(&first);
    let specs: Vec<String> = files.iter().map(|f| agent.replace("{model}", &f.display().to_string())).collect();
    let mut match_config = MatchConfig::new(specs.clone(), args.select_games as usize, args.run.seed);
    match_config.opening_plies = first.opening_plies;
    let total = meeple_arena::total_games(2, &match_config);
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} round-robin games {elapsed_precise}").expect("template"),
    );
    let (summary, _) = run_match(game, &meeple_learn::extension(), &match_config, |_| bar.inc(1))?;
    bar.finish();
    // Each start's score, found by its spec; the highest wins, the earlier start on a tie.
    let scores: Vec<f64> = specs
        .iter()
        .map(|s| summary.agents.iter().find(|a| &a.spec == s).map(|a| a.score))
        .collect::<Option<_>>()
        .ok_or_else(|| anyhow!("the round robin's summary lacks a start"))?;
    let mut best = 0;
    for (i, &score) in scores.iter().enumerate() {
        println!(
            "  start {} (--seed {}): {:.1}% of its round-robin games",
            i + 1,
            args.run.seed + i as u64,
            100.0 * score
        );
        if score > scores[best] {
            best = i;
        }
    }
    let weights = meeple_learn::strap::read_weights(&files[best])?;
    let made_by = format!(
        "{}\n# start {} of {} (--seed {}, {}), chosen by a round robin among the starts ({} games a pair, --seed {}): {}",
        super::learner::command_line(),
        best + 1,
        args.starts,
        args.run.seed + best as u64,
        files[best].display(),
        args.select_games,
        args.run.seed,
        scores.iter().map(|s| format!("{:.1}%", 100.0 * s)).collect::<Vec<_>>().join(" "),
    );
    let plays = agent.replace("{model}", &chosen.display().to_string());
    let eval = plays.split_once("eval=").map_or(plays.as_str(), |(_, e)| e).to_string();
    meeple_arena::files::write_atomic(&chosen, weights_file(&weights, &made_by, &eval).as_bytes())?;
    let json = out.join("select.json");
    meeple_arena::files::write_atomic(&json, serde_json::to_string_pretty(&summary)?.as_bytes())?;
    println!(
        "start {} chosen; weights in {} (the round robin in {}); play them with eval={eval}",
        best + 1,
        chosen.display(),
        json.display()
    );
    Ok(())
}
