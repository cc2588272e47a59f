use anyhow::{Result, bail};
use clap::Args;
use meeple_game::{Agent, Budget};
use meeple_game::{Game, State, Turn, rng_from_seed, sample_chance};
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
    }
    Ok(())
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
        decision.chance_outcomes(&mut outcomes);
        decision.apply_unchecked(sample_chance(&outcomes, &mut rng));
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
    })
}
