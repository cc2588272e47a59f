//! Secrets and seats: the seed, files named by a client, cross-site pages, tokens, invitations
//! and event streams.

use super::*;

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
