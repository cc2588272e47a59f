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

mod secrets;
mod shares;
mod store;
mod trading;

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

async fn raw_get(addr: std::net::SocketAddr, path: &str) -> std::io::Result<String> {
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes()).await?;
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_string(&mut out)).await.map_err(std::io::Error::other)??;
    Ok(out)
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
