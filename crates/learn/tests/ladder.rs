//! The training ladder: a gauntlet rated against fixed ratings, and the opponent given the
//! evaluated agent's own time a move.

use meeple_game::Game;
use meeple_games::TicTacToe;
use meeple_learn::ladder::{Ladder, LadderConfig, equal_time_label, with_time};
use std::path::Path;
use std::time::Duration;

fn dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("meeple-ladder-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn the_equal_time_opponent_gets_the_agents_mean_time_and_stays_off_the_elo_scale() {
    let d = dir("equal");
    // The "checkpoint" fills the template: here an iteration count, so no network is needed.
    let mut c = LadderConfig::new(&TicTacToe, "mcts:iters={model}", 1, 7);
    c.opponents = vec!["random".into(), "mcts:iters=20".into()];
    c.games = 4;
    let mut ladder = Ladder::new(&TicTacToe, c.clone(), &d).unwrap();
    let e = ladder.evaluate(Path::new("200"), 1);
    assert_eq!(e.error, None);
    assert_eq!(e.opponents.len(), 3, "{e:?}");
    let names: Vec<&str> = e.opponents.iter().map(|r| r.opponent.as_str()).collect();
    assert_eq!(names, ["random", "mcts:iters=20", "mcts at equal time"]);
    let timed = &e.opponents[2];
    let spec = timed.spec.as_deref().unwrap();
    assert!(spec.starts_with("mcts:time=") && spec.ends_with("us"), "{spec}");
    // The time it got is the agent's mean over the gauntlet's moves.
    let (mut t, mut n) = (0.0, 0.0);
    for r in &e.opponents[..2] {
        let k = (r.wins + r.draws + r.losses) as f64;
        t += r.agent_ms * k;
        n += k;
    }
    let us: f64 = spec["mcts:time=".len()..spec.len() - 2].parse().unwrap();
    assert!((us - (t / n * 1e3).max(1.0)).abs() <= 1.0, "{us} us against a mean of {} ms", t / n);
    assert_eq!(timed.wins + timed.draws + timed.losses, 4);
    // Rated against the two fixed opponents only.
    assert_eq!(e.ladder.as_ref().map(Vec::len), Some(2));
    assert!(e.elo.is_some());
    // Without one, the evaluation has the fixed opponents alone.
    c.equal_time = None;
    let mut plain = Ladder::new(&TicTacToe, c, &d).unwrap();
    assert_eq!(plain.evaluate(Path::new("200"), 1).opponents.len(), 2);
}

#[test]
fn equal_time_specs_are_checked_before_training() {
    assert_eq!(with_time("mcts", Duration::from_micros(1500)).unwrap(), "mcts:time=1500us");
    assert_eq!(with_time("mcts:iters=9", Duration::ZERO).unwrap(), "mcts:iters=9,time=1us");
    assert_eq!(
        with_time("alphabeta:eval=(net:model=a.safetensors,x=1)", Duration::from_millis(2)).unwrap(),
        "alphabeta:eval=(net:model=a.safetensors,x=1),time=2000us"
    );
    assert!(with_time("mcts:time=1s", Duration::from_millis(1)).unwrap_err().to_string().contains("without time="));
    assert_eq!(equal_time_label("mcts"), "mcts at equal time");
    let d = dir("bad");
    for bad in ["nosuchagent", "mcts:time=5ms", "mcts:bogus=1"] {
        let mut c = LadderConfig::new(&TicTacToe, "mcts:iters={model}", 1, 7);
        c.equal_time = Some(bad.into());
        let err = Ladder::new(&TicTacToe, c, &d).err().expect(bad).to_string();
        assert!(err.contains(bad) || err.contains("time="), "{bad}: {err}");
    }
}

/// With more than two players each opponent gets its own match, the agent against a table of it
/// (an evaluation of a four-player run once failed asking for four specs): the scores are the
/// agent's share of the games, and there is no Elo, which these ratings define for two players.
#[test]
fn a_four_player_ladder_plays_the_agent_against_a_table_of_each_opponent() {
    let game = meeple_games::Catan::from_spec(&"catan".parse().unwrap()).unwrap();
    let d = dir("four");
    let mut c = LadderConfig::new(&game, "{model}", 1, 3);
    c.opponents = vec!["random".into(), "catan-value".into()];
    assert_eq!(c.games, 24, "a multiple of the 24 seatings");
    c.equal_time = Some("alphabeta:depth=1,eval=catan-value".into());
    let mut ladder = Ladder::new(&game, c, &d).unwrap();
    let e = ladder.evaluate(Path::new("catan-value"), 1);
    assert_eq!(e.error, None, "{e:?}");
    let names: Vec<&str> = e.opponents.iter().map(|r| r.opponent.as_str()).collect();
    assert_eq!(names, ["random", "catan-value", "alphabeta:depth=1,eval=catan-value at equal time"]);
    for r in &e.opponents {
        assert_eq!(r.wins + r.draws + r.losses, 24, "{r:?}");
        assert!(r.ci[0] <= r.score && r.score <= r.ci[1], "{r:?}");
    }
    // The evaluator's player beats three random ones nearly always; against three copies of
    // itself it holds about an equal seat (1/4), far from that.
    assert!(e.opponents[0].score > 0.8, "{:?}", e.opponents[0]);
    assert!(e.opponents[1].score < 0.6, "{:?}", e.opponents[1]);
    assert!(e.opponents[2].spec.as_deref().is_some_and(|s| s.contains("time=")));
    assert_eq!(e.elo, None);
    assert_eq!(e.ladder, None);
}
