//! `meeple train az GAME`: an AlphaZero training run with a progress line, periodic evaluation
//! against a fixed ladder through the arena, Ctrl-C (or TERM, HUP) to stop with a checkpoint,
//! and `--resume`.

use anyhow::{Result, anyhow, bail};
use clap::{Args, ValueEnum};
use meeple_game::Game;
use meeple_learn::az::train::AzConfig;
use meeple_learn::flags::Given;
use meeple_learn::trainers::{Az, Trainer};
use std::path::PathBuf;

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
    let config = Az.settings(game, &settings.json(), &mut options)?;
    let out = options.out.clone();
    let agent = format!("az:model={{model}},sims={}", args.eval_sims.unwrap_or(64));
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
    super::learner::drive(game, &options, |resume| {
        Az.make(game, config.clone(), &out, resume).map(|r| r.evaluated_as(&agent))
    })
}
