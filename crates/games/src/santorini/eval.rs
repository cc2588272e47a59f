//! Santorini knowledge from the report (seed 004): the 8-feature linear evaluator with its hand
//! weights, the 22-feature extended set, move ordering by the mover's height, and a greedy
//! rules-based agent.

use super::{CELLS, Decoded, NEIGHBOURS, SantoriniState, WIN_BASE};
use meeple_game::{
    Action, Agent, AgentInfo, BoxedEvaluator, Budget, Error, Evaluator, ParamInfo, Player, Rng, Spec, State,
    rng_from_seed,
};
use rand::RngExt;

const WEIGHTS_PARAM: &[ParamInfo] = &[ParamInfo {
    name: "weights",
    default: "",
    accepts: "comma-separated numbers in brackets, one per feature",
    help: "feature weights (default: the hand weights)",
}];

pub(crate) const EVALUATOR_INFOS: [AgentInfo; 2] = [
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
];

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
        let (r, c) = ((cell / 5) as i32, (cell % 5) as i32);
        let (dr, dc) = ((r - 2).unsigned_abs(), (c - 2).unsigned_abs());
        t[cell] = if dr > dc { dr } else { dc } as u8;
        cell += 1;
    }
    t
};

fn weights_from<const N: usize>(spec: &Spec, subject: &str, default: [f64; N]) -> Result<[f64; N], Error> {
    let o = spec.options(subject, WEIGHTS_PARAM)?;
    let raw: String = o.get("weights")?;
    if raw.is_empty() {
        return Ok(default);
    }
    let values: Result<Vec<f64>, _> = raw.split(',').map(|v| v.trim().parse::<f64>()).collect();
    match values {
        Ok(v) if v.len() == N && v.iter().all(|x| x.is_finite()) => Ok(v.try_into().expect("length checked")),
        _ => Err(Error::BadValue {
            subject: subject.to_string(),
            key: "weights".into(),
            value: raw,
            expected: format!(
                "{N} comma-separated numbers, e.g. weights=({})",
                default.map(|x| x.to_string()).join(",")
            ),
        }),
    }
}

pub(crate) fn make_evaluator(spec: &Spec) -> Option<Result<BoxedEvaluator<SantoriniState>, Error>> {
    match spec.name.as_str() {
        "linear8" => Some(
            weights_from(spec, "evaluator linear8", LINEAR8_WEIGHTS).map(|w| Box::new(Linear8 { weights: w }) as _),
        ),
        "linear22" => Some(
            weights_from(spec, "evaluator linear22", linear22_default_weights())
                .map(|w| Box::new(Linear22 { weights: w }) as _),
        ),
        _ => None,
    }
}

/// The report's move-ordering heuristic: the mover's squared worker heights after the move (a
/// winning climb scores highest). Placements go centre first.
fn height_priority(state: &SantoriniState, action: Action) -> i32 {
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

/// Whether every move from `state` leaves the game running: the mover has no winning climb and
/// the opponent keeps a move whatever happens (one turn blocks at most two cells: the one the
/// worker steps onto and the one it builds on).
fn quiet(state: &SantoriniState) -> bool {
    let Some(me) = state.current_player() else { return false };
    if state.placed < 4 || state.official || can_win_next(state, me) {
        return false;
    }
    let blocked = state.dome | state.worker_bits[0] | state.worker_bits[1];
    let reachable =
        state.workers(1 - me).fold(0u32, |m, c| m | (NEIGHBOURS[c] & !blocked & state.climbable(state.height(c))));
    reachable.count_ones() >= 3
}

/// The most one move can raise the mover's linear value: a worker climbs one level (the best
/// weight step among level 0 to 1 and 1 to 2, half weight as a feature counts 2 workers) and
/// moves one step nearer the centre (a quarter of the centrality weight). Builds never change a
/// worker's height. The opponent's features do not move.
fn linear_gain(own: &[f64], centrality: f64) -> f64 {
    let climb = (0.5 * (own[1] - own[0])).max(0.5 * (own[2] - own[1])).max(0.0);
    climb + 0.25 * centrality.abs()
}

/// The 8 features for `player` then the opponent: workers on level 0, 1, 2 (each /2) and mean
/// centre distance (/2).
#[cfg_attr(not(test), allow(dead_code))] // the definition; evaluation uses `Linear8::side`
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

/// The report's 8-feature linear evaluator.
#[derive(Clone, Debug)]
pub struct Linear8 {
    /// One weight per feature of [`linear8_features`].
    pub weights: [f64; 8],
}

impl Default for Linear8 {
    fn default() -> Self {
        Linear8 { weights: LINEAR8_WEIGHTS }
    }
}

impl Evaluator<SantoriniState> for Linear8 {
    fn evaluate(&self, state: &SantoriniState, player: Player) -> f64 {
        self.combine(Self::side(state, state.workers[player]), Self::side(state, state.workers[1 - player]))
    }

    fn move_gain_bound(&self, state: &SantoriniState) -> Option<f64> {
        // The mover's features weigh w[0..4] in their own value and w[4..8] in the opponent's.
        let w = &self.weights;
        let bound = linear_gain(&w[0..3], w[3]).max(linear_gain(&[-w[4], -w[5], -w[6]], w[7]));
        quiet(state).then_some(bound)
    }

    fn frontier_value(&self, state: &SantoriniState, root: Player, maximize: bool) -> Option<f64> {
        // Builds never touch a square a worker stands on, so a child's value depends only on
        // which worker moved where: at most 16 evaluations instead of every move and build.
        if !quiet(state) {
            return None;
        }
        let p = state.mover();
        // Only the mover's features change, so the opponent's are computed once.
        let other = Self::side(state, state.workers[1 - p]);
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
                let moved = Self::side(state, cells);
                let v = if root == p { self.combine(moved, other) } else { self.combine(other, moved) };
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
        let o_reach =
            state.workers(o).fold(0u32, |acc, c| acc | (NEIGHBOURS[c] & !blocked & state.climbable(state.height(c))));
        if o_reach.count_ones() < 3 {
            return None; // one turn blocks at most two cells: with three the opponent can move
        }
        let value = |m_side: [f64; 4], o_side: [f64; 4]| {
            if root == m { self.combine(m_side, o_side) } else { self.combine(o_side, m_side) }
        };
        // The opponent's choice: the lowest root value if the mover maximises, else the highest.
        let o_better = |a: f64, b: f64| if maximize { a < b } else { a > b };
        let o_cells = state.workers[o];
        let o_heights = o_cells.map(|c| state.height(c as usize));
        let none = if maximize { f64::INFINITY } else { f64::NEG_INFINITY };
        let mut best = -none;
        for w in 0..2 {
            let from = state.workers[m][w] as usize;
            let mut dests = NEIGHBOURS[from] & !blocked & state.climbable(state.height(from));
            while dests != 0 {
                let to = dests.trailing_zeros() as usize;
                dests &= dests - 1;
                let mut m_cells = state.workers[m];
                m_cells[w] = to as u8;
                let m_side = Self::side(state, m_cells);
                let occupied = (workers_all & !(1 << from)) | 1 << to;
                // The two best reply destinations (distinct cells) before any build.
                let (mut b1, mut c1, mut b2, mut c2) = (none, usize::MAX, none, usize::MAX);
                for j in 0..2 {
                    let oc = o_cells[j] as usize;
                    let mut ds = NEIGHBOURS[oc] & !state.dome & !occupied & state.climbable(o_heights[j]);
                    while ds != 0 {
                        let d = ds.trailing_zeros() as usize;
                        ds &= ds - 1;
                        let mut cells = o_cells;
                        cells[j] = d as u8;
                        let v = value(m_side, Self::side(state, cells));
                        if d == c1 {
                            if o_better(v, b1) {
                                b1 = v;
                            }
                        } else if o_better(v, b1) {
                            (b2, c2) = (b1, c1);
                            (b1, c1) = (v, d);
                        } else if d == c2 {
                            if o_better(v, b2) {
                                b2 = v;
                            }
                        } else if o_better(v, b2) {
                            (b2, c2) = (v, d);
                        }
                    }
                }
                let mut builds = NEIGHBOURS[to] & !(state.dome | (workers_all & !(1 << from)) | 1 << to);
                while builds != 0 {
                    let b = builds.trailing_zeros() as usize;
                    builds &= builds - 1;
                    let hb = state.height(b);
                    let mut reply = if b == c1 { b2 } else { b1 };
                    // Replies onto the built cell, at its new height.
                    if hb + 1 < 4 {
                        for j in 0..2 {
                            if NEIGHBOURS[o_cells[j] as usize] >> b & 1 == 1 && hb <= o_heights[j] {
                                let mut cells = o_cells;
                                cells[j] = b as u8;
                                let v = value(m_side, Self::side_raised(state, cells, b));
                                if o_better(v, reply) {
                                    reply = v;
                                }
                            }
                        }
                    }
                    if reply == none {
                        return None; // the opponent would have no move
                    }
                    // The mover must keep a move after any reply (again: a turn blocks two).
                    let mut level = state.level;
                    let mut dome = state.dome;
                    if hb < 3 {
                        level[hb as usize] |= 1 << b;
                    } else {
                        dome |= 1 << b;
                    }
                    let blocked_after = dome | occupied | state.worker_bits[o];
                    let m_reach = m_cells.iter().fold(0u32, |acc, &c| {
                        let c = c as usize;
                        let climbable = match state.height(c) {
                            0 => !level[1],
                            1 => !level[2],
                            _ => u32::MAX,
                        };
                        acc | (NEIGHBOURS[c] & !blocked_after & climbable)
                    });
                    if m_reach.count_ones() < 3 {
                        return None;
                    }
                    if (maximize && reply > best) || (!maximize && reply < best) {
                        best = reply;
                    }
                }
                if (maximize && best >= beta) || (!maximize && best <= alpha) {
                    return Some(best);
                }
            }
        }
        Some(best)
    }

    fn move_priority(&self, state: &SantoriniState, action: Action) -> i32 {
        height_priority(state, action)
    }

    fn has_move_priority(&self) -> bool {
        true
    }
}

impl Linear8 {
    /// One side's four features (see [`linear8_features`]) with its workers on `cells`.
    fn side(state: &SantoriniState, cells: [u8; 2]) -> [f64; 4] {
        Self::side_raised(state, cells, usize::MAX)
    }

    /// [`Self::side`] with the cell `raised` one level higher than in `state` (a build).
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

    /// The weighted sum of the player's and the opponent's features, in the features' order.
    fn combine(&self, own: [f64; 4], opponent: [f64; 4]) -> f64 {
        let w = &self.weights;
        own[0] * w[0]
            + own[1] * w[1]
            + own[2] * w[2]
            + own[3] * w[3]
            + opponent[0] * w[4]
            + opponent[1] * w[5]
            + opponent[2] * w[6]
            + opponent[3] * w[7]
    }
}

/// The report's 22-feature extended linear evaluator.
#[derive(Clone, Debug)]
pub struct Linear22 {
    /// One weight per feature of [`linear22_features`].
    pub weights: [f64; 22],
}

impl Evaluator<SantoriniState> for Linear22 {
    fn evaluate(&self, state: &SantoriniState, player: Player) -> f64 {
        linear22_features(state, player).iter().zip(&self.weights).map(|(f, w)| f * w).sum()
    }

    fn move_priority(&self, state: &SantoriniState, action: Action) -> i32 {
        height_priority(state, action)
    }

    fn has_move_priority(&self) -> bool {
        true
    }
}

/// Whether `player` could climb onto level 3 on their next move.
fn can_win_next(state: &SantoriniState, player: Player) -> bool {
    let blocked = state.dome | state.worker_bits[0] | state.worker_bits[1];
    state.workers(player).any(|c| state.height(c) == 2 && NEIGHBOURS[c] & !blocked & state.level[2] != 0)
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
