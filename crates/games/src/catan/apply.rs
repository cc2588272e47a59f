//! The steps of a move: each phase's action applied to the position (setup, the robber, a
//! card, the roll, the main phase's builds and the development cards).

use super::*;

impl CatanState {
    pub(super) fn play_knight(&mut self, back: Phase) {
        let p = self.current as usize;
        self.seats[p].dev[KNIGHT] -= 1;
        self.seats[p].knights += 1;
        self.played_dev = true;
        let k = self.seats[p].knights;
        let beats = match self.army {
            None => true,
            Some(h) => h as usize != p && k > self.seats[h as usize].knights,
        };
        if k >= 3 && beats {
            self.army = Some(p as u8);
        }
        self.resume = back;
        self.phase = Phase::MoveRobber;
        self.check_win();
    }

    /// Development cards the mover may play now (one a turn, none bought this turn), before
    /// or after the roll.
    pub(super) fn push_dev_plays(&self, out: &mut Vec<Action>) {
        let s = &self.seats[self.current as usize];
        if self.played_dev {
            return;
        }
        if s.playable(KNIGHT) {
            out.push(PLAY_KNIGHT);
        }
        if s.playable(ROAD_BUILDING) {
            out.push(PLAY_ROAD_BUILDING);
        }
        if s.playable(YEAR_OF_PLENTY) {
            out.push(PLAY_YEAR_OF_PLENTY);
        }
        if s.playable(MONOPOLY) {
            for r in 0..RESOURCES {
                out.push(PLAY_MONOPOLY + r as u32);
            }
        }
    }

    /// Road Building, Year of Plenty or Monopoly; the turn goes on in `back` (the roll, or the
    /// main phase) once its roads or resources are taken.
    pub(super) fn play_progress(&mut self, action: Action, back: Phase) {
        let p = self.current as usize;
        self.played_dev = true;
        self.resume = back;
        match action {
            PLAY_ROAD_BUILDING => {
                self.seats[p].dev[ROAD_BUILDING] -= 1;
                self.count = 2;
                if self.is_free_road_possible() {
                    self.phase = Phase::FreeRoads;
                }
            }
            PLAY_YEAR_OF_PLENTY => {
                self.seats[p].dev[YEAR_OF_PLENTY] -= 1;
                self.count = 2;
                if self.bank.iter().any(|&b| b > 0) {
                    self.phase = Phase::Plenty;
                }
            }
            a => {
                let r = (a - PLAY_MONOPOLY) as usize;
                self.seats[p].dev[MONOPOLY] -= 1;
                for q in 0..self.n as usize {
                    if q != p {
                        let c = self.seats[q].hand[r];
                        self.seats[q].hand[r] = 0;
                        self.seats[p].hand[r] += c;
                    }
                }
            }
        }
    }

    pub(super) fn apply_main(&mut self, action: Action) {
        let p = self.current as usize;
        match action {
            a if a < CITY => {
                self.pay(p, &SETTLEMENT_COST);
                self.place_settlement(p, (a - SETTLE) as usize);
                self.check_win();
            }
            a if a < ROAD => {
                let v = (a - CITY) as usize;
                self.pay(p, &CITY_COST);
                self.seats[p].settlements &= !(1 << v);
                self.seats[p].cities |= 1 << v;
                self.check_win();
            }
            a if a < ROLL => {
                self.pay(p, &ROAD_COST);
                self.place_road(p, (a - ROAD) as usize);
                self.check_win();
            }
            END => {
                let next = (self.current + 1) % self.n;
                self.start_turn(next);
            }
            BUY => {
                self.pay(p, &DEV_COST);
                self.phase = Phase::DevCard;
            }
            PLAY_KNIGHT => self.play_knight(Phase::Main),
            PLAY_ROAD_BUILDING | PLAY_YEAR_OF_PLENTY => self.play_progress(action, Phase::Main),
            a if (PLAY_MONOPOLY..TAKE).contains(&a) => self.play_progress(action, Phase::Main),
            a if (OFFER..ACCEPT).contains(&a) => self.put_offer((a - OFFER) as usize),
            a if (TRADE..NUM_ACTIONS).contains(&a) => {
                let (give, get) =
                    (((a - TRADE) / RESOURCES as u32) as usize, ((a - TRADE) % RESOURCES as u32) as usize);
                let rate = self.seats[p].rate(give);
                self.seats[p].hand[give] -= rate;
                self.bank[give] += rate;
                self.seats[p].hand[get] += 1;
                self.bank[get] -= 1;
            }
            _ => {}
        }
    }

    /// The board being laid out (a shuffled board's tiles, numbers and harbours, chance's picks).
    pub(super) fn apply_board(&mut self, action: Action) {
        match self.phase {
            Phase::BoardTiles => {
                self.terrain[self.count as usize] = action as u8;
                self.count += 1;
                if self.count as usize == HEXES {
                    self.count = 0;
                    self.phase = if self.separate_reds { Phase::RedHexes } else { Phase::Numbers };
                }
            }
            Phase::RedHexes => {
                self.number[action as usize] = [6, 6, 8, 8][self.count as usize];
                self.count += 1;
                if self.count == 4 {
                    self.count = 0;
                    self.phase = Phase::Numbers;
                }
            }
            Phase::Numbers => {
                if let Some(h) = self.next_number_hex() {
                    self.number[h] = action as u8;
                }
                if self.next_number_hex().is_none() {
                    self.count = 0;
                    self.phase = Phase::Harbours;
                }
            }
            Phase::Harbours => {
                self.harbour[self.count as usize] = action as u8;
                self.count += 1;
                if self.count as usize == HARBOURS {
                    self.finish_board();
                }
            }
            _ => unreachable!("{:?} is not a phase of {}", self.phase, "apply_board"),
        }
    }

    /// The set-up placements: each seat's settlements and roads, the second settlement's cards.
    pub(super) fn apply_setup(&mut self, action: Action) {
        match self.phase {
            Phase::SetupSettlement => {
                let seat = self.setup_seat(self.count) as usize;
                let v = (action - SETTLE) as usize;
                self.place_settlement(seat, v);
                self.last_vertex = v as u8;
                if self.count >= self.n {
                    // The second settlement yields one card per producing neighbour hex.
                    for &h in &TOPOLOGY.vertex_hexes[v] {
                        let t = self.terrain[h as usize];
                        if t != DESERT && self.bank[t as usize] > 0 {
                            self.seats[seat].hand[t as usize] += 1;
                            self.bank[t as usize] -= 1;
                        }
                    }
                }
                self.phase = Phase::SetupRoad;
            }
            Phase::SetupRoad => {
                let seat = self.setup_seat(self.count) as usize;
                self.place_road(seat, (action - ROAD) as usize);
                self.count += 1;
                if self.count == 2 * self.n {
                    self.count = 0;
                    self.start_turn(0);
                } else {
                    self.phase = Phase::SetupSettlement;
                }
            }
            _ => unreachable!("{:?} is not a phase of {}", self.phase, "apply_setup"),
        }
    }

    /// A seven's discards, the robber's move and the steal.
    pub(super) fn apply_robber(&mut self, action: Action) {
        let p = self.current as usize;
        match self.phase {
            Phase::Discard => {
                if let Some(d) = self.discarder() {
                    let r = (action - DISCARD) as usize;
                    self.seats[d].hand[r] -= 1;
                    self.bank[r] += 1;
                    self.discards[d] -= 1;
                }
                self.after_discards();
            }
            Phase::MoveRobber => {
                self.robber = (action - ROBBER) as u8;
                self.after_robber_moved();
            }
            Phase::Steal => {
                self.victim = (action - STEAL) as u8;
                self.phase = Phase::StealCard;
            }
            Phase::StealCard => {
                let r = action as usize;
                self.seats[self.victim as usize].hand[r] -= 1;
                self.seats[p].hand[r] += 1;
                if self.hidden_hands {
                    self.unseen[p][self.victim as usize][r] = self.unseen[p][self.victim as usize][r].saturating_add(1);
                }
                self.phase = self.resume;
            }
            _ => unreachable!("{:?} is not a phase of {}", self.phase, "apply_robber"),
        }
    }

    /// A development card bought, and the cards played that take several steps.
    pub(super) fn apply_card(&mut self, action: Action) {
        let p = self.current as usize;
        match self.phase {
            Phase::DevCard => {
                let k = action as usize;
                self.deck[k] -= 1;
                self.seats[p].dev[k] += 1;
                self.seats[p].fresh[k] += 1;
                self.phase = Phase::Main;
                self.check_win();
            }
            Phase::FreeRoads => {
                self.place_road(p, (action - ROAD) as usize);
                self.count -= 1;
                self.phase = self.resume;
                self.check_win();
                if self.phase == self.resume && self.count > 0 && self.is_free_road_possible() {
                    self.phase = Phase::FreeRoads;
                }
            }
            Phase::Plenty => {
                let r = (action - TAKE) as usize;
                self.bank[r] -= 1;
                self.seats[p].hand[r] += 1;
                self.count -= 1;
                if self.count == 0 || self.bank.iter().all(|&b| b == 0) {
                    self.phase = self.resume;
                }
            }
            _ => unreachable!("{:?} is not a phase of {}", self.phase, "apply_card"),
        }
    }

    /// The dice: a seven's discards and robber, or every producing hex's cards.
    pub(super) fn apply_roll(&mut self, roll: u8) {
        self.rolls += 1;
        self.last_roll = roll;
        if roll == 7 {
            for q in 0..self.n as usize {
                let c = self.seats[q].cards();
                self.discards[q] = if c > 7 { (c / 2) as u8 } else { 0 };
            }
            self.phase = Phase::Discard;
            self.after_discards();
        } else {
            self.produce(roll);
            self.phase = Phase::Main;
        }
    }
}
