//! Alpha-beta search: iterative deepening, transposition table, killer and history ordering on
//! top of the game's own ordering hook, optional forward pruning, expectimax at chance nodes, and
//! determinized worlds for hidden information.
//!
//! Values are from the root player's point of view: the root player maximises, every other
//! player minimises. For two-player zero-sum games that is plain minimax (negamax in effect); for
//! more players it is the *paranoid* assumption (everyone plays against the root player), except
//! for decisions the evaluator models ([`Evaluator::expected_move`]: Catan's answers to an offer),
//! which are played as modelled.

use crate::evaluators::make_evaluator_with;
pub use crate::tt::Bound;
use crate::tt::TranspositionTable;
use meeple_game::{
    Action, Agent, AgentInfo, Budget, Error, Evaluator, Game, ParamInfo, Player, Rng, Spec, State, Turn, rng_from_seed,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod config;
mod deepen;
pub use config::AlphaBetaConfig;

/// Value of a won game at the root; a win found `ply` plies deep scores `WIN - ply`, so search
/// prefers quicker wins and slower losses. Heuristics must stay well below it.
pub const WIN: f64 = 1_000_000.0;
const MAX_DEPTH: u32 = 64;
/// Values beyond this are wins or losses a known number of plies away. An expectation over
/// chance outcomes that mixes wins with anything else stays well inside it.
const MATE_BOUND: f64 = WIN - 2.0 * MAX_DEPTH as f64;
const INF: f64 = f64::INFINITY;

pub(crate) const INFO: AgentInfo = AgentInfo {
    name: "alphabeta",
    about: "alpha-beta with iterative deepening, transposition table, killers/history; expectimax at chance nodes; \
            paranoid for 3+ players (other seats' answers to offers as the evaluator models them); worlds=K for \
            hidden information",
    params: &[
        ParamInfo {
            name: "depth",
            default: "",
            accepts: "integer 1..=64",
            help: "maximum depth in plies (default 8, or unlimited when time or nodes is given)",
        },
        ParamInfo { name: "time", default: "", accepts: "duration like 500ms", help: "time per move" },
        ParamInfo { name: "nodes", default: "", accepts: "positive integer", help: "nodes per move" },
        ParamInfo {
            name: "tt",
            default: "16mb",
            accepts: "size like 64mb, at most half of the memory",
            help: "transposition table size",
        },
        ParamInfo {
            name: "eval",
            default: "zero",
            accepts: "an evaluator of the game (see meeple agents --game)",
            help: "leaf evaluator",
        },
        ParamInfo {
            name: "order",
            default: "true",
            accepts: "true or false",
            help: "use the evaluator's move ordering",
        },
        ParamInfo {
            name: "filter",
            default: "false",
            accepts: "true or false",
            help: "use the evaluator's forward pruning (heuristic filter)",
        },
        ParamInfo {
            name: "worlds",
            default: "1",
            accepts: "integer 0..=1000",
            help: "determinized worlds (each a sample of the hidden information and future chance); move values are \
                   summed over worlds; 0 searches the true state, hidden information included (analysis only)",
        },
        ParamInfo {
            name: "lmr",
            default: "false",
            accepts: "true or false",
            help: "late move reductions: search late-ordered moves one or two plies shallower, re-searching at full \
                   depth any that look better (faster, not exact; false for exact minimax values)",
        },
        ParamInfo {
            name: "lmp",
            default: "false",
            accepts: "true or false",
            help: "late move pruning: in null-window nodes within 3 plies of the horizon, skip moves ordered after \
                   the first 3+2*depth^2 (table and killer moves are always tried; selective, not exact)",
        },
        ParamInfo {
            name: "plain",
            default: "false",
            accepts: "true or false",
            help: "plain fixed-depth alpha-beta: no iterative deepening, table, killers, history or reductions (the \
                   reports' baseline; same move as minimax)",
        },
        ParamInfo {
            name: "minimax",
            default: "false",
            accepts: "true or false",
            help: "plain minimax, no pruning: every node searched with the full window and valued exactly (implies \
                   plain; Sarswat et al.'s TreeStrap(minimax) searched this way; slow)",
        },
        ParamInfo { name: "verbose", default: "false", accepts: "true or false", help: "print search statistics" },
    ],
};

/// What the last search found.
#[derive(Clone, Debug, Default)]
pub struct SearchReport {
    /// Deepest fully searched iteration.
    pub depth: u32,
    /// Value of the chosen move for the player to move (`WIN - plies` for a forced win).
    pub value: f64,
    /// The chosen move followed by the expected reply line.
    pub pv: Vec<Action>,
    /// Nodes visited.
    pub nodes: u64,
    pub seconds: f64,
    /// Transposition-table hits per probe.
    pub tt_hit_rate: f64,
    /// Root moves with their values (exact for the best, bounds for the rest unless worlds > 1).
    pub root: Vec<(Action, f64)>,
}

/// A node alpha-beta valued, for learners that bootstrap from search (TreeStrap): the
/// evaluator's features there for the root player, the value the search found, and what that
/// value proves (exact, or a bound from a cut-off).
#[derive(Clone, Debug, PartialEq)]
pub struct NodeRecord {
    pub features: Vec<f64>,
    pub value: f64,
    pub bound: Bound,
    /// Plies searched below the node (the root: the search's depth).
    pub depth: u32,
    /// In a two-player game, the features for the other player, whose value of the node is the
    /// negation (a zero-sum game): a learner can fit both views. Empty otherwise.
    pub opponent: Vec<f64>,
    /// Whether the player whose features and value these are is the one to move at the node
    /// (the root's player at the root and every other ply below it).
    pub to_move: bool,
}

/// Values beyond this are proven results (wins, losses), which no evaluator's value reaches.
const EVAL_RANGE: f64 = 100_000.0;

impl NodeRecord {
    /// Whether the value is a proven win (`Some(true)`) or loss (`Some(false)`) rather than an
    /// evaluation.
    pub fn proven(&self) -> Option<bool> {
        (self.value.abs() >= EVAL_RANGE).then_some(self.value > 0.0)
    }
}

/// The alpha-beta agent.
pub struct AlphaBeta<S: State> {
    config: AlphaBetaConfig,
    eval: Arc<dyn Evaluator<S>>,
    tt: TranspositionTable,
    num_actions: usize,
    rng: Rng,
    killers: Vec<[Action; 2]>,
    history: Vec<u32>,
    moves: Vec<Vec<Action>>,
    scores: Vec<Vec<(u64, Action)>>,
    outcomes: Vec<Vec<(Action, f64)>>,
    /// The evaluator's move priorities at the node being ordered.
    priorities: Vec<i32>,
    // Per-search state.
    root_player: Player,
    key_salt: u64,
    nodes: u64,
    node_limit: u64,
    deadline: Option<Instant>,
    /// Set from outside to stop the decision early.
    cancel: Option<meeple_game::Cancel>,
    aborted: bool,
    /// Node count and moment the clock started, and the node count of the next clock check.
    clock_nodes: u64,
    clock_start: Instant,
    next_check: u64,
    /// Whether the current iteration met a chance node (then no value is a forced result).
    saw_chance: bool,
    /// Late-move reductions tried, and how many of them had to be searched again at full depth.
    reductions: (u64, u64),
    /// Frontier nodes skipped by futility pruning.
    futile: u64,
    pruned: u64,
    /// Nodes two plies above the horizon the evaluator valued without a search.
    horizon2: u64,
    /// Root iterations searched again after falling outside the aspiration window.
    researches: u64,
    report: SearchReport,
    /// Nodes recorded for learners, when asked ([`AlphaBeta::record_nodes`]).
    recording: bool,
    records: Vec<NodeRecord>,
    players: usize,
}

impl<S: State> AlphaBeta<S> {
    /// Builds the agent for `game`, with the evaluator its `eval` option names.
    pub fn new<G: Game<State = S>>(game: &G, config: AlphaBetaConfig, seed: u64) -> Result<Self, Error> {
        Self::new_with(game, config, seed, &None)
    }

    /// [`AlphaBeta::new`] with an extension's evaluators for `eval`.
    pub fn new_with<G: Game<State = S>>(
        game: &G,
        config: AlphaBetaConfig,
        seed: u64,
        ext: &crate::Ext<G>,
    ) -> Result<Self, Error> {
        let eval = make_evaluator_with(game, &config.eval, ext)?;
        Ok(Self::with_evaluator(game, config, eval, seed))
    }

    /// Builds the agent with an evaluator supplied by the caller (one not registered by name).
    pub fn with_evaluator<G: Game<State = S>>(
        game: &G,
        config: AlphaBetaConfig,
        eval: Arc<dyn Evaluator<S>>,
        seed: u64,
    ) -> Self {
        let n = game.num_actions();
        AlphaBeta {
            tt: TranspositionTable::new(config.tt_bytes),
            eval,
            num_actions: n,
            rng: rng_from_seed(seed),
            killers: vec![[Action::MAX; 2]; MAX_DEPTH as usize + 2],
            history: vec![0; n * game.num_players()],
            moves: Vec::new(),
            scores: Vec::new(),
            outcomes: Vec::new(),
            priorities: Vec::new(),
            root_player: 0,
            key_salt: 0,
            nodes: 0,
            node_limit: u64::MAX,
            deadline: None,
            cancel: None,
            aborted: false,
            clock_nodes: 0,
            clock_start: Instant::now(),
            next_check: 0,
            saw_chance: false,
            reductions: (0, 0),
            futile: 0,
            pruned: 0,
            horizon2: 0,
            researches: 0,
            report: SearchReport::default(),
            recording: false,
            records: Vec::new(),
            players: game.num_players(),
            config,
        }
    }

    /// Records every node the searches value from now on (its features, value and bound), for
    /// TreeStrap; the evaluator must be linear ([`Evaluator::features`]).
    pub fn record_nodes(&mut self, on: bool) {
        self.recording = on;
    }

    /// The nodes recorded since the last call.
    pub fn take_records(&mut self) -> Vec<NodeRecord> {
        std::mem::take(&mut self.records)
    }

    /// The root of the last decision as a record: the features of `state` for its mover and the
    /// value the search gave it (for RootStrap); `None` for a nonlinear evaluator. Proven results
    /// keep their win scores ([`NodeRecord::proven`]).
    pub fn root_record(&self, state: &S) -> Option<NodeRecord> {
        let player = state.current_player()?;
        let mut features = Vec::new();
        let value = self.report.value;
        self.eval.features(state, player, &mut features).then(|| NodeRecord {
            features,
            value,
            bound: Bound::Exact,
            depth: self.report.depth,
            opponent: self.opponent_features(state, player),
            to_move: true,
        })
    }

    fn record(&mut self, state: &S, value: f64, bound: Bound, depth: u32) {
        let mut features = Vec::new();
        if self.eval.features(state, self.root_player, &mut features) {
            let opponent = self.opponent_features(state, self.root_player);
            let to_move = state.current_player() == Some(self.root_player);
            self.records.push(NodeRecord { features, value, bound, depth, opponent, to_move });
        }
    }

    /// The features for the other player of a two-player game; empty otherwise.
    fn opponent_features(&self, state: &S, player: Player) -> Vec<f64> {
        let mut f = Vec::new();
        if self.players == 2 {
            self.eval.features(state, 1 - player, &mut f);
        }
        f
    }

    /// Statistics of the last decision.
    pub fn report(&self) -> &SearchReport {
        &self.report
    }

    fn terminal_value(&self, state: &S, ply: usize) -> f64 {
        let r = state.returns().expect("terminal states have returns")[self.root_player];
        let v = (2.0 * r - 1.0) * WIN;
        if v > MATE_BOUND {
            v - ply as f64
        } else if v < -MATE_BOUND {
            v + ply as f64
        } else {
            v
        }
    }

    fn out_of_budget(&mut self) -> bool {
        if self.aborted {
            return true;
        }
        if self.nodes >= self.node_limit {
            self.aborted = true;
        } else if (self.deadline.is_some() || self.cancel.is_some()) && self.nodes >= self.next_check {
            // Look again after about a quarter of a millisecond of nodes: a fixed 1,024 nodes was
            // up to ~18 ms with Sagrada's evaluator, enough to overrun a 300 ms move.
            let now = Instant::now();
            self.aborted =
                self.deadline.is_some_and(|d| now >= d) || self.cancel.is_some_and(meeple_game::Cancel::is_set);
            let rate = (self.nodes - self.clock_nodes) as f64 / (now - self.clock_start).as_secs_f64().max(1e-9);
            self.next_check = self.nodes + ((rate * 0.000_25) as u64).clamp(1, 1024);
        }
        self.aborted
    }

    /// Starts the clock of a search that must stop at `stop`.
    fn start_clock(&mut self, start: Instant, stop: Option<Instant>) {
        self.deadline = stop;
        self.clock_start = start;
        self.clock_nodes = self.nodes;
        self.next_check = self.nodes;
    }

    fn ensure_ply(&mut self, ply: usize) {
        while self.moves.len() <= ply {
            self.moves.push(Vec::new());
            self.scores.push(Vec::new());
            self.outcomes.push(Vec::new());
        }
    }

    /// Fills `self.scores[ply]` with the legal actions of `state`, filtered, each with its
    /// ordering key (unique, higher first). With `sort`, `self.moves[ply]` gets them in order;
    /// without, the search picks them one by one ([`Self::pick`]), since a cut-off usually comes
    /// after the first few and sorting all of them was a sixth of the search time.
    fn ordered_moves(&mut self, state: &S, ply: usize, mover: Player, tt_move: Action, sort: bool) {
        let mut moves = std::mem::take(&mut self.moves[ply]);
        state.legal_actions(&mut moves);
        if self.config.filter && moves.len() > 1 {
            let before = moves.clone();
            self.eval.filter(state, &mut moves);
            if moves.is_empty() {
                moves = before;
            }
        }
        let priority = self.config.order && self.eval.has_move_priority();
        if priority {
            self.eval.move_priorities(state, &moves, &mut self.priorities);
        }
        let mut scores = std::mem::take(&mut self.scores[ply]);
        scores.clear();
        let killers = self.killers[ply.min(self.killers.len() - 1)];
        let history = &self.history[mover * self.num_actions..(mover + 1) * self.num_actions];
        let n = moves.len() as u64;
        for (i, &a) in moves.iter().enumerate() {
            // Higher first; the game's order breaks ties (earlier = higher), so the sort is
            // deterministic although unstable.
            // Table move, then killers, then the game's priority, then history, then the
            // generator's order.
            let base = if a == tt_move {
                7 << 60
            } else if a == killers[0] {
                6 << 60
            } else if a == killers[1] {
                5 << 60
            } else {
                let p = if priority { (self.priorities[i].clamp(-(1 << 19), 1 << 19) + (1 << 19)) as u64 } else { 0 };
                (p << 36) + ((history.get(a as usize).copied().unwrap_or(0) as u64).min((1 << 28) - 1) << 8)
            };
            scores.push((base + (n - i as u64).min(255), a));
        }
        if sort {
            scores.sort_unstable_by_key(|x| std::cmp::Reverse(x.0));
            moves.clear();
            moves.extend(scores.iter().map(|&(_, a)| a));
        }
        self.moves[ply] = moves;
        self.scores[ply] = scores;
    }

    /// Moves the best-keyed of the moves not yet tried to position `i` and returns it.
    fn pick(&mut self, ply: usize, i: usize) -> Action {
        let scores = &mut self.scores[ply];
        let mut best = i;
        for j in i + 1..scores.len() {
            if scores[j].0 > scores[best].0 {
                best = j;
            }
        }
        scores.swap(i, best);
        scores[i].1
    }

    fn search(&mut self, state: &S, depth: u32, ply: usize, mut alpha: f64, mut beta: f64) -> f64 {
        self.nodes += 1;
        if self.out_of_budget() {
            return 0.0;
        }
        // A decision the evaluator models (another seat's answer to an offer) is followed, not
        // searched, and costs no depth, even at the horizon: it is not a contest, and its plies
        // would otherwise push the outcome it decides past the horizon. Capped so win scores
        // keep their ply.
        if let Turn::Player(mover) = state.turn()
            && mover != self.root_player
            && ply < MAX_DEPTH as usize
            && let Some(a) = self.eval.expected_move(state, self.root_player)
        {
            let mut child = state.clone();
            child.apply_unchecked(a);
            return self.search(&child, depth, ply + 1, alpha, beta);
        }
        let mover = match state.turn() {
            Turn::Terminal => return self.terminal_value(state, ply),
            _ if depth == 0 => return self.eval.evaluate(state, self.root_player),
            Turn::Chance => return self.expectation(state, depth, ply),
            Turn::Player(p) => p,
        };
        self.ensure_ply(ply);
        let plain = self.config.plain;
        let maximize = mover == self.root_player;
        // A search that records its nodes for a learner values every node it reaches, so the
        // evaluator's shortcuts (which answer for a node without visiting it) stay off.
        let shortcuts = !plain && !self.recording;
        // The horizon is decided before the table is probed: it is cheaper to compute than a
        // probe, most nodes are there, and not storing it keeps the table for deeper nodes.
        // Futility pruning, exact: when one move can change the evaluation by at most `gain`
        // and the static value is that far outside the window, no child can enter it.
        if depth == 1
            && shortcuts
            && let Some(gain) = self.eval.move_gain_bound(state)
        {
            let e = self.eval.evaluate(state, self.root_player);
            if maximize && e + gain <= alpha {
                self.futile += 1;
                return e + gain;
            }
            if !maximize && e - gain >= beta {
                self.futile += 1;
                return e - gain;
            }
        }
        if depth == 1
            && shortcuts
            && let Some(v) = self.eval.frontier_value(state, self.root_player, maximize)
        {
            return v;
        }
        if depth == 2
            && shortcuts
            && let Some(v) = self.eval.frontier2_value(state, self.root_player, maximize, alpha, beta)
        {
            self.horizon2 += 1;
            return v;
        }
        let key = if plain { 0 } else { state.zobrist() ^ self.key_salt };
        let mut tt_move = Action::MAX;
        if let Some(e) = if plain { None } else { self.tt.probe(key) } {
            tt_move = e.best;
            if e.depth as u32 >= depth {
                let v = from_tt(e.value, ply);
                match e.bound {
                    Bound::Exact => return v,
                    Bound::Lower => alpha = alpha.max(v),
                    Bound::Upper => beta = beta.min(v),
                }
                if alpha >= beta {
                    return v;
                }
            }
        }
        let (alpha0, beta0) = (alpha, beta);
        if depth == 1 && self.eval.prefers_batches() {
            return self.batched_frontier(state, ply, mover, maximize, key);
        }
        let killers = self.killers[ply.min(MAX_DEPTH as usize + 1)];
        let lmr = self.config.lmr && !plain;
        let mut best = if maximize { -INF } else { INF };
        let mut best_move = Action::MAX;
        // Late move pruning: in a null-window node near the horizon, moves ordered late are
        // assumed not to change the outcome once a few have been tried.
        let lmp_limit = if self.config.lmp && !plain && depth <= 3 && next_up(alpha) >= beta {
            3 + 2 * (depth * depth) as usize
        } else {
            usize::MAX
        };
        let mut bounds = (alpha, beta);
        // Staged generation: the table move and the killers (in the order the full list would
        // put them) are tried before any other move is generated; a cut-off by one of them,
        // the common case near the horizon, saves generating and ordering the rest.
        let mut tried = [Action::MAX; 3];
        let mut n_tried = 0;
        let mut cut = false;
        if !plain && !self.config.filter && S::CHEAP_IS_LEGAL {
            for a in [tt_move, killers[0], killers[1]] {
                if a == Action::MAX || tried[..n_tried].contains(&a) || !state.is_legal(a) {
                    continue;
                }
                tried[n_tried] = a;
                let v = self.search_child(state, a, n_tried, depth, ply, bounds, maximize, false);
                n_tried += 1;
                if self.aborted {
                    return 0.0;
                }
                if self.note_child(v, a, depth, ply, mover, maximize, &mut best, &mut best_move, &mut bounds) {
                    cut = true;
                    break;
                }
            }
        }
        if !cut {
            self.ordered_moves(state, ply, mover, tt_move, false);
            for i in 0..self.scores[ply].len() {
                let a = self.pick(ply, i);
                if tried[..n_tried].contains(&a) {
                    continue;
                }
                let special = a == tt_move || killers.contains(&a);
                if i >= lmp_limit && !special {
                    self.pruned += 1;
                    continue;
                }
                let reducible = lmr && depth >= 3 && i >= 3 && !special;
                let v = self.search_child(state, a, i, depth, ply, bounds, maximize, reducible);
                if self.aborted {
                    return 0.0;
                }
                if self.note_child(v, a, depth, ply, mover, maximize, &mut best, &mut best_move, &mut bounds) {
                    break;
                }
            }
        }
        let bound = if best <= alpha0 {
            Bound::Upper
        } else if best >= beta0 {
            Bound::Lower
        } else {
            Bound::Exact
        };
        if !plain {
            self.tt.store(key, to_tt(best, ply), best_move, depth, bound);
        }
        if self.recording {
            self.record(state, best, bound, depth);
        }
        best
    }

    /// A node one ply above the horizon whose evaluator prefers batches (a network): every
    /// child valued in one call, the best kept (no cut-off saves a call that is already
    /// made); stored and recorded like any node.
    fn batched_frontier(&mut self, state: &S, ply: usize, mover: Player, maximize: bool, key: u64) -> f64 {
        self.ordered_moves(state, ply, mover, Action::MAX, false);
        let moves = std::mem::take(&mut self.moves[ply]);
        let mut best = if maximize { -INF } else { INF };
        let mut best_move = Action::MAX;
        let mut children = Vec::with_capacity(moves.len());
        let mut open = Vec::with_capacity(moves.len());
        for &a in &moves {
            let mut child = state.clone();
            child.apply_unchecked(a);
            self.nodes += 1;
            if child.is_terminal() {
                let v = self.terminal_value(&child, ply + 1);
                if (maximize && v > best) || (!maximize && v < best) {
                    (best, best_move) = (v, a);
                }
            } else {
                children.push(child);
                open.push(a);
            }
        }
        let mut values = Vec::new();
        self.eval.evaluate_many(&children, self.root_player, &mut values);
        for (&a, &v) in open.iter().zip(&values) {
            if (maximize && v > best) || (!maximize && v < best) {
                (best, best_move) = (v, a);
            }
        }
        self.moves[ply] = moves;
        // Every child was valued: the value is exact whatever the window.
        if !self.config.plain {
            self.tt.store(key, to_tt(best, ply), best_move, 1, Bound::Exact);
        }
        if self.recording {
            self.record(state, best, Bound::Exact, 1);
        }
        best
    }

    /// The value of the child after `a`, the `i`-th move in order: the first with the window,
    /// later ones by principal variation search (a null window first, reduced by late move
    /// reductions when `reducible`, searched again fully if they look better).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn search_child(
        &mut self,
        state: &S,
        a: Action,
        i: usize,
        depth: u32,
        ply: usize,
        (alpha, beta): (f64, f64),
        maximize: bool,
        reducible: bool,
    ) -> f64 {
        let mut child = state.clone();
        child.apply_unchecked(a);
        let full = depth - 1;
        if i == 0 || alpha == -INF || beta == INF {
            return self.search(&child, full, ply + 1, alpha, beta);
        }
        let reduction = if reducible {
            // Logarithmic in both depth and move number, as in modern engines.
            let r = ((depth as f64).ln() * ((i + 1) as f64).ln() / 2.0) as u32;
            r.clamp(1, depth - 2)
        } else {
            0
        };
        let (lo, hi) = if maximize { (alpha, next_up(alpha)) } else { (next_down(beta), beta) };
        let improves = |v: f64| if maximize { v > alpha } else { v < beta };
        let mut v = self.search(&child, full - reduction, ply + 1, lo, hi);
        if reduction > 0 {
            self.reductions.0 += 1;
            if improves(v) && !self.aborted {
                self.reductions.1 += 1;
                v = self.search(&child, full, ply + 1, lo, hi);
            }
        }
        if improves(v) && v > alpha && v < beta && !self.aborted {
            v = self.search(&child, full, ply + 1, alpha, beta);
        }
        v
    }

    /// Takes a child's value into the node's best value and window; on a cut-off records the
    /// move as killer and in the history, and returns true.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn note_child(
        &mut self,
        v: f64,
        a: Action,
        depth: u32,
        ply: usize,
        mover: Player,
        maximize: bool,
        best: &mut f64,
        best_move: &mut Action,
        (alpha, beta): &mut (f64, f64),
    ) -> bool {
        if (maximize && v > *best) || (!maximize && v < *best) {
            *best = v;
            *best_move = a;
        }
        if self.config.minimax {
            // The window stays full: every sibling is searched and every value is exact.
            return false;
        }
        if maximize {
            *alpha = alpha.max(v);
        } else {
            *beta = beta.min(v);
        }
        if *alpha < *beta {
            return false;
        }
        if !self.config.plain {
            let k = &mut self.killers[ply.min(MAX_DEPTH as usize + 1)];
            if k[0] != a {
                k[1] = k[0];
                k[0] = a;
            }
            if let Some(h) = self.history.get_mut(mover * self.num_actions + a as usize) {
                *h = h.saturating_add(depth * depth);
            }
        }
        true
    }

    /// Expectimax: the probability-weighted mean of the outcomes, each searched with a full
    /// window (a chance node's value cannot be bounded by its siblings without knowing the
    /// value range). Chance nodes do not use up depth, so dice never halve the horizon.
    fn expectation(&mut self, state: &S, depth: u32, ply: usize) -> f64 {
        self.saw_chance = true;
        self.ensure_ply(ply);
        let mut outcomes = std::mem::take(&mut self.outcomes[ply]);
        state.chance_outcomes(&mut outcomes);
        let mut total = 0.0;
        for &(a, p) in &outcomes {
            let mut child = state.clone();
            child.apply_unchecked(a);
            total += p * self.search(&child, depth, ply + 1, -INF, INF);
            if self.aborted {
                break;
            }
        }
        self.outcomes[ply] = outcomes;
        total
    }

    fn principal_variation(&mut self, state: &S, first: Action, depth: u32) -> Vec<Action> {
        let mut pv = vec![first];
        let mut s = state.clone();
        s.apply_unchecked(first);
        while pv.len() < depth as usize {
            let Turn::Player(_) = s.turn() else { break };
            match self.tt.probe(s.zobrist() ^ self.key_salt) {
                Some(e) if e.best != Action::MAX && s.is_legal(e.best) => {
                    pv.push(e.best);
                    s.apply_unchecked(e.best);
                }
                _ => break,
            }
        }
        pv
    }

    /// Decides a move and records the report.
    pub fn choose(&mut self, state: &S, budget: &Budget) -> Result<Action, Error> {
        let Some(root) = state.current_player() else {
            return Err(Error::Agent { agent: "alphabeta".into(), reason: "no decision to make in this state".into() });
        };
        let start = Instant::now();
        let time = budget.time_for(self.config.time);
        let stop = budget.stop_at(start, self.config.time);
        self.cancel = budget.cancel;
        let nodes = crate::tighter(self.config.nodes, budget.nodes);
        if let Some(a) = crate::forced_move(state, budget.is_timed(self.config.time)) {
            self.report = SearchReport { pv: vec![a], root: vec![(a, 0.0)], ..SearchReport::default() };
            return Ok(a);
        }
        let unlimited = time.is_some() || nodes.is_some();
        let depth =
            crate::tighter(self.config.depth, budget.depth).unwrap_or(if unlimited { MAX_DEPTH } else { 8 }).max(1);
        self.root_player = root;
        self.nodes = 0;
        self.reductions = (0, 0);
        self.futile = 0;
        self.pruned = 0;
        self.horizon2 = 0;
        self.researches = 0;
        if !self.config.plain {
            self.tt.allocate().map_err(|reason| Error::Agent { agent: "alphabeta".into(), reason })?;
        }
        self.tt.new_search();
        self.history.iter_mut().for_each(|h| *h /= 8);
        let mut worlds = self.config.worlds.max(1);
        self.node_limit = nodes.unwrap_or(u64::MAX);
        let (root_moves, completed) = if worlds == 1 {
            self.key_salt = meeple_game::zobrist::splitmix64(root as u64);
            // One world is still a sample: the true state may hold hidden information (for
            // perfect-information games `determinize` is a copy). worlds=0 reads the true state.
            if self.config.worlds == 0 {
                self.deepen(state, depth, (time, stop), self.config.minimax, start)
            } else {
                let world = state.determinize(root, &mut self.rng);
                self.deepen(&world, depth, (time, stop), self.config.minimax, start)
            }
        } else {
            // Algorithm 1 of the Sagrada report: exact values for every root move in each world,
            // summed per move.
            let (moves, completed, used) = self.deepen_worlds(state, root, worlds as usize, depth, stop, start);
            worlds = used.max(1) as u32;
            (moves, completed)
        };
        let action = match root_moves.first() {
            Some(m) => m.0,
            None => {
                // Not even depth 1 finished (the deadline may have passed before the first
                // iteration began): fall back to the best-ordered legal move.
                self.ensure_ply(0);
                self.ordered_moves(state, 0, root, Action::MAX, true);
                *self.moves[0]
                    .first()
                    .ok_or_else(|| Error::Agent { agent: "alphabeta".into(), reason: "no legal action".into() })?
            }
        };
        let seconds = start.elapsed().as_secs_f64();
        let value = root_moves.first().map_or(0.0, |m| m.1 / worlds as f64);
        let pv = if worlds == 1 { self.principal_variation(state, action, completed) } else { vec![action] };
        self.report = SearchReport {
            depth: completed,
            value,
            pv,
            nodes: self.nodes,
            seconds,
            tt_hit_rate: if self.tt.probes > 0 { self.tt.hits as f64 / self.tt.probes as f64 } else { 0.0 },
            root: root_moves,
        };
        if self.config.verbose {
            let pv: Vec<String> = {
                let mut s = state.clone();
                self.report
                    .pv
                    .iter()
                    .map(|&a| {
                        let t = s.action_to_string(a);
                        s.apply_unchecked(a);
                        t
                    })
                    .collect()
            };
            eprintln!(
                "alphabeta: depth {} value {:.3} nodes {} ({:.0} nodes/s) tt hits {:.1}% of {} entries, futile {}, \
                 two-ply horizons {}, pruned {}, reductions {} (re-searched {}), aspiration re-searches {}, {:.3} s, pv {}",
                self.report.depth,
                self.report.value,
                self.report.nodes,
                self.report.nodes as f64 / seconds.max(1e-9),
                100.0 * self.report.tt_hit_rate,
                self.tt.len(),
                self.futile,
                self.horizon2,
                self.pruned,
                self.reductions.0,
                self.reductions.1,
                self.researches,
                seconds,
                pv.join(" ")
            );
        }
        Ok(action)
    }
}

/// The next representable value above `x` (a null window for PVS on float values).
fn next_up(x: f64) -> f64 {
    x.next_up()
}

fn next_down(x: f64) -> f64 {
    x.next_down()
}

/// Win scores are stored relative to the node, so a table hit at another ply stays correct.
fn to_tt(v: f64, ply: usize) -> f64 {
    if v > MATE_BOUND {
        v + ply as f64
    } else if v < -MATE_BOUND {
        v - ply as f64
    } else {
        v
    }
}

fn from_tt(v: f64, ply: usize) -> f64 {
    if v > MATE_BOUND {
        v - ply as f64
    } else if v < -MATE_BOUND {
        v + ply as f64
    } else {
        v
    }
}

impl<S: State> Agent<S> for AlphaBeta<S> {
    fn spec(&self) -> String {
        self.config.spec()
    }

    fn memory_bytes(&self) -> u64 {
        if self.config.plain { 0 } else { self.config.tt_bytes }
    }

    fn act(&mut self, state: &S, budget: &Budget) -> Result<Action, Error> {
        self.choose(state, budget)
    }

    fn line(&self) -> Vec<Action> {
        self.report.pv.clone()
    }
}
