//! Santorini notation: cells `a1`-`e5`; a placement is a cell (`c3`); a turn is the worker's
//! cell, its destination and the build cell (`c3-d4-e5`); a winning climb names no build
//! (`c3-d4`). Dashes and spaces are optional when reading.

use super::{CELLS, DIRS, Decoded, NEIGHBOUR, SantoriniState};
use meeple_game::{Action, Error, State, Turn};

pub(crate) fn cell_name(cell: usize) -> String {
    if cell >= CELLS {
        return "??".into();
    }
    format!("{}{}", (b'a' + (cell % 5) as u8) as char, cell / 5 + 1)
}

pub(crate) fn parse_cell(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    if b.len() != 2 {
        return None;
    }
    let col = b[0].to_ascii_lowercase().checked_sub(b'a')? as usize;
    let row = b[1].checked_sub(b'1')? as usize;
    (col < 5 && row < 5).then_some(row * 5 + col)
}

fn direction(from: usize, to: usize) -> Option<usize> {
    (0..8).find(|&d| NEIGHBOUR[from][d] as usize == to)
}

pub(crate) fn action_to_string(s: &SantoriniState, action: Action) -> String {
    if action as usize >= super::NUM_ACTIONS {
        return format!("#{action}");
    }
    match s.decode(action) {
        Decoded::Place(cell) => cell_name(cell),
        Decoded::Turn { from, to, build: None, .. } => format!("{}-{}", cell_name(from), cell_name(to)),
        Decoded::Turn { from, to, build: Some(b), .. } => {
            format!("{}-{}-{}", cell_name(from), cell_name(to), cell_name(b))
        }
    }
}

pub(crate) fn parse_action(s: &SantoriniState, text: &str) -> Result<Action, Error> {
    let bad = |reason: String| Error::BadNotation { text: text.to_string(), reason };
    let compact: String = text.chars().filter(|c| !matches!(c, '-' | ' ' | ',')).collect();
    if !compact.len().is_multiple_of(2) || compact.is_empty() || compact.len() > 6 || !compact.is_ascii() {
        return Err(bad("write a cell (c3) to place a worker, or worker-destination-build (c3-d4-e5); \
                        a winning climb has no build (c3-d4)"
            .into()));
    }
    let mut cells = Vec::new();
    for i in (0..compact.len()).step_by(2) {
        let part = &compact[i..i + 2];
        cells.push(parse_cell(part).ok_or_else(|| bad(format!("'{part}' is not a cell; cells are a1-e5")))?);
    }
    if cells.len() == 1 {
        return Ok(cells[0] as Action);
    }
    let player = match s.turn() {
        Turn::Player(p) => p,
        _ => 0,
    };
    let (from, to) = (cells[0], cells[1]);
    let worker = s.workers[player]
        .iter()
        .position(|&c| c as usize == from)
        .ok_or_else(|| bad(format!("no worker of the player to move on {}", cell_name(from))))?;
    let md = direction(from, to)
        .ok_or_else(|| bad(format!("{} is not next to {}: workers move one step", cell_name(to), cell_name(from))))?;
    let bd = match cells.get(2) {
        None => None,
        Some(&b) => Some(direction(to, b).ok_or_else(|| {
            bad(format!("{} is not next to {}: builds go next to the moved worker", cell_name(b), cell_name(to)))
        })?),
    };
    Ok(SantoriniState::encode_turn(worker, md, bd))
}

pub(crate) fn illegal_reason(s: &SantoriniState, action: Action) -> String {
    if s.turn() == Turn::Terminal {
        return "the game is over".into();
    }
    if action as usize >= super::NUM_ACTIONS {
        return format!("action id {action} is out of range");
    }
    let placing = s.placed < 4;
    match s.decode(action) {
        Decoded::Place(_) if !placing => "all workers are placed: move a worker and build (c3-d4-e5)".into(),
        Decoded::Place(cell) => format!("{} already holds a worker", cell_name(cell)),
        Decoded::Turn { .. } if placing => "place your workers first: name an empty cell (c3)".into(),
        Decoded::Turn { from, to, build, .. } => {
            let (hf, ht) = (s.height(from), s.height(to));
            if from >= CELLS || to >= CELLS {
                "that move leaves the board".into()
            } else if ht == 4 {
                format!("{} has a dome", cell_name(to))
            } else if (s.worker_bits[0] | s.worker_bits[1]) >> to & 1 != 0 {
                format!("{} is occupied by a worker", cell_name(to))
            } else if ht > hf + 1 {
                format!("a worker on level {hf} cannot climb to level {ht} on {}", cell_name(to))
            } else if ht == 3 && build.is_some() {
                format!(
                    "moving up to {} wins at once: write {}-{} with no build",
                    cell_name(to),
                    cell_name(from),
                    cell_name(to)
                )
            } else if ht != 3 && build.is_none() {
                format!(
                    "moving to {} does not win: add a build cell ({}-{}-xx)",
                    cell_name(to),
                    cell_name(from),
                    cell_name(to)
                )
            } else if let Some(b) = build {
                if b >= CELLS {
                    "that build leaves the board".into()
                } else if s.height(b) == 4 {
                    format!("{} already has a dome", cell_name(b))
                } else if b != from && (s.worker_bits[0] | s.worker_bits[1]) >> b & 1 != 0 {
                    format!("{} is occupied by a worker", cell_name(b))
                } else {
                    format!("no blocks left in the supply for level {} on {}", s.height(b) + 1, cell_name(b))
                }
            } else {
                "not a legal move here".into()
            }
        }
    }
}

/// Every direction in action-id order, for symmetry mapping.
pub(crate) fn dir_index(dr: i8, dc: i8) -> usize {
    DIRS.iter().position(|&d| d == (dr, dc)).expect("a unit step")
}
