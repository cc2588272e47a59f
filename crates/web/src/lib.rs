//! `meeple serve`: every game in the browser, safe to share. The server owns the matches (rules,
//! chance, agents); the embedded page draws the views the games give and sends clicks back as
//! moves.
//!
//! The API is JSON over HTTP for commands and server-sent events for updates; see `docs/web.md`
//! for every route and the threat model. In short: a person's seat answers only to its secret
//! token; the seed that fixes every deal stays on the server until the game is over; every
//! request passes [`guard`] (own `Host`, no foreign `Origin`, JSON commands); specs from clients
//! read files only from allowed directories; agents are built and think on the blocking pool,
//! never under a lock, within one memory budget; matches are kept in SQLite and resume after a
//! restart.

mod budget;
mod error;
mod guard;
pub mod session;
pub mod store;

pub use error::ApiError;
pub use session::{Control, MoveRequest, SPECTATOR, Setup};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Extension, Path, Query, State as AxState};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Router, middleware};
use budget::{Budget, Reservation};
use meeple_arena::records;
use meeple_game::{Game, GameRecord, Player};
use serde_json::{Value, json};
use session::{Access, Allowed, Session};
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use store::Store;
use tokio::sync::{Semaphore, watch};
use tokio_stream::StreamExt;
use tokio_stream::wrappers::WatchStream;

const INDEX: &str = include_str!("../static/index.html");
const SCRIPT: &str = include_str!("../static/app.js");
const STYLE: &str = include_str!("../static/style.css");

/// The largest request body outside record uploads.
pub const MAX_BODY: usize = 64 * 1024;
/// The largest records upload.
pub const MAX_RECORDS_BODY: usize = 16 * 1024 * 1024;
/// The header a page sends its seat or owner token in (a query's `token=` serves event streams,
/// which cannot send headers).
pub const TOKEN_HEADER: &str = "x-meeple-token";
/// Memory a match's bookkeeping is counted at, besides its moves.
const MATCH_BASE_BYTES: u64 = 64 << 10;

/// Eight bytes from the operating system.
pub fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).expect("the operating system gives random bytes");
    u64::from_le_bytes(b)
}

/// 128 random bits from the operating system, as 32 hex digits: match ids and seat tokens.
pub fn random_token() -> String {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).expect("the operating system gives random bytes");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Limits and inputs of a server.
#[derive(Clone, Debug)]
pub struct Config {
    /// Matches held at once (replays included); creating one more is refused with 503.
    pub max_matches: usize,
    /// Matches one client address may hold at once (429 beyond).
    pub max_matches_per_client: usize,
    /// A match nobody has touched for this long is dropped.
    pub idle: Duration,
    /// How often idle matches are looked for.
    pub sweep_every: Duration,
    /// Agent threads that may think at once (an agent with `threads=4` takes 4).
    pub thinkers: usize,
    /// Analysis threads that may run at once, apart from the agents' so advice never starves a
    /// game.
    pub analysts: usize,
    /// Records files offered for replay (`meeple serve --records FILE`).
    pub records: Vec<PathBuf>,
    /// Where games are kept (SQLite); `None`: in memory only.
    pub data_dir: Option<PathBuf>,
    /// Directories agent specs from clients may load models and weights from.
    pub model_dirs: Vec<PathBuf>,
    /// Host names the server answers to besides the loopback ones.
    pub hosts: Vec<String>,
    /// The memory all matches, agents, analyses and replays share.
    pub memory_budget: u64,
    /// The most one agent spec may take: its tables, and the tree it may grow.
    pub max_agent_memory: u64,
    /// The most plies a match may reach, and a replayed game may have.
    pub max_plies: usize,
    /// Event streams per match, and in all.
    pub max_subscribers: usize,
    pub max_streams: usize,
    /// Open connections (`serve` only).
    pub max_connections: usize,
    /// How long a request's header, or an idle connection's next one, may take (`serve` only).
    pub header_timeout: Duration,
    /// How long a request's body may take to arrive.
    pub body_timeout: Duration,
    /// Finished games kept in the store.
    pub keep_finished: usize,
}

impl Default for Config {
    fn default() -> Self {
        let cores = meeple_game::limits::cores();
        Config {
            max_matches: 100,
            max_matches_per_client: 50,
            idle: Duration::from_secs(3600),
            sweep_every: Duration::from_secs(60),
            thinkers: cores,
            analysts: (cores / 2).max(1),
            records: Vec::new(),
            data_dir: None,
            model_dirs: Vec::new(),
            hosts: Vec::new(),
            memory_budget: meeple_game::limits::memory() / 4,
            max_agent_memory: 64 << 20,
            max_plies: 20_000,
            max_subscribers: 16,
            max_streams: 256,
            max_connections: 512,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            keep_finished: 10_000,
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

    fn allowed(&self) -> Allowed {
        Allowed {
            files: Arc::new(self.model_dirs.clone()),
            agent_memory: self.max_agent_memory,
            max_plies: self.max_plies,
        }
    }

    /// Memory counted for one match's moves and checkpoints at the ply cap.
    fn match_bytes<G: Game>(&self, _game: &G) -> u64 {
        let per_ply = 12 + (size_of::<G::State>() as u64 + 512) / session::CHECKPOINT_EVERY as u64;
        MATCH_BASE_BYTES + self.max_plies as u64 * per_ply
    }
}

/// The address a request came from (set by [`serve`]; absent in tests that call the router).
#[derive(Clone, Copy, Debug)]
pub struct Peer(pub IpAddr);

struct Entry {
    id: String,
    session: Mutex<Box<dyn Session>>,
    /// Bumped on every change; event streams follow it. `u64::MAX`: the match is gone.
    version: watch::Sender<u64>,
    touched: Mutex<Instant>,
    client: Option<IpAddr>,
    subscribers: AtomicUsize,
    memory: Mutex<Option<Reservation>>,
    /// Stored in the database (a replay is not).
    kept: bool,
    /// Held for writing from a change to its commit, and for reading by snapshots: a client
    /// never sees a move the store may still lose (after a crash the game would go on from
    /// before it, and an agent might play another move there).
    commit: tokio::sync::RwLock<()>,
}

impl Entry {
    fn lock(&self) -> std::sync::MutexGuard<'_, Box<dyn Session>> {
        // A panic while locked (a game bug) must not take every later request down with it.
        self.session.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn touch(&self) {
        *self.touched.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    fn changed(&self) {
        // A dropped match stays marked as gone.
        self.version.send_if_modified(|v| {
            let live = *v != u64::MAX;
            if live {
                *v = (*v + 1) % (u64::MAX - 1);
            }
            live
        });
    }
}

struct App {
    config: Config,
    allowed: Allowed,
    matches: Mutex<HashMap<String, Arc<Entry>>>,
    /// Matches being built, counted against the cap before their agents are.
    pending: AtomicUsize,
    thinkers: Arc<Semaphore>,
    analysts: Arc<Semaphore>,
    budget: Arc<Budget>,
    store: Option<Store>,
    streams: AtomicUsize,
    /// Analyses asked for (waiting or running) per client address.
    asking: Mutex<HashMap<IpAddr, usize>>,
}

/// Analyses one client address may have waiting or running at once.
const ANALYSES_PER_CLIENT: usize = 2;

/// A client's place among the analyses asked for, given back when dropped.
struct Asking {
    app: Arc<App>,
    client: Option<IpAddr>,
}

impl Drop for Asking {
    fn drop(&mut self) {
        if let Some(ip) = self.client {
            let mut asking = self.app.asking.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(n) = asking.get_mut(&ip) {
                *n -= 1;
                if *n == 0 {
                    asking.remove(&ip);
                }
            }
        }
    }
}

/// A place among the matches, taken before a match is built.
struct Slot<'a>(&'a App);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.pending.fetch_sub(1, Ordering::Relaxed);
    }
}

impl App {
    fn entry(&self, id: &str) -> Result<Arc<Entry>, ApiError> {
        let found = self.matches.lock().unwrap_or_else(|e| e.into_inner()).get(id).cloned();
        let entry = found.ok_or_else(|| ApiError::not_found("no such match (it may have expired)"))?;
        entry.touch();
        Ok(entry)
    }

    /// Checks the caps before anything is built: all matches, and this client's.
    fn slot(&self, client: Option<IpAddr>) -> Result<Slot<'_>, ApiError> {
        let matches = self.matches.lock().unwrap_or_else(|e| e.into_inner());
        let pending = self.pending.fetch_add(1, Ordering::Relaxed);
        let slot = Slot(self);
        if matches.len() + pending >= self.config.max_matches {
            return Err(ApiError::busy(format!(
                "the server holds its limit of {} matches; finish or delete one (DELETE /api/matches/ID)",
                self.config.max_matches
            )));
        }
        if let Some(ip) = client {
            let mine = matches.values().filter(|e| e.client == Some(ip)).count();
            if mine >= self.config.max_matches_per_client {
                return Err(ApiError::too_many(format!(
                    "this address holds its share of {} matches; finish or delete one first",
                    self.config.max_matches_per_client
                )));
            }
        }
        Ok(slot)
    }

    fn insert(&self, id: String, session: Box<dyn Session>, client: Option<IpAddr>, memory: Reservation) -> Arc<Entry> {
        let kept = self.store.is_some() && session.stored().is_some();
        let entry = Arc::new(Entry {
            id: id.clone(),
            session: Mutex::new(session),
            version: watch::channel(0).0,
            touched: Mutex::new(Instant::now()),
            client,
            subscribers: AtomicUsize::new(0),
            memory: Mutex::new(Some(memory)),
            kept,
            commit: tokio::sync::RwLock::new(()),
        });
        self.matches.lock().unwrap_or_else(|e| e.into_inner()).insert(id, entry.clone());
        entry
    }

    fn remove(&self, id: &str, forget: bool) -> bool {
        let gone = self.matches.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
        if let Some(e) = &gone {
            e.version.send_replace(u64::MAX);
            // An agent still thinking for it stops now, and gives back its place; the others
            // go now. With none out thinking, the match's memory comes back at once, not when
            // the last task holding the entry (its driver, an event stream) lets go: a client
            // that deletes a match may start another at once.
            if !e.lock().close() {
                e.memory.lock().unwrap_or_else(|x| x.into_inner()).take();
            }
            if forget && let Some(store) = &self.store {
                drop(store.forget(id));
            }
        }
        gone.is_some()
    }

    /// Drops matches nobody has touched for the idle time. The table is locked only to copy the
    /// list; a match whose lock is taken is busy, and is looked at next time.
    fn sweep(&self) {
        let now = Instant::now();
        let all: Vec<Arc<Entry>> = self.matches.lock().unwrap_or_else(|e| e.into_inner()).values().cloned().collect();
        for e in all {
            let touched = *e.touched.lock().unwrap_or_else(|e| e.into_inner());
            if now.duration_since(touched) <= self.config.idle {
                continue;
            }
            let idle = match e.session.try_lock() {
                Ok(s) => !s.busy(),
                Err(std::sync::TryLockError::Poisoned(p)) => !p.into_inner().busy(),
                Err(std::sync::TryLockError::WouldBlock) => false,
            };
            if idle {
                // A finished game is already in the store; one in progress stays there too, to
                // resume after a restart, unless it is dropped here for good.
                self.remove(&e.id, true);
            }
        }
    }

    /// Sends what changed in a match to the store; call with the match locked, so its writes
    /// keep their order. The answer says when they are committed.
    fn persist(
        &self,
        entry: &Entry,
        session: &mut dyn Session,
    ) -> Option<tokio::sync::oneshot::Receiver<Result<(), String>>> {
        let store = self.store.as_ref().filter(|_| entry.kept)?;
        let unsaved = session.take_unsaved();
        let stored = session.stored();
        match unsaved {
            Some(u) => Some(store.save(&entry.id, stored, u)),
            None => Some(store.save(&entry.id, stored, session::Unsaved { keep: session.ply(), ..Default::default() })),
        }
    }

    /// Drops a finished match's memory reservation for its agents (they are gone).
    fn settle(&self, entry: &Entry, finished: bool) {
        if finished {
            let mut m = entry.memory.lock().unwrap_or_else(|e| e.into_inner());
            if m.as_ref().is_some_and(|r| r.bytes() > MATCH_BASE_BYTES) {
                *m = self.budget.reserve(MATCH_BASE_BYTES, "a finished match").ok();
            }
        }
    }
}

/// Runs a command on a match: under its lock, with what the request's token allows; then stores
/// what changed (answering once it is committed) and lets the agents go on.
async fn command<T>(
    app: &Arc<App>,
    entry: Arc<Entry>,
    token: Option<&str>,
    f: impl FnOnce(&mut dyn Session, Access) -> Result<T, ApiError>,
) -> Result<T, ApiError> {
    let gate = entry.commit.write().await;
    let applied = {
        let mut s = entry.lock();
        let access = s.access(token);
        f(&mut **s, access).map(|out| (out, app.persist(&entry, &mut **s), s.finished()))
    };
    let (out, write, finished) = match applied {
        Ok(a) => a,
        Err(e) => {
            // A stream that woke while the gate was held skipped its event: it gets one now.
            drop(gate);
            entry.changed();
            return Err(e);
        }
    };
    app.settle(&entry, finished);
    let stored = committed(write).await;
    drop(gate);
    entry.changed();
    stored?;
    drive(app.clone(), entry);
    Ok(out)
}

async fn committed(write: Option<tokio::sync::oneshot::Receiver<Result<(), String>>>) -> Result<(), ApiError> {
    let Some(rx) = write else { return Ok(()) };
    match rx.await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(ApiError::busy(format!("the move was played but could not be stored: {e}"))),
        Err(_) => Err(ApiError::busy("the game store has stopped")),
    }
}

/// The threads an agent spec asks for (`threads=N` anywhere in it), at least one.
fn spec_threads(spec: &str) -> u32 {
    let mut total = 0u32;
    for part in spec.split([',', ':', '(', ')']) {
        if let Some(n) = part.trim().strip_prefix("threads=") {
            total = total.saturating_add(n.trim().parse::<u32>().unwrap_or(1).max(1));
        }
    }
    total.max(1)
}

/// Runs the match's agents: each move thinks on the blocking pool, then the match goes on.
fn drive(app: Arc<App>, entry: Arc<Entry>) {
    tokio::spawn(async move {
        let gone = |e: &Entry| *e.version.borrow() == u64::MAX;
        let delay = entry.lock().delay();
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let (job, spec) = {
            let mut s = entry.lock();
            // A dropped match plays no more. Asked under the session's lock: dropping marks the
            // match gone before it takes the lock to close it, so either this sees it gone or
            // the close sees the job out and keeps the match's memory reserved.
            if gone(&entry) {
                return;
            }
            let mover = s.mover();
            let Some(job) = s.next_job() else { return };
            let spec = mover.and_then(|p| s.summary()["seats"][p].as_str().map(str::to_string)).unwrap_or_default();
            (job, spec)
        };
        entry.changed(); // "thinking"
        let threads = spec_threads(&spec).min(app.config.thinkers.max(1) as u32);
        let permit = app.thinkers.clone().acquire_many_owned(threads).await;
        let done = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            job()
        })
        .await;
        let gate = entry.commit.write().await;
        let (write, finished) = {
            let mut session = entry.lock();
            match done {
                Ok(completion) => completion(&mut **session),
                Err(e) => session.job_failed(if e.is_panic() { "the agent panicked".into() } else { e.to_string() }),
            }
            (app.persist(&entry, &mut **session), session.finished())
        };
        app.settle(&entry, finished);
        let stored = committed(write).await;
        drop(gate);
        if let Err(e) = stored {
            entry.lock().halt(e.message);
            entry.changed();
            return;
        }
        entry.changed();
        drive(app, entry);
    });
}

/// The server's routes over a fresh set of matches (and those the data directory holds); sweeps
/// idle matches in the background. Call inside a Tokio runtime.
pub fn router(config: Config) -> Router {
    build(config).unwrap_or_else(|e| panic!("{e}"))
}

/// [`router`], or why the data directory cannot be used.
pub fn build(config: Config) -> Result<Router, String> {
    meeple_game::limits::set_tree_cap(config.max_agent_memory);
    let store = match &config.data_dir {
        Some(dir) => Some(Store::open(dir, config.keep_finished)?),
        None => None,
    };
    let app = Arc::new(App {
        allowed: config.allowed(),
        matches: Mutex::new(HashMap::new()),
        pending: AtomicUsize::new(0),
        thinkers: Arc::new(Semaphore::new(config.thinkers.max(1))),
        analysts: Arc::new(Semaphore::new(config.analysts.max(1))),
        budget: Budget::new(config.memory_budget),
        store,
        streams: AtomicUsize::new(0),
        asking: Mutex::new(HashMap::new()),
        config,
    });
    resume(&app)?;
    let sweeper = Arc::downgrade(&app);
    let every = app.config.sweep_every;
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            match sweeper.upgrade() {
                Some(app) => app.sweep(),
                None => return,
            }
        }
    });
    let policy = Arc::new(guard::Policy::new(&app.config.hosts, app.config.body_timeout));
    let api = Router::new()
        .route("/api/catalog", get(catalog))
        .route("/api/game", get(game_info))
        .route("/api/matches", get(list_matches).post(create_match))
        .route("/api/matches/{id}", get(snapshot).delete(delete_match))
        .route("/api/matches/{id}/moves", post(submit))
        .route("/api/matches/{id}/undo", post(undo))
        .route("/api/matches/{id}/control", post(control))
        .route("/api/matches/{id}/analysis", post(analysis))
        .route("/api/matches/{id}/events", get(events))
        .route("/api/matches/{id}/record", get(record))
        .route("/api/records", get(list_records))
        .route("/api/status", get(status))
        .route("/api/games", get(list_games))
        .route("/api/games/{id}/record", get(game_record))
        .layer(DefaultBodyLimit::max(MAX_BODY));
    let uploads = Router::new().route("/api/replays", post(open_replay)).layer(DefaultBodyLimit::max(MAX_RECORDS_BODY));
    Ok(Router::new()
        .route("/", get(page))
        .route("/m/{id}", get(page))
        .route("/app.js", get(|| async { ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], SCRIPT) }))
        .route("/style.css", get(|| async { ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE) }))
        .merge(api)
        .merge(uploads)
        .fallback(|| async {
            ApiError::not_found("no such page or API route; the API is under /api (see docs/web.md)")
        })
        .with_state(app)
        .layer(middleware::from_fn_with_state(policy, guard::check)))
}

/// Brings back the matches the store has in progress.
fn resume(app: &Arc<App>) -> Result<(), String> {
    let Some(store) = &app.store else { return Ok(()) };
    let rows = store.live_blocking(app.config.max_matches)?;
    for row in rows {
        let row = match row {
            Ok(r) => r,
            Err((id, why)) => {
                eprintln!("meeple serve: match {id} is not resumed: {why}");
                continue;
            }
        };
        let session = match session::restore(&row.stored, &row.moves, &app.allowed) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("meeple serve: match {} is not resumed: {}", row.id, e.message);
                continue;
            }
        };
        let bytes = meeple_games::with_game!(row.stored.game.as_str(), |g| app.config.match_bytes(&g))
            .unwrap_or(MATCH_BASE_BYTES);
        // Its agents are built at their next move; until then they are counted at the cap.
        let agents = row.stored.tokens.iter().filter(|t| t.is_none()).count() as u64 * app.config.max_agent_memory;
        let Ok(memory) = app.budget.reserve(bytes + agents, "a resumed match") else {
            eprintln!("meeple serve: match {} is not resumed: the memory budget is full", row.id);
            continue;
        };
        let entry = app.insert(row.id, session, None, memory);
        drive(app.clone(), entry);
    }
    Ok(())
}

/// Serves on `host:port` until Ctrl-C; calls `ready` with the address once listening. Each
/// connection has a header (and idle) timeout; beyond the connection limit new ones are closed.
pub async fn serve(
    host: &str,
    port: u16,
    mut config: Config,
    ready: impl FnOnce(std::net::SocketAddr),
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind((host, port)).await?;
    let local = listener.local_addr()?;
    if !local.ip().is_unspecified() && !local.ip().is_loopback() {
        // Its own address is a name the server answers to.
        config.hosts.push(local.ip().to_string());
    }
    let (header_timeout, limit) = (config.header_timeout, config.max_connections);
    let router = build(config).map_err(std::io::Error::other)?;
    ready(local);
    let connections = Arc::new(Semaphore::new(limit.max(1)));
    let shutdown = tokio::signal::ctrl_c();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(c) => c,
                // Out of descriptors or a reset connection: wait a little rather than spin.
                Err(_) => { tokio::time::sleep(Duration::from_millis(20)).await; continue }
            },
            _ = &mut shutdown => return Ok(()),
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            drop(stream);
            continue;
        };
        let service = hyper_util::service::TowerToHyperService::new(router.clone().layer(Extension(Peer(peer.ip()))));
        tokio::spawn(async move {
            let _permit = permit;
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout)
                .max_buf_size(64 * 1024)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            let _ = connection.await;
        });
    }
}

type Shared = AxState<Arc<App>>;

async fn page() -> Html<&'static str> {
    Html(INDEX)
}

fn json_body<T: serde::de::DeserializeOwned>(body: &Bytes, what: &str) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError::bad(format!("bad JSON for {what}: {e}")))
}

/// The token a request carries: the header, else `?token=`.
fn token<'a>(headers: &'a HeaderMap, query: &'a HashMap<String, String>) -> Option<&'a str> {
    headers.get(TOKEN_HEADER).and_then(|v| v.to_str().ok()).or_else(|| query.get("token").map(String::as_str))
}

/// The seat a request views: `?viewer=N` or `spectator`, else the seat of its token.
fn parse_viewer(query: &HashMap<String, String>, access: Access) -> Result<Option<Player>, ApiError> {
    match query.get("viewer").map(|s| s.trim()) {
        None | Some("") => Ok(access.seat),
        Some("spectator") => Ok(None),
        Some(v) => v
            .parse::<Player>()
            .map(Some)
            .map_err(|_| ApiError::bad(format!("viewer '{v}' is not a seat number or \"spectator\""))),
    }
}

fn parse_usize(query: &HashMap<String, String>, name: &str) -> Result<Option<usize>, ApiError> {
    query
        .get(name)
        .map(|v| v.trim().parse::<usize>().map_err(|_| ApiError::bad(format!("{name} '{v}' is not a ply number"))))
        .transpose()
}

fn param_json(p: &meeple_game::ParamInfo) -> Value {
    json!({ "name": p.name, "default": p.default, "accepts": p.accepts, "help": p.help })
}

async fn catalog() -> axum::Json<Value> {
    let games: Vec<Value> = meeple_games::GAMES
        .iter()
        .map(|g| {
            let params: Vec<Value> = g.params.iter().map(param_json).collect();
            json!({ "name": g.name, "about": g.about, "params": params })
        })
        .collect();
    axum::Json(json!({ "games": games }))
}

fn describe<G: Game>(game: &G) -> Value {
    let agents: Vec<Value> = meeple_learn::agent_infos(game)
        .iter()
        .map(|a| {
            let params: Vec<Value> = a.params.iter().map(param_json).collect();
            json!({ "name": a.name, "about": a.about, "params": params })
        })
        .collect();
    let (opponent, advisor) = game.table_agents();
    json!({
        "spec": game.spec().to_string(), "name": G::INFO.name, "players": game.num_players(), "agents": agents,
        "opponent": opponent, "advisor": advisor,
    })
}

async fn game_info(Query(query): Query<HashMap<String, String>>) -> Result<axum::Json<Value>, ApiError> {
    let spec = query.get("spec").ok_or_else(|| ApiError::bad("give the game as ?spec=NAME:KEY=VALUE,..."))?;
    Ok(axum::Json(meeple_games::with_game!(spec.as_str(), |g| describe(&g))?))
}

/// What the server holds against its limits (no secrets): for operators and load tests.
async fn status(AxState(app): Shared) -> axum::Json<Value> {
    let matches = app.matches.lock().unwrap_or_else(|e| e.into_inner()).len();
    axum::Json(json!({
        "matches": matches, "max_matches": app.config.max_matches,
        "memory_reserved": app.budget.used(), "memory_budget": app.budget.total(),
        "streams": app.streams.load(Ordering::Relaxed), "max_streams": app.config.max_streams,
        "thinkers_free": app.thinkers.available_permits(), "analysts_free": app.analysts.available_permits(),
        // Whether games are kept, not where: no path of this machine leaves the server.
        "keeps_games": app.store.is_some(),
    }))
}

async fn list_matches(AxState(app): Shared) -> axum::Json<Value> {
    let matches: Vec<Arc<Entry>> = app.matches.lock().unwrap_or_else(|e| e.into_inner()).values().cloned().collect();
    let mut list: Vec<Value> = matches
        .iter()
        .filter_map(|e| {
            // A match being changed (or its change not yet committed) is shown next time
            // rather than waited for.
            let _committed = e.commit.try_read().ok()?;
            let s = e.session.try_lock().ok()?;
            let mut v = s.summary();
            v["id"] = json!(e.id);
            Some(v)
        })
        .collect();
    list.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    axum::Json(json!({ "matches": list }))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateRequest {
    game: String,
    seats: Vec<String>,
    /// A seed of the client's choosing makes the match "open"; without one it is secret.
    seed: Option<u64>,
    /// Milliseconds each agent may think per move (default 1000).
    move_time_ms: Option<u64>,
    /// Pause before each move when only agents play (default 500 ms).
    delay_ms: Option<u64>,
    /// The seat whose view the answer shows (default: the first person's, else a spectator's).
    viewer: Option<Player>,
}

async fn create_match(AxState(app): Shared, peer: Option<Extension<Peer>>, body: Bytes) -> Result<Response, ApiError> {
    let req: CreateRequest = json_body(&body, "a new match")?;
    if req.seats.len() > 16 || req.game.len() > 1024 {
        return Err(ApiError::bad("a match has at most 16 seats and a game spec of at most 1 KB"));
    }
    let client = peer.map(|Extension(Peer(ip))| ip);
    let slot = app.slot(client)?;
    let bytes = meeple_games::with_game!(req.game.as_str(), |g| app.config.match_bytes(&g))?;
    let mut memory = app.budget.reserve(bytes, "a new match")?;
    let setup = Setup {
        game: req.game,
        seats: req.seats,
        seed: req.seed,
        move_time: Duration::from_millis(req.move_time_ms.unwrap_or(1000)),
        delay: Duration::from_millis(req.delay_ms.unwrap_or(500).min(u64::MAX / 2)),
    };
    let viewer = req.viewer.or_else(|| setup.seats.iter().position(|s| s.trim() == "human"));
    let allowed = app.allowed.clone();
    // Building agents loads networks and tables: off the async threads.
    let session =
        tokio::task::spawn_blocking(move || session::create(&setup, &allowed, &mut random_token, random_u64()))
            .await
            .map_err(|e| ApiError::bad(format!("could not build the match: {e}")))??;
    // Its agents' tables and the trees they may grow, as they say once built.
    memory.join(app.budget.reserve(session.agents_bound(), "the match's agents")?);
    let stored = session.stored().expect("a new match is not a replay");
    let id = random_token();
    let owner = stored.owner.clone();
    // The creator holds every person seat's token, not an agent's eyes.
    let seat = viewer.filter(|&v| stored.tokens.get(v).is_some_and(Option::is_some));
    session.check_viewer(viewer, Access { seat, owner: true })?;
    let mut snapshot = session.snapshot(viewer, None, None)?;
    let write = app.store.as_ref().map(|s| s.create(&id, &stored));
    let entry = app.insert(id.clone(), session, client, memory);
    drop(slot);
    if let Err(e) = committed(write).await {
        // A match that could not be kept is not offered either.
        app.remove(&id, false);
        return Err(e);
    }
    drive(app.clone(), entry);
    snapshot["id"] = json!(id);
    let seats: Vec<Value> = stored
        .tokens
        .iter()
        .enumerate()
        .filter_map(|(i, t)| {
            t.as_ref().map(|t| json!({ "seat": i, "token": t, "join": format!("/m/{id}#seat={i}&token={t}") }))
        })
        .collect();
    let body = json!({ "id": id, "url": format!("/m/{id}"), "owner": owner, "seats": seats, "snapshot": snapshot });
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

async fn snapshot(
    AxState(app): Shared,
    Path(id): Path<String>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Result<axum::Json<Value>, ApiError> {
    let entry = app.entry(&id)?;
    let (ply, log_from) = (parse_usize(&query, "ply")?, parse_usize(&query, "log_from")?);
    let committed = entry.commit.read().await;
    let mut snap = {
        let s = entry.lock();
        let access = s.access(token(&headers, &query));
        let viewer = parse_viewer(&query, access)?;
        s.check_viewer(viewer, access)?;
        s.snapshot(viewer, ply, log_from)?
    };
    drop(committed);
    snap["id"] = json!(id);
    Ok(axum::Json(snap))
}

async fn delete_match(
    AxState(app): Shared,
    Path(id): Path<String>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Result<StatusCode, ApiError> {
    let entry = app.entry(&id)?;
    if !entry.lock().access(token(&headers, &query)).owner {
        return Err(ApiError::forbidden("deleting a match needs its owner's token (given when it was created)"));
    }
    if app.remove(&id, true) { Ok(StatusCode::NO_CONTENT) } else { Err(ApiError::not_found("no such match")) }
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct MoveBody {
    ply: usize,
    action: Option<String>,
    id: Option<meeple_game::Action>,
    /// The seat the answer's snapshot is for (default: the mover's).
    viewer: Option<Player>,
}

async fn submit(
    AxState(app): Shared,
    Path(id): Path<String>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
    body: Bytes,
) -> Result<axum::Json<Value>, ApiError> {
    let req: MoveBody = json_body(&body, "a move (give {\"ply\": N, \"action\": \"...\"})")?;
    let entry = app.entry(&id)?;
    let mut snap = command(&app, entry, token(&headers, &query), |session, access| {
        let viewer = req.viewer.or(access.seat);
        session.check_viewer(viewer, access)?;
        session.submit(&MoveRequest { ply: req.ply, action: req.action, id: req.id }, access)?;
        session.snapshot(viewer, None, None)
    })
    .await?;
    snap["id"] = json!(id);
    Ok(axum::Json(snap))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct UndoBody {
    /// The ply the asker sees: a second click of the same undo is refused as stale.
    ply: usize,
}

async fn undo(
    AxState(app): Shared,
    Path(id): Path<String>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
    body: Bytes,
) -> Result<axum::Json<Value>, ApiError> {
    let req: UndoBody = json_body(&body, "an undo (give {\"ply\": N}, the ply you see)")?;
    let entry = app.entry(&id)?;
    let ply = command(&app, entry, token(&headers, &query), |s, access| s.undo(req.ply, access)).await?;
    Ok(axum::Json(json!({ "ply": ply })))
}

async fn control(
    AxState(app): Shared,
    Path(id): Path<String>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
    body: Bytes,
) -> Result<axum::Json<Value>, ApiError> {
    let req: Control = json_body(&body, "controls ({\"paused\": bool, \"delay_ms\": N, \"step\": true})")?;
    let entry = app.entry(&id)?;
    command(&app, entry, token(&headers, &query), |s, access| {
        if !access.owner {
            return Err(ApiError::forbidden("pausing or stepping a match needs its owner's token"));
        }
        s.control(&req)
    })
    .await?;
    Ok(axum::Json(json!({ "ok": true })))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AnalysisRequest {
    agent: String,
    ply: Option<usize>,
    viewer: Option<Player>,
    time_ms: Option<u64>,
}

async fn analysis(
    AxState(app): Shared,
    peer: Option<Extension<Peer>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
    body: Bytes,
) -> Result<axum::Json<Value>, ApiError> {
    let req: AnalysisRequest = json_body(&body, "an analysis ({\"agent\": SPEC, \"time_ms\": N})")?;
    let entry = app.entry(&id)?;
    let time = Duration::from_millis(req.time_ms.unwrap_or(1000));
    // Stops the search if the client goes away (this handler is dropped) while it runs.
    let cancel = meeple_game::CancelHandle::new().map(Arc::new);
    let job = {
        let s = entry.lock();
        let access = s.access(token(&headers, &query));
        let viewer = req.viewer.or(access.seat);
        s.check_viewer(viewer, access)?;
        s.analysis(&req.agent, req.ply, viewer, time, cancel.as_ref().map(|c| c.token()))?
    };
    let client = peer.map(|Extension(Peer(ip))| ip);
    if let Some(ip) = client {
        let mut asking = app.asking.lock().unwrap_or_else(|e| e.into_inner());
        let n = asking.entry(ip).or_insert(0);
        if *n >= ANALYSES_PER_CLIENT {
            return Err(ApiError::too_many(format!(
                "this address has {ANALYSES_PER_CLIENT} analyses under way; wait for one to answer"
            )));
        }
        *n += 1;
    }
    let asking = Asking { app: app.clone(), client };
    let memory = app.budget.reserve(app.config.max_agent_memory, "an analysis")?;
    let threads = spec_threads(&req.agent).min(app.config.analysts.max(1) as u32);
    // Waits for a place among the analysts; a client that hangs up before one frees never
    // starts its job. Once running, the place is the job's until it ends (its time is capped).
    let permit = tokio::time::timeout(Duration::from_secs(30), app.analysts.clone().acquire_many_owned(threads))
        .await
        .map_err(|_| ApiError::busy("every analyst is busy; try again shortly"))?
        .map_err(|_| ApiError::busy("the server is stopping"))?;
    let mut on_hang_up = HangUp(cancel.clone());
    let answer = tokio::task::spawn_blocking(move || {
        // The job keeps its place (and its cancel flag) until it ends, hung up or not.
        let _held = (permit, memory, asking, cancel);
        job()
    })
    .await
    .map_err(|_| ApiError::bad("the agent stopped with a panic"))??;
    on_hang_up.0 = None;
    Ok(axum::Json(answer))
}

/// Cancels an analysis whose client went away: dropped with the handler before its answer.
struct HangUp(Option<Arc<meeple_game::CancelHandle>>);

impl Drop for HangUp {
    fn drop(&mut self) {
        if let Some(c) = &self.0 {
            c.cancel();
        }
    }
}

/// Counts an event stream against the caps while it lives.
struct Subscription {
    app: Arc<App>,
    entry: Arc<Entry>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.app.streams.fetch_sub(1, Ordering::Relaxed);
        self.entry.subscribers.fetch_sub(1, Ordering::Relaxed);
    }
}

async fn events(
    AxState(app): Shared,
    Path(id): Path<String>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let entry = app.entry(&id)?;
    let viewer = {
        let s = entry.lock();
        let access = s.access(token(&headers, &query));
        let viewer = parse_viewer(&query, access)?;
        s.check_viewer(viewer, access)?;
        viewer
    };
    if entry.subscribers.fetch_add(1, Ordering::Relaxed) >= app.config.max_subscribers {
        entry.subscribers.fetch_sub(1, Ordering::Relaxed);
        return Err(ApiError::too_many(format!("this match has its {} watchers", app.config.max_subscribers)));
    }
    if app.streams.fetch_add(1, Ordering::Relaxed) >= app.config.max_streams {
        app.streams.fetch_sub(1, Ordering::Relaxed);
        entry.subscribers.fetch_sub(1, Ordering::Relaxed);
        return Err(ApiError::busy("the server has all the event streams it serves"));
    }
    let subscription = Subscription { app: app.clone(), entry: entry.clone() };
    // Each event carries the log lines this stream has not sent yet (from the ply it last
    // sent, or from where an undo took the game back), not the whole log.
    let mut sent: Option<usize> = None;
    let stream = WatchStream::new(entry.version.subscribe()).take_while(|v| *v != u64::MAX).filter_map(move |_| {
        let _alive = &subscription;
        entry.touch();
        // A change not yet committed is skipped: its writer signals again once it is.
        let _committed = entry.commit.try_read().ok()?;
        let snap = {
            let s = entry.lock();
            let latest = s.ply();
            let from = sent.map(|p| p.min(latest));
            s.snapshot(viewer, None, from)
        };
        let event = match snap {
            Ok(mut s) => {
                sent = s["ply"].as_u64().map(|p| p as usize);
                s["id"] = json!(id);
                Event::default().event("state").id(s["ply"].to_string()).data(s.to_string())
            }
            Err(e) => Event::default().event("problem").data(json!({ "error": e.message }).to_string()),
        };
        Some(Ok::<Event, Infallible>(event))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()).into_response())
}

fn attachment(name: &str, line: String) -> Response {
    let disposition = format!("attachment; filename=\"meeple-{name}.jsonl\"");
    ([(header::CONTENT_TYPE, "application/json".to_string()), (header::CONTENT_DISPOSITION, disposition)], line + "\n")
        .into_response()
}

async fn record(AxState(app): Shared, Path(id): Path<String>) -> Result<Response, ApiError> {
    let entry = app.entry(&id)?;
    // A move not yet committed is not in the record: as a snapshot, it waits for the commit.
    let _committed = entry.commit.read().await;
    let line = {
        let session = entry.lock();
        if !session.public() {
            return Err(ApiError::forbidden(
                "the record shows every hidden deal (private cards, development cards): it can be downloaded once the game is over",
            ));
        }
        session.record().to_json()
    };
    Ok(attachment(&id, line))
}

async fn list_games(AxState(app): Shared) -> Result<axum::Json<Value>, ApiError> {
    let Some(store) = &app.store else { return Ok(axum::Json(json!({ "games": [] }))) };
    let games = store.finished(200).await.map_err(|_| ApiError::busy("the game store has stopped"))?;
    Ok(axum::Json(json!({ "games": games.map_err(ApiError::busy)? })))
}

async fn stored_record(app: &App, id: &str) -> Result<String, ApiError> {
    let store = app.store.as_ref().ok_or_else(|| ApiError::not_found("this server keeps no games"))?;
    if id.len() > 64 {
        return Err(ApiError::not_found("no such finished game"));
    }
    store
        .record(id)
        .await
        .map_err(|_| ApiError::busy("the game store has stopped"))?
        .map_err(ApiError::busy)?
        .ok_or_else(|| ApiError::not_found("no such finished game"))
}

async fn game_record(AxState(app): Shared, Path(id): Path<String>) -> Result<Response, ApiError> {
    let line = stored_record(&app, &id).await?;
    Ok(attachment(&id, line))
}

/// The `index`-th game of records text: lines are counted, only the one asked for is read.
fn pick_record(text: &str, index: usize) -> Result<(GameRecord, usize), ApiError> {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    if lines.is_empty() {
        return Err(ApiError::bad("the records hold no game"));
    }
    let count = lines.len();
    let line = lines
        .get(index)
        .ok_or_else(|| ApiError::bad(format!("index {index} is beyond the {count} games in these records")))?;
    let entry = records::parse_line(line, true)
        .map_err(|e| ApiError::unprocessable(format!("the records, game {}: {e}", index + 1)))?;
    Ok((entry.into_record(), count))
}

async fn list_records(AxState(app): Shared) -> axum::Json<Value> {
    let files: Vec<Value> = app
        .config
        .records
        .iter()
        .enumerate()
        .map(|(i, p)| json!({ "file": i, "name": p.file_name().map(|n| n.to_string_lossy().to_string()) }))
        .collect();
    axum::Json(json!({ "files": files }))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplayRequest {
    /// The records as text (JSON lines), or
    records: Option<String>,
    /// the number of a file the server was started with (`GET /api/records`), or
    file: Option<usize>,
    /// a finished game the server keeps (`GET /api/games`).
    game: Option<String>,
    /// Which game of the records (0 = the first).
    #[serde(default)]
    index: usize,
}

async fn open_replay(AxState(app): Shared, peer: Option<Extension<Peer>>, body: Bytes) -> Result<Response, ApiError> {
    // The upload itself is counted while it is read.
    let reading = app.budget.reserve(2 * body.len() as u64, "the uploaded records")?;
    let req: ReplayRequest =
        json_body(&body, "a replay ({\"records\": TEXT}, {\"file\": N} or {\"game\": ID}, and \"index\")")?;
    drop(body);
    let client = peer.map(|Extension(Peer(ip))| ip);
    let slot = app.slot(client)?;
    let text = match (req.records, req.file, req.game) {
        (Some(t), None, None) => t,
        (None, Some(k), None) => {
            let path = app.config.records.get(k).ok_or_else(|| {
                ApiError::not_found(format!("no records file {k}: the server has {}", app.config.records.len()))
            })?;
            let path = path.clone();
            tokio::task::spawn_blocking(move || read_capped(&path))
                .await
                .map_err(|e| ApiError::bad(e.to_string()))??
        }
        (None, None, Some(id)) => stored_record(&app, &id).await?,
        _ => {
            return Err(ApiError::bad(
                "give one of \"records\" (the file's text), \"file\" (a served file's number) or \"game\" (a kept game's id)",
            ));
        }
    };
    let (record, count) = pick_record(&text, req.index)?;
    drop(text);
    let max_plies = app.config.max_plies;
    let bytes = meeple_games::with_game!(record.game.as_str(), |g| app.config.match_bytes(&g))?;
    let memory = app.budget.reserve(bytes, "a replay")?;
    let owner = random_token();
    let given = owner.clone();
    let session = tokio::task::spawn_blocking(move || session::open_replay(&record, max_plies, given))
        .await
        .map_err(|e| ApiError::bad(e.to_string()))??;
    drop(reading);
    let plies = session.ply();
    let id = random_token();
    app.insert(id.clone(), session, client, memory);
    drop(slot);
    Ok((
        StatusCode::CREATED,
        axum::Json(json!({ "id": id, "url": format!("/m/{id}"), "owner": owner, "plies": plies, "games": count })),
    )
        .into_response())
}

fn read_capped(path: &std::path::Path) -> Result<String, ApiError> {
    // The operator named this file at start-up; its name is shown, the system's message is not.
    let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    meeple_game::limits::read_text(path, MAX_RECORDS_BODY as u64, "records file")
        .map_err(|_| ApiError::unprocessable(format!("records file '{name}' cannot be read, or is over 16 MB")))
}
