//! The buildings and their placements. Shapes follow `docs/data/cathedral-pieces.md`; every
//! (building, orientation, position) mask is computed once per board size and shared.

use std::sync::OnceLock;

/// A building type of a player's set (the cathedral is separate).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Building {
    Tavern,
    Stable,
    Inn,
    Bridge,
    Square,
    Manor,
    Abbey,
    Academy,
    Infirmary,
    Castle,
    Tower,
}

/// Building types in id order.
pub const BUILDINGS: [Building; 11] = [
    Building::Tavern,
    Building::Stable,
    Building::Inn,
    Building::Bridge,
    Building::Square,
    Building::Manor,
    Building::Abbey,
    Building::Academy,
    Building::Infirmary,
    Building::Castle,
    Building::Tower,
];

/// How many of each type a set holds.
pub const COUNTS: [u8; 11] = [2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1];

impl Building {
    /// The name used in notation.
    pub fn name(self) -> &'static str {
        ["tavern", "stable", "inn", "bridge", "square", "manor", "abbey", "academy", "infirmary", "castle", "tower"]
            [self as usize]
    }

    /// Light's drawing (dark mirrors the chiral abbey and academy).
    fn drawing(self) -> &'static [&'static str] {
        match self {
            Building::Tavern => &["#"],
            Building::Stable => &["##"],
            Building::Inn => &["##", "#."],
            Building::Bridge => &["###"],
            Building::Square => &["##", "##"],
            Building::Manor => &["###", ".#."],
            Building::Abbey => &["##.", ".##"],
            Building::Academy => &[".#.", "###", "..#"],
            Building::Infirmary => &[".#.", "###", ".#."],
            Building::Castle => &["###", "#.#"],
            Building::Tower => &["..#", ".##", "##."],
        }
    }

    /// Squares the building covers.
    pub fn squares(self) -> u32 {
        self.drawing().iter().map(|row| row.bytes().filter(|&b| b == b'#').count() as u32).sum()
    }

    /// Whether dark's copy is the mirror image of light's.
    pub fn chiral(self) -> bool {
        matches!(self, Building::Abbey | Building::Academy)
    }
}

const CATHEDRAL_DRAWING: &[&str] = &[".#.", ".#.", "###", ".#."];

type Cells = Vec<(i32, i32)>;

fn cells_of(drawing: &[&str], mirror: bool) -> Cells {
    let width = drawing.iter().map(|r| r.len()).max().unwrap_or(0) as i32;
    let mut out = Vec::new();
    for (r, row) in drawing.iter().enumerate() {
        for (c, b) in row.bytes().enumerate() {
            if b == b'#' {
                let c = if mirror { width - 1 - c as i32 } else { c as i32 };
                out.push((r as i32, c));
            }
        }
    }
    out
}

/// Moves the cells so the bounding box starts at (0, 0), sorted, for comparing orientations.
fn normalise(cells: &Cells) -> Cells {
    let r0 = cells.iter().map(|c| c.0).min().unwrap_or(0);
    let c0 = cells.iter().map(|c| c.1).min().unwrap_or(0);
    let mut out: Cells = cells.iter().map(|&(r, c)| (r - r0, c - c0)).collect();
    out.sort_unstable();
    out
}

/// The distinct quarter-turn rotations of a shape, in rotation order (never flipped).
fn orientations(cells: &Cells) -> Vec<Cells> {
    let mut out: Vec<Cells> = Vec::new();
    let mut cur = cells.clone();
    for _ in 0..4 {
        let n = normalise(&cur);
        if !out.contains(&n) {
            out.push(n);
        }
        cur = cur.iter().map(|&(r, c)| (c, -r)).collect();
    }
    out
}

/// One placement: what goes where.
#[derive(Clone, Copy, Debug)]
pub struct Placement {
    /// The building, or `None` for the cathedral.
    pub building: Option<Building>,
    /// Whose chirality (0 light, 1 dark) for chiral buildings; `None` if either may use it.
    pub owner: Option<u8>,
    /// Index into the shape's distinct orientations.
    pub orientation: u8,
    /// Top-left corner of the bounding box (row, column), row 0 at the top.
    pub anchor: (u8, u8),
    /// Covered squares.
    pub mask: u128,
}

/// Every placement on a board of one size, in action-id order: the cathedral's, then each
/// building's (for chiral buildings light's, then dark's).
pub struct PlacementTable {
    pub size: usize,
    pub placements: Vec<Placement>,
    /// `ranges[b][owner]`: the id range of building `b` usable by `owner`.
    pub ranges: [[(u32, u32); 2]; 11],
    pub cathedral: (u32, u32),
    /// Distinct orientations per shape: `[building][light/dark]`, and the cathedral's.
    pub orientation_counts: [[u8; 2]; 11],
    pub cathedral_orientations: u8,
    /// `rotated[k][id]`: the placement that is `id` turned `k` quarter turns clockwise (the same
    /// building of the same set on the turned squares).
    pub rotated: [Vec<u32>; 4],
}

/// `mask` on a `size` x `size` board turned `k` quarter turns clockwise.
pub fn rotate_mask(mask: u128, size: usize, k: usize) -> u128 {
    let mut out = 0u128;
    let mut m = mask;
    while m != 0 {
        let i = m.trailing_zeros() as usize;
        m &= m - 1;
        let (mut r, mut c) = (i / size, i % size);
        for _ in 0..k % 4 {
            (r, c) = (c, size - 1 - r);
        }
        out |= 1u128 << (r * size + c);
    }
    out
}

fn place_all(out: &mut Vec<Placement>, size: usize, shapes: &[Cells], building: Option<Building>, owner: Option<u8>) {
    for (k, shape) in shapes.iter().enumerate() {
        let h = shape.iter().map(|c| c.0).max().unwrap_or(0) as usize + 1;
        let w = shape.iter().map(|c| c.1).max().unwrap_or(0) as usize + 1;
        if h > size || w > size {
            continue;
        }
        for r in 0..=size - h {
            for c in 0..=size - w {
                let mask =
                    shape.iter().fold(0u128, |m, &(dr, dc)| m | 1u128 << ((r + dr as usize) * size + c + dc as usize));
                out.push(Placement { building, owner, orientation: k as u8, anchor: (r as u8, c as u8), mask });
            }
        }
    }
}

impl PlacementTable {
    fn build(size: usize) -> Self {
        let mut placements = Vec::new();
        let cathedral_shapes = orientations(&cells_of(CATHEDRAL_DRAWING, false));
        place_all(&mut placements, size, &cathedral_shapes, None, None);
        let cathedral = (0, placements.len() as u32);
        let mut ranges = [[(0, 0); 2]; 11];
        let mut orientation_counts = [[0; 2]; 11];
        for b in BUILDINGS {
            let light = orientations(&cells_of(b.drawing(), false));
            let start = placements.len() as u32;
            place_all(&mut placements, size, &light, Some(b), b.chiral().then_some(0));
            let light_range = (start, placements.len() as u32);
            orientation_counts[b as usize][0] = light.len() as u8;
            if b.chiral() {
                let dark = orientations(&cells_of(b.drawing(), true));
                let start = placements.len() as u32;
                place_all(&mut placements, size, &dark, Some(b), Some(1));
                ranges[b as usize] = [light_range, (start, placements.len() as u32)];
                orientation_counts[b as usize][1] = dark.len() as u8;
            } else {
                ranges[b as usize] = [light_range, light_range];
                orientation_counts[b as usize][1] = light.len() as u8;
            }
        }
        let index: std::collections::HashMap<(Option<Building>, Option<u8>, u128), u32> =
            placements.iter().enumerate().map(|(i, p)| ((p.building, p.owner, p.mask), i as u32)).collect();
        let rotated = std::array::from_fn(|k| {
            placements.iter().map(|p| index[&(p.building, p.owner, rotate_mask(p.mask, size, k))]).collect()
        });
        PlacementTable {
            size,
            placements,
            ranges,
            cathedral,
            orientation_counts,
            cathedral_orientations: cathedral_shapes.len() as u8,
            rotated,
        }
    }

    /// The shared table for a board size (8 or 10).
    pub fn get(size: usize) -> &'static PlacementTable {
        static TEN: OnceLock<PlacementTable> = OnceLock::new();
        static EIGHT: OnceLock<PlacementTable> = OnceLock::new();
        match size {
            8 => EIGHT.get_or_init(|| PlacementTable::build(8)),
            _ => TEN.get_or_init(|| PlacementTable::build(10)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_match_the_reference_data() {
        // docs/data/cathedral-pieces.md: 47 squares per set; distinct orientations.
        let total: u32 = BUILDINGS.iter().zip(COUNTS).map(|(b, n)| b.squares() * n as u32).sum();
        assert_eq!(total, 47);
        let t = PlacementTable::get(10);
        let distinct: Vec<u8> = BUILDINGS.iter().map(|&b| t.orientation_counts[b as usize][0]).collect();
        assert_eq!(distinct, vec![1, 2, 4, 2, 1, 4, 2, 4, 1, 4, 4]);
        assert_eq!(t.cathedral_orientations, 4);
        assert_eq!(t.cathedral.1 - t.cathedral.0, 224);
        assert_eq!(PlacementTable::get(8).cathedral.1 - PlacementTable::get(8).cathedral.0, 120);
        // All building types of one colour on an empty 10x10 board: 2,141 placements.
        let light: u32 = BUILDINGS.iter().map(|&b| t.ranges[b as usize][0].1 - t.ranges[b as usize][0].0).sum();
        assert_eq!(light, 2141);
        let dark: u32 = BUILDINGS.iter().map(|&b| t.ranges[b as usize][1].1 - t.ranges[b as usize][1].0).sum();
        assert_eq!(dark, 2141);
    }

    #[test]
    fn chiral_buildings_mirror_and_never_flip() {
        let t = PlacementTable::get(10);
        for b in [Building::Abbey, Building::Academy] {
            let [light, dark] = t.ranges[b as usize];
            let lm: Vec<u128> = (light.0..light.1).map(|i| t.placements[i as usize].mask).collect();
            let dm: Vec<u128> = (dark.0..dark.1).map(|i| t.placements[i as usize].mask).collect();
            assert!(lm.iter().all(|m| !dm.contains(m)), "{b:?}: a light placement equals a dark one: a flip");
        }
        // Non-chiral buildings share one range.
        let [l, d] = t.ranges[Building::Castle as usize];
        assert_eq!(l, d);
    }
}
