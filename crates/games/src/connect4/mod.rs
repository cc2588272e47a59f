//! Connect four on bitboards, any board up to 64 bits (7 columns x 6 rows by default).
//!
//! Layout: column `c` owns bits `c*(rows+1) .. c*(rows+1)+rows`, bottom first, with one spare bit
//! on top of each column so shifted line tests never wrap into the next column.

use meeple_game::{
    Action, AgentInfo, BoxedEvaluator, Error, Game, GameInfo, ParamInfo, Player, RulesSection, Spec, State, Turn,
    Values,
};
use std::fmt;

mod eval;
#[cfg(test)]
mod tests;

pub use eval::LinesEvaluator;

/// Connect four: drop discs into columns; four in a row (any direction) wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Connect4 {
    rows: u8,
    cols: u8,
}

impl Default for Connect4 {
    fn default() -> Self {
        Connect4 { rows: 6, cols: 7 }
    }
}

impl Connect4 {
    /// A board of `rows` x `cols`; `(rows+1)*cols` must fit in 64 bits.
    pub fn new(rows: u8, cols: u8) -> Result<Self, Error> {
        let spec = Spec::new("connect4").with("rows", rows).with("cols", cols);
        Self::from_spec(&spec)
    }
}

impl Game for Connect4 {
    fn rules(&self) -> Vec<RulesSection> {
        vec![RulesSection {
            heading: "How to play".into(),
            lines: vec![
                format!("A board of {} columns and {} rows; X moves first.", self.cols, self.rows),
                "Drop a disc into a column that is not full: it falls to the lowest empty space.".into(),
                "Four of your discs in a line (across, up or diagonal) wins.".into(),
                "A full board with no line of four is a draw.".into(),
            ],
        }]
    }

    fn table_agents(&self) -> (String, String) {
        ("alphabeta:time=1s,eval=lines".into(), "alphabeta:time=2s,eval=lines".into())
    }

    type State = Connect4State;

    const INFO: GameInfo = GameInfo {
        name: "connect4",
        about: "Connect four; X moves first; four in a row wins. Bitboards",
        params: &[
            ParamInfo {
                name: "rows",
                default: "6",
                accepts: "integer 4..=15 with (rows+1)*cols <= 64",
                help: "board height",
            },
            ParamInfo {
                name: "cols",
                default: "7",
                accepts: "integer 4..=12 with (rows+1)*cols <= 64",
                help: "board width",
            },
        ],
    };

    fn from_spec(spec: &Spec) -> Result<Self, Error> {
        let o = spec.options("game connect4", Self::INFO.params)?;
        let rows: u8 = o.get_in("rows", 4..=15)?;
        let cols: u8 = o.get_in("cols", 4..=12)?;
        if (rows as u32 + 1) * cols as u32 > 64 {
            let key = if o.given("rows") { "rows" } else { "cols" };
            let value = if key == "rows" { rows } else { cols };
            return Err(o.bad_value(key, &value.to_string()));
        }
        Ok(Connect4 { rows, cols })
    }

    fn spec(&self) -> Spec {
        Spec::new("connect4").with("rows", self.rows).with("cols", self.cols)
    }

    fn num_players(&self) -> usize {
        2
    }

    fn num_actions(&self) -> usize {
        self.cols as usize
    }

    fn observation_shape(&self) -> Vec<usize> {
        vec![3, self.rows as usize, self.cols as usize]
    }

    fn initial_state(&self) -> Connect4State {
        Connect4State { current: 0, mask: 0, moves: 0, rows: self.rows, cols: self.cols, winner: None }
    }

    fn evaluator(&self, spec: &Spec) -> Option<Result<BoxedEvaluator<Connect4State>, Error>> {
        (spec.name == eval::LINES_INFO.name).then(|| {
            let o = spec.options("evaluator lines", eval::LINES_INFO.params)?;
            let given: String = o.get("weights")?;
            let weights = if given.is_empty() {
                eval::LINES_WEIGHTS
            } else {
                // Numbers inline, or a file of them (`meeple train rootstrap` writes one).
                match meeple_game::access::numbers(&given)? {
                    Some(v) if v.len() == 6 && v.iter().all(|x| x.is_finite()) => [v[0], v[1], v[2], v[3], v[4], v[5]],
                    _ => return Err(o.bad_value("weights", &given)),
                }
            };
            Ok(Box::new(LinesEvaluator::new(self.rows, self.cols).with_weights(weights))
                as BoxedEvaluator<Connect4State>)
        })
    }

    fn evaluator_infos(&self) -> Vec<AgentInfo> {
        vec![eval::LINES_INFO]
    }

    fn ladder_agents(&self) -> Vec<String> {
        vec!["alphabeta:depth=4,eval=lines".to_string()]
    }
}

/// A connect four position: the mover's discs and all discs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Connect4State {
    /// Discs of the player to move.
    current: u64,
    /// All discs.
    mask: u64,
    moves: u8,
    rows: u8,
    cols: u8,
    winner: Option<u8>,
}

impl Connect4State {
    fn height(&self) -> u32 {
        self.rows as u32 + 1
    }

    fn top_bit(&self, col: u32) -> u64 {
        1u64 << (self.rows as u32 - 1 + col * self.height())
    }

    fn bottom_bit(&self, col: u32) -> u64 {
        1u64 << (col * self.height())
    }

    fn mover(&self) -> usize {
        (self.moves & 1) as usize
    }

    /// A bitboard with its columns in mirror order.
    fn mirror_bits(&self, b: u64) -> u64 {
        let h = self.height();
        let column = (1u64 << h) - 1;
        (0..self.cols as u32).fold(0, |m, c| m | ((b >> (c * h)) & column) << ((self.cols as u32 - 1 - c) * h))
    }

    /// Discs of `player`.
    fn discs(&self, player: usize) -> u64 {
        if player == self.mover() { self.current } else { self.current ^ self.mask }
    }

    fn has_four(&self, b: u64) -> bool {
        let h = self.height();
        // vertical, horizontal, and the two diagonals
        for shift in [1, h, h - 1, h + 1] {
            let m = b & (b >> shift);
            if m & (m >> (2 * shift)) != 0 {
                return true;
            }
        }
        false
    }

    fn column_full(&self, col: u32) -> bool {
        self.mask & self.top_bit(col) != 0
    }

    /// The disc at `row` (0 = bottom), `col`: `Some(player)` or `None`.
    pub fn cell(&self, row: u32, col: u32) -> Option<Player> {
        let bit = 1u64 << (col * self.height() + row);
        if self.mask & bit == 0 {
            None
        } else if self.discs(0) & bit != 0 {
            Some(0)
        } else {
            Some(1)
        }
    }

    /// Plays a sequence of columns written as digits from 1 (`"4453"`), checking each move.
    pub fn play_columns(mut self, columns: &str) -> Result<Self, Error> {
        for c in columns.chars() {
            let a = self.parse_action(&c.to_string())?;
            self.apply(a)?;
        }
        Ok(self)
    }
}

impl State for Connect4State {
    fn prompt(&self) -> Option<String> {
        Some("Drop a disc into a column".into())
    }

    fn describe_for(&self, _viewer: Player, action: Action) -> String {
        format!("disc in column {}", self.action_to_string(action))
    }

    const CHEAP_IS_LEGAL: bool = true;

    fn turn(&self) -> Turn {
        if self.winner.is_some() || self.moves as u32 == self.rows as u32 * self.cols as u32 {
            Turn::Terminal
        } else {
            Turn::Player(self.mover())
        }
    }

    fn legal_actions(&self, out: &mut Vec<Action>) {
        out.clear();
        if self.turn() == Turn::Terminal {
            return;
        }
        out.extend((0..self.cols as u32).filter(|&c| !self.column_full(c)));
    }

    fn is_legal(&self, action: Action) -> bool {
        action < self.cols as u32 && !self.column_full(action) && self.turn() != Turn::Terminal
    }

    fn apply_unchecked(&mut self, action: Action) {
        // `current` becomes the opponent's discs; the new disc lands on top of the column.
        self.current ^= self.mask;
        self.mask |= self.mask + self.bottom_bit(action);
        let mover_discs = self.current ^ self.mask;
        if self.has_four(mover_discs) {
            self.winner = Some(self.mover() as u8);
        }
        self.moves += 1;
    }

    fn returns(&self) -> Option<Values> {
        Values::two_player_returns(self.winner.map(usize::from), self.turn() == Turn::Terminal)
    }

    fn scores(&self) -> Values {
        Values::two_player_scores(self.winner.map(usize::from))
    }

    fn observation(&self, player: Player, out: &mut Vec<f32>) {
        out.clear();
        let planes = [self.discs(player), self.discs(1 - player)];
        let cell = |b: u64, r: u32, c: u32| ((b >> (c * self.height() + r)) & 1) as f32;
        let (rows, cols) = (self.rows as u32, self.cols as u32);
        for plane in planes {
            for r in (0..rows).rev() {
                out.extend((0..cols).map(|c| cell(plane, r, c)));
            }
        }
        for r in (0..rows).rev() {
            out.extend((0..cols).map(|c| 1.0 - cell(self.mask, r, c)));
        }
    }

    fn ownership(&self, player: Player, out: &mut Vec<f32>) -> bool {
        // The discs, as the observation's first two planes lay them out.
        out.clear();
        let (mine, theirs) = (self.discs(player), self.discs(1 - player));
        let cell = |b: u64, r: u32, c: u32| ((b >> (c * self.height() + r)) & 1) as f32;
        for r in (0..self.rows as u32).rev() {
            out.extend((0..self.cols as u32).map(|c| cell(mine, r, c) - cell(theirs, r, c)));
        }
        true
    }

    fn view(&self, _viewer: Option<Player>) -> serde_json::Value {
        let (rows, cols) = (self.rows as usize, self.cols as usize);
        let owner = |r: usize, c: usize| -> Option<usize> {
            let bit = 1u64 << (c as u32 * self.height() + r as u32);
            (self.mask & bit != 0).then(|| usize::from(self.discs(1) & bit != 0))
        };
        // Rows from the top, as the board is drawn.
        let cells: Vec<Vec<Option<usize>>> =
            (0..rows).rev().map(|r| (0..cols).map(|c| owner(r, c)).collect()).collect();
        let mut win_line = Vec::new();
        if let Some(w) = self.winner {
            'search: for r in 0..rows as i32 {
                for c in 0..cols as i32 {
                    for (dr, dc) in [(0, 1), (1, 0), (1, 1), (1, -1)] {
                        let line: Vec<(i32, i32)> = (0..4).map(|k| (r + k * dr, c + k * dc)).collect();
                        let all = line.iter().all(|&(y, x)| {
                            (0..rows as i32).contains(&y)
                                && (0..cols as i32).contains(&x)
                                && owner(y as usize, x as usize) == Some(w as usize)
                        });
                        if all {
                            win_line = line.iter().map(|&(y, x)| [rows as i32 - 1 - y, x]).collect();
                            break 'search;
                        }
                    }
                }
            }
        }
        serde_json::json!({ "rows": rows, "cols": cols, "cells": cells, "win_line": win_line })
    }

    fn action_path(&self, action: Action) -> Vec<String> {
        vec![format!("c:{action}")]
    }

    fn symmetries(&self) -> usize {
        2
    }

    fn symmetric(&self, k: usize) -> Self {
        if k == 0 {
            return *self;
        }
        Connect4State { current: self.mirror_bits(self.current), mask: self.mirror_bits(self.mask), ..*self }
    }

    fn symmetric_action(&self, action: Action, k: usize) -> Action {
        if k == 0 || action >= self.cols as u32 { action } else { self.cols as u32 - 1 - action }
    }

    fn zobrist(&self) -> u64 {
        // `current + mask` is an exact key of the position (one spare bit per column keeps it
        // unambiguous); mixing it with a bijection keeps distinct positions distinct.
        meeple_game::zobrist::splitmix64(self.current + self.mask)
    }

    fn action_to_string(&self, action: Action) -> String {
        (action as u64 + 1).to_string()
    }

    fn parse_action(&self, text: &str) -> Result<Action, Error> {
        match text.trim().parse::<u32>() {
            Ok(c) if (1..=self.cols as u32).contains(&c) => Ok(c - 1),
            _ => Err(Error::BadNotation {
                text: text.to_string(),
                reason: format!("a move is a column number 1-{}", self.cols),
            }),
        }
    }

    fn illegal_reason(&self, action: Action) -> String {
        if self.turn() == Turn::Terminal {
            "the game is over".into()
        } else if action >= self.cols as u32 {
            format!("there is no column {} (columns are 1-{})", action as u64 + 1, self.cols)
        } else {
            format!("column {} is full", action + 1)
        }
    }
}

impl fmt::Display for Connect4State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for r in (0..self.rows as u32).rev() {
            for c in 0..self.cols as u32 {
                let ch = match self.cell(r, c) {
                    Some(0) => 'X',
                    Some(_) => 'O',
                    None => '.',
                };
                write!(f, "{}{ch}", if c == 0 { "" } else { " " })?;
            }
            writeln!(f)?;
        }
        let labels: Vec<String> = (1..=self.cols).map(|c| (c % 10).to_string()).collect();
        write!(f, "{}", labels.join(" "))
    }
}
