use crate::Action;

/// Everything a user can get wrong when naming games, agents, options, moves or files, and what
/// a game refuses. Each message names what was wrong and what is accepted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// A spec string that does not have the `name` or `name:key=value,...` form.
    #[error("bad spec '{spec}': {reason}")]
    BadSpec { spec: String, reason: String },
    /// A game or agent name that is not registered.
    #[error("unknown {kind} '{name}'; accepted: {accepted}")]
    UnknownName { kind: &'static str, name: String, accepted: String },
    /// An option key the game or agent does not take.
    #[error("{subject}: unknown option '{key}'; accepted: {accepted}")]
    UnknownOption { subject: String, key: String, accepted: String },
    /// An option value that does not parse or is out of range.
    #[error("{subject}: bad value '{value}' for '{key}'; expected {expected}")]
    BadValue { subject: String, key: String, value: String, expected: String },
    /// An action the checked apply refused.
    #[error("illegal move: {reason}")]
    IllegalAction { action: Action, reason: String },
    /// Text that is not a move in the game's notation.
    #[error("cannot read move '{text}': {reason}")]
    BadNotation { text: String, reason: String },
    /// A move was asked of a finished game.
    #[error("the game is over")]
    GameOver,
    /// A game record that does not replay.
    #[error("game record: {0}")]
    Record(String),
    /// A request whose parts do not fit together (agent count vs seats, game count vs seatings).
    #[error("{0}")]
    Invalid(String),
    /// An agent could not choose a move (no legal action, input closed, ...).
    #[error("agent {agent}: {reason}")]
    Agent { agent: String, reason: String },
}
