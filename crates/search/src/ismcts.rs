//! Single-observer information-set MCTS (SO-ISMCTS; Cowling, Powley and Whitehouse 2012).
//!
//! One tree over action histories seen from the deciding player. Every iteration samples a
//! state consistent with what that player knows (`State::determinize`), descends only through
//! moves that are legal in that sample, and scores children by UCB using *availability* (how
//! often a child could have been chosen) in place of the parent's visit count, so moves that are
//! rarely possible are not starved. Rewards are credited to the player who moved, as in `mcts`;
//! chance events are sampled as the descent meets them. Playouts, cut-offs, score-margin
//! rewards and the evaluator's forward pruning work as in `mcts`.

use crate::evaluators::make_evaluator_with;
use crate::rollout::{self, PlayoutFactory, Rollout, RolloutConfig};
use meeple_game::{
    Action, Agent, AgentInfo, Budget, Error, Evaluator, Game, ParamInfo, Player, Rng, Spec, State, Turn, derive_seed,
    rng_from_seed,
};
use rand::RngExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) const INFO: AgentInfo = AgentInfo {
    name: "ismcts",
    about: "single-observer information-set MCTS: one tree over what the mover can see, a fresh determinization per \
            iteration, availability-based UCB; playouts, cut-offs, margin rewards and filtering as in mcts",
    params: &[
        ParamInfo {
            name: "iters",
            default: "",
            accepts: "positive integer",
            help: "iterations per move (default 1000 unless time is given)",
        },
        ParamInfo { name: "time", default: "", accepts: "duration like 300ms", help: "time per move" },
        ParamInfo { name: "c", default: "0.7", accepts: "number >= 0", help: "UCB exploration constant" },
        rollout::PLAYOUT,
        rollout::CUTOFF,
        ParamInfo {
            name: "eval",
            default: "zero",
            accepts: "an evaluator of the game",
            help: "evaluator for cut-offs and filtering",
        },
        rollout::EVAL_SCALE,
        rollout::MARGIN,
        rollout::MARGIN_UNIT,
        ParamInfo {
            name: "filter",
            default: "false",
            accepts: "true or false",
            help: "use the evaluator's forward pruning",
        },
        ParamInfo { name: "verbose", default: "false", accepts: "true or false", help: "print search statistics" },
    ],
};

const NONE: u32 = u32::MAX;
const CHANCE: u8 = u8::MAX;
const ROOT: u8 = u8::MAX - 1;

#[derive(Clone, Debug)]
struct Node {
    parent: u32,
    first_child: u32,
    next_sibling: u32,
    action: Action,
    mover: u8,
    visits: u32,
    /// Times this node's move was legal when its parent was visited.
    avail: u32,
    reward: f64,
}

/// The SO-ISMCTS agent.
pub struct Ismcts<S: State> {
    iters: Option<u64>,
    time: Option<Duration>,
    c: f64,
    rollout: RolloutConfig,
    playout: Option<PlayoutFactory<S>>,
    eval: Arc<dyn Evaluator<S>>,
    filter: bool,
    num_players: usize,
    verbose: bool,
    seed: u64,
    moves_made: u64,
    spec: String,
    /// Root children of the last decision: (action, visits, mean reward).
    pub last_root: Vec<(Action, u32, f64)>,
}

impl<S: State> Ismcts<S> {
    /// Builds the agent from its spec.
    pub fn from_spec<G: Game<State = S>>(game: &G, spec: &Spec, seed: u64) -> Result<Self, Error> {
        Self::from_spec_with(game, spec, seed, &None)
    }

    /// [`Ismcts::from_spec`] with an extension's agents and evaluators for `playout` and `eval`.
    pub fn from_spec_with<G: Game<State = S>>(
        game: &G,
        spec: &Spec,
        seed: u64,
        ext: &crate::Ext<G>,
    ) -> Result<Self, Error> {
        let o = spec.options("agent ismcts", INFO.params)?;
        let iters: Option<u64> = o.get_opt("iters")?;
        if iters == Some(0) {
            return Err(o.bad_value("iters", "0"));
        }
        let playout: String = o.get("playout")?;
        Ok(Ismcts {
            iters,
            time: o.get_duration("time")?,
            c: rollout::positive(&o, "c", true)?,
            rollout: RolloutConfig::from_options(&o)?,
            playout: rollout::playout_factory(game, &playout, ext)?,
            eval: make_evaluator_with(game, &o.get::<String>("eval")?, ext)?,
            filter: o.get_bool("filter")?,
            num_players: game.num_players(),
            verbose: o.get_bool("verbose")?,
            seed,
            moves_made: 0,
            spec: spec.to_string(),
            last_root: Vec::new(),
        })
    }
}

/// One information-set tree: its nodes over every determinization, and its working parts.
struct InfoTree<S: State> {
    nodes: Vec<Node>,
    rng: Rng,
    c: f64,
    rollout: Rollout<S>,
    eval: Arc<dyn Evaluator<S>>,
    filter: bool,
    legal: Vec<Action>,
    outcomes: Vec<(Action, f64)>,
}

impl<S: State> InfoTree<S> {
    fn child(&self, node: u32, action: Action) -> Option<u32> {
        let mut c = self.nodes[node as usize].first_child;
        while c != NONE {
            if self.nodes[c as usize].action == action {
                return Some(c);
            }
            c = self.nodes[c as usize].next_sibling;
        }
        None
    }

    fn add_child(&mut self, parent: u32, action: Action, mover: u8) -> u32 {
        let id = self.nodes.len() as u32;
        let next = self.nodes[parent as usize].first_child;
        self.nodes.push(Node {
            parent,
            first_child: NONE,
            next_sibling: next,
            action,
            mover,
            visits: 0,
            avail: 0,
            reward: 0.0,
        });
        self.nodes[parent as usize].first_child = id;
        id
    }

    fn iterate(&mut self, root: &S, observer: Player) {
        let mut state = root.determinize(observer, &mut self.rng);
        let mut node = 0u32;
        loop {
            match state.turn() {
                Turn::Terminal => break,
                Turn::Chance => {
                    let a = meeple_game::draw_chance(&state, &mut self.outcomes, &mut self.rng);
                    state.apply_unchecked(a);
                    match self.child(node, a) {
                        Some(c) => node = c,
                        None => {
                            node = self.add_child(node, a, CHANCE);
                            break;
                        }
                    }
                }
                Turn::Player(p) => {
                    state.legal_actions(&mut self.legal);
                    if self.filter && self.legal.len() > 1 {
                        let all = self.legal.clone();
                        self.eval.filter(&state, &mut self.legal);
                        if self.legal.is_empty() {
                            self.legal = all;
                        }
                    }
                    // Every child legal in this determinization was available now.
                    let mut untried = 0;
                    let mut best = NONE;
                    let mut best_score = f64::NEG_INFINITY;
                    for i in 0..self.legal.len() {
                        let a = self.legal[i];
                        match self.child(node, a) {
                            None => untried += 1,
                            Some(c) => {
                                let n = &mut self.nodes[c as usize];
                                n.avail += 1;
                                let v = n.visits.max(1) as f64;
                                let score = n.reward / v + self.c * ((n.avail as f64).ln() / v).sqrt();
                                if score > best_score {
                                    best_score = score;
                                    best = c;
                                }
                            }
                        }
                    }
                    if untried > 0 {
                        let pick = self.rng.random_range(0..untried);
                        let a = *self
                            .legal
                            .iter()
                            .filter(|&&a| self.child(node, a).is_none())
                            .nth(pick)
                            .expect("an untried move");
                        state.apply_unchecked(a);
                        node = self.add_child(node, a, p as u8);
                        self.nodes[node as usize].avail = 1;
                        break;
                    }
                    state.apply_unchecked(self.nodes[best as usize].action);
                    node = best;
                }
            }
        }
        let returns = match state.returns() {
            Some(r) => self.rollout.shape(&state, r),
            None => self.rollout.simulate(state, &mut self.rng),
        };
        let mut n = node;
        loop {
            let nd = &mut self.nodes[n as usize];
            nd.visits += 1;
            if nd.mover < ROOT {
                nd.reward += returns[nd.mover as usize];
            }
            if nd.parent == NONE {
                break;
            }
            n = nd.parent;
        }
    }
}

impl<S: State> Agent<S> for Ismcts<S> {
    fn spec(&self) -> String {
        self.spec.clone()
    }

    fn memory_bytes(&self) -> u64 {
        self.playout.as_ref().map_or(0, |p| p.memory)
    }

    fn memory_bound(&self) -> u64 {
        self.memory_bytes().saturating_add(meeple_game::limits::max_tree_bytes())
    }

    fn act(&mut self, state: &S, budget: &Budget) -> Result<Action, Error> {
        let Some(me) = state.current_player() else {
            return Err(Error::Agent { agent: "ismcts".into(), reason: "no decision to make in this state".into() });
        };

        let start = Instant::now();
        let time = budget.time_for(self.time);
        if let Some(a) = crate::forced_move(state, budget.is_timed(self.time)) {
            self.last_root.clear();
            return Ok(a);
        }
        let iters = crate::tighter(self.iters, budget.iterations).or(if time.is_some() { None } else { Some(1000) });
        let seed = derive_seed(self.seed, self.moves_made);
        self.moves_made += 1;
        let mut search = InfoTree {
            nodes: vec![Node {
                parent: NONE,
                first_child: NONE,
                next_sibling: NONE,
                action: Action::MAX,
                mover: ROOT,
                visits: 0,
                avail: 0,
                reward: 0.0,
            }],
            rng: rng_from_seed(seed),
            c: self.c,
            rollout: Rollout::new(
                match &self.playout {
                    Some(factory) => Some(factory.make(derive_seed(seed, 7))?),
                    None => None,
                },
                self.eval.clone(),
                self.rollout,
                self.num_players,
            ),
            eval: self.eval.clone(),
            filter: self.filter,
            legal: Vec::new(),
            outcomes: Vec::new(),
        };
        let mut done = 0u64;
        let stop = budget.stop_at(start, self.time);
        search.rollout.set_deadline(stop);
        let mut clock = crate::Clock::new(stop, budget.cancel);
        let max_nodes = crate::max_tree_nodes(1, size_of::<Node>());
        loop {
            if iters.is_some_and(|n| done >= n) || clock.expired(done) {
                break;
            }
            if search.nodes.len() >= max_nodes || search.nodes[0].visits >= u32::MAX - 1 {
                break;
            }
            search.iterate(state, me);
            done += 1;
        }
        let mut root = Vec::new();
        let mut c = search.nodes[0].first_child;
        while c != NONE {
            let n = &search.nodes[c as usize];
            root.push((n.action, n.visits, n.reward / n.visits.max(1) as f64));
            c = n.next_sibling;
        }
        // The actual legal moves only (a determinization may have allowed others); most visits,
        // then mean, then a seeded hash of the action.
        let mut legal = Vec::new();
        state.legal_actions(&mut legal);
        root.retain(|r| legal.contains(&r.0));
        let tie = |a: Action| meeple_game::zobrist::splitmix64(seed ^ a as u64);
        root.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.total_cmp(&a.2)).then(tie(a.0).cmp(&tie(b.0))));
        let action = root
            .first()
            .map(|r| r.0)
            .or_else(|| legal.first().copied())
            .ok_or_else(|| Error::Agent { agent: "ismcts".into(), reason: "no legal action".into() })?;
        if self.verbose {
            let secs = start.elapsed().as_secs_f64();
            let top: Vec<String> =
                root.iter().take(5).map(|r| format!("{} {}v {:.3}", state.action_to_string(r.0), r.1, r.2)).collect();
            eprintln!(
                "ismcts: {done} iterations ({:.0}/s), {} nodes, {secs:.3} s; top {}",
                done as f64 / secs.max(1e-9),
                search.nodes.len(),
                top.join(", ")
            );
        }
        self.last_root = root;
        Ok(action)
    }

    fn analysis(&self) -> Vec<meeple_game::MoveStat> {
        self.last_root
            .iter()
            .map(|&(action, visits, mean)| meeple_game::MoveStat {
                action,
                visits: Some(visits as u64),
                value: Some(mean),
            })
            .collect()
    }
}
