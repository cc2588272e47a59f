use crate::{Action, Error, ParamInfo, State};
use std::time::Duration;

/// Limits on one decision, set from outside the agent (the arena's `--move-time`, a web
/// request). An agent also honours the limits in its own spec; whichever is reached first stops it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Budget {
    /// Wall-clock time for this move.
    pub time: Option<Duration>,
    /// Search iterations (MCTS playouts).
    pub iterations: Option<u64>,
    /// Search nodes.
    pub nodes: Option<u64>,
    /// Search depth in plies.
    pub depth: Option<u32>,
    /// How long before the end of its time a timed search stops, kept in reserve for delays the
    /// agent cannot control: the machine descheduling it, the caller's own work (the "move
    /// overhead" of chess engines). `None`: 5% of the time, at most 15 ms.
    pub overhead: Option<Duration>,
}

impl Budget {
    /// No outside limit: the agent's own options decide.
    pub const UNLIMITED: Budget = Budget { time: None, iterations: None, nodes: None, depth: None, overhead: None };

    /// A wall-clock budget.
    pub fn time(time: Duration) -> Self {
        Budget { time: Some(time), ..Budget::UNLIMITED }
    }
}

/// A player: chooses an action for the player to move. Agents may keep state between moves (a
/// search tree to reuse); a new game gets a new agent.
pub trait Agent<S: State>: Send {
    /// The spec this agent was built from, with every option spelled out.
    fn spec(&self) -> String;

    /// Chooses a legal action for `state.current_player()`.
    fn act(&mut self, state: &S, budget: &Budget) -> Result<Action, Error>;
}

/// An agent behind a pointer, as registries build them from specs.
pub type BoxedAgent<S> = Box<dyn Agent<S>>;

/// Static description of an agent: name, one line, options with defaults.
#[derive(Clone, Copy, Debug)]
pub struct AgentInfo {
    /// Name used in spec strings.
    pub name: &'static str,
    /// What the agent does.
    pub about: &'static str,
    /// Options accepted after the colon.
    pub params: &'static [ParamInfo],
}
