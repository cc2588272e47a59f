//! The AlphaZero search: one tree, two root policies.
//!
//! - **PUCT** (AlphaZero): every node picks the child maximising `Q + c·P·√N/(1+n)`, unvisited
//!   children valued at the parent's value minus a first-play-urgency reduction; Dirichlet noise
//!   on the root priors in self-play. The policy target is the root's visit distribution.
//! - **Gumbel** (Danihelka et al. 2022): the root samples Gumbel noise `g`, keeps the top `m`
//!   actions by `g + logit`, and shares the simulations among them by sequential halving on
//!   `g + logit + σ(q)`; interior nodes pick `argmax π'(a) − n(a)/(1+N)` where
//!   `π' = softmax(logit + σ(completed Q))`. The policy target is `π'` at the root.
//!
//! The search runs step by step: [`Search::step`] descends until it needs a network evaluation
//! and returns the leaf; [`Search::deliver`] takes the network's answer. So hundreds of searches
//! can share one batched forward pass. One search can also gather several leaves at once
//! ([`Search::gather`], [`Search::deliver_all`]): a leaf waiting for its evaluation already
//! counts as visited with no value yet (a virtual loss), so the next descents go elsewhere.
//! Values are each seat's expected return in [0, 1]; chance nodes are sampled by their
//! probabilities; any number of players.

use crate::az::{gumbel, puct};
use meeple_game::{Action, Rng, State, Turn, rng_from_seed};
use rand::RngExt;
use rand_distr::Distribution;

/// How the root chooses what to search.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Root {
    /// PUCT with Dirichlet noise (AlphaZero).
    Puct,
    /// Gumbel root with sequential halving (Danihelka et al. 2022): sound with few simulations.
    Gumbel,
}

/// The settings of one search.
/// Self-play takes its root, simulations and forced playouts as flags (`train az`); the rest
/// follow the recipe (`az` agent options set them for play).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, clap::Args)]
pub struct SearchConfig {
    /// Root policy of the self-play search.
    #[arg(long, value_enum)]
    pub root: Root,
    /// Simulations per full self-play move (network evaluations, the root's included).
    #[arg(long)]
    pub sims: u32,
    /// PUCT exploration constant.
    #[arg(skip)]
    pub c_puct: f32,
    /// First-play urgency: an unvisited child is valued at its parent's value minus this.
    #[arg(skip)]
    pub fpu: f32,
    /// Dirichlet noise on the root priors (PUCT): concentration, and its share (0: none).
    #[arg(skip)]
    pub dirichlet_alpha: f32,
    #[arg(skip)]
    pub dirichlet_eps: f32,
    /// Gumbel: actions considered at the root.
    #[arg(skip)]
    pub gumbel_m: usize,
    /// Gumbel: scale of the root noise (0 for evaluation: the search is then deterministic).
    #[arg(skip)]
    pub gumbel_scale: f32,
    /// Gumbel: `σ(q) = (c_visit + max n) · c_scale · q`.
    #[arg(skip)]
    pub c_visit: f32,
    #[arg(skip)]
    pub c_scale: f32,
    /// Proven values (as MCTS-Solver): a node whose outcome is decided under best play (a
    /// terminal state; a decision with a move that gives its mover the best return there is, or
    /// whose every move is decided; a chance node whose every outcome is decided) is valued
    /// exactly from then on and never searched below again.
    #[serde(default = "solver_default")]
    #[arg(skip)]
    pub solver: bool,
    /// Gumbel: rescale each node's completed Q to [0, 1] by their smallest and largest before σ
    /// (mctx's `qtransform_completed_by_mix_value` default). Off: σ takes the completed Q as it
    /// is, a win probability already in [0, 1], as mctx's `qtransform_by_min_max` with the
    /// game's own bounds does; a node's first few noisy values then weigh by their real
    /// difference instead of being stretched to the full scale.
    #[serde(default = "rescale_default")]
    #[arg(skip)]
    pub rescale: bool,
    /// PUCT: KataGo's forced playouts and policy target pruning (Wu 2019, section 3.1), `k`
    /// of `n_forced(c) = sqrt(k · P(c) · Σ N)`; 0 turns both off. At the root every child
    /// with fewer visits than `n_forced` is visited next, so a move the noised prior likes is
    /// looked at; the policy target then takes those visits back from every child but the
    /// most visited as far as its PUCT score stays below the best's, and drops a child left
    /// with a single visit, so the target does not teach the forced exploration.
    #[serde(default)]
    #[arg(long, value_name = "K")]
    pub forced_playouts: f32,
    /// With the solver: before a leaf goes to the network, look this many plies ahead through
    /// every move for a decided outcome (a move that wins outright for its mover, or every
    /// move decided, as the solver decides nodes; chance stops the look), and value the leaf
    /// exactly if one is found. Catches the short tactics a value network misses near the end of
    /// a game (Baier and Winands's MCTS-MS); 0: off.
    #[serde(default)]
    #[arg(skip)]
    pub prove: u32,
    /// Policy softmax temperature (Leela Chess Zero's `PolicyTemperature`): each expanded
    /// node's logits are divided by this before the priors (PUCT) and the Gumbel root read
    /// them; above 1 flattens a sharp policy so the search looks past its first choice.
    #[serde(default = "prior_temp_default")]
    #[arg(skip)]
    pub prior_temp: f32,
}

fn prior_temp_default() -> f32 {
    1.0
}

fn solver_default() -> bool {
    true
}

fn rescale_default() -> bool {
    true
}

impl SearchConfig {
    /// Self-play defaults for a root policy and simulation count.
    pub fn new(root: Root, sims: u32) -> Self {
        SearchConfig {
            root,
            sims: sims.max(1),
            c_puct: 2.0,
            fpu: 0.25,
            dirichlet_alpha: 0.3,
            dirichlet_eps: 0.25,
            gumbel_m: 16,
            gumbel_scale: 1.0,
            c_visit: 50.0,
            c_scale: 0.1,
            solver: true,
            rescale: true,
            forced_playouts: 0.0,
            prove: 0,
            prior_temp: 1.0,
        }
    }

    /// The same search without exploration noise (for play and evaluation).
    pub fn quiet(&self) -> Self {
        SearchConfig { dirichlet_eps: 0.0, gumbel_scale: 0.0, forced_playouts: 0.0, ..self.clone() }
    }
}

const NONE: u32 = u32::MAX;
const UNEXPANDED: u8 = u8::MAX;
const CHANCE: u8 = u8::MAX - 1;
const TERMINAL: u8 = u8::MAX - 2;

#[derive(Clone, Debug)]
struct Node {
    action: Action,
    /// Prior probability (a player's move) or chance probability.
    prior: f32,
    /// The network's logit for this move (Gumbel needs logits, not probabilities).
    logit: f32,
    visits: u32,
    first_child: u32,
    children: u32,
    /// The player to move here, `CHANCE`, `TERMINAL` or `UNEXPANDED`.
    kind: u8,
    /// The network's value of this node for its mover (Gumbel's v-hat).
    net_value: f32,
    /// Its outcome is decided (the solver): `exact` holds its values.
    solved: bool,
}

impl Node {
    fn new(action: Action, prior: f32, logit: f32) -> Self {
        Node {
            action,
            prior,
            logit,
            visits: 0,
            first_child: NONE,
            children: 0,
            kind: UNEXPANDED,
            net_value: 0.0,
            solved: false,
        }
    }
}

/// What the search needs next.
#[derive(Debug)]
pub enum Step<'a, S> {
    /// Evaluate this state: its mover's observation, then [`Search::deliver`].
    Evaluate(&'a S),
    /// The search is over: read [`Search::result`].
    Done,
}

/// Sequential halving at the root (Gumbel).
#[derive(Clone, Debug)]
struct Halving {
    /// Root children still considered, with their Gumbel noise.
    remaining: Vec<(u32, f32)>,
    /// Visits each remaining child should reach in this phase.
    target: u32,
    phases: u32,
}

/// What a finished search found.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchResult {
    /// The action the search chose (Gumbel: the halving's winner; PUCT: the most visited).
    pub action: Action,
    /// The improved policy over the legal actions: `(action, probability)`.
    pub policy: Vec<(Action, f32)>,
    /// Visits of each legal action.
    pub visits: Vec<(Action, u32)>,
    /// The root's value for each seat (mean over the simulations).
    pub value: Vec<f32>,
    /// Simulations run.
    pub sims: u32,
    /// The solver decided the root: `action` is a move that achieves its exact value, and
    /// `policy` is that move alone.
    pub proven: bool,
}

/// A leaf waiting for the network, and the path to it.
struct Pending<S> {
    node: u32,
    path: Vec<u32>,
    state: S,
}

/// One search in progress.
pub struct Search<S: State> {
    config: SearchConfig,
    seats: usize,
    root: S,
    nodes: Vec<Node>,
    /// Value sums, `seats` per node, absolute seats.
    sums: Vec<f32>,
    /// Exact values of solved nodes, `seats` per node.
    exact: Vec<f32>,
    rng: Rng,
    sims: u32,
    /// Leaves waiting for their evaluations, in the order they were gathered.
    pending: Vec<Pending<S>>,
    /// Paths of delivered leaves, kept for their allocations.
    spare: Vec<Vec<u32>>,
    path: Vec<u32>,
    halving: Option<Halving>,
    legal: Vec<Action>,
    outcomes: Vec<(Action, f64)>,
    scratch: Vec<f32>,
    /// The Gumbel selection's buffers (children, completed Q, improved policy), reused.
    gumbel: (Vec<gumbel::Child>, Vec<f32>, Vec<f32>),
    /// Move lists of the look-ahead, one a ply, kept for their allocations.
    prove_legal: Vec<Vec<Action>>,
    /// Forward pruning: an evaluator whose [`meeple_game::Evaluator::filter`] drops moves from
    /// each node the network expands.
    filter: Option<std::sync::Arc<dyn meeple_game::Evaluator<S>>>,
}

impl<S: State> Search<S> {
    /// A search from `root` (a determinized sample where the game hides information), for
    /// `seats` players, its random choices from `seed`.
    pub fn new(root: S, seats: usize, config: SearchConfig, seed: u64) -> Self {
        Search {
            root,
            config,
            seats,
            nodes: vec![Node::new(Action::MAX, 1.0, 0.0)],
            sums: vec![0.0; seats],
            exact: vec![0.0; seats],
            rng: rng_from_seed(seed),
            sims: 0,
            pending: Vec::new(),
            spare: Vec::new(),
            path: Vec::new(),
            halving: None,
            legal: Vec::new(),
            outcomes: Vec::new(),
            scratch: Vec::new(),
            gumbel: Default::default(),
            prove_legal: Vec::new(),
            filter: None,
        }
    }

    /// The same search with forward pruning: at each node the network expands, `filter`'s
    /// evaluator drops the moves its [`meeple_game::Evaluator::filter`] rules out (all of them
    /// stay where it would drop every one). The solver's look-ahead still reads every move.
    pub fn with_filter(mut self, filter: Option<std::sync::Arc<dyn meeple_game::Evaluator<S>>>) -> Self {
        self.filter = filter;
        self
    }

    /// The simulations this search may run.
    pub fn planned(&self) -> u32 {
        self.config.sims
    }

    /// Raises the simulations this search may run to `sims` (never lowers them): a timed search
    /// that finds itself ahead of its clock spends the rest. Gumbel's sequential halving shares
    /// the larger budget out over the phases still to start.
    pub fn extend_to(&mut self, sims: u32) {
        self.config.sims = self.config.sims.max(sims);
    }

    /// Simulations run so far.
    pub fn sims(&self) -> u32 {
        self.sims
    }

    /// Nodes in the tree.
    pub fn nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Memory the tree holds, in bytes.
    pub fn memory_bytes(&self) -> u64 {
        (self.nodes.capacity() * size_of::<Node>() + (self.sums.capacity() + self.exact.capacity()) * size_of::<f32>())
            as u64
    }

    fn children(&self, node: u32) -> std::ops::Range<usize> {
        let n = &self.nodes[node as usize];
        n.first_child as usize..(n.first_child + n.children) as usize
    }

    /// The value of `seat` at node `i`: exact where it is solved, else the mean.
    /// The most visited line of moves from the root, up to the first chance event or a node
    /// visited once (what the search expects, for people).
    pub fn line(&self) -> Vec<Action> {
        let mut line = Vec::new();
        let mut node = 0usize;
        while self.nodes[node].kind < CHANCE && line.len() < 32 {
            let Some(best) = self.children(node as u32).max_by_key(|&c| self.nodes[c].visits) else { break };
            if self.nodes[best].visits < 2 {
                break;
            }
            line.push(self.nodes[best].action);
            node = best;
        }
        line
    }

    /// Each root move's mean value for `seat` (0 loss, 1 win), as the search saw it.
    pub fn root_values(&self, seat: usize) -> Vec<(Action, f32)> {
        if self.nodes[0].kind >= CHANCE {
            return Vec::new();
        }
        self.children(0)
            .filter(|&c| self.nodes[c].visits > 0)
            .map(|c| (self.nodes[c].action, self.q(c, seat)))
            .collect()
    }

    fn q(&self, i: usize, seat: usize) -> f32 {
        let n = &self.nodes[i];
        if n.solved {
            self.exact[i * self.seats + seat]
        } else if n.visits == 0 {
            0.0
        } else {
            self.sums[i * self.seats + seat] / n.visits as f32
        }
    }

    fn push_node(&mut self, node: Node) {
        self.nodes.push(node);
        self.sums.extend(std::iter::repeat_n(0.0, self.seats));
        self.exact.extend(std::iter::repeat_n(0.0, self.seats));
    }

    /// Marks `node` decided with `values`.
    fn solve(&mut self, node: u32, values: &[f32]) {
        let i = node as usize;
        self.nodes[i].solved = true;
        self.exact[i * self.seats..(i + 1) * self.seats].copy_from_slice(&values[..self.seats]);
    }

    /// After the last node of the path was solved: solves the ancestors that this decides.
    fn propagate(&mut self) {
        for k in (0..self.path.len().saturating_sub(1)).rev() {
            if !self.try_solve(self.path[k]) {
                break;
            }
        }
    }

    /// Solves `node` if its solved children decide it; whether it is solved.
    fn try_solve(&mut self, node: u32) -> bool {
        let n = &self.nodes[node as usize];
        if n.solved {
            return true;
        }
        let (kind, range, seats) = (n.kind, self.children(node), self.seats);
        let mut values = std::mem::take(&mut self.scratch);
        values.clear();
        let decided = if kind == CHANCE {
            // Every outcome decided: the expectation.
            values.resize(seats, 0.0);
            let mut all = true;
            for i in range {
                if !self.nodes[i].solved {
                    all = false;
                    break;
                }
                for (s, v) in values.iter_mut().enumerate() {
                    *v += self.nodes[i].prior * self.exact[i * seats + s];
                }
            }
            all
        } else if (kind as usize) < seats {
            // The mover's best decided move, if it is the best return there is or every move is
            // decided.
            let mover = kind as usize;
            let (mut best, mut all) = (None::<usize>, true);
            for i in range {
                if !self.nodes[i].solved {
                    all = false;
                    continue;
                }
                if best.is_none_or(|b| self.exact[i * seats + mover] > self.exact[b * seats + mover]) {
                    best = Some(i);
                }
            }
            match best {
                Some(b) if all || self.exact[b * seats + mover] >= 1.0 => {
                    values.extend_from_slice(&self.exact[b * seats..(b + 1) * seats]);
                    true
                }
                _ => false,
            }
        } else {
            false
        };
        if decided {
            self.solve(node, &values);
        }
        self.scratch = values;
        decided
    }

    /// Runs until the next network evaluation is needed, or the search is over.
    pub fn step(&mut self) -> Step<'_, S> {
        assert!(self.pending.is_empty(), "deliver the last evaluation before stepping again");
        if self.gather(1) == 0 {
            return Step::Done;
        }
        Step::Evaluate(&self.pending[0].state)
    }

    /// Descends until up to `max` leaves wait for the network (fewer when the budget is spent
    /// or a descent reaches a leaf that already waits); returns how many wait. 0: the search
    /// is over. Read them with [`Search::leaves`], answer with [`Search::deliver_all`].
    pub fn gather(&mut self, max: usize) -> usize {
        self.gather_until(max, None)
    }

    /// [`Search::gather`] that also returns at `deadline`, with no leaf if need be, so a timed
    /// search keeps its time where descents need no network: late in a game most of them end at
    /// terminal or solved nodes, and a budget planned at that pace runs to hundreds of
    /// thousands of them (one call took a Santorini move to 2.3 s at a 1 s limit). The clock is
    /// read every 64 such descents. A return of 0 means the search is over only when
    /// [`Search::is_over`] says so.
    pub fn gather_until(&mut self, max: usize, deadline: Option<std::time::Instant>) -> usize {
        let mut descents = 0u32;
        'descents: while self.pending.len() < max.max(1) {
            if self.finished() {
                break;
            }
            if let Some(d) = deadline {
                descents += 1;
                if descents.is_multiple_of(64) && std::time::Instant::now() >= d {
                    break;
                }
            }
            self.path.clear();
            self.path.push(0);
            let mut state = self.root.clone();
            let mut node = 0u32;
            loop {
                if node != 0 && self.nodes[node as usize].solved {
                    // Decided: its exact values, nothing below to search.
                    for &n in &self.path {
                        self.nodes[n as usize].visits += 1;
                    }
                    let i = node as usize * self.seats;
                    let values = self.exact[i..i + self.seats].to_vec();
                    self.add_values(&values);
                    continue 'descents;
                }
                let kind = self.nodes[node as usize].kind;
                match kind {
                    TERMINAL => {
                        let returns = state.returns().expect("terminal states have returns");
                        let values: Vec<f32> = returns.iter().map(|&r| r as f32).collect();
                        for &n in &self.path {
                            self.nodes[n as usize].visits += 1;
                        }
                        if self.config.solver {
                            self.solve(node, &values);
                            self.propagate();
                        }
                        self.add_values(&values);
                        continue 'descents;
                    }
                    UNEXPANDED => match state.turn() {
                        Turn::Terminal => self.nodes[node as usize].kind = TERMINAL,
                        Turn::Chance => self.expand_chance(node, &state),
                        Turn::Player(_) => {
                            if self.pending.iter().any(|p| p.node == node) {
                                // Two descents met at one waiting leaf: evaluate what waits first.
                                break 'descents;
                            }
                            // The root is expanded whatever it holds: its children carry the move.
                            if node != 0
                                && self.config.solver
                                && self.config.prove > 0
                                && let Some(returns) = self.prove(&state, self.config.prove, 0)
                            {
                                let mut values = [0.0f32; meeple_game::MAX_PLAYERS];
                                for (v, &r) in values.iter_mut().zip(returns.as_slice()) {
                                    *v = r as f32;
                                }
                                for &n in &self.path {
                                    self.nodes[n as usize].visits += 1;
                                }
                                self.solve(node, &values[..self.seats]);
                                self.propagate();
                                self.add_values(&values[..self.seats]);
                                continue 'descents;
                            }
                            // Visited now, valued on delivery: a virtual loss for the others.
                            for &n in &self.path {
                                self.nodes[n as usize].visits += 1;
                            }
                            let mut path = self.spare.pop().unwrap_or_default();
                            path.clone_from(&self.path);
                            self.pending.push(Pending { node, path, state });
                            continue 'descents;
                        }
                    },
                    CHANCE => {
                        let child = self.sample_chance(node);
                        state.apply_unchecked(self.nodes[child as usize].action);
                        node = child;
                        self.path.push(node);
                    }
                    _ => {
                        let child = if node == 0 && self.halving.is_some() {
                            match self.next_root_child() {
                                Some(child) => child,
                                // A halving is due: it waits for the values still pending.
                                None => break 'descents,
                            }
                        } else if self.config.root == Root::Gumbel {
                            self.select_gumbel(node)
                        } else {
                            self.select_puct(node)
                        };
                        state.apply_unchecked(self.nodes[child as usize].action);
                        node = child;
                        self.path.push(node);
                    }
                }
            }
        }
        self.pending.len()
    }

    /// The leaves waiting for the network, in the order [`Search::deliver_all`] takes answers.
    pub fn leaves(&self) -> impl Iterator<Item = &S> {
        self.pending.iter().map(|p| &p.state)
    }

    /// The search has spent its budget or decided its root: nothing is left to gather.
    pub fn is_over(&self) -> bool {
        self.pending.is_empty() && self.finished()
    }

    fn finished(&self) -> bool {
        if self.sims + self.pending.len() as u32 >= self.config.sims {
            return true;
        }
        // A root with one legal move (or none) needs no more than its own evaluation; a decided
        // one needs nothing more.
        let root = &self.nodes[0];
        root.solved || root.kind != UNEXPANDED && (root.kind == TERMINAL || (root.kind < CHANCE && root.children <= 1))
    }

    /// The network's answer for the pending leaf: logits over every action id and the values
    /// of each seat with the leaf's mover first.
    pub fn deliver(&mut self, logits: &[f32], values: &[f32]) {
        assert_eq!(self.pending.len(), 1, "one pending evaluation");
        let p = self.pending.pop().expect("a pending evaluation");
        self.deliver_one(p, logits, values);
    }

    /// The answers for every waiting leaf, in [`Search::leaves`] order: `actions` logits and
    /// `seats` values (mover first) per leaf, laid end to end.
    pub fn deliver_all(&mut self, logits: &[f32], values: &[f32], actions: usize, seats: usize) {
        // Taken out and put back, so the list keeps its allocation from call to call.
        let mut pending = std::mem::take(&mut self.pending);
        assert!(logits.len() >= pending.len() * actions && values.len() >= pending.len() * seats, "an answer per leaf");
        for (i, p) in pending.drain(..).enumerate() {
            self.deliver_one(p, &logits[i * actions..(i + 1) * actions], &values[i * seats..(i + 1) * seats]);
        }
        self.pending = pending;
    }

    fn deliver_one(&mut self, p: Pending<S>, logits: &[f32], values: &[f32]) {
        let node = p.node;
        let mover = p.state.current_player().expect("leaves that wait for the network are decisions");
        p.state.legal_actions(&mut self.legal);
        if let Some(f) = self.filter.as_ref().filter(|_| self.legal.len() > 1) {
            f.filter(&p.state, &mut self.legal);
            if self.legal.is_empty() {
                p.state.legal_actions(&mut self.legal);
            }
        }
        let first = self.nodes.len() as u32;
        let inv_t = 1.0 / self.config.prior_temp;
        let max = self.legal.iter().map(|&a| logits[a as usize] * inv_t).fold(f32::NEG_INFINITY, f32::max);
        let total: f32 = self.legal.iter().map(|&a| (logits[a as usize] * inv_t - max).exp()).sum();
        for i in 0..self.legal.len() {
            let a = self.legal[i];
            let logit = logits[a as usize] * inv_t;
            self.push_node(Node::new(a, (logit - max).exp() / total, logit));
        }
        let n = &mut self.nodes[node as usize];
        n.first_child = first;
        n.children = self.legal.len() as u32;
        n.kind = mover as u8;
        n.net_value = values[0];
        if node == 0 {
            self.prepare_root();
        }
        // Values arrive mover first; the tree keeps absolute seats.
        let mut absolute = std::mem::take(&mut self.scratch);
        absolute.clear();
        absolute.resize(self.seats, 0.0);
        for (i, &v) in values.iter().take(self.seats).enumerate() {
            absolute[(mover + i) % self.seats] = v;
        }
        // The path was counted as visited when the leaf was gathered.
        let mut path = p.path;
        std::mem::swap(&mut self.path, &mut path);
        self.add_values(&absolute);
        self.scratch = absolute;
        self.spare.push(path);
    }

    /// The outcome of `state` under best play if `depth` plies through every move decide it:
    /// a move that gives its mover the best return there is, or the mover's best when every
    /// move is decided (the rule of [`Search::try_solve`]); none where chance comes first or
    /// something stays open. `ply` indexes the move lists kept for reuse.
    fn prove(&mut self, state: &S, depth: u32, ply: usize) -> Option<meeple_game::Values> {
        let mover = match state.turn() {
            Turn::Terminal => return state.returns(),
            Turn::Chance => return None,
            Turn::Player(_) if depth == 0 => return None,
            Turn::Player(p) => p,
        };
        if self.prove_legal.len() <= ply {
            self.prove_legal.resize_with(ply + 1, Vec::new);
        }
        let mut legal = std::mem::take(&mut self.prove_legal[ply]);
        state.legal_actions(&mut legal);
        let (mut best, mut all) = (None::<meeple_game::Values>, true);
        for &a in &legal {
            let mut next = state.clone();
            next.apply_unchecked(a);
            match self.prove(&next, depth - 1, ply + 1) {
                Some(v) if v.as_slice()[mover] >= 1.0 => {
                    best = Some(v);
                    all = true;
                    break;
                }
                Some(v) => {
                    if best.is_none_or(|b| v.as_slice()[mover] > b.as_slice()[mover]) {
                        best = Some(v);
                    }
                }
                None => all = false,
            }
        }
        self.prove_legal[ply] = legal;
        if all { best } else { None }
    }

    /// Adds one simulation's values along `self.path` (whose visits are already counted).
    fn add_values(&mut self, values: &[f32]) {
        for &n in &self.path {
            for (s, v) in values.iter().enumerate().take(self.seats) {
                self.sums[n as usize * self.seats + s] += v;
            }
        }
        self.sims += 1;
    }

    fn expand_chance(&mut self, node: u32, state: &S) {
        state.chance_outcomes(&mut self.outcomes);
        let first = self.nodes.len() as u32;
        for k in 0..self.outcomes.len() {
            let (a, p) = self.outcomes[k];
            self.push_node(Node::new(a, p as f32, 0.0));
        }
        let n = &mut self.nodes[node as usize];
        n.first_child = first;
        n.children = self.outcomes.len() as u32;
        n.kind = CHANCE;
    }

    fn sample_chance(&mut self, node: u32) -> u32 {
        let range = self.children(node);
        let mut x: f32 = self.rng.random();
        for i in range.clone() {
            x -= self.nodes[i].prior;
            if x <= 0.0 {
                return i as u32;
            }
        }
        (range.end - 1) as u32
    }

    /// Root noise: Dirichlet on the priors (PUCT), or the Gumbel sample and the halving plan.
    fn prepare_root(&mut self) {
        let range = self.children(0);
        let k = range.len();
        if k == 0 {
            return;
        }
        match self.config.root {
            Root::Puct => {
                if self.config.dirichlet_eps > 0.0 && k > 1 {
                    let alpha = vec![self.config.dirichlet_alpha.max(1e-3) as f64; k];
                    if let Ok(d) = rand_distr::multi::Dirichlet::new(&alpha) {
                        let noise: Vec<f64> = d.sample(&mut self.rng);
                        let eps = self.config.dirichlet_eps;
                        for (i, &x) in range.zip(&noise) {
                            self.nodes[i].prior = (1.0 - eps) * self.nodes[i].prior + eps * x as f32;
                        }
                    }
                }
            }
            Root::Gumbel => {
                let scale = self.config.gumbel_scale;
                let mut scored: Vec<(u32, f32)> = range
                    .map(|i| {
                        let g = if scale > 0.0 {
                            let u: f64 = self.rng.random::<f64>().clamp(1e-12, 1.0 - 1e-12);
                            scale * -(-(u.ln())).ln() as f32
                        } else {
                            0.0
                        };
                        (i as u32, g)
                    })
                    .collect();
                let key = |&(i, g): &(u32, f32)| g + self.nodes[i as usize].logit;
                scored.sort_by(|a, b| key(b).total_cmp(&key(a)));
                scored.truncate(self.config.gumbel_m.clamp(1, k));
                let m = scored.len() as u32;
                let phases = (m as f32).log2().ceil().max(1.0) as u32;
                let budget = self.config.sims.saturating_sub(1);
                self.halving = Some(Halving { target: (budget / (phases * m)).max(1), remaining: scored, phases });
            }
        }
    }

    fn sigma(&self, q: f32, max_visits: u32) -> f32 {
        gumbel::sigma(q, max_visits, self.config.c_visit, self.config.c_scale)
    }

    /// The children of `node` as the Gumbel formulas read them (values for its mover).
    fn kids(&self, node: u32, out: &mut Vec<gumbel::Child>) {
        let mover = self.nodes[node as usize].kind as usize;
        out.clear();
        out.extend(self.children(node).map(|i| {
            let c = &self.nodes[i];
            gumbel::Child { visits: c.visits, prior: c.prior, logit: c.logit, q: self.q(i, mover) }
        }));
    }

    /// Completed Q of `node`'s children, rescaled to [0, 1] unless `rescale` is off.
    fn normalized_q(&self, kids: &[gumbel::Child], node: u32, out: &mut Vec<f32>) {
        gumbel::completed_q(kids, self.nodes[node as usize].net_value, out);
        if self.config.rescale {
            gumbel::rescale(out);
        }
    }

    /// `softmax(logit + σ(q̂))` over the children of `node`, q̂ the normalised completed Q.
    fn improved_policy(&self, node: u32) -> Vec<f32> {
        let (mut kids, mut q, mut pi) = (Vec::new(), Vec::new(), Vec::new());
        self.kids(node, &mut kids);
        self.normalized_q(&kids, node, &mut q);
        gumbel::improved_policy(&kids, &q, self.config.c_visit, self.config.c_scale, &mut pi);
        pi
    }

    /// Below the root: the child whose visit brings the visits nearest the improved policy.
    fn select_gumbel(&mut self, node: u32) -> u32 {
        let (mut kids, mut q, mut pi) = std::mem::take(&mut self.gumbel);
        self.kids(node, &mut kids);
        self.normalized_q(&kids, node, &mut q);
        gumbel::improved_policy(&kids, &q, self.config.c_visit, self.config.c_scale, &mut pi);
        let total = self.nodes[node as usize].visits.saturating_sub(1).max(kids.iter().map(|c| c.visits).sum::<u32>());
        let best = self.nodes[node as usize].first_child + gumbel::select(&kids, &pi, total) as u32;
        self.gumbel = (kids, q, pi);
        best
    }

    fn select_puct(&self, node: u32) -> u32 {
        let n = &self.nodes[node as usize];
        let mover = n.kind as usize;
        // Forced playouts: at the root only.
        let k = if node == 0 { self.config.forced_playouts } else { 0.0 };
        let children = self.children(node).map(|i| {
            let c = &self.nodes[i];
            puct::Child { prior: c.prior, visits: c.visits, q: if c.visits > 0 { self.q(i, mover) } else { 0.0 } }
        });
        let best =
            puct::select(children, n.visits, self.q(node as usize, mover), self.config.c_puct, self.config.fpu, k);
        n.first_child + best as u32
    }

    /// Each root child's Gumbel score `g + logit + σ(q̂)` for a candidate with noise `g`, from
    /// the normalised completed Q of the root (so an unvisited candidate counts with the mixed
    /// value, not as a loss).
    fn root_scores(&self) -> impl Fn(&(u32, f32)) -> f32 + '_ {
        let (mut kids, mut q) = (Vec::new(), Vec::new());
        self.kids(0, &mut kids);
        self.normalized_q(&kids, 0, &mut q);
        let first = self.nodes[0].first_child;
        let max_visits = kids.iter().map(|c| c.visits).max().unwrap_or(0);
        move |&(i, g)| g + self.nodes[i as usize].logit + self.sigma(q[(i - first) as usize], max_visits)
    }

    /// The root child sequential halving visits next; `None` when a halving is due while leaves
    /// still wait for their values (with batched leaves a waiting visit is a virtual loss, which
    /// must not decide which candidates survive).
    fn next_root_child(&mut self) -> Option<u32> {
        loop {
            let h = self.halving.as_ref()?;
            if let Some(&(i, _)) = h
                .remaining
                .iter()
                .filter(|(i, _)| self.nodes[*i as usize].visits < h.target)
                .min_by_key(|(i, _)| self.nodes[*i as usize].visits)
            {
                return Some(i);
            }
            if !self.pending.is_empty() {
                return None;
            }
            // Every candidate reached the phase's target: halve (never below two: the last
            // phases share the rest of the budget between the final pair), then raise the target.
            let mut remaining = h.remaining.clone();
            let (phases, budget) = (h.phases, self.config.sims.saturating_sub(1));
            let keep = gumbel::halving_keeps(remaining.len());
            if remaining.len() > keep {
                let score = self.root_scores();
                remaining.sort_by(|a, b| score(b).total_cmp(&score(a)));
                remaining.truncate(keep);
            }
            let step = (budget / (phases * remaining.len() as u32)).max(1);
            let h = self.halving.as_mut().expect("a halving plan");
            h.target += step;
            h.remaining = remaining;
        }
    }

    /// The search's answer; call after [`Step::Done`].
    pub fn result(&mut self) -> SearchResult {
        let root = &self.nodes[0];
        let value: Vec<f32> = (0..self.seats).map(|s| self.q(0, s)).collect();
        if root.kind >= CHANCE || root.children == 0 {
            return SearchResult {
                action: Action::MAX,
                policy: Vec::new(),
                visits: Vec::new(),
                value,
                sims: self.sims,
                proven: false,
            };
        }
        let mover = root.kind as usize;
        let range = self.children(0);
        let visits: Vec<(Action, u32)> = range.clone().map(|i| (self.nodes[i].action, self.nodes[i].visits)).collect();
        // A decided root plays a move that decides it (the most visited of those).
        let decided = root.solved.then(|| {
            let target = self.q(0, mover);
            range
                .clone()
                .filter(|&i| self.nodes[i].solved && self.q(i, mover) >= target)
                .max_by_key(|&i| self.nodes[i].visits)
                .map(|i| self.nodes[i].action)
        });
        let (policy, action) = match self.config.root {
            Root::Gumbel => {
                let pi = self.improved_policy(0);
                let policy: Vec<(Action, f32)> = range.clone().map(|i| self.nodes[i].action).zip(pi).collect();
                let candidates: Vec<(u32, f32)> = match &self.halving {
                    Some(h) => h.remaining.clone(),
                    None => range.map(|i| (i as u32, 0.0)).collect(),
                };
                // The best scored of the last halving's survivors. Sequential halving visits the
                // one with the fewest visits next, so their visits differ by at most one when the
                // budget or the clock ends a phase part way; preferring the ones a visit ahead
                // would let that last partial round, not the values, pick the move.
                let score = self.root_scores();
                let best = candidates
                    .iter()
                    .max_by(|a, b| score(a).total_cmp(&score(b)))
                    .map(|&(i, _)| self.nodes[i as usize].action)
                    .expect("a candidate");
                (policy, best)
            }
            Root::Puct => {
                let best = range
                    .clone()
                    .max_by(|&a, &b| {
                        let (x, y) = (&self.nodes[a], &self.nodes[b]);
                        x.visits.cmp(&y.visits).then(self.q(a, mover).total_cmp(&self.q(b, mover)))
                    })
                    .expect("children");
                let target: Vec<u32> = if self.config.forced_playouts > 0.0 {
                    let children: Vec<puct::Child> = range
                        .map(|i| puct::Child {
                            prior: self.nodes[i].prior,
                            visits: self.nodes[i].visits,
                            q: self.q(i, mover),
                        })
                        .collect();
                    let first = self.nodes[0].first_child as usize;
                    puct::prune_forced(
                        &children,
                        best - first,
                        self.nodes[0].visits,
                        self.config.c_puct,
                        self.config.forced_playouts,
                    )
                } else {
                    visits.iter().map(|v| v.1).collect()
                };
                let total: u32 = target.iter().sum::<u32>().max(1);
                let policy = visits.iter().zip(&target).map(|(&(a, _), &n)| (a, n as f32 / total as f32)).collect();
                (policy, self.nodes[best].action)
            }
        };
        // A proven root teaches and plays the move that proves it.
        let (action, policy, proven) = match decided.flatten() {
            Some(a) => (a, policy.iter().map(|&(b, _)| (b, if a == b { 1.0 } else { 0.0 })).collect(), true),
            None => (action, policy, false),
        };
        SearchResult { action, policy, visits, value, sims: self.sims, proven }
    }
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;
