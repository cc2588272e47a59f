use anyhow::{Result, bail};
use clap::Args;
use meeple_game::{Agent, Budget};
use meeple_game::{Game, State, Turn, rng_from_seed};
use meeple_games::with_game;
use meeple_search::{AlphaBeta, AlphaBetaConfig, Mcts, MctsConfig, random_playout};
use serde::Serialize;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Game spec, e.g. `connect4`.
    game: String,
    /// How long to measure each of the three figures, in seconds.
    #[arg(long, default_value_t = 2.0, allow_negative_numbers = true)]
    seconds: f64,
    /// Print one JSON object instead of a sentence.
    #[arg(long)]
    json: bool,
    /// Seed of the random playouts.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Also measure this trained network: evaluations/s at batch 1 and 64, self-play and
    /// training speed, GFLOP/s beside the speed of the products alone (the convolution kernel's
    /// and faer's), so a figure shows how close to the machine it is.
    #[arg(long, value_name = "FILE", conflicts_with = "net")]
    model: Option<std::path::PathBuf>,
    /// Also measure a fresh network of this shape (`default`, `resnet:blocks=4,channels=32`, ...).
    #[arg(long, value_name = "SPEC")]
    net: Option<String>,
    /// Threads for the network figures (default: all cores).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    threads: Option<u64>,
}

/// Speed of a network on a game.
#[derive(Serialize)]
struct NetBench {
    net: String,
    threads: usize,
    /// Multiply-adds of one evaluation.
    macs_per_eval: u64,
    evals_per_sec_batch1: f64,
    evals_per_sec_batch64: f64,
    selfplay_games_per_sec: f64,
    selfplay_positions_per_sec: f64,
    selfplay_evals_per_sec: f64,
    selfplay_sims: u32,
    train_samples_per_sec: f64,
    /// Training's arithmetic rate: a step's forward and backward products are three times the
    /// forward pass's multiply-adds, two flops each.
    train_gflops: f64,
    gflops_batch64: f64,
    /// faer's product on a 1,024-square (the heads' and dense layers' products).
    matmul_peak_gflops: f64,
    /// The in-place convolution kernel (the towers' 3x3 convolutions) on a 3x3 convolution's
    /// product at 32 channels, where this machine's vector unit takes 32 columns.
    conv_kernel_peak_gflops: Option<f64>,
}

#[derive(Serialize)]
struct BenchResult {
    game: String,
    random_games_per_sec: f64,
    plies_per_sec: f64,
    games: u64,
    plies: u64,
    seconds: f64,
    /// MCTS from the initial state, one random rollout per iteration, decisions of
    /// `mcts_iters_per_decision` iterations each, no solver, no tree reuse.
    mcts_iters_per_sec: f64,
    mcts_iters_per_decision: u64,
    /// Alpha-beta (zero evaluator, 16 MB table) iterative deepening from the initial state.
    alphabeta_nodes_per_sec: f64,
    alphabeta_depth: u32,
    threads: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    network: Option<NetBench>,
}

pub fn run(args: &BenchArgs) -> Result<()> {
    if !(args.seconds.is_finite() && args.seconds > 0.0 && args.seconds <= 3600.0) {
        bail!("--seconds must be a number of seconds in (0, 3600], got {}", args.seconds);
    }
    let result = with_game!(args.game.as_str(), |game| bench(&game, args))??;
    if args.json {
        println!("{}", serde_json::to_string(&result).expect("bench result serialises"));
    } else {
        println!("{} (1 thread, {:.1} s per figure):", result.game, args.seconds);
        println!(
            "  random playouts  {:>12.0} games/s  {:>12.0} plies/s",
            result.random_games_per_sec, result.plies_per_sec
        );
        println!(
            "  mcts             {:>12.0} iterations/s (random rollouts, {} per decision)",
            result.mcts_iters_per_sec, result.mcts_iters_per_decision
        );
        println!(
            "  alphabeta        {:>12.0} nodes/s (iterative deepening reached depth {})",
            result.alphabeta_nodes_per_sec, result.alphabeta_depth
        );
        if let Some(n) = &result.network {
            println!(
                "network {} ({} threads, {:.2} M multiply-adds per evaluation):",
                n.net,
                n.threads,
                n.macs_per_eval as f64 / 1e6
            );
            let peak = match n.conv_kernel_peak_gflops {
                Some(c) => format!("products alone: convolution kernel {c:.1}, faer {:.1}", n.matmul_peak_gflops),
                None => format!("products alone: faer {:.1}", n.matmul_peak_gflops),
            };
            println!(
                "  evaluations      {:>12.0}/s at batch 1  {:>10.0}/s at batch 64  ({:.1} GFLOP/s; {peak})",
                n.evals_per_sec_batch1, n.evals_per_sec_batch64, n.gflops_batch64
            );
            println!(
                "  self-play        {:>12.2} games/s  {:>10.0} positions/s  {:>10.0} evaluations/s ({} simulations)",
                n.selfplay_games_per_sec, n.selfplay_positions_per_sec, n.selfplay_evals_per_sec, n.selfplay_sims
            );
            println!(
                "  training         {:>12.0} samples/s (batch 256, {:.1} GFLOP/s; {peak})",
                n.train_samples_per_sec, n.train_gflops
            );
        }
    }
    Ok(())
}

/// Measures a network on `game`: inference, self-play and training speed.
fn bench_network<G: Game>(game: &G, args: &BenchArgs) -> Result<Option<NetBench>> {
    let threads = match args.threads {
        Some(t) => meeple_game::limits::check_threads("--threads", t as usize)?,
        None => meeple_game::limits::cores(),
    };
    let net = match (&args.model, &args.net) {
        (Some(path), _) => {
            let (net, _) = meeple_learn::agents::load_trained_for(game, path, threads)?;
            net
        }
        (None, Some(spec)) => {
            let spec = if spec == "default" {
                meeple_learn::az::train::default_config(game, 64, 0, threads).net
            } else {
                spec.clone()
            };
            meeple_learn::az::train::fresh_network(game, &spec, args.seed, threads).map_err(|e| anyhow::anyhow!(e))?
        }
        (None, None) => return Ok(None),
    };
    let config = net.config().clone();
    let seconds = args.seconds;
    let per = |batch| meeple_learn::az::train::evaluations_per_second(game, &net, batch, seconds);
    let (b1, b64) = (per(1).map_err(|e| anyhow::anyhow!(e))?, per(64).map_err(|e| anyhow::anyhow!(e))?);
    // Self-play: 64 games in flight, the default search, for about `seconds`.
    let mut sp = meeple_learn::az::train::default_config(game, 64, args.seed, threads).selfplay;
    sp.in_flight = 64;
    let start = Instant::now();
    let (mut games, mut positions, mut evals, mut round) = (0u64, 0u64, 0u64, 0u64);
    while start.elapsed().as_secs_f64() < seconds || games == 0 {
        let (_, stats) = meeple_learn::self_play_until(game, &net, &sp, 64, round, threads, &|| false, |_| {})
            .map_err(|e| anyhow::anyhow!(e))?;
        games += stats.games;
        positions += stats.positions;
        evals += stats.evaluations;
        round += 1;
    }
    let sp_seconds = start.elapsed().as_secs_f64();
    // Training: steps on random positions of random games.
    let mut trainer = meeple_nn::Trainer::new(config.clone(), meeple_nn::TrainConfig::default(), args.seed, threads);
    let batch = random_batch(game, &config, 256, args.seed);
    let start = Instant::now();
    let mut steps = 0u64;
    while start.elapsed().as_secs_f64() < seconds || steps == 0 {
        trainer.train_step(&batch).map_err(|e| anyhow::anyhow!(e))?;
        steps += 1;
    }
    let train = steps as f64 * 256.0 / start.elapsed().as_secs_f64();
    Ok(Some(NetBench {
        net: config.spec(),
        threads,
        macs_per_eval: config.macs(),
        evals_per_sec_batch1: b1,
        evals_per_sec_batch64: b64,
        selfplay_games_per_sec: games as f64 / sp_seconds,
        selfplay_positions_per_sec: positions as f64 / sp_seconds,
        selfplay_evals_per_sec: evals as f64 / sp_seconds,
        selfplay_sims: sp.search.sims,
        train_samples_per_sec: train,
        train_gflops: train * config.macs() as f64 * 6.0 / 1e9,
        gflops_batch64: b64 * config.macs() as f64 * 2.0 / 1e9,
        matmul_peak_gflops: meeple_nn::matmul_gflops(1024, threads, seconds.min(2.0)),
        conv_kernel_peak_gflops: meeple_nn::conv_kernel_gflops(threads, seconds.min(2.0)),
    }))
}

/// A training batch of positions from random play, uniform policy targets, value 0.5 (and, for
/// a network with an ownership head, each position's current ownership; with a score head, a
/// margin of 0).
fn random_batch<G: Game>(game: &G, config: &meeple_nn::NetConfig, size: usize, seed: u64) -> meeple_nn::Batch {
    let mut rng = rng_from_seed(seed);
    let (mut legal, mut outcomes, mut obs, mut own) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let a = config.actions;
    let mut batch = meeple_nn::Batch { size, ..Default::default() };
    let mut state = game.initial_state();
    while batch.policy_weight.len() < size {
        match state.turn() {
            Turn::Terminal => state = game.initial_state(),
            Turn::Chance => {
                state.apply_unchecked(meeple_game::draw_chance(&state, &mut outcomes, &mut rng));
            }
            Turn::Player(p) => {
                state.observation(p, &mut obs);
                state.legal_actions(&mut legal);
                batch.obs.extend_from_slice(&obs);
                let mut mask = vec![0.0; a];
                for &x in &legal {
                    mask[x as usize] = 1.0;
                }
                batch.policy.extend(mask.iter().map(|m| m / legal.len() as f32));
                batch.legal.extend(mask);
                batch.policy_weight.push(1.0);
                batch.value.extend(std::iter::repeat_n(0.5, config.seats));
                if config.ownership {
                    // The position's own ownership as the target: what matters here is the work.
                    let cells = config.ownership_cells();
                    let known = state.ownership(p, &mut own) && own.len() == cells;
                    batch.ownership.extend((0..cells).map(|c| if known { own[c] } else { 0.0 }));
                    batch.ownership_weight.push(if known { 1.0 } else { 0.0 });
                }
                if config.score {
                    batch.score.push(0.0);
                    batch.score_weight.push(1.0);
                }
                state.apply_unchecked(state.random_action(&mut rng, &mut legal));
            }
        }
    }
    batch
}

const MCTS_ITERS: u64 = 10_000;

fn bench<G: Game>(game: &G, args: &BenchArgs) -> Result<BenchResult> {
    let mut rng = rng_from_seed(args.seed);
    let (mut legal, mut outcomes) = (Vec::new(), Vec::new());
    let initial = game.initial_state();
    let (mut games, mut plies) = (0u64, 0u64);
    let start = Instant::now();
    let elapsed = loop {
        // Check the clock every 256 games so timing costs nothing measurable.
        for _ in 0..256 {
            let mut state = initial.clone();
            plies += random_playout(&mut state, &mut rng, &mut legal, &mut outcomes);
            std::hint::black_box(&state);
        }
        games += 256;
        let t = start.elapsed().as_secs_f64();
        if t >= args.seconds {
            break t;
        }
    };

    // Games that open with chance (dealing cards) are searched from their first decision.
    let mut decision = initial.clone();
    while decision.turn() == Turn::Chance {
        decision.apply_unchecked(meeple_game::draw_chance(&decision, &mut outcomes, &mut rng));
    }
    let initial = decision;

    // MCTS: repeated decisions from the initial state, as an engine would make them.
    let spec = format!("mcts:iters={MCTS_ITERS},solver=false,reuse=false");
    let mut mcts = Mcts::new(game, MctsConfig::from_spec(&spec.parse()?)?, spec, args.seed)?;
    let (mut iters, start) = (0u64, Instant::now());
    while start.elapsed().as_secs_f64() < args.seconds {
        mcts.act(&initial, &Budget::UNLIMITED)?;
        iters += mcts.report().iterations;
    }
    let mcts_iters_per_sec = iters as f64 / start.elapsed().as_secs_f64();

    let spec = format!("alphabeta:time={}ms", (args.seconds * 1000.0) as u64);
    let mut ab = AlphaBeta::new(game, AlphaBetaConfig::from_spec(&spec.parse()?)?, args.seed)?;
    ab.act(&initial, &Budget::UNLIMITED)?;
    let report = ab.report();

    Ok(BenchResult {
        game: game.spec().to_string(),
        random_games_per_sec: games as f64 / elapsed,
        plies_per_sec: plies as f64 / elapsed,
        games,
        plies,
        seconds: elapsed,
        mcts_iters_per_sec,
        mcts_iters_per_decision: MCTS_ITERS,
        alphabeta_nodes_per_sec: report.nodes as f64 / report.seconds.max(1e-9),
        alphabeta_depth: report.depth,
        threads: 1,
        network: bench_network(game, args)?,
    })
}
