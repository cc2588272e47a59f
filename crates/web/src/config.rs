//! What a server is given: its limits and its inputs, with their defaults and checks.

use super::*;

/// Limits and inputs of a server.
#[derive(Clone, Debug)]
pub struct Config {
    /// Matches held at once (replays included); creating one more is refused with 503.
    pub max_matches: usize,
    /// Matches one client may hold at once (429 beyond).
    pub max_matches_per_client: usize,
    /// A match nobody has asked about for this long leaves memory (the store keeps it; the
    /// next request for it brings it back).
    pub idle: Duration,
    /// How often idle matches are looked for (and the store pruned, every hour of these).
    pub sweep_every: Duration,
    /// How long a person has to answer another player's question (a Catan offer put to them)
    /// before the game's default answer (declining) is made for them, so that one absent
    /// person cannot hold the table.
    pub answer_time: Duration,
    /// Agent threads shared by everyone (an agent with `threads=4` takes 4).
    pub thinkers: usize,
    /// Agent threads beyond those, kept for moves a person is waiting for.
    pub reserved_thinkers: usize,
    /// Analysis threads shared by everyone, a pool apart from the agents' so advice never
    /// holds up a game.
    pub analysts: usize,
    /// Analysis threads beyond those, for a client's first analysis.
    pub reserved_analysts: usize,
    /// Records files offered for replay (`meeple serve --records FILE`).
    pub records: Vec<PathBuf>,
    /// Where games are kept (SQLite); `None`: in memory only.
    pub data_dir: Option<PathBuf>,
    /// Directories agent specs from clients may load models and weights from.
    pub model_dirs: Vec<PathBuf>,
    /// Host names the server answers to besides the loopback ones.
    pub hosts: Vec<String>,
    /// The memory all matches, agents, analyses, replays and uploads share.
    pub memory_budget: u64,
    /// The most of it one client may hold (`None`: a quarter).
    pub client_memory: Option<u64>,
    /// The most one agent spec may take: its tables, and the tree it may grow.
    pub max_agent_memory: u64,
    /// The most plies a match may reach, and a replayed game may have.
    pub max_plies: usize,
    /// Event streams a match's spectators may hold (its seats have their own).
    pub max_spectators: usize,
    /// Event streams each seat of a match may hold (its player's tabs and devices).
    pub seat_streams: usize,
    /// Spectators' event streams in all, and per client.
    pub max_streams: usize,
    pub max_streams_per_client: usize,
    /// An event stream ends after this long (the page opens a new one).
    pub stream_life: Duration,
    /// Open connections (`serve` only), in all and per client (trusted proxies aside).
    pub max_connections: usize,
    pub max_connections_per_client: usize,
    /// How long a request's header, or an idle connection's next one, may take (`serve` only).
    pub header_timeout: Duration,
    /// How long a request's body may take to arrive.
    pub body_timeout: Duration,
    /// Finished games kept in the store, at most, and for how many days (`None`: no limit by age).
    pub keep_games: usize,
    pub keep_days: Option<u32>,
    /// How long a write waits for a database another program holds locked.
    pub store_timeout: Duration,
    /// Move a damaged store aside and start a fresh one, instead of refusing to start.
    pub move_damaged_store: bool,
    /// How addresses are grouped into clients, and which proxy's header is believed.
    pub clients: Grouping,
}

impl Default for Config {
    fn default() -> Self {
        let cores = meeple_game::limits::cores();
        let store = store::Options::default();
        Config {
            max_matches: 100,
            max_matches_per_client: 16,
            idle: Duration::from_secs(30 * 60),
            sweep_every: Duration::from_secs(60),
            answer_time: Duration::from_secs(60),
            thinkers: cores,
            reserved_thinkers: (cores / 2).max(1),
            analysts: (cores / 2).max(1),
            reserved_analysts: 1,
            records: Vec::new(),
            data_dir: None,
            model_dirs: Vec::new(),
            hosts: Vec::new(),
            memory_budget: meeple_game::limits::memory() / 4,
            client_memory: None,
            max_agent_memory: 64 << 20,
            max_plies: 20_000,
            max_spectators: 12,
            seat_streams: 4,
            max_streams: 256,
            max_streams_per_client: 24,
            stream_life: Duration::from_secs(10 * 60),
            max_connections: 512,
            max_connections_per_client: 32,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            keep_games: store.keep_games,
            keep_days: store.keep_days,
            store_timeout: store.busy,
            move_damaged_store: false,
            clients: Grouping::default(),
        }
    }
}

impl Config {
    /// The default data directory: `$XDG_DATA_HOME/meeple`, else `~/.local/share/meeple`.
    pub fn default_data_dir() -> Option<PathBuf> {
        if let Some(d) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(d).join("meeple"));
        }
        std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".local/share/meeple"))
    }

    pub(crate) fn allowed(&self) -> Allowed {
        Allowed {
            files: Arc::new(self.model_dirs.clone()),
            agent_memory: self.max_agent_memory,
            max_plies: self.max_plies,
        }
    }

    /// Memory counted for one match's moves and checkpoints at the ply cap.
    pub(crate) fn match_bytes<G: Game>(&self, _game: &G) -> u64 {
        let per_ply = 12 + (size_of::<G::State>() as u64 + 512) / session::CHECKPOINT_EVERY as u64;
        MATCH_BASE_BYTES + self.max_plies as u64 * per_ply
    }

    pub(crate) fn store_options(&self) -> store::Options {
        store::Options {
            keep_games: self.keep_games,
            keep_days: self.keep_days,
            busy: self.store_timeout,
            move_damaged: self.move_damaged_store,
        }
    }
}
