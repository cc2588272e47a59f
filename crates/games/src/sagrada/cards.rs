//! Sagrada's components as data: dice, the 4x5 window grid, the 24 window patterns, the 12 tool
//! cards and the 10 public objectives with their scoring.
//!
//! Facts from `docs/data/sagrada-rules.md` (the published rules, cross-checked against three digital
//! implementations); the pattern table is checked against its JSON copy in
//! `crates/games/tests/data/sagrada_window_patterns.json` by a test.

/// Dice colours in notation order: red, yellow, green, blue, purple.
pub const COLOURS: usize = 5;
/// Letters for the colours in notation.
pub const COLOUR_LETTERS: [char; COLOURS] = ['R', 'Y', 'G', 'B', 'P'];
/// Colour names for people.
pub const COLOUR_NAMES: [&str; COLOURS] = ["red", "yellow", "green", "blue", "purple"];
/// Distinct dice: 5 colours x 6 values. A die is `colour * 6 + value - 1`.
pub const DIE_KINDS: usize = 30;
/// Dice of each colour in the bag at the start.
pub const DICE_PER_COLOUR: u8 = 18;

/// The colour (0-4) of a die code.
#[inline]
pub const fn colour(die: u8) -> usize {
    (die / 6) as usize
}

/// The value (1-6) of a die code.
#[inline]
pub const fn value(die: u8) -> u8 {
    die % 6 + 1
}

/// The die code of a colour (0-4) and value (1-6).
#[inline]
pub const fn die(colour: usize, value: u8) -> u8 {
    colour as u8 * 6 + value - 1
}

/// A die as people write it: colour letter and value (`R5`).
pub fn die_name(d: u8) -> String {
    format!("{}{}", COLOUR_LETTERS[colour(d)], value(d))
}

/// Reads `R5`-style die names (either case).
pub fn parse_die(text: &str) -> Option<u8> {
    let b = text.as_bytes();
    if b.len() != 2 {
        return None;
    }
    let c = COLOUR_LETTERS.iter().position(|&l| l as u8 == b[0].to_ascii_uppercase())?;
    let v = b[1].checked_sub(b'0')?;
    (1..=6).contains(&v).then(|| die(c, v))
}

/// Window rows.
pub const ROWS: usize = 4;
/// Window columns.
pub const COLS: usize = 5;
/// Window spaces, numbered `row * 5 + col` from the top left.
pub const CELLS: usize = ROWS * COLS;
/// Every space.
pub const FULL: u32 = (1 << CELLS) - 1;

const fn edge_mask() -> u32 {
    let mut m = 0;
    let mut i = 0;
    while i < CELLS {
        let (r, c) = (i / COLS, i % COLS);
        if r == 0 || r == ROWS - 1 || c == 0 || c == COLS - 1 {
            m |= 1 << i;
        }
        i += 1;
    }
    m
}

const fn column_mask(col: usize) -> u32 {
    let mut m = 0;
    let mut r = 0;
    while r < ROWS {
        m |= 1 << (r * COLS + col);
        r += 1;
    }
    m
}

/// Spaces on the window's edge (where the first die must go).
pub const EDGE: u32 = edge_mask();
const NOT_FIRST_COL: u32 = FULL & !column_mask(0);
const NOT_LAST_COL: u32 = FULL & !column_mask(COLS - 1);
/// Each row's spaces.
pub const ROW_MASKS: [u32; ROWS] = [0x1f, 0x1f << 5, 0x1f << 10, 0x1f << 15];
/// Each column's spaces.
pub const COL_MASKS: [u32; COLS] = [column_mask(0), column_mask(1), column_mask(2), column_mask(3), column_mask(4)];

#[inline]
fn east(m: u32) -> u32 {
    (m << 1) & NOT_FIRST_COL
}
#[inline]
fn west(m: u32) -> u32 {
    (m >> 1) & NOT_LAST_COL
}
#[inline]
fn north(m: u32) -> u32 {
    m >> COLS
}
#[inline]
fn south(m: u32) -> u32 {
    (m << COLS) & FULL
}

/// Spaces orthogonally next to any space of `m`.
#[inline]
pub fn orthogonal(m: u32) -> u32 {
    east(m) | west(m) | north(m) | south(m)
}

/// Spaces diagonally next to any space of `m`.
#[inline]
pub fn diagonal(m: u32) -> u32 {
    let ew = east(m) | west(m);
    north(ew) | south(ew)
}

/// Spaces touching any space of `m` orthogonally or diagonally.
#[inline]
pub fn touching(m: u32) -> u32 {
    orthogonal(m) | diagonal(m)
}

/// A window pattern card side.
#[derive(Clone, Copy, Debug)]
pub struct Pattern {
    /// Its printed name.
    pub name: &'static str,
    /// The physical card (1-12) whose two sides are two patterns.
    pub card: u8,
    /// Difficulty = favor tokens its owner receives.
    pub tokens: u8,
    /// Rows top to bottom: `RYGBP` colour, `1`-`6` shade, `.` free.
    pub rows: [&'static str; ROWS],
}

/// The 24 window patterns, two per card, in card order.
pub const PATTERNS: [Pattern; 24] = [
    Pattern { name: "Sun's Glory", card: 1, tokens: 6, rows: ["1PY.4", "PY..6", "Y..53", ".5421"] },
    Pattern { name: "Firelight", card: 1, tokens: 5, rows: ["3415.", ".62.Y", "...YR", "5.YR6"] },
    Pattern { name: "Shadow Thief", card: 2, tokens: 5, rows: ["6P..5", "5.P..", "R6.P.", "YR543"] },
    Pattern { name: "Sun Catcher", card: 2, tokens: 3, rows: [".B2.Y", ".4.R.", "..5Y.", "G3..P"] },
    Pattern { name: "Fulgor del Cielo", card: 3, tokens: 5, rows: [".BR..", ".45.B", "B2.R5", "6R31."] },
    Pattern { name: "Luz Celestial", card: 3, tokens: 3, rows: ["..R5.", "P4.G3", "6..B.", ".Y2.."] },
    Pattern { name: "Aurora Sagradis", card: 4, tokens: 4, rows: ["R.B.Y", "4P3G2", ".1.5.", "..6.."] },
    Pattern { name: "Aurorae Magnificus", card: 4, tokens: 5, rows: ["5GBP2", "P...Y", "Y.6.P", "1..G4"] },
    Pattern { name: "Lux Mundi", card: 5, tokens: 6, rows: ["..1..", "1G3B2", "B546G", ".B5G."] },
    Pattern { name: "Lux Astram", card: 5, tokens: 5, rows: [".1GP4", "6P25G", "1G53P", "....."] },
    Pattern { name: "Kaleidoscopic Dream", card: 6, tokens: 4, rows: ["YB..1", "G.5.4", "3.R.G", "2..BY"] },
    Pattern { name: "Firmitas", card: 6, tokens: 5, rows: ["P6..3", "5P3..", ".2P1.", ".15P4"] },
    Pattern { name: "Gravitas", card: 7, tokens: 5, rows: ["1.3B.", ".2B..", "6B.4.", "B52.1"] },
    Pattern { name: "Water of Life", card: 7, tokens: 6, rows: ["6B..1", ".5B..", "4R2B.", "G6Y3P"] },
    Pattern { name: "Batllo", card: 8, tokens: 5, rows: ["..6..", ".5B4.", "3GYP2", "14R53"] },
    Pattern { name: "Bellesguard", card: 8, tokens: 3, rows: ["B6..Y", ".3B..", ".562.", ".4.1G"] },
    Pattern { name: "Virtus", card: 9, tokens: 5, rows: ["4.25G", "..6G2", ".3G4.", "5G1.."] },
    Pattern { name: "Symphony of Light", card: 9, tokens: 6, rows: ["2.5.1", "Y6P2R", ".B4G.", ".3.5."] },
    Pattern { name: "Ripples of Light", card: 10, tokens: 5, rows: ["...R5", "..P4B", ".B3Y6", "Y2G1R"] },
    Pattern { name: "Fractal Drops", card: 10, tokens: 3, rows: [".4.Y6", "R.2..", "..RP1", "BY..."] },
    Pattern { name: "Via Lux", card: 11, tokens: 4, rows: ["Y.6..", ".15.2", "3YRP.", "..43R"] },
    Pattern { name: "Industria", card: 11, tokens: 5, rows: ["1R3.6", "54R2.", "..5R1", "...3R"] },
    Pattern { name: "Chromatic Splendor", card: 12, tokens: 4, rows: ["..G..", "2Y5B1", ".R3P.", "1.6.4"] },
    Pattern { name: "Comitas", card: 12, tokens: 5, rows: ["Y.2.6", ".4.5Y", "...Y5", "12Y3."] },
];

/// A pattern's restrictions as masks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Restrictions {
    /// Spaces that need a die of each colour.
    pub colour: [u32; COLOURS],
    /// Spaces that need a die of each value (index value - 1).
    pub value: [u32; 6],
    /// Spaces with any colour restriction.
    pub any_colour: u32,
    /// Spaces with any value restriction.
    pub any_value: u32,
}

impl Restrictions {
    /// Spaces where die `d` may go as far as the pattern is concerned.
    #[inline]
    pub fn admits(&self, d: u8, ignore_colour: bool, ignore_value: bool) -> u32 {
        let mut ok = FULL;
        if !ignore_colour {
            ok &= !(self.any_colour & !self.colour[colour(d)]);
        }
        if !ignore_value {
            ok &= !(self.any_value & !self.value[(value(d) - 1) as usize]);
        }
        ok
    }

    /// The restriction of one space: `Some(Ok(colour))`, `Some(Err(value))` or `None`.
    pub fn of(&self, cell: usize) -> Option<Result<usize, u8>> {
        let bit = 1 << cell;
        if let Some(c) = (0..COLOURS).find(|&c| self.colour[c] & bit != 0) {
            return Some(Ok(c));
        }
        (0..6).find(|&v| self.value[v] & bit != 0).map(|v| Err(v as u8 + 1))
    }
}

const fn restrictions(p: &Pattern) -> Restrictions {
    let mut r = Restrictions { colour: [0; COLOURS], value: [0; 6], any_colour: 0, any_value: 0 };
    let mut row = 0;
    while row < ROWS {
        let bytes = p.rows[row].as_bytes();
        let mut col = 0;
        while col < COLS {
            let bit = 1u32 << (row * COLS + col);
            let ch = bytes[col];
            let mut c = 0;
            while c < COLOURS {
                if ch == COLOUR_LETTERS[c] as u8 {
                    r.colour[c] |= bit;
                    r.any_colour |= bit;
                }
                c += 1;
            }
            if ch >= b'1' && ch <= b'6' {
                r.value[(ch - b'1') as usize] |= bit;
                r.any_value |= bit;
            }
            col += 1;
        }
        row += 1;
    }
    r
}

const fn all_restrictions() -> [Restrictions; 24] {
    let mut out = [Restrictions { colour: [0; COLOURS], value: [0; 6], any_colour: 0, any_value: 0 }; 24];
    let mut i = 0;
    while i < 24 {
        out[i] = restrictions(&PATTERNS[i]);
        i += 1;
    }
    out
}

/// Restriction masks of each pattern, indexed like [`PATTERNS`].
pub const RESTRICTIONS: [Restrictions; 24] = all_restrictions();

/// The 12 tool cards, numbered as in the rules (index = number - 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tool {
    /// 1: after drafting, raise or lower the die by one (no wrap).
    GrozingPliers,
    /// 2: move one placed die ignoring colour restrictions.
    EglomiseBrush,
    /// 3: move one placed die ignoring value restrictions.
    CopperFoilBurnisher,
    /// 4: move exactly two placed dice, obeying all rules.
    Lathekin,
    /// 5: after drafting, swap the die with one on the round track.
    LensCutter,
    /// 6: after drafting, reroll the die; if it cannot be placed it returns to the pool.
    FluxBrush,
    /// 7: reroll the whole pool; only on one's second turn, before drafting.
    GlazingHammer,
    /// 8: after one's first turn, draft another die; skip one's second turn.
    RunningPliers,
    /// 9: after drafting, place the die on a space touching no other die.
    CorkBackedStraightedge,
    /// 10: after drafting, turn the die to its opposite face.
    GrindingStone,
    /// 11: after drafting, return the die to the bag, draw another, choose its value.
    FluxRemover,
    /// 12: move up to two placed dice of one colour that matches a die on the round track.
    TapWheel,
}

/// Every tool, by index.
pub const TOOLS: [Tool; 12] = [
    Tool::GrozingPliers,
    Tool::EglomiseBrush,
    Tool::CopperFoilBurnisher,
    Tool::Lathekin,
    Tool::LensCutter,
    Tool::FluxBrush,
    Tool::GlazingHammer,
    Tool::RunningPliers,
    Tool::CorkBackedStraightedge,
    Tool::GrindingStone,
    Tool::FluxRemover,
    Tool::TapWheel,
];

/// Short names used in specs and notation, by tool index.
pub const TOOL_KEYS: [&str; 12] = [
    "grozing",
    "eglomise",
    "copper",
    "lathekin",
    "lens",
    "fluxbrush",
    "hammer",
    "pliers",
    "cork",
    "grinding",
    "fluxremover",
    "tapwheel",
];

/// Printed names, by tool index.
pub const TOOL_NAMES: [&str; 12] = [
    "Grozing Pliers",
    "Eglomise Brush",
    "Copper Foil Burnisher",
    "Lathekin",
    "Lens Cutter",
    "Flux Brush",
    "Glazing Hammer",
    "Running Pliers",
    "Cork-backed Straightedge",
    "Grinding Stone",
    "Flux Remover",
    "Tap Wheel",
];

/// What each tool card does, by tool index (for people at the table).
pub const TOOL_TEXTS: [&str; 12] = [
    "after drafting, raise or lower the die by 1 (a 1 stays above 0, a 6 below 7)",
    "move one placed die, ignoring colour restrictions",
    "move one placed die, ignoring value restrictions",
    "move exactly two placed dice, obeying every rule",
    "after drafting, swap the die with one on the round track",
    "after drafting, reroll the die; if it fits nowhere it goes back to the pool",
    "reroll the whole pool; on your second turn of the round, before drafting",
    "right after your first turn's draft, draft another die; you skip your second turn",
    "after drafting, place the die on a space touching no other die",
    "after drafting, turn the die to its opposite face (1-6, 2-5, 3-4)",
    "after drafting, return the die to the bag, draw one, choose its value, place it if it fits",
    "move up to two placed dice of one colour that matches a die on the round track",
];

/// The 10 public objectives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Objective {
    /// 6 per full row without a repeated colour.
    RowColourVariety,
    /// 5 per full column without a repeated colour.
    ColumnColourVariety,
    /// 5 per full row without a repeated value.
    RowShadeVariety,
    /// 4 per full column without a repeated value.
    ColumnShadeVariety,
    /// 2 per pair of a 1 and a 2.
    LightShades,
    /// 2 per pair of a 3 and a 4.
    MediumShades,
    /// 2 per pair of a 5 and a 6.
    DeepShades,
    /// 5 per set of all six values.
    ShadeVariety,
    /// 4 per set of all five colours.
    ColourVariety,
    /// 1 per die diagonally touching a die of the same colour.
    ColourDiagonals,
}

/// Every objective, by index.
pub const OBJECTIVES: [Objective; 10] = [
    Objective::RowColourVariety,
    Objective::ColumnColourVariety,
    Objective::RowShadeVariety,
    Objective::ColumnShadeVariety,
    Objective::LightShades,
    Objective::MediumShades,
    Objective::DeepShades,
    Objective::ShadeVariety,
    Objective::ColourVariety,
    Objective::ColourDiagonals,
];

/// Short names used in specs and notation, by objective index.
pub const OBJECTIVE_KEYS: [&str; 10] = [
    "row-colour",
    "column-colour",
    "row-shade",
    "column-shade",
    "light",
    "medium",
    "deep",
    "shade-variety",
    "colour-variety",
    "diagonals",
];

/// Printed names, by objective index.
pub const OBJECTIVE_NAMES: [&str; 10] = [
    "Row Color Variety",
    "Column Color Variety",
    "Row Shade Variety",
    "Column Shade Variety",
    "Light Shades",
    "Medium Shades",
    "Deep Shades",
    "Shade Variety",
    "Color Variety",
    "Color Diagonals",
];

/// What each public objective scores, by objective index.
pub const OBJECTIVE_TEXTS: [&str; 10] = [
    "6 points per full row with no colour repeated",
    "5 points per full column with no colour repeated",
    "5 points per full row with no value repeated",
    "4 points per full column with no value repeated",
    "2 points per pair of a 1 and a 2, anywhere",
    "2 points per pair of a 3 and a 4, anywhere",
    "2 points per pair of a 5 and a 6, anywhere",
    "5 points per set of all six values, anywhere",
    "4 points per set of all five colours, anywhere",
    "1 point per die diagonally touching a die of its colour",
];

impl Objective {
    /// Points per completed pattern (per die for Color Diagonals).
    pub const fn points(self) -> i32 {
        match self {
            Objective::RowColourVariety => 6,
            Objective::ColumnColourVariety | Objective::RowShadeVariety | Objective::ShadeVariety => 5,
            Objective::ColumnShadeVariety | Objective::ColourVariety => 4,
            Objective::LightShades | Objective::MediumShades | Objective::DeepShades => 2,
            Objective::ColourDiagonals => 1,
        }
    }

    /// The objective's points for a window with these dice: `colour[c]` / `value[v-1]` are the
    /// masks of spaces holding a die of that colour / value.
    pub fn score(self, colour: &[u32; COLOURS], value: &[u32; 6]) -> i32 {
        let count = |m: u32| m.count_ones() as i32;
        let pairs = |a: usize, b: usize| count(value[a]).min(count(value[b]));
        let n = match self {
            Objective::RowColourVariety => distinct_lines(&ROW_MASKS, colour),
            Objective::ColumnColourVariety => distinct_lines(&COL_MASKS, colour),
            Objective::RowShadeVariety => distinct_lines(&ROW_MASKS, value),
            Objective::ColumnShadeVariety => distinct_lines(&COL_MASKS, value),
            Objective::LightShades => pairs(0, 1),
            Objective::MediumShades => pairs(2, 3),
            Objective::DeepShades => pairs(4, 5),
            Objective::ShadeVariety => value.iter().map(|&m| count(m)).min().unwrap_or(0),
            Objective::ColourVariety => colour.iter().map(|&m| count(m)).min().unwrap_or(0),
            Objective::ColourDiagonals => colour.iter().map(|&m| count(diagonal(m) & m)).sum(),
        };
        n * self.points()
    }
}

/// Lines (rows or columns) that are full and hold no attribute twice.
fn distinct_lines(lines: &[u32], planes: &[u32]) -> i32 {
    lines
        .iter()
        .filter(|&&line| {
            let filled = planes.iter().fold(0, |acc, p| acc | p) & line;
            filled == line && planes.iter().all(|p| (p & line).count_ones() <= 1)
        })
        .count() as i32
}
