//! Connect four knowledge for search: the `lines` evaluator and centre-first move ordering.

use super::Connect4State;
use meeple_game::{Action, AgentInfo, Evaluator, ParamInfo, Player};

pub(crate) const LINES_INFO: AgentInfo = AgentInfo {
    name: "lines",
    about: "open lines: +1/+4/+16 for each four-cell window holding 1/2/3 of a player's discs and none of the \
            opponent's, minus the same for the opponent; orders moves centre first",
    params: &[ParamInfo {
        name: "weights",
        default: "",
        accepts: "6 comma-separated numbers in brackets (own windows with 1, 2, 3 discs, then the opponent's), or a file of them",
        help: "window weights (default 1,4,16,-1,-4,-16)",
    }],
};

/// The default weights: own windows with 1, 2, 3 discs, then the opponent's.
pub const LINES_WEIGHTS: [f64; 6] = [1.0, 4.0, 16.0, -1.0, -4.0, -16.0];

/// Scores windows of four cells that only one player can still complete.
#[derive(Clone, Debug)]
pub struct LinesEvaluator {
    windows: Vec<u64>,
    center: u32,
    weights: [f64; 6],
}

impl LinesEvaluator {
    /// The evaluator for a `rows` x `cols` board (same bit layout as [`Connect4State`]).
    pub fn new(rows: u8, cols: u8) -> Self {
        let (rows, cols) = (rows as i32, cols as i32);
        let h = rows + 1;
        let mut windows = Vec::new();
        for c in 0..cols {
            for r in 0..rows {
                for (dc, dr) in [(1, 0), (0, 1), (1, 1), (1, -1)] {
                    let cells: Vec<(i32, i32)> = (0..4).map(|k| (c + dc * k, r + dr * k)).collect();
                    if cells.iter().all(|&(cc, rr)| (0..cols).contains(&cc) && (0..rows).contains(&rr)) {
                        windows.push(cells.iter().fold(0u64, |m, &(cc, rr)| m | 1 << (cc * h + rr)));
                    }
                }
            }
        }
        LinesEvaluator { windows, center: (cols as u32 - 1) / 2, weights: LINES_WEIGHTS }
    }

    /// The same with other window weights.
    pub fn with_weights(mut self, weights: [f64; 6]) -> Self {
        self.weights = weights;
        self
    }

    /// Windows open to one player only, by the number of discs in them (1, 2, 3): `player`'s,
    /// then the opponent's.
    fn counts(&self, state: &Connect4State, player: Player) -> [f64; 6] {
        let (mine, theirs) = (state.discs(player), state.discs(1 - player));
        let mut f = [0.0; 6];
        for &w in &self.windows {
            let (m, t) = (w & mine, w & theirs);
            if t == 0 && m != 0 {
                f[(m.count_ones() as usize).min(3) - 1] += 1.0;
            } else if m == 0 && t != 0 {
                f[3 + (t.count_ones() as usize).min(3) - 1] += 1.0;
            }
        }
        f
    }

    /// Number of windows (69 on the 7x6 board).
    pub fn windows(&self) -> usize {
        self.windows.len()
    }
}

impl Evaluator<Connect4State> for LinesEvaluator {
    fn evaluate(&self, state: &Connect4State, player: Player) -> f64 {
        self.counts(state, player).iter().zip(&self.weights).map(|(f, w)| f * w).sum()
    }

    fn features(&self, state: &Connect4State, player: Player, out: &mut Vec<f64>) -> bool {
        out.clear();
        out.extend_from_slice(&self.counts(state, player));
        true
    }

    fn weights(&self) -> Vec<f64> {
        self.weights.to_vec()
    }

    fn move_priority(&self, _state: &Connect4State, action: Action) -> i32 {
        -(action.abs_diff(self.center) as i32)
    }

    fn has_move_priority(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Connect4;
    use meeple_game::Game;

    #[test]
    fn windows_and_values() {
        let e = LinesEvaluator::new(6, 7);
        // 24 horizontal + 21 vertical + 12 + 12 diagonal windows.
        assert_eq!(e.windows(), 69);
        let g = Connect4::default();
        let start = g.initial_state();
        assert_eq!(e.evaluate(&start, 0), 0.0);
        // The centre disc lies in more windows than an edge disc.
        let centre = start.play_columns("4").unwrap();
        let edge = start.play_columns("1").unwrap();
        assert!(e.evaluate(&centre, 0) > e.evaluate(&edge, 0));
        // Zero-sum: one player's value is the other's loss, in every position.
        for moves in ["4", "4453", "1122334", "7654321"] {
            let s = start.play_columns(moves).unwrap();
            assert_eq!(e.evaluate(&s, 0), -e.evaluate(&s, 1), "{moves}");
        }
        // An open three for X outweighs O's scattered discs.
        let s = start.play_columns("3171").unwrap().play_columns("4").unwrap();
        assert!(e.evaluate(&s, 0) > 10.0, "{}", e.evaluate(&s, 0));
    }

    #[test]
    fn features_times_weights_is_the_value_and_weights_can_be_given() {
        use meeple_game::State;
        use rand::RngExt;
        let g = Connect4::default();
        let hand = g.evaluator(&"lines".parse().unwrap()).unwrap().unwrap();
        let other = g.evaluator(&"lines:weights=(2,3,5,-7,-11,-13)".parse().unwrap()).unwrap().unwrap();
        assert_eq!(other.weights(), vec![2.0, 3.0, 5.0, -7.0, -11.0, -13.0]);
        assert!(g.evaluator(&"lines:weights=(1,2)".parse().unwrap()).unwrap().is_err());
        let mut rng = meeple_game::rng_from_seed(4);
        let mut legal = Vec::new();
        let mut f = Vec::new();
        for _ in 0..50 {
            let mut s = g.initial_state();
            while !s.is_terminal() {
                for e in [&hand, &other] {
                    for p in 0..2 {
                        assert!(e.features(&s, p, &mut f));
                        let dot: f64 = f.iter().zip(e.weights()).map(|(a, b)| a * b).sum();
                        assert_eq!(dot, e.evaluate(&s, p));
                    }
                }
                s.legal_actions(&mut legal);
                s.apply_unchecked(legal[rng.random_range(0..legal.len())]);
            }
        }
    }

    #[test]
    fn orders_centre_first() {
        let e = LinesEvaluator::new(6, 7);
        let s = Connect4::default().initial_state();
        let mut moves: Vec<Action> = (0..7).collect();
        moves.sort_by_key(|&a| (-e.move_priority(&s, a), a));
        assert_eq!(moves, vec![3, 2, 4, 1, 5, 0, 6]);
    }
}
