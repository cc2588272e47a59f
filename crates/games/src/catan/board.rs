//! The fixed geometry of the base-game island: 19 land hexes, 54 corners (settlement spots), 72
//! edges (road spots) and the 9 harbour spots of the frame, numbered once and shared by every
//! state as bit masks.
//!
//! Hexes are pointy-topped in rows of 3, 4, 5, 4 and 3, numbered left to right from the top row
//! (`H0`-`H18`; `H9` is the centre). Corners are numbered top to bottom, left to right; edges by
//! their two corners.

// Seats, resources, hexes and corners are small index spaces shared by several arrays.
#![allow(clippy::needless_range_loop)]

use std::sync::LazyLock;

/// Land hexes.
pub const HEXES: usize = 19;
/// Corners of the land hexes (settlement spots).
pub const VERTICES: usize = 54;
/// Sides of the land hexes (road spots).
pub const EDGES: usize = 72;
/// Harbour spots on the frame.
pub const HARBOURS: usize = 9;

/// Axial coordinates `(q, r)` of each hex, rows top to bottom.
pub const HEX_COORDS: [(i32, i32); HEXES] = [
    (0, -2),
    (1, -2),
    (2, -2),
    (-1, -1),
    (0, -1),
    (1, -1),
    (2, -1),
    (-2, 0),
    (-1, 0),
    (0, 0),
    (1, 0),
    (2, 0),
    (-2, 1),
    (-1, 1),
    (0, 1),
    (1, 1),
    (-2, 2),
    (-1, 2),
    (0, 2),
];

/// Everything derived from the geometry.
#[derive(Debug)]
pub struct Topology {
    /// Corners of each hex, clockwise from the top.
    pub hex_vertices: [[u8; 6]; HEXES],
    /// Hexes around each corner (1-3).
    pub vertex_hexes: [Vec<u8>; VERTICES],
    /// Corners one edge away from each corner.
    pub vertex_neighbours: [u64; VERTICES],
    /// Edges meeting at each corner.
    pub vertex_edges: [u128; VERTICES],
    /// The two corners of each edge (lower number first).
    pub edge_vertices: [(u8, u8); EDGES],
    /// Hexes sharing a side with each hex.
    pub hex_neighbours: [Vec<u8>; HEXES],
    /// The two corners each harbour spot serves, clockwise around the coast from the top left.
    pub harbour_vertices: [(u8, u8); HARBOURS],
    /// Screen position of each corner on a grid where hex centres are `(2q + r, 3r)`.
    pub vertex_xy: [(i32, i32); VERTICES],
}

/// The board geometry, built once.
pub static TOPOLOGY: LazyLock<Topology> = LazyLock::new(build);

/// Corner offsets of a pointy-topped hex around its centre, clockwise from the top.
const CORNERS: [(i32, i32); 6] = [(0, -2), (1, -1), (1, 1), (0, 2), (-1, 1), (-1, -1)];

fn centre(hex: usize) -> (i32, i32) {
    let (q, r) = HEX_COORDS[hex];
    (2 * q + r, 3 * r)
}

fn build() -> Topology {
    // Corners are the distinct hex corner points, numbered by (y, x).
    let mut points: Vec<(i32, i32)> = Vec::new();
    for hex in 0..HEXES {
        let (x, y) = centre(hex);
        for (dx, dy) in CORNERS {
            points.push((x + dx, y + dy));
        }
    }
    points.sort_by_key(|&(x, y)| (y, x));
    points.dedup();
    assert_eq!(points.len(), VERTICES, "the island has 54 corners");
    let index = |p: (i32, i32)| points.iter().position(|&q| q == p).expect("a hex corner") as u8;
    let mut hex_vertices = [[0u8; 6]; HEXES];
    let mut vertex_hexes: [Vec<u8>; VERTICES] = std::array::from_fn(|_| Vec::new());
    let mut edges: Vec<(u8, u8)> = Vec::new();
    for hex in 0..HEXES {
        let (x, y) = centre(hex);
        for (k, (dx, dy)) in CORNERS.iter().enumerate() {
            let v = index((x + dx, y + dy));
            hex_vertices[hex][k] = v;
            vertex_hexes[v as usize].push(hex as u8);
        }
        for k in 0..6 {
            let (a, b) = (hex_vertices[hex][k], hex_vertices[hex][(k + 1) % 6]);
            edges.push((a.min(b), a.max(b)));
        }
    }
    edges.sort();
    edges.dedup();
    assert_eq!(edges.len(), EDGES, "the island has 72 sides");
    let mut edge_vertices = [(0u8, 0u8); EDGES];
    let mut vertex_neighbours = [0u64; VERTICES];
    let mut vertex_edges = [0u128; VERTICES];
    for (e, &(a, b)) in edges.iter().enumerate() {
        edge_vertices[e] = (a, b);
        vertex_neighbours[a as usize] |= 1 << b;
        vertex_neighbours[b as usize] |= 1 << a;
        vertex_edges[a as usize] |= 1 << e;
        vertex_edges[b as usize] |= 1 << e;
    }
    let hex_neighbours = std::array::from_fn(|h| {
        let (q, r) = HEX_COORDS[h];
        (0..HEXES)
            .filter(|&g| {
                let (p, s) = HEX_COORDS[g];
                let (dq, dr) = (p - q, s - r);
                g != h && dq.abs().max(dr.abs()).max((dq + dr).abs()) == 1
            })
            .map(|g| g as u8)
            .collect()
    });
    // Coastal sides belong to one hex only; walk them clockwise around the island and put a
    // harbour on the sides the printed frame uses: from H0's upper-left side, gaps of 3, 4, 3
    // sides repeated (the frame's three-fold symmetric pattern of 9 harbours on 30 sides; the
    // beginner map's harbours sit on H0's upper-left, H1's and H6's upper-right, H11's right,
    // H15's and H17's lower-right, H16's lower-left, H12's and H3's left sides).
    let coastal: Vec<(u8, u8)> = {
        let mut count = std::collections::HashMap::new();
        for hex in 0..HEXES {
            for k in 0..6 {
                let (a, b) = (hex_vertices[hex][k], hex_vertices[hex][(k + 1) % 6]);
                *count.entry((a.min(b), a.max(b))).or_insert(0) += 1;
            }
        }
        // Clockwise order: start at the top hex row's left corner and follow coastal sides.
        let mut order = Vec::new();
        let start = hex_vertices[0][5]; // H0's upper-left corner: the top-left of the coast
        let mut at = start;
        let mut prev = u8::MAX;
        loop {
            // Of the two coastal sides at `at`, take the one not just walked, preferring the
            // clockwise turn (larger angle around the island's centre is handled by the walk
            // starting direction: first step goes to the right along the top).
            let next = (0..VERTICES as u8)
                .filter(|&w| {
                    w != prev
                        && vertex_neighbours[at as usize] >> w & 1 == 1
                        && count.get(&(at.min(w), at.max(w))) == Some(&1)
                })
                .max_by_key(|&w| {
                    // Clockwise around the centre (screen y grows downwards): the cross
                    // product of (at - centre) and (w - at) is positive.
                    let (ax, ay) = points[at as usize];
                    let (wx, wy) = points[w as usize];
                    ax * (wy - ay) - ay * (wx - ax)
                })
                .expect("the coast is a cycle");
            order.push((at.min(next), at.max(next)));
            prev = at;
            at = next;
            if at == start {
                break;
            }
        }
        order
    };
    assert_eq!(coastal.len(), 30, "the coast has 30 sides");
    let mut harbour_vertices = [(0u8, 0u8); HARBOURS];
    let mut side = 0;
    for (i, gap) in [3, 4, 3, 3, 4, 3, 3, 4, 3].into_iter().enumerate() {
        harbour_vertices[i] = coastal[side];
        side += gap;
    }
    Topology {
        hex_vertices,
        vertex_hexes,
        vertex_neighbours,
        vertex_edges,
        edge_vertices,
        hex_neighbours,
        harbour_vertices,
        vertex_xy: std::array::from_fn(|v| points[v]),
    }
}

/// The edge between two corners, if they are adjacent.
pub fn edge_between(a: usize, b: usize) -> Option<usize> {
    let t = &*TOPOLOGY;
    let common = t.vertex_edges[a] & t.vertex_edges[b];
    (common != 0 && a != b).then(|| common.trailing_zeros() as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_island_has_the_base_game_shape() {
        let t = &*TOPOLOGY;
        // Corners touch 1, 2 or 3 hexes: 18 coastal corners touch one, 12 touch two, 24 three.
        let mut by_hexes = [0; 4];
        for v in 0..VERTICES {
            by_hexes[t.vertex_hexes[v].len()] += 1;
        }
        assert_eq!(by_hexes, [0, 18, 12, 24]);
        // Degree 2 or 3; the sum of degrees is twice the edges.
        let degrees: u32 = (0..VERTICES).map(|v| t.vertex_neighbours[v].count_ones()).sum();
        assert_eq!(degrees, 2 * EDGES as u32);
        // The centre hex has 6 neighbours, corner hexes 3.
        assert_eq!(t.hex_neighbours[9].len(), 6);
        assert_eq!(t.hex_neighbours[0].len(), 3);
        assert_eq!(t.hex_neighbours[1].len(), 4);
        // Harbours sit on coastal sides (both corners on one hex only or one coastal pair)
        // and never share a corner.
        let mut used = 0u64;
        for &(a, b) in &t.harbour_vertices {
            assert!(edge_between(a as usize, b as usize).is_some());
            assert!(t.vertex_hexes[a as usize].len() < 3 && t.vertex_hexes[b as usize].len() < 3);
            assert_eq!(used & (1 << a | 1 << b), 0);
            used |= 1 << a | 1 << b;
        }
        // The frame's harbour sides, clockwise from the top left: (hex, side), sides numbered
        // clockwise from the top corner (0 upper-right, 1 right, 2 lower-right, 3 lower-left,
        // 4 left, 5 upper-left).
        let sides = [(0, 5), (1, 0), (6, 0), (11, 1), (15, 2), (17, 2), (16, 3), (12, 4), (3, 4)];
        for (i, &(h, k)) in sides.iter().enumerate() {
            let (a, b) = (t.hex_vertices[h][k], t.hex_vertices[h][(k + 1) % 6]);
            assert_eq!(t.harbour_vertices[i], (a.min(b), a.max(b)), "harbour {i}");
        }
        // Every hex's corners are distinct and its sides are edges.
        for h in 0..HEXES {
            for k in 0..6 {
                assert!(edge_between(t.hex_vertices[h][k] as usize, t.hex_vertices[h][(k + 1) % 6] as usize).is_some());
            }
        }
    }
}
