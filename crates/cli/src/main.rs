//! `meeple`: the command line of the meeple board-game AI platform.

mod analyze;
mod arena;
mod bench;
mod human;
mod listing;
mod play;
mod plot;
mod replay;
mod serve;
mod train;
mod tune;

use anyhow::Result;
use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Board-game AI: exact game engines, search agents, tournaments with ratings, tuning.
///
/// Games and agents are named by spec strings: `name` or `name:key=value,...`
/// (for example `connect4:rows=6,cols=7` or `mcts:iters=1000`). `meeple games` and
/// `meeple agents` list what exists and what options each takes; `meeple COMMAND --help`
/// explains each command.
#[derive(Parser, Debug)]
#[command(name = "meeple", version, max_term_width = 100, arg_required_else_help = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List games with their parameters and defaults, or one game's rules in short.
    Games {
        /// Print the rules card of this game in this setting (`catan:trades=true`,
        /// `santorini:gods=apollo+pan`): what the web page shows beside the board.
        #[arg(long, value_name = "GAME")]
        rules: Option<String>,
    },
    /// List agents with their options and defaults.
    Agents {
        /// Also list the agents that belong to this game (rules-based players).
        #[arg(long, value_name = "GAME")]
        game: Option<String>,
    },
    /// Count the leaves of the game tree at a depth (move-generator check).
    ///
    /// The count alone is the last line printed; timing goes to stderr.
    Perft {
        /// Game spec, e.g. `connect4` or `connect4:rows=5,cols=6`.
        game: String,
        /// Depth in plies (chance outcomes count as plies), at most 64.
        #[arg(allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(0..=meeple_game::limits::MAX_PERFT_DEPTH as i64))]
        depth: u32,
        /// First list the count below each legal first move.
        #[arg(long)]
        divide: bool,
    },
    /// Play one game in the terminal; agent `human` reads your moves.
    Play(play::PlayArgs),
    /// Play a match between agents: paired seats, all cores, Wilson intervals.
    Arena(arena::ArenaArgs),
    /// Measure single-thread speed of a game: random playouts, MCTS iterations, alpha-beta nodes.
    Bench(bench::BenchArgs),
    /// Draw charts (PNG and SVG) from a results file (Elo ladder, pairwise scores) or a records
    /// file (score distributions).
    Plot(plot::PlotArgs),
    /// Step through a recorded game: board, each move, who made it and how long it took.
    Replay(replay::ReplayArgs),
    /// Play moves from the start, then show one decision of an agent (with its statistics when
    /// its spec has `verbose=true`).
    Analyze(analyze::AnalyzeArgs),
    /// Train an agent: az, td, value, dqn, ppo, vae, rootstrap, treestrap or tdleaf (`meeple train KIND GAME --out DIR`)
    ///
    /// AlphaZero, TD(λ), value networks, DQN, PPO, a VAE, RootStrap, TreeStrap and TD-Leaf, each
    /// keeping the same run directory (run.json, metrics.jsonl, ckpt/) and going on with
    /// `--resume`; Ctrl-C stops after the round with a checkpoint.
    #[command(subcommand)]
    Train(train::TrainCommand),
    /// Serve the web page: play, watch, analyse and replay every game in the browser.
    Serve(serve::ServeArgs),
    /// Tune an evaluator's weights by playing matches (random search or SPSA) and write the best
    /// weights to a file an agent spec can load, e.g. `eval=(thesis:weights=weights.txt)`.
    Tune(tune::TuneArgs),
}

fn main() -> ExitCode {
    // Bugs should read as one line, not a backtrace; users still get the location to report.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        // A reader that stopped early (`meeple replay F | head`) is not an error: stop quietly,
        // as Unix tools do on a closed pipe.
        if msg.contains("Broken pipe") {
            std::process::exit(0);
        }
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        eprintln!("error: internal error{at}: {msg} (please report this)");
    }));
    // Checkpoints name the command that made them.
    meeple_nn::record_command(
        std::iter::once("meeple".to_string())
            .chain(std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned())),
    );
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help and version go to stdout as clap writes them; usage errors become one line.
        Err(e) if !e.use_stderr() => e.exit(),
        // `meeple` (or a command group) alone: the whole usage, not one line of it.
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
        Err(e) => {
            eprintln!("{}", one_line(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// A clap error as one line: its first line, the indented lines that complete it (the missing
/// arguments), and its tips; the usage and "for more information" lines are dropped.
fn one_line(text: &str) -> String {
    let mut lines = text.lines();
    let mut out = lines.next().unwrap_or_default().trim_end().to_string();
    let mut listing = true;
    for line in lines {
        let t = line.trim();
        if t.is_empty() {
            listing = false;
        } else if let Some(tip) = t.strip_prefix("tip:") {
            out.push_str(&format!(" (tip:{tip})"));
        } else if listing && line.starts_with(' ') {
            out.push_str(&format!(" {t}"));
        }
    }
    out
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Games { rules } => listing::games(rules.as_deref()),
        Command::Agents { game } => listing::agents(game.as_deref()),
        Command::Perft { game, depth, divide } => listing::perft(&game, depth, divide),
        Command::Play(args) => play::run(&args),
        Command::Arena(args) => arena::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Analyze(args) => analyze::run(&args),
        Command::Replay(args) => replay::run(&args),
        Command::Plot(args) => plot::run(&args),
        Command::Tune(args) => tune::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::Train(command) => train::run(&command),
    }
}
