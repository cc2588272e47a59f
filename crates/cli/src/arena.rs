use crate::play::MoveClock;
use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use meeple_arena::files::{check_new_output, write_atomic};
use meeple_arena::ratings::Sprt;
use meeple_arena::{MatchConfig, MatchSummary, PlayedGame, RecordedMatch, outcome, seatings, total_games, validate};
use meeple_game::{Game, limits};
use meeple_games::with_game;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

/// The tournament `meeple arena` plays when given no game: the shipped connect-four network's
/// search against plain MCTS at equal time, a few dozen games that take about a minute.
const DEFAULT_GAME: &str = "connect4";
const DEFAULT_NETWORK: &str = "models/connect4-az.safetensors";
const DEFAULT_MOVE_TIME: &str = "100ms";
const DEFAULT_MATCH_GAMES: usize = 40;
const DEFAULT_MATCH_OPENING: usize = 2;

/// The default match's agents: the shipped network from the working directory or from the
/// source tree this binary was built from; without it, alpha-beta on its evaluator in its place.
fn default_agents() -> Vec<String> {
    let built_from = concat!(env!("CARGO_MANIFEST_DIR"), "/../../", "models/connect4-az.safetensors");
    let network = [PathBuf::from(DEFAULT_NETWORK), PathBuf::from(built_from)]
        .into_iter()
        .find(|p| p.is_file())
        .map(|p| if p.is_relative() { p } else { std::fs::canonicalize(&p).unwrap_or(p) });
    let first = match network {
        Some(p) => format!("az:model={},time={DEFAULT_MOVE_TIME}", p.display()),
        None => format!("alphabeta:time={DEFAULT_MOVE_TIME},eval=lines"),
    };
    vec![first, format!("mcts:time={DEFAULT_MOVE_TIME}")]
}
/// Games per pairing without `--games`, rounded up to a multiple of the seatings.
const DEFAULT_GAMES: usize = 200;

#[derive(Args, Debug)]
pub struct ArenaArgs {
    /// Game spec; without one, plays the default match: connect four, the shipped network's
    /// search against plain MCTS at 100 ms a move each, 40 games opened by 2 random plies.
    game: Option<String>,
    /// Agent specs: one per seat, or (two-player games) any number for a round robin.
    agents: Vec<String>,
    /// Games per pairing (all of them when the agents fill the seats), a multiple of the number
    /// of seatings (2 for two-player games, 6 for three players, 24 for four). Default: 200,
    /// rounded up to such a multiple (216 for four players).
    #[arg(long)]
    games: Option<usize>,
    /// With more than two agents: the first against each other one, not every pair.
    #[arg(long)]
    gauntlet: bool,
    /// Confidence of the score and Elo intervals.
    #[arg(long, default_value_t = 0.95)]
    confidence: f64,
    /// The agent rated 0 Elo (default: `random` if playing, else the first agent); a spec, or
    /// its name with `#k` where the same spec plays twice (`random#2`).
    #[arg(long, value_name = "SPEC")]
    anchor: Option<String>,
    /// Write games.csv (one row per game), agents.csv and pairwise.csv into this directory.
    #[arg(long, value_name = "DIR")]
    csv: Option<PathBuf>,
    /// Base seed; the same seed gives the same games whatever the thread count.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Worker threads (default: all cores; at most 4 per core).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    threads: Option<u64>,
    #[command(flatten)]
    clock: MoveClock,
    /// Play this many uniformly random plies before the agents take over (the same opening in
    /// every seating of a seed), so deterministic agents meet varied positions. An opening that
    /// ends the game is drawn again.
    #[arg(long, default_value_t = 0)]
    opening_plies: usize,
    /// Write the summary as JSON to this file when the match ends (`-` for stdout; the table
    /// then goes to stderr). Written whole: an interrupted run leaves the old file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write one JSON line per game (seed, seating, moves, times, returns, match settings) to
    /// this file, each as it finishes.
    #[arg(long, value_name = "FILE")]
    records: Option<PathBuf>,
    /// Continue an interrupted run: check every game in --records (same settings, same seats
    /// and seeds, replays through the rules to its result), keep them, and play only the
    /// missing ones.
    #[arg(long, requires = "records")]
    resume: bool,
    /// Replace existing --records, --json and --csv files (without it, a run that would
    /// overwrite finished results stops before playing).
    #[arg(long, conflicts_with = "resume")]
    force: bool,
    /// Sequential test of two agents: stop as soon as it decides between H0 (elo0) and H1
    /// (elo1); --games is then the most it plays. Format: elo0,elo1[,alpha,beta] (0.05 each by
    /// default).
    #[arg(long, value_name = "ELO0,ELO1[,ALPHA,BETA]", value_parser = sprt_arg, allow_hyphen_values = true)]
    sprt: Option<Sprt>,
}

fn sprt_arg(text: &str) -> Result<Sprt, String> {
    let parts: Result<Vec<f64>, _> = text.split(',').map(|p| p.trim().parse::<f64>()).collect();
    match parts.as_deref() {
        Ok([e0, e1]) => Ok(Sprt { elo0: *e0, elo1: *e1, alpha: 0.05, beta: 0.05 }),
        Ok([e0, e1, a, b]) => Ok(Sprt { elo0: *e0, elo1: *e1, alpha: *a, beta: *b }),
        _ => Err(format!("'{text}' is not elo0,elo1[,alpha,beta], like 0,10 or 0,10,0.05,0.05")),
    }
}

pub fn run(args: &ArenaArgs) -> Result<()> {
    let (game, agents) = match &args.game {
        Some(g) => (g.clone(), args.agents.clone()),
        None => {
            let agents = default_agents();
            eprintln!(
                "no game given: playing the default match, {DEFAULT_GAME}: {} (name a game and agents to play another)",
                agents.join(" vs ")
            );
            (DEFAULT_GAME.to_string(), agents)
        }
    };
    let default_match = args.game.is_none();
    let threads = match args.threads {
        Some(t) => Some(limits::check_threads("--threads", usize::try_from(t).unwrap_or(usize::MAX))?),
        None => None,
    };
    let config = MatchConfig {
        agents,
        games: args.games.unwrap_or(if default_match { DEFAULT_MATCH_GAMES } else { DEFAULT_GAMES }),
        seed: args.seed,
        threads,
        budget: args.clock.budget(),
        opening_plies: if default_match && args.opening_plies == 0 {
            DEFAULT_MATCH_OPENING
        } else {
            args.opening_plies
        },
        gauntlet: args.gauntlet,
        confidence: args.confidence,
        anchor: args.anchor.clone(),
        sprt: args.sprt,
    };
    with_game!(game.as_str(), |g| arena(&g, config, args))?
}

fn arena<G: Game>(game: &G, mut config: MatchConfig, args: &ArenaArgs) -> Result<()> {
    let per_seed = seatings(game.num_players()).len();
    if args.games.is_none() {
        config.games = config.games.div_ceil(per_seed) * per_seed;
    }
    validate(game, &meeple_learn::extension(), &config)?;
    let config = &config;
    let total = total_games(game.num_players(), config);
    // Refuse to replace finished results before anything is played or truncated.
    if let Some(p) = &args.records {
        check_new_output(p, "records file", args.force || args.resume, true).map_err(|e| anyhow!(e))?;
    }
    if let Some(p) = args.json.as_ref().filter(|p| p.as_os_str() != "-") {
        check_new_output(p, "results file", args.force || args.resume, false).map_err(|e| anyhow!(e))?;
    }
    if let Some(dir) = &args.csv {
        for name in CSV_FILES {
            check_new_output(&dir.join(name), "csv file", args.force || args.resume, false).map_err(|e| anyhow!(e))?;
        }
    }
    // Open the records file before playing, so a bad path fails at once.
    let extension = meeple_learn::extension();
    let recorded = RecordedMatch::open(game, &extension, config, args.records.as_deref(), args.resume)?;
    if let (Some(line), Some(p)) = (recorded.cut_line, &args.records) {
        eprintln!("records file '{}': dropped the unfinished last line {line}", p.display());
    }
    if let Some(p) = args.json.as_ref().filter(|p| p.as_os_str() != "-") {
        let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !dir.is_dir() {
            bail!("cannot write results file '{}': no directory '{}'", p.display(), dir.display());
        }
    }
    if let Some(dir) = &args.csv {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create csv directory '{}'", dir.display()))?;
    }
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {human_pos}/{human_len} games  {elapsed} elapsed, ETA {eta}  {msg}")
            .expect("valid template"),
    );
    let labels = config.labels();
    let kept = recorded.kept();
    let tally = Mutex::new([0.0f64, 0.0]);
    let played_now = std::sync::atomic::AtomicUsize::new(0);
    let start = Instant::now();
    let on_game = |g: &PlayedGame| {
        if let (Some(returns), Some(seat0)) = (&g.record.returns, g.seating.iter().position(|&a| a == 0)) {
            let points = [1.0, 0.5, 0.0][outcome(returns, seat0)];
            let mut t = tally.lock().expect("tally lock");
            t[0] += points;
            t[1] += 1.0;
            bar.set_message(format!("agent 1 ({}) scores {:.1}%", labels[0], 100.0 * t[0] / t[1]));
        }
        played_now.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        bar.inc(1);
    };
    bar.set_position(kept as u64);
    let (summary, played) = recorded.play(on_game).map_err(|e| {
        match (e, &args.records) {
            // Only the kept games are records; name the file they came from.
            (meeple_game::Error::Record(why), Some(p)) => anyhow!("records file '{}': {why}", p.display()),
            (e, _) => e.into(),
        }
    })?;
    bar.finish_and_clear();
    if kept > 0 {
        eprintln!(
            "resumed: {kept} finished games kept (each checked and replayed), {} played now",
            played_now.into_inner()
        );
    }
    let secs = start.elapsed().as_secs_f64();
    // With the JSON on stdout, the table goes to stderr so stdout stays one JSON document.
    let json_to_stdout = args.json.as_ref().is_some_and(|p| p.as_os_str() == "-");
    let mut table = Vec::new();
    print_table(&mut table, &summary, game.num_players(), config, secs)?;
    if let Some(r) = &summary.sprt {
        writeln!(
            table,
            "\nSPRT elo0={} elo1={} alpha={} beta={}: LLR {:.3} in [{:.3}, {:.3}] after {} games: {}",
            r.elo0,
            r.elo1,
            r.alpha,
            r.beta,
            r.llr,
            r.lower,
            r.upper,
            summary.games,
            match r.decision {
                meeple_arena::ratings::SprtDecision::AcceptH1 =>
                    "H1 accepted (the first agent is stronger by elo1 or more)",
                meeple_arena::ratings::SprtDecision::AcceptH0 => "H0 accepted (not stronger by elo0 or more)",
                meeple_arena::ratings::SprtDecision::Continue => "no decision before the game limit",
            }
        )?;
    }
    if json_to_stdout {
        std::io::stderr().write_all(&table)?;
    } else {
        std::io::stdout().write_all(&table)?;
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&summary).expect("summary serialises") + "\n";
        if json_to_stdout {
            print!("{text}");
        } else {
            write_atomic(path, text.as_bytes())
                .with_context(|| format!("cannot write results file '{}'", path.display()))?;
        }
    }
    if let Some(dir) = &args.csv {
        write_csv(dir, &summary, &played).with_context(|| format!("cannot write csv files in '{}'", dir.display()))?;
    }
    Ok(())
}

fn print_table(
    out: &mut impl Write,
    s: &MatchSummary,
    players: usize,
    config: &MatchConfig,
    secs: f64,
) -> std::io::Result<()> {
    let per_seed = seatings(players).len();
    let threads = config.threads.map(|t| t.to_string()).unwrap_or_else(|| "all cores".into());
    let pairs = if s.pairwise.len() > 1 { format!(", {} pairings", s.pairwise.len()) } else { String::new() };
    writeln!(
        out,
        "{} — {} games ({} seeds x {per_seed} seatings{pairs}), seed {}, threads: {threads}, {secs:.2} s",
        s.game,
        s.games,
        config.games / per_seed,
        s.seed
    )?;
    let pct = format!("{:.0}% CI", 100.0 * s.confidence);
    let width = s.agents.iter().map(|a| a.name.len()).max().unwrap_or(5).max(5);
    write!(
        out,
        "{:<width$}  {:>6} {:>6} {:>6} {:>6}  {:>6}  {:<17}",
        "agent", "games", "wins", "draws", "losses", "score", pct
    )?;
    if s.anchor.is_some() {
        write!(out, " {:>6}  {:<17}", "elo", "elo CI")?;
    }
    writeln!(out, " {:>9} {:>9} {:>9} {:>6}", "ms/move", "p99 ms", "max ms", "late")?;
    let mut order: Vec<usize> = (0..s.agents.len()).collect();
    if s.agents.len() > 2 {
        order.sort_by(|&a, &b| s.agents[b].elo.unwrap_or(0.0).total_cmp(&s.agents[a].elo.unwrap_or(0.0)));
    }
    for &i in &order {
        let a = &s.agents[i];
        write!(
            out,
            "{:<width$}  {:>6} {:>6} {:>6} {:>6}  {:>5.1}%  [{:>5.1}%, {:>5.1}%]",
            a.name,
            a.wins + a.draws + a.losses,
            a.wins,
            a.draws,
            a.losses,
            100.0 * a.score,
            100.0 * a.ci[0],
            100.0 * a.ci[1],
        )?;
        if let (Some(e), Some([lo, hi])) = (a.elo, a.elo_ci) {
            if s.anchor.as_deref() == Some(a.name.as_str()) {
                write!(out, " {:>6.0}  {:<17}", e, "(anchor)")?;
            } else {
                write!(out, " {:>6.0}  [{:>6.0}, {:>6.0}]", e, lo, hi)?;
            }
        }
        let late = a.budget_ms.map(|_| a.over_budget.to_string()).unwrap_or_else(|| "-".into());
        writeln!(out, " {:>9.3} {:>9.3} {:>9.3} {:>6}", a.mean_move_ms, a.p99_move_ms, a.max_move_ms, late)?;
    }
    if s.agents.iter().any(|a| a.by_seat.len() > 1) {
        writeln!(out, "by seat (score, +wins =draws -losses):")?;
        for &i in &order {
            let a = &s.agents[i];
            let seats: Vec<String> = a
                .by_seat
                .iter()
                .enumerate()
                .filter(|(_, r)| r.wins + r.draws + r.losses > 0)
                .map(|(k, r)| format!("seat {k} {:.1}% (+{} ={} -{})", 100.0 * r.score, r.wins, r.draws, r.losses))
                .collect();
            writeln!(out, "  {:<width$}  {}", a.name, seats.join(", "))?;
        }
    }
    if !s.metrics.is_empty() {
        let figures: Vec<String> =
            s.metrics.iter().map(|(k, [mean, sd])| format!("{k} {mean:.1} (sd {sd:.1})")).collect();
        writeln!(out, "per game: {}", figures.join(", "))?;
    }
    if s.pairwise.len() > 1 {
        writeln!(out, "\npairwise (first agent's score):")?;
        for p in &s.pairwise {
            writeln!(
                out,
                "  {} vs {}: +{} ={} -{}  {:.1}% [{:.1}%, {:.1}%]",
                p.a,
                p.b,
                p.wins,
                p.draws,
                p.losses,
                100.0 * p.score,
                100.0 * p.ci[0],
                100.0 * p.ci[1]
            )?;
        }
    }
    Ok(())
}

/// The files `--csv DIR` writes.
const CSV_FILES: [&str; 3] = ["games.csv", "agents.csv", "pairwise.csv"];

/// Writes one CSV file whole (see [`write_atomic`]).
fn write_csv_file(path: &Path, fill: impl FnOnce(&mut csv::Writer<Vec<u8>>) -> Result<(), csv::Error>) -> Result<()> {
    let mut w = csv::Writer::from_writer(Vec::new());
    fill(&mut w)?;
    let bytes = w.into_inner().map_err(|e| anyhow!("{e}"))?;
    write_atomic(path, &bytes).with_context(|| format!("cannot write '{}'", path.display()))
}

fn write_csv(dir: &Path, s: &MatchSummary, played: &[PlayedGame]) -> Result<()> {
    write_csv_file(&dir.join(CSV_FILES[0]), |games| {
        games.write_record(["game", "seed", "seat0", "seat1", "seat2", "seat3", "returns", "plies", "mean_ms"])?;
        let mut sorted: Vec<&PlayedGame> = played.iter().collect();
        sorted.sort_by_key(|g| g.index);
        for g in sorted {
            let mut seats: Vec<String> = g.record.agents.clone();
            seats.resize(4, String::new());
            let returns =
                g.record.returns.as_ref().map(|r| r.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" "));
            let mean = if g.move_ms.is_empty() { 0.0 } else { g.move_ms.iter().sum::<f64>() / g.move_ms.len() as f64 };
            games.write_record([
                g.index.to_string(),
                g.record.seed.to_string(),
                seats[0].clone(),
                seats[1].clone(),
                seats[2].clone(),
                seats[3].clone(),
                returns.unwrap_or_default(),
                g.record.actions.len().to_string(),
                format!("{mean:.4}"),
            ])?;
        }
        Ok(())
    })?;
    write_csv_file(&dir.join(CSV_FILES[1]), |agents| {
        agents.write_record([
            "agent",
            "spec",
            "games",
            "wins",
            "draws",
            "losses",
            "score",
            "ci_low",
            "ci_high",
            "elo",
            "elo_low",
            "elo_high",
            "mean_move_ms",
            "p99_move_ms",
            "max_move_ms",
            "budget_ms",
            "over_budget",
        ])?;
        let opt = |x: Option<f64>| x.map(|v| format!("{v:.2}")).unwrap_or_default();
        for a in &s.agents {
            agents.write_record([
                a.name.clone(),
                a.spec.clone(),
                (a.wins + a.draws + a.losses).to_string(),
                a.wins.to_string(),
                a.draws.to_string(),
                a.losses.to_string(),
                format!("{:.5}", a.score),
                format!("{:.5}", a.ci[0]),
                format!("{:.5}", a.ci[1]),
                opt(a.elo),
                opt(a.elo_ci.map(|c| c[0])),
                opt(a.elo_ci.map(|c| c[1])),
                format!("{:.4}", a.mean_move_ms),
                format!("{:.4}", a.p99_move_ms),
                format!("{:.4}", a.max_move_ms),
                opt(a.budget_ms),
                a.over_budget.to_string(),
            ])?;
        }
        Ok(())
    })?;
    write_csv_file(&dir.join(CSV_FILES[2]), |pairwise| {
        pairwise.write_record(["a", "b", "wins", "draws", "losses", "score", "ci_low", "ci_high"])?;
        for p in &s.pairwise {
            pairwise.write_record([
                p.a.clone(),
                p.b.clone(),
                p.wins.to_string(),
                p.draws.to_string(),
                p.losses.to_string(),
                format!("{:.5}", p.score),
                format!("{:.5}", p.ci[0]),
                format!("{:.5}", p.ci[1]),
            ])?;
        }
        Ok(())
    })
}
