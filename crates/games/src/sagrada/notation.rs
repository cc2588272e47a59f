//! Sagrada notation and the text board.
//!
//! Dice are a colour letter and a value (`R5`); spaces are `a1`-`e4` (column letter, row number
//! from the top). Moves: `R5@b2` drafts R5 onto b2; `pass` ends the turn; `window:2` picks the
//! second offered pattern; tool cards are `name:arguments`: `grozing:R5+@b2` (raised to 6, or
//! `-` lowered), `eglomise:a1-b2`, `copper:a1-b2`, `lathekin:a1-b2` (twice), `lens:R5/G2` (pool
//! die / round-track die), `fluxbrush:R5`, `hammer`, `pliers`, `cork:R5@b2`, `grinding:R5@b2`
//! (placed as R2), `fluxremover:R5`, then `value:4`, `tapwheel:a1-b2`, `tapwheel:stop`.
//! Chance outcomes: `tool:lens`, `objective:row-colour`, `private:R`, `card:7`, `pattern:12`,
//! `fate:200`, `draw:R5` (round dice), `roll:R5` (rerolls), `draw:G` (Flux Remover).

use super::cards::{
    self, COLOUR_LETTERS, COLOUR_NAMES, OBJECTIVE_KEYS, OBJECTIVE_NAMES, PATTERNS, TOOL_KEYS, TOOL_NAMES,
};
use super::{
    CHOOSE, COPPER, CORK, EGLOMISE, FLUX_BRUSH, FLUX_REMOVER, FLUX_VALUE, GRINDING, GROZING, HAMMER, LATHEKIN, LENS,
    Move, NO_PATTERN, NONE, NUM_ACTIONS, PASS, PLACE, PLIERS, Pending, Rule, SagradaState, Stage, TAP_STOP, TAP_WHEEL,
    Windows, decode,
};
use meeple_game::{Action, Error, Player, State, Turn};
use std::fmt::Write;

/// A space's name: column letter and row number from the top (`b2`).
pub fn cell_name(cell: usize) -> String {
    format!("{}{}", (b'a' + (cell % 5) as u8) as char, cell / 5 + 1)
}

fn parse_cell(text: &str) -> Option<u8> {
    let b = text.as_bytes();
    if b.len() != 2 {
        return None;
    }
    let col = b[0].to_ascii_lowercase().checked_sub(b'a')?;
    let row = b[1].checked_sub(b'1')?;
    // Checked before the cell number is computed: `e9` must not overflow.
    (col < 5 && row < 4).then(|| row * 5 + col)
}

fn die_at(text: &str) -> Option<(u8, u8)> {
    let (d, c) = text.split_once('@')?;
    Some((cards::parse_die(d)?, parse_cell(c)?))
}

fn step(text: &str) -> Option<(u8, u8)> {
    let (a, b) = text.split_once('-')?;
    Some((parse_cell(a)?, parse_cell(b)?))
}

pub(crate) fn action_to_string(s: &SagradaState, action: Action) -> String {
    if s.turn() == Turn::Chance {
        return chance_to_string(s, action);
    }
    let Some(m) = decode(action) else {
        return format!("?{action}");
    };
    let d = cards::die_name;
    let c = |x: u8| cell_name(x as usize);
    match m {
        Move::Place { die, cell } => format!("{}@{}", d(die), c(cell)),
        Move::Pass => "pass".into(),
        Move::Choose(k) => format!("window:{}", k + 1),
        Move::Grozing { die, up, cell } => format!("grozing:{}{}@{}", d(die), if up { '+' } else { '-' }, c(cell)),
        Move::Relocate { tool, from, to } => format!("{}:{}-{}", TOOL_KEYS[tool as usize], c(from), c(to)),
        Move::Lens { die, track } => format!("lens:{}/{}", d(die), d(track)),
        Move::FluxBrush(die) => format!("fluxbrush:{}", d(die)),
        Move::Hammer => "hammer".into(),
        Move::Pliers => "pliers".into(),
        Move::Cork { die, cell } => format!("cork:{}@{}", d(die), c(cell)),
        Move::Grinding { die, cell } => format!("grinding:{}@{}", d(die), c(cell)),
        Move::FluxRemover(die) => format!("fluxremover:{}", d(die)),
        Move::FluxValue(v) => format!("value:{v}"),
        Move::TapStop => "tapwheel:stop".into(),
    }
}

fn chance_to_string(s: &SagradaState, o: Action) -> String {
    let i = o as usize;
    let name = |keys: &[&str]| keys.get(i).copied().unwrap_or("?").to_string();
    match s.stage {
        Stage::Fate => format!("fate:{o}"),
        Stage::Tools => format!("tool:{}", name(&TOOL_KEYS)),
        Stage::Objectives => format!("objective:{}", name(&OBJECTIVE_KEYS)),
        Stage::Privates => format!("private:{}", COLOUR_LETTERS.get(i).copied().unwrap_or('?')),
        Stage::Offers if s.windows_mode == Windows::Cards => format!("card:{}", o as u64 + 1),
        Stage::Offers => format!("pattern:{}", o as u64 + 1),
        Stage::Play if s.pending == Pending::FluxRemoverDraw => {
            format!("draw:{}", COLOUR_LETTERS.get(i).copied().unwrap_or('?'))
        }
        Stage::Play => format!("roll:{}", die_or_unknown(o)),
        _ => format!("draw:{}", die_or_unknown(o)),
    }
}

fn die_or_unknown(o: Action) -> String {
    if o < 30 { cards::die_name(o as u8) } else { format!("?{o}") }
}

pub(crate) fn parse_action(s: &SagradaState, text: &str) -> Result<Action, Error> {
    let bad = |reason: &str| Error::BadNotation { text: text.to_string(), reason: reason.to_string() };
    let t = text.trim();
    if s.turn() == Turn::Chance {
        let (kind, arg) = t.split_once(':').ok_or_else(|| bad("a chance outcome is kind:value, e.g. draw:R5"))?;
        let number =
            |max: usize| arg.parse::<usize>().ok().filter(|&k| (1..=max).contains(&k)).map(|k| k as Action - 1);
        let colour =
            || COLOUR_LETTERS.iter().position(|&l| arg.eq_ignore_ascii_case(&l.to_string())).map(|c| c as Action);
        let found = match (kind, s.stage) {
            ("fate", Stage::Fate) => arg.parse::<u8>().ok().map(Action::from),
            ("tool", Stage::Tools) => TOOL_KEYS.iter().position(|&k| k == arg).map(|k| k as Action),
            ("objective", Stage::Objectives) => OBJECTIVE_KEYS.iter().position(|&k| k == arg).map(|k| k as Action),
            ("private", Stage::Privates) => colour(),
            ("card", Stage::Offers) if s.windows_mode == Windows::Cards => number(12),
            ("pattern", Stage::Offers) if s.windows_mode == Windows::Random4 => number(24),
            ("draw", Stage::Play) if s.pending == Pending::FluxRemoverDraw => colour(),
            ("draw", Stage::Draw) | ("roll", Stage::Play) => cards::parse_die(arg).map(Action::from),
            _ => None,
        };
        return found
            .ok_or_else(|| bad(&format!("not a chance outcome here; this chance node takes {}", chance_hint(s))));
    }
    let (name, arg) = t.split_once(':').unwrap_or((t, ""));
    let hint = "moves are R5@b2, pass, window:N, or a tool: grozing:R5+@b2, eglomise:a1-b2, copper:a1-b2, \
                lathekin:a1-b2, lens:R5/G2, fluxbrush:R5, hammer, pliers, cork:R5@b2, grinding:R5@b2, \
                fluxremover:R5, value:N, tapwheel:a1-b2, tapwheel:stop (dice R Y G B P with 1-6, spaces a1-e4)";
    // A known move name with a bad argument gets that move's own form, not the whole list.
    let form = match name {
        "pass" | "hammer" | "pliers" => Some(format!("'{name}' takes no argument")),
        "window" => Some("window:N picks one of the offered patterns, window:1 to window:4".into()),
        "value" => Some("value:N sets the drawn die's value, value:1 to value:6".into()),
        "grozing" => Some("grozing:DIE+@SPACE or grozing:DIE-@SPACE, like grozing:R5+@b2".into()),
        "eglomise" | "copper" | "lathekin" => Some(format!("{name}:FROM-TO, like {name}:a1-b2 (spaces a1-e4)")),
        "tapwheel" => Some("tapwheel:FROM-TO, like tapwheel:a1-b2, or tapwheel:stop".into()),
        "lens" => Some("lens:POOLDIE/TRACKDIE, like lens:R5/G2".into()),
        "fluxbrush" | "fluxremover" => Some(format!("{name}:DIE, like {name}:R5 (colours R Y G B P, values 1-6)")),
        "cork" | "grinding" => Some(format!("{name}:DIE@SPACE, like {name}:R5@b2")),
        _ if arg.is_empty() && name.contains('@') => {
            Some("a placement is DIE@SPACE, like R5@b2 (colours R Y G B P, values 1-6, spaces a1-e4)".into())
        }
        _ => None,
    };
    let id = match name {
        "pass" if arg.is_empty() => Some(PASS),
        "hammer" if arg.is_empty() => Some(HAMMER),
        "pliers" if arg.is_empty() => Some(PLIERS),
        "window" => arg.parse::<u32>().ok().filter(|k| (1..=4).contains(k)).map(|k| CHOOSE + k - 1),
        "value" => arg.parse::<u32>().ok().filter(|v| (1..=6).contains(v)).map(|v| FLUX_VALUE + v - 1),
        "grozing" => {
            let (d, rest) = arg.split_at_checked(2).unwrap_or(("", ""));
            let up = match rest.chars().next() {
                Some('+') => Some(1),
                Some('-') => Some(0),
                _ => None,
            };
            match (cards::parse_die(d), up, rest.get(1..).and_then(|r| r.strip_prefix('@')).and_then(parse_cell)) {
                (Some(d), Some(up), Some(c)) => Some(GROZING + d as u32 * 40 + up * 20 + c as u32),
                _ => None,
            }
        }
        "eglomise" | "copper" | "lathekin" | "tapwheel" if arg == "stop" && name == "tapwheel" => Some(TAP_STOP),
        "eglomise" | "copper" | "lathekin" | "tapwheel" => step(arg).map(|(a, b)| {
            let base = match name {
                "eglomise" => EGLOMISE,
                "copper" => COPPER,
                "lathekin" => LATHEKIN,
                _ => TAP_WHEEL,
            };
            base + a as u32 * 20 + b as u32
        }),
        "lens" => arg
            .split_once('/')
            .and_then(|(a, b)| Some(LENS + cards::parse_die(a)? as u32 * 30 + cards::parse_die(b)? as u32)),
        "fluxbrush" => cards::parse_die(arg).map(|d| FLUX_BRUSH + d as u32),
        "fluxremover" => cards::parse_die(arg).map(|d| FLUX_REMOVER + d as u32),
        "cork" => die_at(arg).map(|(d, c)| CORK + d as u32 * 20 + c as u32),
        "grinding" => die_at(arg).map(|(d, c)| GRINDING + d as u32 * 20 + c as u32),
        _ if arg.is_empty() => die_at(name).map(|(d, c)| PLACE + d as u32 * 20 + c as u32),
        _ => None,
    };
    id.ok_or_else(|| bad(form.as_deref().unwrap_or(hint)))
}

fn chance_hint(s: &SagradaState) -> &'static str {
    match (s.stage, s.pending) {
        (Stage::Fate, _) => "fate:0-255",
        (Stage::Tools, _) => "tool:NAME",
        (Stage::Objectives, _) => "objective:NAME",
        (Stage::Privates, _) => "private:R|Y|G|B|P",
        (Stage::Offers, _) if s.windows_mode == Windows::Cards => "card:1-12",
        (Stage::Offers, _) => "pattern:1-24",
        (Stage::Play, Pending::FluxRemoverDraw) => "draw:COLOUR",
        (Stage::Play, _) => "roll:DIE",
        _ => "draw:DIE",
    }
}

/// Why `action` is not legal, in the rules' words where the move can be read.
pub(crate) fn illegal_reason(s: &SagradaState, action: Action) -> String {
    let turn = s.turn();
    if turn == Turn::Terminal {
        return "the game is over".into();
    }
    if turn == Turn::Chance {
        return format!("this is a chance node ({}); outcome {action} is not possible", chance_hint(s));
    }
    if action >= NUM_ACTIONS {
        return format!("action id {action} is out of range (0-{})", NUM_ACTIONS - 1);
    }
    let p = s.current_player().unwrap_or(0);
    let text = action_to_string(s, action);
    let reason = match (s.stage, decode(action)) {
        (Stage::Choose, Some(Move::Choose(_))) => None,
        (Stage::Choose, _) => Some("choose a window pattern first (window:1-4)".to_string()),
        (_, Some(Move::Choose(_))) => Some("patterns are chosen at setup only".into()),
        (_, Some(_)) if s.pending != Pending::None => Some(format!("finish the tool card first ({})", pending_hint(s))),
        (_, Some(Move::Place { die, cell })) => placement_reason(s, p, die, cell),
        _ => None,
    };
    let reason = reason.or_else(|| tool_reason(s, p, action));
    match reason {
        Some(r) => format!("'{text}': {r}"),
        None => {
            let mut legal = Vec::new();
            s.legal_actions(&mut legal);
            let shown: Vec<String> = legal.iter().take(40).map(|&a| action_to_string(s, a)).collect();
            let more = if legal.len() > 40 { format!(" (and {} more)", legal.len() - 40) } else { String::new() };
            format!("'{text}' is not legal here; legal: {}{more}", shown.join(" "))
        }
    }
}

fn pending_hint(s: &SagradaState) -> String {
    match s.pending {
        Pending::PlaceHeld => format!("place the held die {}", cards::die_name(s.held)),
        Pending::FluxRemoverValue => "choose the drawn die's value with value:1-6".into(),
        Pending::LathekinSecond(_) => "Lathekin moves a second die".into(),
        Pending::TapWheelSecond(..) => "move a second die of the colour with tapwheel:a1-b2, or tapwheel:stop".into(),
        _ => "wait for the roll".into(),
    }
}

fn placement_reason(s: &SagradaState, p: Player, die: u8, cell: u8) -> Option<String> {
    if s.has_drafted() {
        return Some("you have already drafted a die this turn".into());
    }
    if s.pool()[die as usize] == 0 {
        return Some(format!("{} is not in the draft pool", cards::die_name(die)));
    }
    window_reason(s.window(p), die, cell as usize, Rule::Normal)
}

/// Why die `die` may not go on `cell` of window `w` under `rule` (the placement rules, as
/// [`super::Window::allowed`] applies them), if it may not.
fn window_reason(w: &super::Window, die: u8, cell: usize, rule: Rule) -> Option<String> {
    if let Some(d) = w.die_at(cell) {
        return Some(format!("{} already holds {}", cell_name(cell), cards::die_name(d)));
    }
    match w.restrictions().of(cell) {
        Some(Ok(c)) if c != cards::colour(die) && rule != Rule::IgnoreColour => {
            return Some(format!("{} needs a {} die", cell_name(cell), COLOUR_NAMES[c]));
        }
        Some(Err(v)) if v != cards::value(die) && rule != Rule::IgnoreValue => {
            return Some(format!("{} needs a {v}", cell_name(cell)));
        }
        _ => {}
    }
    let orth = cards::orthogonal(1 << cell);
    if orth & w.colour[cards::colour(die)] != 0 {
        return Some(format!("a {} die is orthogonally next to {}", COLOUR_NAMES[cards::colour(die)], cell_name(cell)));
    }
    if orth & w.value[cards::value(die) as usize - 1] != 0 {
        return Some(format!("a {} is orthogonally next to {}", cards::value(die), cell_name(cell)));
    }
    if w.occupied == 0 && cards::EDGE & (1 << cell) == 0 {
        return Some("the first die goes on an edge or corner space".into());
    }
    if w.occupied != 0 && rule == Rule::Lonely && cards::touching(w.occupied) & (1 << cell) != 0 {
        return Some(format!("{} touches a placed die; this die goes where it touches none", cell_name(cell)));
    }
    if w.occupied != 0 && rule != Rule::Lonely && cards::touching(w.occupied) & (1 << cell) == 0 {
        return Some("a die must touch a placed die orthogonally or diagonally".into());
    }
    debug_assert!(w.allowed(die, rule) & (1 << cell) != 0);
    None
}

fn tool_reason(s: &SagradaState, p: Player, action: Action) -> Option<String> {
    let tool = match decode(action)? {
        Move::FluxValue(_) => return Some("value:N follows Flux Remover's draw".into()),
        Move::TapStop => return Some("tapwheel:stop follows a first Tap Wheel move".into()),
        _ => tool_of(action)?,
    };
    let Some(k) = s.tools().iter().position(|&t| t as usize == tool) else {
        let names: Vec<&str> = s.tools().iter().map(|&t| TOOL_KEYS[t as usize]).collect();
        return Some(format!("{} is not in play (tools: {})", TOOL_NAMES[tool], names.join(", ")));
    };
    if s.has_used_tool() {
        return Some("one tool card per turn".into());
    }
    if s.tokens(p) < s.tool_cost(k) {
        return Some(format!("{} costs {} favor tokens; you have {}", TOOL_NAMES[tool], s.tool_cost(k), s.tokens(p)));
    }
    let w = s.window(p);
    let pool_die = match decode(action)? {
        Move::Grozing { die, .. }
        | Move::Lens { die, .. }
        | Move::FluxBrush(die)
        | Move::Cork { die, .. }
        | Move::Grinding { die, .. }
        | Move::FluxRemover(die) => Some(die),
        _ => None,
    };
    if let Some(die) = pool_die {
        if s.has_drafted() {
            return Some(format!("{} works on the die you draft, and you have already placed one", TOOL_NAMES[tool]));
        }
        if s.pool()[die as usize] == 0 {
            return Some(format!("{} is not in the draft pool", cards::die_name(die)));
        }
    }
    // Where the tool then places or moves a die, the placement rules it keeps.
    let placed = match decode(action)? {
        Move::Grozing { die, up, cell } if (up && cards::value(die) < 6) || (!up && cards::value(die) > 1) => {
            let v = if up { cards::value(die) + 1 } else { cards::value(die) - 1 };
            Some((*w, cards::die(cards::colour(die), v), cell as usize, Rule::Normal))
        }
        Move::Grinding { die, cell } => Some((*w, super::flip(die), cell as usize, Rule::Normal)),
        Move::Cork { die, cell } => Some((*w, die, cell as usize, Rule::Lonely)),
        Move::Relocate { tool: which, from, to } if w.die_at(from as usize).is_some() && from != to => {
            let mut lifted = *w;
            let die = lifted.take(from as usize);
            let rule = match which {
                cards::Tool::EglomiseBrush => Rule::IgnoreColour,
                cards::Tool::CopperFoilBurnisher => Rule::IgnoreValue,
                _ => Rule::Normal,
            };
            Some((lifted, die, to as usize, rule))
        }
        _ => None,
    };
    if let Some((window, die, cell, rule)) = placed
        && let Some(why) = window_reason(&window, die, cell, rule)
    {
        return Some(format!("{} as {} on {}: {why}", TOOL_NAMES[tool], cards::die_name(die), cell_name(cell)));
    }
    match decode(action)? {
        Move::Lens { .. } if s.track().iter().all(|&c| c == 0) => {
            return Some("the round track is empty (it fills at the end of each round)".into());
        }
        Move::Lens { track, .. } if s.track()[track as usize] == 0 => {
            return Some(format!("{} is not on the round track", cards::die_name(track)));
        }
        Move::Grozing { die, up, .. } if (up && cards::value(die) == 6) || (!up && cards::value(die) == 1) => {
            return Some("a 6 cannot be raised nor a 1 lowered".into());
        }
        Move::Relocate { from, to, .. } => {
            if w.die_at(from as usize).is_none() {
                return Some(format!("{} holds no die to move", cell_name(from as usize)));
            }
            if let Some(d) = w.die_at(to as usize).filter(|_| from != to) {
                return Some(format!("{} already holds {}", cell_name(to as usize), cards::die_name(d)));
            }
        }
        _ => {}
    }
    // Otherwise say what the card does and list its uses here, if any.
    let mut legal = Vec::new();
    s.legal_actions(&mut legal);
    let uses: Vec<String> =
        legal.iter().filter(|&&a| tool_of(a) == Some(tool)).take(20).map(|&a| action_to_string(s, a)).collect();
    Some(if uses.is_empty() {
        format!("{} cannot be used now ({})", TOOL_NAMES[tool], cards::TOOL_TEXTS[tool])
    } else {
        format!("{} ({}) can be used here as: {}", TOOL_NAMES[tool], cards::TOOL_TEXTS[tool], uses.join(" "))
    })
}

/// The tool an action uses, if any.
fn tool_of(action: Action) -> Option<usize> {
    Some(match decode(action)? {
        Move::Grozing { .. } => 0,
        Move::Relocate { tool, .. } => tool as usize,
        Move::Lens { .. } => 4,
        Move::FluxBrush(_) => 5,
        Move::Hammer => 6,
        Move::Pliers => 7,
        Move::Cork { .. } => 8,
        Move::Grinding { .. } => 9,
        Move::FluxRemover(_) => 10,
        _ => return None,
    })
}

/// Window patterns drawn next to each other, numbered as `window:N` picks them (restrictions
/// as on a window: `r.` needs red, `.3` needs a 3, `..` is free).
fn patterns_side_by_side(patterns: &[u8]) -> String {
    let mut out = String::new();
    let mut line = String::from("    ");
    for k in 0..patterns.len() {
        let _ = write!(line, "{:<19}", format!("window:{}", k + 1));
    }
    out.push_str(line.trim_end());
    out.push('\n');
    for row in 0..4 {
        let mut line = String::from("    ");
        for &o in patterns {
            let cells: Vec<String> = PATTERNS[o as usize].rows[row]
                .chars()
                .map(|c| match c {
                    '1'..='6' => format!(".{c}"),
                    '.' => "..".into(),
                    letter => format!("{}.", letter.to_ascii_lowercase()),
                })
                .collect();
            let _ = write!(line, "{:<19}", cells.join(" "));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The `cards` view: the tool cards and public objectives in play with what they do, and the
/// viewer's private objective.
pub(crate) fn cards_view(s: &SagradaState, viewer: Player) -> String {
    let mut out = String::from("Tool cards (cost in favor tokens):\n");
    for (k, &t) in s.tools().iter().enumerate() {
        let _ = writeln!(
            out,
            "  {} [{}] ({}): {}",
            TOOL_NAMES[t as usize],
            TOOL_KEYS[t as usize],
            s.tool_cost(k),
            cards::TOOL_TEXTS[t as usize]
        );
    }
    if s.tools().is_empty() {
        out.push_str("  none\n");
    }
    out.push_str("Public objectives:\n");
    for &o in s.objectives() {
        let _ = writeln!(out, "  {}: {}", OBJECTIVE_NAMES[o as usize], cards::OBJECTIVE_TEXTS[o as usize]);
    }
    match s.private_colour(viewer).filter(|_| s.sees_private(viewer, viewer)) {
        Some(c) => {
            let _ = write!(
                out,
                "Your private objective: {}: the sum of the values of your {} dice",
                COLOUR_NAMES[c], COLOUR_NAMES[c]
            );
        }
        None => out.push_str("Your private objective: not dealt yet"),
    }
    out
}

/// The board as text, for everyone (`viewer` = `None`) or as one player sees it.
pub(crate) fn render(s: &SagradaState, viewer: Option<Player>) -> String {
    let mut out = String::new();
    let n = s.players();
    let _ = write!(out, "Sagrada, {n} players, ");
    match s.stage {
        Stage::Over => out.push_str("game over"),
        Stage::Play | Stage::Draw => {
            let _ = write!(out, "round {}/10", s.round() + 1);
        }
        _ => out.push_str("setup"),
    }
    if s.is_fated() && s.deterministic {
        out.push_str(" (deterministic: the future is fixed)");
    }
    match s.turn() {
        Turn::Player(p) => {
            let _ = write!(out, ", player {p} to move");
            if s.stage == Stage::Play {
                let _ = write!(
                    out,
                    " (drafted: {}, tool used: {})",
                    if s.has_drafted() { "yes" } else { "no" },
                    if s.has_used_tool() { "yes" } else { "no" }
                );
            }
        }
        Turn::Chance => out.push_str(", chance"),
        Turn::Terminal => {}
    }
    out.push('\n');
    let tools: Vec<String> = s
        .tools()
        .iter()
        .enumerate()
        .map(|(k, &t)| format!("{} ({})", TOOL_NAMES[t as usize], s.tool_cost(k)))
        .collect();
    let _ = writeln!(out, "Tools (cost): {}", if tools.is_empty() { "none".into() } else { tools.join(", ") });
    let objectives: Vec<&str> = s.objectives().iter().map(|&o| OBJECTIVE_NAMES[o as usize]).collect();
    let _ = writeln!(out, "Objectives: {}", objectives.join(", "));
    let dice = |counts: &[u8; 30]| -> String {
        let v: Vec<String> =
            (0..30u8).flat_map(|d| std::iter::repeat_n(cards::die_name(d), counts[d as usize] as usize)).collect();
        if v.is_empty() { "-".into() } else { v.join(" ") }
    };
    let _ = writeln!(out, "Pool: {}", dice(s.pool()));
    let _ = writeln!(out, "Round track: {}", dice(s.track()));
    if s.held != NONE {
        let _ = writeln!(out, "Held die: {}", cards::die_name(s.held));
    }
    for p in 0..n {
        let w = s.window(p);
        let private = match s.private_colour(p) {
            Some(c) if viewer.is_none_or(|v| s.sees_private(v, p)) => COLOUR_NAMES[c],
            Some(_) => "hidden",
            None => "-",
        };
        let pattern = if w.pattern == NO_PATTERN { "-".to_string() } else { PATTERNS[w.pattern as usize].name.into() };
        let _ = writeln!(
            out,
            "Player {p}: {pattern}, {} tokens, private {private}, score {}",
            s.tokens(p),
            if viewer.is_none_or(|v| v == p) || s.deterministic { s.score(p).to_string() } else { "?".into() }
        );
        if w.pattern == NO_PATTERN {
            if viewer.is_none_or(|v| s.sees_offers(v, p)) {
                let offers: Vec<String> = s.offers[p]
                    .iter()
                    .enumerate()
                    .filter(|(_, o)| **o != NONE)
                    .map(|(k, &o)| {
                        format!("{}: {} ({})", k + 1, PATTERNS[o as usize].name, PATTERNS[o as usize].tokens)
                    })
                    .collect();
                if !offers.is_empty() {
                    let _ = writeln!(out, "  offered: {}", offers.join(", "));
                    let shown: Vec<u8> = s.offers[p].iter().copied().filter(|&o| o != NONE).collect();
                    out.push_str(&patterns_side_by_side(&shown));
                }
            }
            continue;
        }
        let _ = writeln!(out, "     a  b  c  d  e");
        let r = w.restrictions();
        for row in 0..4 {
            let _ = write!(out, "  {} ", row + 1);
            for col in 0..5 {
                let cell = row * 5 + col;
                let text = match (w.die_at(cell), r.of(cell)) {
                    (Some(d), _) => cards::die_name(d),
                    (None, Some(Ok(c))) => format!("{}.", COLOUR_LETTERS[c].to_ascii_lowercase()),
                    (None, Some(Err(v))) => format!(".{v}"),
                    (None, None) => "..".into(),
                };
                let _ = write!(out, " {text}");
            }
            out.push('\n');
        }
    }
    out.push_str("(dice: colour letter and value; empty spaces: r. = needs red, .3 = needs a 3, .. = free)\n");
    out
}
