use super::*;
use meeple_game::{conformance, perft};

#[test]
fn perft_table() {
    let expected = [9, 72, 504, 3024, 15120, 54720, 148176, 200448, 127872];
    let start = TicTacToe.initial_state();
    for (d, &n) in expected.iter().enumerate() {
        assert_eq!(perft(&start, d as u32 + 1), n, "depth {}", d + 1);
    }
    assert_eq!(perft(&start, 10), 0, "no game lasts 10 plies");
}

#[test]
fn conformance_kit() {
    let report = conformance::check(&TicTacToe, &conformance::Config::with_games(3000)).unwrap();
    assert_eq!(report.games, 3000.max(report.games));
    // Random tic-tac-toe favours X (about 58% wins, 13% draws).
    assert!(report.total_returns[0] > report.total_returns[1]);
}

#[test]
fn wins_draws_and_notation() {
    let s = TicTacToeState::from_board("xxx oo. ...").unwrap();
    assert_eq!(s.turn(), Turn::Terminal);
    assert_eq!(s.returns().unwrap().as_slice(), &[1.0, 0.0]);

    let s = TicTacToeState::from_board("xox xoo oxx").unwrap();
    assert_eq!(s.turn(), Turn::Terminal);
    assert_eq!(s.returns().unwrap().as_slice(), &[0.5, 0.5]);

    // Diagonal a1-c3 for O.
    let s = TicTacToeState::from_board("xxo .o. oxx").unwrap();
    assert_eq!(s.returns().unwrap().as_slice(), &[0.0, 1.0]);

    let mut s = TicTacToe.initial_state();
    let b2 = s.parse_action("b2").unwrap();
    assert_eq!(b2, 4);
    assert_eq!(s.parse_action("a3").unwrap(), 0);
    assert_eq!(s.parse_action("C1").unwrap(), 8);
    s.apply(b2).unwrap();
    let err = s.apply(b2).unwrap_err().to_string();
    assert!(err.contains("b2 is already taken"), "{err}");
    assert!(s.parse_action("d4").is_err());
    assert!(s.parse_action("").is_err());
    assert!(TicTacToeState::from_board("xxxx..... ").is_err());
}

#[test]
fn observation_is_from_the_players_view() {
    let s = TicTacToeState::from_board("x.. .o. ...").unwrap();
    let mut obs = Vec::new();
    s.observation(0, &mut obs);
    assert_eq!(obs[0], 1.0); // X's mark in X's own plane
    assert_eq!(obs[9 + 4], 1.0); // O's mark in X's opponent plane
    s.observation(1, &mut obs);
    assert_eq!(obs[4], 1.0);
    assert_eq!(obs[9], 1.0);
    assert_eq!(obs[18..].iter().sum::<f32>(), 7.0);
}

#[test]
fn ownership_is_the_marks() {
    let s = TicTacToeState::from_board("x.. .o. ..x").unwrap();
    let mut own = Vec::new();
    assert!(s.ownership(1, &mut own));
    assert_eq!(own, vec![-1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, -1.0]);
}
