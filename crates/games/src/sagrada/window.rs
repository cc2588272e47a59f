//! One player's window: the dice on its 20 spaces as colour and value bitboards, and the
//! placement rules.

use super::cards::{self, CELLS, COLOURS, EDGE, FULL, RESTRICTIONS, Restrictions};

/// Which placement rules a move may bend (tool cards 2, 3 and 9).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Every rule applies.
    Normal,
    /// Eglomise Brush: colour restrictions of spaces are ignored.
    IgnoreColour,
    /// Copper Foil Burnisher: value restrictions of spaces are ignored.
    IgnoreValue,
    /// Cork-backed Straightedge: the die must touch no other die.
    Lonely,
}

/// A window: its pattern and the dice on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Window {
    /// Index into [`cards::PATTERNS`]; `NO_PATTERN` before the player chooses.
    pub pattern: u8,
    /// Die code + 1 on each space; 0 = empty.
    pub cells: [u8; CELLS],
    /// Spaces holding a die.
    pub occupied: u32,
    /// Spaces holding a die of each colour.
    pub colour: [u32; COLOURS],
    /// Spaces holding a die of each value (index value - 1).
    pub value: [u32; 6],
}

/// `Window::pattern` before a pattern is chosen.
pub const NO_PATTERN: u8 = u8::MAX;

impl Default for Window {
    fn default() -> Self {
        Window { pattern: NO_PATTERN, cells: [0; CELLS], occupied: 0, colour: [0; COLOURS], value: [0; 6] }
    }
}

impl Window {
    /// An empty window on `pattern`.
    pub fn new(pattern: u8) -> Self {
        Window { pattern, ..Window::default() }
    }

    /// The pattern's restriction masks (all free before a pattern is chosen).
    #[inline]
    pub fn restrictions(&self) -> &'static Restrictions {
        static FREE: Restrictions = Restrictions { colour: [0; COLOURS], value: [0; 6], any_colour: 0, any_value: 0 };
        RESTRICTIONS.get(self.pattern as usize).unwrap_or(&FREE)
    }

    /// The die on `cell`, if any.
    #[inline]
    pub fn die_at(&self, cell: usize) -> Option<u8> {
        self.cells[cell].checked_sub(1)
    }

    /// Number of dice placed.
    pub fn dice(&self) -> u32 {
        self.occupied.count_ones()
    }

    /// Puts die `d` on empty `cell` (no rule check).
    #[inline]
    pub fn put(&mut self, cell: usize, d: u8) {
        debug_assert_eq!(self.cells[cell], 0, "space taken");
        let bit = 1 << cell;
        self.cells[cell] = d + 1;
        self.occupied |= bit;
        self.colour[cards::colour(d)] |= bit;
        self.value[(cards::value(d) - 1) as usize] |= bit;
    }

    /// Takes the die off `cell` and returns it.
    #[inline]
    pub fn take(&mut self, cell: usize) -> u8 {
        let d = self.cells[cell] - 1;
        let bit = !(1 << cell);
        self.cells[cell] = 0;
        self.occupied &= bit;
        self.colour[cards::colour(d)] &= bit;
        self.value[(cards::value(d) - 1) as usize] &= bit;
        d
    }

    /// Spaces where die `d` may be placed under `rule`: empty; the space's colour and value
    /// restriction met (unless the rule bends one); no orthogonal neighbour of the same colour or
    /// value; the first die on an edge, later dice touching a placed die (or, for a lonely
    /// placement, touching none).
    #[inline]
    pub fn allowed(&self, d: u8, rule: Rule) -> u32 {
        let r = self.restrictions();
        let mut ok = FULL & !self.occupied;
        ok &= r.admits(d, rule == Rule::IgnoreColour, rule == Rule::IgnoreValue);
        ok &= !cards::orthogonal(self.colour[cards::colour(d)] | self.value[(cards::value(d) - 1) as usize]);
        if self.occupied == 0 {
            ok & EDGE
        } else if rule == Rule::Lonely {
            ok & !cards::touching(self.occupied)
        } else {
            ok & cards::touching(self.occupied)
        }
    }

    /// Spaces the die on `from` may move to under `rule` (the die is lifted first, so it neither
    /// blocks nor supports itself; it may not stay where it is).
    #[inline]
    pub fn moves_from(&self, from: usize, rule: Rule) -> u32 {
        let mut w = *self;
        let d = w.take(from);
        w.allowed(d, rule) & !(1 << from)
    }

    /// Moves the die on `from` to `to` (no rule check).
    #[inline]
    pub fn relocate(&mut self, from: usize, to: usize) {
        let d = self.take(from);
        self.put(to, d);
    }

    /// Empty spaces no die can ever fill without moving dice: a restriction that an orthogonal
    /// neighbour already rules out (a colour space next to a die of that colour, a value space
    /// next to that value). Free spaces always have some colour and value left.
    pub fn dead_spaces(&self) -> u32 {
        let r = self.restrictions();
        let mut dead = 0;
        for c in 0..COLOURS {
            dead |= r.colour[c] & cards::orthogonal(self.colour[c]);
        }
        for v in 0..6 {
            dead |= r.value[v] & cards::orthogonal(self.value[v]);
        }
        dead & !self.occupied
    }

    /// Sum of the values of this window's dice of colour `c` (a private objective's score).
    pub fn private_score(&self, c: usize) -> i32 {
        (0..6).map(|v| (v as i32 + 1) * (self.colour[c] & self.value[v]).count_ones() as i32).sum()
    }
}
