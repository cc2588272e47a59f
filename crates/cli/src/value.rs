//! `meeple train value GAME`: a value-only network, report 004's way: from its own ε-greedy
//! one-ply games against an opponent (`--data selfplay`, the report's Algorithm 3: the ANN and
//! the CNN), or fitted to a search's values (`--data search`: MCTS_ANN, MCTS_CNN, and the
//! combined agent when the search's rollouts follow a linear agent).

use crate::learner::{RunArgs, drive};
use anyhow::Result;
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use meeple_game::{Game, limits};
use meeple_learn::td::TdConfig;
use meeple_learn::value::{SearchDataConfig, SearchValueConfig, SearchValueRun};

#[derive(Clone, Copy, Debug, PartialEq, ValueEnum)]
enum Data {
    /// ε-greedy one-ply games of the network against --opponent, each chosen afterstate
    /// trained toward the game's result (report 004's Algorithm 3).
    Selfplay,
    /// Games of --searcher; each root move it visited --min-visits times, valued as the
    /// search valued it (report 004's MCTS_ANN / MCTS_CNN; its combined agent with a
    /// searcher whose rollouts follow the linear agent).
    Search,
}

#[derive(Args, Debug)]
pub struct ValueArgs {
    /// Game spec, e.g. `santorini`.
    game: String,
    /// Where the positions and targets come from.
    #[arg(long, value_enum, default_value_t = Data::Selfplay)]
    data: Data,
    /// The network: `mlp:layers=1,width=256` (report 004's ANN, the default; the value head
    /// adds its 64 units), `resnet:blocks=1,channels=16` (a small conv net, its CNN),
    /// `resnet:blocks=4,channels=32` (meeple's residual tower), `resmlp:blocks=B,width=W`.
    #[arg(long, value_name = "SPEC", default_value = "mlp:layers=1,width=256")]
    net: String,
    /// Selfplay: the agent in the other seats (`random` as the report; `self` for self-play).
    #[arg(long, default_value = "random")]
    opponent: String,
    /// Selfplay: the chance of a random move at the start.
    #[arg(long, default_value_t = 0.1)]
    epsilon: f64,
    /// Selfplay: factor on ε after each game.
    #[arg(long, default_value_t = 0.9995)]
    epsilon_decay: f64,
    /// Selfplay: λ of the targets (1: every afterstate learns the result, as the report; below
    /// 1 mixes in the network's later values).
    #[arg(long, default_value_t = 1.0)]
    lambda: f64,
    /// Selfplay: games side by side (one forward pass for all their afterstates).
    #[arg(long, default_value_t = 32)]
    parallel: usize,
    /// Search: the search agent that plays and values (its analysis must give values).
    #[arg(long, value_name = "SPEC", default_value = "mcts:iters=800")]
    searcher: String,
    /// Search: fewest visits a root move needs for its value to count.
    #[arg(long, default_value_t = 20)]
    min_visits: u64,
    /// Search: uniformly random plies opening each game.
    #[arg(long, default_value_t = 4)]
    opening_plies: usize,
    /// Search: passes over the positions.
    #[arg(long, default_value_t = 20)]
    epochs: usize,
    /// Search: share of the positions (the last games') held out to measure the fit.
    #[arg(long, default_value_t = 0.1)]
    holdout: f64,
    /// Positions per optimiser step.
    #[arg(long, default_value_t = 256)]
    minibatch: usize,
    /// AdamW's learning rate.
    #[arg(long, default_value_t = 1e-3)]
    lr: f64,
    #[command(flatten)]
    run: RunArgs,
}

impl ValueArgs {
    pub fn game(&self) -> &String {
        &self.game
    }
}

pub fn run<G: Game>(game: &G, args: &ValueArgs) -> Result<()> {
    let threads = limits::check_threads("--threads", args.run.threads)?;
    let mut config = TdConfig::report(&game.spec().to_string());
    config.net = args.net.clone();
    config.train.lr = args.lr;
    config.train.huber = None;
    config.train.clip_norm = 1.0;
    config.train.weight_decay = 1e-4;
    config.seed = args.run.seed;
    config.threads = threads;
    config.minibatch = args.minibatch;
    let out = args.run.out("value");
    let mut options = args.run.options(&out, threads, false);
    if args.data == Data::Selfplay {
        config.lambda = args.lambda;
        config.epsilon = args.epsilon;
        config.epsilon_decay = args.epsilon_decay;
        config.parallel = args.parallel;
        config.batch_games = 1;
        config.opponent = (args.opponent != "self").then(|| args.opponent.clone());
        config.check()?;
        if options.games.is_none() && options.minutes.is_none() {
            options.games = Some(DEFAULT_GAMES);
        }
        return drive(game, &options, |resume| {
            meeple_learn::td::TdRun::new(game.clone(), config, resume).map(|r| r.named("value"))
        });
    }
    config.check()?;
    // The games are the data, played before the first epoch; the epochs end the run.
    let games = options.games.take().unwrap_or(DEFAULT_GAMES);
    let value = SearchValueConfig {
        net: args.net.clone(),
        data: SearchDataConfig {
            searcher: args.searcher.clone(),
            games: usize::try_from(games)?,
            opening_plies: args.opening_plies,
            min_visits: args.min_visits,
            seed: args.run.seed,
            threads,
        },
        train: config.train,
        epochs: args.epochs,
        holdout: args.holdout,
        minibatch: args.minibatch,
    };
    let bar = ProgressBar::new(games);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} search games {elapsed_precise}").expect("template"),
    );
    let shown = bar.clone();
    drive(game, &options, |resume| {
        SearchValueRun::new(game.clone(), value, resume, Box::new(move |done| shown.set_position(done as u64)))
    })?;
    bar.finish_and_clear();
    Ok(())
}

/// Games of a value run given neither --games nor --minutes.
const DEFAULT_GAMES: u64 = 1000;
