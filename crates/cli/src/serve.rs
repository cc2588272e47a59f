use anyhow::{Context, Result, bail};
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on; the default takes connections from this machine only.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port to listen on (0: any free port).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Records files (`meeple arena --records FILE`) the page offers for replay.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    records: Vec<PathBuf>,
    /// Matches held at once (replays included), 1-10000.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    max_matches: u32,
    /// Minutes after which a match nobody looks at is dropped.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..=10_080))]
    idle_minutes: u32,
    /// Agents that may think at once (default: one per core); the others wait their turn.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    thinkers: Option<u32>,
}

pub fn run(args: &ServeArgs) -> Result<()> {
    for f in &args.records {
        if !f.is_file() {
            bail!("records file '{}' does not exist or is not a file", f.display());
        }
    }
    let mut config = meeple_web::Config {
        max_matches: args.max_matches as usize,
        idle: Duration::from_secs(args.idle_minutes as u64 * 60),
        records: args.records.clone(),
        ..meeple_web::Config::default()
    };
    if let Some(t) = args.thinkers {
        config.thinkers = t as usize;
    }
    let runtime = tokio::runtime::Runtime::new().context("cannot start the server's runtime")?;
    let host = args.host.clone();
    runtime
        .block_on(meeple_web::serve(&host, args.port, config, |addr| {
            let shown =
                if addr.ip().is_unspecified() { format!("127.0.0.1:{}", addr.port()) } else { addr.to_string() };
            println!("meeple is serving at http://{shown}/ (Ctrl-C stops it)");
        }))
        .with_context(|| format!("cannot serve on {}:{}", args.host, args.port))
}
