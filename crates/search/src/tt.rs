//! The transposition table of alpha-beta: one slot per index, depth-preferred within a search,
//! always replacing entries from earlier searches.

use meeple_game::Action;

/// What a stored value says about the true value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    Exact,
    /// The true value is at least the stored one (a cut-off at a maximising node).
    Lower,
    /// The true value is at most the stored one.
    Upper,
}

#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub key: u64,
    pub value: f64,
    pub best: Action,
    pub depth: u8,
    pub bound: Bound,
    generation: u8,
}

const EMPTY: Entry = Entry { key: 0, value: 0.0, best: Action::MAX, depth: 0, bound: Bound::Upper, generation: 0 };

/// A fixed-size table; the size is rounded down to a power of two entries. Its memory is taken
/// at the first search, not when the agent is built, so checking a spec costs nothing.
pub struct TranspositionTable {
    entries: Vec<Entry>,
    mask: u64,
    bytes: u64,
    generation: u8,
    pub probes: u64,
    pub hits: u64,
}

impl TranspositionTable {
    /// A table that will use at most `bytes` of memory (at least one entry).
    pub fn new(bytes: u64) -> Self {
        TranspositionTable { entries: Vec::new(), mask: 0, bytes, generation: 1, probes: 0, hits: 0 }
    }

    /// Takes the table's memory, if not yet taken; an error (not an abort) when the machine
    /// cannot give it.
    pub fn allocate(&mut self) -> Result<(), String> {
        if !self.entries.is_empty() {
            return Ok(());
        }
        let n = (self.bytes / size_of::<Entry>() as u64).max(1);
        let n = 1u64 << (63 - n.leading_zeros());
        let mut entries = Vec::new();
        usize::try_from(n).ok().and_then(|n| entries.try_reserve_exact(n).ok()).ok_or_else(|| {
            format!(
                "cannot take {} for the transposition table: not enough memory; give a smaller tt=",
                meeple_game::limits::format_bytes(self.bytes)
            )
        })?;
        entries.resize(n as usize, EMPTY);
        self.entries = entries;
        self.mask = n - 1;
        Ok(())
    }

    /// Starts a new search: older entries become replaceable.
    pub fn new_search(&mut self) {
        self.generation = self.generation.wrapping_add(1).max(1);
        self.probes = 0;
        self.hits = 0;
    }

    pub fn probe(&mut self, key: u64) -> Option<Entry> {
        if self.entries.is_empty() {
            return None;
        }
        self.probes += 1;
        let e = self.entries[(key & self.mask) as usize];
        (e.generation != 0 && e.key == key).then(|| {
            self.hits += 1;
            e
        })
    }

    pub fn store(&mut self, key: u64, value: f64, best: Action, depth: u32, bound: Bound) {
        let slot = &mut self.entries[(key & self.mask) as usize];
        let depth = depth.min(u8::MAX as u32) as u8;
        if slot.generation != self.generation || slot.key == key || depth >= slot.depth {
            *slot = Entry { key, value, best, depth, bound, generation: self.generation };
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }
}
