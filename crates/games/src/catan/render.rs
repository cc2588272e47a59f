//! The position as text: the map a person reads moves off, and each seat's view of it.

use super::*;

impl fmt::Display for CatanState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.render(f, None)
    }
}

/// The position as one seat sees it.
pub(super) struct View<'a>(pub(super) &'a CatanState, pub(super) usize);

impl fmt::Display for View<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.render(f, Some(self.1))
    }
}

impl CatanState {
    /// The island as a map a person can read moves off: every corner by the number notation
    /// uses (`S12` settles corner 12, `R12-17` builds the road from 12 to 17), each hex with
    /// its name (`H7`, for `robber:H7`), terrain and number; a settlement is the owner's seat
    /// letter after the corner's number (a-d), a city the capital (A-D), a road its sides
    /// drawn in that letter, the robber `robber`.
    pub fn map(&self) -> String {
        const W: usize = 62;
        const H: usize = 33;
        let mut grid = vec![[b' '; W]; H];
        // Grid points (x, y) with hex centres at (2q + r, 3r): x in -7..=7, y in -8..=8.
        let at = |x: i32, y: i32| (((y + 8) * 2) as usize, ((x + 7) * 4 + 2) as usize);
        let seat_letter = |p: usize| b'a' + p as u8;
        let owner = |mask: fn(&Seat) -> u128, bit: u32| -> Option<usize> {
            (0..self.n as usize).find(|&p| mask(&self.seats[p]) >> bit & 1 == 1)
        };
        for (e, &(a, b)) in TOPOLOGY.edge_vertices.iter().enumerate() {
            let (pa, pb) = (TOPOLOGY.vertex_xy[a as usize], TOPOLOGY.vertex_xy[b as usize]);
            let road = owner(|s| s.roads, e as u32).map(seat_letter);
            let (ra, ca) = at(pa.0, pa.1);
            let (rb, cb) = at(pb.0, pb.1);
            if ca == cb {
                for row in grid.iter_mut().take(ra.max(rb)).skip(ra.min(rb) + 1) {
                    row[ca] = road.unwrap_or(b'|');
                }
            } else {
                // A diagonal side: one character halfway, leaning with the side.
                let (r, c) = ((ra + rb) / 2, (ca + cb) / 2);
                let falling = (cb > ca) == (rb > ra);
                grid[r][c] = road.unwrap_or(if falling { b'\\' } else { b'/' });
            }
        }
        for v in 0..VERTICES {
            let (x, y) = TOPOLOGY.vertex_xy[v];
            let (r, c) = at(x, y);
            let label = v.to_string();
            let start = c + 1 - label.len();
            grid[r][start..=c].copy_from_slice(label.as_bytes());
            let settlement = owner(|s| s.settlements as u128, v as u32).map(seat_letter);
            let city = owner(|s| s.cities as u128, v as u32).map(|p| seat_letter(p).to_ascii_uppercase());
            if let Some(mark) = city.or(settlement) {
                grid[r][c + 1] = mark;
            }
        }
        for h in 0..HEXES {
            let (q, rr) = board::HEX_COORDS[h];
            let (r, c) = at(2 * q + rr, 3 * rr);
            let mut put = |row: usize, text: &str| {
                let start = c - text.len() / 2;
                grid[row][start..start + text.len()].copy_from_slice(text.as_bytes());
            };
            put(r - 1, &format!("H{h}"));
            let terrain = &TERRAIN_NAMES[self.terrain[h] as usize][..3];
            match self.number[h] {
                0 => put(r, terrain),
                n => put(r, &format!("{terrain} {n}")),
            }
            if h == self.robber as usize {
                put(r + 1, "robber");
            }
        }
        let mut out = String::new();
        for row in grid {
            out.push_str(String::from_utf8_lossy(&row).trim_end());
            out.push('\n');
        }
        out.push_str(
            "hil=hills (brick) for=forest (lumber) pas=pasture (wool) fie=fields (grain) mou=mountains (ore) \
             des=desert\ncorners by number: S12 settles 12, C12 builds a city there, R12-17 the road 12-17; after a \
             number, a-d is seat 0-3's settlement, A-D a city; roads drawn in their seat's letter\n",
        );
        out
    }

    /// Board and seats; with a `viewer`, hands as that seat knows them.
    pub(super) fn render(&self, f: &mut fmt::Formatter<'_>, viewer: Option<usize>) -> fmt::Result {
        f.write_str(&self.map())?;
        let kinds = ["brick", "lumber", "wool", "grain", "ore", "3:1"];
        let harbours: Vec<String> = (0..HARBOURS)
            .map(|i| {
                let (a, b) = TOPOLOGY.harbour_vertices[i];
                format!("{}@{a}-{b}", kinds[self.harbour[i] as usize])
            })
            .collect();
        writeln!(f, "harbours: {}", harbours.join(" "))?;
        for p in 0..self.n as usize {
            let s = &self.seats[p];
            let list = |m: u64| {
                let mut v = Vec::new();
                let mut m = m;
                while m != 0 {
                    v.push(m.trailing_zeros().to_string());
                    m &= m - 1;
                }
                v.join(",")
            };
            let mut roads = Vec::new();
            let mut m = s.roads;
            while m != 0 {
                let (a, b) = TOPOLOGY.edge_vertices[m.trailing_zeros() as usize];
                roads.push(format!("{a}-{b}"));
                m &= m - 1;
            }
            let (hand, unknown) = self.visible_hand(viewer.unwrap_or(p), p);
            let unknown = if unknown > 0 { format!(" +{unknown} unseen") } else { String::new() };
            writeln!(
                f,
                "seat {p}{}: {} points, cards {} (brick {} lumber {} wool {} grain {} ore {}{unknown}), {} development \
                 cards, {} knights, road {}{}{}; settlements [{}] cities [{}] roads [{}]",
                if p == self.current as usize { " (to move)" } else { "" },
                self.public_points(p),
                s.cards(),
                hand[0],
                hand[1],
                hand[2],
                hand[3],
                hand[4],
                s.dev_cards(),
                s.knights,
                s.longest,
                if self.road == Some(p as u8) { ", longest road" } else { "" },
                if self.army == Some(p as u8) { ", largest army" } else { "" },
                list(s.settlements),
                list(s.cities),
                roads.join(",")
            )?;
        }
        writeln!(
            f,
            "bank {:?}, development deck {}, turn {}, dice rolls {}, last roll {}",
            self.bank,
            self.deck.iter().sum::<u8>(),
            self.turns,
            self.rolls,
            self.last_roll
        )
    }
}

impl CatanState {
    /// The position as the web draws it for `viewer` (None: a spectator).
    pub(super) fn view_of(&self, viewer: Option<Player>) -> serde_json::Value {
        use serde_json::json;
        let n = self.n as usize;
        let bits64 = |m: u64| (0..64u32).filter(move |i| m >> i & 1 == 1);
        let hexes: Vec<serde_json::Value> = (0..HEXES)
            .map(|h| {
                let (q, r) = board::HEX_COORDS[h];
                json!({ "q": q, "r": r, "terrain": TERRAIN_NAMES.get(self.terrain[h] as usize), "number": self.number[h] })
            })
            .collect();
        let kinds = ["brick", "lumber", "wool", "grain", "ore", "3:1"];
        let harbours: Vec<serde_json::Value> = (0..HARBOURS)
            .map(|i| json!({ "kind": kinds.get(self.harbour[i] as usize), "vertices": TOPOLOGY.harbour_vertices[i] }))
            .collect();
        let mut vertices: Vec<Option<serde_json::Value>> = vec![None; VERTICES];
        let mut edges: Vec<Option<usize>> = vec![None; EDGES];
        for p in 0..n {
            let seat = &self.seats[p];
            for v in bits64(seat.settlements) {
                vertices[v as usize] = Some(json!({ "owner": p, "city": false }));
            }
            for v in bits64(seat.cities) {
                vertices[v as usize] = Some(json!({ "owner": p, "city": true }));
            }
            for (e, slot) in edges.iter_mut().enumerate() {
                if seat.roads >> e & 1 == 1 {
                    *slot = Some(p);
                }
            }
        }
        let players: Vec<serde_json::Value> = (0..n)
            .map(|p| {
                let seat = &self.seats[p];
                let own = viewer == Some(p);
                // A spectator is nobody's witness: it misses every unseen steal.
                let (hand, unseen) = self.visible_hand(viewer.unwrap_or(usize::MAX), p);
                let dev = own.then(|| {
                    (0..DEV_KINDS)
                        .filter(|&k| seat.dev[k] > 0)
                        .map(|k| json!({ "kind": DEV_NAMES[k], "count": seat.dev[k], "new": seat.fresh[k] }))
                        .collect::<Vec<_>>()
                });
                json!({
                    "points": if own { self.points(p) } else { self.public_points(p) },
                    "cards": seat.cards(), "hand": hand, "unseen": unseen, "dev_cards": seat.dev_cards(), "dev": dev,
                    "knights": seat.knights, "road_length": seat.longest, "discard": self.discards[p],
                })
            })
            .collect();
        let phase = format!("{:?}", self.phase).to_lowercase();
        let trade = self.trades.then(|| self.trade_view());
        let geometry = json!({
            "vertex_xy": TOPOLOGY.vertex_xy.to_vec(), "edge_vertices": TOPOLOGY.edge_vertices.to_vec(),
        });
        json!({
            "hexes": hexes, "harbours": harbours, "robber": self.robber, "vertices": vertices, "edges": edges,
            "players": players, "current": self.current, "phase": phase, "last_roll": self.last_roll,
            "bank": self.bank, "dev_deck": self.deck.iter().sum::<u8>(), "army": self.army, "road": self.road,
            "turns": self.turns, "win_points": self.win_points, "resources": RESOURCE_NAMES, "geometry": geometry,
            "trade": trade,
        })
    }
}
