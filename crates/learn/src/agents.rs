//! Learned agents and the registry that adds them to `meeple-search`'s: `az` (the search with
//! a network), `policy` (the network alone), and the `net` evaluator (the network's value and
//! move order for `alphabeta`, `mcts` and `ismcts`). They reach `meeple-search` as an
//! [`Extension`], so a search's playout agent or evaluator can be a learned one too:
//! `mcts:playout=(policy:model=F,temperature=1)`, `alphabeta:depth=4,eval=(net:model=F)`.

use crate::PolicyValue;
use crate::az::search::{Root, Search, SearchConfig};
use meeple_game::{
    Action, Agent, AgentInfo, BoxedAgent, Budget, Error, Game, ParamInfo, Rng, Spec, State, rng_from_seed,
};
use meeple_game::{Evaluator as GameEvaluator, Player};
use meeple_nn::{Network, Sidecar};
use meeple_search::{Ext, Extension};
use rand::RngExt;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

mod az;
pub use az::AzAgent;

const MODEL: ParamInfo = ParamInfo {
    name: "model",
    default: "",
    accepts: "a checkpoint file (.safetensors with its .json sidecar)",
    help: "the trained network (from meeple train)",
};
const THREADS: ParamInfo =
    ParamInfo { name: "threads", default: "1", accepts: "integer from 1 to 4 per core", help: "inference threads" };
const OFFER: ParamInfo = ParamInfo {
    name: "offer",
    default: "afterstate",
    accepts: "afterstate or trade",
    help: "how an offer to other players, or an answer to one, is weighed: by its afterstate (the offer on the \
           table), or by the position after the trade it would complete (Catan with trades=true: an offer by the \
           trade with the first seat that would take it as catan-value answers, or no trade)",
};

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
            help: "time per move (the simulations are planned to fit it, and replanned halfway at the search's pace)",
        },
        ParamInfo { name: "root", default: "gumbel", accepts: "gumbel or puct", help: "root policy" },
        ParamInfo { name: "c", default: "2", accepts: "number >= 0", help: "PUCT exploration constant" },
        ParamInfo {
            name: "fpu",
            default: "0.25",
            accepts: "number from 0 to 1",
            help: "PUCT first-play urgency: an unvisited move is valued at its parent's value less this",
        },
        ParamInfo {
            name: "prior_temp",
            default: "1",
            accepts: "number from 0.1 to 10",
            help: "policy softmax temperature (Leela Chess Zero's): the network's logits divided by this before \
                   the priors and the Gumbel root read them; above 1 flattens a sharp policy",
        },
        ParamInfo {
            name: "m",
            default: "16",
            accepts: "integer 1..=256",
            help: "Gumbel: actions considered at the root",
        },
        ParamInfo {
            name: "batch",
            default: "",
            accepts: "integer 1..=256",
            help: "leaves evaluated per network call (waiting leaves count as visited: a virtual loss); \
                   default: the planned simulations / 64, from 1 to 8, so small searches stay exact",
        },
        ParamInfo {
            name: "solver",
            default: "true",
            accepts: "true or false",
            help: "value decided positions exactly (won, lost, drawn under best play) and stop searching them",
        },
        ParamInfo {
            name: "prove",
            default: "0",
            accepts: "integer 0..=6",
            help: "with the solver: look this many plies ahead through every move from each new leaf, and value it \
                   exactly where that decides it (short tactics the network misses); 0: off",
        },
        ParamInfo {
            name: "rescale",
            default: "",
            accepts: "true or false",
            help: "Gumbel: stretch each node's completed Q to [0, 1] before sigma (mctx's default); false: \
                   sigma on the win probabilities as they are. Default: the model sidecar's \
                   `play.rescale`, else true",
        },
        ParamInfo {
            name: "rollout",
            default: "",
            accepts: "an agent spec, e.g. sagrada-rules, random, (mcts:iters=50)",
            help: "AlphaGo's mixed leaf value: each leaf the network values is also played to the end by this agent \
                   in every seat, and the playout's result mixed into the network's value by `lambda`; default: \
                   the network's value alone",
        },
        ParamInfo {
            name: "lambda",
            default: "0.5",
            accepts: "number from 0 to 1",
            help: "with rollout: the playout's share of a leaf's value (AlphaGo: 0.5)",
        },
        ParamInfo {
            name: "rollout_score",
            default: "0",
            accepts: "number from 0 to 1",
            help: "with rollout: the share of a playout's result given to its final score margin, as `train az \
                   --value-score` gives it (games with scores)",
        },
        meeple_search::rollout::MARGIN,
        meeple_search::rollout::MARGIN_UNIT,
        meeple_search::rollout::CUTOFF,
        meeple_search::rollout::EVAL_SCALE,
        ParamInfo {
            name: "eval",
            default: "zero",
            accepts: "an evaluator of the game",
            help: "evaluator for playout cut-offs and for filter",
        },
        ParamInfo {
            name: "filter",
            default: "false",
            accepts: "true or false",
            help: "forward pruning: each node the network expands drops the moves eval's filter rules out, as \
                   `ismcts:filter=true` does",
        },
        ParamInfo {
            name: "resample",
            default: "false",
            accepts: "true or false",
            help: "with rollout, where the game hides information: each playout starts from a fresh sample of what \
                   the searching player cannot see (as ISMCTS samples each iteration), not the search's one world",
        },
        ParamInfo {
            name: "worlds",
            default: "1",
            accepts: "integer 1..=64",
            help: "where the game hides information: searches a move, each from its own sample of what is hidden \
                   (the simulations or the time shared out evenly), their root visits summed to choose the move",
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

pub(crate) const VALUE_INFO: AgentInfo = AgentInfo {
    name: "value",
    about: "one ply on a value network (meeple train value|td): the move whose afterstate the network values \
            most for the mover, averaged over the chance outcomes that follow it",
    params: &[MODEL, THREADS, OFFER],
};

pub(crate) const CATAN_TD_INFO: AgentInfo = AgentInfo {
    name: "catan-td",
    about: "an alias of `value`, by the name of the Catan self-play study's Catan player (meeple train td catan): the same agent, \
            one ply on afterstates averaged over dice and cards",
    params: &[MODEL, THREADS, OFFER],
};

pub(crate) const DQN_INFO: AgentInfo = AgentInfo {
    name: "dqn",
    about: "an alias of `policy`, by the name of its trainer (meeple train dqn): the same agent, the legal move of \
            largest Q-value (the Q-values are the network's policy outputs)",
    params: POLICY_INFO.params,
};

pub(crate) const PPO_INFO: AgentInfo = AgentInfo {
    name: "ppo",
    about: "an alias of `policy`, by the name of its trainer (meeple train ppo): the same agent, the policy's most \
            likely legal move, or sampled with a temperature (1: the trained policy as it is)",
    params: POLICY_INFO.params,
};

/// The learned agents, in the order `meeple agents` lists them.
pub const AGENTS: &[AgentInfo] = &[AZ_INFO, POLICY_INFO, VALUE_INFO, CATAN_TD_INFO, DQN_INFO, PPO_INFO];

pub(crate) const NET_INFO: AgentInfo = AgentInfo {
    name: "net",
    about: "a trained network's value for the searches (mover's win probability as a logit, so mcts's default \
            eval_scale=1 turns it back into the probability) and its policy as the move order",
    params: &[MODEL, THREADS],
};

/// The learned evaluators, in the order `meeple agents` lists them.
pub const EVALUATORS: &[AgentInfo] = &[NET_INFO];

/// Every evaluator `game` has: the search crate's, the game's own, then the learned ones.
pub fn evaluator_infos<G: Game>(game: &G) -> Vec<AgentInfo> {
    let mut all = meeple_search::evaluator_infos(game);
    all.extend_from_slice(EVALUATORS);
    all
}

/// The learned agents and evaluators as an extension of `meeple-search`'s registry.
struct Learned;

impl<G: Game> Extension<G> for Learned {
    fn agent(&self, game: &G, spec: &Spec, seed: u64) -> Option<Result<BoxedAgent<G::State>, Error>> {
        match spec.name.as_str() {
            "az" => Some(AzAgent::from_spec(game, spec, seed).map(|a| Box::new(a) as BoxedAgent<G::State>)),
            "policy" => Some(PolicyAgent::from_spec(game, spec, seed, &POLICY_INFO).map(|a| Box::new(a) as _)),
            "dqn" => Some(PolicyAgent::from_spec(game, spec, seed, &DQN_INFO).map(|a| Box::new(a) as _)),
            "ppo" => Some(PolicyAgent::from_spec(game, spec, seed, &PPO_INFO).map(|a| Box::new(a) as _)),
            "value" | "catan-td" => Some(value_agent(game, spec, seed)),
            _ => None,
        }
    }

    fn evaluator(&self, game: &G, spec: &Spec) -> Option<Result<meeple_search::SharedEvaluator<G::State>, Error>> {
        (spec.name == "net").then(|| NetValue::from_spec(game, spec).map(|e| Arc::new(e) as Arc<dyn GameEvaluator<_>>))
    }

    fn agent_infos(&self) -> Vec<AgentInfo> {
        AGENTS.to_vec()
    }

    fn evaluator_infos(&self) -> Vec<AgentInfo> {
        EVALUATORS.to_vec()
    }
}

fn value_agent<G: Game>(game: &G, spec: &Spec, seed: u64) -> Result<BoxedAgent<G::State>, Error> {
    let name = spec.name.as_str();
    if name == "catan-td" && game.spec().name != "catan" {
        return Err(Error::Invalid(format!(
            "agent catan-td plays catan, not {} (use value:model=F for other games)",
            game.spec()
        )));
    }
    let info = if name == "value" { VALUE_INFO } else { CATAN_TD_INFO };
    let o = spec.options(&format!("agent {name}"), info.params)?;
    let model: String = o.get("model")?;
    let offer: String = o.get("offer")?;
    let completed = match offer.as_str() {
        "afterstate" => false,
        "trade" => {
            // Only a game whose offers others answer has a trade to weigh.
            let trading = game.spec().name == "catan" && game.spec().get("trades") == Some("true");
            if !trading {
                return Err(Error::Invalid(format!(
                    "agent {name}: offer=trade weighs offers by the trade they complete; {} has no trading \
                     between players (catan:trades=true has)",
                    game.spec()
                )));
            }
            true
        }
        other => return Err(Error::Invalid(format!("agent {name}: offer={other}; accepted: afterstate, trade"))),
    };
    let net = load_network(game, &model_path(&o, name)?, threads(&o, name)?)?;
    Ok(Box::new(crate::td::ValueAgent::new(name, net, &model, game.num_players(), seed).weigh_completed(completed)))
}

/// The extension that adds the learned agents and evaluators to `meeple-search`.
pub fn extension<G: Game>() -> Ext<G> {
    Some(Arc::new(Learned))
}

/// Every agent that can play `game`: the search crate's, the game's own, then the learned ones.
pub fn agent_infos<G: Game>(game: &G) -> Vec<AgentInfo> {
    let mut all = meeple_search::agent_infos(game);
    all.extend_from_slice(AGENTS);
    all
}

/// Builds the agent named by `spec` for `game`: a learned agent, or any agent `meeple-search`
/// builds. Use this registry wherever agents are named.
pub fn make_agent<G: Game>(game: &G, spec: &str, seed: u64) -> Result<BoxedAgent<G::State>, Error> {
    meeple_search::make_agent_with(game, spec, seed, &extension())
}

/// Networks loaded by agents, shared: an arena plays hundreds of games with the same model.
type Cache = Mutex<HashMap<(PathBuf, String, usize), (std::time::SystemTime, Arc<Network>)>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Loads the checkpoint at `path` for `game`: it must have been trained for a game with the
/// same [`Game::network_spec`] (Santorini's network trained on random pairings plays any pairing).
pub fn load_trained_for<G: Game>(game: &G, path: &Path, threads: usize) -> Result<(Network, Sidecar), Error> {
    let (net, sidecar) = Network::load(path, None, threads).map_err(|e| Error::Invalid(e.to_string()))?;
    let wanted = game.network_spec();
    let fits = sidecar
        .game
        .parse::<Spec>()
        .ok()
        .filter(|trained| trained.name == G::INFO.name)
        .and_then(|trained| G::from_spec(&trained).ok())
        .is_some_and(|trained| trained.network_spec() == wanted);
    if !fits {
        let shared = if wanted == game.spec() { String::new() } else { format!(" (a network for '{wanted}')") };
        return Err(Error::Invalid(format!(
            "checkpoint '{}': trained for '{}', not '{}'{shared}",
            path.display(),
            sidecar.game,
            game.spec()
        )));
    }
    Ok((net, sidecar))
}

/// Loads (or reuses) the network at `path` for `game`, checking it fits the game's shapes.
pub fn load_network<G: Game>(game: &G, path: &Path, threads: usize) -> Result<Arc<Network>, Error> {
    let spec = game.spec().to_string();
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let key = (path.to_path_buf(), game.network_spec().to_string(), threads);
    if let Some(m) = modified
        && let Some((when, net)) = cache().lock().expect("cache lock").get(&key)
        && *when == m
    {
        return Ok(net.clone());
    }
    let (net, _) = load_trained_for(game, path, threads)?;
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
    if let Some((_, index)) = c.planes()
        && game.action_planes().is_none_or(|p| p.index != index)
    {
        return Err(Error::Invalid(format!(
            "checkpoint '{}': its policy head places the actions on the board differently from {spec}",
            path.display()
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
    meeple_game::access::agent_file(&model, "model")
}

/// A model sidecar's default for an agent option its spec leaves out (`"play": {"rescale":
/// false}` beside the weights): a setting measured for that network, so a shipped model plays
/// its best under its plain spec. Only true/false options; another type is an error naming the
/// file.
fn play_default(model: &Path, key: &str) -> Result<Option<bool>, Error> {
    let path = meeple_nn::sidecar_path(model);
    let bad = |reason: String| Error::Invalid(format!("sidecar '{}': {reason}", path.display()));
    let text = std::fs::read_to_string(&path).map_err(|e| bad(e.to_string()))?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    match json.get("play").map(|p| p.get(key)) {
        None | Some(None) => Ok(None),
        Some(Some(serde_json::Value::Bool(b))) => Ok(Some(*b)),
        Some(Some(other)) => Err(bad(format!("play.{key} is {other}; true or false is accepted"))),
    }
}

fn threads(o: &meeple_game::Options<'_>, agent: &str) -> Result<usize, Error> {
    meeple_game::limits::check_threads(&format!("agent {agent}: threads"), o.get("threads")?)
}

/// A network that reads an encoder's latent means, and the encoder (found beside the checkpoint
/// or where its sidecar says, under the same file policy as the model).
fn load_encoded<G: Game>(
    game: &G,
    path: &Path,
    named: &str,
    threads: usize,
) -> Result<(Arc<Network>, Option<crate::vae::Encoder>), Error> {
    let file = crate::vae::encoder_path(path, named);
    let file = meeple_game::access::agent_file(&file.display().to_string(), "encoder")?;
    let encoder = crate::vae::Encoder::load(game, &file, named, None).map_err(|e| Error::Invalid(e.to_string()))?;
    let spec = game.spec().to_string();
    let (net, _) = load_trained_for(game, path, threads)?;
    let c = net.config();
    if c.input != [encoder.latent()] || c.actions != game.num_actions() || c.seats != game.num_players() {
        return Err(Error::Invalid(format!(
            "checkpoint '{}': its network takes {:?} and gives {} actions and {} values; behind its encoder {} needs \
             [{}], {}, {}",
            path.display(),
            c.input,
            c.actions,
            c.seats,
            spec,
            encoder.latent(),
            game.num_actions(),
            game.num_players()
        )));
    }
    Ok((Arc::new(net), Some(encoder)))
}

/// The network's policy alone (`policy`; `dqn` reads the same head as Q-values, `ppo` as its
/// trained policy).
pub struct PolicyAgent {
    name: &'static str,
    net: Arc<Network>,
    /// The frozen observation encoder a DQN or PPO run trained behind, if any.
    encoder: Option<crate::vae::Encoder>,
    temperature: f64,
    rng: Rng,
    spec: String,
    obs: Vec<f32>,
    legal: Vec<Action>,
}

impl PolicyAgent {
    fn from_spec<G: Game>(game: &G, spec: &Spec, seed: u64, info: &AgentInfo) -> Result<Self, Error> {
        let name = info.name;
        let o = spec.options(&format!("agent {name}"), info.params)?;
        let temperature: f64 =
            if info.params.iter().any(|p| p.name == "temperature") { o.get("temperature")? } else { 0.0 };
        if !(temperature.is_finite() && temperature >= 0.0) {
            return Err(o.bad_value("temperature", &temperature.to_string()));
        }
        let path = model_path(&o, name)?;
        let threads = threads(&o, name)?;
        let (net, encoder) = match crate::vae::encoder_named(&path) {
            None => (load_network(game, &path, threads)?, None),
            Some(named) => load_encoded(game, &path, &named, threads)?,
        };
        Ok(PolicyAgent {
            name,
            net,
            encoder,
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
            return Err(Error::Agent { agent: self.name.into(), reason: "no decision to make in this state".into() });
        };
        state.legal_actions(&mut self.legal);
        state.observation(mover, &mut self.obs);
        if let Some(e) = &mut self.encoder {
            e.encode_in_place(&mut self.obs, 1);
        }
        let out = PolicyValue::evaluate(self.net.as_ref(), &self.obs, 1)?;
        let logit = |a: Action| out.logits[a as usize] as f64;
        if self.temperature == 0.0 {
            return self
                .legal
                .iter()
                .copied()
                .max_by(|&a, &b| logit(a).total_cmp(&logit(b)))
                .ok_or_else(|| Error::Agent { agent: self.name.into(), reason: "no legal action".into() });
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

/// A network as a search's evaluator: the value of each seat, and the policy as move order.
pub struct NetValue<S: State> {
    net: Arc<Network>,
    /// The last observation evaluated and the network's answer: a playout cut-off asks for
    /// every seat's value of one state in turn.
    last: Mutex<Option<(Vec<f32>, Arc<meeple_nn::Output>)>>,
    _state: std::marker::PhantomData<fn(&S)>,
}

impl<S: State> NetValue<S> {
    fn from_spec<G: Game<State = S>>(game: &G, spec: &Spec) -> Result<Self, Error> {
        let o = spec.options("evaluator net", NET_INFO.params)?;
        let net = load_network(game, &model_path(&o, "net")?, threads(&o, "net")?)?;
        Ok(NetValue { net, last: Mutex::new(None), _state: std::marker::PhantomData })
    }

    /// The network's answer for `state` from `seat`'s view (values mover first).
    fn output(&self, state: &S, seat: Player) -> Result<Arc<meeple_nn::Output>, Error> {
        let mut obs = Vec::new();
        state.observation(seat, &mut obs);
        if let Some((seen, out)) = self.last.lock().unwrap_or_else(|e| e.into_inner()).as_ref()
            && *seen == obs
        {
            return Ok(out.clone());
        }
        // Not under the lock: search threads evaluate at once.
        let out = Arc::new(PolicyValue::evaluate(self.net.as_ref(), &obs, 1)?);
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some((obs, out.clone()));
        Ok(out)
    }
}

impl<S: State> GameEvaluator<S> for NetValue<S> {
    fn evaluate_many(&self, states: &[S], player: Player, out: &mut Vec<f64>) {
        out.clear();
        let seats = self.net.seats();
        let n = self.net.input_len();
        let mut obs = Vec::with_capacity(states.len() * n);
        let mut one = Vec::new();
        for s in states {
            s.observation(s.current_player().unwrap_or(player), &mut one);
            obs.extend_from_slice(&one);
        }
        match PolicyValue::evaluate(self.net.as_ref(), &obs, states.len()) {
            Ok(o) => out.extend(states.iter().enumerate().map(|(i, s)| {
                let seat = s.current_player().unwrap_or(player);
                let v =
                    o.values.get(i * seats + (player + seats - seat % seats) % seats).copied().unwrap_or(0.5) as f64;
                let v = v.clamp(1e-6, 1.0 - 1e-6);
                (v / (1.0 - v)).ln()
            })),
            Err(_) => out.resize(states.len(), 0.0),
        }
    }

    fn prefers_batches(&self) -> bool {
        true
    }

    fn evaluate(&self, state: &S, player: Player) -> f64 {
        let seats = self.net.seats();
        // From the mover's view (the asked seat's at a chance node).
        let seat = state.current_player().unwrap_or(player);
        match self.output(state, seat) {
            Ok(out) => {
                let v = out.values.get((player + seats - seat % seats) % seats).copied().unwrap_or(0.5) as f64;
                let v = v.clamp(1e-6, 1.0 - 1e-6);
                (v / (1.0 - v)).ln()
            }
            // A network that cannot answer (it was checked against the game when loaded) has
            // no opinion.
            Err(_) => 0.0,
        }
    }

    fn has_move_priority(&self) -> bool {
        true
    }

    fn move_priorities(&self, state: &S, actions: &[Action], out: &mut Vec<i32>) {
        out.clear();
        let Some(mover) = state.current_player() else {
            out.resize(actions.len(), 0);
            return;
        };
        match self.output(state, mover) {
            Ok(o) => out.extend(
                actions
                    .iter()
                    .map(|&a| (o.logits.get(a as usize).copied().unwrap_or(-1e3).clamp(-1e3, 1e3) * 1000.0) as i32),
            ),
            Err(_) => out.resize(actions.len(), 0),
        }
    }

    fn move_priority(&self, state: &S, action: Action) -> i32 {
        let mut out = Vec::new();
        self.move_priorities(state, &[action], &mut out);
        out[0]
    }
}

#[cfg(test)]
mod tests;
