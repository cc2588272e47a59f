//! Baselines: uniform random and first-legal-action.

use meeple_game::{Action, Agent, AgentInfo, Budget, Error, Rng, Spec, State, rng_from_seed};
use rand::RngExt;

pub(crate) const RANDOM_INFO: AgentInfo =
    AgentInfo { name: "random", about: "uniformly random legal action (the usual baseline)", params: &[] };

pub(crate) const FIRST_INFO: AgentInfo = AgentInfo {
    name: "first",
    about: "always the legal action with the lowest id (deterministic baseline)",
    params: &[],
};

fn no_action(agent: &str) -> Error {
    Error::Agent { agent: agent.to_string(), reason: "no legal action (the game is over or at a chance node)".into() }
}

/// Chooses uniformly among legal actions.
#[derive(Debug)]
pub struct RandomAgent {
    rng: Rng,
    legal: Vec<Action>,
}

impl RandomAgent {
    /// A random agent drawing from `seed`.
    pub fn new(seed: u64) -> Self {
        RandomAgent { rng: rng_from_seed(seed), legal: Vec::new() }
    }

    /// Builds from a spec (`random`; no options).
    pub fn from_spec(spec: &Spec, seed: u64) -> Result<Self, Error> {
        spec.options("agent random", RANDOM_INFO.params)?;
        Ok(Self::new(seed))
    }
}

impl<S: State> Agent<S> for RandomAgent {
    fn spec(&self) -> String {
        "random".into()
    }

    fn act(&mut self, state: &S, _budget: &Budget) -> Result<Action, Error> {
        state.legal_actions(&mut self.legal);
        if self.legal.is_empty() {
            return Err(no_action("random"));
        }
        Ok(self.legal[self.rng.random_range(0..self.legal.len())])
    }
}

/// Chooses the legal action with the lowest id.
#[derive(Debug, Default)]
pub struct FirstAgent {
    legal: Vec<Action>,
}

impl FirstAgent {
    /// Builds from a spec (`first`; no options).
    pub fn from_spec(spec: &Spec) -> Result<Self, Error> {
        spec.options("agent first", FIRST_INFO.params)?;
        Ok(FirstAgent::default())
    }
}

impl<S: State> Agent<S> for FirstAgent {
    fn spec(&self) -> String {
        "first".into()
    }

    fn act(&mut self, state: &S, _budget: &Budget) -> Result<Action, Error> {
        state.legal_actions(&mut self.legal);
        self.legal.first().copied().ok_or_else(|| no_action("first"))
    }
}
