//! What is stored: games across a restart, a store that cannot write, the list of past games
//! and retention.

use super::*;

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
