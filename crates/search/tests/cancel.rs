//! A decision told to stop from outside answers at once with a legal move, whatever its time.

use meeple_game::{Budget, CancelHandle, Game, State};
use std::time::{Duration, Instant};

#[test]
fn every_search_stops_when_cancelled() {
    let game = meeple_games::connect4::Connect4::default();
    let state = game.initial_state();
    for spec in
        ["mcts:time=20s", "mcts:time=20s,threads=2", "ismcts:time=20s", "alphabeta:time=20s", "mcts:iters=100000000"]
    {
        let mut agent = meeple_search::make_agent(&game, spec, 1).unwrap();
        let handle = CancelHandle::new().expect("a free cancel flag");
        let budget = Budget { cancel: Some(handle.token()), ..Budget::UNLIMITED };
        let start = Instant::now();
        let action = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(150));
                handle.cancel();
            });
            agent.act(&state, &budget).unwrap()
        });
        let took = start.elapsed();
        assert!(took < Duration::from_secs(3), "{spec}: took {took:?}");
        assert!(took >= Duration::from_millis(140), "{spec}: stopped before it was told to: {took:?}");
        assert!(state.is_legal(action), "{spec}");
    }
    // A freed flag starts clear for the next decision.
    let again = CancelHandle::new().unwrap();
    assert!(!again.token().is_set());
}
