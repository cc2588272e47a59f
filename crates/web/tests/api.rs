//! The API end to end, in process: every game created, played to its end through the same
//! requests the page sends, bad requests refused with the right status, and hidden information
//! never in what a person's seat is sent.

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use meeple_game::{Game, GameRecord, State, Turn};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tower::ServiceExt;

async fn call(app: &Router, method: &str, uri: &str, body: Option<Value>) -> (StatusCode, Value) {
    call_raw(app, method, uri, body.map(|b| b.to_string()), None).await
}

async fn call_as(app: &Router, token: &str, method: &str, uri: &str, body: Option<Value>) -> (StatusCode, Value) {
    call_raw(app, method, uri, body.map(|b| b.to_string()), Some(token)).await
}

async fn call_raw(
    app: &Router,
    method: &str,
    uri: &str,
    body: Option<String>,
    token: Option<&str>,
) -> (StatusCode, Value) {
    let mut req = Request::builder().method(method).uri(uri).header("host", "localhost:8080");
    if body.is_some() {
        req = req.header("content-type", "application/json");
    }
    if let Some(t) = token {
        req = req.header(meeple_web::TOKEN_HEADER, t);
    }
    let req = req.body(body.map_or_else(Body::empty, Body::from)).unwrap();
    let res = app.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    let value =
        serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    (status, value)
}

fn app() -> Router {
    meeple_web::router(meeple_web::Config::default())
}

/// A match as its creator holds it: its id, the owner's token and each person seat's token.
struct Made {
    id: String,
    owner: String,
    tokens: Vec<Option<String>>,
}

impl Made {
    fn seat(&self, seat: usize) -> &str {
        self.tokens[seat].as_deref().expect("a person's seat")
    }
}

fn made(body: &Value, seats: usize) -> Made {
    let mut tokens = vec![None; seats];
    for s in body["seats"].as_array().unwrap() {
        tokens[s["seat"].as_u64().unwrap() as usize] = Some(s["token"].as_str().unwrap().to_string());
    }
    Made { id: body["id"].as_str().unwrap().to_string(), owner: body["owner"].as_str().unwrap().to_string(), tokens }
}

async fn create(app: &Router, game: &str, seats: &[&str], seed: u64) -> Made {
    let persons: Vec<usize> = (0..seats.len()).filter(|&i| seats[i] == "human").collect();
    let (status, body) = call(
        app,
        "POST",
        "/api/matches",
        // Every person seat is played here, as at one screen.
        Some(
            json!({ "game": game, "seats": seats, "seed": seed, "delay_ms": 0, "move_time_ms": 200, "play": persons }),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    made(&body, seats.len())
}

/// Waits until seat `seat` may move or the game is over; returns that snapshot.
async fn wait_for_turn(app: &Router, m: &Made, seat: usize) -> Value {
    let start = Instant::now();
    loop {
        let (status, snap) = call_as(app, m.seat(seat), "GET", &format!("/api/matches/{}", m.id), None).await;
        assert_eq!(status, StatusCode::OK, "{snap}");
        assert_eq!(snap["viewer"], seat, "the token's seat is the default viewer");
        if snap["result"].is_object() || !snap["legal"].as_array().unwrap().is_empty() {
            return snap;
        }
        assert!(snap["error"].is_null(), "{}", snap["error"]);
        assert!(start.elapsed() < Duration::from_secs(120), "no progress: {snap}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Plays seat 0 as a person choosing moves by a fixed rule (the k-th legal move, varied), the
/// other seats as `random`; returns every snapshot seat 0 was sent, and the record.
async fn play_through(app: &Router, game: &str, seed: u64) -> (Vec<Value>, GameRecord) {
    let players = meeple_games::with_game!(game, |g| g.num_players()).unwrap();
    let mut seats = vec!["human"];
    seats.extend(std::iter::repeat_n("random", players - 1));
    let m = create(app, game, &seats, seed).await;
    let (id, me) = (m.id.clone(), m.seat(0).to_string());
    let mut seen = Vec::new();
    let mut moves = 0;
    loop {
        let snap = wait_for_turn(app, &m, 0).await;
        seen.push(snap.clone());
        if snap["result"].is_object() {
            break;
        }
        let legal = snap["legal"].as_array().unwrap();
        // Every legal move comes with a non-empty click path and words; the person is told
        // what to do now, and the log is in words too.
        assert!(legal.iter().all(|l| !l["path"].as_array().unwrap().is_empty()));
        assert!(legal.iter().all(|l| !l["words"].as_str().unwrap().is_empty()), "{game}");
        assert!(!snap["prompt"].as_str().unwrap_or("").is_empty(), "{game}: no prompt at ply {}", snap["ply"]);
        assert!(snap["log"].as_array().unwrap().iter().all(|l| l["words"].is_string()), "{game}");
        let pick = &legal[(moves * 7 + seed as usize) % legal.len()];
        let ply = snap["ply"].as_u64().unwrap();
        if moves == 0 {
            // An action id that is not legal here is refused with the rule's reason.
            let ids: Vec<u64> = legal.iter().map(|l| l["id"].as_u64().unwrap()).collect();
            let illegal = (0..).find(|i| !ids.contains(i)).unwrap();
            let (status, body) = call_as(
                app,
                &me,
                "POST",
                &format!("/api/matches/{id}/moves"),
                Some(json!({ "ply": ply, "id": illegal })),
            )
            .await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{game}: {body}");
            assert!(body["error"].as_str().unwrap().starts_with("illegal move"), "{game}: {body}");
        }
        let (status, after) = call_as(
            app,
            &me,
            "POST",
            &format!("/api/matches/{id}/moves"),
            Some(json!({ "ply": ply, "action": pick["text"] })),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{after}");
        assert!(after["ply"].as_u64().unwrap() > ply);
        seen.push(after);
        moves += 1;
        assert!(moves < 5000, "{game}: the game does not end");
    }
    let (status, record) = call(app, "GET", &format!("/api/matches/{id}/record"), None).await;
    assert_eq!(status, StatusCode::OK, "{record}");
    let record: GameRecord = serde_json::from_value(record).unwrap();
    (seen, record)
}

const GAMES: [&str; 7] =
    ["tictactoe", "connect4", "santorini", "cathedral", "sagrada", "catan:players=3", "catan:players=3,trades=true"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_game_is_played_to_its_end_and_its_record_replays() {
    let app = app();
    for (k, game) in GAMES.iter().enumerate() {
        let (seen, record) = play_through(&app, game, 11 + k as u64).await;
        let last = seen.last().unwrap();
        let returns: Vec<f64> = serde_json::from_value(last["result"]["returns"].clone()).unwrap();
        assert_eq!(record.returns.as_deref(), Some(returns.as_slice()), "{game}");
        // The record replays to the same end under the rules.
        meeple_games::with_game!(*game, |g| {
            let states = meeple_game::replay(&g, &record).unwrap();
            assert!(states.last().unwrap().is_terminal());
            // What seat 0 was shown is the game's own view for seat 0 at that ply.
            for snap in &seen {
                let ply = snap["ply"].as_u64().unwrap() as usize;
                assert_eq!(snap["view"], states[ply].view(Some(0)), "{game} ply {ply}");
            }
        })
        .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hidden_information_never_reaches_another_seat() {
    let app = app();
    for (game, seed) in [("sagrada", 3u64), ("catan:players=3,hidden_hands=true", 5)] {
        let (seen, record) = play_through(&app, game, seed).await;
        meeple_games::with_game!(game, |g| {
            let states = meeple_game::replay(&g, &record).unwrap();
            // Every chance outcome another seat alone may know (a private colour, a drawn card)
            // must not appear in any snapshot seat 0 was sent before the end.
            let mut secrets = 0;
            for (k, text) in record.actions.iter().enumerate() {
                let before = &states[k];
                if before.turn() != Turn::Chance {
                    continue;
                }
                let a = before.parse_action(text).unwrap();
                let masked = before.action_to_string_for(0, a);
                if masked == *text {
                    continue;
                }
                secrets += 1;
                for snap in seen.iter().filter(|s| s["result"].is_null()) {
                    let shown = snap["log"].as_array().unwrap();
                    if let Some(entry) = shown.iter().find(|e| e["ply"] == k + 1) {
                        assert_eq!(entry["text"], json!(masked), "{game} ply {}: log shows a secret", k + 1);
                    }
                }
            }
            assert!(secrets > 0, "{game}: the test game dealt no secret to another seat");
            for snap in seen.iter().filter(|s| s["result"].is_null()) {
                let ply = snap["ply"].as_u64().unwrap() as usize;
                assert_eq!(snap["view"], states[ply].view(Some(0)));
                for (p, player) in snap["view"]["players"].as_array().unwrap().iter().enumerate().skip(1) {
                    for key in ["private", "dev", "offers", "score"] {
                        if let Some(v) = player.get(key) {
                            assert!(v.is_null(), "{game} ply {ply}: seat {p}'s {key} shown to seat 0: {v}");
                        }
                    }
                }
            }
        })
        .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_may_not_look_through_an_agents_eyes_or_take_the_record_early() {
    let app = app();
    let m = create(&app, "sagrada", &["human", "random"], 9).await;
    let id = &m.id;
    let (status, body) = call_as(&app, m.seat(0), "GET", &format!("/api/matches/{id}?viewer=1"), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, _) = call_as(&app, m.seat(0), "GET", &format!("/api/matches/{id}/events?viewer=1"), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = call_as(&app, &m.owner, "GET", &format!("/api/matches/{id}/record"), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    // Without its token, a person's seat is not viewed either.
    let (status, body) = call(&app, "GET", &format!("/api/matches/{id}?viewer=0"), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = call(&app, "GET", &format!("/api/matches/{id}?viewer=spectator"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body["legal"].as_array().unwrap().is_empty(), "a spectator gets no moves to make");
    let (status, body) = call(&app, "GET", &format!("/api/matches/{id}?viewer=7"), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_the_right_status_and_say_what_is_accepted() {
    let app = app();
    let (status, catalog) = call(&app, "GET", "/api/catalog", None).await;
    assert_eq!(status, StatusCode::OK);
    let names: Vec<&str> = catalog["games"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["tictactoe", "connect4", "santorini", "cathedral", "sagrada", "catan"]);

    let bad = |game: &str, seats: Value| json!({ "game": game, "seats": seats });
    let (status, body) = call(&app, "POST", "/api/matches", Some(bad("chess", json!(["human", "random"])))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"].as_str().unwrap().contains("accepted: tictactoe"), "{body}");
    let (status, body) = call(&app, "POST", "/api/matches", Some(bad("connect4", json!(["human", "deepblue"])))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["error"].as_str().unwrap().contains("seat 1") && body["error"].as_str().unwrap().contains("mcts"),
        "{body}"
    );
    let (status, body) = call(&app, "POST", "/api/matches", Some(bad("connect4", json!(["human"])))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) =
        call(&app, "POST", "/api/matches", Some(bad("connect4:rows=99", json!(["human", "random"])))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = call_raw(&app, "POST", "/api/matches", Some("{not json".into()), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"].as_str().unwrap().contains("bad JSON"), "{body}");
    let (status, _) = call_raw(&app, "POST", "/api/matches", Some("x".repeat(meeple_web::MAX_BODY + 1)), None).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    let (status, body) = call(
        &app,
        "POST",
        "/api/matches",
        Some(json!({ "game": "connect4", "seats": ["human", "random"], "move_time_ms": 0 })),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _) = call(&app, "GET", "/api/matches/m999", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let m = create(&app, "connect4", &["human", "random"], 1).await;
    let (id, me) = (m.id.clone(), m.seat(0).to_string());
    let moves = format!("/api/matches/{id}/moves");
    let call = |app: &Router, method: &str, uri: &str, body: Option<Value>| {
        let (app, method, uri, me) = (app.clone(), method.to_string(), uri.to_string(), me.clone());
        async move { call_as(&app, &me, &method, &uri, body).await }
    };
    let (status, body) = call(&app, "POST", &moves, Some(json!({ "ply": 0, "action": "9" }))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body["error"].as_str().unwrap().contains("column number 1-7"), "{body}");
    let (status, body) = call(&app, "POST", &moves, Some(json!({ "ply": 0, "id": 4_000_000_000u32 }))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (status, body) = call(&app, "POST", &moves, Some(json!({ "ply": 5, "action": "4" }))).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(body["ply"], 0, "{body}");
    let (status, body) = call(&app, "POST", &moves, Some(json!({ "ply": 0 }))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = call(&app, "POST", &moves, Some(json!({ "ply": 0, "action": "4", "extra": 1 }))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _) = call(&app, "POST", &moves, Some(json!({ "ply": 0, "action": "4" }))).await;
    assert_eq!(status, StatusCode::OK);
    // The same move sent twice (a double click) answers the old ply: refused.
    let (status, _) = call(&app, "POST", &moves, Some(json!({ "ply": 0, "action": "4" }))).await;
    assert_eq!(status, StatusCode::CONFLICT);
    // While the agent is to move, a person's move is refused, not queued.
    let snap = wait_for_turn(&app, &m, 0).await;
    assert_eq!(snap["ply"], 2);
    let (status, body) =
        call(&app, "POST", &format!("/api/matches/{id}/analysis"), Some(json!({ "agent": "nobody", "viewer": 0 })))
            .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = call(
        &app,
        "POST",
        &format!("/api/matches/{id}/analysis"),
        Some(json!({ "agent": "random", "viewer": "spectator" })),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = call_raw(
        &app,
        "POST",
        &format!("/api/matches/{id}/analysis"),
        Some(json!({ "agent": "random" }).to_string()),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a spectator of a person's game gets no advice: {body}");
    let (status, body) = call(
        &app,
        "POST",
        &format!("/api/matches/{id}/analysis"),
        Some(json!({ "agent": "random", "viewer": 0, "time_ms": 0 })),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) =
        call_as(&app, &m.owner, "POST", &format!("/api/matches/{id}/control"), Some(json!({ "delay_ms": 999_999 })))
            .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) =
        call(&app, "POST", "/api/replays", Some(json!({ "records": "{\"game\":\"connect4\"}" }))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (status, body) = call(&app, "POST", "/api/replays", Some(json!({ "file": 3 }))).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, _) = call(&app, "GET", "/api/nothing", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_takes_back_the_persons_move_and_the_reply_but_never_across_chance() {
    let app = app();
    let m = create(&app, "connect4", &["human", "first"], 1).await;
    let (id, me) = (m.id.clone(), m.seat(0).to_string());
    let undo = format!("/api/matches/{id}/undo");
    let (status, _) = call_as(&app, &me, "POST", &undo, Some(json!({ "ply": 0 }))).await;
    assert_eq!(status, StatusCode::CONFLICT, "nothing to undo yet");
    call_as(&app, &me, "POST", &format!("/api/matches/{id}/moves"), Some(json!({ "ply": 0, "action": "4" }))).await;
    let snap = wait_for_turn(&app, &m, 0).await;
    assert_eq!(snap["ply"], 2);
    assert_eq!(snap["undoable"], true);
    // Without the seat's token, or naming another ply, nothing is taken back.
    let (status, body) = call(&app, "POST", &undo, Some(json!({ "ply": 2 }))).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = call_as(&app, &me, "POST", &undo, None).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "an undo names its ply: {body}");
    let (status, body) = call_as(&app, &me, "POST", &undo, Some(json!({ "ply": 2 }))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["ply"], 0);
    // The same click again (a double click) names a ply the game has left: refused.
    let (status, body) = call_as(&app, &me, "POST", &undo, Some(json!({ "ply": 2 }))).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let snap = wait_for_turn(&app, &m, 0).await;
    assert_eq!(snap["ply"], 0);
    assert!(snap["log"].as_array().unwrap().is_empty());

    // Sagrada deals and rolls between a person's moves: no undo past them.
    let m = create(&app, "sagrada", &["human", "random"], 2).await;
    let (id, me) = (m.id.clone(), m.seat(0).to_string());
    let snap = wait_for_turn(&app, &m, 0).await;
    let ply = snap["ply"].as_u64().unwrap();
    let first = snap["legal"][0]["text"].clone();
    call_as(&app, &me, "POST", &format!("/api/matches/{id}/moves"), Some(json!({ "ply": ply, "action": first }))).await;
    let mut snap = wait_for_turn(&app, &m, 0).await;
    // Go on until a chance event lies after this seat's last move.
    for _ in 0..100 {
        let log = snap["log"].as_array().unwrap();
        let last_mine = log.iter().rposition(|m| m["player"] == 0).unwrap();
        if log[last_mine..].iter().any(|m| m["chance"] == true) {
            break;
        }
        let ply = snap["ply"].as_u64().unwrap();
        let text = snap["legal"][0]["text"].clone();
        call_as(&app, &me, "POST", &format!("/api/matches/{id}/moves"), Some(json!({ "ply": ply, "action": text })))
            .await;
        snap = wait_for_turn(&app, &m, 0).await;
    }
    assert_eq!(snap["undoable"], false);
    let (status, body) =
        call_as(&app, &me, "POST", &format!("/api/matches/{id}/undo"), Some(json!({ "ply": snap["ply"] }))).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(body["error"].as_str().unwrap().contains("chance"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watching_agents_pauses_steps_and_replays_the_record() {
    let app = app();
    let (status, made) = call(
        &app,
        "POST",
        "/api/matches",
        Some(json!({ "game": "tictactoe", "seats": ["random", "random"], "seed": 4, "delay_ms": 0 })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let id = made["id"].as_str().unwrap().to_string();
    assert_eq!(made["seats"], json!([]), "no person, no seat token");
    let start = Instant::now();
    let end = loop {
        // Nobody plays: any seat's view is open to anyone.
        let (_, snap) = call(&app, "GET", &format!("/api/matches/{id}?viewer=1"), None).await;
        if snap["result"].is_object() {
            break snap;
        }
        assert!(start.elapsed() < Duration::from_secs(30));
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let (status, record) = call(&app, "GET", &format!("/api/matches/{id}/record"), None).await;
    assert_eq!(status, StatusCode::OK);
    let line = record.to_string();
    let (status, replay) = call(&app, "POST", "/api/replays", Some(json!({ "records": line }))).await;
    assert_eq!(status, StatusCode::CREATED, "{replay}");
    let rid = replay["id"].as_str().unwrap();
    assert_eq!(replay["plies"], end["ply"]);
    let (_, first) = call(&app, "GET", &format!("/api/matches/{rid}?ply=0"), None).await;
    assert_eq!(first["ply"], 0);
    assert_eq!(first["replay"], true);
    let (_, last) = call(&app, "GET", &format!("/api/matches/{rid}?ply={}", end["ply"]), None).await;
    assert_eq!(last["view"], end["view"]);
    assert_eq!(last["result"], end["result"]);
    let (status, _) =
        call(&app, "POST", &format!("/api/matches/{rid}/moves"), Some(json!({ "ply": 0, "action": "1" }))).await;
    assert_eq!(status, StatusCode::CONFLICT, "a replay is read-only");

    // Paused agents make no move until told to step; only the owner may pause.
    let (_, made) = call(
        &app,
        "POST",
        "/api/matches",
        Some(json!({ "game": "connect4", "seats": ["random", "random"], "seed": 5, "delay_ms": 200 })),
    )
    .await;
    let id = made["id"].as_str().unwrap().to_string();
    let owner = made["owner"].as_str().unwrap().to_string();
    let control = format!("/api/matches/{id}/control");
    let (status, _) = call(&app, "POST", &control, Some(json!({ "paused": true }))).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a stranger cannot pause it");
    call_as(&app, &owner, "POST", &control, Some(json!({ "paused": true }))).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let (_, a) = call(&app, "GET", &format!("/api/matches/{id}"), None).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (_, b) = call(&app, "GET", &format!("/api/matches/{id}"), None).await;
    assert_eq!(a["ply"], b["ply"], "paused");
    call_as(&app, &owner, "POST", &control, Some(json!({ "step": true }))).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let (_, c) = call(&app, "GET", &format!("/api/matches/{id}"), None).await;
    assert_eq!(c["ply"].as_u64().unwrap(), b["ply"].as_u64().unwrap() + 1, "one step");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analysis_names_a_legal_move_and_a_known_win() {
    let app = app();
    // X to move wins at once on the top row.
    let m = create(&app, "tictactoe", &["human", "human"], 1).await;
    let id = &m.id;
    for (ply, cell) in ["a1", "a2", "b1", "b2"].iter().enumerate() {
        let (status, body) = call_as(
            &app,
            m.seat(ply % 2),
            "POST",
            &format!("/api/matches/{id}/moves"),
            Some(json!({ "ply": ply, "action": cell })),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    // Seat 1 may not move for seat 0.
    let (status, body) = call_as(
        &app,
        m.seat(1),
        "POST",
        &format!("/api/matches/{id}/moves"),
        Some(json!({ "ply": 4, "action": "c1" })),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, advice) = call_as(
        &app,
        m.seat(0),
        "POST",
        &format!("/api/matches/{id}/analysis"),
        Some(json!({ "agent": "alphabeta:depth=9", "time_ms": 2000 })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{advice}");
    assert_eq!(advice["text"], "c1", "{advice}");
    assert_eq!(advice["path"], json!(["c:8"]), "c1 is the bottom right cell, id 8");
    // A search agent shows the moves it weighed, with visits and values.
    let (status, advice) = call_as(
        &app,
        m.seat(0),
        "POST",
        &format!("/api/matches/{id}/analysis"),
        Some(json!({ "agent": "mcts:iters=3000", "viewer": 0 })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{advice}");
    assert_eq!(advice["text"], "c1", "{advice}");
    let top = advice["top"].as_array().unwrap();
    assert_eq!(top[0]["text"], "c1", "{advice}");
    assert!(top[0]["visits"].as_u64().unwrap() > 0 && top[0]["value"].as_f64().unwrap() > 0.9, "{advice}");
    // In words, rated for the mover, with the line it expects (here the move wins: nothing after).
    assert_eq!(advice["mover"], 0);
    assert!(advice["value"].as_f64().unwrap() > 0.9, "{advice}");
    assert_eq!(advice["line"][0]["text"], "c1", "{advice}");
    assert!(!advice["words"].as_str().unwrap().is_empty(), "{advice}");
    // Earlier in a game alpha-beta's principal variation is the line: its first move the one it
    // plays, each move legal where it is played, the players taking turns.
    let m = create(&app, "connect4", &["human", "human"], 2).await;
    let (status, advice) = call_as(
        &app,
        m.seat(0),
        "POST",
        &format!("/api/matches/{}/analysis", m.id),
        Some(json!({ "agent": "alphabeta:depth=6" })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{advice}");
    let line = advice["line"].as_array().unwrap();
    assert!(line.len() >= 4, "{advice}");
    assert_eq!(line[0]["text"], advice["text"]);
    let game = meeple_games::Connect4::default();
    let mut s = game.initial_state();
    for (k, step) in line.iter().enumerate() {
        assert_eq!(step["player"], k % 2, "{advice}");
        let a = s.parse_action(step["text"].as_str().unwrap()).unwrap();
        assert!(s.is_legal(a), "{advice}");
        s.apply(a).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_and_its_files_are_served() {
    let app = app();
    for (path, needle) in
        [("/", "<main id=\"app\">"), ("/m/0123abcd", "app.js"), ("/app.js", "RENDERERS"), ("/style.css", ":root")]
    {
        let req = Request::builder().uri(path).header("host", "127.0.0.1:8080").body(Body::empty()).unwrap();
        let res = app.clone().oneshot(req).await.unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{path}");
        let bytes = res.into_body().collect().await.unwrap().to_bytes();
        assert!(String::from_utf8_lossy(&bytes).contains(needle), "{path}");
    }
    // Every game's initial view for a person and a spectator is a JSON object the page can draw,
    // and the opponent and advisor it offers are agents of the game (with gods, the shipped network).
    for game in GAMES.into_iter().chain(["santorini:gods=random"]) {
        meeple_games::with_game!(game, |g| {
            let s = g.initial_state();
            assert!(s.view(None).is_object() && s.view(Some(0)).is_object());
            let (opponent, advisor) = g.table_agents();
            let shipped = [std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models"))];
            for spec in [opponent, advisor] {
                meeple_game::access::restricted(&shipped, || meeple_learn::make_agent(&g, &spec, 1))
                    .unwrap_or_else(|e| panic!("{game}: {spec}: {e}"));
            }
        })
        .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_caps_its_matches_and_drops_idle_ones() {
    let config = meeple_web::Config {
        max_matches: 2,
        idle: Duration::from_millis(300),
        sweep_every: Duration::from_millis(50),
        ..meeple_web::Config::default()
    };
    let app = meeple_web::router(config);
    let a = create(&app, "tictactoe", &["human", "random"], 1).await;
    create(&app, "tictactoe", &["human", "random"], 2).await;
    let a = (a.id, a.owner);
    let (status, body) =
        call(&app, "POST", "/api/matches", Some(json!({ "game": "tictactoe", "seats": ["human", "random"] }))).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(body["error"].as_str().unwrap().contains("limit of 2"), "{body}");
    let (status, _) = call(&app, "DELETE", &format!("/api/matches/{}", a.0), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "only its owner deletes a match");
    let (status, _) = call_as(&app, &a.1, "DELETE", &format!("/api/matches/{}", a.0), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let c = create(&app, "tictactoe", &["human", "random"], 3).await.id;
    // Looked at, a match stays; left alone, it goes.
    for _ in 0..8 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (status, _) = call(&app, "GET", &format!("/api/matches/{c}"), None).await;
        assert_eq!(status, StatusCode::OK);
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    let (status, _) = call(&app, "GET", &format!("/api/matches/{c}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "an idle match expires");
    let (_, list) = call(&app, "GET", "/api/matches", None).await;
    assert!(list["matches"].as_array().unwrap().is_empty(), "{list}");
}

/// An undo takes the agent's line back at once, but the agent's job is still out until it
/// stops: until it comes back the match stays busy (its memory reserved on delete) and starts
/// no second job, even once the person has moved again.
#[test]
fn an_agent_stopping_after_an_undo_still_counts_until_its_job_returns() {
    use meeple_web::session::{self, Allowed, MoveRequest, Setup};
    let setup = Setup {
        game: "tictactoe".into(),
        seats: vec!["human".into(), "mcts:iters=200".into()],
        seed: Some(3),
        move_time: Duration::from_secs(5),
        delay: Duration::ZERO,
        play: None,
    };
    let mut next = 0;
    let mut tokens = || {
        next += 1;
        format!("token-{next}")
    };
    let mut s = session::create(&setup, &Allowed::default(), &mut tokens, 1).unwrap();
    // The match draws the owner's token and the person seat's, in its own order.
    let person = (1..=4)
        .map(|k| s.access(Some(&format!("token-{k}"))))
        .find(|a| a.seat == Some(0))
        .expect("one token is the person's seat");
    let mv = |ply: usize, id: u16| MoveRequest { ply, action: None, id: Some(id.into()) };
    // Each change is computed first and applied once stored (here: at once).
    let change = s.submit(&mv(0, 4), person).unwrap();
    assert_eq!(s.ply(), 0, "a change is not played before it is applied");
    assert!(s.apply(change));
    let stale = s.next_job().expect("the agent is to move");
    assert!(s.busy());
    let (change, to) = s.undo(1, person).unwrap();
    assert_eq!(to, 0, "the person's move is taken back");
    assert!(s.apply(change));
    assert!(s.busy(), "the agent's job is out until it returns");
    let change = s.submit(&mv(0, 0), person).unwrap();
    assert!(s.apply(change));
    assert!(s.next_job().is_none(), "no second job while the first is out");
    // The job runs on (its budget cancelled), comes back, and its move is dropped.
    let done = stale();
    assert!(done(&mut *s).is_none(), "the stale reply is no change");
    assert!(!s.busy());
    assert_eq!(s.ply(), 1, "the stale reply is not played");
    let job = s.next_job().expect("now the agent thinks about the new line");
    let reply = job()(&mut *s).expect("the agent's move");
    assert_eq!(s.ply(), 1, "not played before it is applied");
    assert!(s.apply(reply));
    assert_eq!(s.ply(), 2);
    assert!(!s.close(), "nothing out: the memory can come back at once");
}

/// A move taken back while the agent thinks about it, and another made at once: the stale job
/// may still be out when the new move comes (so that move starts no agent); when it returns, its
/// move is dropped and the agent answers the new one. Played many times, as the order is a race.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_undo_while_the_agent_thinks_then_a_new_move_gets_an_answer() {
    let app = app();
    let (status, body) = call(
        &app,
        "POST",
        "/api/matches",
        Some(json!({ "game": "connect4", "seats": ["human", "mcts"], "move_time_ms": 300, "delay_ms": 0 })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let m = made(&body, 2);
    let (moves, undo) = (format!("/api/matches/{}/moves", m.id), format!("/api/matches/{}/undo", m.id));
    for round in 0..20 {
        let (status, body) = call_as(&app, m.seat(0), "POST", &moves, Some(json!({ "ply": 0, "action": "4" }))).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        tokio::time::sleep(Duration::from_millis(20)).await;
        // The undo and the next move race each other to the match.
        let (a, me) = (app.clone(), m.seat(0).to_string());
        let taken = tokio::spawn({
            let undo = undo.clone();
            async move { call_as(&a, &me, "POST", &undo, Some(json!({ "ply": 1 }))).await }
        });
        loop {
            let (status, body) =
                call_as(&app, m.seat(0), "POST", &moves, Some(json!({ "ply": 0, "action": "3" }))).await;
            if status == StatusCode::OK {
                break;
            }
            assert_eq!(status, StatusCode::CONFLICT, "{body}");
            tokio::task::yield_now().await;
        }
        let (status, body) = taken.await.unwrap();
        assert_eq!(status, StatusCode::OK, "{body}");
        let start = Instant::now();
        let snap = loop {
            let (_, snap) = call_as(&app, m.seat(0), "GET", &format!("/api/matches/{}", m.id), None).await;
            if snap["ply"] == 2 && !snap["legal"].as_array().unwrap().is_empty() {
                break snap;
            }
            assert!(start.elapsed() < Duration::from_secs(5), "round {round}: the agent never answered: {snap}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        assert_eq!(snap["log"][0]["text"], "3");
        let (status, body) = call_as(&app, m.seat(0), "POST", &undo, Some(json!({ "ply": 2 }))).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
}

/// A person resigns with their seat's token: the game is over at once, the resigner scoring
/// nothing and the others sharing the win; the record says who resigned and replays; a stored
/// game keeps it across a restart. Where other people play on at a table of more than two
/// seats, one person cannot end their game.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_resigns_and_the_record_and_store_say_so() {
    let dir = std::env::temp_dir().join(format!("meeple-api-resign-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let config = || meeple_web::Config { data_dir: Some(dir.clone()), ..meeple_web::Config::default() };
    let app = meeple_web::router(config());
    let m = create(&app, "connect4", &["human", "first"], 3).await;
    let (id, me) = (m.id.clone(), m.seat(0).to_string());
    call_as(&app, &me, "POST", &format!("/api/matches/{id}/moves"), Some(json!({ "ply": 0, "action": "4" }))).await;
    wait_for_turn(&app, &m, 0).await;
    let resign = format!("/api/matches/{id}/resign");
    let (status, body) = call(&app, "POST", &resign, Some(json!({}))).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a stranger cannot resign for a seat: {body}");
    let (status, body) = call_as(&app, &m.owner, "POST", &resign, Some(json!({}))).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "the owner holds no seat: {body}");
    let (status, body) = call_as(&app, &me, "POST", &resign, Some(json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["resigned"], 0);
    let snap = wait_for_turn(&app, &m, 0).await;
    assert_eq!(snap["status"], "over");
    assert_eq!(snap["result"]["returns"], json!([0.0, 1.0]));
    assert_eq!(snap["result"]["resigned"], 0);
    assert!(snap["legal"].as_array().unwrap().is_empty());
    assert!(snap["seed"].is_string(), "the game is over: its seed is shown");
    let (status, body) = call_as(&app, &me, "POST", &resign, Some(json!({}))).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let (status, body) =
        call_as(&app, &me, "POST", &format!("/api/matches/{id}/moves"), Some(json!({ "ply": 2, "action": "4" }))).await;
    assert_eq!(status, StatusCode::CONFLICT, "no move after a resignation: {body}");
    assert!(body["error"].as_str().unwrap().contains("resigned"), "{body}");
    let (status, record) = call(&app, "GET", &format!("/api/matches/{id}/record"), None).await;
    assert_eq!(status, StatusCode::OK);
    let record: GameRecord = serde_json::from_value(record).unwrap();
    assert_eq!(record.resigned, Some(0));
    assert_eq!(record.returns, Some(vec![0.0, 1.0]));
    assert_eq!(record.actions.len(), 2);
    let game = meeple_games::Connect4::default();
    meeple_game::replay(&game, &record).expect("a resigned game's record replays");
    let mut forged = record.clone();
    forged.returns = Some(vec![1.0, 0.0]);
    assert!(meeple_game::replay(&game, &forged).is_err(), "a resignation gives the resigner nothing");
    // Replayed from its record, the page shows who resigned.
    let (status, replay) = call(&app, "POST", "/api/replays", Some(json!({ "records": record.to_json() }))).await;
    assert_eq!(status, StatusCode::CREATED, "{replay}");
    let (_, last) = call(&app, "GET", &format!("/api/matches/{}?ply=2", replay["id"].as_str().unwrap()), None).await;
    assert_eq!(last["result"]["resigned"], 0, "{last}");

    // Three seats, one person: the two agents share the win.
    let c = create(&app, "catan:players=3", &["human", "random", "random"], 4).await;
    let (status, body) =
        call_as(&app, c.seat(0), "POST", &format!("/api/matches/{}/resign", c.id), Some(json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, snap) = call_as(&app, c.seat(0), "GET", &format!("/api/matches/{}", c.id), None).await;
    assert_eq!(snap["result"]["returns"], json!([0.0, 0.5, 0.5]));
    // Three seats, two people: one cannot end the other's game.
    let p = create(&app, "catan:players=3", &["human", "random", "human"], 5).await;
    let (status, body) =
        call_as(&app, p.seat(2), "POST", &format!("/api/matches/{}/resign", p.id), Some(json!({}))).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(body["error"].as_str().unwrap().contains("other person"), "{body}");

    // After a restart the store lists the game with the resignation's result.
    drop(app);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let app = meeple_web::router(config());
    let (_, games) = call(&app, "GET", "/api/games", None).await;
    let listed = games["games"].as_array().unwrap().iter().find(|g| g["id"] == json!(id)).cloned();
    let listed = listed.unwrap_or_else(|| panic!("the resigned game is listed: {games}"));
    assert_eq!(listed["returns"], json!([0.0, 1.0]));
    let (_, snap) = call(&app, "GET", &format!("/api/matches/{id}"), None).await;
    assert_eq!(snap["result"]["resigned"], 0, "{snap}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every game has a rules card, in words, for the setting asked for: Catan's says whether players
/// trade, Santorini's names the gods in play and what they do.
#[tokio::test]
async fn every_game_has_a_rules_card_for_its_setting() {
    let app = app();
    for info in meeple_games::GAMES {
        let (status, body) = call(&app, "GET", &format!("/api/game?spec={}", info.name), None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let rules = body["rules"].as_array().unwrap();
        assert!(!rules.is_empty(), "{}: no rules card", info.name);
        for section in rules {
            assert!(!section["heading"].as_str().unwrap().is_empty());
            assert!(section["lines"].as_array().unwrap().iter().all(|l| l.as_str().unwrap().len() > 10), "{section}");
        }
    }
    let text = |v: &Value| v["rules"].to_string();
    let (_, plain) = call(&app, "GET", "/api/game?spec=catan", None).await;
    let (_, trading) = call(&app, "GET", "/api/game?spec=catan:trades=true,players=3", None).await;
    assert!(text(&plain).contains("No trading between players"), "{}", text(&plain));
    assert!(text(&trading).contains("accepts or declines") && text(&trading).contains("3 players"));
    let (_, pair) = call(&app, "GET", "/api/game?spec=santorini:gods=atlas%2Bpan", None).await;
    assert!(text(&pair).contains("Atlas: Your worker may build a dome at any level"), "{}", text(&pair));
    assert!(!text(&pair).contains("Apollo"), "only the gods in play");
    let (_, drawn) = call(&app, "GET", "/api/game?spec=santorini:gods=random", None).await;
    assert_eq!(
        text(&drawn).matches(": Your worker").count()
            + text(&drawn).matches(": If ").count()
            + text(&drawn).matches(": You also").count(),
        10,
        "all ten gods: {}",
        text(&drawn)
    );
    let (_, base) = call(&app, "GET", "/api/game?spec=santorini", None).await;
    assert!(!text(&base).contains("Gods"), "no gods in the base game");
}
