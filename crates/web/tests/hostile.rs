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
    /// The client's address, as `meeple serve` tells the router.
    peer: Option<std::net::IpAddr>,
}

impl<'a> Call<'a> {
    fn new(method: &'a str, uri: &'a str) -> Self {
        Call { method, uri, body: None, headers: vec![("host", "localhost:8080".into())], peer: None }
    }
    fn json(mut self, v: Value) -> Self {
        self.body = Some(v.to_string());
        self.headers.push(("content-type", "application/json".into()));
        self
    }
    fn raw(mut self, body: String, content_type: &str) -> Self {
        self.body = Some(body);
        self.header("content-type", content_type)
    }
    fn header(mut self, k: &'a str, v: &str) -> Self {
        self.headers.retain(|(h, _)| *h != k);
        self.headers.push((k, v.into()));
        self
    }
    fn token(self, t: &str) -> Self {
        self.header(meeple_web::TOKEN_HEADER, t)
    }
    fn from(mut self, ip: &str) -> Self {
        self.peer = Some(ip.parse().unwrap());
        self
    }
    async fn send(self, app: &Router) -> (StatusCode, Value, axum::http::HeaderMap) {
        let mut req = Request::builder().method(self.method).uri(self.uri);
        for (k, v) in &self.headers {
            req = req.header(*k, v);
        }
        let app = match self.peer {
            Some(ip) => app.clone().layer(axum::Extension(meeple_web::Peer(ip))),
            None => app.clone(),
        };
        let res = app.oneshot(req.body(self.body.map_or_else(Body::empty, Body::from)).unwrap()).await.unwrap();
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
    assert_eq!(end["seed"], seed.to_string(), "shown once the game is over, as a string");
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
    let m = create(&app, json!({ "game": "tictactoe", "seats": ["human", "human"], "play": [0, 1] })).await;
    assert_eq!(m.id.len(), 32, "{}", m.id);
    assert!(m.id.bytes().all(|b| b.is_ascii_hexdigit()));
    let other = create(&app, json!({ "game": "tictactoe", "seats": ["human", "human"], "play": [0, 1] })).await;
    assert_ne!(m.id, other.id);
    // Creating a match does not open an agent's eyes either.
    let (status, body) = Call::new("POST", "/api/matches")
        .json(json!({ "game": "sagrada", "seats": ["human", "random"], "viewer": 1 }))
        .go(&app)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
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
    let done = create(&app, json!({ "game": "tictactoe", "seats": ["human", "human"], "play": [0, 1] })).await;
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

/// Opening past games' pages costs the opener none of its share of matches: finished games
/// from the store are held for whoever looks, a few at a time, and the opener can still play.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_past_games_takes_none_of_the_openers_matches() {
    let dir = temp_dir("past-games");
    let config = || meeple_web::Config { max_matches_per_client: 4, ..stored(&dir) };
    let app = app_with(config());
    let mut done = Vec::new();
    for k in 0..6 {
        let m =
            create(&app, json!({ "game": "tictactoe", "seats": ["human", "human"], "play": [0, 1], "seed": k })).await;
        for (ply, cell) in ["a1", "a2", "b1", "b2", "c1"].iter().enumerate() {
            Call::new("POST", &format!("/api/matches/{}/moves", m.id))
                .token(&m.tokens[ply % 2])
                .json(json!({ "ply": ply, "action": cell }))
                .go(&app)
                .await;
        }
        done.push(m.id);
    }
    // After a restart the finished games are in the store only.
    drop(app);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let app = app_with(config());
    for id in &done {
        let (status, body) = Call::new("GET", &format!("/api/matches/{id}")).from("10.0.0.5").go(&app).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(body["result"].is_object(), "{body}");
    }
    let (status, body) = Call::new("POST", "/api/matches")
        .from("10.0.0.5")
        .json(json!({ "game": "connect4", "seats": ["human", "random"] }))
        .go(&app)
        .await;
    assert_eq!(status, StatusCode::CREATED, "after opening {} past games: {body}", done.len());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// 7b. An agent's move the store cannot write (the table of moves dropped under the server
/// while the agent thinks) is not played: the match says why it waits, with the store's
/// reason, and plays the move once the store can write it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_move_the_store_cannot_write_waits_with_the_error() {
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
    assert_eq!(snap["status"], "stalled", "{snap}");
    assert_eq!(snap["ply"], 1, "the move is not shown: {snap}");
    db.execute_batch(
        "CREATE TABLE moves (match TEXT NOT NULL, ply INTEGER NOT NULL, action INTEGER NOT NULL, ms REAL,
         PRIMARY KEY (match, ply)) WITHOUT ROWID",
    )
    .unwrap();
    let snap = wait_until(&app, &m, &m.tokens[0], |s| s["ply"] == 2).await;
    assert!(snap["error"].is_null(), "{snap}");
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------- the shared table
//
// The hostile test tried as a stranger on the network and as a hostile page would: each way it
// found to hurt the people at a table, replayed.

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("meeple-hostile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn stored(dir: &std::path::Path) -> meeple_web::Config {
    meeple_web::Config { data_dir: Some(dir.to_path_buf()), ..meeple_web::Config::default() }
}

async fn snapshot_of(app: &Router, id: &str, token: &str) -> Value {
    let (status, snap) = Call::new("GET", &format!("/api/matches/{id}")).token(token).go(app).await;
    assert_eq!(status, StatusCode::OK, "{snap}");
    snap
}

/// 8. What is shown is stored. With the database locked by another program (a backup, the
/// sqlite3 shell) a person's move is refused and not played, and an agent's move is not shown
/// until it is stored; the game a restart resumes is exactly the game the clients saw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_the_store_cannot_write_is_not_played() {
    let dir = temp_dir("locked");
    let locked = || meeple_web::Config { store_timeout: Duration::from_millis(300), ..stored(&dir) };
    let app = app_with(locked());
    let m = create(&app, json!({ "game": "connect4", "seats": ["human", "mcts"], "move_time_ms": 1500 })).await;
    let me = m.tokens[0].clone();
    let moves = format!("/api/matches/{}/moves", m.id);
    let lock = rusqlite::Connection::open(dir.join(meeple_web::store::FILE)).unwrap();
    lock.execute_batch("BEGIN IMMEDIATE").unwrap();
    let (status, body) = Call::new("POST", &moves).token(&me).json(json!({ "ply": 0, "action": "4" })).go(&app).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    let snap = snapshot_of(&app, &m.id, &me).await;
    assert_eq!(snap["ply"], 0, "a move the store refused is not played: {snap}");
    assert!(!snap["legal"].as_array().unwrap().is_empty(), "the person may try again: {snap}");
    lock.execute_batch("COMMIT").unwrap();
    let (status, body) = Call::new("POST", &moves).token(&me).json(json!({ "ply": 0, "action": "4" })).go(&app).await;
    assert_eq!(status, StatusCode::OK, "the same move once the store can write: {body}");
    // The agent thinks for 1.5 s; meanwhile the database is locked again.
    lock.execute_batch("BEGIN IMMEDIATE").unwrap();
    let waiting = wait_until(&app, &m, &me, |s| !s["error"].is_null() || s["ply"] != 1).await;
    assert_eq!(waiting["ply"], 1, "the agent's move is not shown before it is stored: {waiting}");
    assert!(waiting["error"].as_str().unwrap().contains("stored"), "{waiting}");
    lock.execute_batch("COMMIT").unwrap();
    let seen = wait_until(&app, &m, &me, |s| s["ply"] == 2 && !s["legal"].as_array().unwrap().is_empty()).await;
    assert!(seen["error"].is_null(), "{seen}");
    drop(app);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let app = app_with(locked());
    let after = wait_until(&app, &m, &me, |s| !s["legal"].as_array().unwrap().is_empty()).await;
    assert_eq!((&after["ply"], &after["log"], &after["view"]), (&seen["ply"], &seen["log"], &seen["view"]));
    drop(lock);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// 9. Seats belong to whoever claims them. The creator gets its own seat's token, the owner's,
/// and an invitation for every other person seat; the invitation is spent once claimed, and
/// then only the claimer can see that seat's hidden view or move for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seat_belongs_to_whoever_claims_its_invitation() {
    let app = app();
    let (status, made) = Call::new("POST", "/api/matches")
        .json(json!({ "game": "sagrada", "seats": ["human", "human"] }))
        .go(&app)
        .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let (id, owner) = (made["id"].as_str().unwrap().to_string(), made["owner"].as_str().unwrap().to_string());
    let mine = made["seats"].as_array().unwrap();
    assert_eq!(mine.len(), 1, "the creator is given its own seat's token only: {made}");
    assert_eq!(mine[0]["seat"], 0);
    let creator = mine[0]["token"].as_str().unwrap().to_string();
    let invite = &made["invites"][0];
    assert_eq!(invite["seat"], 1, "{made}");
    let code = invite["invite"].as_str().unwrap().to_string();
    assert!(invite["join"].as_str().unwrap().contains(&format!("#invite={code}")), "{invite}");
    let claim = format!("/api/matches/{id}/claim");
    let (status, body) = Call::new("POST", &claim).json(json!({ "invite": "0".repeat(32) })).go(&app).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a wrong invitation claims nothing: {body}");
    let (status, claimed) = Call::new("POST", &claim).json(json!({ "invite": code })).go(&app).await;
    assert_eq!(status, StatusCode::OK, "{claimed}");
    assert_eq!(claimed["seat"], 1);
    let theirs = claimed["token"].as_str().unwrap().to_string();
    let (status, body) = Call::new("POST", &claim).json(json!({ "invite": code })).go(&app).await;
    assert_eq!(status, StatusCode::CONFLICT, "an invitation is claimed once: {body}");
    // Neither of the creator's tokens opens seat 1's view or moves for it.
    for t in [&creator, &owner] {
        let (status, body) = Call::new("GET", &format!("/api/matches/{id}?viewer=1")).token(t).go(&app).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        let (status, _) = Call::new("GET", &format!("/api/matches/{id}/events?viewer=1")).token(t).go(&app).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
    }
    let (status, snap) = Call::new("GET", &format!("/api/matches/{id}")).token(&theirs).go(&app).await;
    assert_eq!(status, StatusCode::OK, "{snap}");
    assert_eq!(snap["viewer"], 1);
    assert!(snap["view"]["players"][1]["private"].is_string(), "the claimer sees its secret: {snap}");
    let (_, mine) = Call::new("GET", &format!("/api/matches/{id}")).token(&creator).go(&app).await;
    assert!(mine["view"]["players"][1]["private"].is_null(), "{mine}");
    // The seat rotates its token: the old one stops working.
    let (status, rotated) =
        Call::new("POST", &format!("/api/matches/{id}/token")).token(&theirs).json(json!({})).go(&app).await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    let fresh = rotated["token"].as_str().unwrap().to_string();
    assert_ne!(fresh, theirs);
    let (status, _) = Call::new("GET", &format!("/api/matches/{id}?viewer=1")).token(&theirs).go(&app).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "the old token is void");
    let (status, _) = Call::new("GET", &format!("/api/matches/{id}?viewer=1")).token(&fresh).go(&app).await;
    assert_eq!(status, StatusCode::OK);
    // A claimed seat's invitation cannot be issued again, by the owner or anyone.
    let invite_again = format!("/api/matches/{id}/invite");
    let (status, body) = Call::new("POST", &invite_again).token(&owner).json(json!({ "seat": 1 })).go(&app).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    // An unclaimed one the owner can re-issue; the old link is then void.
    let (_, other) = Call::new("POST", "/api/matches")
        .json(json!({ "game": "sagrada", "seats": ["human", "human"] }))
        .go(&app)
        .await;
    let other_id = other["id"].as_str().unwrap();
    let old_code = other["invites"][0]["invite"].as_str().unwrap();
    let reissue = format!("/api/matches/{other_id}/invite");
    let (status, _) = Call::new("POST", &reissue).token(&creator).json(json!({ "seat": 1 })).go(&app).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "another match's seat token is no owner");
    let (status, reissued) =
        Call::new("POST", &reissue).token(other["owner"].as_str().unwrap()).json(json!({ "seat": 1 })).go(&app).await;
    assert_eq!(status, StatusCode::OK, "{reissued}");
    let new_code = reissued["invite"].as_str().unwrap();
    let other_claim = format!("/api/matches/{other_id}/claim");
    let (status, _) = Call::new("POST", &other_claim).json(json!({ "invite": old_code })).go(&app).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "the re-issued invitation voids the old link");
    let (status, _) = Call::new("POST", &other_claim).json(json!({ "invite": new_code })).go(&app).await;
    assert_eq!(status, StatusCode::OK);
    // Hot seat: a creator may keep the seats it plays itself at one screen.
    let (status, hot) = Call::new("POST", "/api/matches")
        .json(json!({ "game": "tictactoe", "seats": ["human", "human"], "play": [0, 1] }))
        .go(&app)
        .await;
    assert_eq!(status, StatusCode::CREATED, "{hot}");
    assert_eq!(hot["seats"].as_array().unwrap().len(), 2, "{hot}");
    assert_eq!(hot["invites"], json!([]), "{hot}");
}

/// Times a person's move until the agent's answer is shown.
async fn answer_time(app: &Router, id: &str, token: &str, ply: u64, column: &str) -> Duration {
    let start = Instant::now();
    let (status, body) = Call::new("POST", &format!("/api/matches/{id}/moves"))
        .token(token)
        .json(json!({ "ply": ply, "action": column }))
        .go(app)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    loop {
        let snap = snapshot_of(app, id, token).await;
        if snap["ply"].as_u64().unwrap() >= ply + 2 || snap["result"].is_object() {
            return start.elapsed();
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{snap}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Creates `per_address` matches from each address, each as `request` asks.
async fn strangers_matches(app: &Router, addresses: &[&str], per_address: usize, request: Value) -> Vec<Made> {
    let mut made = Vec::new();
    for &ip in addresses {
        for _ in 0..per_address {
            let (status, body) = Call::new("POST", "/api/matches").from(ip).json(request.clone()).go(app).await;
            assert_eq!(status, StatusCode::CREATED, "{body}");
            made.push(Made {
                id: body["id"].as_str().unwrap().into(),
                owner: body["owner"].as_str().unwrap().into(),
                tokens: Vec::new(),
                body,
            });
        }
    }
    made
}

/// A person from `address` plays three moves of connect four against a fast agent: the longest
/// wait for an answer.
async fn persons_worst_answer(app: &Router, address: &str) -> Duration {
    let (status, made) = Call::new("POST", "/api/matches")
        .from(address)
        .json(json!({ "game": "connect4", "seats": ["human", "mcts:iters=200"] }))
        .go(app)
        .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let (id, me) = (made["id"].as_str().unwrap(), made["seats"][0]["token"].as_str().unwrap());
    let mut worst = Duration::ZERO;
    for (k, column) in ["4", "3", "5"].iter().enumerate() {
        worst = worst.max(answer_time(app, id, me, 2 * k as u64, column).await);
    }
    worst
}

async fn delete_all(app: &Router, matches: Vec<Made>) {
    for m in matches {
        Call::new("DELETE", &format!("/api/matches/{}", m.id)).token(&m.owner).go(app).await;
    }
}

/// 10. Fair shares of the thinkers: beside a stranger's agent-only matches at 5 s a move, a
/// person's fast opponent answers at once, whether the stranger is elsewhere or shares the
/// person's machine.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_person_waiting_for_an_agent_goes_before_a_strangers_agent_only_matches() {
    for (stranger, person) in [("10.0.0.2", "10.0.0.1"), ("127.0.0.2", "127.0.0.1")] {
        let app = app_with(meeple_web::Config { thinkers: 2, ..meeple_web::Config::default() });
        let request = json!({ "game": "connect4", "seats": ["mcts", "mcts"], "move_time_ms": 5000, "delay_ms": 0 });
        let theirs = strangers_matches(&app, &[stranger], 8, request).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let worst = persons_worst_answer(&app, person).await;
        assert!(worst < Duration::from_millis(1000), "stranger {stranger}: the person's answer took {worst:?}");
        delete_all(&app, theirs).await;
    }
}

/// Priority follows a person at the table, not a seat's name: a stranger's matches from two
/// addresses, each with a `human` seat nobody holds and an agent thinking 5 s a move, do not
/// take the threads kept for people; a person playing beside them gets answers at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_seat_named_human_that_nobody_holds_lends_its_agents_no_priority() {
    let app = app_with(meeple_web::Config { thinkers: 2, reserved_thinkers: 1, ..meeple_web::Config::default() });
    let request = json!({ "game": "connect4", "seats": ["mcts", "human"], "move_time_ms": 5000 });
    let theirs = strangers_matches(&app, &["10.0.0.2", "10.0.1.2"], 4, request).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let worst = persons_worst_answer(&app, "10.0.0.1").await;
    assert!(worst < Duration::from_millis(1000), "the person's answer took {worst:?}");
    delete_all(&app, theirs).await;
}

/// The owner's controls (pause, step, pace) are for matches of agents: a table with a person
/// at it cannot be held by its owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_cannot_pause_a_game_people_play() {
    let app = app();
    let m = create(&app, json!({ "game": "connect4", "seats": ["human", "human"] })).await;
    let control = format!("/api/matches/{}/control", m.id);
    for body in [json!({ "paused": true }), json!({ "step": true }), json!({ "delay_ms": 2000 })] {
        let (status, answer) = Call::new("POST", &control).token(&m.owner).json(body.clone()).go(&app).await;
        assert_eq!(status, StatusCode::CONFLICT, "{body}: {answer}");
        assert!(answer["error"].as_str().unwrap().contains("agents only"), "{answer}");
    }
    let agents = create(&app, json!({ "game": "connect4", "seats": ["random", "random"], "delay_ms": 500 })).await;
    let (status, answer) = Call::new("POST", &format!("/api/matches/{}/control", agents.id))
        .token(&agents.owner)
        .json(json!({ "paused": true }))
        .go(&app)
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
}

/// What the person holding `token` may do now at match `id`: the snapshot, its ply and the
/// legal moves' notation (empty, after a short wait, while someone else is to move).
async fn persons_options(app: &Router, id: &str, token: &str) -> (Value, u64, Vec<String>) {
    let snap = snapshot_of(app, id, token).await;
    let texts: Vec<String> =
        snap["legal"].as_array().into_iter().flatten().filter_map(|l| l["text"].as_str().map(str::to_string)).collect();
    if texts.is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let ply = snap["ply"].as_u64().unwrap();
    (snap, ply, texts)
}

/// The person's move `action` at `ply`, and the quickest way through a turn of their own.
async fn play_as(app: &Router, id: &str, token: &str, ply: u64, action: &str) {
    Call::new("POST", &format!("/api/matches/{id}/moves"))
        .token(token)
        .json(json!({ "ply": ply, "action": action }))
        .go(app)
        .await;
}

fn quickest(texts: &[String]) -> &str {
    ["end", "roll"].into_iter().find(|t| texts.iter().any(|x| x == t)).unwrap_or(&texts[0])
}

/// A person who does not answer an offer put to them cannot hold the table: after the answer
/// time the offer is declined for them, and the game goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offer_nobody_answers_is_declined_in_time() {
    let app = app_with(meeple_web::Config { answer_time: Duration::from_millis(300), ..meeple_web::Config::default() });
    let m = create(
        &app,
        json!({ "game": "catan:players=3,trades=true", "seats": ["catan-value", "human", "catan-value"], "seed": 5, "move_time_ms": 50 }),
    )
    .await;
    let me = &m.tokens[0];
    let start = Instant::now();
    let asked = loop {
        assert!(start.elapsed() < Duration::from_secs(60), "no offer was put to the person");
        let (snap, ply, texts) = persons_options(&app, &m.id, me).await;
        assert!(snap["result"].is_null(), "the game ended first: {snap}");
        if texts.iter().any(|t| t == "decline") {
            break ply;
        }
        if !texts.is_empty() {
            play_as(&app, &m.id, me, ply, quickest(&texts)).await;
        }
    };
    // The person says nothing; the offer is declined for them and the game moves on.
    let waited = Instant::now();
    loop {
        let snap = snapshot_of(&app, &m.id, me).await;
        if snap["ply"].as_u64().unwrap() > asked {
            let log = snap["log"].as_array().unwrap();
            let answer = log.iter().find(|l| l["ply"].as_u64() == Some(asked + 1)).unwrap_or_else(|| panic!("{snap}"));
            assert_eq!(answer["player"], 1, "{answer}");
            assert_eq!(answer["text"], "decline", "{answer}");
            break;
        }
        assert!(waited.elapsed() < Duration::from_secs(5), "the unanswered offer still holds the table");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// An offer a person cannot pay is declined for them at once: they are only asked when they
/// could accept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_is_asked_only_offers_they_could_accept() {
    let app = app();
    let m = create(
        &app,
        json!({ "game": "catan:players=3,trades=true", "seats": ["catan-value", "human", "catan-value"], "seed": 8, "move_time_ms": 50 }),
    )
    .await;
    let me = &m.tokens[0];
    let (mut asked, mut answered_for_me, mut sent) = (0, 0, std::collections::HashSet::new());
    let mut unpayable: Option<(u64, Instant)> = None;
    let start = Instant::now();
    while answered_for_me == 0 || asked == 0 {
        assert!(start.elapsed() < Duration::from_secs(90), "asked {asked}, answered for the person {answered_for_me}");
        let (snap, ply, texts) = persons_options(&app, &m.id, me).await;
        if snap["result"].is_object() {
            break;
        }
        answered_for_me = snap["log"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| l["player"] == 1 && l["text"] == "decline" && !sent.contains(&l["ply"].as_u64().unwrap()))
            .count();
        if texts.is_empty() {
            continue;
        }
        if texts == ["decline"] {
            // The server declines for the person from its own task, just after the offer reaches
            // them: a snapshot may show that moment. What must never happen is to be left asked.
            let since = *unpayable.get_or_insert((ply, Instant::now()));
            assert!(
                since.0 != ply || since.1.elapsed() < Duration::from_secs(3),
                "left asked to answer an offer it cannot accept at ply {ply}: {texts:?}"
            );
            if since.0 != ply {
                unpayable = Some((ply, Instant::now()));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        let pick = if texts.iter().any(|t| t == "decline") {
            assert!(texts.iter().any(|t| t == "accept"), "asked to answer an offer it cannot accept: {texts:?}");
            asked += 1;
            sent.insert(ply + 1);
            "decline"
        } else {
            quickest(&texts)
        };
        play_as(&app, &m.id, me, ply, pick).await;
    }
    assert!(answered_for_me > 0, "no offer it could not pay came up");
}

/// Undo cannot take back an offer once the agents have answered it: their answers tell what
/// they hold, and the rules allow three offers a turn, none repeated once declined.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_cannot_take_back_an_answered_offer() {
    let app = app();
    let m = create(
        &app,
        json!({ "game": "catan:players=3,trades=true", "seats": ["human", "catan-value", "catan-value"], "seed": 3, "move_time_ms": 50 }),
    )
    .await;
    let me = &m.tokens[0];
    let start = Instant::now();
    loop {
        assert!(start.elapsed() < Duration::from_secs(60), "the person never could make an offer");
        let (snap, ply, texts) = persons_options(&app, &m.id, me).await;
        assert!(snap["result"].is_null(), "the game ended first");
        if texts.is_empty() {
            continue;
        }
        if texts.iter().any(|t| t.starts_with("with:") || t == "withdraw") {
            // Answered: the offer's answers are in; undo is refused.
            let (status, body) = Call::new("POST", &format!("/api/matches/{}/undo", m.id))
                .token(me)
                .json(json!({ "ply": ply }))
                .go(&app)
                .await;
            assert_eq!(status, StatusCode::CONFLICT, "{body}");
            assert!(body["error"].as_str().unwrap().contains("answers"), "{body}");
            return;
        }
        // An offer when there is one (everybody may decline it: then wait for one somebody takes).
        let offer = texts.iter().find(|t| t.starts_with("offer:"));
        play_as(&app, &m.id, me, ply, offer.map_or_else(|| quickest(&texts), String::as_str)).await;
    }
}

/// 11. Fair shares of the analysts: a person's hint does not wait behind a stranger's long
/// analyses.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_persons_hint_does_not_wait_behind_a_strangers_analyses() {
    let app = app_with(meeple_web::Config { analysts: 1, ..meeple_web::Config::default() });
    let (_, theirs) = Call::new("POST", "/api/matches")
        .from("10.0.0.2")
        .json(json!({ "game": "connect4", "seats": ["human", "random"] }))
        .go(&app)
        .await;
    let mut asked = Vec::new();
    for _ in 0..2 {
        let (app, id, t) = (
            app.clone(),
            theirs["id"].as_str().unwrap().to_string(),
            theirs["seats"][0]["token"].as_str().unwrap().to_string(),
        );
        asked.push(tokio::spawn(async move {
            Call::new("POST", &format!("/api/matches/{id}/analysis"))
                .from("10.0.0.2")
                .token(&t)
                .json(json!({ "agent": "mcts", "time_ms": 8000 }))
                .go(&app)
                .await
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, mine) = Call::new("POST", "/api/matches")
        .from("10.0.0.1")
        .json(json!({ "game": "connect4", "seats": ["human", "random"] }))
        .go(&app)
        .await;
    let start = Instant::now();
    let (status, hint) = Call::new("POST", &format!("/api/matches/{}/analysis", mine["id"].as_str().unwrap()))
        .from("10.0.0.1")
        .token(mine["seats"][0]["token"].as_str().unwrap())
        .json(json!({ "agent": "mcts:iters=100", "time_ms": 1000 }))
        .go(&app)
        .await;
    assert_eq!(status, StatusCode::OK, "{hint}");
    assert!(start.elapsed() < Duration::from_millis(2500), "the hint took {:?}", start.elapsed());
    for a in asked {
        a.abort();
    }
}

/// 12. One client's share of the memory budget: a client that holds many matches is refused
/// its next one (429) while others can still play.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_cannot_reserve_the_whole_memory_budget() {
    let app = app_with(meeple_web::Config {
        memory_budget: 300 << 20,
        max_agent_memory: 64 << 20,
        ..meeple_web::Config::default()
    });
    let mut made = 0;
    let refused = loop {
        let (status, body) = Call::new("POST", "/api/matches")
            .from("10.0.0.2")
            .json(json!({ "game": "connect4", "seats": ["human", "mcts:iters=100"] }))
            .go(&app)
            .await;
        if status != StatusCode::CREATED {
            break (status, body);
        }
        made += 1;
        assert!(made < 10, "never refused");
    };
    assert_eq!(refused.0, StatusCode::TOO_MANY_REQUESTS, "{}", refused.1);
    assert!(refused.1["error"].as_str().unwrap().contains("share"), "{}", refused.1);
    let (status, body) = Call::new("POST", "/api/matches")
        .from("10.0.0.3")
        .json(json!({ "game": "connect4", "seats": ["human", "mcts:iters=100"] }))
        .go(&app)
        .await;
    assert_eq!(status, StatusCode::CREATED, "another client still plays: {body}");
}

/// Creates connect4 matches from `ip` until refused: how many it got, and the refusal.
async fn fill_from(app: &Router, ip: &str) -> (usize, StatusCode, Value) {
    let mut made = 0;
    loop {
        let (status, body) = Call::new("POST", "/api/matches")
            .from(ip)
            .json(json!({ "game": "connect4", "seats": ["human", "mcts:iters=100"] }))
            .go(app)
            .await;
        if status != StatusCode::CREATED {
            return (made, status, body);
        }
        made += 1;
        assert!(made < 200, "never refused");
    }
}

/// Four addresses of network `net` (10.net.k.1) take all the matches they may; then a fifth
/// asks for one: what each of the four got, and the fifth's answer.
async fn newcomer_after_four(app: &Router, net: u8) -> (Vec<usize>, StatusCode, Value) {
    let mut took = Vec::new();
    for k in 1..=4 {
        took.push(fill_from(app, &format!("10.{net}.{k}.1")).await.0);
    }
    let (status, body) = Call::new("POST", "/api/matches")
        .from(&format!("10.{net}.9.1"))
        .json(json!({ "game": "connect4", "seats": ["human", "mcts:iters=100"] }))
        .go(app)
        .await;
    (took, status, body)
}

/// Shares shrink as the server fills: a few addresses cannot take all its matches, its memory
/// or its spectators' streams; a newcomer still gets one of each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_few_addresses_cannot_fill_the_server() {
    // Matches: 20 places, 16 a client.
    let app = app_with(meeple_web::Config { max_matches: 20, ..meeple_web::Config::default() });
    let (took, status, body) = newcomer_after_four(&app, 0).await;
    assert_eq!(status, StatusCode::CREATED, "after four addresses took {took:?} of 20 matches: {body}");
    // Memory: 1 GiB, a quarter a client.
    let app = app_with(meeple_web::Config {
        memory_budget: 1 << 30,
        max_agent_memory: 64 << 20,
        ..meeple_web::Config::default()
    });
    let (took, status, body) = newcomer_after_four(&app, 1).await;
    assert_eq!(status, StatusCode::CREATED, "after four addresses took {took:?} matches of the memory: {body}");
    // Spectators' streams: 40 in all, 24 a client.
    let app = app_with(meeple_web::Config { max_streams: 40, max_spectators: 100, ..meeple_web::Config::default() });
    let m = create(&app, json!({ "game": "connect4", "seats": ["random", "random"], "move_time_ms": 50 })).await;
    let mut held = Vec::new();
    let mut took = Vec::new();
    for k in 1..=3 {
        let them = app.clone().layer(axum::Extension(meeple_web::Peer(format!("10.2.{k}.1").parse().unwrap())));
        let mut n = 0;
        loop {
            let res = them.clone().oneshot(stream_request(&m.id, "spectator", None)).await.unwrap();
            if res.status() != StatusCode::OK {
                break;
            }
            held.push(res);
            n += 1;
        }
        took.push(n);
    }
    let newcomer = app.clone().layer(axum::Extension(meeple_web::Peer("10.2.9.1".parse().unwrap())));
    let res = newcomer.oneshot(stream_request(&m.id, "spectator", None)).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK, "after three addresses took {took:?} of 40 streams");
}

fn stream_request(id: &str, viewer: &str, token: Option<&str>) -> Request<Body> {
    let mut r = Request::builder()
        .method("GET")
        .uri(format!("/api/matches/{id}/events?viewer={viewer}"))
        .header("host", "localhost:8080");
    if let Some(t) = token {
        r = r.header(meeple_web::TOKEN_HEADER, t);
    }
    r.body(Body::empty()).unwrap()
}

/// 13. A match's own seats always get an event stream, however many a stranger holds on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranger_cannot_take_a_matchs_event_streams() {
    let app = app();
    let (_, made) = Call::new("POST", "/api/matches")
        .from("10.0.0.1")
        .json(json!({ "game": "connect4", "seats": ["human", "random"] }))
        .go(&app)
        .await;
    let (id, me) = (made["id"].as_str().unwrap(), made["seats"][0]["token"].as_str().unwrap());
    let stranger = app.clone().layer(axum::Extension(meeple_web::Peer("10.0.0.9".parse().unwrap())));
    let mut held = Vec::new();
    for _ in 0..20 {
        let res = stranger.clone().oneshot(stream_request(id, "spectator", None)).await.unwrap();
        if res.status() == StatusCode::OK {
            held.push(res);
        }
    }
    assert!(held.len() < 20, "a stranger took {} streams of one match", held.len());
    let person = app.clone().layer(axum::Extension(meeple_web::Peer("10.0.0.1".parse().unwrap())));
    let res = person.oneshot(stream_request(id, "0", Some(me))).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK, "the seat's own stream");
}

/// A leaked seat token, replaced by its player: the thief's open streams of that seat end, its
/// unused tickets open nothing, and the player's own streams are let in again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_token_ends_its_streams_and_voids_its_tickets() {
    let app = app();
    let (_, made) = Call::new("POST", "/api/matches")
        .from("10.0.0.1")
        .json(json!({ "game": "sagrada", "seats": ["human", "random"] }))
        .go(&app)
        .await;
    let (id, leaked) = (made["id"].as_str().unwrap().to_string(), made["seats"][0]["token"].as_str().unwrap());
    let thief = app.clone().layer(axum::Extension(meeple_web::Peer("10.0.0.9".parse().unwrap())));
    let mut held = Vec::new();
    loop {
        let res = thief.clone().oneshot(stream_request(&id, "0", Some(leaked))).await.unwrap();
        if res.status() != StatusCode::OK {
            break;
        }
        held.push(res.into_body());
    }
    assert!(!held.is_empty());
    let ticket_path = format!("/api/matches/{id}/ticket");
    let (status, ticket) =
        Call::new("POST", &ticket_path).from("10.0.0.9").token(leaked).json(json!({})).go(&app).await;
    assert_eq!(status, StatusCode::OK, "{ticket}");
    let (status, rotated) =
        Call::new("POST", &format!("/api/matches/{id}/token")).token(leaked).json(json!({})).go(&app).await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    let fresh = rotated["token"].as_str().unwrap();
    for body in &mut held {
        // The first event was the state when it opened; after it, the stream must end.
        let ended = tokio::time::timeout(Duration::from_secs(5), async {
            while let Some(frame) = body.frame().await {
                frame.unwrap();
            }
        })
        .await;
        assert!(ended.is_ok(), "a stream opened with the replaced token is still open");
    }
    let uri = format!("/api/matches/{id}/events?viewer=0&ticket={}", ticket["ticket"].as_str().unwrap());
    let req = Request::builder().uri(uri).header("host", "localhost:8080").body(Body::empty()).unwrap();
    let res = thief.clone().oneshot(req).await.unwrap();
    assert_eq!(res.status(), StatusCode::FORBIDDEN, "a ticket of the replaced token opens nothing");
    let player = app.clone().layer(axum::Extension(meeple_web::Peer("10.0.0.1".parse().unwrap())));
    for _ in 0..held.len() {
        let res = player.clone().oneshot(stream_request(&id, "0", Some(fresh))).await.unwrap();
        assert_eq!(res.status(), StatusCode::OK, "the player's own streams are let in");
    }
}

/// 14. Clients by address: every loopback address is one client, and so is an IPv6 /64; a
/// client's share of matches holds across them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_addresses_of_one_machine_or_one_network_are_one_client() {
    let app = app_with(meeple_web::Config { max_matches_per_client: 2, ..meeple_web::Config::default() });
    let new = |from: &'static str| {
        let app = app.clone();
        async move {
            Call::new("POST", "/api/matches")
                .from(from)
                .json(json!({ "game": "connect4", "seats": ["human", "random"] }))
                .go(&app)
                .await
                .0
        }
    };
    for (first, second, third, elsewhere) in [
        ("127.0.0.2", "::1", "::ffff:127.0.0.5", "192.0.2.7"),
        ("2001:db8::1", "2001:db8::2", "2001:db8::ffff:1", "2001:db8:0:1::1"),
        ("192.0.2.1", "::ffff:192.0.2.1", "192.0.2.1", "192.0.2.2"),
    ] {
        assert_eq!(new(first).await, StatusCode::CREATED);
        assert_eq!(new(second).await, StatusCode::CREATED);
        assert_eq!(new(third).await, StatusCode::TOO_MANY_REQUESTS, "{third} after {first} and {second}");
        assert_eq!(new(elsewhere).await, StatusCode::CREATED, "{elsewhere} is another client");
    }
}

/// 15. Budgets before bytes: an upload reserves its memory before its body is read, so held
/// uploads are refused at once once a client's share is taken, never read into memory first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_reserve_their_memory_before_their_bodies_are_read() {
    let app = app_with(meeple_web::Config { memory_budget: 256 << 20, ..meeple_web::Config::default() })
        .layer(axum::Extension(meeple_web::Peer("10.0.0.2".parse().unwrap())));
    let mut held = Vec::new();
    let mut answers = Vec::new();
    for _ in 0..8 {
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<axum::body::Bytes, std::io::Error>>(1);
        tx.send(Ok("{\"game\":\"tictactoe\",".into())).await.unwrap();
        let req = Request::builder()
            .method("POST")
            .uri("/api/replays?index=0")
            .header("host", "localhost")
            .header("content-type", "application/x-ndjson")
            .header("content-length", (16 << 20).to_string())
            .body(Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx)))
            .unwrap();
        answers.push(tokio::spawn(app.clone().oneshot(req)));
        held.push(tx);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, status) = Call::new("GET", "/api/status").go(&app).await;
    assert!(status["memory_reserved"].as_u64().unwrap() >= 16 << 20, "the held uploads reserve nothing: {status}");
    let refused = answers.iter().filter(|a| a.is_finished()).count();
    assert!(refused >= 4, "only {refused} of 8 held uploads were refused before they were read");
    drop(held);
}

/// 15b. A record is refused by counting its plies before it is read: one line of two million
/// plies (12 MB, within the upload limit) became two million strings once parsed, about 60 MB
/// per upload beyond what the upload reserved; eight at once took the server to 469 MiB of
/// resident memory under a 200 MiB budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_longer_than_the_server_replays_is_refused_before_it_is_read() {
    let app = app_with(meeple_web::Config { max_plies: 1000, ..meeple_web::Config::default() });
    let long = json!({ "game": "tictactoe", "seed": 0, "agents": ["a", "b"], "actions": vec!["a1"; 200_000] });
    let started = Instant::now();
    let (status, body) =
        Call::new("POST", "/api/replays?index=0").raw(format!("{long}\n"), "application/x-ndjson").go(&app).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    // Counted as it arrived, not read: a read record would have been refused by the replay,
    // with its exact length ("the game has 200000 plies").
    let error = body["error"].as_str().unwrap();
    assert!(error.contains("more than") && error.contains("at most 1000") && !error.contains("the game has"), "{body}");
    assert!(started.elapsed() < Duration::from_secs(5));
    // A record within the limit is read as before.
    let short =
        json!({ "game": "tictactoe", "seed": 0, "agents": ["a", "b"], "actions": ["a1", "b1", "a2", "b2", "a3"] });
    let (status, body) =
        Call::new("POST", "/api/replays?index=0").raw(format!("{short}\n"), "application/x-ndjson").go(&app).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

/// 16. The list of past games is not read on the store's writer: many clients asking for it
/// at once do not hold up anyone's moves.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_list_of_past_games_does_not_hold_up_moves() {
    let dir = temp_dir("list");
    drop(app_with(stored(&dir)));
    tokio::time::sleep(Duration::from_millis(100)).await;
    {
        // 300 long finished games, as a busy server keeps them.
        let mut db = rusqlite::Connection::open(dir.join(meeple_web::store::FILE)).unwrap();
        let tx = db.transaction().unwrap();
        let actions: Vec<&str> = std::iter::repeat_n("a1", 20_000).collect();
        for k in 0..300 {
            let record = json!({ "game": "tictactoe", "seed": k, "agents": ["a", "b"], "actions": actions, "returns": [1.0, -1.0], "scores": [1.0, 0.0] });
            tx.execute(
                "INSERT INTO matches (id, game, setup, status, created, updated, record) VALUES (?1, 'tictactoe', '{}', 'over', ?2, ?2, ?3)",
                rusqlite::params![format!("{k:032x}"), k, record.to_string()],
            )
            .unwrap();
        }
        tx.commit().unwrap();
    }
    let app = app_with(stored(&dir));
    let m = create(&app, json!({ "game": "connect4", "seats": ["human", "first"], "move_time_ms": 20 })).await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut readers = Vec::new();
    for _ in 0..8 {
        let (app, stop) = (app.clone(), stop.clone());
        readers.push(tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                Call::new("GET", "/api/games").go(&app).await;
                // An in-process call to a cached page can finish without ever waiting: yield,
                // or eight such loops hold both worker threads and the move never runs (a real
                // client's socket always waits).
                tokio::task::yield_now().await;
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut worst = Duration::ZERO;
    for (k, column) in ["7", "6", "5"].iter().enumerate() {
        worst = worst.max(answer_time(&app, &m.id, &m.tokens[0], 2 * k as u64, column).await);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for r in readers {
        r.await.unwrap();
    }
    assert!(worst < Duration::from_millis(300), "a move took {worst:?} beside the lists");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// 17. Tokens stay out of addresses (a proxy logs them): no route takes `?token=`; an event
/// stream is opened with a short-lived ticket that works once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_route_takes_a_token_in_its_address() {
    let app = app();
    let m = create(&app, json!({ "game": "connect4", "seats": ["human", "random"] })).await;
    let me = &m.tokens[0];
    for path in
        [format!("/api/matches/{}?token={me}", m.id), format!("/api/matches/{}/events?viewer=0&token={me}", m.id)]
    {
        let (status, body) = Call::new("GET", &path).go(&app).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
        assert!(body["error"].as_str().unwrap().contains("X-Meeple-Token"), "{body}");
    }
    let (status, ticket) =
        Call::new("POST", &format!("/api/matches/{}/ticket", m.id)).token(me).json(json!({})).go(&app).await;
    assert_eq!(status, StatusCode::OK, "{ticket}");
    let ticket = ticket["ticket"].as_str().unwrap().to_string();
    assert_ne!(&ticket, me);
    let open = |t: String| {
        let (app, id) = (app.clone(), m.id.clone());
        async move {
            let req = Request::builder()
                .method("GET")
                .uri(format!("/api/matches/{id}/events?ticket={t}"))
                .header("host", "localhost")
                .body(Body::empty())
                .unwrap();
            app.oneshot(req).await.unwrap()
        }
    };
    let first = open(ticket.clone()).await;
    assert_eq!(first.status(), StatusCode::OK);
    assert_eq!(open(ticket).await.status(), StatusCode::FORBIDDEN, "a ticket works once");
    // A client holds at most 16 unused tickets; a new one voids its oldest rather than being
    // refused, so a local process hoarding tickets cannot keep the person's page on the same
    // machine from its streams.
    let path = format!("/api/matches/{}/ticket", m.id);
    let mut tickets = Vec::new();
    for _ in 0..17 {
        let (status, t) = Call::new("POST", &path).from("10.0.0.5").token(me).json(json!({})).go(&app).await;
        assert_eq!(status, StatusCode::OK, "{t}");
        tickets.push(t["ticket"].as_str().unwrap().to_string());
    }
    assert_eq!(open(tickets[0].clone()).await.status(), StatusCode::FORBIDDEN, "the oldest made way");
    assert_eq!(open(tickets[1].clone()).await.status(), StatusCode::OK, "the others still open streams");
    assert_eq!(open(tickets[16].clone()).await.status(), StatusCode::OK);
}

/// Makes `dir` and what it holds unwritable, even for root (the immutable flag); false where
/// this machine cannot.
fn make_read_only(dir: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let _ = std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444));
        let _ = std::process::Command::new("chattr").arg("+i").arg(&p).status();
    }
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555));
    let _ = std::process::Command::new("chattr").arg("+i").arg(dir).status();
    std::fs::write(dir.join("probe"), "x").is_err()
}

fn make_writable(dir: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::process::Command::new("chattr").arg("-i").arg(dir).status();
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755));
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let _ = std::process::Command::new("chattr").arg("-i").arg(&p).status();
        let _ = std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644));
    }
}

/// 18. A store that tells what is wrong: a damaged database names its file and what to do; a
/// data directory that cannot be written is refused at start; rows that cannot be resumed are
/// pruned; a finished game's page still works after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_says_what_is_wrong_and_keeps_what_it_can() {
    let dir = temp_dir("disk");
    let app = app_with(stored(&dir));
    let done = create(&app, json!({ "game": "tictactoe", "seats": ["first", "first"], "delay_ms": 0 })).await;
    let watch = |app: Router| {
        let id = done.id.clone();
        async move {
            let start = Instant::now();
            loop {
                let (status, snap) = Call::new("GET", &format!("/api/matches/{id}")).go(&app).await;
                if status == StatusCode::OK && snap["result"].is_object() {
                    return snap;
                }
                assert!(start.elapsed() < Duration::from_secs(20), "{status} {snap}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    };
    let before = watch(app.clone()).await;
    drop(app);
    tokio::time::sleep(Duration::from_millis(100)).await;
    {
        let db = rusqlite::Connection::open(dir.join(meeple_web::store::FILE)).unwrap();
        db.execute(
            "INSERT INTO matches (id, game, setup, status, created, updated) VALUES ('broken1', 'connect4', 'not json', 'live', strftime('%s','now'), strftime('%s','now'))",
            [],
        )
        .unwrap();
        db.execute(
            "INSERT INTO matches (id, game, setup, status, created, updated) VALUES ('broken2', 'chess', '{}', 'live', strftime('%s','now'), strftime('%s','now'))",
            [],
        )
        .unwrap();
    }
    // After a restart the finished game's page is its replay; rows that cannot be resumed go.
    let app = app_with(stored(&dir));
    let after = watch(app.clone()).await;
    let moves = |s: &Value| s["log"].as_array().unwrap().iter().map(|l| l["text"].clone()).collect::<Vec<_>>();
    assert_eq!(
        (moves(&after), &after["result"], &after["status"]),
        (moves(&before), &before["result"], &json!("over"))
    );
    drop(app);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let db = rusqlite::Connection::open(dir.join(meeple_web::store::FILE)).unwrap();
    let left: i64 =
        db.query_row("SELECT count(*) FROM matches WHERE id IN ('broken1', 'broken2')", [], |r| r.get(0)).unwrap();
    assert_eq!(left, 0, "rows that cannot be resumed are pruned");
    drop(db);
    // A damaged file: the error names it and what to do.
    let file = dir.join(meeple_web::store::FILE);
    let mut bytes = std::fs::read(&file).unwrap();
    for b in bytes.iter_mut().skip(4096).take(4096) {
        *b = 0xA5;
    }
    std::fs::write(&file, &bytes).unwrap();
    let Err(error) = meeple_web::build(stored(&dir)) else { panic!("a damaged store is refused") };
    assert!(error.contains(&file.display().to_string()), "{error}");
    assert!(error.contains("damaged") && error.contains("move"), "{error}");
    std::fs::remove_dir_all(&dir).unwrap();
    // A data directory that cannot be written is refused at start, not at the first game.
    let dir = temp_dir("read-only");
    drop(app_with(stored(&dir)));
    tokio::time::sleep(Duration::from_millis(100)).await;
    if make_read_only(&dir) {
        let refused = meeple_web::build(stored(&dir)).err();
        make_writable(&dir);
        let error = refused.expect("a read-only data directory is refused");
        assert!(error.contains("cannot be written") && error.contains(&dir.display().to_string()), "{error}");
    } else {
        make_writable(&dir);
        eprintln!("this machine cannot make a directory read-only for this user: that check did not run");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// 19. Streams and matches do not live for ever: a stream ends after its time (the page opens
/// another) and once its game is over; a match nobody asks about leaves memory, stays in the
/// store, and comes back when someone asks for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_streams_and_idle_matches_time_out() {
    let dir = temp_dir("idle");
    let app = app_with(meeple_web::Config { stream_life: Duration::from_millis(300), ..stored(&dir) });
    let m = create(&app, json!({ "game": "connect4", "seats": ["human", "random"] })).await;
    let res = app.clone().oneshot(stream_request(&m.id, "spectator", None)).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let start = Instant::now();
    let ended = tokio::time::timeout(Duration::from_secs(5), res.into_body().collect()).await;
    assert!(ended.is_ok(), "the stream did not end");
    assert!(start.elapsed() >= Duration::from_millis(250), "ended early: {:?}", start.elapsed());
    // A finished game's stream ends after its last state.
    let done = create(&app, json!({ "game": "tictactoe", "seats": ["first", "first"], "delay_ms": 0 })).await;
    let res = app.clone().oneshot(stream_request(&done.id, "spectator", None)).await.unwrap();
    let body = tokio::time::timeout(Duration::from_secs(5), res.into_body().collect()).await.expect("ended");
    let text = String::from_utf8_lossy(&body.unwrap().to_bytes()).to_string();
    assert!(text.contains("\"result\":{"), "{text}");
    // Idle: dropped from memory, back on the next request, same game.
    let before = snapshot_of(&app, &m.id, &m.tokens[0]).await;
    drop(app);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let app = app_with(meeple_web::Config {
        idle: Duration::from_millis(300),
        sweep_every: Duration::from_millis(100),
        ..stored(&dir)
    });
    assert_eq!(snapshot_of(&app, &m.id, &m.tokens[0]).await["ply"], before["ply"]);
    tokio::time::sleep(Duration::from_millis(800)).await;
    let (_, status) = Call::new("GET", "/api/status").go(&app).await;
    assert_eq!(status["matches"], 0, "idle matches leave memory: {status}");
    let after = snapshot_of(&app, &m.id, &m.tokens[0]).await;
    assert_eq!((&after["ply"], &after["view"]), (&before["ply"], &before["view"]));
    let (_, status) = Call::new("GET", "/api/status").go(&app).await;
    assert_eq!(status["matches"], 1, "{status}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Whether the server has closed `s` (an end of stream or a reset; silence is open).
async fn closed(s: &mut tokio::net::TcpStream) -> bool {
    let mut buf = [0u8; 1];
    !matches!(tokio::time::timeout(Duration::from_millis(50), s.read(&mut buf)).await, Err(_) | Ok(Ok(1..)))
}

async fn connect_from(source: &str, addr: std::net::SocketAddr) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
    socket.connect(addr).await.unwrap()
}

/// 20. Connections: one client (any of this machine's addresses) holds its share of them, not
/// the whole limit; a trusted proxy's connections carry other clients and are not capped so.
/// At its share, a client's longest idle connection makes way for its newest: a local process
/// holding idle sockets cannot cut off the person's browser on the same machine (37 of 39 of its
/// requests failed), while connections busy answering requests are never closed so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_cannot_hold_every_connection() {
    let config = meeple_web::Config {
        max_connections: 64,
        max_connections_per_client: 4,
        header_timeout: Duration::from_secs(5),
        clients: meeple_web::Grouping {
            header: Some("x-forwarded-for".into()),
            trusted: vec!["127.0.0.1".parse().unwrap()],
            ..meeple_web::Grouping::default()
        },
        ..meeple_web::Config::default()
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(meeple_web::serve("127.0.0.1", 0, config, move |a| {
        let _ = tx.send(a);
    }));
    let addr = rx.await.unwrap();
    let mut idle = Vec::new();
    for k in 0..12 {
        idle.push(connect_from(&format!("127.0.0.{}", 2 + k % 6), addr).await);
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut open = 0;
    for s in &mut idle {
        open += usize::from(!closed(s).await);
    }
    assert_eq!(open, 4, "this machine's addresses share one client's 4 connections");
    // The person's browser on this machine, beside those idle sockets: its request is answered.
    let ask = |source: &'static str, extra: &'static str| async move {
        let mut s = connect_from(source, addr).await;
        s.write_all(
            format!("GET /api/catalog HTTP/1.1\r\nHost: localhost\r\n{extra}Connection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
        let mut out = String::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_string(&mut out)).await;
        out
    };
    for _ in 0..3 {
        let out = ask("127.0.0.3", "").await;
        assert!(out.starts_with("HTTP/1.1 200"), "beside idle sockets: {}", &out[..out.len().min(200)]);
    }
    // Through the proxy, another client still gets in.
    let out = ask("127.0.0.1", "X-Forwarded-For: 198.51.100.7\r\n").await;
    assert!(out.starts_with("HTTP/1.1 200"), "{}", &out[..out.len().min(200)]);
    // Four connections busy answering (bodies that have not all arrived) are not closed for a
    // newcomer: it is refused instead.
    drop(idle);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut busy = Vec::new();
    for _ in 0..4 {
        let mut s = connect_from("127.0.0.4", addr).await;
        s.write_all(b"POST /api/matches HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
            .await
            .unwrap();
        busy.push(s);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let out = ask("127.0.0.5", "").await;
    assert!(out.is_empty(), "a fifth connection beside four busy ones is refused: {}", &out[..out.len().min(200)]);
    for s in &mut busy {
        assert!(!closed(s).await, "busy connections are kept");
    }
}

/// 21. Retention: the store keeps at most `keep_games` finished games, none older than
/// `keep_days`, and prunes the rest (the oldest first), so its file cannot grow without end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_keeps_finished_games_within_its_retention_settings() {
    let dir = temp_dir("retention");
    let config = || meeple_web::Config { keep_games: 2, keep_days: Some(30), ..stored(&dir) };
    let app = app_with(config());
    let mut ids = Vec::new();
    for _ in 0..3 {
        let m = create(&app, json!({ "game": "tictactoe", "seats": ["first", "first"], "delay_ms": 0 })).await;
        let start = Instant::now();
        loop {
            let (_, snap) = Call::new("GET", &format!("/api/matches/{}", m.id)).go(&app).await;
            if snap["result"].is_object() {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(20));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        ids.push(m.id);
        // Finished at different seconds, so "oldest" is well defined.
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
    let (_, games) = Call::new("GET", "/api/games").go(&app).await;
    let kept: Vec<&str> = games["games"].as_array().unwrap().iter().map(|g| g["id"].as_str().unwrap()).collect();
    assert_eq!(kept, vec![ids[2].as_str(), ids[1].as_str()], "the two newest are kept: {games}");
    drop(app);
    tokio::time::sleep(Duration::from_millis(100)).await;
    {
        let db = rusqlite::Connection::open(dir.join(meeple_web::store::FILE)).unwrap();
        db.execute("UPDATE summaries SET finished = finished - 31 * 86400 WHERE id = ?1", [&ids[1]]).unwrap();
    }
    let app = app_with(config());
    let (_, games) = Call::new("GET", "/api/games").go(&app).await;
    let kept: Vec<&str> = games["games"].as_array().unwrap().iter().map(|g| g["id"].as_str().unwrap()).collect();
    assert_eq!(kept, vec![ids[2].as_str()], "a game older than 30 days is pruned at start: {games}");
    let (status, _) = Call::new("GET", &format!("/api/games/{}/record", ids[1])).go(&app).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    std::fs::remove_dir_all(&dir).unwrap();
}
