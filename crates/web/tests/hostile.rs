//! The hostile suite, short form: each way a hostile client or a hostile page in the same
//! browser broke the server once, replayed against it, and shown to do no harm. Classes: the
//! seed, files and blocking reads, memory, cross-site requests, analyses against games, game
//! integrity, connections, and games kept across a restart. The long form (many matches and
//! hostile clients at once, with memory measured) is `crates/web/tests/load.py`.

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;

struct Call<'a> {
    method: &'a str,
    uri: &'a str,
    body: Option<String>,
    headers: Vec<(&'a str, String)>,
}

impl<'a> Call<'a> {
    fn new(method: &'a str, uri: &'a str) -> Self {
        Call { method, uri, body: None, headers: vec![("host", "localhost:8080".into())] }
    }
    fn json(mut self, v: Value) -> Self {
        self.body = Some(v.to_string());
        self.headers.push(("content-type", "application/json".into()));
        self
    }
    fn header(mut self, k: &'a str, v: &str) -> Self {
        self.headers.retain(|(h, _)| *h != k);
        self.headers.push((k, v.into()));
        self
    }
    fn token(self, t: &str) -> Self {
        self.header(meeple_web::TOKEN_HEADER, t)
    }
    async fn send(self, app: &Router) -> (StatusCode, Value, axum::http::HeaderMap) {
        let mut req = Request::builder().method(self.method).uri(self.uri);
        for (k, v) in &self.headers {
            req = req.header(*k, v);
        }
        let res = app.clone().oneshot(req.body(self.body.map_or_else(Body::empty, Body::from)).unwrap()).await.unwrap();
        let (status, headers) = (res.status(), res.headers().clone());
        let bytes = res.into_body().collect().await.unwrap().to_bytes();
        let value =
            serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
        (status, value, headers)
    }
    async fn go(self, app: &Router) -> (StatusCode, Value) {
        let (s, v, _) = self.send(app).await;
        (s, v)
    }
}

fn app_with(config: meeple_web::Config) -> Router {
    meeple_web::router(config)
}

fn app() -> Router {
    app_with(meeple_web::Config::default())
}

struct Made {
    id: String,
    owner: String,
    tokens: Vec<String>,
    body: Value,
}

async fn create(app: &Router, request: Value) -> Made {
    let (status, body) = Call::new("POST", "/api/matches").json(request).go(app).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    Made {
        id: body["id"].as_str().unwrap().into(),
        owner: body["owner"].as_str().unwrap().into(),
        tokens: body["seats"].as_array().unwrap().iter().map(|s| s["token"].as_str().unwrap().to_string()).collect(),
        body,
    }
}

async fn wait_until(app: &Router, m: &Made, token: &str, done: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let (status, snap) = Call::new("GET", &format!("/api/matches/{}", m.id)).token(token).go(app).await;
        assert_eq!(status, StatusCode::OK, "{snap}");
        if done(&snap) {
            return snap;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "no progress: {snap}");
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
}

/// 1. The seed: a match with a person gets a secret seed from the operating system; it is in no
/// snapshot, list line or event until the game is over, and the finished record carries it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_stays_secret_until_the_game_is_over() {
    let app = app();
    let m = create(&app, json!({ "game": "sagrada", "seats": ["human", "random"], "delay_ms": 0, "move_time_ms": 50 }))
        .await;
    let me = m.tokens[0].clone();
    let mut shown: Vec<String> = vec![m.body.to_string()];
    assert!(m.body["snapshot"]["seed"].is_null() && m.body["snapshot"]["open"] == false, "{}", m.body);
    // Play to the end, keeping every answer a client could have seen on the way.
    let events = tokio::spawn({
        let (app, id, me) = (app.clone(), m.id.clone(), me.clone());
        async move {
            let (_, v, _) = Call::new("GET", &format!("/api/matches/{id}/events")).token(&me).send(&app).await;
            v
        }
    });
    loop {
        let snap =
            wait_until(&app, &m, &me, |s| s["result"].is_object() || !s["legal"].as_array().unwrap().is_empty()).await;
        if snap["result"].is_object() {
            break;
        }
        shown.push(snap.to_string());
        let (_, list) = Call::new("GET", "/api/matches").go(&app).await;
        shown.push(list.to_string());
        let (_, spectator) = Call::new("GET", &format!("/api/matches/{}?viewer=spectator", m.id)).go(&app).await;
        shown.push(spectator.to_string());
        let (status, body) = Call::new("GET", &format!("/api/matches/{}?viewer=1", m.id)).token(&me).go(&app).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        shown.push(body.to_string());
        let ply = snap["ply"].clone();
        let pick = snap["legal"][0]["id"].clone();
        let (status, after) = Call::new("POST", &format!("/api/matches/{}/moves", m.id))
            .token(&me)
            .json(json!({ "ply": ply, "id": pick }))
            .go(&app)
            .await;
        assert_eq!(status, StatusCode::OK, "{after}");
        shown.push(after.to_string());
    }
    events.abort();
    let (status, record) = Call::new("GET", &format!("/api/matches/{}/record", m.id)).go(&app).await;
    assert_eq!(status, StatusCode::OK);
    let seed = record["seed"].as_u64().unwrap();
    let (_, end) = Call::new("GET", &format!("/api/matches/{}", m.id)).go(&app).await;
    assert_eq!(end["seed"], seed, "shown once the game is over");
    for text in &shown {
        assert!(!text.contains(&seed.to_string()), "the seed {seed} was sent before the end: {text}");
        assert!(!text.contains("\"seed\":") || text.contains("\"seed\":null"), "{text}");
    }
    // A seed the client gives makes the match visibly open.
    let open = create(&app, json!({ "game": "sagrada", "seats": ["human", "random"], "seed": 987654 })).await;
    assert_eq!(open.body["snapshot"]["open"], true);
    let (_, list) = Call::new("GET", "/api/matches").go(&app).await;
    let line = list["matches"].as_array().unwrap().iter().find(|l| l["id"] == json!(open.id)).unwrap().clone();
    assert_eq!(line["open"], true, "{line}");
    assert!(line["seed"].is_null(), "{line}");
}

/// 2. Files and blocking reads: specs from clients name no file outside the allowed directories
/// (devices, pipes, absolute paths, `..`), the refusal says "unknown" without the system's words,
/// and it comes at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_specs_from_clients_read_no_file_outside_the_allowed_directories() {
    let dir = std::env::temp_dir().join(format!("meeple-hostile-files-{}", std::process::id()));
    let models = dir.join("models");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::write(dir.join("secret.txt"), "opponent=1\n").unwrap();
    let app = app_with(meeple_web::Config { model_dirs: vec![models.clone()], ..meeple_web::Config::default() });
    let m = create(&app, json!({ "game": "sagrada", "seats": ["human", "random"] })).await;
    let secret = dir.join("secret.txt").display().to_string();
    for spec in [
        "mcts:iters=10,eval=(thesis:weights=/dev/stdin)".to_string(),
        "mcts:iters=10,eval=(thesis:weights=/dev/zero)".to_string(),
        format!("mcts:iters=10,eval=(thesis:weights={secret})"),
        "mcts:iters=10,eval=(thesis:weights=../secret.txt)".to_string(),
        "mcts:iters=10,eval=(thesis:weights=/proc/self/environ)".to_string(),
        "az:model=/etc/passwd".to_string(),
        "az:model=/nonexistent/x.safetensors".to_string(),
        "mcts:playout=(policy:model=/dev/stdin)".to_string(),
    ] {
        let start = Instant::now();
        let (status, body) = Call::new("POST", &format!("/api/matches/{}/analysis", m.id))
            .token(&m.tokens[0])
            .json(json!({ "agent": spec, "time_ms": 100 }))
            .go(&app)
            .await;
        assert!(start.elapsed() < Duration::from_secs(2), "{spec}: took {:?}", start.elapsed());
        assert_eq!(status, StatusCode::BAD_REQUEST, "{spec}: {body}");
        let e = body["error"].as_str().unwrap();
        assert!(e.contains("unknown"), "{spec}: {e}");
        for leak in ["No such file", "os error", "Permission denied", "opponent=1", "root:"] {
            assert!(!e.contains(leak), "{spec}: the error tells what the system said: {e}");
        }
        // The same spec at a seat is refused too.
        let (status, body) = Call::new("POST", "/api/matches")
            .json(json!({ "game": "sagrada", "seats": ["human", spec] }))
            .go(&app)
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{spec}: {body}");
        assert!(body["error"].as_str().unwrap().contains("unknown"), "{body}");
    }
    // Meanwhile the server answered everything: nothing blocked a worker.
    let start = Instant::now();
    let (status, _) = Call::new("GET", "/api/matches").go(&app).await;
    assert_eq!(status, StatusCode::OK);
    assert!(start.elapsed() < Duration::from_millis(100));
    // A weights file inside the allowed directory is read.
    std::fs::write(models.join("mine.txt"), "opponent=2\n").unwrap();
    let (status, body) = Call::new("POST", &format!("/api/matches/{}/analysis", m.id))
        .token(&m.tokens[0])
        .json(json!({ "agent": "mcts:iters=10,eval=(thesis:weights=mine.txt)", "time_ms": 100 }))
        .go(&app)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// 3. Memory on request: table sizes per spec are capped, the server's budget refuses what does
/// not fit and takes back what is freed, long games stop at the ply cap, and an event or a
/// snapshot carries a page of the log, not all of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_is_bounded_by_the_budget_the_caps_and_the_log_pages() {
    let app = app();
    let (status, body) = Call::new("POST", "/api/matches")
        .json(json!({ "game": "connect4", "seats": ["human", "alphabeta:tt=8gb"] }))
        .go(&app)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = Call::new("POST", "/api/matches")
        .json(json!({ "game": "connect4", "seats": ["human", "alphabeta:tt=1gb"] }))
        .go(&app)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"].as_str().unwrap().contains("allows 64.0 MB per agent"), "{body}");

    let small = meeple_web::Config {
        memory_budget: 300 << 20,
        max_agent_memory: 64 << 20,
        max_plies: 300,
        ..meeple_web::Config::default()
    };
    let app = app_with(small);
    let mut made = Vec::new();
    let refused = loop {
        let (status, body) = Call::new("POST", "/api/matches")
            .json(json!({ "game": "connect4", "seats": ["human", "mcts:iters=100"] }))
            .go(&app)
            .await;
        if status != StatusCode::CREATED {
            break (status, body);
        }
        made.push((body["id"].as_str().unwrap().to_string(), body["owner"].as_str().unwrap().to_string()));
        assert!(made.len() < 10, "the budget never filled");
    };
    assert_eq!(refused.0, StatusCode::SERVICE_UNAVAILABLE, "{}", refused.1);
    assert!(refused.1["error"].as_str().unwrap().contains("memory budget"), "{}", refused.1);
    assert_eq!(made.len(), 4, "300 MB hold four matches with a 64 MB agent each");
    let (id, owner) = made.pop().unwrap();
    // An event stream still open on it (its client has not read on since) holds the match's
    // entry; the memory must come back all the same.
    let request = Request::builder()
        .method("GET")
        .uri(format!("/api/matches/{id}/events"))
        .header("host", "localhost:8080")
        .header(meeple_web::TOKEN_HEADER, &owner)
        .body(Body::empty())
        .unwrap();
    let stream = app.clone().oneshot(request).await.unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    let (status, _) = Call::new("DELETE", &format!("/api/matches/{id}")).token(&owner).go(&app).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = Call::new("POST", "/api/matches")
        .json(json!({ "game": "connect4", "seats": ["human", "mcts:iters=100"] }))
        .go(&app)
        .await;
    assert_eq!(status, StatusCode::CREATED, "freed memory is reserved again: {body}");
    drop(stream);
    for (id, owner) in &made {
        Call::new("DELETE", &format!("/api/matches/{id}")).token(owner).go(&app).await;
    }

    // A game that would never end stops at the ply cap; the log comes in pages.
    let (status, made) = Call::new("POST", "/api/matches")
        .json(json!({ "game": "catan:players=3,turns=100000", "seats": ["random", "random", "random"], "delay_ms": 0 }))
        .go(&app)
        .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let id = made["id"].as_str().unwrap().to_string();
    let start = Instant::now();
    let snap = loop {
        let (_, snap) = Call::new("GET", &format!("/api/matches/{id}")).go(&app).await;
        if snap["status"] == "stopped" || snap["status"] == "over" {
            break snap;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{}", snap["status"]);
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(snap["plies"].as_u64().unwrap() <= 300, "{}", snap["plies"]);
    if snap["status"] == "stopped" {
        assert!(snap["error"].as_str().unwrap().contains("limit of 300 plies"), "{}", snap["error"]);
    }
    let (_, page) = Call::new("GET", &format!("/api/matches/{id}?log_from=10")).go(&app).await;
    assert_eq!(page["log_start"], 10);
    assert_eq!(page["log"][0]["ply"], 11);
    // A replay longer than the cap is refused.
    let long =
        json!({ "game": "tictactoe", "seed": 0, "agents": ["a", "b"], "actions": vec!["a1"; 400], "scores": [0, 0] });
    let (status, body) = Call::new("POST", "/api/replays").json(json!({ "records": long.to_string() })).go(&app).await;
    assert!(status.is_client_error(), "{body}");
}

/// 4. Cross-site: a page elsewhere cannot drive the server (text/plain POSTs, foreign Origins)
/// nor read it through a rebound DNS name (foreign Host); the page cannot be framed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_on_another_site_can_neither_drive_nor_read_the_server() {
    let app = app();
    let create = json!({ "game": "tictactoe", "seats": ["random", "random"] }).to_string();
    let simple = |ct: &str| {
        let mut c = Call::new("POST", "/api/matches");
        c.body = Some(create.clone());
        c.header("content-type", ct)
    };
    for ct in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"] {
        let (status, body) = simple(ct).go(&app).await;
        assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{ct}: {body}");
    }
    let (status, _) = Call::new("POST", "/api/matches").json(serde_json::from_str(&create).unwrap()).go(&app).await;
    assert_eq!(status, StatusCode::CREATED, "the page's own request works");
    let (status, body) = Call::new("POST", "/api/matches")
        .json(serde_json::from_str(&create).unwrap())
        .header("origin", "http://evil.example")
        .go(&app)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, _) = Call::new("POST", "/api/matches")
        .json(serde_json::from_str(&create).unwrap())
        .header("origin", "null")
        .go(&app)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = Call::new("POST", "/api/matches")
        .json(serde_json::from_str(&create).unwrap())
        .header("origin", "http://localhost:8080")
        .go(&app)
        .await;
    assert_eq!(status, StatusCode::CREATED, "the server's own origin");
    for host in ["evil.example", "evil.example:8080", "127.0.0.1.nip.io:8080", "localhost.evil.example"] {
        let (status, body) = Call::new("GET", "/api/matches").header("host", host).go(&app).await;
        assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{host}: {body}");
    }
    let (status, _) = Call::new("OPTIONS", "/api/matches").header("origin", "http://evil.example").go(&app).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "no preflight is approved");
    let (_, _, headers) = Call::new("GET", "/").send(&app).await;
    assert_eq!(headers["x-frame-options"], "DENY");
    assert!(headers["content-security-policy"].to_str().unwrap().contains("frame-ancestors 'none'"));
    assert_eq!(headers["x-content-type-options"], "nosniff");
    // A configured name is allowed.
    let named =
        app_with(meeple_web::Config { hosts: vec!["games.example.org".into()], ..meeple_web::Config::default() });
    let (status, _) = Call::new("GET", "/api/matches").header("host", "games.example.org").go(&named).await;
    assert_eq!(status, StatusCode::OK);
}

/// 5. Analyses have their own pool: they never hold up a game's agents; one client has at most
/// two under way; a client that hangs up stops its search, and its place is free only once the
/// search has stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn analyses_keep_to_their_own_pool_and_stop_when_the_client_goes() {
    // As `meeple serve` does, the router knows the client's address.
    let peer = meeple_web::Peer(std::net::Ipv4Addr::LOCALHOST.into());
    let app = app_with(meeple_web::Config { thinkers: 1, analysts: 1, ..meeple_web::Config::default() })
        .layer(axum::Extension(peer));
    let watch =
        create(&app, json!({ "game": "connect4", "seats": ["random", "random"], "delay_ms": 0, "move_time_ms": 10 }))
            .await;
    let m = create(&app, json!({ "game": "connect4", "seats": ["human", "random"] })).await;
    // Six analyses of 8 s at once, every one abandoned by its client soon after it is sent.
    let mut asked = Vec::new();
    for _ in 0..6 {
        let (app, id, me) = (app.clone(), m.id.clone(), m.tokens[0].clone());
        asked.push(tokio::spawn(async move {
            Call::new("POST", &format!("/api/matches/{id}/analysis"))
                .token(&me)
                .json(json!({ "agent": "mcts", "time_ms": 8000 }))
                .go(&app)
                .await
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, status) = Call::new("GET", "/api/status").go(&app).await;
    assert_eq!(status["analysts_free"], 0, "one analysis runs: {status}");
    // One client has at most two under way: the other four were turned away at once.
    let mut refused = 0;
    for a in &asked {
        if a.is_finished() {
            refused += 1;
        }
        a.abort();
    }
    assert_eq!(refused, 4, "four of six refused");
    for a in asked {
        if let Ok((status, body)) = a.await {
            assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
        }
    }
    // The clients left: the running search stops long before its 8 s, the waiting one never
    // starts, and the place comes back.
    let start = Instant::now();
    loop {
        let (_, status) = Call::new("GET", "/api/status").go(&app).await;
        assert!(status["analysts_free"].as_u64().unwrap() <= 1, "{status}");
        if status["analysts_free"] == 1 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(2), "the abandoned search was not stopped: {status}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Meanwhile the agents' game went on.
    let (_, snap) = Call::new("GET", &format!("/api/matches/{}", watch.id)).go(&app).await;
    assert!(snap["ply"].as_u64().unwrap() > 4 || snap["result"].is_object(), "{snap}");
}

/// 5b. A match dropped while its agent thinks stops that agent at once: its place among the
/// thinkers comes back long before its 20 s are up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_match_stops_its_thinking_agent() {
    let app = app_with(meeple_web::Config { thinkers: 1, ..meeple_web::Config::default() });
    let m =
        create(&app, json!({ "game": "connect4", "seats": ["mcts", "mcts"], "delay_ms": 0, "move_time_ms": 20000 }))
            .await;
    let start = Instant::now();
    loop {
        let (_, status) = Call::new("GET", "/api/status").go(&app).await;
        if status["thinkers_free"] == 0 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(5), "{status}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (status, _) = Call::new("DELETE", &format!("/api/matches/{}", m.id)).token(&m.owner).go(&app).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let start = Instant::now();
    loop {
        let (_, status) = Call::new("GET", "/api/status").go(&app).await;
        if status["thinkers_free"] == 1 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(2), "the agent still thinks: {status}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// 6. Game integrity: random ids, seats that answer only to their tokens, no undo once the game
/// is over, slow bodies cut off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seats_answer_only_to_their_tokens_and_a_finished_game_stands() {
    let app =
        app_with(meeple_web::Config { body_timeout: Duration::from_millis(300), ..meeple_web::Config::default() });
    let m = create(&app, json!({ "game": "tictactoe", "seats": ["human", "human"] })).await;
    assert_eq!(m.id.len(), 32, "{}", m.id);
    assert!(m.id.bytes().all(|b| b.is_ascii_hexdigit()));
    let other = create(&app, json!({ "game": "tictactoe", "seats": ["human", "human"] })).await;
    assert_ne!(m.id, other.id);
    // Creating a match does not open an agent's eyes either.
    let (status, body) = Call::new("POST", "/api/matches")
        .json(json!({ "game": "sagrada", "seats": ["human", "random"], "viewer": 1 }))
        .go(&app)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let join = m.body["seats"][1]["join"].as_str().unwrap();
    assert!(join.starts_with(&format!("/m/{}#", m.id)) && join.contains(&m.tokens[1]), "{join}");
    let moves = format!("/api/matches/{}/moves", m.id);
    // Neither a stranger, nor the other seat, nor another match's token moves for seat 0.
    for t in ["", "0", other.tokens[0].as_str(), m.tokens[1].as_str(), m.owner.as_str()] {
        let (status, body) =
            Call::new("POST", &moves).token(t).json(json!({ "ply": 0, "action": "a1" })).go(&app).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "token '{t}': {body}");
    }
    for (ply, cell) in ["a1", "a2", "b1", "b2", "c1"].iter().enumerate() {
        let (status, body) = Call::new("POST", &moves)
            .token(&m.tokens[ply % 2])
            .json(json!({ "ply": ply, "action": cell }))
            .go(&app)
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let (status, body) = Call::new("POST", &format!("/api/matches/{}/undo", m.id))
        .token(&m.tokens[0])
        .json(json!({ "ply": 5 }))
        .go(&app)
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(body["error"].as_str().unwrap().contains("over"), "{body}");
    // A body that never finishes arriving is cut off.
    let (tx, body) = {
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<axum::body::Bytes, std::io::Error>>(1);
        (tx, Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx)))
    };
    tx.send(Ok("{\"game\":".into())).await.unwrap();
    let req = Request::builder()
        .method("POST")
        .uri("/api/matches")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(body)
        .unwrap();
    let start = Instant::now();
    let res = app.clone().oneshot(req).await.unwrap();
    assert_eq!(res.status(), StatusCode::REQUEST_TIMEOUT);
    assert!(start.elapsed() < Duration::from_secs(2));
    drop(tx);
}

async fn raw_get(addr: std::net::SocketAddr, path: &str) -> std::io::Result<String> {
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes()).await?;
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_string(&mut out)).await.map_err(std::io::Error::other)??;
    Ok(out)
}

/// 6b. Connections: idle ones are closed after the header timeout, and beyond the limit new ones
/// are turned away, so idle clients cannot lock everyone out for long.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_time_out_and_the_connection_limit_holds() {
    let config = meeple_web::Config {
        header_timeout: Duration::from_millis(400),
        max_connections: 8,
        ..meeple_web::Config::default()
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(meeple_web::serve("127.0.0.1", 0, config, move |a| {
        let _ = tx.send(a);
    }));
    let addr = rx.await.unwrap();
    assert!(raw_get(addr, "/api/catalog").await.unwrap().starts_with("HTTP/1.1 200"));
    // Eight idle connections the server holds. On a busy machine the first request's connection
    // can keep its slot a moment after its answer arrived, so one of the eight may be turned away
    // (closed at once, unlike a held one, which stays silent until its header time is up): such
    // a one is replaced until all eight are held, rather than guessing how long the server needs.
    let mut idle = Vec::new();
    for _ in 0..20 {
        while idle.len() < 8 {
            idle.push(tokio::net::TcpStream::connect(addr).await.unwrap());
        }
        // Well inside their 400 ms header time.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut held = Vec::new();
        for mut s in idle.drain(..) {
            let mut buf = [0u8; 1];
            if tokio::time::timeout(Duration::from_millis(1), s.read(&mut buf)).await.is_err() {
                held.push(s);
            }
        }
        idle = held;
        if idle.len() == 8 {
            break;
        }
    }
    assert_eq!(idle.len(), 8, "the server did not hold eight idle connections");
    // Full: a new connection is closed without an answer.
    let full = raw_get(addr, "/api/catalog").await;
    assert!(full.as_ref().map_or(true, |t| t.is_empty()), "{full:?}");
    // The idle ones are closed by the server once their header time is up...
    tokio::time::sleep(Duration::from_millis(700)).await;
    for mut s in idle {
        let mut buf = [0u8; 64];
        let n = tokio::time::timeout(Duration::from_secs(2), s.read(&mut buf)).await.expect("closed by the server");
        assert!(n.map_or(true, |n| n == 0 || buf.starts_with(b"HTTP/1.1 408")), "{:?}", String::from_utf8_lossy(&buf));
    }
    // ...and everyone else gets in again.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(raw_get(addr, "/api/catalog").await.unwrap().starts_with("HTTP/1.1 200"));
}

/// 7. Games kept: a match in progress and a finished one survive a restart of the server on the
/// same data directory; the token still holds the seat; the finished one is listed to replay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matches_in_progress_and_finished_games_survive_a_restart() {
    let dir = std::env::temp_dir().join(format!("meeple-hostile-store-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let config = || meeple_web::Config { data_dir: Some(dir.clone()), ..meeple_web::Config::default() };
    let app = app_with(config());
    let live = create(&app, json!({ "game": "connect4", "seats": ["human", "first"], "move_time_ms": 20 })).await;
    let moves = format!("/api/matches/{}/moves", live.id);
    Call::new("POST", &moves).token(&live.tokens[0]).json(json!({ "ply": 0, "action": "4" })).go(&app).await;
    let before = wait_until(&app, &live, &live.tokens[0], |s| s["ply"] == 2).await;
    let done = create(&app, json!({ "game": "tictactoe", "seats": ["human", "human"] })).await;
    for (ply, cell) in ["a1", "a2", "b1", "b2", "c1"].iter().enumerate() {
        Call::new("POST", &format!("/api/matches/{}/moves", done.id))
            .token(&done.tokens[ply % 2])
            .json(json!({ "ply": ply, "action": cell }))
            .go(&app)
            .await;
    }
    drop(app);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let app = app_with(config());
    let after = wait_until(&app, &live, &live.tokens[0], |s| s["ply"] == 2).await;
    assert_eq!(after["view"], before["view"]);
    assert_eq!(after["log"], before["log"]);
    let (status, _) = Call::new("GET", &format!("/api/matches/{}?viewer=0", live.id)).go(&app).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "the seat still needs its token");
    let (status, body) =
        Call::new("POST", &moves).token(&live.tokens[0]).json(json!({ "ply": 2, "action": "4" })).go(&app).await;
    assert_eq!(status, StatusCode::OK, "the game goes on: {body}");
    wait_until(&app, &live, &live.tokens[0], |s| s["ply"] == 4).await;
    let (_, games) = Call::new("GET", "/api/games").go(&app).await;
    let listed = games["games"].as_array().unwrap().iter().find(|g| g["id"] == json!(done.id)).cloned();
    let listed = listed.unwrap_or_else(|| panic!("the finished game is listed: {games}"));
    assert_eq!(listed["plies"], 5);
    let (status, replay) = Call::new("POST", "/api/replays").json(json!({ "game": done.id })).go(&app).await;
    assert_eq!(status, StatusCode::CREATED, "{replay}");
    let (status, record) = Call::new("GET", &format!("/api/games/{}/record", done.id)).go(&app).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(record["actions"], json!(["a1", "a2", "b1", "b2", "c1"]));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// 7b. An agent's move the store cannot write: the match pauses, and says so in its `error`
/// with the store's reason, for the players to see (the table of moves is dropped under the
/// server while its agent thinks).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_move_the_store_cannot_write_pauses_the_match_with_the_error() {
    let dir = std::env::temp_dir().join(format!("meeple-hostile-store-fail-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let app = app_with(meeple_web::Config { data_dir: Some(dir.clone()), ..meeple_web::Config::default() });
    let m = create(&app, json!({ "game": "connect4", "seats": ["human", "mcts"], "move_time_ms": 1500 })).await;
    let (status, body) = Call::new("POST", &format!("/api/matches/{}/moves", m.id))
        .token(&m.tokens[0])
        .json(json!({ "ply": 0, "action": "4" }))
        .go(&app)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let db = rusqlite::Connection::open(dir.join(meeple_web::store::FILE)).unwrap();
    db.busy_timeout(Duration::from_secs(5)).unwrap();
    db.execute_batch("DROP TABLE moves").unwrap();
    let snap = wait_until(&app, &m, &m.tokens[0], |s| !s["error"].is_null()).await;
    let error = snap["error"].as_str().unwrap();
    assert!(error.contains("could not be stored") && error.contains("no such table"), "{error}");
    assert_eq!(snap["paused"], true, "{snap}");
    assert_eq!(snap["status"], "paused", "{snap}");
    let _ = std::fs::remove_dir_all(&dir);
}
