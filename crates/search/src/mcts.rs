//! Monte Carlo tree search (UCT) for any number of players, with chance nodes, MCTS-Solver,
//! progressive widening, playout policies given as agent specs, evaluator cut-offs, score-margin
//! rewards, tree reuse, root parallelism and determinized worlds.
//!
//! Each node stores the reward of the player who made the move into it, so selection at a node
//! maximises the mover's own reward: correct for any number of players, with no sign flipping.

use crate::evaluators::make_evaluator_with;
use meeple_game::{
    Action, Agent, AgentInfo, Budget, Error, Evaluator, Game, ParamInfo, Player, Rng, Spec, State, Turn, Values,
    derive_seed, rng_from_seed,
};
use rand::RngExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) const INFO: AgentInfo = AgentInfo {
    name: "mcts",
    about: "UCT Monte Carlo tree search for any number of players: chance nodes, MCTS-Solver, progressive widening, \
            tree reuse, root parallelism, worlds=K for hidden information",
    params: &[
        ParamInfo {
            name: "iters",
            default: "",
            accepts: "positive integer",
            help: "iterations per move, over all threads and worlds (default 1000 unless time is given)",
        },
        ParamInfo { name: "time", default: "", accepts: "duration like 500ms", help: "time per move" },
        ParamInfo { name: "c", default: "1.4", accepts: "number >= 0", help: "UCT exploration constant" },
        rollout::PLAYOUT,
        rollout::CUTOFF,
        ParamInfo {
            name: "eval",
            default: "zero",
            accepts: "an evaluator of the game",
            help: "evaluator for cut-offs, ordering and filtering",
        },
        rollout::EVAL_SCALE,
        rollout::MARGIN,
        rollout::MARGIN_UNIT,
        ParamInfo {
            name: "solver",
            default: "true",
            accepts: "true or false",
            help: "MCTS-Solver: prove wins and losses (two-player games)",
        },
        ParamInfo {
            name: "widening",
            default: "0",
            accepts: "number >= 0",
            help: "progressive widening: a node with n visits has at most ceil(widening * n^widening_exp) children; 0 = off",
        },
        ParamInfo { name: "widening_exp", default: "0.5", accepts: "number in (0, 1]", help: "exponent of widening" },
        ParamInfo {
            name: "order",
            default: "true",
            accepts: "true or false",
            help: "with widening, add children in the evaluator's order",
        },
        ParamInfo {
            name: "filter",
            default: "false",
            accepts: "true or false",
            help: "use the evaluator's forward pruning",
        },
        ParamInfo { name: "reuse", default: "true", accepts: "true or false", help: "keep the tree between moves" },
        ParamInfo {
            name: "threads",
            default: "1",
            accepts: "integer from 1 to 4 per core",
            help: "root-parallel trees",
        },
        ParamInfo {
            name: "worlds",
            default: "1",
            accepts: "integer 0..=1000",
            help: "determinized worlds (each a sample of the hidden information and future chance); visits are \
                   summed over worlds; 0 searches the true state, hidden information included (analysis only)",
        },
        ParamInfo { name: "verbose", default: "false", accepts: "true or false", help: "print search statistics" },
    ],
};

pub use crate::rollout::Margin;
use crate::rollout::{self, PlayoutFactory, Rollout, RolloutConfig};

/// The options of one MCTS agent.
#[derive(Clone, Debug)]
pub struct MctsConfig {
    pub iters: Option<u64>,
    pub time: Option<Duration>,
    pub c: f64,
    pub playout: String,
    pub cutoff: Option<u32>,
    pub eval: String,
    pub eval_scale: f64,
    pub margin: Margin,
    pub margin_unit: f64,
    pub solver: bool,
    /// Whether `solver` was given explicitly (then a game it cannot serve is an error).
    pub solver_given: bool,
    pub widening: f64,
    pub widening_exp: f64,
    pub order: bool,
    pub filter: bool,
    pub reuse: bool,
    pub threads: usize,
    pub worlds: u32,
    pub verbose: bool,
}

impl MctsConfig {
    pub fn from_spec(spec: &Spec) -> Result<Self, Error> {
        let o = spec.options("agent mcts", INFO.params)?;
        let iters: Option<u64> = o.get_opt("iters")?;
        if iters == Some(0) {
            return Err(o.bad_value("iters", "0"));
        }
        let threads = meeple_game::limits::check_threads("agent mcts: threads", o.get("threads")?)?;
        let worlds: u32 = o.get_in("worlds", 0..=meeple_game::limits::MAX_WORLDS)?;
        if let Some(n) = iters
            && n < threads as u64 * worlds.max(1) as u64
        {
            return Err(Error::Invalid(format!(
                "agent mcts: iters={n} leaves some of the {} trees (worlds={worlds} x threads={threads}) without an \
                 iteration; give iters >= worlds x threads",
                threads as u64 * worlds.max(1) as u64
            )));
        }
        let rollout = RolloutConfig::from_options(&o)?;
        let widening_exp = o.get::<f64>("widening_exp")?;
        if !(widening_exp > 0.0 && widening_exp <= 1.0) {
            return Err(o.bad_value("widening_exp", &widening_exp.to_string()));
        }
        let playout: String = o.get("playout")?;
        playout.parse::<Spec>()?;
        Ok(MctsConfig {
            iters,
            time: o.get_duration("time")?,
            c: rollout::positive(&o, "c", true)?,
            playout,
            cutoff: rollout.cutoff,
            eval: o.get("eval")?,
            eval_scale: rollout.eval_scale,
            margin: rollout.margin,
            margin_unit: rollout.margin_unit,
            solver: o.get_bool("solver")?,
            solver_given: o.given("solver"),
            widening: rollout::positive(&o, "widening", true)?,
            widening_exp,
            order: o.get_bool("order")?,
            filter: o.get_bool("filter")?,
            reuse: o.get_bool("reuse")?,
            threads,
            worlds,
            verbose: o.get_bool("verbose")?,
        })
    }
}

const NONE: u32 = u32::MAX;
const CHANCE: u8 = u8::MAX;
const ROOT: u8 = u8::MAX - 1;

/// A proven result, from the point of view of the player who moved into the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proof {
    Unknown,
    Win,
    Draw,
    Loss,
}

impl Proof {
    fn flip(self) -> Self {
        match self {
            Proof::Win => Proof::Loss,
            Proof::Loss => Proof::Win,
            p => p,
        }
    }
}

#[derive(Clone, Debug)]
struct Node {
    parent: u32,
    first_child: u32,
    next_sibling: u32,
    action: Action,
    visits: u32,
    /// Children created so far.
    expanded: u32,
    /// Actions (or outcomes) available here; `NONE` until first computed.
    legal: u32,
    /// Sum of the rewards of `mover`.
    reward: f64,
    /// Who chose `action`: a player, `CHANCE`, or `ROOT` for the root.
    mover: u8,
    proof: Proof,
}

impl Node {
    fn new(parent: u32, action: Action, mover: u8) -> Self {
        Node {
            parent,
            first_child: NONE,
            next_sibling: NONE,
            action,
            visits: 0,
            expanded: 0,
            legal: NONE,
            reward: 0.0,
            mover,
            proof: Proof::Unknown,
        }
    }
}

/// One search tree and the state at its root.
#[derive(Clone)]
struct Tree<S: State> {
    nodes: Vec<Node>,
    root_state: S,
}

impl<S: State> Tree<S> {
    fn new(root_state: S) -> Self {
        Tree { nodes: vec![Node::new(NONE, Action::MAX, ROOT)], root_state }
    }

    fn children(&self, node: u32) -> impl Iterator<Item = u32> + '_ {
        let mut next = self.nodes[node as usize].first_child;
        std::iter::from_fn(move || {
            (next != NONE).then(|| {
                let c = next;
                next = self.nodes[c as usize].next_sibling;
                c
            })
        })
    }

    fn add_child(&mut self, parent: u32, action: Action, mover: u8) -> u32 {
        let id = self.nodes.len() as u32;
        let mut node = Node::new(parent, action, mover);
        let p = &mut self.nodes[parent as usize];
        node.next_sibling = p.first_child;
        p.first_child = id;
        p.expanded += 1;
        self.nodes.push(node);
        id
    }

    /// The subtree under the node reached by the state `target`, searching up to 4 plies below
    /// the root; `None` if the old tree never saw it.
    fn reroot(self, target: &S) -> Option<Self> {
        if self.root_state == *target {
            return Some(self);
        }
        let mut frontier = vec![(0u32, self.root_state.clone())];
        for _ in 0..4 {
            let mut next = Vec::new();
            for (n, s) in &frontier {
                for c in self.children(*n) {
                    let mut cs = s.clone();
                    cs.apply_unchecked(self.nodes[c as usize].action);
                    if cs == *target {
                        return Some(self.extract(c, cs));
                    }
                    next.push((c, cs));
                }
            }
            if next.is_empty() || next.len() > 100_000 {
                break;
            }
            frontier = next;
        }
        None
    }

    fn extract(&self, root: u32, state: S) -> Self {
        let mut map = vec![NONE; self.nodes.len()];
        let mut order = vec![root];
        map[root as usize] = 0;
        let mut i = 0;
        while i < order.len() {
            for c in self.children(order[i]) {
                map[c as usize] = order.len() as u32;
                order.push(c);
            }
            i += 1;
        }
        let remap = |x: u32| if x == NONE { NONE } else { map[x as usize] };
        let nodes = order
            .iter()
            .map(|&old| {
                let n = &self.nodes[old as usize];
                Node {
                    parent: remap(n.parent),
                    first_child: remap(n.first_child),
                    next_sibling: remap(n.next_sibling),
                    ..n.clone()
                }
            })
            .collect::<Vec<_>>();
        let mut tree = Tree { nodes, root_state: state };
        tree.nodes[0].parent = NONE;
        tree.nodes[0].next_sibling = NONE;
        tree.nodes[0].mover = ROOT;
        tree
    }
}

/// Per-root-action statistics of a decision.
#[derive(Clone, Debug, PartialEq)]
pub struct RootChild {
    pub action: Action,
    pub visits: u64,
    /// Mean reward of the root player for this move.
    pub mean: f64,
    pub proof: Proof,
}

/// What the last search found.
#[derive(Clone, Debug, Default)]
pub struct MctsReport {
    pub iterations: u64,
    pub seconds: f64,
    /// Nodes in all trees.
    pub nodes: u64,
    /// Deepest node reached.
    pub max_depth: u32,
    /// Root moves, most visited first.
    pub root: Vec<RootChild>,
    /// The root player's proven result, if the solver proved one (single tree, single world).
    pub proof: Option<Proof>,
    /// Most visited line from the root.
    pub best_line: Vec<Action>,
}

/// The MCTS agent.
pub struct Mcts<S: State> {
    config: Arc<MctsConfig>,
    spec: String,
    eval: Arc<dyn Evaluator<S>>,
    playout: Option<PlayoutFactory<S>>,
    num_players: usize,
    seed: u64,
    moves_made: u64,
    trees: Vec<Option<Tree<S>>>,
    report: MctsReport,
}

impl<S: State> Mcts<S> {
    /// Builds the agent for `game`, with the evaluator its `eval` option names; `seed` feeds
    /// every random choice.
    pub fn new<G: Game<State = S>>(game: &G, config: MctsConfig, spec: String, seed: u64) -> Result<Self, Error> {
        Self::new_with(game, config, spec, seed, &None)
    }

    /// [`Mcts::new`] with an extension's agents and evaluators for `eval` and `playout`.
    pub fn new_with<G: Game<State = S>>(
        game: &G,
        config: MctsConfig,
        spec: String,
        seed: u64,
        ext: &crate::Ext<G>,
    ) -> Result<Self, Error> {
        let eval = make_evaluator_with(game, &config.eval, ext)?;
        Self::build(game, config, spec, eval, seed, ext)
    }

    /// Builds the agent with an evaluator supplied by the caller (one not registered by name).
    pub fn with_evaluator<G: Game<State = S>>(
        game: &G,
        config: MctsConfig,
        spec: String,
        eval: Arc<dyn Evaluator<S>>,
        seed: u64,
    ) -> Result<Self, Error> {
        Self::build(game, config, spec, eval, seed, &None)
    }

    fn build<G: Game<State = S>>(
        game: &G,
        config: MctsConfig,
        spec: String,
        eval: Arc<dyn Evaluator<S>>,
        seed: u64,
        ext: &crate::Ext<G>,
    ) -> Result<Self, Error> {
        if config.solver && config.solver_given && game.num_players() != 2 {
            return Err(Error::Invalid(format!(
                "agent mcts: solver=true needs a two-player game, not {}",
                game.spec()
            )));
        }
        let playout = rollout::playout_factory(game, &config.playout, ext)?;
        Ok(Mcts {
            trees: vec![None; config.threads],
            config: Arc::new(config),
            spec,
            eval,
            playout,
            num_players: game.num_players(),
            seed,
            moves_made: 0,
            report: MctsReport::default(),
        })
    }

    /// Statistics of the last decision.
    pub fn report(&self) -> &MctsReport {
        &self.report
    }

    /// Decides a move and records the report.
    pub fn choose(&mut self, state: &S, budget: &Budget) -> Result<Action, Error> {
        let Some(root_player) = state.current_player() else {
            return Err(Error::Agent { agent: "mcts".into(), reason: "no decision to make in this state".into() });
        };
        let start = Instant::now();
        let cfg = self.config.clone();
        let time = budget.time_for(cfg.time);
        if let Some(a) = crate::forced_move(state, budget.is_timed(cfg.time)) {
            self.report = MctsReport::default();
            return Ok(a);
        }
        let iters = crate::tighter(cfg.iters, budget.iterations).or(if time.is_some() { None } else { Some(1000) });
        let move_seed = derive_seed(self.seed, self.moves_made);
        self.moves_made += 1;
        let threads = cfg.threads;
        let omniscient = cfg.worlds == 0;
        // Every tree gets at least one iteration: an outside iteration budget smaller than the
        // trees (its own is checked when the spec is read) searches fewer worlds.
        let worlds = match iters {
            Some(n) => (cfg.worlds.max(1) as u64).min((n / threads as u64).max(1)) as usize,
            None => cfg.worlds.max(1) as usize,
        };
        let jobs = (threads * worlds) as u64;
        let stop = budget.stop_at(start, cfg.time);
        let solver = cfg.solver && self.num_players == 2;
        let reuse = cfg.reuse && worlds == 1;
        let mut old_trees: Vec<Option<Tree<S>>> =
            if reuse { std::mem::take(&mut self.trees) } else { vec![None; threads] };
        old_trees.resize(threads, None);

        let job = ThreadJob {
            cfg: &cfg,
            eval: &self.eval,
            playout: self.playout.as_ref(),
            num_players: self.num_players,
            state,
            root_player,
            move_seed,
            worlds,
            omniscient,
            threads,
            iters: iters.map(|i| (i / jobs).max(1)),
            // World w stops at start + (w+1)/worlds of the time: one clock for the decision, so
            // overruns of single worlds do not add up.
            deadlines: (0..worlds)
                .map(|w| {
                    stop.map(|end| start + end.saturating_duration_since(start).mul_f64((w + 1) as f64 / worlds as f64))
                })
                .collect(),
            stop,
            cancel: budget.cancel,
            max_nodes: crate::max_tree_nodes(jobs, size_of::<Node>()),
            reuse,
            solver,
        };
        let outcome: Vec<Result<ThreadResult<S>, Error>> = if threads == 1 {
            old_trees.into_iter().map(|old| job.run(0, old)).collect()
        } else {
            std::thread::scope(|scope| {
                let job = &job;
                let handles: Vec<_> =
                    old_trees.into_iter().enumerate().map(|(t, old)| scope.spawn(move || job.run(t, old))).collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| {
                            Err(Error::Agent { agent: "mcts".into(), reason: "a search thread panicked".into() })
                        })
                    })
                    .collect()
            })
        };

        let mut all_trees = Vec::new();
        let (mut iterations, mut max_depth) = (0, 0);
        for r in outcome {
            let (trees, n, d) = r?;
            iterations += n;
            max_depth = max_depth.max(d);
            all_trees.push(trees);
        }
        // Combine root statistics over trees, in job order (deterministic).
        let mut root: Vec<RootChild> = Vec::new();
        for tree in all_trees.iter().flatten() {
            for c in tree.children(0) {
                let n = &tree.nodes[c as usize];
                match root.iter_mut().find(|r| r.action == n.action) {
                    Some(r) => {
                        r.mean = (r.mean * r.visits as f64 + n.reward) / (r.visits + n.visits as u64).max(1) as f64;
                        r.visits += n.visits as u64;
                        if r.proof != n.proof {
                            r.proof = Proof::Unknown;
                        }
                    }
                    None => root.push(RootChild {
                        action: n.action,
                        visits: n.visits as u64,
                        mean: n.reward / (n.visits.max(1)) as f64,
                        proof: n.proof,
                    }),
                }
            }
        }
        let single = all_trees.len() == 1 && all_trees[0].len() == 1;
        let proof = if single && solver {
            Some(node_proof(&all_trees[0][0], 0)).filter(|p| *p != Proof::Unknown)
        } else {
            None
        };
        // Most visits, but a proven win first and proven losses last.
        let rank = |r: &RootChild| match r.proof {
            Proof::Win => 2,
            Proof::Loss => 0,
            _ => 1,
        };
        // Remaining ties go to a seeded hash of the action, not its id: with few iterations
        // and many moves most visits tie, and low ids would bias play (in Cathedral, toward
        // the smallest buildings).
        let tie = |a: Action| meeple_game::zobrist::splitmix64(move_seed ^ a as u64);
        root.sort_by(|a, b| {
            rank(b)
                .cmp(&rank(a))
                .then(b.visits.cmp(&a.visits))
                .then(b.mean.total_cmp(&a.mean))
                .then(tie(a.action).cmp(&tie(b.action)))
        });
        let action = match root.first() {
            Some(r) => r.action,
            None => {
                let mut legal = Vec::new();
                state.legal_actions(&mut legal);
                *legal.first().ok_or_else(|| Error::Agent { agent: "mcts".into(), reason: "no legal action".into() })?
            }
        };
        let best_line = if single { most_visited_line(&all_trees[0][0]) } else { vec![action] };
        let nodes = all_trees.iter().flatten().map(|t| t.nodes.len() as u64).sum();
        if reuse {
            self.trees = all_trees.into_iter().map(|mut ts| ts.pop()).collect();
        }
        self.report =
            MctsReport { iterations, seconds: start.elapsed().as_secs_f64(), nodes, max_depth, root, proof, best_line };
        if cfg.verbose {
            self.print_report(state);
        }
        Ok(action)
    }

    fn print_report(&self, state: &S) {
        let r = &self.report;
        let mut s = state.clone();
        let line: Vec<String> = r
            .best_line
            .iter()
            .map(|&a| {
                let t = s.action_to_string(a);
                if s.is_legal(a) {
                    s.apply_unchecked(a);
                }
                t
            })
            .collect();
        let top: Vec<String> = r
            .root
            .iter()
            .take(5)
            .map(|c| format!("{} {}v {:.3}{}", state.action_to_string(c.action), c.visits, c.mean, proof_tag(c.proof)))
            .collect();
        eprintln!(
            "mcts: {} iterations ({:.0}/s), {} nodes, depth {}, {:.3} s{}; best line {}; top {}",
            r.iterations,
            r.iterations as f64 / r.seconds.max(1e-9),
            r.nodes,
            r.max_depth,
            r.seconds,
            r.proof.map(|p| format!(", proven {p:?}")).unwrap_or_default(),
            line.join(" "),
            top.join(", ")
        );
    }
}

fn proof_tag(p: Proof) -> &'static str {
    match p {
        Proof::Win => " (win)",
        Proof::Loss => " (loss)",
        Proof::Draw => " (draw)",
        Proof::Unknown => "",
    }
}

fn most_visited_line<S: State>(tree: &Tree<S>) -> Vec<Action> {
    let mut line = Vec::new();
    let mut node = 0;
    while let Some(best) = tree.children(node).max_by_key(|&c| tree.nodes[c as usize].visits) {
        if tree.nodes[best as usize].visits < 2 || line.len() >= 32 {
            break;
        }
        line.push(tree.nodes[best as usize].action);
        node = best;
    }
    line
}

/// The result proven for the player to move at `node`, from that player's point of view: a
/// win if some child wins for them; otherwise, once every child exists and is proven, the best
/// of them.
fn node_proof<S: State>(tree: &Tree<S>, node: u32) -> Proof {
    let n = &tree.nodes[node as usize];
    let mut all_proven = n.legal != NONE && n.expanded == n.legal;
    let mut any_draw = false;
    for c in tree.children(node) {
        match tree.nodes[c as usize].proof {
            Proof::Win => return Proof::Win,
            Proof::Draw => any_draw = true,
            Proof::Loss => {}
            Proof::Unknown => all_proven = false,
        }
    }
    match (all_proven, any_draw) {
        (false, _) => Proof::Unknown,
        (true, true) => Proof::Draw,
        (true, false) => Proof::Loss,
    }
}

/// Trees one thread searched (one per world), iterations run, deepest node reached.
type ThreadResult<S> = (Vec<Tree<S>>, u64, u32);

/// What every search thread of one decision shares.
struct ThreadJob<'a, S: State> {
    cfg: &'a MctsConfig,
    eval: &'a Arc<dyn Evaluator<S>>,
    playout: Option<&'a PlayoutFactory<S>>,
    num_players: usize,
    state: &'a S,
    root_player: Player,
    move_seed: u64,
    worlds: usize,
    /// worlds=0: search the true state.
    omniscient: bool,
    threads: usize,
    /// Iterations per tree.
    iters: Option<u64>,
    /// Time per world.
    deadlines: Vec<Option<Instant>>,
    /// When the whole decision is due (playout agents are held to it).
    stop: Option<Instant>,
    cancel: Option<meeple_game::Cancel>,
    /// Most nodes per tree.
    max_nodes: usize,
    reuse: bool,
    solver: bool,
}

impl<S: State> ThreadJob<'_, S> {
    /// Thread `t`: one tree per world, searched in turn. Tree `w * threads + t` gets its own
    /// seed, so results depend on the seed and the options, never on scheduling.
    fn run(&self, t: usize, old: Option<Tree<S>>) -> Result<ThreadResult<S>, Error> {
        let mut trees = Vec::with_capacity(self.worlds);
        let (mut total, mut depth) = (0, 0);
        let mut world_rng = rng_from_seed(derive_seed(self.move_seed, 1_000_000 + t as u64));
        let mut old = old.filter(|_| self.reuse);
        for w in 0..self.worlds {
            let seed = derive_seed(self.move_seed, (w * self.threads + t) as u64);
            // Even one world is a sample: searching the true state would read hidden information
            // (for perfect-information games `determinize` is a copy).
            let root_state = if self.omniscient {
                self.state.clone()
            } else {
                self.state.determinize(self.root_player, &mut world_rng)
            };
            let mut tree = match old.take().and_then(|tree| tree.reroot(&root_state)) {
                Some(tree) => tree,
                None => Tree::new(root_state),
            };
            let mut search =
                Searcher::new(self.cfg, self.eval.clone(), self.playout, self.num_players, seed, self.solver)?;
            search.rollout.set_deadline(self.stop);
            total += search.run(&mut tree, self.iters, (self.deadlines[w], self.cancel), self.max_nodes);
            depth = depth.max(search.max_depth);
            trees.push(tree);
        }
        Ok((trees, total, depth))
    }
}

/// The working parts of one tree's search.
struct Searcher<'a, S: State> {
    cfg: &'a MctsConfig,
    eval: Arc<dyn Evaluator<S>>,
    rollout: Rollout<S>,
    rng: Rng,
    solver: bool,
    legal: Vec<Action>,
    tried: Vec<Action>,
    outcomes: Vec<(Action, f64)>,
    max_depth: u32,
}

impl<'a, S: State> Searcher<'a, S> {
    fn new(
        cfg: &'a MctsConfig,
        eval: Arc<dyn Evaluator<S>>,
        playout: Option<&PlayoutFactory<S>>,
        num_players: usize,
        seed: u64,
        solver: bool,
    ) -> Result<Self, Error> {
        let playout = match playout {
            Some(factory) => Some(factory.make(derive_seed(seed, 7))?),
            None => None,
        };
        let rollout = Rollout::new(
            playout,
            eval.clone(),
            RolloutConfig {
                cutoff: cfg.cutoff,
                eval_scale: cfg.eval_scale,
                margin: cfg.margin,
                margin_unit: cfg.margin_unit,
            },
            num_players,
        );
        Ok(Searcher {
            cfg,
            eval,
            rollout,
            rng: rng_from_seed(seed),
            solver: solver && !cfg.filter,
            legal: Vec::new(),
            tried: Vec::new(),
            outcomes: Vec::new(),
            max_depth: 0,
        })
    }

    /// Runs iterations until a limit, a proven root or a full tree; returns how many ran.
    fn run(
        &mut self,
        tree: &mut Tree<S>,
        iters: Option<u64>,
        (deadline, cancel): (Option<Instant>, Option<meeple_game::Cancel>),
        max_nodes: usize,
    ) -> u64 {
        let mut clock = crate::Clock::new(deadline, cancel);
        let mut done = 0;
        loop {
            if iters.is_some_and(|n| done >= n) || clock.expired(done) {
                break;
            }
            // A full tree (or a root whose visit count would wrap) ends the search: every
            // iteration may add a node.
            if tree.nodes.len() >= max_nodes || tree.nodes[0].visits >= u32::MAX - 1 {
                break;
            }
            if self.solver && node_proof(tree, 0) != Proof::Unknown {
                break;
            }
            self.iterate(tree);
            done += 1;
        }
        done
    }

    /// The next child to create at a player node: under widening with ordering, the first
    /// untried action in the evaluator's order; otherwise a uniformly random untried action.
    /// Untried means absent among the node's children, checked against the tree itself, so
    /// re-rooting or reseeding a tree can never create a second child for the same action.
    fn untried_action(&mut self, tree: &Tree<S>, node: u32, state: &S) -> Action {
        self.legal_here(state);
        self.tried.clear();
        self.tried.extend(tree.children(node).map(|c| tree.nodes[c as usize].action));
        self.tried.sort_unstable();
        let tried = &self.tried;
        self.legal.retain(|a| tried.binary_search(a).is_err());
        if self.cfg.widening > 0.0 && self.cfg.order && self.eval.has_move_priority() {
            // Highest priority first; the lowest id among equals keeps it deterministic.
            let eval = &self.eval;
            return *self
                .legal
                .iter()
                .max_by_key(|&&a| (eval.move_priority(state, a), std::cmp::Reverse(a)))
                .expect("an untried action remains");
        }
        self.legal[self.rng.random_range(0..self.legal.len())]
    }

    fn legal_here(&mut self, state: &S) {
        state.legal_actions(&mut self.legal);
        if self.cfg.filter && self.legal.len() > 1 {
            let before = self.legal.clone();
            self.eval.filter(state, &mut self.legal);
            if self.legal.is_empty() {
                self.legal = before;
            }
        }
    }

    fn allowed_children(&self, n: &Node) -> u32 {
        if self.cfg.widening <= 0.0 {
            return n.legal;
        }
        let k = (self.cfg.widening * ((n.visits + 1) as f64).powf(self.cfg.widening_exp)).ceil() as u32;
        k.clamp(1, n.legal)
    }

    fn select(&self, tree: &Tree<S>, node: u32) -> u32 {
        let parent = &tree.nodes[node as usize];
        let ln_n = (parent.visits.max(1) as f64).ln();
        let mut best = NONE;
        let mut best_score = f64::NEG_INFINITY;
        let mut fallback = NONE;
        for c in tree.children(node) {
            let n = &tree.nodes[c as usize];
            if self.solver {
                match n.proof {
                    Proof::Win => return c,
                    Proof::Loss => {
                        if fallback == NONE || n.visits > tree.nodes[fallback as usize].visits {
                            fallback = c;
                        }
                        continue;
                    }
                    _ => {}
                }
            }
            let v = n.visits.max(1) as f64;
            let score = n.reward / v + self.cfg.c * (ln_n / v).sqrt();
            if score > best_score {
                best_score = score;
                best = c;
            }
        }
        if best == NONE { fallback } else { best }
    }

    fn iterate(&mut self, tree: &mut Tree<S>) {
        let mut state = tree.root_state.clone();
        let mut node = 0u32;
        let mut depth = 0;
        loop {
            match state.turn() {
                Turn::Terminal => break,
                Turn::Chance => {
                    let a = meeple_game::draw_chance(&state, &mut self.outcomes, &mut self.rng);
                    tree.nodes[node as usize].legal = self.outcomes.len() as u32;
                    let existing = tree.children(node).find(|&c| tree.nodes[c as usize].action == a);
                    state.apply_unchecked(a);
                    depth += 1;
                    match existing {
                        Some(c) => node = c,
                        None => {
                            node = tree.add_child(node, a, CHANCE);
                            break;
                        }
                    }
                }
                Turn::Player(p) => {
                    if tree.nodes[node as usize].legal == NONE {
                        self.legal_here(&state);
                        tree.nodes[node as usize].legal = self.legal.len() as u32;
                    }
                    let n = &tree.nodes[node as usize];
                    depth += 1;
                    if n.expanded < self.allowed_children(n) {
                        let a = self.untried_action(tree, node, &state);
                        state.apply_unchecked(a);
                        node = tree.add_child(node, a, p as u8);
                        break;
                    }
                    node = self.select(tree, node);
                    state.apply_unchecked(tree.nodes[node as usize].action);
                }
            }
        }
        self.max_depth = self.max_depth.max(depth);
        let rewards = match state.returns() {
            Some(r) => {
                if self.solver {
                    self.prove_terminal(tree, node, &r);
                }
                self.rollout.shape(&state, r)
            }
            None => self.rollout.simulate(state, &mut self.rng),
        };
        let mut n = node;
        loop {
            let nd = &mut tree.nodes[n as usize];
            nd.visits += 1;
            if nd.mover < ROOT {
                nd.reward += rewards[nd.mover as usize];
            }
            if nd.parent == NONE {
                break;
            }
            n = nd.parent;
        }
    }

    /// Marks a terminal leaf as proven and carries the proof up while it settles parents.
    fn prove_terminal(&self, tree: &mut Tree<S>, leaf: u32, returns: &Values) {
        let mover = tree.nodes[leaf as usize].mover;
        if mover >= ROOT || tree.nodes[leaf as usize].proof != Proof::Unknown {
            return;
        }
        tree.nodes[leaf as usize].proof = match returns[mover as usize] {
            1.0 => Proof::Win,
            0.0 => Proof::Loss,
            0.5 => Proof::Draw,
            _ => return,
        };
        let mut child = leaf;
        loop {
            let parent = tree.nodes[child as usize].parent;
            if parent == NONE {
                break;
            }
            // Every child of `parent` was chosen by the same player: the one to move there.
            let to_move = tree.nodes[child as usize].mover;
            if to_move == CHANCE {
                break;
            }
            let result = node_proof(tree, parent);
            let pm = tree.nodes[parent as usize].mover;
            if result == Proof::Unknown || pm >= ROOT {
                break;
            }
            let proof = if pm == to_move { result } else { result.flip() };
            if tree.nodes[parent as usize].proof == proof {
                break;
            }
            tree.nodes[parent as usize].proof = proof;
            child = parent;
        }
    }
}

impl<S: State> Agent<S> for Mcts<S> {
    fn spec(&self) -> String {
        self.spec.clone()
    }

    fn memory_bytes(&self) -> u64 {
        // Each search thread builds its own playout agent.
        self.playout.as_ref().map_or(0, |p| p.memory * self.config.threads as u64)
    }

    fn memory_bound(&self) -> u64 {
        self.memory_bytes().saturating_add(meeple_game::limits::max_tree_bytes())
    }

    fn act(&mut self, state: &S, budget: &Budget) -> Result<Action, Error> {
        self.choose(state, budget)
    }

    fn analysis(&self) -> Vec<meeple_game::MoveStat> {
        self.report
            .root
            .iter()
            .map(|r| meeple_game::MoveStat { action: r.action, visits: Some(r.visits), value: Some(r.mean) })
            .collect()
    }

    fn line(&self) -> Vec<Action> {
        self.report.best_line.clone()
    }
}

#[cfg(test)]
#[path = "mcts_tests.rs"]
mod tests;
