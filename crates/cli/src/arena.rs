use crate::play::duration_arg;
use anyhow::{Context, Result, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use meeple_arena::{MatchConfig, MatchSummary, PlayedGame, run_match, seatings, validate};
use meeple_game::{Budget, Game};
use meeple_games::with_game;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The tournament `meeple arena` plays when given no game: a quick, meaningful default.
const DEFAULT_GAME: &str = "connect4";
const DEFAULT_AGENTS: [&str; 2] = ["first", "random"];

#[derive(Args, Debug)]
pub struct ArenaArgs {
    /// Game spec; without one, plays the default match (connect4: first vs random).
    game: Option<String>,
    /// One agent spec per seat (e.g. `random first`); every seating of them is played per seed.
    agents: Vec<String>,
    /// Total games, a multiple of the number of seatings (2 for two-player games).
    #[arg(long, default_value_t = 200)]
    games: usize,
    /// Base seed; the same seed gives the same games whatever the thread count.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Worker threads (default: all cores).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
    /// Time limit for every move, e.g. `300ms`.
    #[arg(long, value_parser = duration_arg)]
    move_time: Option<Duration>,
    /// Play this many uniformly random plies before the agents take over (the same opening in
    /// every seating of a seed), so deterministic agents meet varied positions.
    #[arg(long, default_value_t = 0)]
    opening_plies: usize,
    /// Write the summary as JSON to this file (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write one JSON line per game (seed, seating, moves, times, returns) to this file.
    #[arg(long, value_name = "FILE")]
    records: Option<PathBuf>,
}

/// Writes records in game order as they finish, flushing each line so an interrupted run keeps
/// every finished game; the file is the same for any thread count, move times aside.
struct RecordSink {
    file: BufWriter<File>,
    pending: BTreeMap<usize, String>,
    next: usize,
}

impl RecordSink {
    fn push(&mut self, game: &PlayedGame) -> std::io::Result<()> {
        self.pending.insert(game.index, serde_json::to_string(game).expect("records serialise"));
        while let Some(line) = self.pending.remove(&self.next) {
            writeln!(self.file, "{line}")?;
            self.next += 1;
        }
        self.file.flush()
    }
}

pub fn run(args: &ArenaArgs) -> Result<()> {
    let (game, agents) = match &args.game {
        Some(g) => (g.clone(), args.agents.clone()),
        None => {
            eprintln!("no game given: playing the default match, {DEFAULT_GAME}: {}", DEFAULT_AGENTS.join(" vs "));
            (DEFAULT_GAME.to_string(), DEFAULT_AGENTS.iter().map(|s| s.to_string()).collect())
        }
    };
    let config = MatchConfig {
        agents,
        games: args.games,
        seed: args.seed,
        threads: args.threads.map(usize::from),
        budget: Budget { time: args.move_time, ..Budget::UNLIMITED },
        opening_plies: args.opening_plies,
    };
    with_game!(game.as_str(), |g| arena(&g, &config, args))?
}

fn create(path: &PathBuf, what: &str) -> Result<File> {
    File::create(path).with_context(|| format!("cannot write {what} file '{}'", path.display()))
}

fn arena<G: Game>(game: &G, config: &MatchConfig, args: &ArenaArgs) -> Result<()> {
    validate(game, config)?;
    // Open output files before playing, so a bad path fails at once.
    let sink = match &args.records {
        Some(p) => Some(Mutex::new(RecordSink {
            file: BufWriter::new(create(p, "records")?),
            pending: BTreeMap::new(),
            next: 0,
        })),
        None => None,
    };
    let json_file = match &args.json {
        Some(p) if p.as_os_str() != "-" => Some(create(p, "json")?),
        _ => None,
    };
    let bar = ProgressBar::new(config.games as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {human_pos}/{human_len} games  {elapsed} elapsed, ETA {eta}  {msg}")
            .expect("valid template"),
    );
    let tally = Mutex::new([0.0f64, 0.0]);
    let write_error = Mutex::new(None);
    let start = Instant::now();
    let (summary, _) = run_match(game, config, |g| {
        if let (Some(returns), Some(seat0)) = (&g.record.returns, g.seating.iter().position(|&a| a == 0)) {
            let best_other =
                returns.iter().enumerate().filter(|&(s, _)| s != seat0).map(|(_, &r)| r).fold(f64::MIN, f64::max);
            let points = if returns[seat0] > best_other {
                1.0
            } else if returns[seat0] == best_other {
                0.5
            } else {
                0.0
            };
            let mut t = tally.lock().expect("tally lock");
            t[0] += points;
            t[1] += 1.0;
            bar.set_message(format!("agent 1 ({}) scores {:.1}%", config.agents[0], 100.0 * t[0] / t[1]));
        }
        if let Some(sink) = &sink
            && let Err(e) = sink.lock().expect("sink lock").push(g)
        {
            write_error.lock().expect("error lock").get_or_insert(e);
        }
        bar.inc(1);
    })?;
    bar.finish_and_clear();
    if let Some(e) = write_error.into_inner().expect("error lock") {
        bail!("writing records failed: {e}");
    }
    let secs = start.elapsed().as_secs_f64();
    print_table(&summary, game.num_players(), config, secs);
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&summary).expect("summary serialises");
        match json_file {
            Some(mut f) => {
                writeln!(f, "{text}").with_context(|| format!("cannot write json file '{}'", path.display()))?
            }
            None => println!("{text}"),
        }
    }
    Ok(())
}

fn print_table(s: &MatchSummary, players: usize, config: &MatchConfig, secs: f64) {
    let per_seed = seatings(players).len();
    let threads = config.threads.map(|t| t.to_string()).unwrap_or_else(|| "all cores".into());
    println!(
        "{} — {} games ({} seeds x {per_seed} seatings), seed {}, threads: {threads}, {secs:.2} s",
        s.game,
        s.games,
        s.games / per_seed,
        s.seed
    );
    let width = s.agents.iter().map(|a| a.spec.len()).max().unwrap_or(5).max(5);
    println!(
        "{:<width$}  {:>6} {:>6} {:>6} {:>6}  {:>6}  {:<17} {:>9}",
        "agent", "games", "wins", "draws", "losses", "score", "95% CI", "ms/move"
    );
    for a in &s.agents {
        println!(
            "{:<width$}  {:>6} {:>6} {:>6} {:>6}  {:>5.1}%  [{:>5.1}%, {:>5.1}%]  {:>9.3}",
            a.spec,
            a.wins + a.draws + a.losses,
            a.wins,
            a.draws,
            a.losses,
            100.0 * a.score,
            100.0 * a.ci95[0],
            100.0 * a.ci95[1],
            a.mean_move_ms
        );
    }
}
