//! `meeple serve`: every game in the browser. The server owns the matches (rules, chance, agents);
//! the embedded page draws the views the games give and sends clicks back as moves.
//!
//! The API is JSON over HTTP for commands and server-sent events for updates; see
//! `docs/web.md` for every route. Agents think on the blocking pool, at most one per core at a
//! time, so the server keeps answering while they do.

mod error;
pub mod session;

pub use error::ApiError;
pub use session::{Control, MoveRequest, SPECTATOR, Setup};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Query, State as AxState};
use axum::http::{StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use meeple_arena::records::{self, ReadOptions};
use meeple_game::{Game, GameRecord, Player};
use serde_json::{Value, json};
use session::Session;
use std::collections::HashMap;
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
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
/// The largest number of games one records file may hold for replay.
pub const MAX_REPLAY_GAMES: usize = 100_000;

/// Limits and inputs of a server.
#[derive(Clone, Debug)]
pub struct Config {
    /// Matches held at once (replays included); creating one more is refused with 503.
    pub max_matches: usize,
    /// A match nobody has touched for this long is dropped.
    pub idle: Duration,
    /// How often idle matches are looked for.
    pub sweep_every: Duration,
    /// Agents thinking at once (the others wait their turn); their clocks start when they run.
    pub thinkers: usize,
    /// Records files offered for replay (`meeple serve --records FILE`).
    pub records: Vec<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_matches: 100,
            idle: Duration::from_secs(3600),
            sweep_every: Duration::from_secs(60),
            thinkers: std::thread::available_parallelism().map_or(2, |n| n.get()),
            records: Vec::new(),
        }
    }
}

struct Entry {
    session: Mutex<Box<dyn Session>>,
    /// Bumped on every change; event streams follow it. `u64::MAX`: the match is gone.
    version: watch::Sender<u64>,
    touched: Mutex<Instant>,
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
        self.version.send_modify(|v| *v = v.wrapping_add(1) % (u64::MAX - 1));
    }
}

struct App {
    config: Config,
    matches: Mutex<HashMap<String, Arc<Entry>>>,
    next_id: AtomicU64,
    thinkers: Arc<Semaphore>,
}

impl App {
    fn entry(&self, id: &str) -> Result<Arc<Entry>, ApiError> {
        let found = self.matches.lock().unwrap_or_else(|e| e.into_inner()).get(id).cloned();
        let entry = found.ok_or_else(|| ApiError::not_found(format!("no match '{id}' (it may have expired)")))?;
        entry.touch();
        Ok(entry)
    }

    fn insert(&self, session: Box<dyn Session>) -> Result<(String, Arc<Entry>), ApiError> {
        let mut matches = self.matches.lock().unwrap_or_else(|e| e.into_inner());
        if matches.len() >= self.config.max_matches {
            return Err(ApiError::busy(format!(
                "the server holds its limit of {} matches; finish or delete one (DELETE /api/matches/ID)",
                self.config.max_matches
            )));
        }
        let id = format!("m{}", self.next_id.fetch_add(1, Ordering::Relaxed) + 1);
        let entry = Arc::new(Entry {
            session: Mutex::new(session),
            version: watch::channel(0).0,
            touched: Mutex::new(Instant::now()),
        });
        matches.insert(id.clone(), entry.clone());
        Ok((id, entry))
    }

    fn remove(&self, id: &str) -> bool {
        let gone = self.matches.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
        if let Some(e) = &gone {
            e.version.send_replace(u64::MAX);
        }
        gone.is_some()
    }

    fn sweep(&self) {
        let now = Instant::now();
        let idle: Vec<String> = self
            .matches
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|(_, e)| {
                let touched = *e.touched.lock().unwrap_or_else(|e| e.into_inner());
                now.duration_since(touched) > self.config.idle && !e.lock().busy()
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in idle {
            self.remove(&id);
        }
    }
}

/// Runs the match's agents: each move thinks on the blocking pool, then the match goes on.
fn drive(app: Arc<App>, entry: Arc<Entry>) {
    tokio::spawn(async move {
        let delay = entry.lock().delay();
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let Some(job) = entry.lock().next_job() else { return };
        entry.changed(); // "thinking"
        let permit = app.thinkers.clone().acquire_owned().await;
        let done = tokio::task::spawn_blocking(job).await;
        drop(permit);
        {
            let mut session = entry.lock();
            match done {
                Ok(completion) => completion(&mut **session),
                Err(e) => session.job_failed(if e.is_panic() { "the agent panicked".into() } else { e.to_string() }),
            }
        }
        entry.changed();
        drive(app, entry);
    });
}

/// The server's routes over a fresh set of matches; sweeps idle matches in the background.
pub fn router(config: Config) -> Router {
    let thinkers = Arc::new(Semaphore::new(config.thinkers.max(1)));
    let app = Arc::new(App { config, matches: Mutex::new(HashMap::new()), next_id: AtomicU64::new(0), thinkers });
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
        .layer(DefaultBodyLimit::max(MAX_BODY));
    let uploads = Router::new().route("/api/replays", post(open_replay)).layer(DefaultBodyLimit::max(MAX_RECORDS_BODY));
    Router::new()
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
}

/// Serves on `host:port` until Ctrl-C; calls `ready` with the address once listening.
pub async fn serve(
    host: &str,
    port: u16,
    config: Config,
    ready: impl FnOnce(std::net::SocketAddr),
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind((host, port)).await?;
    ready(listener.local_addr()?);
    axum::serve(listener, router(config))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
}

type Shared = AxState<Arc<App>>;

async fn page() -> Html<&'static str> {
    Html(INDEX)
}

fn json_body<T: serde::de::DeserializeOwned>(body: &Bytes, what: &str) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError::bad(format!("bad JSON for {what}: {e}")))
}

fn parse_viewer(query: &HashMap<String, String>) -> Result<Option<Player>, ApiError> {
    match query.get("viewer").map(|s| s.trim()) {
        None | Some("") | Some("spectator") => Ok(None),
        Some(v) => v
            .parse::<Player>()
            .map(Some)
            .map_err(|_| ApiError::bad(format!("viewer '{v}' is not a seat number or \"spectator\""))),
    }
}

fn parse_ply(query: &HashMap<String, String>) -> Result<Option<usize>, ApiError> {
    query
        .get("ply")
        .map(|v| v.trim().parse::<usize>().map_err(|_| ApiError::bad(format!("ply '{v}' is not a ply number"))))
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
    json!({ "spec": game.spec().to_string(), "name": G::INFO.name, "players": game.num_players(), "agents": agents })
}

async fn game_info(Query(query): Query<HashMap<String, String>>) -> Result<axum::Json<Value>, ApiError> {
    let spec = query.get("spec").ok_or_else(|| ApiError::bad("give the game as ?spec=NAME:KEY=VALUE,..."))?;
    Ok(axum::Json(meeple_games::with_game!(spec.as_str(), |g| describe(&g))?))
}

async fn list_matches(AxState(app): Shared) -> axum::Json<Value> {
    let matches = app.matches.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let mut list: Vec<(u64, Value)> = matches
        .iter()
        .map(|(id, e)| {
            let mut s = e.lock().summary();
            s["id"] = json!(id);
            (id.trim_start_matches('m').parse().unwrap_or(0), s)
        })
        .collect();
    list.sort_by_key(|(n, _)| *n);
    axum::Json(json!({ "matches": list.into_iter().map(|(_, v)| v).collect::<Vec<_>>() }))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateRequest {
    game: String,
    seats: Vec<String>,
    #[serde(default)]
    seed: u64,
    /// Milliseconds each agent may think per move (default 1000).
    move_time_ms: Option<u64>,
    /// Pause before each move when only agents play (default 500 ms).
    delay_ms: Option<u64>,
    /// The seat whose view the answer shows (default: the first person's, else a spectator's).
    viewer: Option<Player>,
}

async fn create_match(AxState(app): Shared, body: Bytes) -> Result<Response, ApiError> {
    let req: CreateRequest = json_body(&body, "a new match")?;
    let setup = Setup {
        game: req.game,
        seats: req.seats,
        seed: req.seed,
        move_time: Duration::from_millis(req.move_time_ms.unwrap_or(1000)),
        delay: Duration::from_millis(req.delay_ms.unwrap_or(500).min(u64::MAX / 2)),
    };
    let viewer = req.viewer.or_else(|| setup.seats.iter().position(|s| s.trim() == "human"));
    // Building agents loads networks and tables: off the async threads.
    let session = tokio::task::spawn_blocking(move || session::create(&setup))
        .await
        .map_err(|e| ApiError::bad(format!("could not build the match: {e}")))??;
    let snapshot = session.snapshot(viewer, None)?;
    let (id, entry) = app.insert(session)?;
    drive(app.clone(), entry);
    let mut body = json!({ "id": id, "url": format!("/m/{id}"), "snapshot": snapshot });
    body["snapshot"]["id"] = json!(id);
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

async fn snapshot(
    AxState(app): Shared,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<axum::Json<Value>, ApiError> {
    let entry = app.entry(&id)?;
    let mut snap = entry.lock().snapshot(parse_viewer(&query)?, parse_ply(&query)?)?;
    snap["id"] = json!(id);
    Ok(axum::Json(snap))
}

async fn delete_match(AxState(app): Shared, Path(id): Path<String>) -> Result<StatusCode, ApiError> {
    if app.remove(&id) { Ok(StatusCode::NO_CONTENT) } else { Err(ApiError::not_found(format!("no match '{id}'"))) }
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

async fn submit(AxState(app): Shared, Path(id): Path<String>, body: Bytes) -> Result<axum::Json<Value>, ApiError> {
    let req: MoveBody = json_body(&body, "a move (give {\"ply\": N, \"action\": \"...\"})")?;
    let entry = app.entry(&id)?;
    let snap = {
        let mut session = entry.lock();
        session.check_viewer(req.viewer)?;
        let mover = session.mover();
        session.submit(&MoveRequest { ply: req.ply, action: req.action, id: req.id })?;
        // The answer shows the game to the person who moved, unless the request names a seat.
        session.snapshot(req.viewer.or(mover), None)?
    };
    entry.changed();
    drive(app.clone(), entry);
    let mut snap = snap;
    snap["id"] = json!(id);
    Ok(axum::Json(snap))
}

async fn undo(AxState(app): Shared, Path(id): Path<String>) -> Result<axum::Json<Value>, ApiError> {
    let entry = app.entry(&id)?;
    let ply = entry.lock().undo()?;
    entry.changed();
    drive(app.clone(), entry);
    Ok(axum::Json(json!({ "ply": ply })))
}

async fn control(AxState(app): Shared, Path(id): Path<String>, body: Bytes) -> Result<axum::Json<Value>, ApiError> {
    let req: Control = json_body(&body, "controls ({\"paused\": bool, \"delay_ms\": N, \"step\": true})")?;
    let entry = app.entry(&id)?;
    entry.lock().control(&req)?;
    entry.changed();
    drive(app.clone(), entry);
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

async fn analysis(AxState(app): Shared, Path(id): Path<String>, body: Bytes) -> Result<axum::Json<Value>, ApiError> {
    let req: AnalysisRequest = json_body(&body, "an analysis ({\"agent\": SPEC, \"time_ms\": N})")?;
    let entry = app.entry(&id)?;
    let time = Duration::from_millis(req.time_ms.unwrap_or(1000));
    let job = entry.lock().analysis(&req.agent, req.ply, req.viewer, time)?;
    let permit = app.thinkers.clone().acquire_owned().await;
    let answer = tokio::task::spawn_blocking(job).await.map_err(|_| ApiError::bad("the agent stopped with a panic"))?;
    drop(permit);
    Ok(axum::Json(answer))
}

async fn events(
    AxState(app): Shared,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let entry = app.entry(&id)?;
    let viewer = parse_viewer(&query)?;
    entry.lock().check_viewer(viewer)?;
    let stream = WatchStream::new(entry.version.subscribe()).take_while(|v| *v != u64::MAX).map(move |_| {
        entry.touch();
        let snap = entry.lock().snapshot(viewer, None);
        let event = match snap {
            Ok(mut s) => {
                s["id"] = json!(id);
                Event::default().event("state").id(s["ply"].to_string()).data(s.to_string())
            }
            Err(e) => Event::default().event("problem").data(json!({ "error": e.message }).to_string()),
        };
        Ok::<Event, Infallible>(event)
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()).into_response())
}

async fn record(AxState(app): Shared, Path(id): Path<String>) -> Result<Response, ApiError> {
    let entry = app.entry(&id)?;
    let line = {
        let session = entry.lock();
        if !session.public() {
            return Err(ApiError::forbidden(
                "the record shows every hidden deal (private cards, development cards): it can be downloaded once the game is over",
            ));
        }
        session.record().to_json()
    };
    let disposition = format!("attachment; filename=\"meeple-{id}.jsonl\"");
    Ok((
        [(header::CONTENT_TYPE, "application/json".to_string()), (header::CONTENT_DISPOSITION, disposition)],
        line + "\n",
    )
        .into_response())
}

/// Reads records: arena lines (checksums checked) or plain game records, one per line, by the
/// arena's one set of rules for records files.
fn parse_records(text: &str) -> Result<Vec<GameRecord>, ApiError> {
    let options = ReadOptions { plain: true, max_games: MAX_REPLAY_GAMES, allow_cut_last_line: false };
    let records = records::parse(text, "the records", options).map_err(|e| ApiError::unprocessable(e.to_string()))?;
    if records.entries.is_empty() {
        return Err(ApiError::bad("the records hold no game"));
    }
    Ok(records.entries.into_iter().map(records::Entry::into_record).collect())
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
    /// the number of a file the server was started with (`GET /api/records`).
    file: Option<usize>,
    /// Which game of the file (0 = the first).
    #[serde(default)]
    index: usize,
}

async fn open_replay(AxState(app): Shared, body: Bytes) -> Result<Response, ApiError> {
    let req: ReplayRequest = json_body(&body, "a replay ({\"records\": TEXT} or {\"file\": N}, and \"index\")")?;
    let text = match (req.records, req.file) {
        (Some(t), None) => t,
        (None, Some(k)) => {
            let path = app.config.records.get(k).ok_or_else(|| {
                ApiError::not_found(format!("no records file {k}: the server has {}", app.config.records.len()))
            })?;
            let path = path.clone();
            tokio::task::spawn_blocking(move || read_capped(&path))
                .await
                .map_err(|e| ApiError::bad(e.to_string()))??
        }
        _ => return Err(ApiError::bad("give \"records\" (the file's text) or \"file\" (a served file's number)")),
    };
    let records = parse_records(&text)?;
    let count = records.len();
    let record = records
        .into_iter()
        .nth(req.index)
        .ok_or_else(|| ApiError::bad(format!("index {} is beyond the {count} games in these records", req.index)))?;
    let session = tokio::task::spawn_blocking(move || session::open_replay(&record))
        .await
        .map_err(|e| ApiError::bad(e.to_string()))??;
    let plies = session.snapshot(None, None)?["plies"].clone();
    let (id, _) = app.insert(session)?;
    Ok((
        StatusCode::CREATED,
        axum::Json(json!({ "id": id, "url": format!("/m/{id}"), "plies": plies, "games": count })),
    )
        .into_response())
}

fn read_capped(path: &std::path::Path) -> Result<String, ApiError> {
    use std::io::Read;
    let file =
        std::fs::File::open(path).map_err(|e| ApiError::not_found(format!("cannot open '{}': {e}", path.display())))?;
    let mut text = String::new();
    file.take(MAX_RECORDS_BODY as u64 + 1)
        .read_to_string(&mut text)
        .map_err(|e| ApiError::bad(format!("cannot read '{}': {e}", path.display())))?;
    if text.len() > MAX_RECORDS_BODY {
        return Err(ApiError::bad(format!("'{}' is larger than {} MiB", path.display(), MAX_RECORDS_BODY >> 20)));
    }
    Ok(text)
}
