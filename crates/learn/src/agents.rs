//! Learned agents and the registry that adds them to `meeple-search`'s: `az` (the search with
//! a network) and `policy` (the network alone).

use crate::Evaluator;
use crate::search::{Root, Search, SearchConfig, Step};
use meeple_game::{
    Action, Agent, AgentInfo, BoxedAgent, Budget, Error, Game, ParamInfo, Rng, Spec, State, rng_from_seed,
};
use meeple_nn::Network;
use rand::RngExt;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

const MODEL: ParamInfo = ParamInfo {
    name: "model",
    default: "",
    accepts: "a checkpoint file (.safetensors with its .json sidecar)",
    help: "the trained network (from meeple train)",
};
const THREADS: ParamInfo =
    ParamInfo { name: "threads", default: "1", accepts: "integer from 1 to 4 per core", help: "inference threads" };

pub(crate) const AZ_INFO: AgentInfo = AgentInfo {
    name: "az",
    about: "AlphaZero: tree search guided by a trained network (Gumbel or PUCT root), deterministic at play",
    params: &[
        MODEL,
        ParamInfo { name: "sims", default: "64", accepts: "positive integer", help: "simulations per move" },
        ParamInfo {
            name: "time",
            default: "",
            accepts: "duration like 500ms",
            help: "time per move (the simulations are planned to fit it)",
        },
        ParamInfo { name: "root", default: "gumbel", accepts: "gumbel or puct", help: "root policy" },
        ParamInfo { name: "c", default: "2", accepts: "number >= 0", help: "PUCT exploration constant" },
        ParamInfo {
            name: "m",
            default: "16",
            accepts: "integer 1..=256",
            help: "Gumbel: actions considered at the root",
        },
        THREADS,
        ParamInfo { name: "verbose", default: "false", accepts: "true or false", help: "print search statistics" },
    ],
};

pub(crate) const POLICY_INFO: AgentInfo = AgentInfo {
    name: "policy",
    about: "the trained network's policy alone, no search: the most likely legal move, or sampled with a temperature",
    params: &[
        MODEL,
        ParamInfo {
            name: "temperature",
            default: "0",
            accepts: "number >= 0",
            help: "0 plays the most likely move; above 0 samples softmax(logits / temperature)",
        },
        THREADS,
    ],
};

/// The learned agents, in the order `meeple agents` lists them.
pub const AGENTS: &[AgentInfo] = &[AZ_INFO, POLICY_INFO];

/// Every agent that can play `game`: the search crate's, the game's own, then the learned ones.
pub fn agent_infos<G: Game>(game: &G) -> Vec<AgentInfo> {
    let mut all = meeple_search::agent_infos(game);
    all.extend_from_slice(AGENTS);
    all
}

/// Builds the agent named by `spec` for `game`: a learned agent, or any agent `meeple-search`
/// builds. Use this registry wherever agents are named.
pub fn make_agent<G: Game>(game: &G, spec: &str, seed: u64) -> Result<BoxedAgent<G::State>, Error> {
    let parsed: Spec = spec.parse()?;
    match parsed.name.as_str() {
        "az" => Ok(Box::new(AzAgent::from_spec(game, &parsed, seed)?)),
        "policy" => Ok(Box::new(PolicyAgent::from_spec(game, &parsed, seed)?)),
        _ => meeple_search::make_agent(game, spec, seed).map_err(|e| match e {
            Error::UnknownName { kind: "agent", name, .. } => Error::UnknownName {
                kind: "agent",
                name,
                accepted: agent_infos(game).iter().map(|a| a.name).collect::<Vec<_>>().join(", "),
            },
            other => other,
        }),
    }
}

/// Networks loaded by agents, shared: an arena plays hundreds of games with the same model.
type Cache = Mutex<HashMap<(PathBuf, String, usize), (std::time::SystemTime, Arc<Network>)>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Loads (or reuses) the network at `path` for `game`, checking it fits the game's shapes.
pub fn load_network<G: Game>(game: &G, path: &Path, threads: usize) -> Result<Arc<Network>, Error> {
    let spec = game.spec().to_string();
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let key = (path.to_path_buf(), spec.clone(), threads);
    if let Some(m) = modified
        && let Some((when, net)) = cache().lock().expect("cache lock").get(&key)
        && *when == m
    {
        return Ok(net.clone());
    }
    let (net, _) = Network::load(path, Some(&spec), threads).map_err(|e| Error::Invalid(e.to_string()))?;
    let c = net.config();
    if c.input != game.observation_shape() || c.actions != game.num_actions() || c.seats != game.num_players() {
        return Err(Error::Invalid(format!(
            "checkpoint '{}': its network takes {:?} and gives {} actions and {} values; {} needs {:?}, {}, {}",
            path.display(),
            c.input,
            c.actions,
            c.seats,
            spec,
            game.observation_shape(),
            game.num_actions(),
            game.num_players()
        )));
    }
    let net = Arc::new(net);
    if let Some(m) = modified {
        cache().lock().expect("cache lock").insert(key, (m, net.clone()));
    }
    Ok(net)
}

fn model_path(o: &meeple_game::Options<'_>, agent: &str) -> Result<PathBuf, Error> {
    let model: String = o.get("model")?;
    if model.is_empty() {
        return Err(Error::Invalid(format!("agent {agent}: give model=FILE, a checkpoint from meeple train")));
    }
    Ok(PathBuf::from(model))
}

fn threads(o: &meeple_game::Options<'_>, agent: &str) -> Result<usize, Error> {
    meeple_game::limits::check_threads(&format!("agent {agent}: threads"), o.get("threads")?)
}

/// The search with a network.
pub struct AzAgent<S: State> {
    net: Arc<Network>,
    config: SearchConfig,
    sims: Option<u32>,
    time: Option<Duration>,
    seats: usize,
    rng: Rng,
    spec: String,
    verbose: bool,
    /// Seconds per network evaluation, measured (to plan timed searches).
    eval_seconds: Option<f64>,
    obs: Vec<f32>,
    legal: Vec<Action>,
    /// Root visits of the last search, most first.
    last: Vec<(Action, u64)>,
    _state: std::marker::PhantomData<S>,
}

impl<S: State> AzAgent<S> {
    fn from_spec<G: Game<State = S>>(game: &G, spec: &Spec, seed: u64) -> Result<Self, Error> {
        let o = spec.options("agent az", AZ_INFO.params)?;
        let net = load_network(game, &model_path(&o, "az")?, threads(&o, "az")?)?;
        let root = match o.get::<String>("root")?.as_str() {
            "gumbel" => Root::Gumbel,
            "puct" => Root::Puct,
            other => return Err(o.bad_value("root", other)),
        };
        let time = o.get_duration("time")?;
        let sims: u32 = o.get_in("sims", 1..=10_000_000)?;
        let c: f32 = o.get("c")?;
        if !(c.is_finite() && c >= 0.0) {
            return Err(o.bad_value("c", &c.to_string()));
        }
        let config =
            SearchConfig { c_puct: c, gumbel_m: o.get_in("m", 1..=256)?, ..SearchConfig::new(root, sims) }.quiet();
        Ok(AzAgent {
            net,
            sims: (o.given("sims") || time.is_none()).then_some(sims),
            config,
            time,
            seats: game.num_players(),
            rng: rng_from_seed(seed),
            spec: spec.to_string(),
            verbose: o.get_bool("verbose")?,
            eval_seconds: None,
            obs: Vec::new(),
            legal: Vec::new(),
            last: Vec::new(),
            _state: std::marker::PhantomData,
        })
    }

    fn evaluate(&mut self, state: &S) -> Result<meeple_nn::Output, Error> {
        let mover = state.current_player().expect("a decision");
        state.observation(mover, &mut self.obs);
        Ok(Evaluator::evaluate(self.net.as_ref(), &self.obs, 1)?)
    }
}

impl<S: State> Agent<S> for AzAgent<S> {
    fn spec(&self) -> String {
        self.spec.clone()
    }

    fn analysis(&self) -> Vec<meeple_game::MoveStat> {
        self.last.iter().map(|&(action, n)| meeple_game::MoveStat { action, visits: Some(n), value: None }).collect()
    }

    fn act(&mut self, state: &S, budget: &Budget) -> Result<Action, Error> {
        let Some(mover) = state.current_player() else {
            return Err(Error::Agent { agent: "az".into(), reason: "no decision to make in this state".into() });
        };
        let start = Instant::now();
        state.legal_actions(&mut self.legal);
        if self.legal.len() == 1 && budget.is_timed(self.time) {
            return Ok(self.legal[0]);
        }
        let stop = budget.stop_at(start, self.time);
        let root = state.determinize(mover, &mut self.rng);
        // Plan the simulations: the cap given, and what fits the time at the measured speed.
        if self.eval_seconds.is_none() && stop.is_some() {
            let t = Instant::now();
            self.evaluate(&root)?;
            self.eval_seconds = Some(t.elapsed().as_secs_f64());
        }
        let mut sims = self.sims.unwrap_or(u32::MAX);
        if let (Some(stop), Some(per)) = (stop, self.eval_seconds) {
            let left = stop.saturating_duration_since(Instant::now()).as_secs_f64();
            sims = sims.min(((left / per.max(1e-6)) * 0.9) as u32).max(1);
        }
        if let Some(n) = budget.iterations {
            sims = sims.min(n.min(u32::MAX as u64) as u32).max(1);
        }
        let config = SearchConfig { sims, ..self.config.clone() };
        let mut search = Search::new(root, self.seats, config, self.rng.random());
        let mut evaluated = 0u32;
        loop {
            match search.step() {
                Step::Done => break,
                Step::Evaluate(leaf) => {
                    let leaf = leaf.clone();
                    let t = Instant::now();
                    let out = self.evaluate(&leaf)?;
                    let took = t.elapsed().as_secs_f64();
                    self.eval_seconds = Some(self.eval_seconds.map_or(took, |e| 0.9 * e + 0.1 * took));
                    search.deliver(&out.logits, &out.values);
                    evaluated += 1;
                    if stop.is_some_and(|s| Instant::now() >= s) {
                        break;
                    }
                }
            }
        }
        let result = search.result();
        let action = if self.legal.contains(&result.action) { result.action } else { self.legal[0] };
        self.last = result.visits.iter().map(|&(a, n)| (a, n as u64)).collect();
        self.last.sort_by_key(|&(a, n)| (std::cmp::Reverse(n), a));
        if self.verbose {
            let mut top = result.visits.clone();
            top.sort_by_key(|v| std::cmp::Reverse(v.1));
            let shown: Vec<String> =
                top.iter().take(5).map(|&(a, n)| format!("{} {n}v", state.action_to_string(a))).collect();
            eprintln!(
                "az: {evaluated} evaluations in {:.3} s, {} nodes, value {:.3}, plays {}; top {}",
                start.elapsed().as_secs_f64(),
                search.nodes(),
                result.value.get(mover).copied().unwrap_or(0.0),
                state.action_to_string(action),
                shown.join(", ")
            );
        }
        Ok(action)
    }
}

/// The network's policy alone.
pub struct PolicyAgent {
    net: Arc<Network>,
    temperature: f64,
    rng: Rng,
    spec: String,
    obs: Vec<f32>,
    legal: Vec<Action>,
}

impl PolicyAgent {
    fn from_spec<G: Game>(game: &G, spec: &Spec, seed: u64) -> Result<Self, Error> {
        let o = spec.options("agent policy", POLICY_INFO.params)?;
        let temperature: f64 = o.get("temperature")?;
        if !(temperature.is_finite() && temperature >= 0.0) {
            return Err(o.bad_value("temperature", &temperature.to_string()));
        }
        Ok(PolicyAgent {
            net: load_network(game, &model_path(&o, "policy")?, threads(&o, "policy")?)?,
            temperature,
            rng: rng_from_seed(seed),
            spec: spec.to_string(),
            obs: Vec::new(),
            legal: Vec::new(),
        })
    }
}

impl<S: State> Agent<S> for PolicyAgent {
    fn spec(&self) -> String {
        self.spec.clone()
    }

    fn act(&mut self, state: &S, _budget: &Budget) -> Result<Action, Error> {
        let Some(mover) = state.current_player() else {
            return Err(Error::Agent { agent: "policy".into(), reason: "no decision to make in this state".into() });
        };
        state.legal_actions(&mut self.legal);
        state.observation(mover, &mut self.obs);
        let out = Evaluator::evaluate(self.net.as_ref(), &self.obs, 1)?;
        let logit = |a: Action| out.logits[a as usize] as f64;
        if self.temperature == 0.0 {
            return self
                .legal
                .iter()
                .copied()
                .max_by(|&a, &b| logit(a).total_cmp(&logit(b)))
                .ok_or_else(|| Error::Agent { agent: "policy".into(), reason: "no legal action".into() });
        }
        let max = self.legal.iter().map(|&a| logit(a)).fold(f64::NEG_INFINITY, f64::max);
        let weights: Vec<f64> = self.legal.iter().map(|&a| ((logit(a) - max) / self.temperature).exp()).collect();
        let mut x = self.rng.random::<f64>() * weights.iter().sum::<f64>();
        for (&a, w) in self.legal.iter().zip(&weights) {
            x -= w;
            if x <= 0.0 {
                return Ok(a);
            }
        }
        Ok(*self.legal.last().expect("legal moves"))
    }
}
