//! Playouts shared by the tree searches (`mcts`, `ismcts`, and meeple-learn's `az`): a leaf is
//! played to the end by a policy (random, or any agent spec), optionally cut off and scored by an
//! evaluator, and the result is turned into per-player rewards, with the Sagrada report's score-margin bonus.

use meeple_game::{Action, BoxedAgent, Budget, Error, Evaluator, Game, Options, ParamInfo, Rng, State, Turn, Values};
use rand::RngExt;
use std::sync::Arc;

/// How playout results become rewards.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Margin {
    /// The game's returns as they are.
    None,
    /// +1 per `margin_unit` points of lead for the winner, up to 4, all divided by 5.
    Steps,
    /// The same bonus without rounding down.
    Smooth,
}

impl Margin {
    /// Reads `none`, `steps` or `smooth`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "none" => Some(Margin::None),
            "steps" => Some(Margin::Steps),
            "smooth" => Some(Margin::Smooth),
            _ => None,
        }
    }
}

/// Builds fresh playout agents (one per search thread) from an agent spec.
pub(crate) struct PlayoutFactory<S> {
    make: Arc<dyn Fn(u64) -> Result<BoxedAgent<S>, Error> + Send + Sync>,
    /// What one playout agent holds ([`meeple_game::Agent::memory_bytes`]).
    pub memory: u64,
}

impl<S> PlayoutFactory<S> {
    pub fn make(&self, seed: u64) -> Result<BoxedAgent<S>, Error> {
        (self.make)(seed)
    }
}

/// `None` for `random` (the fast built-in playout), else a factory for the named agent. The spec
/// is tried once here so a typo fails before any game starts.
pub(crate) fn playout_factory<G: Game>(
    game: &G,
    spec: &str,
    ext: &crate::Ext<G>,
) -> Result<Option<PlayoutFactory<G::State>>, Error> {
    if spec.trim() == "random" {
        return Ok(None);
    }
    let memory = crate::make_agent_with(game, spec, 0, ext)?.memory_bytes();
    let (g, p, e) = (game.clone(), spec.to_string(), ext.clone());
    Ok(Some(PlayoutFactory { make: Arc::new(move |seed| crate::make_agent_with(&g, &p, seed, &e)), memory }))
}

/// The options that shape a playout and its reward (shared by `mcts` and `ismcts`).
pub const PLAYOUT: ParamInfo = ParamInfo {
    name: "playout",
    default: "random",
    accepts: "an agent spec, e.g. random, first, (alphabeta:depth=1)",
    help: "policy that plays out simulations",
};
pub const CUTOFF: ParamInfo = ParamInfo {
    name: "cutoff",
    default: "",
    accepts: "integer >= 0",
    help: "stop playouts after this many plies and score with the evaluator (default: play to the end)",
};
pub const EVAL_SCALE: ParamInfo = ParamInfo {
    name: "eval_scale",
    default: "1",
    accepts: "number > 0",
    help: "cut-off reward = 1/(1+exp(-value/eval_scale))",
};
pub const MARGIN: ParamInfo = ParamInfo {
    name: "margin",
    default: "none",
    accepts: "none, steps or smooth",
    help: "score-margin bonus for wins: steps = +1 per margin_unit up to 4 units (the Sagrada report), smooth = \
           proportional; reward = (result + bonus) / 5",
};
pub const MARGIN_UNIT: ParamInfo =
    ParamInfo { name: "margin_unit", default: "5", accepts: "number > 0", help: "points per bonus step" };

/// A number that must be positive (or zero, when allowed), else the option's error.
pub(crate) fn positive(o: &Options<'_>, key: &str, allow_zero: bool) -> Result<f64, Error> {
    let v: f64 = o.get(key)?;
    if v.is_finite() && (v > 0.0 || (allow_zero && v == 0.0)) { Ok(v) } else { Err(o.bad_value(key, &v.to_string())) }
}

/// The options that shape a playout and its reward.
#[derive(Clone, Copy, Debug)]
pub struct RolloutConfig {
    /// Plies after which a playout stops and the evaluator scores it (none: to the end).
    pub cutoff: Option<u32>,
    /// The evaluator's value that a cut-off squashes to 0.73 (`1/(1+e^-1)`).
    pub eval_scale: f64,
    /// How a finished game's scores shape its rewards.
    pub margin: Margin,
    /// Points of lead per bonus step.
    pub margin_unit: f64,
}

impl RolloutConfig {
    /// Reads `cutoff`, `eval_scale`, `margin` and `margin_unit`.
    pub fn from_options(o: &Options<'_>) -> Result<Self, Error> {
        let margin_text: String = o.get("margin")?;
        Ok(RolloutConfig {
            cutoff: o.get_opt("cutoff")?,
            eval_scale: positive(o, "eval_scale", false)?,
            margin: Margin::parse(&margin_text).ok_or_else(|| o.bad_value("margin", &margin_text))?,
            margin_unit: positive(o, "margin_unit", false)?,
        })
    }
}

/// Whether `deadline` has passed.
fn past(deadline: Option<std::time::Instant>) -> bool {
    deadline.is_some_and(|d| std::time::Instant::now() >= d)
}

/// A playout policy with its scratch space.
pub struct Rollout<S: State> {
    playout: Option<BoxedAgent<S>>,
    eval: Arc<dyn Evaluator<S>>,
    cfg: RolloutConfig,
    num_players: usize,
    legal: Vec<Action>,
    outcomes: Vec<(Action, f64)>,
    /// When the search this playout serves must answer: the playout agent gets it as its
    /// deadline, and once it has passed the playout finishes with random moves.
    deadline: Option<std::time::Instant>,
}

impl<S: State> Rollout<S> {
    pub fn new(
        playout: Option<BoxedAgent<S>>,
        eval: Arc<dyn Evaluator<S>>,
        cfg: RolloutConfig,
        num_players: usize,
    ) -> Self {
        Rollout { playout, eval, cfg, num_players, legal: Vec::new(), outcomes: Vec::new(), deadline: None }
    }

    /// Holds playout agents to the search's deadline.
    pub fn set_deadline(&mut self, deadline: Option<std::time::Instant>) {
        self.deadline = deadline;
    }

    /// Plays out from a leaf and returns each player's reward.
    pub fn simulate(&mut self, state: S, rng: &mut Rng) -> Values {
        let end = self.play(state, rng);
        self.reward(&end)
    }

    /// Plays out from a leaf: to the end of the game, or to the cut-off.
    pub fn play(&mut self, mut state: S, rng: &mut Rng) -> S {
        if self.playout.is_none() && self.cfg.cutoff.is_none() {
            crate::random_playout(&mut state, rng, &mut self.legal, &mut self.outcomes);
        } else {
            let limit = self.cfg.cutoff.unwrap_or(u32::MAX);
            let mut plies = 0;
            while plies < limit {
                let action = match state.turn() {
                    Turn::Terminal => break,
                    Turn::Chance => meeple_game::draw_chance(&state, &mut self.outcomes, rng),
                    Turn::Player(_) => match self.playout.as_mut().filter(|_| !past(self.deadline)) {
                        Some(agent) => match agent.act(&state, &Budget::nested(self.deadline)) {
                            Ok(a) if state.is_legal(a) => a,
                            _ => {
                                state.legal_actions(&mut self.legal);
                                self.legal[rng.random_range(0..self.legal.len())]
                            }
                        },
                        None => state.random_action(rng, &mut self.legal),
                    },
                };
                state.apply_unchecked(action);
                plies += 1;
            }
        }
        state
    }

    /// Each player's reward where a playout stopped: the game's returns with the margin bonus,
    /// or, at a cut-off, the evaluator's value squashed to [0, 1].
    pub fn reward(&self, state: &S) -> Values {
        match state.returns() {
            Some(r) => self.shape(state, r),
            None => {
                let r: Vec<f64> = (0..self.num_players)
                    .map(|p| 1.0 / (1.0 + (-self.eval.evaluate(state, p) / self.cfg.eval_scale).exp()))
                    .collect();
                Values::from_slice(&r)
            }
        }
    }

    /// Applies the score-margin bonus (the Sagrada report's reward): a winner gets +1 per
    /// `margin_unit` points of lead, up to 4, and rewards are divided by 5 to stay in [0, 1].
    pub fn shape(&self, state: &S, returns: Values) -> Values {
        if self.cfg.margin == Margin::None {
            return returns;
        }
        let scores = state.scores();
        let r: Vec<f64> = (0..returns.len())
            .map(|p| {
                let best_other = (0..returns.len()).filter(|&q| q != p).map(|q| returns[q]).fold(f64::MIN, f64::max);
                let won = returns[p] > best_other;
                let lead =
                    scores[p] - (0..scores.len()).filter(|&q| q != p).map(|q| scores[q]).fold(f64::MIN, f64::max);
                let units = (lead / self.cfg.margin_unit).clamp(0.0, 4.0);
                let bonus = match self.cfg.margin {
                    _ if !won => 0.0,
                    Margin::Steps => units.floor(),
                    _ => units,
                };
                (returns[p] + bonus) / 5.0
            })
            .collect();
        Values::from_slice(&r)
    }
}
