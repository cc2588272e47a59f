//! The rules' working parts: where pieces may go, paying and placing, production, the robber,
//! discards, the longest road and the chance draws.

use super::*;

impl CatanState {
    pub(super) fn occupied(&self) -> u64 {
        self.seats.iter().fold(0, |m, s| m | s.buildings())
    }

    pub(super) fn all_roads(&self) -> u128 {
        self.seats.iter().fold(0, |m, s| m | s.roads)
    }

    /// Corners where a settlement would satisfy the distance rule.
    pub(super) fn open_vertices(&self) -> u64 {
        let t = &*TOPOLOGY;
        let occupied = self.occupied();
        let mut blocked = occupied;
        let mut m = occupied;
        while m != 0 {
            let v = m.trailing_zeros() as usize;
            m &= m - 1;
            blocked |= t.vertex_neighbours[v];
        }
        !blocked & ((1u64 << VERTICES) - 1)
    }

    /// Edges where `seat` may build a road: free, and touching its building or a road of its
    /// that does not pass an opponent's building at that corner.
    pub(super) fn road_spots(&self, seat: usize) -> u128 {
        let t = &*TOPOLOGY;
        let me = &self.seats[seat];
        let others = self.occupied() & !me.buildings();
        let mut from = me.buildings() | (me.road_ends & !others);
        let mut edges = 0u128;
        while from != 0 {
            let v = from.trailing_zeros() as usize;
            from &= from - 1;
            edges |= t.vertex_edges[v];
        }
        edges & !self.all_roads()
    }

    pub(super) fn settlement_spots(&self, seat: usize) -> u64 {
        self.open_vertices() & self.seats[seat].road_ends
    }

    pub(super) fn pieces_left(&self, seat: usize) -> (u8, u8, u8) {
        let s = &self.seats[seat];
        (
            ROADS - s.roads.count_ones() as u8,
            SETTLEMENTS - s.settlements.count_ones() as u8,
            CITIES - s.cities.count_ones() as u8,
        )
    }

    /// Lays out derived board facts once tiles and numbers are known: the robber on the desert.
    pub(super) fn finish_board(&mut self) {
        self.robber = self.terrain.iter().position(|&t| t == DESERT).unwrap_or(0) as u8;
        self.phase = Phase::SetupSettlement;
        self.count = 0;
        self.current = 0;
    }

    /// Seat placing setup settlement `k` (snake order).
    pub(super) fn setup_seat(&self, k: u8) -> u8 {
        if k < self.n { k } else { 2 * self.n - 1 - k }
    }

    pub(super) fn pay(&mut self, seat: usize, cost: &[u8; RESOURCES]) {
        for r in 0..RESOURCES {
            self.seats[seat].hand[r] -= cost[r];
            self.bank[r] += cost[r];
        }
    }

    pub(super) fn place_settlement(&mut self, seat: usize, v: usize) {
        let t = &*TOPOLOGY;
        self.seats[seat].settlements |= 1 << v;
        for (i, &(a, b)) in t.harbour_vertices.iter().enumerate() {
            if a as usize == v || b as usize == v {
                self.seats[seat].harbours |= 1 << self.harbour[i];
            }
        }
        // A settlement can cut another seat's road.
        for other in 0..self.n as usize {
            if other != seat && self.seats[other].road_ends >> v & 1 == 1 {
                self.update_longest(other);
            }
        }
        self.award_road();
    }

    pub(super) fn place_road(&mut self, seat: usize, e: usize) {
        let (a, b) = TOPOLOGY.edge_vertices[e];
        let s = &mut self.seats[seat];
        s.roads |= 1 << e;
        s.road_ends |= 1 << a | 1 << b;
        self.update_longest(seat);
        self.award_road();
    }

    pub(super) fn update_longest(&mut self, seat: usize) {
        let blocked = self.occupied() & !self.seats[seat].buildings();
        self.seats[seat].longest = longest_road(self.seats[seat].roads, blocked);
    }

    /// The rulebook's Longest Road: 5 roads at least; the holder keeps it while nobody is
    /// strictly longer; when the holder falls behind, the single longest seat takes it, and on a
    /// tie for the lead (or nobody at 5) it is set aside.
    pub(super) fn award_road(&mut self) {
        let n = self.n as usize;
        let best = (0..n).map(|p| self.seats[p].longest).max().unwrap_or(0);
        if let Some(h) = self.road {
            let held = self.seats[h as usize].longest;
            if held >= 5 && held == best {
                return;
            }
        }
        let leaders: Vec<usize> = (0..n).filter(|&p| self.seats[p].longest == best).collect();
        self.road = if best >= 5 && leaders.len() == 1 { Some(leaders[0] as u8) } else { None };
    }

    /// Ends the game if the current seat has reached the winning score (only on its own turn).
    pub(super) fn check_win(&mut self) {
        let p = self.current as usize;
        if self.points(p) >= self.win_points {
            self.winner = Some(p as u8);
            self.phase = Phase::Over;
        }
    }

    pub(super) fn start_turn(&mut self, seat: u8) {
        self.current = seat;
        self.turns += 1;
        self.played_dev = false;
        self.new_turn_offers();
        for s in self.seats.iter_mut() {
            s.fresh = [0; DEV_KINDS];
        }
        if self.turns > self.turn_limit {
            self.phase = Phase::Over;
            return;
        }
        self.phase = Phase::Roll;
        self.check_win();
    }

    pub(super) fn produce(&mut self, roll: u8) {
        let t = &*TOPOLOGY;
        let mut owed = [[0u8; RESOURCES]; MAX_PLAYERS];
        for h in 0..HEXES {
            if self.number[h] != roll || h == self.robber as usize {
                continue;
            }
            let r = self.terrain[h] as usize;
            for &v in &t.hex_vertices[h] {
                for p in 0..self.n as usize {
                    let s = &self.seats[p];
                    owed[p][r] += (s.settlements >> v & 1) as u8 + 2 * (s.cities >> v & 1) as u8;
                }
            }
        }
        for r in 0..RESOURCES {
            let total: u32 = (0..self.n as usize).map(|p| owed[p][r] as u32).sum();
            if total == 0 {
                continue;
            }
            if total <= self.bank[r] as u32 {
                for p in 0..self.n as usize {
                    self.seats[p].hand[r] += owed[p][r];
                }
                self.bank[r] -= total as u8;
            } else {
                let owed_seats: Vec<usize> = (0..self.n as usize).filter(|&p| owed[p][r] > 0).collect();
                if owed_seats.len() == 1 {
                    let give = self.bank[r];
                    self.seats[owed_seats[0]].hand[r] += give;
                    self.bank[r] = 0;
                }
            }
        }
    }

    /// Seats (other than the current one) with a building on the robber's hex and a card.
    pub(super) fn victims(&self) -> u8 {
        let t = &*TOPOLOGY;
        let mut corners = 0u64;
        for &v in &t.hex_vertices[self.robber as usize] {
            corners |= 1 << v;
        }
        let mut m = 0u8;
        for p in 0..self.n as usize {
            if p != self.current as usize && self.seats[p].buildings() & corners != 0 && self.seats[p].cards() > 0 {
                m |= 1 << p;
            }
        }
        m
    }

    pub(super) fn after_robber_moved(&mut self) {
        let v = self.victims();
        if v == 0 {
            self.phase = self.resume;
        } else {
            self.phase = Phase::Steal;
        }
    }

    /// The next seat that still has to discard, in turn order from the current seat.
    pub(super) fn discarder(&self) -> Option<usize> {
        let n = self.n as usize;
        (0..n).map(|k| (self.current as usize + k) % n).find(|&p| self.discards[p] > 0)
    }

    pub(super) fn after_discards(&mut self) {
        if self.discarder().is_none() {
            self.resume = Phase::Main;
            self.phase = Phase::MoveRobber;
        }
    }

    pub(super) fn next_number_hex(&self) -> Option<usize> {
        (0..HEXES).find(|&h| self.terrain[h] != DESERT && self.number[h] == 0)
    }

    /// Red hexes allowed for the next 6 or 8: producing, without a token, not next to a red.
    pub(super) fn red_spots(&self) -> u32 {
        let t = &*TOPOLOGY;
        let mut m = 0u32;
        for h in 0..HEXES {
            if self.terrain[h] == DESERT || self.number[h] != 0 {
                continue;
            }
            if t.hex_neighbours[h].iter().any(|&g| matches!(self.number[g as usize], 6 | 8)) {
                continue;
            }
            m |= 1 << h;
        }
        m
    }

    pub(super) fn tokens_left(&self) -> [u8; 13] {
        let mut left = TOKENS;
        for h in 0..HEXES {
            if self.number[h] != 0 {
                left[self.number[h] as usize] -= 1;
            }
        }
        left
    }

    pub(super) fn is_free_road_possible(&self) -> bool {
        let seat = self.current as usize;
        self.pieces_left(seat).0 > 0 && self.road_spots(seat) != 0
    }

    /// A world `player` cannot tell from this one: what they have not seen dealt again.
    pub(super) fn redeal(&self, player: Player, rng: &mut Rng) -> Self {
        // Opponents' development cards are redealt from everything the viewer has not seen:
        // the deck plus those hands (each keeps its count, and its count bought this turn).
        let mut s = self.clone();
        let mut pool = s.deck;
        for q in 0..self.n as usize {
            if q != player {
                for k in 0..DEV_KINDS {
                    pool[k] += s.seats[q].dev[k];
                }
            }
        }
        for q in 0..self.n as usize {
            if q == player {
                continue;
            }
            let held = s.seats[q].dev_cards();
            let fresh: u32 = s.seats[q].fresh.iter().map(|&c| c as u32).sum();
            s.seats[q].dev = [0; DEV_KINDS];
            s.seats[q].fresh = [0; DEV_KINDS];
            for i in 0..held {
                let k = draw(&pool, rng);
                pool[k] -= 1;
                s.seats[q].dev[k] += 1;
                if i < fresh {
                    s.seats[q].fresh[k] += 1;
                }
            }
        }
        s.deck = pool;
        // Cards stolen out of the viewer's sight: each is put back and drawn again from the
        // victim's hand as it is now (an approximation of the posterior: later spending is not
        // used as evidence), keeping every hand's size.
        // Cards committed to the offer on the table were shown, so they stay where they are.
        if self.hidden_hands {
            for t in 0..self.n as usize {
                for x in 0..self.n as usize {
                    if t == player || x == player {
                        continue;
                    }
                    let kept = self.committed(x);
                    for r in 0..RESOURCES {
                        for _ in 0..self.unseen[t][x][r] {
                            if s.seats[t].hand[r] == 0 {
                                continue; // spent since: that card's kind is no longer open
                            }
                            s.seats[t].hand[r] -= 1;
                            s.seats[x].hand[r] += 1;
                            s.unseen[t][x][r] -= 1;
                            let mut open = s.seats[x].hand;
                            for (o, k) in open.iter_mut().zip(kept) {
                                *o = o.saturating_sub(k);
                            }
                            let k = draw(&open, rng);
                            s.seats[x].hand[k] -= 1;
                            s.seats[t].hand[k] += 1;
                            s.unseen[t][x][k] += 1;
                        }
                    }
                }
            }
        }
        s
    }
}

/// Chance outcomes `0..counts.len()`, each as likely as its count (zero counts left out).
pub(super) fn push_weighted(out: &mut Vec<(Action, f64)>, counts: &[u8]) {
    let total: u32 = counts.iter().map(|&c| c as u32).sum();
    for (k, &c) in counts.iter().enumerate() {
        if c > 0 {
            out.push((k as Action, c as f64 / total as f64));
        }
    }
}

/// A random index of `counts`, each as likely as its count (the counts may not all be zero).
pub(super) fn draw(counts: &[u8], rng: &mut Rng) -> usize {
    let total: u32 = counts.iter().map(|&c| c as u32).sum();
    let mut x = rng.random_range(0..total);
    for (k, &c) in counts.iter().enumerate() {
        if x < c as u32 {
            return k;
        }
        x -= c as u32;
    }
    unreachable!("x is below the total")
}

/// Longest trail in `roads` that does not pass through a corner in `blocked`.
pub(super) fn longest_road(roads: u128, blocked: u64) -> u8 {
    fn walk(v: usize, roads: u128, used: u128, blocked: u64) -> u8 {
        let t = &*TOPOLOGY;
        let mut best = 0;
        let mut out = t.vertex_edges[v] & roads & !used;
        while out != 0 {
            let e = out.trailing_zeros() as usize;
            out &= out - 1;
            let (a, b) = t.edge_vertices[e];
            let w = if a as usize == v { b } else { a } as usize;
            let len = if blocked >> w & 1 == 1 { 1 } else { 1 + walk(w, roads, used | 1 << e, blocked) };
            best = best.max(len);
        }
        best
    }
    if roads == 0 {
        return 0;
    }
    let t = &*TOPOLOGY;
    let mut ends = 0u64;
    let mut m = roads;
    while m != 0 {
        let e = m.trailing_zeros() as usize;
        m &= m - 1;
        let (a, b) = t.edge_vertices[e];
        ends |= 1 << a | 1 << b;
    }
    let mut best = 0;
    while ends != 0 {
        let v = ends.trailing_zeros() as usize;
        ends &= ends - 1;
        best = best.max(walk(v, roads, 0, blocked));
    }
    best
}
