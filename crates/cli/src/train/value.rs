//! `meeple train value GAME`: a value-only network, report 004's way: from its own ε-greedy
//! one-ply games against an opponent (`--data selfplay`, the report's Algorithm 3: the ANN and
//! the CNN), or fitted to a search's values (`--data search`: MCTS_ANN, MCTS_CNN, and the
//! combined agent when the search's rollouts follow a linear agent).

use super::learner::{RunArgs, drive};
use anyhow::{Result, bail};
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
    /// Selfplay: the agent in the other seats (default `random`, as the report; `self` for
    /// self-play).
    #[arg(long, value_name = "SPEC")]
    opponent: Option<String>,
    /// Selfplay: the chance of a random move at the start (default 0.1).
    #[arg(long, value_name = "E")]
    epsilon: Option<f64>,
    /// Selfplay: factor on ε after each game (default 0.9995).
    #[arg(long, value_name = "F")]
    epsilon_decay: Option<f64>,
    /// Selfplay: λ of the targets (default 1: every afterstate learns the result, as the
    /// report; below 1 mixes in the network's later values).
    #[arg(long, value_name = "L")]
    lambda: Option<f64>,
    /// Selfplay: games side by side, one forward pass for all their afterstates (default 32).
    #[arg(long, value_name = "N")]
    parallel: Option<usize>,
    /// Search: the search agent that plays and values, its analysis giving values (default
    /// `mcts:iters=800`).
    #[arg(long, value_name = "SPEC")]
    searcher: Option<String>,
    /// Search: fewest visits a root move needs for its value to count (default 20).
    #[arg(long, value_name = "N")]
    min_visits: Option<u64>,
    /// Search: uniformly random plies opening each game (default 4).
    #[arg(long, value_name = "N")]
    opening_plies: Option<usize>,
    /// Search: passes over the positions (default 20).
    #[arg(long, value_name = "N")]
    epochs: Option<usize>,
    /// Search: share of the positions (the last games') held out to measure the fit
    /// (default 0.1).
    #[arg(long, value_name = "SHARE")]
    holdout: Option<f64>,
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
    // A setting of the other data source would do nothing: refused, naming it.
    let selfplay_only = [
        ("--opponent", args.opponent.is_some()),
        ("--epsilon", args.epsilon.is_some()),
        ("--epsilon-decay", args.epsilon_decay.is_some()),
        ("--lambda", args.lambda.is_some()),
        ("--parallel", args.parallel.is_some()),
    ];
    let search_only = [
        ("--searcher", args.searcher.is_some()),
        ("--min-visits", args.min_visits.is_some()),
        ("--opening-plies", args.opening_plies.is_some()),
        ("--epochs", args.epochs.is_some()),
        ("--holdout", args.holdout.is_some()),
    ];
    let (others, other) =
        if args.data == Data::Selfplay { (search_only, "search") } else { (selfplay_only, "selfplay") };
    if let Some((flag, _)) = others.iter().find(|(_, given)| *given) {
        bail!(
            "{flag} is a setting of --data {other}; this run learns from --data {}",
            if other == "search" { "selfplay" } else { "search" }
        );
    }
    if args.data == Data::Selfplay {
        let base = TdConfig::value(&game.spec().to_string());
        config.lambda = args.lambda.unwrap_or(base.lambda);
        config.epsilon = args.epsilon.unwrap_or(base.epsilon);
        config.epsilon_decay = args.epsilon_decay.unwrap_or(base.epsilon_decay);
        config.parallel = args.parallel.unwrap_or(base.parallel);
        config.batch_games = 1;
        let opponent = args.opponent.clone().unwrap_or_else(|| "random".into());
        config.opponent = (opponent != "self").then_some(opponent);
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
    let base = SearchValueConfig::new(&game.spec().to_string());
    let value = SearchValueConfig {
        net: args.net.clone(),
        data: SearchDataConfig {
            searcher: args.searcher.clone().unwrap_or(base.data.searcher),
            games: usize::try_from(games)?,
            opening_plies: args.opening_plies.unwrap_or(base.data.opening_plies),
            min_visits: args.min_visits.unwrap_or(base.data.min_visits),
            seed: args.run.seed,
            threads,
        },
        train: config.train,
        epochs: args.epochs.unwrap_or(base.epochs),
        holdout: args.holdout.unwrap_or(base.holdout),
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
