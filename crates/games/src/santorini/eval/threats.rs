//! Winning threats: a position decided within a move as the rules find it, and the `threats`
//! option that puts that in front of a weighted evaluator.

use super::*;

/// Whether `bits` has at least `n` (at most 4) bits set, without a population count (which is a
/// dozen instructions on the baseline x86-64 target).
pub(super) fn at_least(mut bits: u32, n: u32) -> bool {
    for _ in 1..n {
        bits &= bits.wrapping_sub(1);
    }
    bits != 0
}

/// The cells `player`'s workers can move to now (free, and at most one level up).
pub(super) fn reach(state: &SantoriniState, player: Player) -> u32 {
    let blocked = state.dome | state.worker_bits[0] | state.worker_bits[1];
    state.workers(player).fold(0u32, |r, c| r | (NEIGHBOURS[c] & !blocked & state.climbable(state.height(c))))
}

/// Whether `player` could climb onto level 3 on their next move.
pub(super) fn can_win_next(state: &SantoriniState, player: Player) -> bool {
    let blocked = state.dome | state.worker_bits[0] | state.worker_bits[1];
    state.workers(player).any(|c| state.height(c) == 2 && NEIGHBOURS[c] & !blocked & state.level[2] != 0)
}

/// The value [`Threats`] gives a position whose mover climbs to level 3 on this move; one less
/// when the opponent does so next move whatever the mover does.
pub const THREAT_WIN: f64 = 1000.0;

/// What the next two plies decide for sure: `Some(true)` when the mover can climb onto level 3
/// now, `Some(false)` when it cannot and the opponent will on its next move whatever the mover
/// does (two level-3 cells beside the opponent's level-2 workers, or one that no move of the
/// mover ends beside, so that it cannot be domed), `None` otherwise or before all workers
/// stand. With the official supply the domes may run out, so only the first is decided there.
pub fn forced_outcome(state: &SantoriniState) -> Option<bool> {
    let m = state.current_player()?;
    if state.placed < 4 {
        return None;
    }
    if state.stepped() {
        // With gods: exactly whether the mover wins within this turn (a climb, Pan's drop,
        // Artemis's second move), Athena's block and the forced moves included.
        return state.wins_this_turn().then_some(true);
    }
    if can_win_next(state, m) {
        return Some(true);
    }
    if state.official {
        return None;
    }
    let blocked = state.dome | state.worker_bits[0] | state.worker_bits[1];
    let threats = state
        .workers(1 - m)
        .filter(|&c| state.height(c) == 2)
        .fold(0u32, |t, c| t | (NEIGHBOURS[c] & !blocked & state.level[2]));
    if threats == 0 {
        return None;
    }
    if at_least(threats, 2) {
        return Some(false);
    }
    // One threat: a move that ends beside it can dome it (the mover cannot stand on it: from
    // level 2 that climb would be a win, ruled out above, and lower it is too high).
    let t = threats.trailing_zeros() as usize;
    (reach(state, m) & NEIGHBOURS[t] == 0).then_some(false)
}

/// Cells where a worker of `player` may stand on level 2 after at most one move of theirs:
/// where one stands now, and level-2 cells a worker on level 1 or 2 can step onto; with
/// `raised`, also level-1 cells (a build before the move may raise one).
pub(super) fn level2_reach(state: &SantoriniState, player: Player, raised: bool) -> u32 {
    // After the other side's move its workers may have left their cells.
    let blocked = if raised { state.dome } else { state.dome | state.worker_bits[0] | state.worker_bits[1] };
    let lowest = if raised { state.level[0] } else { state.level[1] };
    let level2 = lowest & !state.level[2] & !state.dome;
    state.workers(player).fold(0u32, |r, c| match state.height(c) {
        0 => r,
        1 => r | (NEIGHBOURS[c] & !blocked & level2),
        _ => r | 1 << c | (NEIGHBOURS[c] & !blocked & level2),
    })
}

/// Whether some cell of `cells` has a neighbour in `near`.
pub(super) fn borders(cells: u32, near: u32) -> bool {
    let mut bits = cells;
    while bits != 0 {
        let c = bits.trailing_zeros() as usize;
        bits &= bits - 1;
        if NEIGHBOURS[c] & near != 0 {
            return true;
        }
    }
    false
}

/// A weighted evaluator with [`forced_outcome`] in front (`threats=true`): a position the next
/// two plies decide is worth ±[`THREAT_WIN`] (less one for the later win), whatever the weights
/// say. This is what a search one or two plies deeper would see at its horizon, for the cost of
/// a few mask tests. The inner evaluator's shortcuts value many positions below a node without
/// visiting them; they serve only where none of those positions could be decided (every worker
/// that could stand on level 2 there is away from any cell that could be level 3 by then), so
/// the search's value is what visiting every position would give.
pub struct Threats {
    inner: BoxedEvaluator<SantoriniState>,
}

impl Threats {
    pub fn new(inner: BoxedEvaluator<SantoriniState>) -> Self {
        Threats { inner }
    }

    /// No child of this node (the mover's move and build done) can be decided: the opponent
    /// on level 2 beside nothing that could be level 3 after one build, and the mover unable to
    /// stand on level 2 beside such a cell.
    fn children_undecided(state: &SantoriniState) -> bool {
        let m = state.mover();
        let high = state.level[1] & !state.dome;
        let o2 = state.workers(1 - m).filter(|&c| state.height(c) == 2).fold(0u32, |b, c| b | 1 << c);
        !borders(o2, high) && !borders(level2_reach(state, m, false), high)
    }

    /// No grandchild can be decided: after two builds a cell of level 1 or more could be
    /// level 3; the mover moves before any build, the opponent after one.
    fn grandchildren_undecided(state: &SantoriniState) -> bool {
        let m = state.mover();
        let high = state.level[0] & !state.dome;
        !borders(level2_reach(state, m, false), high) && !borders(level2_reach(state, 1 - m, true), high)
    }
}

impl Evaluator<SantoriniState> for Threats {
    fn evaluate(&self, state: &SantoriniState, player: Player) -> f64 {
        match forced_outcome(state) {
            Some(win) => {
                let v = if win { THREAT_WIN } else { THREAT_WIN - 1.0 };
                if (state.mover() == player) == win { v } else { -v }
            }
            None => self.inner.evaluate(state, player),
        }
    }

    fn move_gain_bound(&self, state: &SantoriniState) -> Option<f64> {
        if state.placed < 4 || state.stepped() || !Self::children_undecided(state) {
            return None;
        }
        self.inner.move_gain_bound(state)
    }

    fn frontier_value(&self, state: &SantoriniState, root: Player, maximize: bool) -> Option<f64> {
        if state.placed < 4 || state.stepped() || !Self::children_undecided(state) {
            return None;
        }
        self.inner.frontier_value(state, root, maximize)
    }

    fn frontier2_value(
        &self,
        state: &SantoriniState,
        root: Player,
        maximize: bool,
        alpha: f64,
        beta: f64,
    ) -> Option<f64> {
        if state.placed < 4 || state.stepped() || !Self::grandchildren_undecided(state) {
            return None;
        }
        self.inner.frontier2_value(state, root, maximize, alpha, beta)
    }

    fn move_priority(&self, state: &SantoriniState, action: Action) -> i32 {
        self.inner.move_priority(state, action)
    }

    fn move_priorities(&self, state: &SantoriniState, actions: &[Action], out: &mut Vec<i32>) {
        self.inner.move_priorities(state, actions, out);
    }

    fn has_move_priority(&self) -> bool {
        self.inner.has_move_priority()
    }
}
