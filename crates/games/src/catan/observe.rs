//! The network's view of a position, part by part: the board, the seats, the table and the
//! derived features, each from the viewer's seat.

use super::*;

impl CatanState {
    /// The observation's board: each hex's terrain, number and robber; each corner's and
    /// road's owner, seats counted from the viewer.
    pub(super) fn observe_board(&self, player: Player, out: &mut Vec<f32>) {
        let n = self.n as usize;
        let rel = |q: usize| (q + n - player) % n;
        for h in 0..HEXES {
            let mut f = [0.0f32; 8];
            f[self.terrain[h] as usize] = 1.0;
            let num = self.number[h] as i32;
            f[6] = if num == 0 { 0.0 } else { (6 - (num - 7).abs()) as f32 / 36.0 };
            f[7] = (h == self.robber as usize) as u8 as f32;
            out.extend_from_slice(&f);
        }
        for v in 0..VERTICES {
            let mut f = [0.0f32; 8];
            for q in 0..n {
                let s = &self.seats[q];
                if s.settlements >> v & 1 == 1 {
                    f[rel(q) * 2] = 1.0;
                }
                if s.cities >> v & 1 == 1 {
                    f[rel(q) * 2 + 1] = 1.0;
                }
            }
            out.extend_from_slice(&f);
        }
        for e in 0..EDGES {
            let mut f = [0.0f32; 4];
            for q in 0..n {
                if self.seats[q].roads >> e & 1 == 1 {
                    f[rel(q)] = 1.0;
                }
            }
            out.extend_from_slice(&f);
        }
    }

    /// The observation's seats, the viewer first: what it knows of each hand, and the public rest.
    pub(super) fn observe_seats(&self, player: Player, out: &mut Vec<f32>) {
        let n = self.n as usize;
        // Every count is scaled by the most it can reach (19 of a resource, 25 development cards,
        // 14 knights; hands above 20 cards read as 20), so observations stay in 0..=1.
        for k in 0..MAX_PLAYERS {
            let mut f = [0.0f32; SEAT_FEATURES];
            if k < n {
                let q = (player + k) % n;
                let s = &self.seats[q];
                // What the viewer knows of each resource (a stolen card it did not see lowers
                // the thief's count, down to nothing), and the size of the hand, which is public.
                let (hand, _) = self.visible_hand(player, q);
                for r in 0..RESOURCES {
                    f[r] = hand[r].max(0) as f32 / 19.0;
                }
                f[14] = (s.hand.iter().map(|&c| c as f32).sum::<f32>() / 20.0).min(1.0);
                f[5] = s.dev_cards() as f32 / 25.0;
                f[6] = s.knights as f32 / 14.0;
                f[7] = (self.public_points(q) as f32 / self.win_points as f32).min(1.0);
                f[8] = s.longest as f32 / 15.0;
                f[9] = (self.army == Some(q as u8)) as u8 as f32;
                f[10] = (self.road == Some(q as u8)) as u8 as f32;
                f[11] = s.harbours.count_ones() as f32 / 6.0;
                f[12] = (q == self.current as usize) as u8 as f32;
                f[13] = 1.0;
            }
            out.extend_from_slice(&f);
        }
    }

    /// The observation's table: the viewer's development cards, the bank, the deck, the phase.
    pub(super) fn observe_table(&self, player: Player, out: &mut Vec<f32>) {
        for k in 0..DEV_KINDS {
            out.push(self.seats[player].dev[k] as f32 / DEV_DECK[k] as f32);
        }
        for r in 0..RESOURCES {
            out.push(self.bank[r] as f32 / 19.0);
        }
        out.push(self.deck.iter().sum::<u8>() as f32 / 25.0);
        out.push(self.played_dev as u8 as f32);
        out.push((self.phase == Phase::Roll) as u8 as f32);
        out.push((self.phase == Phase::Main) as u8 as f32);
        out.push(matches!(self.phase, Phase::MoveRobber | Phase::Steal) as u8 as f32);
        out.push((self.phase == Phase::Discard) as u8 as f32);
        out.push(matches!(self.phase, Phase::SetupSettlement | Phase::SetupRoad) as u8 as f32);
    }

    /// The observation's derived features: what each corner yields and who may settle it, each
    /// seat's production and the catan-value evaluator's features of each seat.
    pub(super) fn observe_derived(&self, player: Player, out: &mut Vec<f32>) {
        let n = self.n as usize;
        // Derived: what each vertex yields, whether it can be settled, and each seat's
        // expected cards a roll by resource (x 3, so a strong start reads near 1).
        let t = &*TOPOLOGY;
        let (open, mine) = (self.open_vertices(), self.settlement_spots(player));
        for v in 0..VERTICES {
            let mut f = [0.0f32; VERTEX_EXTRA];
            for &h in &t.vertex_hexes[v] {
                let h = h as usize;
                let num = self.number[h] as i32;
                if num != 0 && h != self.robber as usize && (self.terrain[h] as usize) < RESOURCES {
                    f[self.terrain[h] as usize] += (6 - (num - 7).abs()) as f32 / 36.0 * 3.0;
                }
            }
            for x in &mut f[..RESOURCES] {
                *x = x.min(1.0);
            }
            f[RESOURCES] = (open >> v & 1) as f32;
            f[RESOURCES + 1] = (mine >> v & 1) as f32;
            out.extend_from_slice(&f);
        }
        for k in 0..MAX_PLAYERS {
            if k < n {
                let prod = eval::production(self, (player + k) % n);
                out.extend(prod.iter().map(|&p| (p * 3.0).min(1.0) as f32));
            } else {
                out.extend_from_slice(&[0.0; RESOURCES]);
            }
        }
        // The catan-value evaluator's features of each seat (the viewer first), scaled to
        // 0..=1: what a network may weigh differently, and needs not learn to compute.
        for k in 0..MAX_PLAYERS {
            if k < n {
                let q = (player + k) % n;
                let mut f = eval::seat_features(self, q);
                if k > 0 {
                    // Only what the viewer sees of another seat: its public points, its
                    // development cards counted whole, nothing that depends on its hand's kinds.
                    f[0] = self.public_points(q) as f64;
                    f[7] = self.seats[q].dev_cards() as f64;
                    f[10..14].fill(0.0);
                }
                out.extend(f.iter().zip(SEAT_FEATURE_SCALE).map(|(x, s)| (x / s).clamp(0.0, 1.0) as f32));
            } else {
                out.extend_from_slice(&[0.0; eval::SEAT_FEATURES]);
            }
        }
    }
}
