use anyhow::{Context, Result, bail};
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on; the default takes connections from this machine only. Any other
    /// address lets the network in: read docs/web.md first.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port to listen on (0: any free port).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// A host name the server answers to besides localhost and its own address (the name people
    /// type to reach it); requests naming any other Host are refused. Repeatable.
    #[arg(long = "allow-host", value_name = "NAME")]
    allow_hosts: Vec<String>,
    /// Where games are kept (SQLite): matches in progress resume after a restart, finished ones
    /// can be replayed [default: $XDG_DATA_HOME/meeple or ~/.local/share/meeple].
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Keep nothing on disk: every match is lost when the server stops.
    #[arg(long, conflicts_with = "data_dir")]
    no_store: bool,
    /// A directory whose models and weight files agent specs from the page may name
    /// (`az:model=connect4-az.safetensors`); repeatable. The shipped models/ (found beside the
    /// working directory) and DATA_DIR/models are always allowed; no other file can be named.
    #[arg(long = "model-dir", value_name = "DIR")]
    model_dirs: Vec<PathBuf>,
    /// Records files (`meeple arena --records FILE`) the page offers for replay.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    records: Vec<PathBuf>,
    /// Matches held at once (replays included), 1-10000.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    max_matches: u32,
    /// Matches one client address may hold at once.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    max_matches_per_client: u32,
    /// Minutes after which a match nobody looks at is dropped.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..=10_080))]
    idle_minutes: u32,
    /// Agent threads that may think at once (default: one per core); the others wait their turn.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    thinkers: Option<u32>,
    /// Analysis threads that may run at once (default: half the cores, at least one).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    analysts: Option<u32>,
    /// The memory all matches, agents, analyses and replays share, like 2gb [default: a quarter
    /// of this machine's memory]. Each agent counts for its tables and the tree it may grow.
    #[arg(long, value_name = "SIZE")]
    memory_budget: Option<String>,
    /// The most one agent spec from the page may take (tables, and the tree it grows), like 64mb.
    #[arg(long, value_name = "SIZE", default_value = "64mb")]
    max_agent_memory: String,
    /// The most plies a match may reach (and a replayed game have).
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u32).range(10..=1_000_000))]
    max_plies: u32,
    /// Open connections at once; more are closed at once.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(8..=100_000))]
    max_connections: u32,
}

fn size(what: &str, text: &str) -> Result<u64> {
    let bytes =
        meeple_game::parse_size(text).with_context(|| format!("{what} '{text}' is not a size like 64mb or 2gb"))?;
    let machine = meeple_game::limits::memory();
    if bytes == 0 || bytes > machine {
        bail!(
            "{what} '{text}' must be above 0 and at most this machine's memory ({})",
            meeple_game::limits::format_bytes(machine)
        );
    }
    Ok(bytes)
}

pub fn run(args: &ServeArgs) -> Result<()> {
    for f in &args.records {
        if !f.is_file() {
            bail!("records file '{}' does not exist or is not a file", f.display());
        }
    }
    for d in &args.model_dirs {
        if !d.is_dir() {
            bail!("model directory '{}' does not exist or is not a directory", d.display());
        }
    }
    let data_dir =
        if args.no_store {
            None
        } else {
            Some(args.data_dir.clone().or_else(meeple_web::Config::default_data_dir).context(
                "no data directory: give --data-dir DIR (or --no-store); neither XDG_DATA_HOME nor HOME is set",
            )?)
        };
    let mut model_dirs = args.model_dirs.clone();
    model_dirs.push(PathBuf::from("models"));
    model_dirs.push(PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models")));
    if let Some(d) = &data_dir {
        model_dirs.push(d.join("models"));
    }
    let mut config = meeple_web::Config {
        max_matches: args.max_matches as usize,
        max_matches_per_client: args.max_matches_per_client as usize,
        idle: Duration::from_secs(args.idle_minutes as u64 * 60),
        records: args.records.clone(),
        data_dir,
        model_dirs,
        hosts: args.allow_hosts.clone(),
        max_agent_memory: size("--max-agent-memory", &args.max_agent_memory)?,
        max_plies: args.max_plies as usize,
        max_connections: args.max_connections as usize,
        ..meeple_web::Config::default()
    };
    if let Some(m) = &args.memory_budget {
        config.memory_budget = size("--memory-budget", m)?;
    }
    if let Some(t) = args.thinkers {
        config.thinkers = t as usize;
    }
    if let Some(t) = args.analysts {
        config.analysts = t as usize;
    }
    let runtime = tokio::runtime::Runtime::new().context("cannot start the server's runtime")?;
    let host = args.host.clone();
    let store = config.data_dir.clone();
    runtime
        .block_on(meeple_web::serve(&host, args.port, config, |addr| {
            if !addr.ip().is_loopback() {
                eprintln!(
                    "warning: meeple is listening on {addr}, reachable from other machines. Anyone who can reach it \
                     can start matches and agents on this machine; people open it by the names given with \
                     --allow-host (or its address). Bind to 127.0.0.1 to keep it to this machine."
                );
            }
            let shown =
                if addr.ip().is_unspecified() { format!("127.0.0.1:{}", addr.port()) } else { addr.to_string() };
            match &store {
                Some(d) => println!("games are kept in {}", d.join(meeple_web::store::FILE).display()),
                None => println!("games are not kept (--no-store)"),
            }
            println!("meeple is serving at http://{shown}/ (Ctrl-C stops it)");
        }))
        .with_context(|| format!("cannot serve on {}:{}", args.host, args.port))
}
