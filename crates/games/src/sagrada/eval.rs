//! Sagrada knowledge from the thesis (seed 003): the board evaluation (completed points,
//! completable and uncompletable public-objective patterns, uncompletable spaces), the minimax
//! heuristic with its five tuned weights, the heuristic filter and sort, and the rules-based
//! agent with its two strategies.

use super::cards::{self, CELLS, COL_MASKS, COLOURS, OBJECTIVES, Objective, ROW_MASKS};
use super::{Move, Pending, SagradaState, Stage, Window, decode};
use meeple_game::{
    Action, Agent, AgentInfo, Budget, Error, Evaluator, ParamInfo, Player, Rng, Spec, State, Turn, rng_from_seed,
};
use rand::RngExt;

const WEIGHT_PARAMS: &[ParamInfo] = &[
    ParamInfo {
        name: "opponent",
        default: "9.83724229656198",
        accepts: "a number > 0",
        help: "an opponent's value counts 1/opponent against ours (OpponentInfluencingFactor)",
    },
    ParamInfo {
        name: "power",
        default: "3.1133889400588606",
        accepts: "a number",
        help: "completable pattern reward: points x (dice placed + 1)^power (PuocCompletablePower)",
    },
    ParamInfo {
        name: "dead",
        default: "373",
        accepts: "a number",
        help: "penalty per empty space no die can fill (MinusPointsPerUncompletableField)",
    },
    ParamInfo {
        name: "points",
        default: "416",
        accepts: "a number",
        help: "weight of points scored so far (CompletedPointsWeight)",
    },
    ParamInfo {
        name: "lost",
        default: "7",
        accepts: "a number",
        help: "penalty per public-objective point made impossible (MinusPointsPerUncompletablePuocPoints)",
    },
    ParamInfo {
        name: "weights",
        default: "",
        accepts: "a file path",
        help: "read the weights from a file written by `meeple tune` (key=value,...); options given here override it",
    },
];

pub(crate) const HEURISTIC_INFO: AgentInfo = AgentInfo {
    name: "thesis",
    about: "the thesis's minimax heuristic: points x 416 + completable public-objective patterns + ... - 373 per \
            unfillable space - 7 per lost objective point, minus the opponents' value / 9.84; sorts moves by the \
            thesis's heuristic sort and filters moves that kill a neighbouring space (heuristic filter)",
    params: WEIGHT_PARAMS,
};

pub(crate) const RULES_INFO: AgentInfo = AgentInfo {
    name: "sagrada-rules",
    about: "the thesis's rules-based agent: places the die that creates the fewest unfillable spaces and best \
            advances the public objectives (bonus for its private colour); all_moves also uses tool cards",
    params: &[ParamInfo {
        name: "strategy",
        default: "only_dtfm",
        accepts: "only_dtfm or all_moves",
        help: "only_dtfm never uses tool cards; all_moves first tries relocations that free spaces, then tool \
               placements, then random tool cards",
    }],
};

/// The five weights of the thesis's heuristic (Table 8.3 defaults).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeuristicWeights {
    /// Opponents' heuristic values count `1 / opponent` against the player's own.
    pub opponent: f64,
    /// Exponent of the completable-pattern reward.
    pub power: f64,
    /// Penalty per unfillable empty space.
    pub dead: f64,
    /// Weight of points scored so far.
    pub points: f64,
    /// Penalty per public-objective point that can no longer be scored.
    pub lost: f64,
}

impl Default for HeuristicWeights {
    fn default() -> Self {
        HeuristicWeights {
            opponent: 9.83724229656198,
            power: 3.1133889400588606,
            dead: 373.0,
            points: 416.0,
            lost: 7.0,
        }
    }
}

impl HeuristicWeights {
    /// The names of the weights, in the order of [`HeuristicWeights::to_vec`].
    pub const NAMES: [&'static str; 5] = ["opponent", "power", "dead", "points", "lost"];

    /// The weights as a vector, in [`HeuristicWeights::NAMES`] order.
    pub fn to_vec(&self) -> [f64; 5] {
        [self.opponent, self.power, self.dead, self.points, self.lost]
    }

    /// Weights from a vector in [`HeuristicWeights::NAMES`] order.
    pub fn from_slice(v: &[f64; 5]) -> Self {
        HeuristicWeights { opponent: v[0], power: v[1], dead: v[2], points: v[3], lost: v[4] }
    }

    /// The weights as spec options (`opponent=9.8,power=3.1,...`): the weight file format.
    pub fn to_options(&self) -> String {
        Self::NAMES.iter().zip(self.to_vec()).map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join(",")
    }

    /// Reads `thesis:...` options: a `weights=FILE` first, then the weights given inline.
    pub fn from_spec(spec: &Spec) -> Result<Self, Error> {
        let o = spec.options("evaluator thesis", WEIGHT_PARAMS)?;
        let file: String = o.get("weights")?;
        let mut v =
            if file.is_empty() { HeuristicWeights::default().to_vec() } else { Self::from_file(&file)?.to_vec() };
        for (i, name) in Self::NAMES.iter().enumerate() {
            if o.given(name) || file.is_empty() {
                let x: f64 = o.get(name)?;
                // Each weight is checked under its own name; the opponent weight divides.
                if !x.is_finite() || (i == 0 && x <= 0.0) {
                    return Err(o.bad_value(name, &o.get::<String>(name)?));
                }
                v[i] = x;
            }
        }
        Ok(HeuristicWeights::from_slice(&v))
    }

    /// Reads a weight file written by `meeple tune`: `name=value,...` on one line (at most
    /// 64 KB; anything longer is not a weight file).
    fn from_file(path: &str) -> Result<Self, Error> {
        let bad = |expected: String| Error::BadValue {
            subject: "evaluator thesis".into(),
            key: "weights".into(),
            value: path.to_string(),
            expected,
        };
        let file = meeple_game::access::agent_file(path, "weights file")?;
        let text = meeple_game::limits::read_text(&file, 64 << 10, "weight file")
            .map_err(|e| bad(format!("a readable weight file ({e})")))?;
        let text = text.trim();
        let example = HeuristicWeights::default().to_options();
        if text.is_empty() {
            return Err(bad(format!("a weight file with name=value pairs, like {example}; this one is empty")));
        }
        let inner: Spec = format!("thesis:{text}")
            .parse()
            .map_err(|_| bad(format!("a weight file with name=value pairs, like {example}")))?;
        if inner.get("weights").is_some() {
            return Err(bad("a weight file that does not name another weight file".into()));
        }
        HeuristicWeights::from_spec(&inner).map_err(|e| bad(format!("a weight file with valid weights ({e})")))
    }
}

/// One window seen through the public objectives, as the thesis's `EvalState` sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BoardEvaluation {
    /// Points if the game ended now (objectives, private, tokens, minus empty spaces).
    pub points: i32,
    /// Public-objective points scored so far.
    pub public_points: i32,
    /// Sum over completable patterns of points x (dice placed + 1)^power.
    pub completable: f64,
    /// Points of patterns that can no longer be completed.
    pub uncompletable_points: i32,
    /// Empty spaces no die can fill.
    pub dead_spaces: u32,
}

fn powers(power: f64) -> [f64; 8] {
    std::array::from_fn(|k| (k as f64).powf(power))
}

/// The completable-pattern powers the observation uses: (dice placed + 1)^2.
pub(crate) const OBSERVATION_POWERS: [f64; 8] = [0.0, 1.0, 4.0, 9.0, 16.0, 25.0, 36.0, 49.0];

/// Evaluates `player`'s window for the public objectives in play.
pub fn evaluate_board(s: &SagradaState, player: Player, pow: &[f64; 8]) -> BoardEvaluation {
    let w = s.window(player);
    let dead = w.dead_spaces();
    let mut e = BoardEvaluation { points: s.score(player), dead_spaces: dead.count_ones(), ..Default::default() };
    for &o in s.objectives() {
        let objective = OBJECTIVES[o as usize];
        let sv = objective.points();
        e.public_points += objective.score(&w.colour, &w.value);
        // Each completable pattern: (dice per pattern, dice still missing).
        let mut add = |per: u32, missing: u32| {
            let placed = per.saturating_sub(missing) as usize;
            e.completable += sv as f64 * pow[(placed + 1).min(7)];
        };
        match objective {
            Objective::RowColourVariety
            | Objective::RowShadeVariety
            | Objective::ColumnColourVariety
            | Objective::ColumnShadeVariety => {
                let colour = matches!(objective, Objective::RowColourVariety | Objective::ColumnColourVariety);
                let rows = matches!(objective, Objective::RowColourVariety | Objective::RowShadeVariety);
                let (lines, per): (&[u32], u32) = if rows { (&ROW_MASKS, 5) } else { (&COL_MASKS, 4) };
                for &line in lines {
                    match line_state(w, line, dead, colour) {
                        Line::Done => {}
                        Line::Open(missing) => add(per, missing),
                        Line::Lost => e.uncompletable_points += sv,
                    }
                }
            }
            Objective::LightShades | Objective::MediumShades | Objective::DeepShades => {
                let a = match objective {
                    Objective::LightShades => 0,
                    Objective::MediumShades => 2,
                    _ => 4,
                };
                let (na, nb) = (w.value[a].count_ones(), w.value[a + 1].count_ones());
                let (room_a, room_b) = (value_room(w, dead, a), value_room(w, dead, a + 1));
                let pairs = na.min(nb);
                let one_a = (nb - pairs).min(room_a);
                let one_b = (na - pairs).min(room_b);
                for _ in 0..one_a + one_b {
                    add(2, 1);
                }
                let free = (!w.occupied & !dead & cards::FULL).count_ones().saturating_sub(one_a + one_b);
                let two = (room_a - one_a).min(room_b - one_b).min(free / 2);
                for _ in 0..two {
                    add(2, 2);
                }
            }
            Objective::ShadeVariety | Objective::ColourVariety => {
                let planes: &[u32] = if objective == Objective::ShadeVariety { &w.value } else { &w.colour };
                let sets = planes.iter().map(|m| m.count_ones()).min().unwrap_or(0);
                let missing = planes.iter().filter(|m| m.count_ones() == sets).count() as u32;
                let free = (!w.occupied & !dead & cards::FULL).count_ones();
                if missing <= free {
                    add(planes.len() as u32, missing);
                } else {
                    e.uncompletable_points += sv;
                }
            }
            Objective::ColourDiagonals => {
                let empty = !w.occupied & !dead & cards::FULL;
                let r = w.restrictions();
                for c in 0..COLOURS {
                    // Empty spaces diagonal to a die of colour c where a die of colour c may go.
                    let fits = empty & !cards::orthogonal(w.colour[c]) & !(r.any_colour & !r.colour[c]);
                    for _ in 0..(cards::diagonal(w.colour[c]) & fits).count_ones() {
                        add(1, 1);
                    }
                }
            }
        }
    }
    e
}

enum Line {
    Done,
    Open(u32),
    Lost,
}

/// A row or column for a variety objective: done (counted in points), still open (with the
/// number of dice missing), or lost (a repeat, an unfillable space, or an empty space whose
/// restriction repeats an attribute already in the line).
fn line_state(w: &Window, line: u32, dead: u32, colour: bool) -> Line {
    let planes: &[u32] = if colour { &w.colour } else { &w.value };
    if dead & line != 0 || planes.iter().any(|p| (p & line).count_ones() > 1) {
        return Line::Lost;
    }
    let empty = line & !w.occupied;
    if empty == 0 {
        return Line::Done;
    }
    let r = w.restrictions();
    let required: &[u32] = if colour { &r.colour } else { &r.value };
    if planes.iter().zip(required).any(|(p, req)| p & line != 0 && req & empty != 0) {
        return Line::Lost;
    }
    Line::Open(empty.count_ones())
}

/// Empty spaces where a die of value index `v` could still go.
fn value_room(w: &Window, dead: u32, v: usize) -> u32 {
    let r = w.restrictions();
    (!w.occupied & !dead & cards::FULL & !cards::orthogonal(w.value[v]) & !(r.any_value & !r.value[v])).count_ones()
}

/// The thesis's minimax heuristic as a meeple evaluator (`eval=thesis`).
#[derive(Clone, Debug)]
pub struct SagradaHeuristic {
    weights: HeuristicWeights,
    pow: [f64; 8],
}

impl Default for SagradaHeuristic {
    fn default() -> Self {
        Self::new(HeuristicWeights::default())
    }
}

impl SagradaHeuristic {
    /// The heuristic with these weights.
    pub fn new(weights: HeuristicWeights) -> Self {
        SagradaHeuristic { weights, pow: powers(weights.power) }
    }

    pub(crate) fn from_spec(spec: &Spec) -> Result<Self, Error> {
        HeuristicWeights::from_spec(spec).map(Self::new)
    }

    /// The weights in use.
    pub fn weights(&self) -> HeuristicWeights {
        self.weights
    }

    /// One player's heuristic value (Algorithm 2 of the thesis).
    pub fn player_value(&self, s: &SagradaState, player: Player) -> f64 {
        let e = evaluate_board(s, player, &self.pow);
        let w = &self.weights;
        w.points * e.points as f64 + e.completable
            - w.lost * e.uncompletable_points as f64
            - w.dead * e.dead_spaces as f64
    }
}

/// Whether placing a die of these attributes on `cell` kills an orthogonally neighbouring empty
/// space whose restriction is the die's colour or value (the thesis's heuristic filter).
fn kills_neighbour(w: &Window, d: u8, cell: usize) -> bool {
    let r = w.restrictions();
    let near = cards::orthogonal(1 << cell) & !w.occupied;
    near & (r.colour[cards::colour(d)] | r.value[cards::value(d) as usize - 1]) != 0
}

impl Evaluator<SagradaState> for SagradaHeuristic {
    fn evaluate(&self, state: &SagradaState, player: Player) -> f64 {
        let mut v = 0.0;
        for p in 0..state.players() {
            let h = self.player_value(state, p);
            v += if p == player { h } else { -h / self.weights.opponent };
        }
        v.clamp(-90_000.0, 90_000.0)
    }

    /// The thesis's heuristic sort: die placements first; among them a die of the mover's
    /// private colour, then a space with a restriction, then the higher value.
    fn move_priority(&self, state: &SagradaState, action: Action) -> i32 {
        let Some(Move::Place { die, cell }) = decode(action) else {
            return 0;
        };
        let Some(p) = state.current_player() else {
            return 0;
        };
        let private = state.private_colour(p) == Some(cards::colour(die));
        let restricted = state.window(p).restrictions().of(cell as usize).is_some();
        1000 + 100 * private as i32 + 10 * restricted as i32 + cards::value(die) as i32
    }

    fn has_move_priority(&self) -> bool {
        true
    }

    /// The thesis's heuristic filter: drop moves that put a die orthogonally next to an empty
    /// space restricted to that die's colour or value (such a space can then never be filled).
    fn filter(&self, state: &SagradaState, actions: &mut Vec<Action>) {
        let Some(p) = state.current_player() else {
            return;
        };
        let w = state.window(p);
        actions.retain(|&a| match placed_die(w, a) {
            Some((d, cell, board)) => !kills_neighbour(&board, d, cell),
            None => true,
        });
    }
}

/// The die an action puts on the window, where, and the window it lands on (with a moved die
/// lifted first).
fn placed_die(w: &Window, a: Action) -> Option<(u8, usize, Window)> {
    Some(match decode(a)? {
        Move::Place { die, cell } | Move::Cork { die, cell } => (die, cell as usize, *w),
        Move::Grozing { die, up, cell } => (if up { die + 1 } else { die - 1 }, cell as usize, *w),
        Move::Grinding { die, cell } => (super::flip(die), cell as usize, *w),
        Move::Relocate { from, to, .. } => {
            let mut board = *w;
            let d = board.take(from as usize);
            (d, to as usize, board)
        }
        _ => return None,
    })
}

/// The rules-based strategies of the thesis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Only die placements; never a tool card.
    OnlyDtfm,
    /// Relocations that free spaces first, then placements (tool placements included), then a
    /// random tool card with a random step, then the first move.
    AllMoves,
}

/// The thesis's rules-based agent (`sagrada-rules`).
pub struct RulesAgent {
    strategy: Strategy,
    heuristic: SagradaHeuristic,
    rng: Rng,
    buf: Vec<Action>,
}

impl RulesAgent {
    /// An agent with `strategy` whose random choices come from `seed`.
    pub fn new(strategy: Strategy, seed: u64) -> Self {
        RulesAgent { strategy, heuristic: SagradaHeuristic::default(), rng: rng_from_seed(seed), buf: Vec::new() }
    }

    pub(crate) fn from_spec(spec: &Spec, seed: u64) -> Result<Self, Error> {
        let o = spec.options("agent sagrada-rules", RULES_INFO.params)?;
        let strategy = match o.get::<String>("strategy")?.as_str() {
            "only_dtfm" => Strategy::OnlyDtfm,
            "all_moves" => Strategy::AllMoves,
            other => return Err(o.bad_value("strategy", other)),
        };
        Ok(Self::new(strategy, seed))
    }

    /// The objective part of the rules-based evaluation (thesis 6.1, step 2).
    fn objective_value(&self, s: &SagradaState, p: Player) -> f64 {
        let e = evaluate_board(s, p, &self.heuristic.pow);
        let w = &self.heuristic.weights;
        w.points * e.public_points as f64 + e.completable - w.lost * e.uncompletable_points as f64
    }

    /// The best die-placing move among `moves` (thesis 6.1): fewest new unfillable spaces first,
    /// then the public-objective value plus a bonus for the private colour, preferring a move
    /// almost as good that scores clearly more points.
    fn best_placement(&self, s: &SagradaState, p: Player, moves: &[Action]) -> Option<(Action, f64)> {
        let points = |st: &SagradaState| {
            let w = st.window(p);
            st.score(p) + (CELLS as i32 - w.dice() as i32) - w.dead_spaces().count_ones() as i32
        };
        let base_points = points(s);
        let mut best: Option<(Action, f64, u32)> = None;
        for &a in moves {
            let Some((die, _, _)) = placed_die(s.window(p), a) else {
                continue;
            };
            let mut next = s.clone();
            next.apply_unchecked(a);
            let dead = next.window(p).dead_spaces().count_ones();
            if best.is_some_and(|b| dead > b.2) {
                continue;
            }
            let mut value = self.objective_value(&next, p);
            if s.private_colour(p) == Some(cards::colour(die)) {
                value += (cards::value(die) as f64 + 1.0) * 5.0;
            }
            let better = match best {
                None => true,
                Some((_, v, d)) => dead < d || value > v || (value + 10.0 > v && points(&next) > base_points + 3),
            };
            if better {
                best = Some((a, value, dead));
            }
        }
        best.map(|b| (b.0, b.1))
    }

    fn choose_pattern(&self, s: &SagradaState, p: Player, legal: &[Action]) -> Action {
        let colour = s.private_colour(p);
        let offers = s.offers[p];
        *legal
            .iter()
            .max_by_key(|&&a| {
                let k = (a - super::CHOOSE) as usize;
                let r = &cards::RESTRICTIONS[offers[k] as usize];
                // Most spaces of the private colour; ties go to the first offer.
                (colour.map_or(0, |c| r.colour[c].count_ones()), std::cmp::Reverse(k))
            })
            .expect("a pattern to choose")
    }

    fn choose(&mut self, s: &SagradaState) -> Result<Action, Error> {
        let p = s
            .current_player()
            .ok_or_else(|| Error::Agent { agent: "sagrada-rules".into(), reason: "no player to move".into() })?;
        let mut legal = std::mem::take(&mut self.buf);
        s.legal_actions(&mut legal);
        let action = self.decide(s, p, &legal);
        self.buf = legal;
        Ok(action)
    }

    fn decide(&mut self, s: &SagradaState, p: Player, legal: &[Action]) -> Action {
        if s.stage == Stage::Choose {
            return self.choose_pattern(s, p, legal);
        }
        match s.pending {
            Pending::None => {}
            Pending::PlaceHeld => return self.best_placement(s, p, legal).map_or(legal[0], |b| b.0),
            Pending::FluxRemoverValue => {
                // The value whose best placement scores highest.
                let mut best = (legal[0], f64::MIN);
                for &a in legal {
                    let mut next = s.clone();
                    next.apply_unchecked(a);
                    let v = if next.pending == Pending::PlaceHeld {
                        let mut moves = Vec::new();
                        next.legal_actions(&mut moves);
                        self.best_placement(&next, p, &moves).map_or(f64::MIN / 2.0, |b| b.1)
                    } else {
                        f64::MIN / 2.0
                    };
                    if v > best.1 {
                        best = (a, v);
                    }
                }
                return best.0;
            }
            Pending::LathekinSecond(_) | Pending::TapWheelSecond(..) => {
                return self.best_relocation(s, p, legal, true).unwrap_or(legal[0]);
            }
            _ => return legal[0],
        }
        let placements: Vec<Action> =
            legal.iter().copied().filter(|&a| matches!(decode(a), Some(Move::Place { .. }))).collect();
        if self.strategy == Strategy::OnlyDtfm {
            return self.best_placement(s, p, &placements).map_or(super::PASS, |b| b.0);
        }
        let relocations: Vec<Action> = legal
            .iter()
            .copied()
            .filter(|&a| {
                matches!(decode(a), Some(Move::Relocate { tool, .. })
                    if matches!(tool, cards::Tool::EglomiseBrush | cards::Tool::CopperFoilBurnisher))
            })
            .collect();
        if let Some(a) = self.best_relocation(s, p, &relocations, false) {
            return a;
        }
        let placing: Vec<Action> = legal
            .iter()
            .copied()
            .filter(|&a| {
                matches!(
                    decode(a),
                    Some(Move::Place { .. } | Move::Grozing { .. } | Move::Cork { .. } | Move::Grinding { .. })
                )
            })
            .collect();
        if let Some((a, v)) = self.best_placement(s, p, &placing)
            && v >= 0.0
        {
            return a;
        }
        let random: Vec<Action> = legal
            .iter()
            .copied()
            .filter(|&a| matches!(decode(a), Some(Move::FluxBrush(_) | Move::FluxRemover(_) | Move::Hammer)))
            .collect();
        if !random.is_empty() {
            return random[self.rng.random_range(0..random.len())];
        }
        self.best_placement(s, p, &placements).map_or(legal[0], |b| b.0)
    }

    /// The relocation that frees the most unfillable spaces (at least one, unless `any`).
    fn best_relocation(&self, s: &SagradaState, p: Player, moves: &[Action], any: bool) -> Option<Action> {
        let before = s.window(p).dead_spaces().count_ones() as i32;
        let mut best: Option<(Action, i32)> = None;
        for &a in moves {
            let mut next = s.clone();
            next.apply_unchecked(a);
            let freed = before - next.window(p).dead_spaces().count_ones() as i32;
            if (any || freed > 0) && best.is_none_or(|b| freed > b.1) {
                best = Some((a, freed));
            }
        }
        best.map(|b| b.0)
    }
}

impl Agent<SagradaState> for RulesAgent {
    fn spec(&self) -> String {
        let s = match self.strategy {
            Strategy::OnlyDtfm => "only_dtfm",
            Strategy::AllMoves => "all_moves",
        };
        format!("sagrada-rules:strategy={s}")
    }

    fn act(&mut self, state: &SagradaState, _budget: &Budget) -> Result<Action, Error> {
        if !matches!(state.turn(), Turn::Player(_)) {
            return Err(Error::Agent { agent: self.spec(), reason: "no player to move".into() });
        }
        self.choose(state)
    }
}
