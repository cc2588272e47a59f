//! Santorini knowledge from the report (seed 004): the 8-feature linear evaluator with its hand
//! weights, the 22-feature extended set, move ordering by the mover's height, and a greedy
//! rules-based agent.

use super::{CELLS, Decoded, NEIGHBOUR, NEIGHBOURS, SantoriniState, TURN_BASE, WIN_BASE};
use meeple_game::{
    Action, Agent, AgentInfo, BoxedEvaluator, Budget, Error, Evaluator, ParamInfo, Player, Rng, Spec, State,
    rng_from_seed,
};
use rand::RngExt;

mod threats;
pub use threats::Threats;
#[cfg(test)]
pub(super) use threats::{THREAT_WIN, forced_outcome};
use threats::{at_least, can_win_next, reach};

const WEIGHTS: ParamInfo = ParamInfo {
    name: "weights",
    default: "",
    accepts: "comma-separated numbers in brackets, one per feature, or a file of them (meeple train treestrap)",
    help: "feature weights (default: the hand weights)",
};

const WEIGHTS_PARAM: &[ParamInfo] = &[WEIGHTS, THREATS];

const THREATS: ParamInfo = ParamInfo {
    name: "threats",
    default: "false",
    accepts: "true or false",
    help: "value exactly a position whose mover climbs to level 3 on this move (±1000) or cannot stop the \
           opponent's climb next move (∓999), before the weights; the search shortcuts serve only where no \
           such position lies within their horizon (not learnable)",
};

pub(crate) const EVALUATOR_INFOS: [AgentInfo; 5] = [
    AgentInfo {
        name: "linear8",
        about: "the report's linear evaluator: workers on level 0/1/2 and mean distance from the centre, for each \
                player (normalised to 0-1), hand weights [0,2,4,-1,0,-2,-4,1]; orders moves by the mover's \
                squared heights",
        params: WEIGHTS_PARAM,
    },
    AgentInfo {
        name: "linear22",
        about: "the report's extended linear set: for each player 7 height and centrality features (levels 0/1/2, \
                mean centre distance, workers on the centre, inner ring, edge) and 4 mobility features (moves, \
                climbing moves, moves to level 2+, moves to level 3); hand weights",
        params: WEIGHTS_PARAM,
    },
    AgentInfo {
        name: "table36",
        about: "linear8 widened to a worker table: for each player, workers by level 0/1/2 and by cell (6 cells up to \
                the board's symmetries: centre, its edge and corner neighbours, the rim's middles, the cells beside \
                them, the corners), 36 weights; as fast as linear8 in search; default: linear8's hand weights \
                written as a table",
        params: WEIGHTS_PARAM,
    },
    AgentInfo {
        name: "tempo16",
        about: "linear8 with two sets of weights, one for positions where the valued player is to move and one for \
                the opponent to move (a worker on level 2 is worth more to the side that moves next), 16 weights; \
                as fast as linear8 in search; default: the hand weights twice",
        params: WEIGHTS_PARAM,
    },
    AgentInfo {
        name: "gods",
        about: "for games with god powers: linear8's features and each player's winning moves if its turn began \
                now (0-2, /2), found by the rules themselves, so that Pan's drop, Artemis's double move, Apollo's \
                and Minotaur's moves into an occupied tower and Athena's block count; with threats=true a mover \
                who wins within the turn is valued exactly; 10 weights, default linear8's and [3,-3]",
        params: WEIGHTS_PARAM,
    },
];

/// Default weights of [`GodsLinear`]: linear8's, then own and opposing threats.
pub const GODS_WEIGHTS: [f64; 10] = [0.0, 2.0, 4.0, -1.0, 0.0, -2.0, -4.0, 1.0, 3.0, -3.0];

pub(crate) const GREEDY_INFO: AgentInfo = AgentInfo {
    name: "santorini-greedy",
    about: "rules-based: win if it can, else avoid moves that let the opponent climb to level 3, else climb as \
            high as it can (random among equals); places workers near the centre",
    params: &[],
};

/// The report's hand weights for [`Linear8`].
pub const LINEAR8_WEIGHTS: [f64; 8] = [0.0, 2.0, 4.0, -1.0, 0.0, -2.0, -4.0, 1.0];

const OWN22: [f64; 11] = [0.0, 2.0, 4.0, -1.0, 0.5, 0.25, 0.0, 0.5, 1.0, 1.0, 4.0];

/// Hand weights for [`Linear22`]: the player's own features, then the same negated for the
/// opponent. (The report trained its weights by RootStrap/TreeStrap and did not publish them.)
pub fn linear22_default_weights() -> [f64; 22] {
    let mut w = [0.0; 22];
    for i in 0..11 {
        w[i] = OWN22[i];
        w[11 + i] = -OWN22[i];
    }
    w
}

/// King-move distance from the centre cell (c3): 0, 1 or 2.
fn centre_distance(cell: usize) -> u32 {
    CENTRE_DISTANCE[cell] as u32
}

const CENTRE_DISTANCE: [u8; CELLS] = {
    let mut t = [0; CELLS];
    let mut cell = 0;
    while cell < CELLS {
        t[cell] = CLASS_DISTANCE[CELL_CLASS[cell] as usize];
        cell += 1;
    }
    t
};

/// A cell's class under the board's eight symmetries, by its row and column offsets from the
/// centre (nearer, farther): 0 (0,0) the centre, 1 (0,1), 2 (1,1), 3 (0,2), 4 (1,2), 5 (2,2) the
/// corners. [`centre_distance`] is the farther offset.
const CELL_CLASS: [u8; CELLS] = {
    let mut t = [0; CELLS];
    let mut cell = 0;
    while cell < CELLS {
        let (r, c) = ((cell / 5) as i32, (cell % 5) as i32);
        let (dr, dc) = ((r - 2).unsigned_abs(), (c - 2).unsigned_abs());
        let (near, far) = if dr < dc { (dr, dc) } else { (dc, dr) };
        t[cell] = match (near, far) {
            (0, 0) => 0,
            (0, 1) => 1,
            (1, 1) => 2,
            (0, 2) => 3,
            (1, 2) => 4,
            _ => 5,
        };
        cell += 1;
    }
    t
};

/// The centre distance (the farther offset) of each [`CELL_CLASS`].
const CLASS_DISTANCE: [u8; 6] = [0, 1, 1, 2, 2, 2];

/// [`table36_features`]'s weights that value every position as `linear8` with weights `w` does
/// once both workers of each side are placed (during placement `linear8` averages the centre
/// distance over the workers placed so far, the table sums).
pub fn table36_from_linear8(w: &[f64; 8]) -> [f64; 36] {
    std::array::from_fn(|i| {
        let (k, h, q) = (i / 18, i % 18 / 6, i % 6);
        w[4 * k + h] + CLASS_DISTANCE[q] as f64 / 2.0 * w[4 * k + 3]
    })
}

fn weights_from<const N: usize>(spec: &Spec, subject: &str, default: [f64; N]) -> Result<[f64; N], Error> {
    crate::weights_from(spec, subject, WEIGHTS_PARAM, default)
}

pub(crate) fn make_evaluator(spec: &Spec) -> Option<Result<BoxedEvaluator<SantoriniState>, Error>> {
    let inner = weighted_evaluator(spec)?;
    Some(inner.and_then(|inner| {
        let threats: bool = spec.options(&format!("evaluator {}", spec.name), WEIGHTS_PARAM)?.get("threats")?;
        Ok(if threats { Box::new(Threats::new(inner)) as _ } else { inner })
    }))
}

fn weighted_evaluator(spec: &Spec) -> Option<Result<BoxedEvaluator<SantoriniState>, Error>> {
    match spec.name.as_str() {
        "linear8" => {
            Some(weights_from(spec, "evaluator linear8", LINEAR8_WEIGHTS).map(|w| Box::new(Linear8::new(w)) as _))
        }
        "table36" => Some(
            weights_from(spec, "evaluator table36", table36_from_linear8(&LINEAR8_WEIGHTS))
                .map(|w| Box::new(Linear8::table36(w)) as _),
        ),
        "tempo16" => {
            let mut hand = [0.0; 16];
            hand[..8].copy_from_slice(&LINEAR8_WEIGHTS);
            hand[8..].copy_from_slice(&LINEAR8_WEIGHTS);
            Some(weights_from(spec, "evaluator tempo16", hand).map(|w| Box::new(Tempo16::new(w)) as _))
        }
        "linear22" => Some(
            weights_from(spec, "evaluator linear22", linear22_default_weights())
                .map(|w| Box::new(Linear::new(linear22_features, w)) as _),
        ),
        "gods" => Some(
            weights_from(spec, "evaluator gods", GODS_WEIGHTS).map(|w| Box::new(Linear::new(gods_features, w)) as _),
        ),
        _ => None,
    }
}

/// The report's move-ordering heuristic: the mover's squared worker heights after the move (a
/// winning climb scores highest). Placements go centre first.
fn height_priority(state: &SantoriniState, action: Action) -> i32 {
    if state.stepped() && action >= super::gods::STEP_MOVE {
        return state.step_priority(action);
    }
    match state.decode(action) {
        Decoded::Place(cell) => -(centre_distance(cell) as i32),
        Decoded::Turn { worker, to, .. } => {
            let p = state.mover();
            let other = state.workers[p][1 - worker] as usize;
            let h_to = state.height(to) as i32;
            let h_other = if other < CELLS { state.height(other) as i32 } else { 0 };
            h_to * h_to + h_other * h_other
        }
    }
}

/// [`height_priority`] of many actions: after placement the priority depends only on the worker
/// and its move, so the 16 values are computed once and looked up by action.
fn height_priorities(state: &SantoriniState, actions: &[Action], out: &mut Vec<i32>) {
    out.clear();
    if state.placed < 4 || state.stepped() {
        out.extend(actions.iter().map(|&a| height_priority(state, a)));
        return;
    }
    let p = state.mover();
    let mut by_move = [0i32; 16];
    for w in 0..2 {
        let (from, other) = (state.workers[p][w] as usize, state.workers[p][1 - w] as usize);
        let h_other = state.height(other) as i32;
        for md in 0..8 {
            let to = NEIGHBOUR[from][md] as usize;
            if to < CELLS {
                let h_to = state.height(to) as i32;
                by_move[w * 8 + md] = h_to * h_to + h_other * h_other;
            }
        }
    }
    // Turn ids are worker * 64 + move * 8 + build above TURN_BASE, winning climbs worker * 8 +
    // move above WIN_BASE.
    out.extend(actions.iter().map(|&a| {
        let x = if a >= WIN_BASE { a - WIN_BASE } else { (a - TURN_BASE) / 8 };
        by_move[x as usize]
    }));
}

/// Whether every move from `state` leaves the game running: the mover has no winning climb and
/// the opponent keeps a move whatever happens (one turn blocks at most two cells: the one the
/// worker steps onto and the one it builds on).
fn quiet(state: &SantoriniState) -> bool {
    let Some(me) = state.current_player() else { return false };
    // With gods a child is one step, not a turn: the shortcuts below do not apply.
    if state.placed < 4 || state.official || state.stepped() || can_win_next(state, me) {
        return false;
    }
    at_least(reach(state, 1 - me), 3)
}

/// The 8 features for `player` then the opponent: workers on level 0, 1, 2 (each /2) and mean
/// centre distance (/2).
pub fn linear8_features(state: &SantoriniState, player: Player) -> [f64; 8] {
    let mut f = [0.0; 8];
    for (side, p) in [player, 1 - player].into_iter().enumerate() {
        let (mut placed, mut distance) = (0u32, 0u32);
        for c in state.workers(p) {
            let h = state.height(c) as usize;
            if h < 3 {
                f[side * 4 + h] += 0.5;
            }
            placed += 1;
            distance += centre_distance(c);
        }
        if placed > 0 {
            f[side * 4 + 3] = distance as f64 / placed as f64 / 2.0;
        }
    }
    f
}

/// The 36 features of [`Linear8::table36`], for `player` then the opponent (18 each): workers
/// (each /2) on level 0, 1, 2, each level split by [`CELL_CLASS`] (index `18 * side + 6 * level
/// + class`).
pub fn table36_features(state: &SantoriniState, player: Player) -> [f64; 36] {
    let mut f = [0.0; 36];
    for (side, p) in [player, 1 - player].into_iter().enumerate() {
        for c in state.workers(p) {
            let h = state.height(c) as usize;
            if h < 3 {
                f[18 * side + 6 * h + CELL_CLASS[c] as usize] += 0.5;
            }
        }
    }
    f
}

/// The 22 features for `player` then the opponent (11 each): workers on level 0/1/2 (/2), mean
/// centre distance (/2), workers on the centre, on the inner ring, on the edge (/2); moves,
/// climbing moves, moves to level 2 or higher, moves to level 3 (each /16).
pub fn linear22_features(state: &SantoriniState, player: Player) -> [f64; 22] {
    let mut f = [0.0; 22];
    let blocked = state.dome | state.worker_bits[0] | state.worker_bits[1];
    for (side, p) in [player, 1 - player].into_iter().enumerate() {
        let base = side * 11;
        let (mut placed, mut distance) = (0u32, 0u32);
        for c in state.workers(p) {
            placed += 1;
            distance += centre_distance(c);
            let h = state.height(c);
            if h < 3 {
                f[base + h as usize] += 0.5;
            }
            f[base + 4 + centre_distance(c) as usize] += 0.5;
            let dests = NEIGHBOURS[c] & !blocked & state.climbable(h);
            let higher = match h {
                0 => state.level[0],
                1 => state.level[1],
                _ => state.level[2],
            };
            f[base + 7] += dests.count_ones() as f64 / 16.0;
            f[base + 8] += (dests & higher).count_ones() as f64 / 16.0;
            f[base + 9] += (dests & state.level[1]).count_ones() as f64 / 16.0;
            f[base + 10] += (dests & state.level[2]).count_ones() as f64 / 16.0;
        }
        if placed > 0 {
            f[base + 3] = distance as f64 / placed as f64 / 2.0;
        }
    }
    f
}

/// Which features a [`Linear8`] weighs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    /// [`linear8_features`], the report's.
    Linear8,
    /// [`table36_features`].
    Table36,
}

/// The report's 8-feature linear evaluator, or its 36-feature widening `table36` (the same
/// search shortcuts: both value a position as a sum of one share per worker).
#[derive(Clone, Debug)]
pub struct Linear8 {
    layout: Layout,
    /// One weight per feature of the layout.
    weights: Vec<f64>,
    /// One worker's share of a side's value, by side (0: the player's weights, 1: the
    /// opponent's), the worker's height and its cell: with both workers placed the value is the
    /// sum of four shares, so search never builds feature vectors.
    share: Box<[[[f64; CELLS]; 4]; 2]>,
    /// The most one move can raise the mover's value (see [`Evaluator::move_gain_bound`]).
    gain: f64,
}

impl Default for Linear8 {
    fn default() -> Self {
        Linear8::new(LINEAR8_WEIGHTS)
    }
}

impl Linear8 {
    pub fn new(weights: [f64; 8]) -> Self {
        Self::with_shares(Layout::Linear8, weights.to_vec(), |k, h, c| {
            let level = if h < 3 { 0.5 * weights[4 * k + h] } else { 0.0 };
            level + CENTRE_DISTANCE[c] as f64 / 4.0 * weights[4 * k + 3]
        })
    }

    /// The `table36` evaluator: one weight per feature of [`table36_features`].
    pub fn table36(weights: [f64; 36]) -> Self {
        Self::with_shares(Layout::Table36, weights.to_vec(), |k, h, c| {
            if h < 3 { 0.5 * weights[18 * k + 6 * h + CELL_CLASS[c] as usize] } else { 0.0 }
        })
    }

    fn with_shares(layout: Layout, weights: Vec<f64>, share: impl Fn(usize, usize, usize) -> f64) -> Self {
        let share: Box<[[[f64; CELLS]; 4]; 2]> =
            Box::new(std::array::from_fn(|k| std::array::from_fn(|h| std::array::from_fn(|c| share(k, h, c)))));
        // A quiet position's move takes one worker from a cell on level `ha` to a neighbour on
        // level 2 at most and no more than one above (a climb to 3 would win); builds never
        // touch a cell with a worker. The bound is the largest change of one share that such a
        // step makes in the mover's favour: up for the player's own shares, down for the
        // opponent's.
        let mut gain = f64::NEG_INFINITY;
        for a in 0..CELLS {
            for &b in NEIGHBOUR[a].iter().filter(|&&b| (b as usize) < CELLS) {
                let b = b as usize;
                for ha in 0..3 {
                    for hb in 0..=(ha + 1).min(2) {
                        gain = gain.max(share[0][hb][b] - share[0][ha][a]).max(share[1][ha][a] - share[1][hb][b]);
                    }
                }
            }
        }
        Linear8 { layout, weights, share, gain }
    }

    /// The weights, one per feature ([`linear8_features`] or [`table36_features`]).
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// The value of one side's workers on `cells` with weights `k` (0 the player's, 1 the
    /// opponent's), the cell `raised` one level higher than in `state` (a build; `usize::MAX`
    /// for none).
    #[inline]
    fn part(&self, state: &SantoriniState, cells: [u8; 2], k: usize, raised: usize) -> f64 {
        let (a, b) = (cells[0] as usize, cells[1] as usize);
        if a >= CELLS || b >= CELLS {
            return self.part_in_placement(state, cells, k, raised);
        }
        let ha = state.height(a) as usize + (a == raised) as usize;
        let hb = state.height(b) as usize + (b == raised) as usize;
        self.share[k][ha][a] + self.share[k][hb][b]
    }
}

impl Evaluator<SantoriniState> for Linear8 {
    fn evaluate(&self, state: &SantoriniState, player: Player) -> f64 {
        self.part(state, state.workers[player], 0, usize::MAX)
            + self.part(state, state.workers[1 - player], 1, usize::MAX)
    }

    fn features(&self, state: &SantoriniState, player: Player, out: &mut Vec<f64>) -> bool {
        out.clear();
        match self.layout {
            Layout::Linear8 => out.extend_from_slice(&linear8_features(state, player)),
            Layout::Table36 => out.extend_from_slice(&table36_features(state, player)),
        }
        true
    }

    fn weights(&self) -> Vec<f64> {
        self.weights.clone()
    }

    fn move_gain_bound(&self, state: &SantoriniState) -> Option<f64> {
        quiet(state).then_some(self.gain)
    }

    fn frontier_value(&self, state: &SantoriniState, root: Player, maximize: bool) -> Option<f64> {
        // Builds never touch a square a worker stands on, so a child's value depends only on
        // which worker moved where: at most 16 evaluations instead of every move and build.
        if !quiet(state) {
            return None;
        }
        let p = state.mover();
        // Only the mover's part changes, so the opponent's is computed once.
        let (km, ko) = if root == p { (0, 1) } else { (1, 0) };
        let other = self.part(state, state.workers[1 - p], ko, usize::MAX);
        let blocked = state.dome | state.worker_bits[0] | state.worker_bits[1];
        let mut best: Option<f64> = None;
        for w in 0..2 {
            let from = state.workers[p][w] as usize;
            let mut dests = NEIGHBOURS[from] & !blocked & state.climbable(state.height(from));
            while dests != 0 {
                let to = dests.trailing_zeros() as usize;
                dests &= dests - 1;
                let mut cells = state.workers[p];
                cells[w] = to as u8;
                let v = self.part(state, cells, km, usize::MAX) + other;
                best = Some(match best {
                    None => v,
                    Some(b) if maximize => b.max(v),
                    Some(b) => b.min(v),
                });
            }
        }
        best
    }

    fn frontier2_value(
        &self,
        state: &SantoriniState,
        root: Player,
        maximize: bool,
        alpha: f64,
        beta: f64,
    ) -> Option<f64> {
        // One copy per side to move, so the many comparisons do not test `maximize` each time.
        if state.stepped() {
            None
        } else if maximize {
            self.frontier2::<true>(state, root, alpha, beta)
        } else {
            self.frontier2::<false>(state, root, alpha, beta)
        }
    }

    fn move_priority(&self, state: &SantoriniState, action: Action) -> i32 {
        height_priority(state, action)
    }

    fn move_priorities(&self, state: &SantoriniState, actions: &[Action], out: &mut Vec<i32>) {
        height_priorities(state, actions, out);
    }

    fn has_move_priority(&self) -> bool {
        true
    }
}

/// `linear8` split by the side to move: the first eight weights value a position for a player
/// who is to move in it, the last eight for a player whose opponent is. A fixed player's value
/// cannot tell whose turn it is, yet the same workers are worth more to the side about to move
/// (a worker on level 2 beside a level-3 tower wins only if its side moves first). Each half is
/// a [`Linear8`], and every position a shortcut values (all children of a node, all
/// grandchildren) has the same side to move, so `linear8`'s shortcuts serve unchanged.
#[derive(Clone, Debug)]
pub struct Tempo16 {
    weights: [f64; 16],
    /// The weights for the valued player to move, and for the opponent to move.
    on: Linear8,
    off: Linear8,
}

impl Tempo16 {
    pub fn new(weights: [f64; 16]) -> Self {
        let half = |k: usize| -> [f64; 8] { std::array::from_fn(|i| weights[8 * k + i]) };
        Tempo16 { weights, on: Linear8::new(half(0)), off: Linear8::new(half(1)) }
    }

    /// The half that values positions whose mover is `mover` for `player`.
    fn half(&self, mover: Option<Player>, player: Player) -> &Linear8 {
        if mover == Some(player) { &self.on } else { &self.off }
    }
}

impl Evaluator<SantoriniState> for Tempo16 {
    fn evaluate(&self, state: &SantoriniState, player: Player) -> f64 {
        self.half(state.current_player(), player).evaluate(state, player)
    }

    /// [`linear8_features`] in the half of the side to move (the other half zero).
    fn features(&self, state: &SantoriniState, player: Player, out: &mut Vec<f64>) -> bool {
        out.clear();
        out.resize(16, 0.0);
        let at = if state.current_player() == Some(player) { 0 } else { 8 };
        out[at..at + 8].copy_from_slice(&linear8_features(state, player));
        true
    }

    fn weights(&self) -> Vec<f64> {
        self.weights.to_vec()
    }

    /// A move changes the side to move, so a child is valued by the other half: its change is
    /// the other half's bound plus the two halves' difference on this position (the larger for
    /// either player, as the bound serves both).
    fn move_gain_bound(&self, state: &SantoriniState) -> Option<f64> {
        let gain = self.on.move_gain_bound(state)?.max(self.off.move_gain_bound(state)?);
        let differ = |p: Player| (self.on.evaluate(state, p) - self.off.evaluate(state, p)).abs();
        Some(gain + differ(0).max(differ(1)))
    }

    fn frontier_value(&self, state: &SantoriniState, root: Player, maximize: bool) -> Option<f64> {
        // Every child has the opponent of the mover to move.
        let next = state.current_player().map(|m| 1 - m);
        self.half(next, root).frontier_value(state, root, maximize)
    }

    fn frontier2_value(
        &self,
        state: &SantoriniState,
        root: Player,
        maximize: bool,
        alpha: f64,
        beta: f64,
    ) -> Option<f64> {
        // Every grandchild has the mover to move again.
        self.half(state.current_player(), root).frontier2_value(state, root, maximize, alpha, beta)
    }

    // Move ordering is linear8's, whatever the weights.
    fn move_priority(&self, state: &SantoriniState, action: Action) -> i32 {
        self.on.move_priority(state, action)
    }

    fn move_priorities(&self, state: &SantoriniState, actions: &[Action], out: &mut Vec<i32>) {
        self.on.move_priorities(state, actions, out);
    }

    fn has_move_priority(&self) -> bool {
        self.on.has_move_priority()
    }
}

impl Linear8 {
    /// [`Evaluator::frontier2_value`] for a maximising (`MAXIMIZE`) or minimising mover.
    fn frontier2<const MAXIMIZE: bool>(
        &self,
        state: &SantoriniState,
        root: Player,
        alpha: f64,
        beta: f64,
    ) -> Option<f64> {
        let maximize = MAXIMIZE;
        // Two plies without a search: for each move of the mover's worker, the reply values of
        // the opponent's moves are computed once, and each build changes only the replies onto
        // the built cell. Every position where the game could end within the two plies is left
        // to the search (None), so the value is exactly what the search would find.
        if state.placed < 4 || state.official {
            return None;
        }
        let m = state.mover();
        let o = 1 - m;
        if can_win_next(state, m) {
            return None;
        }
        // No reply may win: no opponent worker on level 2 next to a cell of level 2 or more
        // (a build, or a worker leaving it, could turn that into a climb to 3).
        if state.workers(o).any(|c| state.height(c) == 2 && NEIGHBOURS[c] & !state.dome & state.level[1] != 0) {
            return None;
        }
        let workers_all = state.worker_bits[0] | state.worker_bits[1];
        let blocked = state.dome | workers_all;
        if !at_least(reach(state, o), 3) {
            return None; // one turn blocks at most two cells: with three the opponent can move
        }
        // The value is linear: the mover's part plus the opponent's part, each depending only
        // on that side's workers and the heights under them. So the opponent's replies are
        // valued once, not once per move of the mover: a move only takes the reply onto its
        // destination away (and frees its origin), and a build only changes the replies onto the
        // built cell. Sums are grouped as in `evaluate`, so the result is exactly the search's.
        let (km, ko) = if root == m { (0, 1) } else { (1, 0) };
        // The opponent's choice: the lowest root value if the mover maximises, else the highest.
        let o_better = |a: f64, b: f64| if maximize { a < b } else { a > b };
        let o_cells = state.workers[o];
        let o_heights = o_cells.map(|c| state.height(c as usize));
        let none = if maximize { f64::INFINITY } else { f64::NEG_INFINITY };
        let reply_part = |cells: [u8; 2], raised: usize| self.part(state, cells, ko, raised);
        // The best reply part per destination cell that neither worker of the mover stands on,
        // at today's heights; the three best cells, best first (a move and a build rule out two).
        let mut cell_best = [none; CELLS];
        let mut reached = 0u32;
        for j in 0..2 {
            let mut ds = NEIGHBOURS[o_cells[j] as usize] & !blocked & state.climbable(o_heights[j]);
            reached |= ds;
            while ds != 0 {
                let d = ds.trailing_zeros() as usize;
                ds &= ds - 1;
                let mut cells = o_cells;
                cells[j] = d as u8;
                let v = reply_part(cells, usize::MAX);
                if o_better(v, cell_best[d]) {
                    cell_best[d] = v;
                }
            }
        }
        let mut top = [(none, usize::MAX); 3];
        while reached != 0 {
            let d = reached.trailing_zeros() as usize;
            reached &= reached - 1;
            let mut entry = (cell_best[d], d);
            for slot in top.iter_mut() {
                if o_better(entry.0, slot.0) {
                    std::mem::swap(slot, &mut entry);
                }
            }
        }
        // Replies onto a cell one level higher than today (after a build there), by cell.
        let mut raised_known = 0u32;
        let mut raised = [none; CELLS];
        // Replies onto the cell each worker of the mover leaves, at its height.
        let from_reply: [f64; 2] = std::array::from_fn(|w| {
            let from = state.workers[m][w] as usize;
            let mut r = none;
            for j in 0..2 {
                if NEIGHBOURS[o_cells[j] as usize] >> from & 1 == 1 && state.height(from) <= o_heights[j] + 1 {
                    let mut cells = o_cells;
                    cells[j] = from as u8;
                    let v = reply_part(cells, usize::MAX);
                    if o_better(v, r) {
                        r = v;
                    }
                }
            }
            r
        });
        // The mover's moves with a bound on their value: whatever the build, the opponent keeps
        // the second best of the top replies the move leaves, so the value is at most (when
        // maximising) the mover's part plus that reply. Moves are taken best bound first, and
        // once no bound beats the best value the rest cannot matter (their terminal replies
        // would only make them worse), so they are not expanded.
        let mut moves = [(0.0, 0u8, 0u8, 0.0); 16];
        let mut count = 0;
        for w in 0..2 {
            let from = state.workers[m][w] as usize;
            let mut dests = NEIGHBOURS[from] & !blocked & state.climbable(state.height(from));
            while dests != 0 {
                let to = dests.trailing_zeros() as usize;
                dests &= dests - 1;
                let mut m_cells = state.workers[m];
                m_cells[w] = to as u8;
                let m_part = self.part(state, m_cells, km, usize::MAX);
                let second = top.iter().filter(|e| e.1 != to).nth(1).map_or(none, |e| e.0);
                moves[count] = (m_part + second, w as u8, to as u8, m_part);
                count += 1;
            }
        }
        let mut best = -none;
        for i in 0..count {
            let mut k = i;
            for j in i + 1..count {
                if (maximize && moves[j].0 > moves[k].0) || (!maximize && moves[j].0 < moves[k].0) {
                    k = j;
                }
            }
            moves.swap(i, k);
            let (bound, w, to, m_part) = moves[i];
            if (maximize && bound <= best) || (!maximize && bound >= best) {
                break;
            }
            let (w, to) = (w as usize, to as usize);
            let from = state.workers[m][w] as usize;
            let mut m_cells = state.workers[m];
            m_cells[w] = to as u8;
            let occupied = (workers_all & !(1 << from)) | 1 << to;
            // With four cells to move to before the build, three remain after it (a build
            // changes one cell), so the check per build below is needed only with fewer.
            let reach_before = m_cells.iter().fold(0u32, |acc, &c| {
                let c = c as usize;
                acc | (NEIGHBOURS[c] & !(state.dome | occupied) & state.climbable(state.height(c)))
            });
            let check_reach = !at_least(reach_before, 4);
            let mut builds = NEIGHBOURS[to] & !(state.dome | occupied);
            while builds != 0 {
                let b = builds.trailing_zeros() as usize;
                builds &= builds - 1;
                let hb = state.height(b);
                let mut reply = top.iter().find(|e| e.1 != to && e.1 != b).map_or(none, |e| e.0);
                if b != from && o_better(from_reply[w], reply) {
                    reply = from_reply[w];
                }
                if hb + 1 < 4 {
                    if raised_known >> b & 1 == 0 {
                        raised_known |= 1 << b;
                        for j in 0..2 {
                            if NEIGHBOURS[o_cells[j] as usize] >> b & 1 == 1 && hb <= o_heights[j] {
                                let mut cells = o_cells;
                                cells[j] = b as u8;
                                let v = reply_part(cells, b);
                                if o_better(v, raised[b]) {
                                    raised[b] = v;
                                }
                            }
                        }
                    }
                    if o_better(raised[b], reply) {
                        reply = raised[b];
                    }
                }
                if reply == none {
                    return None; // the opponent would have no move
                }
                // The mover must keep a move after any reply (again: a turn blocks two).
                if check_reach && !Self::keeps_reach(state, m_cells, occupied, b, hb) {
                    return None;
                }
                let value = m_part + reply;
                if (maximize && value > best) || (!maximize && value < best) {
                    best = value;
                }
            }
            if (maximize && best >= beta) || (!maximize && best <= alpha) {
                return Some(best);
            }
        }
        Some(best)
    }

    /// Whether the mover's workers on `cells` have at least three cells to move to after a build
    /// on `b` (height `hb` before it).
    fn keeps_reach(state: &SantoriniState, cells: [u8; 2], occupied: u32, b: usize, hb: u8) -> bool {
        let mut level = state.level;
        let mut dome = state.dome;
        if hb < 3 {
            level[hb as usize] |= 1 << b;
        } else {
            dome |= 1 << b;
        }
        let blocked_after = dome | occupied;
        let reach = cells.iter().fold(0u32, |acc, &c| {
            let c = c as usize;
            let climbable = match state.height(c) {
                0 => !level[1],
                1 => !level[2],
                _ => u32::MAX,
            };
            acc | (NEIGHBOURS[c] & !blocked_after & climbable)
        });
        at_least(reach, 3)
    }

    /// [`Self::part`] during placement: `linear8`'s centrality feature is the mean over the
    /// workers placed so far; the table's shares just add up.
    #[cold]
    fn part_in_placement(&self, state: &SantoriniState, cells: [u8; 2], k: usize, raised: usize) -> f64 {
        if self.layout == Layout::Table36 {
            let placed = cells.iter().map(|&c| c as usize).filter(|&c| c < CELLS);
            return placed.map(|c| self.share[k][state.height(c) as usize + (c == raised) as usize][c]).sum();
        }
        let f = Self::side_raised(state, cells, raised);
        f.iter().zip(&self.weights[4 * k..4 * k + 4]).map(|(f, w)| f * w).sum()
    }

    /// One side's four features (see [`linear8_features`]) with its workers on `cells`, the
    /// cell `raised` one level higher than in `state` (a build).
    fn side_raised(state: &SantoriniState, cells: [u8; 2], raised: usize) -> [f64; 4] {
        let mut f = [0.0; 4];
        let (mut placed, mut distance) = (0u32, 0u32);
        for c in cells {
            if c as usize >= CELLS {
                continue;
            }
            let h = state.height(c as usize) as usize + (c as usize == raised) as usize;
            if h < 3 {
                f[h] += 0.5;
            }
            placed += 1;
            distance += CENTRE_DISTANCE[c as usize] as u32;
        }
        if placed > 0 {
            f[3] = distance as f64 / placed as f64 / 2.0;
        }
        f
    }
}

/// A linear evaluator on a feature function: the value is the features' weighted sum, moves are
/// ordered by the report's height heuristic. `linear22` (the report's extended evaluator) and
/// `gods` are this shape; `linear8` and `table36` add search shortcuts ([`Linear8`]).
#[derive(Clone, Debug)]
pub struct Linear<const N: usize> {
    features: fn(&SantoriniState, Player) -> [f64; N],
    /// One weight per feature.
    pub weights: [f64; N],
}

impl<const N: usize> Linear<N> {
    pub fn new(features: fn(&SantoriniState, Player) -> [f64; N], weights: [f64; N]) -> Self {
        Linear { features, weights }
    }
}

/// The report's 22-feature extended linear evaluator ([`linear22_features`]).
pub type Linear22 = Linear<22>;

impl<const N: usize> Evaluator<SantoriniState> for Linear<N> {
    fn features(&self, state: &SantoriniState, player: Player, out: &mut Vec<f64>) -> bool {
        out.clear();
        out.extend_from_slice(&(self.features)(state, player));
        true
    }

    fn weights(&self) -> Vec<f64> {
        self.weights.to_vec()
    }

    fn evaluate(&self, state: &SantoriniState, player: Player) -> f64 {
        (self.features)(state, player).iter().zip(&self.weights).map(|(f, w)| f * w).sum()
    }

    fn move_priority(&self, state: &SantoriniState, action: Action) -> i32 {
        height_priority(state, action)
    }

    fn move_priorities(&self, state: &SantoriniState, actions: &[Action], out: &mut Vec<i32>) {
        height_priorities(state, actions, out);
    }

    fn has_move_priority(&self) -> bool {
        true
    }
}

/// [`linear8_features`] and both players' winning moves as the rules find them (see the `gods`
/// evaluator's description); in the base game the threat features read the base rules too.
pub fn gods_features(state: &SantoriniState, player: Player) -> [f64; 10] {
    let mut f = [0.0; 10];
    f[..8].copy_from_slice(&linear8_features(state, player));
    let threats = |side: usize| {
        if state.stepped() {
            state.threats(side).min(2) as f64 / 2.0
        } else if state.placed == 4 && can_win_next(state, side) {
            0.5
        } else {
            0.0
        }
    };
    f[8] = threats(player);
    f[9] = threats(1 - player);
    f
}

/// Rules-based Santorini player; see [`GREEDY_INFO`].
pub struct GreedyAgent {
    rng: Rng,
    legal: Vec<Action>,
}

impl GreedyAgent {
    /// A greedy player breaking ties from `seed`.
    pub fn new(seed: u64) -> Self {
        GreedyAgent { rng: rng_from_seed(seed), legal: Vec::new() }
    }

    fn pick_best(&mut self, scored: &[(i32, Action)]) -> Action {
        let best = scored.iter().map(|s| s.0).max().expect("at least one move");
        let top: Vec<Action> = scored.iter().filter(|s| s.0 == best).map(|s| s.1).collect();
        top[self.rng.random_range(0..top.len())]
    }
}

impl Agent<SantoriniState> for GreedyAgent {
    fn spec(&self) -> String {
        GREEDY_INFO.name.into()
    }

    fn act(&mut self, state: &SantoriniState, _budget: &Budget) -> Result<Action, Error> {
        let Some(me) = state.current_player() else {
            return Err(Error::Agent { agent: GREEDY_INFO.name.into(), reason: "no decision to make".into() });
        };
        state.legal_actions(&mut self.legal);
        if state.stepped() && state.placed == 4 {
            // With gods: the step the move ordering likes best (a win first, then climbing).
            let scored: Vec<(i32, Action)> = self.legal.iter().map(|&a| (state.step_priority(a), a)).collect();
            return Ok(self.pick_best(&scored));
        }
        if let Some(&win) = self.legal.iter().find(|&&a| a >= WIN_BASE) {
            return Ok(win);
        }
        let mut scored = Vec::with_capacity(self.legal.len());
        for &a in &self.legal {
            let score = match state.decode(a) {
                Decoded::Place(cell) => -(centre_distance(cell) as i32),
                Decoded::Turn { to, .. } => {
                    let mut next = *state;
                    next.apply_unchecked(a);
                    // Leaving the opponent a winning climb is the worst move; climbing the best.
                    let unsafe_move = next.turn() != meeple_game::Turn::Terminal && can_win_next(&next, 1 - me);
                    if unsafe_move { -100 } else { state.height(to) as i32 }
                }
            };
            scored.push((score, a));
        }
        Ok(self.pick_best(&scored))
    }
}
