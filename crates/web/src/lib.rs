//! `meeple serve`: every game in the browser, safe to share with strangers. The server owns the
//! matches (rules, chance, agents); the embedded page draws the views the games give and sends
//! clicks back as moves.
//!
//! The API is JSON over HTTP for commands and server-sent events for updates; see `docs/web.md`
//! for every route and the safety model. In short: a person's seat answers only to the secret
//! token of whoever claimed it (the creator gets its own seat's token and invitations for the
//! others); the seed that fixes every deal stays on the server until the game is over; every
//! request passes [`guard`] (own `Host`, no foreign `Origin`, JSON commands, no token in an
//! address); specs from clients read files only from allowed directories; agents are built and
//! think on the blocking pool, never under a lock, in fair shares per client with a person's
//! move first; one memory budget with a share per client; a change to a match is stored before
//! it is shown, and matches resume after a restart.

mod budget;
mod clients;
mod config;
mod conns;
mod error;
mod guard;
mod pool;
mod routes;
pub mod session;
pub mod store;
mod streams;
mod upload;

pub use clients::{Client, Grouping};
pub use config::Config;
pub use error::ApiError;
pub use session::{Control, MoveRequest, SPECTATOR, Setup};

use axum::extract::{DefaultBodyLimit, Extension};
use axum::http::{HeaderMap, header};
use axum::routing::{get, post};
use axum::{Router, middleware};
use budget::{Budget, Reservation};
use meeple_game::{Game, Player};
use pool::{Class, Pool};
use session::{Access, Allowed, Change, Session};
use std::collections::HashMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use store::Store;
use tokio::sync::{Semaphore, watch};

const INDEX: &str = include_str!("../static/index.html");
const SCRIPT: &str = include_str!("../static/app.js");
const STYLE: &str = include_str!("../static/style.css");

/// The largest request body outside record uploads.
pub const MAX_BODY: usize = 64 * 1024;
/// The largest records upload.
pub const MAX_RECORDS_BODY: usize = 16 * 1024 * 1024;
/// The header a client sends its seat or owner token in. No route takes a token in its
/// address (a proxy's log would keep it): event streams open with a ticket instead.
pub const TOKEN_HEADER: &str = "x-meeple-token";
/// Memory a match's bookkeeping is counted at, besides its moves.
const MATCH_BASE_BYTES: u64 = 64 << 10;

/// Eight bytes from the operating system.
pub fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).expect("the operating system gives random bytes");
    u64::from_le_bytes(b)
}

/// 128 random bits from the operating system, as 32 hex digits: match ids, seat tokens,
/// invitations and stream tickets.
pub fn random_token() -> String {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).expect("the operating system gives random bytes");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The address a request came from (set by [`serve`]; absent in tests that call the router,
/// whose requests then count against no client's share).
#[derive(Clone, Copy, Debug)]
pub struct Peer(pub IpAddr);

struct Entry {
    id: String,
    session: Mutex<Box<dyn Session>>,
    /// Bumped on every change; event streams follow it. `u64::MAX`: the match is gone.
    version: watch::Sender<u64>,
    touched: Mutex<Instant>,
    /// Whose share the match counts against.
    client: Option<Client>,
    /// Event streams its spectators hold, and each seat's.
    spectators: AtomicUsize,
    seat_streams: Vec<AtomicUsize>,
    /// Each seat's token's generation, bumped when the token is replaced: a ticket or a stream
    /// of an older generation is void (a leaked token's holder loses the seat's view at once).
    seat_epoch: Vec<AtomicU64>,
    /// When a seat's token last changed the match (a move, an undo, an answer), in
    /// milliseconds of [`clock_ms`]; 0: never.
    seat_acted: AtomicU64,
    /// The ply (plus one) a person's answer is being waited for, so one timer waits per
    /// question however often the match is driven meanwhile; 0: none.
    answer_armed: AtomicU64,
    memory: Mutex<Option<Reservation>>,
    /// Stored in the database (a replay is not).
    kept: bool,
    /// A finished game opened from the store: counted against no client's share.
    past: bool,
    /// Held from computing a change until it is stored and applied, so changes are made one
    /// at a time, each on the match as the one before left it. Readers never wait for it: the
    /// match shows only what is stored.
    gate: tokio::sync::Mutex<()>,
}

impl Entry {
    fn lock(&self) -> std::sync::MutexGuard<'_, Box<dyn Session>> {
        // A panic while locked (a game bug) must not take every later request down with it.
        self.session.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn touch(&self) {
        *self.touched.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    /// Whether a person is at the table now: a seat's event stream is open, or a seat's token
    /// acted lately. A seat merely named `human` is not a person; only presence earns a
    /// person's priority for the match's agents.
    fn attended(&self) -> bool {
        let acted = self.seat_acted.load(Ordering::Relaxed);
        self.seat_streams.iter().any(|n| n.load(Ordering::Relaxed) > 0)
            || (acted > 0 && clock_ms().saturating_sub(acted) <= PRESENCE.as_millis() as u64)
    }

    /// The generation of `seat`'s token now (0 for a seat out of range).
    fn epoch(&self, seat: Player) -> u64 {
        self.seat_epoch.get(seat).map_or(0, |e| e.load(Ordering::Relaxed))
    }

    fn gone(&self) -> bool {
        *self.version.borrow() == u64::MAX
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
    thinkers: Arc<Pool>,
    analysts: Arc<Pool>,
    budget: Arc<Budget>,
    store: Option<Store>,
    /// Spectators' streams in all, and per client.
    streams: AtomicUsize,
    client_streams: clients::Counts,
    /// Analyses asked for (waiting or running) per client.
    asking: clients::Counts,
    tickets: streams::Tickets,
    /// The first page of past games, for the store generation it was read at.
    games_page: Mutex<Option<(u64, usize, serde_json::Value)>>,
    /// Lookups of stored matches at once (each a read of the store).
    loading: Semaphore,
}

/// Analyses one client may have waiting or running at once.
const ANALYSES_PER_CLIENT: usize = 2;

/// A place among the matches, taken before a match is built.
struct Slot<'a>(&'a App);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.pending.fetch_sub(1, Ordering::Relaxed);
    }
}

impl App {
    /// The client a request comes from.
    fn caller(&self, peer: Option<Extension<Peer>>, headers: &HeaderMap) -> Option<Client> {
        peer.map(|Extension(Peer(ip))| self.config.clients.client(ip, headers))
    }

    /// The match `id`, from memory or, if the store has it (dropped as idle, or finished before
    /// a restart), brought back: a match in progress counted against `client`'s share like a
    /// new one; a finished game, which nobody can change, against nobody's, among the last
    /// [`PAST_GAMES`] opened (the one looked at longest ago goes first).
    async fn entry(self: &Arc<Self>, id: &str, client: Option<Client>) -> Result<Arc<Entry>, ApiError> {
        if let Some(e) = self.matches.lock().unwrap_or_else(|e| e.into_inner()).get(id).cloned() {
            e.touch();
            return Ok(e);
        }
        let missing = || ApiError::not_found("no such match (it may have expired)");
        let Some(store) = &self.store else { return Err(missing()) };
        if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(missing());
        }
        let _turn = self.loading.acquire().await.map_err(|_| ApiError::busy("the server is stopping"))?;
        // Another request may have brought it back meanwhile.
        if let Some(e) = self.matches.lock().unwrap_or_else(|e| e.into_inner()).get(id).cloned() {
            e.touch();
            return Ok(e);
        }
        let kept = store.load(id).await.map_err(ApiError::busy)?.ok_or_else(missing)?;
        let past = matches!(kept, store::Kept::Over(_));
        let slot = if past { None } else { Some(self.slot(client)?) };
        let (session, bytes) = match kept {
            store::Kept::Broken(why) => {
                eprintln!("meeple serve: match {id} is not resumed and is pruned: {why}");
                drop(store.discard(id));
                return Err(missing());
            }
            store::Kept::Live(row) => {
                let allowed = self.allowed.clone();
                let restored = tokio::task::spawn_blocking(move || {
                    session::restore(&row.stored, &row.moves, &allowed).map(|s| (s, row))
                })
                .await
                .map_err(|_| ApiError::bad("the match could not be rebuilt"))?;
                let (session, row) = match restored {
                    Ok(r) => r,
                    Err(e) => {
                        eprintln!("meeple serve: match {id} is not resumed and is pruned: {}", e.message);
                        drop(store.discard(id));
                        return Err(missing());
                    }
                };
                (session, self.resumed_bytes(&row.stored))
            }
            store::Kept::Over(text) => {
                let record = meeple_game::GameRecord::from_json(&text)
                    .map_err(|e| ApiError::unprocessable(format!("the kept record cannot be read: {e}")))?;
                let bytes = meeple_games::with_game!(record.game.as_str(), |g| self.config.match_bytes(&g))?;
                let max = self.config.max_plies;
                let session =
                    tokio::task::spawn_blocking(move || session::open_replay(&record, max, String::new(), true))
                        .await
                        .map_err(|_| ApiError::bad("the game could not be rebuilt"))??;
                (session, bytes)
            }
        };
        let owner = if past { None } else { client };
        let memory = self.budget.reserve(bytes, "a kept match", owner)?;
        let entry = self.insert(id.to_string(), session, owner, memory, past);
        drop(slot);
        if past {
            self.evict_past(id);
        }
        drive(self.clone(), entry.clone());
        Ok(entry)
    }

    /// Keeps at most [`PAST_GAMES`] finished games from the store in memory, dropping those
    /// looked at longest ago (never `keep`, the one just opened); the store still has them.
    fn evict_past(&self, keep: &str) {
        let mut past: Vec<(Instant, String)> = self
            .matches
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|e| e.past && e.id != keep)
            .map(|e| (*e.touched.lock().unwrap_or_else(|x| x.into_inner()), e.id.clone()))
            .collect();
        if past.len() < PAST_GAMES {
            return;
        }
        past.sort();
        for (_, id) in &past[..=past.len() - PAST_GAMES] {
            self.remove(id, false);
        }
    }

    /// Memory a stored match takes once resumed: its moves, and its agents at the cap until
    /// they are built at their next move.
    fn resumed_bytes(&self, stored: &session::Stored) -> u64 {
        let bytes =
            meeple_games::with_game!(stored.game.as_str(), |g| self.config.match_bytes(&g)).unwrap_or(MATCH_BASE_BYTES);
        let agents =
            stored.seats.iter().filter(|s| s.as_str() != "human").count() as u64 * self.config.max_agent_memory;
        bytes + agents
    }

    /// Checks the caps before anything is built: all matches, and this client's (finished
    /// games opened from the store count in neither).
    fn slot(&self, client: Option<Client>) -> Result<Slot<'_>, ApiError> {
        let matches = self.matches.lock().unwrap_or_else(|e| e.into_inner());
        let pending = self.pending.fetch_add(1, Ordering::Relaxed);
        let slot = Slot(self);
        let live = matches.values().filter(|e| !e.past).count();
        if live + pending >= self.config.max_matches {
            return Err(ApiError::busy(format!(
                "the server holds its limit of {} matches; finish or delete one (DELETE /api/matches/ID)",
                self.config.max_matches
            )));
        }
        if let Some(c) = client {
            let mine = matches.values().filter(|e| e.client == Some(c) && !e.past).count();
            let others = (live + pending).saturating_sub(mine) as u64;
            let cap =
                clients::fair_share(self.config.max_matches as u64, others, self.config.max_matches_per_client as u64);
            if mine as u64 >= cap {
                return Err(ApiError::too_many(format!(
                    "this address holds its share of matches ({mine}: at most {}, and half of what others leave \
                     free); finish or delete one first",
                    self.config.max_matches_per_client
                )));
            }
        }
        Ok(slot)
    }

    /// Puts a match among the live ones; if one with its id got there first (two requests
    /// bringing a stored match back), that one stays and this is dropped.
    fn insert(
        &self,
        id: String,
        session: Box<dyn Session>,
        client: Option<Client>,
        memory: Reservation,
        past: bool,
    ) -> Arc<Entry> {
        let kept = self.store.is_some() && session.stored().is_some();
        let seats = session.seats();
        let entry = Arc::new(Entry {
            id: id.clone(),
            session: Mutex::new(session),
            version: watch::channel(0).0,
            touched: Mutex::new(Instant::now()),
            client,
            spectators: AtomicUsize::new(0),
            seat_streams: (0..seats).map(|_| AtomicUsize::new(0)).collect(),
            seat_epoch: (0..seats).map(|_| AtomicU64::new(0)).collect(),
            seat_acted: AtomicU64::new(0),
            answer_armed: AtomicU64::new(0),
            memory: Mutex::new(Some(memory)),
            kept,
            past,
            gate: tokio::sync::Mutex::new(()),
        });
        self.matches.lock().unwrap_or_else(|e| e.into_inner()).entry(id).or_insert(entry).clone()
    }

    /// Drops a match from memory; `forget`: from the store too (a match deleted for good).
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
        }
        if forget && let Some(store) = &self.store {
            drop(store.forget(id));
        }
        gone.is_some()
    }

    /// Drops from memory the matches nobody has asked about for the idle time (the store keeps
    /// them). The table is locked only to copy the list; a match whose lock is taken is busy,
    /// and is looked at next time.
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
                self.remove(&e.id, false);
            }
        }
        self.tickets.sweep();
    }

    /// Has the store commit a change's write (for a match it keeps); the error says why it
    /// could not.
    async fn store_change(&self, entry: &Entry, write: session::Write) -> Result<(), String> {
        let Some(store) = self.store.as_ref().filter(|_| entry.kept) else { return Ok(()) };
        match store.save(&entry.id, write).await {
            Ok(r) => r,
            Err(_) => Err("the game store has stopped".into()),
        }
    }

    /// Drops a finished match's memory reservation for its agents (they are gone).
    fn settle(&self, entry: &Entry, finished: bool) {
        if finished {
            let mut m = entry.memory.lock().unwrap_or_else(|e| e.into_inner());
            if m.as_ref().is_some_and(|r| r.bytes() > MATCH_BASE_BYTES) {
                // Given back before the smaller part is taken again, so a client at its share
                // keeps its finished match.
                *m = None;
                *m = self.budget.reserve(MATCH_BASE_BYTES, "a finished match", entry.client).ok();
            }
        }
    }
}

/// Runs a command on a match: `f` computes the change with what the request's token allows;
/// the store commits it; then it is applied and `then` reads the match as it is now, under the
/// same lock. A change the store cannot write is not applied: the client is told, and may try
/// again.
async fn command<T, U>(
    app: &Arc<App>,
    entry: Arc<Entry>,
    token: Option<&str>,
    f: impl FnOnce(&dyn Session, Access) -> Result<(Change, T), ApiError>,
    then: impl FnOnce(&dyn Session, T) -> Result<U, ApiError>,
) -> Result<U, ApiError> {
    let gate = entry.gate.lock().await;
    let (change, out) = {
        let s = entry.lock();
        let access = s.access(token);
        if access.seat.is_some() {
            entry.seat_acted.store(clock_ms(), Ordering::Relaxed);
        }
        f(&**s, access)?
    };
    if let Err(e) = app.store_change(&entry, change.write.clone()).await {
        return Err(ApiError::busy(format!("the game store could not write this, so nothing changed: {e}. Try again")));
    }
    let (answer, finished) = {
        let mut s = entry.lock();
        s.apply(change);
        (then(&**s, out), s.finished())
    };
    app.settle(&entry, finished);
    drop(gate);
    entry.changed();
    drive(app.clone(), entry);
    answer
}

/// The threads an agent spec asks for (`threads=N` anywhere in it), at least one.
fn spec_threads(spec: &str) -> usize {
    let mut total = 0usize;
    for part in spec.split([',', ':', '(', ')']) {
        if let Some(n) = part.trim().strip_prefix("threads=") {
            total = total.saturating_add(n.trim().parse::<usize>().unwrap_or(1).max(1));
        }
    }
    total.max(1)
}

/// Finished games from the store held in memory at once, for whoever opens them.
const PAST_GAMES: usize = 32;

/// Answers for a person who has not answered a question put to them at `ply` within the
/// server's answer time (the game's default answer, as if they had made it); at once where
/// that answer is their only move (`forced`).
fn answer_if_absent(app: Arc<App>, entry: Arc<Entry>, ply: usize, forced: bool) {
    let armed = ply as u64 + 1;
    if !forced && entry.answer_armed.swap(armed, Ordering::Relaxed) == armed {
        return; // already waited for
    }
    tokio::spawn(async move {
        if !forced {
            tokio::time::sleep(app.config.answer_time).await;
            let _ = entry.answer_armed.compare_exchange(armed, 0, Ordering::Relaxed, Ordering::Relaxed);
        }
        if entry.gone() {
            return;
        }
        // Stale (answered, taken back, the match moved on): refused, and nothing happens.
        let _ = command(&app, entry, None, move |s, _| Ok((s.answer_for_absent(ply)?, ())), |_, ()| Ok(())).await;
    });
}

/// How long a person seat's last action counts as someone at the table.
const PRESENCE: Duration = Duration::from_secs(120);

/// Milliseconds since this process first asked, at least 1 (0 means "never" in [`Entry`]).
fn clock_ms() -> u64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64 + 1
}

/// Runs the match's agents: each move waits for its share of the thinkers, thinks on the
/// blocking pool, is stored, and only then played; then the match goes on. A move the store
/// cannot write waits, shown to the players, and is tried again until it can (or an undo takes
/// its line back).
fn drive(app: Arc<App>, entry: Arc<Entry>) {
    tokio::spawn(async move {
        let delay = entry.lock().delay();
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let (job, spec, person) = {
            let mut s = entry.lock();
            // A dropped match plays no more. Asked under the session's lock: dropping marks the
            // match gone before it takes the lock to close it, so either this sees it gone or
            // the close sees the job out and keeps the match's memory reserved.
            if entry.gone() {
                return;
            }
            let mover = s.mover();
            let Some(job) = s.next_job() else {
                if let Some((ply, forced)) = s.awaiting_answer() {
                    drop(s);
                    answer_if_absent(app, entry, ply, forced);
                }
                return;
            };
            let spec = mover.and_then(|p| s.summary()["seats"][p].as_str().map(str::to_string)).unwrap_or_default();
            (job, spec, s.has_person())
        };
        entry.changed(); // "thinking"
        // Asked again while it waits: a person who sits down (opens the page) moves it up.
        let at_table = entry.clone();
        let class = move || if person && at_table.attended() { Class::Person } else { Class::Background };
        let grant = app.thinkers.acquire_as(entry.client, class, spec_threads(&spec)).await;
        let done = tokio::task::spawn_blocking(move || {
            let _grant = grant;
            job()
        })
        .await;
        let mut gate = entry.gate.lock().await;
        let change = {
            let mut session = entry.lock();
            match done {
                Ok(completion) => completion(&mut **session),
                Err(e) => session.job_failed(if e.is_panic() { "the agent panicked".into() } else { e.to_string() }),
            }
        };
        let Some(change) = change else {
            // Taken back while it thought: its move is dropped, and the match goes on from the
            // line it is on now (a move made meanwhile found this job still out, and started none).
            drop(gate);
            entry.changed();
            drive(app, entry);
            return;
        };
        let mut wait = Duration::from_millis(250);
        loop {
            match app.store_change(&entry, change.write.clone()).await {
                Ok(()) => break,
                Err(e) => {
                    entry.lock().stall(Some(format!(
                        "the agent's move could not be stored, so it is not played yet ({e}); trying again"
                    )));
                    drop(gate);
                    entry.changed();
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_secs(10));
                    if entry.gone() {
                        return;
                    }
                    gate = entry.gate.lock().await;
                    let stale = {
                        let mut s = entry.lock();
                        let stale = !s.valid(&change);
                        if stale {
                            s.stall(None);
                        }
                        stale
                    };
                    if stale {
                        drop(gate);
                        entry.changed();
                        drive(app, entry);
                        return;
                    }
                }
            }
        }
        let finished = {
            let mut s = entry.lock();
            s.apply(change);
            s.finished()
        };
        app.settle(&entry, finished);
        drop(gate);
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
        Some(dir) => {
            let (store, notes) = Store::open(dir, config.store_options())?;
            for n in notes {
                eprintln!("meeple serve: {n}");
            }
            Some(store)
        }
        None => None,
    };
    let share = config.client_memory.unwrap_or(config.memory_budget / 4);
    let app = Arc::new(App {
        allowed: config.allowed(),
        matches: Mutex::new(HashMap::new()),
        pending: AtomicUsize::new(0),
        thinkers: Pool::new(config.thinkers.max(1), config.reserved_thinkers),
        analysts: Pool::new(config.analysts.max(1), config.reserved_analysts),
        budget: Budget::new(config.memory_budget, share),
        store,
        streams: AtomicUsize::new(0),
        client_streams: clients::Counts::default(),
        asking: clients::Counts::default(),
        tickets: streams::Tickets::default(),
        games_page: Mutex::new(None),
        loading: Semaphore::new(4),
        config,
    });
    resume(&app)?;
    let sweeper = Arc::downgrade(&app);
    let every = app.config.sweep_every;
    tokio::spawn(async move {
        let mut sweeps = 0u64;
        loop {
            tokio::time::sleep(every).await;
            let Some(app) = sweeper.upgrade() else { return };
            app.sweep();
            sweeps += 1;
            if sweeps.is_multiple_of((3600 / every.as_secs().max(1)).max(1))
                && let Some(store) = &app.store
            {
                drop(store.prune());
            }
        }
    });
    let policy = Arc::new(guard::Policy::new(&app.config.hosts, app.config.body_timeout));
    let api = Router::new()
        .route("/api/catalog", get(routes::catalog))
        .route("/api/game", get(routes::game_info))
        .route("/api/matches", get(routes::list_matches).post(routes::create_match))
        .route("/api/matches/{id}", get(routes::snapshot).delete(routes::delete_match))
        .route("/api/matches/{id}/moves", post(routes::submit))
        .route("/api/matches/{id}/undo", post(routes::undo))
        .route("/api/matches/{id}/resign", post(routes::resign))
        .route("/api/matches/{id}/control", post(routes::control))
        .route("/api/matches/{id}/claim", post(routes::claim))
        .route("/api/matches/{id}/token", post(routes::rotate))
        .route("/api/matches/{id}/invite", post(routes::invite))
        .route("/api/matches/{id}/analysis", post(routes::analysis))
        .route("/api/matches/{id}/ticket", post(streams::ticket))
        .route("/api/matches/{id}/events", get(streams::events))
        .route("/api/matches/{id}/record", get(routes::record))
        .route("/api/records", get(routes::list_records))
        .route("/api/status", get(routes::status))
        .route("/api/games", get(routes::list_games))
        .route("/api/games/{id}/record", get(routes::game_record))
        .layer(DefaultBodyLimit::max(MAX_BODY));
    // The upload reads its own body, as it streams (the guard passes it on unread).
    let uploads =
        Router::new().route("/api/replays", post(upload::open_replay)).layer(DefaultBodyLimit::max(MAX_RECORDS_BODY));
    Ok(Router::new()
        .route("/", get(routes::page))
        .route("/m/{id}", get(routes::page))
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

/// Brings back the matches the store has in progress; a row that cannot be resumed is pruned.
fn resume(app: &Arc<App>) -> Result<(), String> {
    let Some(store) = &app.store else { return Ok(()) };
    let rows = store.live_blocking(app.config.max_matches)?;
    for row in rows {
        let row = match row {
            Ok(r) => r,
            Err((id, why)) => {
                eprintln!("meeple serve: match {id} is not resumed and is pruned: {why}");
                drop(store.discard(&id));
                continue;
            }
        };
        let session = match session::restore(&row.stored, &row.moves, &app.allowed) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("meeple serve: match {} is not resumed and is pruned: {}", row.id, e.message);
                drop(store.discard(&row.id));
                continue;
            }
        };
        let Ok(memory) = app.budget.reserve(app.resumed_bytes(&row.stored), "a resumed match", None) else {
            eprintln!("meeple serve: match {} stays in the store: the memory budget is full", row.id);
            continue;
        };
        let entry = app.insert(row.id, session, None, memory, false);
        drive(app.clone(), entry);
    }
    Ok(())
}

/// Serves on `host:port` until Ctrl-C; calls `ready` with the address once listening. Each
/// connection has a header (and idle) timeout; beyond the connection limits (in all, and per
/// client) new ones are closed.
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
    let (header_timeout, limit, per_client) =
        (config.header_timeout, config.max_connections, config.max_connections_per_client);
    let grouping = config.clients.clone();
    let router = build(config).map_err(std::io::Error::other)?;
    ready(local);
    let connections = Arc::new(Semaphore::new(limit.max(1)));
    let held = Arc::new(clients::Counts::default());
    let open = Arc::new(conns::Open::default());
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
        // A trusted proxy carries many clients; everyone else has a share of the connections.
        let client = (!grouping.is_trusted(peer.ip())).then(|| grouping.of(peer.ip()));
        let router = router.clone().layer(Extension(Peer(peer.ip())));
        let (held, open) = (held.clone(), open.clone());
        tokio::spawn(async move {
            let _permit = permit;
            if let Some(c) = client
                && !held.take(c, per_client)
            {
                // At its share, the client's longest idle connection makes way for this one (one
                // newcomer waits at a time); with every connection busy, this one is refused.
                if !open.wait(c) {
                    return;
                }
                let mut taken = false;
                if open.evict_idle(c) {
                    for _ in 0..50 {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        if held.take(c, per_client) {
                            taken = true;
                            break;
                        }
                    }
                }
                open.done_waiting(c);
                if !taken {
                    return;
                }
            }
            let conn = conns::Conn::new();
            if let Some(c) = client {
                open.add(c, &conn);
            }
            let state = conn.clone();
            let service = tower::service_fn(move |request: axum::http::Request<hyper::body::Incoming>| {
                let (router, busy) = (router.clone(), conns::Busy::new(&state));
                async move {
                    let response = tower::ServiceExt::oneshot(router, request).await?;
                    // Busy until the body ends: an event stream is never idle.
                    Ok::<_, std::convert::Infallible>(response.map(move |body| {
                        axum::body::Body::new(http_body_util::BodyExt::map_frame(body, move |frame| {
                            let _ = &busy;
                            frame
                        }))
                    }))
                }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout)
                .max_buf_size(64 * 1024)
                .serve_connection(
                    hyper_util::rt::TokioIo::new(stream),
                    hyper_util::service::TowerToHyperService::new(service),
                );
            tokio::select! {
                _ = connection => {}
                _ = conn.close.notified() => {}
            }
            if let Some(c) = client {
                open.remove(c, &conn);
                held.give(c);
            }
        });
    }
}

type Shared = axum::extract::State<Arc<App>>;

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

/// The token a request carries, in its header.
fn token(headers: &HeaderMap) -> Option<&str> {
    headers.get(TOKEN_HEADER).and_then(|v| v.to_str().ok())
}

/// The match a request under `/api/matches/{id}` is about (from memory, or brought back from
/// the store for its client), who asks, and the token the request carries.
struct Table {
    id: String,
    entry: Arc<Entry>,
    client: Option<Client>,
    token: Option<String>,
}

impl axum::extract::FromRequestParts<Arc<App>> for Table {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, app: &Arc<App>) -> Result<Self, ApiError> {
        let axum::extract::Path(id) = axum::extract::Path::<String>::from_request_parts(parts, app)
            .await
            .map_err(|_| ApiError::not_found("no such match (it may have expired)"))?;
        let client = parts.extensions.get::<Peer>().map(|Peer(ip)| app.config.clients.client(*ip, &parts.headers));
        let token = token(&parts.headers).map(str::to_string);
        let entry = app.entry(&id, client).await?;
        Ok(Table { id, entry, client, token })
    }
}
