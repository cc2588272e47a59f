use anyhow::{Result, bail};
use clap::Args;
use meeple_game::{Game, rng_from_seed};
use meeple_games::with_game;
use meeple_search::random_playout;
use serde::Serialize;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Game spec, e.g. `connect4`.
    game: String,
    /// How long to measure, in seconds.
    #[arg(long, default_value_t = 3.0, allow_negative_numbers = true)]
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
    threads: usize,
}

pub fn run(args: &BenchArgs) -> Result<()> {
    if !(args.seconds.is_finite() && args.seconds > 0.0 && args.seconds <= 3600.0) {
        bail!("--seconds must be a number of seconds in (0, 3600], got {}", args.seconds);
    }
    let result = with_game!(args.game.as_str(), |game| bench(&game, args))?;
    if args.json {
        println!("{}", serde_json::to_string(&result).expect("bench result serialises"));
    } else {
        println!(
            "{}: {:.0} random games/s, {:.0} plies/s (1 thread, {} games in {:.2} s)",
            result.game, result.random_games_per_sec, result.plies_per_sec, result.games, result.seconds
        );
    }
    Ok(())
}

fn bench<G: Game>(game: &G, args: &BenchArgs) -> BenchResult {
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
    BenchResult {
        game: game.spec().to_string(),
        random_games_per_sec: games as f64 / elapsed,
        plies_per_sec: plies as f64 / elapsed,
        games,
        plies,
        seconds: elapsed,
        threads: 1,
    }
}
