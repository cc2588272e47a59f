//! Trading at a table with people: offers answered in time, only offers a person could take,
//! and no undo past an answer.

use super::*;

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
