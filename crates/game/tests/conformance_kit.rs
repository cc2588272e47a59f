//! The conformance kit must pass a correct game with chance and hidden information, and must
//! catch each kind of broken contract. Uses a tiny dice game written here for the purpose.

use meeple_game::conformance::{Config, check};
use meeple_game::{Action, Error, Game, GameInfo, Player, Rng, Spec, State, Turn, Values};
use rand::RngExt;
use std::fmt;

/// A contract the dice game can be told to break.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Bug {
    None,
    Notation,
    AcceptsIllegal,
    EarlyReturns,
    LeakyDeterminize,
    ShortObservation,
    NoLegalActions,
    UnstableHash,
}

/// Each player gets a secret die; then each in turn may reroll theirs once; high die wins.
#[derive(Clone, Debug)]
struct Dice {
    bug: Bug,
}

#[derive(Clone, Debug, PartialEq)]
struct DiceState {
    bug: Bug,
    dice: [u8; 2], // 0 = not rolled yet
    decided: u8,   // players who chose stay/reroll
    rerolling: bool,
    plies: u32,
}

impl Game for Dice {
    type State = DiceState;
    const INFO: GameInfo = GameInfo { name: "dice", about: "test game", params: &[] };
    fn from_spec(_: &Spec) -> Result<Self, Error> {
        Ok(Dice { bug: Bug::None })
    }
    fn spec(&self) -> Spec {
        Spec::new("dice")
    }
    fn num_players(&self) -> usize {
        2
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
    fn initial_state(&self) -> DiceState {
        DiceState { bug: self.bug, dice: [0, 0], decided: 0, rerolling: false, plies: 0 }
    }
}

impl DiceState {
    fn rolling(&self) -> Option<usize> {
        if self.dice[0] == 0 {
            Some(0)
        } else if self.dice[1] == 0 {
            Some(1)
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
        } else if self.decided < 2 {
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
        self.plies += 1;
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
        if self.bug == Bug::EarlyReturns && self.decided == 1 {
            return Some(Values::filled(2, 0.5));
        }
        (self.turn() == Turn::Terminal).then(|| match self.dice[0].cmp(&self.dice[1]) {
            std::cmp::Ordering::Greater => Values::two_player_win(0),
            std::cmp::Ordering::Less => Values::two_player_win(1),
            std::cmp::Ordering::Equal => Values::filled(2, 0.5),
        })
    }
    fn scores(&self) -> Values {
        Values::from_slice(&[self.dice[0] as f64, self.dice[1] as f64])
    }
    fn observation(&self, player: Player, out: &mut Vec<f32>) {
        out.clear();
        out.extend((1..=6).map(|d| f32::from(self.dice[player] == d)));
        out.push(self.decided as f32);
        if self.bug != Bug::ShortObservation {
            out.push(f32::from(self.rerolling));
        }
    }
    fn determinize(&self, player: Player, rng: &mut Rng) -> Self {
        let mut s = self.clone();
        let other = 1 - player;
        if s.dice[other] != 0 {
            s.dice[other] = rng.random_range(1..=6);
        }
        if self.bug == Bug::LeakyDeterminize && s.dice[player] != 0 {
            s.dice[player] = rng.random_range(1..=6);
        }
        s
    }
    fn zobrist(&self) -> u64 {
        let base = (self.dice[0] as u64) | (self.dice[1] as u64) << 8 | (self.decided as u64) << 16;
        if self.bug == Bug::UnstableHash {
            // Depends on where the value lives in memory: clones hash differently.
            return base ^ (self as *const Self as u64);
        }
        base | (self.rerolling as u64) << 24
    }
    fn action_to_string(&self, action: Action) -> String {
        match self.turn() {
            Turn::Chance => format!("d{}", action + 1),
            _ if self.bug == Bug::Notation => "stay".into(),
            _ => ["stay", "reroll"][action as usize].into(),
        }
    }
    fn parse_action(&self, text: &str) -> Result<Action, Error> {
        let bad = || Error::BadNotation { text: text.into(), reason: "stay, reroll or d1-d6".into() };
        match text {
            "stay" => Ok(0),
            "reroll" => Ok(1),
            _ => match text.strip_prefix('d').and_then(|d| d.parse::<u32>().ok()) {
                Some(d @ 1..=6) => Ok(d - 1),
                _ => Err(bad()),
            },
        }
    }
}

impl fmt::Display for DiceState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "dice {:?}, decided {}", self.dice, self.decided)
    }
}

#[test]
fn a_correct_game_with_chance_and_hidden_information_passes() {
    let report = check(&Dice { bug: Bug::None }, &Config::with_games(500)).unwrap();
    assert_eq!(report.games, Config::with_games(500).games);
    assert!(report.chance_nodes >= 2 * report.games, "every game deals two dice");
}

#[test]
fn each_broken_contract_is_caught() {
    let cases = [
        (Bug::Notation, "parses back"),
        (Bug::AcceptsIllegal, "is_legal(5) is true for an unlisted action"),
        (Bug::EarlyReturns, "returns"),
        (Bug::LeakyDeterminize, "determinize(0) changed player 0's own observation"),
        (Bug::ShortObservation, "has 7 values, shape says 8"),
        (Bug::NoLegalActions, "no legal actions in a non-terminal state"),
        (Bug::UnstableHash, "clone differs"),
    ];
    for (bug, expected) in cases {
        let err = check(&Dice { bug }, &Config::with_games(50)).expect_err(&format!("{bug:?} not caught"));
        assert!(err.contains(expected), "{bug:?}: '{err}' should mention '{expected}'");
        assert!(err.starts_with("dice seed "), "{err}");
    }
}
