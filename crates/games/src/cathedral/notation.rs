//! Cathedral notation: `NAME@CELL` or `NAME@CELL:K`, where CELL is the top-left square of the
//! building's bounding box (column letter, row number from the top: `a1` is the top-left
//! square) and K the orientation (quarter turns clockwise, counting only distinct ones; 0 is the
//! drawing in `docs/data/cathedral-pieces.md`, and may be left out). Examples: `tavern@e5`,
//! `castle@c3:2`, `cathedral@d4:1`. The coin toss of `random_placer` reads `light` or `dark`.

use super::{BUILDINGS, CathedralState};
use meeple_game::{Action, Error, State, Turn};

fn cell_name(r: usize, c: usize) -> String {
    format!("{}{}", (b'a' + c as u8) as char, r + 1)
}

pub(crate) fn action_to_string(s: &CathedralState, action: Action) -> String {
    if s.turn() == Turn::Chance {
        return ["light", "dark"].get(action as usize).unwrap_or(&"?").to_string();
    }
    let t = s.table();
    let Some(p) = t.placements.get(action as usize) else { return format!("#{action}") };
    let name = p.building.map_or("cathedral", |b| b.name());
    let cell = cell_name(p.anchor.0 as usize, p.anchor.1 as usize);
    if p.orientation == 0 { format!("{name}@{cell}") } else { format!("{name}@{cell}:{}", p.orientation) }
}

fn names() -> String {
    let mut all: Vec<&str> = BUILDINGS.iter().map(|b| b.name()).collect();
    all.push("cathedral");
    all.join(", ")
}

pub(crate) fn parse_action(s: &CathedralState, text: &str) -> Result<Action, Error> {
    let bad = |reason: String| Error::BadNotation { text: text.to_string(), reason };
    let t = text.trim().to_ascii_lowercase();
    if s.turn() == Turn::Chance {
        return match t.as_str() {
            "light" => Ok(0),
            "dark" => Ok(1),
            _ => Err(bad("the coin toss reads light or dark".into())),
        };
    }
    let Some((name, rest)) = t.split_once('@') else {
        return Err(bad(format!("write NAME@CELL or NAME@CELL:K, like castle@c3:1; names: {}", names())));
    };
    let (cell, orientation) = match rest.split_once(':') {
        Some((c, k)) => (c, k.parse::<u8>().map_err(|_| bad(format!("orientation '{k}' is not a number")))?),
        None => (rest, 0),
    };
    let table = s.table();
    let size = table.size;
    let building = if name == "cathedral" {
        None
    } else {
        Some(
            *BUILDINGS
                .iter()
                .find(|b| b.name() == name)
                .ok_or_else(|| bad(format!("unknown building '{name}'; names: {}", names())))?,
        )
    };
    let b = cell.as_bytes();
    let col = b.first().and_then(|&x| x.checked_sub(b'a')).map(|x| x as usize).filter(|&x| x < size);
    let row = cell.get(1..).and_then(|r| r.parse::<usize>().ok()).filter(|&r| (1..=size).contains(&r));
    let (Some(col), Some(row)) = (col, row) else {
        return Err(bad(format!(
            "'{cell}' is not a square; columns a-{}, rows 1-{size}",
            (b'a' + size as u8 - 1) as char
        )));
    };
    let mover = match s.turn() {
        Turn::Player(p) => p,
        _ => 0,
    };
    let (range, count) = match building {
        None => (table.cathedral, table.cathedral_orientations),
        Some(b) => (table.ranges[b as usize][mover], table.orientation_counts[b as usize][mover]),
    };
    if orientation >= count {
        return Err(bad(format!("{name} has {count} orientation(s): 0-{}", count - 1)));
    }
    (range.0..range.1)
        .find(|&id| {
            let p = &table.placements[id as usize];
            p.orientation == orientation && p.anchor == ((row - 1) as u8, col as u8)
        })
        .ok_or_else(|| bad(format!("{name}:{orientation} does not fit on the board with its corner at {cell}")))
}

pub(crate) fn illegal_reason(s: &CathedralState, action: Action) -> String {
    let t = s.table();
    let Turn::Player(p) = s.turn() else {
        return if s.turn() == Turn::Terminal { "the game is over".into() } else { "the coin is being tossed".into() };
    };
    let Some(pl) = t.placements.get(action as usize) else { return format!("action id {action} is out of range") };
    match pl.building {
        None if !s.cathedral_due() => "the cathedral is already placed".into(),
        None => "the cathedral would overlap a building".into(),
        Some(_) if s.cathedral_due() => "the cathedral must be placed first".into(),
        Some(b) => {
            let (lo, hi) = t.ranges[b as usize][p];
            if !(lo..hi).contains(&action) {
                format!(
                    "that is the other colour's {}: the abbey and academy of light and dark are mirror images",
                    b.name()
                )
            } else if s.hand[p][b as usize] == 0 {
                format!("no {} left in hand", b.name())
            } else if pl.mask & (s.pieces[0] | s.pieces[1] | s.cathedral) != 0 {
                "it would overlap a piece".into()
            } else {
                "it would enter the opponent's territory".into()
            }
        }
    }
}
