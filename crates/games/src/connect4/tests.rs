use super::*;
use meeple_game::{Game, conformance, perft, rng_from_seed};
use rand::RngExt;

#[test]
fn perft_table() {
    let expected = [7, 49, 343, 2401, 16807, 117649, 823536, 5673234];
    let start = Connect4::default().initial_state();
    for (d, &n) in expected.iter().enumerate() {
        assert_eq!(perft(&start, d as u32 + 1), n, "depth {}", d + 1);
    }
}

#[test]
fn conformance_default_and_other_sizes() {
    conformance::check(&Connect4::default(), &conformance::Config::with_games(2000)).unwrap();
    for (rows, cols) in [(4, 4), (5, 4), (6, 9), (7, 8), (15, 4)] {
        let game = Connect4::new(rows, cols).unwrap();
        conformance::check(&game, &conformance::Config::with_games(200)).unwrap();
    }
}

/// Four in a row found by scanning a plain grid, independent of the bitboard shifts.
fn naive_winner(s: &Connect4State) -> Option<Player> {
    let (rows, cols) = (s.rows as i32, s.cols as i32);
    for p in 0..2 {
        for r in 0..rows {
            for c in 0..cols {
                for (dr, dc) in [(0, 1), (1, 0), (1, 1), (1, -1)] {
                    let line = (0..4).all(|k| {
                        let (rr, cc) = (r + dr * k, c + dc * k);
                        (0..rows).contains(&rr) && (0..cols).contains(&cc) && s.cell(rr as u32, cc as u32) == Some(p)
                    });
                    if line {
                        return Some(p);
                    }
                }
            }
        }
    }
    None
}

#[test]
fn bitboard_wins_match_a_plain_grid_scan() {
    let mut rng = rng_from_seed(11);
    let mut legal = Vec::new();
    let mut draws = 0;
    for (rows, cols) in [(6, 7), (4, 4), (4, 12), (9, 6), (15, 4), (5, 10)] {
        let game = Connect4::new(rows, cols).unwrap();
        for _ in 0..2000 {
            let mut s = game.initial_state();
            while s.turn() != Turn::Terminal {
                assert_eq!(naive_winner(&s), None, "{s}");
                s.legal_actions(&mut legal);
                s.apply_unchecked(legal[rng.random_range(0..legal.len())]);
            }
            let w = naive_winner(&s);
            assert_eq!(s.winner.map(|w| w as usize), w, "{s}");
            if w.is_none() {
                draws += 1;
                assert_eq!(s.moves as u32, rows as u32 * cols as u32);
                assert_eq!(s.returns().unwrap().as_slice(), &[0.5, 0.5]);
            }
        }
    }
    assert!(draws > 0, "some random games on small boards end drawn");
}

#[test]
fn hand_checked_positions() {
    let g = Connect4::default();
    // Vertical: X plays column 1 four times while O plays column 2.
    let s = g.initial_state().play_columns("1212121").unwrap();
    assert_eq!(s.returns().unwrap().as_slice(), &[1.0, 0.0]);
    // Horizontal for O on the bottom row (columns 2-5) while X stacks column 1.
    let s = g.initial_state().play_columns("12131465").unwrap();
    assert_eq!(s.cell(0, 4), Some(1));
    assert_eq!(s.returns().unwrap().as_slice(), &[0.0, 1.0]);
    // Diagonal for X: a staircase 1-2-3-4.
    let s = g.initial_state().play_columns("12233434464").unwrap();
    assert_eq!(s.turn(), Turn::Terminal, "{s}");
    assert_eq!(s.returns().unwrap()[0], 1.0);
    // Anti-diagonal for X.
    let s = g.initial_state().play_columns("76655454424").unwrap();
    assert_eq!(s.returns().unwrap()[0], 1.0, "{s}");
    // Three in a row split by the board edge must not win: columns 6,7 then 1,2 on row 1.
    let s = g.initial_state().play_columns("6171").unwrap();
    assert_eq!(s.turn(), Turn::Player(0));

    // Full column is refused with a reason, and the state is unchanged.
    let mut s = g.initial_state().play_columns("444444").unwrap();
    let before = s;
    let err = s.apply(3).unwrap_err().to_string();
    assert!(err.contains("column 4 is full"), "{err}");
    assert_eq!(s, before);
    let err = s.apply(9).unwrap_err().to_string();
    assert!(err.contains("no column 10"), "{err}");
    assert!(s.parse_action("0").is_err() && s.parse_action("8").is_err() && s.parse_action("x").is_err());
}

#[test]
fn transpositions_hash_equal() {
    let g = Connect4::default();
    let a = g.initial_state().play_columns("1234").unwrap();
    let b = g.initial_state().play_columns("3214").unwrap();
    assert_eq!(a, b);
    assert_eq!(a.zobrist(), b.zobrist());
    let c = g.initial_state().play_columns("1243").unwrap();
    assert_ne!(a.zobrist(), c.zobrist());
}

#[test]
fn specs_are_validated() {
    let ok = |s: &str| Connect4::from_spec(&s.parse().unwrap());
    assert_eq!(ok("connect4").unwrap(), Connect4::default());
    assert_eq!(ok("connect4:rows=5,cols=8").unwrap().spec().to_string(), "connect4:rows=5,cols=8");
    let err = ok("connect4:rows=3").unwrap_err().to_string();
    assert!(err.contains("'rows'") && err.contains("4..=15"), "{err}");
    let err = ok("connect4:rows=12,cols=7").unwrap_err().to_string();
    assert!(err.contains("(rows+1)*cols <= 64"), "{err}");
    let err = ok("connect4:depth=3").unwrap_err().to_string();
    assert!(err.contains("unknown option 'depth'") && err.contains("rows") && err.contains("cols"), "{err}");
}

#[test]
fn observation_layout() {
    let g = Connect4::default();
    let s = g.initial_state().play_columns("4").unwrap();
    let mut obs = Vec::new();
    s.observation(0, &mut obs);
    // X's disc: plane 0, bottom row (row index 5 from the top), column 4.
    assert_eq!(obs[5 * 7 + 3], 1.0);
    assert_eq!(obs[..42].iter().sum::<f32>(), 1.0);
    assert_eq!(obs[84..].iter().sum::<f32>(), 41.0);
    s.observation(1, &mut obs);
    assert_eq!(obs[42 + 5 * 7 + 3], 1.0);
}

#[test]
fn ownership_is_the_discs_in_the_observations_layout() {
    let g = Connect4::default();
    let s = g.initial_state().play_columns("445").unwrap();
    let mut own = Vec::new();
    assert!(s.ownership(0, &mut own));
    assert_eq!(own.len(), 42);
    // X on d1 and e1 (row index 5 from the top), O on d2.
    assert_eq!((own[5 * 7 + 3], own[5 * 7 + 4], own[4 * 7 + 3]), (1.0, 1.0, -1.0));
    assert_eq!(own.iter().filter(|&&v| v != 0.0).count(), 3);
    s.ownership(1, &mut own);
    assert_eq!((own[5 * 7 + 3], own[4 * 7 + 3]), (-1.0, 1.0));
}
