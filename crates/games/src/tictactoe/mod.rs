//! Tic-tac-toe: the smallest complete test of the interface (its perft table is known exactly).

use meeple_game::{Action, Error, Game, GameInfo, Player, RulesSection, Spec, State, Turn, Values};
use std::fmt;

#[cfg(test)]
mod tests;

const LINES: [u16; 8] = [0o007, 0o070, 0o700, 0o111, 0o222, 0o444, 0o421, 0o124];
const FULL: u16 = 0o777;

fn has_line(marks: u16) -> bool {
    for line in LINES {
        if marks & line == line {
            return true;
        }
    }
    false
}

/// Tic-tac-toe on 3x3; X (player 0) moves first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TicTacToe;

impl Game for TicTacToe {
    fn rules(&self) -> Vec<RulesSection> {
        vec![RulesSection::new(
            "How to play",
            &[
                "X moves first; the players take turns marking an empty square.",
                "Three of your marks in a row, column or diagonal wins.",
                "A full board with no line is a draw (which perfect play always reaches).",
            ],
        )]
    }

    fn table_agents(&self) -> (String, String) {
        ("alphabeta".into(), "alphabeta".into())
    }

    type State = TicTacToeState;

    const INFO: GameInfo = GameInfo {
        name: "tictactoe",
        about: "Tic-tac-toe, 3x3; X moves first. Test game with a known perft table",
        params: &[],
    };

    fn from_spec(spec: &Spec) -> Result<Self, Error> {
        spec.options("game tictactoe", Self::INFO.params)?;
        Ok(TicTacToe)
    }

    fn spec(&self) -> Spec {
        Spec::new(Self::INFO.name)
    }

    fn num_players(&self) -> usize {
        2
    }

    fn num_actions(&self) -> usize {
        9
    }

    fn observation_shape(&self) -> Vec<usize> {
        vec![3, 3, 3]
    }

    fn initial_state(&self) -> TicTacToeState {
        TicTacToeState { marks: [0, 0], winner: None }
    }
}

/// Cells are bits 0..9, row-major from the top-left (a3 in notation is bit 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TicTacToeState {
    marks: [u16; 2],
    winner: Option<u8>,
}

impl TicTacToeState {
    fn filled(&self) -> u16 {
        self.marks[0] | self.marks[1]
    }

    fn mover(&self) -> usize {
        (self.filled().count_ones() % 2) as usize
    }

    /// Builds a position from a 9-character board (row-major from the top, `x`, `o`, `.`).
    /// For tests and puzzles; the side to move follows from the counts.
    pub fn from_board(board: &str) -> Result<Self, Error> {
        let bad = |reason: &str| Error::BadNotation { text: board.to_string(), reason: reason.to_string() };
        let cells: Vec<char> = board.chars().filter(|c| !c.is_whitespace()).collect();
        if cells.len() != 9 {
            return Err(bad("need 9 cells of x, o or ."));
        }
        let mut s = TicTacToeState { marks: [0, 0], winner: None };
        for (i, c) in cells.iter().enumerate() {
            match c.to_ascii_lowercase() {
                'x' => s.marks[0] |= 1 << i,
                'o' => s.marks[1] |= 1 << i,
                '.' => {}
                _ => return Err(bad("cells are x, o or .")),
            }
        }
        let (x, o) = (s.marks[0].count_ones(), s.marks[1].count_ones());
        if !(x == o || x == o + 1) {
            return Err(bad("x moves first, so x has as many marks as o or one more"));
        }
        match (has_line(s.marks[0]), has_line(s.marks[1])) {
            (true, true) => return Err(bad("both players have a line")),
            (true, false) => s.winner = Some(0),
            (false, true) => s.winner = Some(1),
            _ => {}
        }
        Ok(s)
    }
}

/// Cell `i` (row-major) under symmetry `k` of the square: `k % 4` quarter turns clockwise,
/// then a mirror of the columns when `k >= 4`.
fn map_cell(k: usize, i: usize) -> usize {
    let (mut r, mut c) = (i / 3, i % 3);
    for _ in 0..k % 4 {
        (r, c) = (c, 2 - r);
    }
    if k >= 4 {
        c = 2 - c;
    }
    r * 3 + c
}

fn map_marks(k: usize, marks: u16) -> u16 {
    (0..9).filter(|&i| marks >> i & 1 == 1).fold(0, |m, i| m | 1 << map_cell(k, i))
}

impl State for TicTacToeState {
    fn prompt(&self) -> Option<String> {
        let mark = if self.current_player() == Some(0) { "X" } else { "O" };
        Some(format!("Place your {mark} on an empty square"))
    }

    fn describe_for(&self, _viewer: Player, action: Action) -> String {
        let mark = if self.current_player() == Some(0) { "X" } else { "O" };
        format!("{mark} on {}", self.action_to_string(action))
    }

    const CHEAP_IS_LEGAL: bool = true;

    fn symmetries(&self) -> usize {
        8
    }

    fn symmetric(&self, k: usize) -> Self {
        TicTacToeState { marks: self.marks.map(|m| map_marks(k, m)), winner: self.winner }
    }

    fn symmetric_action(&self, action: Action, k: usize) -> Action {
        if action >= 9 { action } else { map_cell(k, action as usize) as Action }
    }

    fn turn(&self) -> Turn {
        if self.winner.is_some() || self.filled() == FULL { Turn::Terminal } else { Turn::Player(self.mover()) }
    }

    fn legal_actions(&self, out: &mut Vec<Action>) {
        out.clear();
        if self.turn() == Turn::Terminal {
            return;
        }
        let mut empty = !self.filled() & FULL;
        while empty != 0 {
            out.push(empty.trailing_zeros());
            empty &= empty - 1;
        }
    }

    fn is_legal(&self, action: Action) -> bool {
        action < 9 && self.filled() & (1 << action) == 0 && self.turn() != Turn::Terminal
    }

    fn apply_unchecked(&mut self, action: Action) {
        let p = self.mover();
        self.marks[p] |= 1 << action;
        if has_line(self.marks[p]) {
            self.winner = Some(p as u8);
        }
    }

    fn returns(&self) -> Option<Values> {
        Values::two_player_returns(self.winner.map(usize::from), self.filled() == FULL)
    }

    fn scores(&self) -> Values {
        Values::two_player_scores(self.winner.map(usize::from))
    }

    fn view(&self, _viewer: Option<Player>) -> serde_json::Value {
        let cells: Vec<Option<usize>> = (0..9).map(|i| (0..2).find(|&p| self.marks[p] >> i & 1 == 1)).collect();
        let win_line = self
            .winner
            .and_then(|p| LINES.iter().find(|&&l| self.marks[p as usize] & l == l))
            .map(|&l| (0..9).filter(|i| l >> i & 1 == 1).collect::<Vec<u32>>());
        serde_json::json!({ "cells": cells, "win_line": win_line })
    }

    fn action_path(&self, action: Action) -> Vec<String> {
        vec![format!("c:{action}")]
    }

    fn observation(&self, player: Player, out: &mut Vec<f32>) {
        out.clear();
        let mine = self.marks[player];
        let theirs = self.marks[1 - player];
        for plane in [mine, theirs, !(mine | theirs) & FULL] {
            out.extend((0..9).map(|i| ((plane >> i) & 1) as f32));
        }
    }

    fn ownership(&self, player: Player, out: &mut Vec<f32>) -> bool {
        out.clear();
        let (mine, theirs) = (self.marks[player], self.marks[1 - player]);
        out.extend((0..9).map(|i| ((mine >> i) & 1) as f32 - ((theirs >> i) & 1) as f32));
        true
    }

    fn zobrist(&self) -> u64 {
        // marks are an exact key; the bijective mix spreads it over 64 bits.
        meeple_game::zobrist::splitmix64(self.marks[0] as u64 | (self.marks[1] as u64) << 9)
    }

    fn action_to_string(&self, action: Action) -> String {
        if action >= 9 {
            return format!("#{action}");
        }
        let (row, col) = (action / 3, action % 3);
        format!("{}{}", (b'a' + col as u8) as char, 3 - row)
    }

    fn parse_action(&self, text: &str) -> Result<Action, Error> {
        let t = text.trim().to_ascii_lowercase();
        let b = t.as_bytes();
        if b.len() == 2 && (b'a'..=b'c').contains(&b[0]) && (b'1'..=b'3').contains(&b[1]) {
            let col = (b[0] - b'a') as u32;
            let row = 2 - (b[1] - b'1') as u32;
            return Ok(row * 3 + col);
        }
        Err(Error::BadNotation {
            text: text.to_string(),
            reason: "a cell is a column a-c and a row 1-3, like b2".to_string(),
        })
    }

    fn illegal_reason(&self, action: Action) -> String {
        if self.turn() == Turn::Terminal {
            "the game is over".into()
        } else if action >= 9 {
            format!("action id {action} is not a cell (0..9)")
        } else {
            format!("{} is already taken", self.action_to_string(action))
        }
    }
}

impl fmt::Display for TicTacToeState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for row in 0..3 {
            write!(f, "{} ", 3 - row)?;
            for col in 0..3 {
                let bit = 1 << (row * 3 + col);
                let c = if self.marks[0] & bit != 0 {
                    'X'
                } else if self.marks[1] & bit != 0 {
                    'O'
                } else {
                    '.'
                };
                write!(f, " {c}")?;
            }
            writeln!(f)?;
        }
        write!(f, "   a b c")
    }
}
