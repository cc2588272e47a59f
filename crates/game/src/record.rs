use crate::{Error, Game, Spec, State};
use serde::{Deserialize, Serialize};

/// A finished (or interrupted) game: enough to replay it move by move on any machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GameRecord {
    /// The game's canonical spec (`connect4:rows=6,cols=7`).
    pub game: String,
    /// The seed the game was played from.
    pub seed: u64,
    /// Agent specs, in seat order.
    pub agents: Vec<String>,
    /// Every action, chance outcomes included, in the game's notation.
    pub actions: Vec<String>,
    /// Per-player returns; absent if the game did not finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub returns: Option<Vec<f64>>,
    /// Per-player scores at the last state.
    #[serde(default)]
    pub scores: Vec<f64>,
    /// The game's own figures at the end ([`crate::State::metrics`]).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub metrics: std::collections::BTreeMap<String, f64>,
    /// The seat that resigned, ending the game before its rules did: `returns` are then
    /// [`GameRecord::resignation_returns`], and the last position is not terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resigned: Option<usize>,
}

impl GameRecord {
    /// The returns of a game `seat` resigned among `players`: nothing for it, the others share
    /// the win (one player's return sums to 1, as the rules' own outcomes do).
    pub fn resignation_returns(players: usize, seat: usize) -> Vec<f64> {
        let others = players.saturating_sub(1).max(1) as f64;
        (0..players).map(|p| if p == seat { 0.0 } else { 1.0 / others }).collect()
    }

    /// Reads a record from one line of JSON.
    pub fn from_json(text: &str) -> Result<Self, Error> {
        serde_json::from_str(text).map_err(|e| Error::Record(format!("not a game record: {e}")))
    }

    /// The record as one line of JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("records always serialise")
    }
}

/// Replays `record` on `game`, checking every move, and returns every state from the initial one
/// to the last. Fails if the record names another game, holds an unreadable or illegal move, or
/// claims returns, scores or figures the replay does not reach (records without scores or
/// figures are not checked for them).
pub fn replay<G: Game>(game: &G, record: &GameRecord) -> Result<Vec<G::State>, Error> {
    let spec: Spec = record.game.parse()?;
    if spec.name != G::INFO.name || G::from_spec(&spec)?.spec() != game.spec() {
        return Err(Error::Record(format!("record is for '{}', not '{}'", record.game, game.spec())));
    }
    let mut state = game.initial_state();
    let mut states = vec![state.clone()];
    for (ply, text) in record.actions.iter().enumerate() {
        let action = state.parse_action(text).map_err(|e| Error::Record(format!("ply {}: {e}", ply + 1)))?;
        state.apply(action).map_err(|e| Error::Record(format!("ply {} ('{text}'): {e}", ply + 1)))?;
        states.push(state.clone());
    }
    if let Some(seat) = record.resigned {
        let n = game.num_players();
        if seat >= n {
            return Err(Error::Record(format!("record says seat {seat} resigned; the game has seats 0..{n}")));
        }
        if state.is_terminal() {
            return Err(Error::Record(format!("record says seat {seat} resigned, but the game ended by its rules")));
        }
        let expected = GameRecord::resignation_returns(n, seat);
        if record.returns.as_deref() != Some(expected.as_slice()) {
            return Err(Error::Record(format!(
                "record says seat {seat} resigned with returns {:?}; a resignation gives {expected:?}",
                record.returns
            )));
        }
    } else if let Some(expected) = &record.returns {
        match state.returns() {
            Some(r) if r.as_slice() == expected.as_slice() => {}
            Some(r) => return Err(Error::Record(format!("record says returns {expected:?}, replay gives {r:?}"))),
            None => return Err(Error::Record("record says the game ended, replay is not over".into())),
        }
    }
    if !record.scores.is_empty() && record.scores.as_slice() != state.scores().as_slice() {
        return Err(Error::Record(format!(
            "record says scores {:?}, replay gives {:?}",
            record.scores,
            state.scores().as_slice()
        )));
    }
    if !record.metrics.is_empty() {
        let replayed: std::collections::BTreeMap<String, f64> =
            state.metrics().into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        if replayed != record.metrics {
            return Err(Error::Record(format!("record says figures {:?}, replay gives {replayed:?}", record.metrics)));
        }
    }
    Ok(states)
}
