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
    /// Matches one client may hold at once (a client: an address, every address of this
    /// machine together, an IPv6 /64; see --group-v4, --group-v6).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    max_matches_per_client: u32,
    /// Minutes after which a match nobody asks about leaves memory; the store keeps it, and it
    /// comes back when someone opens it again.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=10_080))]
    idle_minutes: u32,
    /// Seconds a person has to answer another player's question (a Catan offer put to them)
    /// before it is declined for them, so that one absent person cannot hold the table.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u32).range(5..=3600))]
    answer_seconds: u32,
    /// Agent threads everyone shares (default: one per core); the others wait their turn, a
    /// move a person waits for first, then the client holding the fewest.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    thinkers: Option<u32>,
    /// Agent threads beyond --thinkers kept for moves a person is waiting for, so a person's
    /// opponent answers at once beside any agent-only load (default: half the thinkers, at
    /// least one).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=1024))]
    reserved_thinkers: Option<u32>,
    /// Analysis threads that may run at once (default: half the cores, at least one).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    analysts: Option<u32>,
    /// The memory all matches, agents, analyses, replays and uploads share, like 2gb [default:
    /// a quarter of this machine's memory]. Each agent counts for its tables and the tree it
    /// may grow.
    #[arg(long, value_name = "SIZE")]
    memory_budget: Option<String>,
    /// The most of the memory budget one client may hold, like 512mb [default: a quarter of the
    /// budget].
    #[arg(long, value_name = "SIZE")]
    client_memory: Option<String>,
    /// The most one agent spec from the page may take (tables, and the tree it grows), like 64mb.
    #[arg(long, value_name = "SIZE", default_value = "64mb")]
    max_agent_memory: String,
    /// The most plies a match may reach (and a replayed game have).
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u32).range(10..=1_000_000))]
    max_plies: u32,
    /// Open connections at once; more are closed at once.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(8..=100_000))]
    max_connections: u32,
    /// Open connections one client may hold (a trusted proxy's are not counted so).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(2..=100_000))]
    max_connections_per_client: u32,
    /// IPv4 addresses sharing this many leading bits count as one client (32: each address).
    /// Every address of this machine is always one client.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u8).range(8..=32))]
    group_v4: u8,
    /// IPv6 addresses sharing this many leading bits count as one client (64: a network, what
    /// one household or host is given).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u8).range(16..=128))]
    group_v6: u8,
    /// Behind a reverse proxy: the header it names the client in (X-Forwarded-For, X-Real-IP).
    /// Believed only on requests from --trusted-proxy addresses (default: this machine's).
    #[arg(long, value_name = "NAME")]
    client_header: Option<String>,
    /// The address of a reverse proxy whose --client-header is believed; repeatable.
    #[arg(long = "trusted-proxy", value_name = "ADDR")]
    trusted_proxies: Vec<std::net::IpAddr>,
    /// Finished games the store keeps; the oldest go beyond it.
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    keep_games: u32,
    /// Days the store keeps a finished game, or a match in progress nobody plays (0: no limit by age).
    #[arg(long, default_value_t = 180, value_parser = clap::value_parser!(u32).range(0..=36_500))]
    keep_days: u32,
    /// If the store's file is damaged, move it aside (it is renamed, nothing is deleted) and
    /// start a fresh one, instead of refusing to start.
    #[arg(long, conflicts_with = "no_store")]
    move_damaged_store: bool,
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

/// Whether `name` is a header name as HTTP allows it: letters, digits and `-`.
fn is_header_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
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
    if !args.trusted_proxies.is_empty() && args.client_header.is_none() {
        bail!("--trusted-proxy has no effect without --client-header NAME (the header the proxy names the client in)");
    }
    if let Some(h) = &args.client_header
        && !is_header_name(h)
    {
        bail!("--client-header '{h}' is not a header name (like X-Forwarded-For or X-Real-IP)");
    }
    let trusted = if args.client_header.is_some() && args.trusted_proxies.is_empty() {
        vec![std::net::Ipv4Addr::LOCALHOST.into(), std::net::Ipv6Addr::LOCALHOST.into()]
    } else {
        args.trusted_proxies.clone()
    };
    let mut config = meeple_web::Config {
        max_matches: args.max_matches as usize,
        max_matches_per_client: args.max_matches_per_client as usize,
        idle: Duration::from_secs(args.idle_minutes as u64 * 60),
        answer_time: Duration::from_secs(args.answer_seconds as u64),
        records: args.records.clone(),
        data_dir,
        model_dirs,
        hosts: args.allow_hosts.clone(),
        max_agent_memory: size("--max-agent-memory", &args.max_agent_memory)?,
        max_plies: args.max_plies as usize,
        max_connections: args.max_connections as usize,
        max_connections_per_client: args.max_connections_per_client as usize,
        keep_games: args.keep_games as usize,
        keep_days: (args.keep_days > 0).then_some(args.keep_days),
        move_damaged_store: args.move_damaged_store,
        clients: meeple_web::Grouping {
            v4_prefix: args.group_v4,
            v6_prefix: args.group_v6,
            header: args.client_header.as_ref().map(|h| h.to_ascii_lowercase()),
            trusted,
        },
        ..meeple_web::Config::default()
    };
    if let Some(m) = &args.memory_budget {
        config.memory_budget = size("--memory-budget", m)?;
    }
    if let Some(t) = args.thinkers {
        config.thinkers = t as usize;
        config.reserved_thinkers = (config.thinkers / 2).max(1);
    }
    if let Some(r) = args.reserved_thinkers {
        config.reserved_thinkers = r as usize;
    }
    if let Some(c) = &args.client_memory {
        let bytes = size("--client-memory", c)?;
        if bytes > config.memory_budget {
            bail!(
                "--client-memory {c} is more than the memory budget ({}): one client's share is part of it",
                meeple_game::limits::format_bytes(config.memory_budget)
            );
        }
        config.client_memory = Some(bytes);
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
