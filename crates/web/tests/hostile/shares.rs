//! Shares: memory, threads, analyses, connections and addresses, so that no client blocks
//! another or takes more than its share.

use super::*;

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
