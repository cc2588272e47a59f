//! `meeple train rootstrap|treestrap|tdleaf GAME`: the bootstrap learners of a linear evaluator
//! (RootStrap and TreeStrap, Veness et al. 2009; TD-Leaf(λ), Baxter et al. 2000), by self-play
//! with meeple's alpha-beta, through the one run loop: the weights are the checkpoint
//! (`ckpt/last.txt`, written after every game), one metrics line a game, `--resume`.

use super::learner::{RunArgs, drive};
use anyhow::Result;
use clap::Args;
use meeple_game::Game;
use meeple_learn::flags::Given;
use meeple_learn::strap::{Strap, StrapConfig};
use meeple_learn::trainers::Trainer;

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

pub fn run<G: Game>(game: &G, strap: Strap, args: &StrapArgs) -> Result<()> {
    if !args.select_games.is_multiple_of(2) {
        anyhow::bail!("--select-games {}: give an even number (each pair plays both seatings)", args.select_games);
    }
    let mut options = args.run.options(strap.name())?;
    let first = strap.settings(game, &args.settings.json(), &mut options)?;
    if args.starts == 1 {
        return drive(game, &options, |resume| strap.make(game, first, &options.out, resume));
    }
    let mut terminal = super::learner::Terminal::new(&options)?;
    let chosen =
        meeple_learn::strap::train_starts(game, &first, &options, args.starts, args.select_games, &mut terminal)?;
    terminal.bar.finish_and_clear();
    let Some(chosen) = chosen else {
        println!("stopped before every start was trained; --resume goes on");
        return Ok(());
    };
    for (i, score) in chosen.scores.iter().enumerate() {
        println!(
            "  start {} (--seed {}): {:.1}% of its round-robin games",
            i + 1,
            args.run.seed + i as u64,
            100.0 * score
        );
    }
    let agent = meeple_learn::strap::agent_spec(&first).replace("{model}", &chosen.weights.display().to_string());
    println!(
        "start {} chosen; weights in {} (the round robin in {}); play them with eval={}",
        chosen.best + 1,
        chosen.weights.display(),
        chosen.select.display(),
        agent.split_once("eval=").map_or(agent.as_str(), |(_, e)| e)
    );
    Ok(())
}
