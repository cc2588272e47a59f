//! `meeple train value GAME`: a value-only network, report 004's way: from its own ε-greedy
//! one-ply games against an opponent (`--data selfplay`, the report's Algorithm 3: the ANN and
//! the CNN), or fitted to a search's values (`--data search`: MCTS_ANN, MCTS_CNN, and the
//! combined agent when the search's rollouts follow a linear agent).

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use meeple_game::{Game, limits};
use meeple_learn::metrics::{Event, Metrics};
use meeple_learn::td::TdConfig;
use meeple_learn::value::{SearchDataConfig, fit, search_data};
use meeple_nn::{NetConfig, Sidecar, Trainer};
use std::io::Write;
use std::path::PathBuf;

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
    /// Games: played by the learner (selfplay) or by the searcher (search).
    #[arg(long, default_value_t = 1000)]
    games: u64,
    /// Stop after this many minutes (selfplay).
    #[arg(long, value_name = "M")]
    minutes: Option<f64>,
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
    /// The run directory (last.safetensors and its sidecar, metrics.jsonl).
    #[arg(long, value_name = "DIR", default_value = "runs/value")]
    out: PathBuf,
    /// Continue the selfplay run in --out.
    #[arg(long)]
    resume: bool,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Threads: search games side by side, or the network's.
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

impl ValueArgs {
    pub fn game(&self) -> &String {
        &self.game
    }
}

pub fn run<G: Game>(game: &G, args: &ValueArgs) -> Result<()> {
    let threads = limits::check_threads("--threads", args.threads)?;
    let mut config = TdConfig::report(&game.spec().to_string());
    config.net = args.net.clone();
    config.train.lr = args.lr;
    config.train.huber = None;
    config.train.clip_norm = 1.0;
    config.train.weight_decay = 1e-4;
    config.seed = args.seed;
    config.threads = threads;
    config.minibatch = args.minibatch;
    if args.data == Data::Selfplay {
        config.lambda = args.lambda;
        config.epsilon = args.epsilon;
        config.epsilon_decay = args.epsilon_decay;
        config.parallel = args.parallel;
        config.batch_games = 1;
        config.opponent = (args.opponent != "self").then(|| args.opponent.clone());
        config.check()?;
        let options = meeple_learn::run::RunOptions {
            resume: args.resume,
            minutes: args.minutes,
            games: Some(args.games),
            seed: args.seed,
            threads,
            commands: vec![crate::learner::command_line()],
            ..meeple_learn::run::RunOptions::new(&args.out)
        };
        return crate::learner::drive(game, &options, |resume| {
            meeple_learn::td::TdRun::new(game.clone(), config, resume).map(|r| r.named("value"))
        });
    }
    config.check()?;
    if args.resume {
        bail!("--resume continues a selfplay run; a search run gathers its data again");
    }
    let last = args.out.join("last.safetensors");
    if last.exists() || args.out.join("metrics.jsonl").exists() {
        bail!("'{}' holds a run already: give another --out", args.out.display());
    }
    std::fs::create_dir_all(&args.out)?;
    let net = NetConfig::from_spec(&args.net, &game.observation_shape(), game.num_actions(), game.num_players(), None)?;
    let data = SearchDataConfig {
        searcher: args.searcher.clone(),
        games: usize::try_from(args.games)?,
        opening_plies: args.opening_plies,
        min_visits: args.min_visits,
        seed: args.seed,
        threads,
    };
    let bar = ProgressBar::new(args.games);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} search games {elapsed_precise}").expect("template"),
    );
    let started = std::time::Instant::now();
    let samples = search_data(game, &data, &|done| bar.set_position(done as u64))?;
    bar.finish();
    let data_seconds = started.elapsed().as_secs_f64();
    println!("{} positions from {} games in {data_seconds:.0} s", samples.len(), args.games);
    let mut trainer = Trainer::new(net, config.train.clone(), args.seed, threads);
    let mut log = std::fs::File::create(args.out.join("metrics.jsonl"))?;
    let positions = samples.len() as u64;
    let mut fail = None;
    let sidecar = |t: &Trainer, epochs: &[meeple_learn::value::Epoch]| Sidecar {
        format: meeple_nn::SIDECAR_FORMAT,
        net: t.config().clone(),
        game: game.spec().to_string(),
        step: t.step(),
        run: serde_json::json!({
            "trainer": "value",
            "data": "search",
            "search": data,
            "positions": positions,
            "data_seconds": data_seconds,
            "epochs": epochs,
            "train": config.train,
            "value_only": true,
        }),
        commands: Vec::new(),
    };
    // The network kept is the epoch with the lowest held-out loss (a search's values are few
    // and correlated: later epochs fit the training games' noise).
    let mut best = f64::INFINITY;
    let mut seen = Vec::new();
    let epochs = fit(&mut trainer, &samples, args.epochs, args.minibatch, args.holdout, args.seed, &mut |e, t| {
        seen.push(*e);
        let mut line = Metrics {
            schema: meeple_learn::metrics::SCHEMA,
            event: Event::Generation,
            trainer: "value".into(),
            generation: e.epoch as u64,
            steps: t.step(),
            episodes: args.games,
            positions,
            wall_seconds: started.elapsed().as_secs_f64(),
            trained: true,
            ..Metrics::default()
        };
        line.losses.insert("value".into(), e.train_loss);
        line.losses.insert("holdout".into(), e.holdout_loss);
        println!("epoch {}: train {:.4}, held out {:.4}", e.epoch, e.train_loss, e.holdout_loss);
        // No held-out share (NaN): every epoch is kept, the last one stays.
        let kept = e.holdout_loss.is_nan() || e.holdout_loss < best;
        let written = writeln!(log, "{}", line.to_line()).map_err(anyhow::Error::from);
        let saved = if kept {
            best = e.holdout_loss;
            t.save(&last, sidecar(t, &seen)).map_err(anyhow::Error::from)
        } else {
            Ok(())
        };
        if let Err(err) = written.and(saved) {
            fail = Some(err);
            return false;
        }
        true
    })?;
    if let Some(e) = fail {
        return Err(e);
    }
    let kept =
        epochs.iter().filter(|e| !e.holdout_loss.is_nan()).min_by(|a, b| a.holdout_loss.total_cmp(&b.holdout_loss));
    if let Some(k) = kept {
        println!("kept epoch {} (held-out loss {:.4})", k.epoch, k.holdout_loss);
    }
    println!("network in {}", last.display());
    Ok(())
}
