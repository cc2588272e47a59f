//! The API's routes (event streams and uploads have modules of their own).

use crate::pool::Class;
use crate::session::{self, Access, Control, MoveRequest, Setup};
use crate::{ANALYSES_PER_CLIENT, ApiError, App, Peer, Shared, Table, command, drive, parse_viewer, random_token};
use axum::body::Bytes;
use axum::extract::{Extension, Path, Query};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use meeple_game::{Game, Player, State};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

const LEVELS: &str = include_str!("../static/levels.json");

pub(crate) async fn page() -> Html<&'static str> {
    Html(crate::INDEX)
}

pub(crate) fn json_body<T: serde::de::DeserializeOwned>(body: &Bytes, what: &str) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError::bad(format!("bad JSON for {what}: {e}")))
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

/// The levels the front page offers against the computer, per game, with each level's measured
/// strength against the one below (`crates/web/static/levels.json`, checked by a test against
/// the matches that measured it).
fn levels() -> Value {
    serde_json::from_str(LEVELS).unwrap_or_default()
}

pub(crate) async fn catalog() -> axum::Json<Value> {
    let levels = levels();
    let games: Vec<Value> = meeple_games::GAMES
        .iter()
        .map(|g| {
            let params: Vec<Value> = g.params.iter().map(param_json).collect();
            let mine = &levels["games"][g.name];
            json!({
                "name": g.name, "about": g.about, "params": params,
                "title": mine["title"], "blurb": mine["blurb"], "spec": mine["spec"], "levels": mine["levels"],
                "variant": mine["variant"], "variants": mine["variants"],
            })
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
    let initial = game.initial_state();
    json!({
        "spec": game.spec().to_string(), "name": G::INFO.name, "players": game.num_players(), "agents": agents,
        "opponent": opponent, "advisor": advisor, "view": initial.view(None), "rules": game.rules(),
    })
}

pub(crate) async fn game_info(Query(query): Query<HashMap<String, String>>) -> Result<axum::Json<Value>, ApiError> {
    let spec = query.get("spec").ok_or_else(|| ApiError::bad("give the game as ?spec=NAME:KEY=VALUE,..."))?;
    if spec.len() > 1024 {
        return Err(ApiError::bad("a game spec is at most 1 KB"));
    }
    Ok(axum::Json(meeple_games::with_game!(spec.as_str(), |g| describe(&g))?))
}

/// What the server holds against its limits (no secrets): for operators and load tests.
pub(crate) async fn status(axum::extract::State(app): Shared) -> axum::Json<Value> {
    let matches = app.matches.lock().unwrap_or_else(|e| e.into_inner()).len();
    axum::Json(json!({
        "matches": matches, "max_matches": app.config.max_matches,
        "memory_reserved": app.budget.used(), "memory_budget": app.budget.total(), "client_memory": app.budget.share(),
        "streams": app.streams.load(Ordering::Relaxed), "max_streams": app.config.max_streams,
        "thinkers_free": app.thinkers.free(), "thinkers_waiting": app.thinkers.waiting(),
        "analysts_free": app.analysts.free(), "analysts_waiting": app.analysts.waiting(),
        // Whether games are kept, not where: no path of this machine leaves the server.
        "keeps_games": app.store.is_some(),
    }))
}

pub(crate) async fn list_matches(axum::extract::State(app): Shared) -> axum::Json<Value> {
    let matches: Vec<Arc<crate::Entry>> =
        app.matches.lock().unwrap_or_else(|e| e.into_inner()).values().cloned().collect();
    let mut list: Vec<Value> = matches
        .iter()
        .filter_map(|e| {
            // A match being changed is shown next time rather than waited for.
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
pub(crate) struct CreateRequest {
    game: String,
    seats: Vec<String>,
    /// A seed of the client's choosing makes the match "open"; without one it is secret. A
    /// string of digits (what the page sends: JavaScript's numbers round above 2^53) or a number.
    #[serde(default, deserialize_with = "seed_text_or_number")]
    seed: Option<u64>,
    /// Milliseconds each agent may think per move (default 1000).
    move_time_ms: Option<u64>,
    /// Pause before each move when only agents play (default 500 ms).
    delay_ms: Option<u64>,
    /// The seat whose view the answer shows (default: the first seat the creator plays, else a
    /// spectator's).
    viewer: Option<Player>,
    /// The person seats the creator plays itself (default: the first); the others are given
    /// invitations.
    play: Option<Vec<Player>>,
}

/// A seed given as a string of digits or as a JSON number.
fn seed_text_or_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Seed {
        Number(u64),
        Text(String),
    }
    use serde::Deserialize as _;
    match Option::<Seed>::deserialize(d)? {
        None => Ok(None),
        Some(Seed::Number(n)) => Ok(Some(n)),
        Some(Seed::Text(t)) => {
            t.trim().parse().map(Some).map_err(|_| {
                serde::de::Error::custom(format!("seed '{t}' is not a whole number from 0 to {}", u64::MAX))
            })
        }
    }
}

pub(crate) async fn create_match(
    axum::extract::State(app): Shared,
    peer: Option<Extension<Peer>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let req: CreateRequest = json_body(&body, "a new match")?;
    if req.seats.len() > 16 || req.game.len() > 1024 || req.play.as_ref().is_some_and(|p| p.len() > 16) {
        return Err(ApiError::bad("a match has at most 16 seats and a game spec of at most 1 KB"));
    }
    let client = app.caller(peer, &headers);
    let slot = app.slot(client)?;
    let bytes = meeple_games::with_game!(req.game.as_str(), |g| app.config.match_bytes(&g))?;
    let mut memory = app.budget.reserve(bytes, "a new match", client)?;
    let setup = Setup {
        game: req.game,
        seats: req.seats,
        seed: req.seed,
        move_time: Duration::from_millis(req.move_time_ms.unwrap_or(1000)),
        delay: Duration::from_millis(req.delay_ms.unwrap_or(500).min(u64::MAX / 2)),
        play: req.play,
    };
    let allowed = app.allowed.clone();
    // Building agents loads networks and tables: off the async threads.
    let mut session =
        tokio::task::spawn_blocking(move || session::create(&setup, &allowed, &mut random_token, crate::random_u64()))
            .await
            .map_err(|e| ApiError::bad(format!("could not build the match: {e}")))??;
    // Its agents' tables and the trees they may grow, as they say once built.
    memory.join(app.budget.reserve(session.agents_bound(), "the match's agents", client)?);
    let stored = session.stored().expect("a new match is not a replay");
    let (kept, invited) = session.handed_out();
    let viewer = req.viewer.or_else(|| kept.first().map(|(s, _)| *s));
    // The creator sees through the eyes of a seat it plays, no other.
    let seat = viewer.filter(|v| kept.iter().any(|(s, _)| s == v));
    session.check_viewer(viewer, Access { seat, owner: true })?;
    let id = random_token();
    // The match, and nature's opening deal, are stored before anyone is told of it.
    let opening = session.unsaved();
    if let Some(store) = &app.store {
        let write = opening.as_ref().map(|c| c.write.clone()).unwrap_or_default();
        match store.create(&id, &stored, write).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(ApiError::busy(format!("the game store could not write the new match: {e}"))),
            Err(_) => return Err(ApiError::busy("the game store has stopped")),
        }
    }
    if let Some(c) = opening {
        session.apply(c);
    }
    let mut snapshot = session.snapshot(viewer, None, None)?;
    let entry = app.insert(id.clone(), session, client, memory, false);
    drop(slot);
    drive(app.clone(), entry);
    snapshot["id"] = json!(id);
    let seats: Vec<Value> = kept.iter().map(|(i, t)| json!({ "seat": i, "token": t })).collect();
    let invites: Vec<Value> = invited
        .iter()
        .map(|(i, code)| json!({ "seat": i, "invite": code, "join": format!("/m/{id}#invite={code}") }))
        .collect();
    let body = json!({
        "id": id, "url": format!("/m/{id}"), "owner": stored.owner, "seats": seats, "invites": invites, "snapshot": snapshot,
    });
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

pub(crate) async fn snapshot(
    axum::extract::State(_app): Shared,
    table: Table,
    Query(query): Query<HashMap<String, String>>,
) -> Result<axum::Json<Value>, ApiError> {
    let (ply, log_from) = (parse_usize(&query, "ply")?, parse_usize(&query, "log_from")?);
    let mut snap = {
        let s = table.entry.lock();
        let access = s.access(table.token.as_deref());
        let viewer = parse_viewer(&query, access)?;
        s.check_viewer(viewer, access)?;
        s.snapshot(viewer, ply, log_from)?
    };
    snap["id"] = json!(table.id);
    Ok(axum::Json(snap))
}

pub(crate) async fn delete_match(axum::extract::State(app): Shared, table: Table) -> Result<StatusCode, ApiError> {
    if !table.entry.lock().access(table.token.as_deref()).owner {
        return Err(ApiError::forbidden("deleting a match needs its owner's token (given when it was created)"));
    }
    if app.remove(&table.id, true) { Ok(StatusCode::NO_CONTENT) } else { Err(ApiError::not_found("no such match")) }
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct MoveBody {
    ply: usize,
    action: Option<String>,
    id: Option<meeple_game::Action>,
    /// The seat the answer's snapshot is for (default: the mover's).
    viewer: Option<Player>,
}

pub(crate) async fn submit(
    axum::extract::State(app): Shared,
    table: Table,
    body: Bytes,
) -> Result<axum::Json<Value>, ApiError> {
    let req: MoveBody = json_body(&body, "a move (give {\"ply\": N, \"action\": \"...\"})")?;
    let mut snap = command(
        &app,
        table.entry,
        table.token.as_deref(),
        |session, access| {
            let viewer = req.viewer.or(access.seat);
            session.check_viewer(viewer, access)?;
            let change = session.submit(&MoveRequest { ply: req.ply, action: req.action, id: req.id }, access)?;
            Ok((change, viewer))
        },
        |session, viewer| session.snapshot(viewer, None, None),
    )
    .await?;
    snap["id"] = json!(table.id);
    Ok(axum::Json(snap))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct UndoBody {
    /// The ply the asker sees: a second click of the same undo is refused as stale.
    ply: usize,
}

pub(crate) async fn undo(
    axum::extract::State(app): Shared,
    table: Table,
    body: Bytes,
) -> Result<axum::Json<Value>, ApiError> {
    let req: UndoBody = json_body(&body, "an undo (give {\"ply\": N}, the ply you see)")?;
    let ply = command(&app, table.entry, table.token.as_deref(), |s, access| s.undo(req.ply, access), |_, ply| Ok(ply))
        .await?;
    Ok(axum::Json(json!({ "ply": ply })))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResignBody {}

/// A person gives up the game with their seat's token (the body: `{}`).
pub(crate) async fn resign(
    axum::extract::State(app): Shared,
    table: Table,
    body: Bytes,
) -> Result<axum::Json<Value>, ApiError> {
    let ResignBody {} = json_body(&body, "a resignation (give {}, with the seat's token)")?;
    let seat = command(
        &app,
        table.entry,
        table.token.as_deref(),
        |s, access| Ok((s.resign(access)?, access.seat)),
        |_, p| Ok(p),
    )
    .await?;
    Ok(axum::Json(json!({ "resigned": seat })))
}

pub(crate) async fn control(
    axum::extract::State(app): Shared,
    table: Table,
    body: Bytes,
) -> Result<axum::Json<Value>, ApiError> {
    let req: Control = json_body(&body, "controls ({\"paused\": bool, \"delay_ms\": N, \"step\": true})")?;
    command(
        &app,
        table.entry,
        table.token.as_deref(),
        |s, access| {
            if !access.owner {
                return Err(ApiError::forbidden("pausing or stepping a match needs its owner's token"));
            }
            Ok((s.control(&req)?, ()))
        },
        |_, ()| Ok(()),
    )
    .await?;
    Ok(axum::Json(json!({ "ok": true })))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClaimBody {
    /// The code of the join link (after `#invite=`).
    invite: String,
}

/// Claims a seat by its invitation: the answer's token is the seat's from now on, and only the
/// claimer has it.
pub(crate) async fn claim(
    axum::extract::State(app): Shared,
    table: Table,
    body: Bytes,
) -> Result<axum::Json<Value>, ApiError> {
    let req: ClaimBody = json_body(&body, "a claim (give {\"invite\": CODE}, from the join link)")?;
    let token = random_token();
    let given = token.clone();
    let seat =
        command(&app, table.entry, None, move |s, _| s.claim(req.invite.trim(), given), |_, seat| Ok(seat)).await?;
    Ok(axum::Json(json!({ "seat": seat, "token": token })))
}

/// A new token for the asker's seat; the old one stops working.
pub(crate) async fn rotate(
    axum::extract::State(app): Shared,
    table: Table,
    body: Bytes,
) -> Result<axum::Json<Value>, ApiError> {
    let _: serde_json::Map<String, Value> = json_body(&body, "a new token (give {})")?;
    let token_now = random_token();
    let given = token_now.clone();
    let entry = table.entry.clone();
    let seat = command(
        &app,
        table.entry,
        table.token.as_deref(),
        move |s, access| s.rotate(access, given),
        // Before the streams hear of the change: each that wakes for it finds its token void.
        move |_, seat| {
            if let Some(e) = entry.seat_epoch.get(seat) {
                e.fetch_add(1, Ordering::Relaxed);
            }
            Ok(seat)
        },
    )
    .await?;
    Ok(axum::Json(json!({ "seat": seat, "token": token_now })))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct InviteBody {
    seat: Player,
}

/// A new invitation for a seat nobody has claimed (the owner's); the old link stops working.
pub(crate) async fn invite(
    axum::extract::State(app): Shared,
    table: Table,
    body: Bytes,
) -> Result<axum::Json<Value>, ApiError> {
    let req: InviteBody = json_body(&body, "an invitation (give {\"seat\": N})")?;
    let code = random_token();
    let given = code.clone();
    command(
        &app,
        table.entry,
        table.token.as_deref(),
        move |s, access| {
            if !access.owner {
                return Err(ApiError::forbidden("a new invitation needs the match owner's token"));
            }
            Ok((s.invite(req.seat, given)?, ()))
        },
        |_, ()| Ok(()),
    )
    .await?;
    let id = &table.id;
    Ok(axum::Json(json!({ "seat": req.seat, "invite": code, "join": format!("/m/{id}#invite={code}") })))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AnalysisRequest {
    agent: String,
    ply: Option<usize>,
    viewer: Option<Player>,
    time_ms: Option<u64>,
}

/// A client's place among the analyses asked for, given back when dropped.
struct Asking {
    app: Arc<App>,
    client: Option<crate::Client>,
}

impl Drop for Asking {
    fn drop(&mut self) {
        if let Some(c) = self.client {
            self.app.asking.give(c);
        }
    }
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

pub(crate) async fn analysis(
    axum::extract::State(app): Shared,
    table: Table,
    body: Bytes,
) -> Result<axum::Json<Value>, ApiError> {
    let req: AnalysisRequest = json_body(&body, "an analysis ({\"agent\": SPEC, \"time_ms\": N})")?;
    let (entry, client) = (table.entry, table.client);
    let time = Duration::from_millis(req.time_ms.unwrap_or(1000));
    // Stops the search if the client goes away (this handler is dropped) while it runs.
    let cancel = meeple_game::CancelHandle::new().map(Arc::new);
    let job = {
        let s = entry.lock();
        let access = s.access(table.token.as_deref());
        let viewer = req.viewer.or(access.seat);
        s.check_viewer(viewer, access)?;
        s.analysis(&req.agent, req.ply, viewer, time, cancel.as_ref().map(|c| c.token()))?
    };
    if let Some(c) = client
        && !app.asking.take(c, ANALYSES_PER_CLIENT)
    {
        return Err(ApiError::too_many(format!(
            "this address has {ANALYSES_PER_CLIENT} analyses under way; wait for one to answer"
        )));
    }
    let asking = Asking { app: app.clone(), client };
    let memory = app.budget.reserve(app.config.max_agent_memory, "an analysis", client)?;
    let threads = crate::spec_threads(&req.agent);
    // Waits for its share of the analysts; a client that hangs up before one frees never starts
    // its job. Once running, the place is the job's until it ends (its time is capped).
    let grant = tokio::time::timeout(Duration::from_secs(30), app.analysts.acquire(client, Class::Person, threads))
        .await
        .map_err(|_| ApiError::busy("every analyst is busy; try again shortly"))?;
    let mut on_hang_up = HangUp(cancel.clone());
    let answer = tokio::task::spawn_blocking(move || {
        // The job keeps its place (and its cancel flag) until it ends, hung up or not.
        let _held = (grant, memory, asking, cancel);
        job()
    })
    .await
    .map_err(|_| ApiError::bad("the agent stopped with a panic"))??;
    on_hang_up.0 = None;
    Ok(axum::Json(answer))
}

fn attachment(name: &str, line: String) -> Response {
    let disposition = format!("attachment; filename=\"meeple-{name}.jsonl\"");
    ([(header::CONTENT_TYPE, "application/json".to_string()), (header::CONTENT_DISPOSITION, disposition)], line + "\n")
        .into_response()
}

pub(crate) async fn record(axum::extract::State(_app): Shared, table: Table) -> Result<Response, ApiError> {
    let line = {
        let session = table.entry.lock();
        if !session.public() {
            return Err(ApiError::forbidden(
                "the record shows every hidden deal (private cards, development cards): it can be downloaded once the game is over",
            ));
        }
        session.record().to_json()
    };
    Ok(attachment(&table.id, line))
}

/// A page of finished games, from the store's summaries on a read connection of its own:
/// `?limit=N` (1-100, default 50) and `?before=CURSOR` (a page's `next`).
pub(crate) async fn list_games(
    axum::extract::State(app): Shared,
    Query(query): Query<HashMap<String, String>>,
) -> Result<axum::Json<Value>, ApiError> {
    let Some(store) = &app.store else { return Ok(axum::Json(json!({ "games": [], "next": null }))) };
    let limit = match query.get("limit") {
        None => 50,
        Some(v) => v
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=100).contains(n))
            .ok_or_else(|| ApiError::bad(format!("limit '{v}' is not a number from 1 to 100")))?,
    };
    let before = match query.get("before") {
        None => None,
        Some(c) => Some(
            crate::store::parse_cursor(c)
                .ok_or_else(|| ApiError::bad(format!("before '{c}' is not a cursor from a page's \"next\"")))?,
        ),
    };
    let generation = store.generation();
    if before.is_none()
        && let Some((g, l, page)) = app.games_page.lock().unwrap_or_else(|e| e.into_inner()).as_ref()
        && *g == generation
        && *l == limit
    {
        return Ok(axum::Json(page.clone()));
    }
    let (games, next) = store.finished(limit, before.clone()).await.map_err(ApiError::busy)?;
    let page = json!({ "games": games, "next": next });
    if before.is_none() {
        *app.games_page.lock().unwrap_or_else(|e| e.into_inner()) = Some((generation, limit, page.clone()));
    }
    Ok(axum::Json(page))
}

pub(crate) async fn stored_record(app: &App, id: &str) -> Result<String, ApiError> {
    let store = app.store.as_ref().ok_or_else(|| ApiError::not_found("this server keeps no games"))?;
    if id.len() > 64 {
        return Err(ApiError::not_found("no such finished game"));
    }
    store.record(id).await.map_err(ApiError::busy)?.ok_or_else(|| ApiError::not_found("no such finished game"))
}

pub(crate) async fn game_record(
    axum::extract::State(app): Shared,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let line = stored_record(&app, &id).await?;
    Ok(attachment(&id, line))
}

pub(crate) async fn list_records(axum::extract::State(app): Shared) -> axum::Json<Value> {
    let files: Vec<Value> = app
        .config
        .records
        .iter()
        .enumerate()
        .map(|(i, p)| json!({ "file": i, "name": p.file_name().map(|n| n.to_string_lossy().to_string()) }))
        .collect();
    axum::Json(json!({ "files": files }))
}
