//! A tiny game with chance and hidden information, for testing code that must handle both
//! (the conformance kit, determinized and expectimax search). Not a game users play.
//!
//! Each of 2-4 players rolls a secret die; then, in seat order, each may `stay` or `reroll` once;
//! the highest die wins (tied leaders share the win). [`Bug`] makes it break one contract on
//! purpose, so tests can prove the conformance kit notices.

use crate::{Action, Error, Game, GameInfo, Player, Rng, Spec, State, Turn, Values};
use rand::RngExt;
use std::fmt;

/// A contract [`Dice`] can be told to break.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    /// A correct game.
    None,
    /// `action_to_string` names every player action `stay`.
    Notation,
    /// The checked apply accepts action id 5 everywhere.
    AcceptsIllegal,
    /// Returns appear after the first decision, before the end.
    EarlyReturns,
    /// `determinize` rerolls the observer's own die.
    LeakyDeterminize,
    /// Observations are one value short of the declared shape.
    ShortObservation,
    /// Players have no legal actions.
    NoLegalActions,
    /// The hash depends on where the state lives in memory.
    UnstableHash,
    /// Observations count decided players without scaling them into 0..=1.
    UnscaledObservation,
    /// The page's view shows every die to every viewer.
    LeakyView,
    /// Declares action planes although its observation is no board.
    ActionPlanes,
}

/// The dice game; see the module documentation.
#[derive(Clone, Debug)]
pub struct Dice {
    /// Number of players, 2-4.
    pub players: usize,
    /// The contract to break, if any.
    pub bug: Bug,
}

impl Default for Dice {
    fn default() -> Self {
        Dice { players: 2, bug: Bug::None }
    }
}

/// A position of [`Dice`].
#[derive(Clone, Debug, PartialEq)]
pub struct DiceState {
    bug: Bug,
    players: u8,
    /// Each player's die, 1-6; 0 = not rolled yet.
    pub dice: [u8; 4],
    decided: u8,
    rerolling: bool,
}

const PARAMS: &[crate::ParamInfo] =
    &[crate::ParamInfo { name: "players", default: "2", accepts: "integer 2..=4", help: "number of players" }];

impl Game for Dice {
    type State = DiceState;
    const INFO: GameInfo =
        GameInfo { name: "dice", about: "test game: secret dice, one optional reroll", params: PARAMS };

    fn from_spec(spec: &Spec) -> Result<Self, Error> {
        let o = spec.options("game dice", PARAMS)?;
        Ok(Dice { players: o.get_in("players", 2..=4)?, bug: Bug::None })
    }
    fn spec(&self) -> Spec {
        Spec::new("dice").with("players", self.players)
    }
    fn num_players(&self) -> usize {
        self.players
    }
    fn num_actions(&self) -> usize {
        2
    }
    fn max_chance_outcomes(&self) -> usize {
        6
    }
    fn observation_shape(&self) -> Vec<usize> {
        vec![8]
    }
    fn action_planes(&self) -> Option<crate::ActionPlanes> {
        (self.bug == Bug::ActionPlanes).then(|| crate::ActionPlanes { planes: 1, index: vec![0, 1] })
    }
    fn initial_state(&self) -> DiceState {
        DiceState { bug: self.bug, players: self.players as u8, dice: [0; 4], decided: 0, rerolling: false }
    }
}

impl DiceState {
    /// A state where every die is rolled (`dice[p]` for each player) and `decided` players have
    /// made their choice: for tests that need a particular position.
    pub fn with_dice(game: &Dice, dice: &[u8], decided: u8) -> Self {
        let mut s = game.initial_state();
        s.dice[..dice.len()].copy_from_slice(dice);
        s.decided = decided;
        s
    }

    fn rolling(&self) -> Option<usize> {
        if let Some(p) = (0..self.players as usize).find(|&p| self.dice[p] == 0) {
            Some(p)
        } else if self.rerolling {
            Some(self.decided as usize - 1)
        } else {
            None
        }
    }
}

impl State for DiceState {
    fn turn(&self) -> Turn {
        if self.rolling().is_some() {
            Turn::Chance
        } else if self.decided < self.players {
            Turn::Player(self.decided as usize)
        } else {
            Turn::Terminal
        }
    }
    fn legal_actions(&self, out: &mut Vec<Action>) {
        out.clear();
        if matches!(self.turn(), Turn::Player(_)) && self.bug != Bug::NoLegalActions {
            out.extend([0, 1]);
        }
    }
    fn chance_outcomes(&self, out: &mut Vec<(Action, f64)>) {
        out.clear();
        if self.turn() == Turn::Chance {
            out.extend((0..6).map(|a| (a, 1.0 / 6.0)));
        }
    }
    fn is_legal(&self, action: Action) -> bool {
        if self.bug == Bug::AcceptsIllegal && action == 5 {
            return true;
        }
        match self.turn() {
            Turn::Chance => action < 6,
            Turn::Player(_) => action < 2,
            Turn::Terminal => false,
        }
    }
    fn apply_unchecked(&mut self, action: Action) {
        match self.rolling() {
            Some(p) => {
                self.dice[p] = action as u8 + 1;
                self.rerolling = false;
            }
            None => {
                self.decided += 1;
                self.rerolling = action == 1;
            }
        }
    }
    fn returns(&self) -> Option<Values> {
        let n = self.players as usize;
        if self.bug == Bug::EarlyReturns && self.decided == 1 {
            return Some(Values::filled(n, 1.0 / n as f64));
        }
        if self.turn() != Turn::Terminal {
            return None;
        }
        let best = self.dice[..n].iter().copied().max().unwrap_or(0);
        let leaders = self.dice[..n].iter().filter(|&&d| d == best).count() as f64;
        let r: Vec<f64> = self.dice[..n].iter().map(|&d| if d == best { 1.0 / leaders } else { 0.0 }).collect();
        Some(Values::from_slice(&r))
    }
    fn scores(&self) -> Values {
        let r: Vec<f64> = self.dice[..self.players as usize].iter().map(|&d| d as f64).collect();
        Values::from_slice(&r)
    }
    fn observation(&self, player: Player, out: &mut Vec<f32>) {
        out.clear();
        out.extend((1..=6).map(|d| f32::from(self.dice[player] == d)));
        let scale = if self.bug == Bug::UnscaledObservation { 1.0 } else { self.players as f32 };
        out.push(self.decided as f32 / scale);
        if self.bug != Bug::ShortObservation {
            out.push(f32::from(self.rerolling));
        }
    }
    fn observation_string(&self, player: Player) -> String {
        format!("your die {}, {} decided", self.dice[player], self.decided)
    }
    fn view(&self, viewer: Option<Player>) -> serde_json::Value {
        let dice: Vec<Option<u8>> = (0..self.players as usize)
            .map(|p| (viewer == Some(p) || self.bug == Bug::LeakyView).then_some(self.dice[p]))
            .collect();
        serde_json::json!({ "dice": dice, "decided": self.decided })
    }
    fn determinize(&self, player: Player, rng: &mut Rng) -> Self {
        let mut s = self.clone();
        for p in 0..self.players as usize {
            let hidden = p != player || self.bug == Bug::LeakyDeterminize;
            if hidden && s.dice[p] != 0 {
                s.dice[p] = rng.random_range(1..=6);
            }
        }
        s
    }
    fn zobrist(&self) -> u64 {
        let mut key = self.decided as u64 | (self.rerolling as u64) << 8;
        for (i, &d) in self.dice.iter().enumerate() {
            key |= (d as u64) << (16 + 8 * i);
        }
        if self.bug == Bug::UnstableHash {
            return key ^ (self as *const Self as u64);
        }
        crate::zobrist::splitmix64(key)
    }
    fn action_to_string(&self, action: Action) -> String {
        match self.turn() {
            Turn::Chance => format!("d{}", action + 1),
            _ if self.bug == Bug::Notation => "stay".into(),
            _ => ["stay", "reroll"].get(action as usize).unwrap_or(&"?").to_string(),
        }
    }
    fn parse_action(&self, text: &str) -> Result<Action, Error> {
        match text {
            "stay" => Ok(0),
            "reroll" => Ok(1),
            _ => match text.strip_prefix('d').and_then(|d| d.parse::<u32>().ok()) {
                Some(d @ 1..=6) => Ok(d - 1),
                _ => Err(Error::BadNotation { text: text.into(), reason: "stay, reroll or d1-d6".into() }),
            },
        }
    }
}

impl fmt::Display for DiceState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "dice {:?}, {} decided", &self.dice[..self.players as usize], self.decided)
    }
}
