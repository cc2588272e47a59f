//! Every search keeps its time, however it is nested and however extreme its options: the
//! deadline of a search reaches the agents it uses inside, endless times saturate, and many
//! worlds share the clock instead of overrunning it.

use meeple_game::{Budget, Game, State, Turn, rng_from_seed};
use meeple_games::{Connect4, Sagrada, Santorini};
use meeple_search::make_agent;
use std::time::{Duration, Instant};

fn three_players() -> Sagrada {
    Sagrada::from_spec(&"sagrada:players=3".parse().unwrap()).unwrap()
}

/// A Sagrada position mid-game (setup and some turns played at random), three players.
fn sagrada_midgame() -> <Sagrada as Game>::State {
    let mut s = three_players().initial_state();
    let mut rng = rng_from_seed(4);
    let (mut legal, mut outcomes) = (Vec::new(), Vec::new());
    let mut plies = 0;
    while plies < 30 || s.current_player().is_none() {
        match s.turn() {
            Turn::Terminal => break,
            Turn::Chance => {
                s.apply_unchecked(meeple_game::draw_chance(&s, &mut outcomes, &mut rng));
            }
            Turn::Player(_) => {
                plies += 1;
                s.apply_unchecked(s.random_action(&mut rng, &mut legal));
            }
        }
    }
    s
}

/// How long `spec` takes for one move in `state` (a legal one).
fn time_move<S: State>(agent: &mut meeple_game::BoxedAgent<S>, state: &S) -> Duration {
    let start = Instant::now();
    let a = agent.act(state, &Budget::UNLIMITED).unwrap();
    assert!(state.is_legal(a));
    start.elapsed()
}

#[test]
fn a_playout_agent_keeps_its_callers_time() {
    // Deep alpha-beta playouts (default depth 8) take seconds each without a deadline; the
    // search's 50 ms must still hold. The bound leaves a slow CI machine room; the failure it
    // guards against took 15 s.
    let game = Santorini::default();
    let mut s = game.initial_state();
    for m in ["b2", "d4", "b4", "d2"] {
        s.apply(s.parse_action(m).unwrap()).unwrap();
    }
    for spec in ["mcts:time=50ms,playout=(alphabeta:eval=linear8)", "ismcts:time=50ms,playout=(alphabeta:eval=linear8)"]
    {
        let mut agent = make_agent(&game, spec, 1).unwrap();
        let took = time_move(&mut agent, &s);
        assert!(took < Duration::from_millis(400), "{spec} took {took:?}");
    }
    let sagrada = sagrada_midgame();
    let game = three_players();
    for spec in ["ismcts:time=15ms,playout=(alphabeta)", "mcts:time=15ms,playout=(mcts:iters=100000)"] {
        let mut agent = make_agent(&game, spec, 2).unwrap();
        let took = time_move(&mut agent, &sagrada);
        assert!(took < Duration::from_millis(300), "{spec} took {took:?}");
    }
}

#[test]
fn a_nested_budget_holds_any_agent_to_its_deadline() {
    // The caller's deadline alone (no time option) stops a search that would run for minutes.
    let game = Connect4::default();
    let s = game.initial_state();
    for spec in ["alphabeta:depth=30", "mcts:iters=100000000", "ismcts:iters=100000000"] {
        let mut agent = make_agent(&game, spec, 3).unwrap();
        let start = Instant::now();
        let a = agent.act(&s, &Budget::nested(Some(start + Duration::from_millis(30)))).unwrap();
        assert!(s.is_legal(a));
        assert!(start.elapsed() < Duration::from_millis(300), "{spec} took {:?}", start.elapsed());
    }
}

#[test]
fn a_deadline_already_past_still_gets_a_legal_move() {
    // Found by the fuzz suite: alpha-beta with worlds indexed an empty move list when the
    // deadline had passed before its first iteration.
    let s = sagrada_midgame();
    let game = three_players();
    let past = Instant::now();
    for spec in ["alphabeta:worlds=5,eval=thesis", "alphabeta", "mcts", "ismcts", "mcts:worlds=4,iters=100"] {
        let mut agent = make_agent(&game, spec, 9).unwrap();
        let a = agent.act(&s, &Budget::nested(Some(past))).unwrap();
        assert!(s.is_legal(a), "{spec}");
    }
}

#[test]
fn endless_times_saturate() {
    // A week per move (the longest accepted) is a valid budget; the move still comes back once
    // another limit is reached, with no overflow computing its deadline.
    let game = Connect4::default();
    let s = game.initial_state();
    let week = Duration::from_secs(7 * 24 * 3600);
    for spec in ["mcts:iters=200", "alphabeta:depth=2", "ismcts:iters=200"] {
        let mut agent = make_agent(&game, spec, 4).unwrap();
        let a = agent.act(&s, &Budget::time(week)).unwrap();
        assert!(s.is_legal(a), "{spec}");
        // And a budget far beyond what any clock can represent.
        let a = agent.act(&s, &Budget::time(Duration::MAX)).unwrap();
        assert!(s.is_legal(a), "{spec}");
    }
    let err = make_agent(&game, "mcts:time=9300000000000000000s", 0).err().unwrap().to_string();
    assert!(err.contains("at most 7 days"), "{err}");
}

#[test]
fn many_worlds_share_the_clock() {
    let s = sagrada_midgame();
    let game = three_players();
    let mut agent = make_agent(&game, "alphabeta:worlds=1000,time=50ms", 5).unwrap();
    let took = time_move(&mut agent, &s);
    assert!(took < Duration::from_millis(300), "took {took:?}");
    // Too few iterations for the worlds is refused, not run with empty trees.
    let err = make_agent(&game, "mcts:worlds=1000,iters=100", 0).err().unwrap().to_string();
    assert!(err.contains("iters=100 leaves some of the 1000 trees"), "{err}");
    let err = make_agent(&game, "alphabeta:worlds=100000", 0).err().unwrap().to_string();
    assert!(err.contains("bad value '100000' for 'worlds'; expected integer 0..=1000"), "{err}");
    let mut agent = make_agent(&game, "mcts:worlds=20,iters=40", 6).unwrap();
    let a = agent.act(&s, &Budget::UNLIMITED).unwrap();
    assert!(s.is_legal(a));
}

#[test]
fn tables_are_checked_against_memory_and_taken_lazily() {
    let game = Connect4::default();
    let err = make_agent(&game, "alphabeta:tt=30000gb", 0).err().unwrap().to_string();
    assert!(err.contains("more than half of this machine's memory"), "{err}");
    // Building an agent costs no table memory: it is taken at the first move.
    let agent = make_agent(&game, "alphabeta:tt=1gb", 0).unwrap();
    assert_eq!(agent.memory_bytes(), 1 << 30);
    assert_eq!(make_agent(&game, "alphabeta:tt=1gb,plain=true", 0).unwrap().memory_bytes(), 0);
    let nested = make_agent(&game, "mcts:threads=2,playout=(alphabeta:depth=1,tt=4mb)", 0).unwrap();
    assert_eq!(nested.memory_bytes(), 8 << 20, "one playout agent per search thread");
    let err = make_agent(&game, "mcts:threads=65535", 0).err().unwrap().to_string();
    assert!(err.contains("agent mcts: threads 65535: give 1 to"), "{err}");
}
