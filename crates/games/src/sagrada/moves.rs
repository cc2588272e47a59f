//! A turn's moves: the legal drafts, placements and tools listed, a move applied, and the turn
//! and round that follow.

use super::*;

impl SagradaState {
    /// Player actions of the player to move, ascending.
    pub(super) fn list_actions(&self, out: &mut Vec<Action>) {
        out.clear();
        match self.stage {
            Stage::Choose => {
                let offers = self.offers[self.count as usize];
                out.extend((0..4).filter(|&k| offers[k] != NONE).map(|k| CHOOSE + k as u32));
                return;
            }
            Stage::Play => {}
            _ => return,
        }
        let p = self.seat();
        let w = &self.windows[p];
        match self.pending {
            Pending::None => {}
            Pending::PlaceHeld => {
                let d = self.held;
                out.extend(bits(w.allowed(d, Rule::Normal)).map(|c| PLACE + d as u32 * 20 + c as u32));
                return;
            }
            Pending::FluxRemoverValue => {
                out.extend((0..6).map(|v| FLUX_VALUE + v));
                return;
            }
            Pending::LathekinSecond(moved) => {
                for from in bits(w.occupied & !(1 << moved)) {
                    let base = LATHEKIN + from as u32 * 20;
                    out.extend(bits(w.moves_from(from, Rule::Normal)).map(|to| base + to as u32));
                }
                return;
            }
            Pending::TapWheelSecond(colour, moved) => {
                for from in bits(w.colour[colour as usize] & !(1 << moved)) {
                    let base = TAP_WHEEL + from as u32 * 20;
                    out.extend(bits(w.moves_from(from, Rule::Normal)).map(|to| base + to as u32));
                }
                out.push(TAP_STOP);
                return;
            }
            Pending::FluxBrushRoll | Pending::FluxRemoverDraw | Pending::HammerRoll => return,
        }
        if !self.placed {
            for d in self.pool_dice() {
                let base = PLACE + d as u32 * 20;
                out.extend(bits(w.allowed(d, Rule::Normal)).map(|c| base + c as u32));
            }
        }
        out.push(PASS);
        if self.tool_done {
            return;
        }
        for &t in self.tools() {
            let tool = TOOLS[t as usize];
            if self.can_afford(p, tool) {
                self.list_tool(p, tool, out);
            }
        }
    }

    pub(super) fn list_tool(&self, p: Player, tool: Tool, out: &mut Vec<Action>) {
        let w = &self.windows[p];
        let first_turn = (self.turn_index as usize) < self.n as usize;
        let drafting = !self.placed;
        match tool {
            Tool::GrozingPliers if drafting => {
                for d in self.pool_dice() {
                    let v = cards::value(d);
                    for (up, ok) in [(0, v > 1), (1, v < 6)] {
                        if ok {
                            let d2 = if up == 1 { d + 1 } else { d - 1 };
                            let base = GROZING + d as u32 * 40 + up * 20;
                            out.extend(bits(w.allowed(d2, Rule::Normal)).map(|c| base + c as u32));
                        }
                    }
                }
            }
            Tool::EglomiseBrush | Tool::CopperFoilBurnisher => {
                let (base, rule) = (relocate_base(tool), relocate_rule(tool));
                for from in bits(w.occupied) {
                    out.extend(bits(w.moves_from(from, rule)).map(|to| base + from as u32 * 20 + to as u32));
                }
            }
            Tool::Lathekin if w.dice() >= 2 => {
                for from in bits(w.occupied) {
                    for to in bits(w.moves_from(from, Rule::Normal)) {
                        let mut after = *w;
                        after.relocate(from, to);
                        if bits(after.occupied & !(1 << to)).any(|f2| after.moves_from(f2, Rule::Normal) != 0) {
                            out.push(LATHEKIN + from as u32 * 20 + to as u32);
                        }
                    }
                }
            }
            Tool::LensCutter if drafting => {
                for d in self.pool_dice() {
                    for r in self.track_dice() {
                        if r != d && w.allowed(r, Rule::Normal) != 0 {
                            out.push(LENS + d as u32 * 30 + r as u32);
                        }
                    }
                }
            }
            Tool::FluxBrush if drafting => out.extend(self.pool_dice().map(|d| FLUX_BRUSH + d as u32)),
            Tool::GlazingHammer if drafting && !first_turn && self.pool_size() > 0 => out.push(HAMMER),
            Tool::RunningPliers if self.placed && first_turn && self.pool_size() > 0 => out.push(PLIERS),
            Tool::CorkBackedStraightedge if drafting => {
                for d in self.pool_dice() {
                    let base = CORK + d as u32 * 20;
                    out.extend(bits(w.allowed(d, Rule::Lonely)).map(|c| base + c as u32));
                }
            }
            Tool::GrindingStone if drafting => {
                for d in self.pool_dice() {
                    let base = GRINDING + d as u32 * 20;
                    out.extend(bits(w.allowed(flip(d), Rule::Normal)).map(|c| base + c as u32));
                }
            }
            Tool::FluxRemover if drafting => out.extend(self.pool_dice().map(|d| FLUX_REMOVER + d as u32)),
            Tool::TapWheel => {
                let tc = self.track_colours();
                for c in (0..COLOURS).filter(|&c| tc & (1 << c) != 0) {
                    for from in bits(w.colour[c]) {
                        let base = TAP_WHEEL + from as u32 * 20;
                        out.extend(bits(w.moves_from(from, Rule::Normal)).map(|to| base + to as u32));
                    }
                }
                // Colours were visited in colour order; ids must ascend by space.
                let start = out.iter().rposition(|&a| a < TAP_WHEEL).map_or(0, |i| i + 1);
                out[start..].sort_unstable();
            }
            _ => {}
        }
    }

    pub(super) fn apply_move(&mut self, m: Move) {
        let p = self.seat();
        match m {
            Move::Choose(k) => {
                let pattern = self.offers[self.count as usize][k as usize];
                let p = self.count as usize;
                self.windows[p] = Window::new(pattern);
                self.tokens[p] = PATTERNS[pattern as usize].tokens;
                self.count += 1;
                self.settle();
                return;
            }
            Move::Place { die, cell } => {
                if self.pending == Pending::PlaceHeld {
                    self.held = NONE;
                    self.pending = Pending::None;
                } else {
                    self.pool[die as usize] -= 1;
                    self.placed = true;
                }
                self.windows[p].put(cell as usize, die);
            }
            Move::Pass => {
                self.end_turn();
                return;
            }
            Move::Grozing { die, up, cell } => {
                self.pay(p, Tool::GrozingPliers);
                self.draft(die);
                self.windows[p].put(cell as usize, if up { die + 1 } else { die - 1 });
            }
            Move::Relocate { tool, from, to } => {
                match (tool, self.pending) {
                    (Tool::Lathekin, Pending::LathekinSecond(_)) | (Tool::TapWheel, Pending::TapWheelSecond(..)) => {
                        self.pending = Pending::None;
                    }
                    (Tool::Lathekin, _) => {
                        self.pay(p, tool);
                        self.pending = Pending::LathekinSecond(to);
                    }
                    (Tool::TapWheel, _) => {
                        self.pay(p, tool);
                        let c = cards::colour(self.windows[p].die_at(from as usize).expect("die to move"));
                        self.pending = Pending::TapWheelSecond(c as u8, to);
                    }
                    _ => self.pay(p, tool),
                }
                self.windows[p].relocate(from as usize, to as usize);
            }
            Move::Lens { die, track } => {
                self.pay(p, Tool::LensCutter);
                self.draft(die);
                self.track[die as usize] += 1;
                self.track[track as usize] -= 1;
                self.held = track;
                self.pending = Pending::PlaceHeld;
            }
            Move::FluxBrush(die) => {
                self.pay(p, Tool::FluxBrush);
                self.draft(die);
                self.held = die;
                self.pending = Pending::FluxBrushRoll;
            }
            Move::Hammer => {
                self.pay(p, Tool::GlazingHammer);
                for d in 0..DIE_KINDS {
                    self.reroll[cards::colour(d as u8)] += self.pool[d];
                    self.pool[d] = 0;
                }
                self.pending = Pending::HammerRoll;
            }
            Move::Pliers => {
                self.pay(p, Tool::RunningPliers);
                self.placed = false;
                self.skip[p] = true;
            }
            Move::Cork { die, cell } => {
                self.pay(p, Tool::CorkBackedStraightedge);
                self.draft(die);
                self.windows[p].put(cell as usize, die);
            }
            Move::Grinding { die, cell } => {
                self.pay(p, Tool::GrindingStone);
                self.draft(die);
                self.windows[p].put(cell as usize, flip(die));
            }
            Move::FluxRemover(die) => {
                self.pay(p, Tool::FluxRemover);
                self.draft(die);
                self.bag[cards::colour(die)] += 1;
                self.pending = Pending::FluxRemoverDraw;
            }
            Move::FluxValue(v) => {
                self.held = cards::die(cards::colour(self.held), v);
                self.place_held_or_return();
                return;
            }
            Move::TapStop => self.pending = Pending::None,
        }
        self.after_action();
    }

    pub(super) fn draft(&mut self, die: u8) {
        self.pool[die as usize] -= 1;
        self.placed = true;
    }

    /// Moves through setup and draw stages whose work is done.
    pub(super) fn settle(&mut self) {
        loop {
            let n = self.n;
            match self.stage {
                Stage::Fate if self.count == 4 => {
                    self.fate = splitmix64(self.fate);
                    self.fated = true;
                    self.next_stage(Stage::Tools);
                }
                Stage::Tools if !self.draw_tools || self.tools_n == 3 => {
                    self.tools[..self.tools_n as usize].sort_unstable();
                    self.next_stage(Stage::Objectives);
                }
                Stage::Objectives if !self.draw_objectives || self.objectives_n == 3 => {
                    self.next_stage(Stage::Privates)
                }
                Stage::Privates if self.count == n => self.next_stage(Stage::Offers),
                Stage::Offers if self.count == self.offers_needed() => self.next_stage(Stage::Choose),
                Stage::Choose if self.count == n => self.next_stage(Stage::Draw),
                Stage::Draw if self.count == 2 * n + 1 || self.bag.iter().all(|&b| b == 0) => {
                    self.next_stage(Stage::Play)
                }
                _ => break,
            }
        }
    }

    pub(super) fn next_stage(&mut self, stage: Stage) {
        self.stage = stage;
        self.count = 0;
    }

    pub(super) fn offers_needed(&self) -> u8 {
        match self.windows_mode {
            Windows::Cards => 2 * self.n,
            Windows::Random4 => 4 * self.n,
        }
    }

    pub(super) fn end_turn(&mut self) {
        let n = self.n;
        if self.round == ROUNDS - 1 {
            self.last_turn[self.seat()] = self.turn_index;
        }
        self.placed = false;
        self.tool_done = false;
        self.pending = Pending::None;
        self.turn_index += 1;
        while self.turn_index < 2 * n {
            let p = self.seat();
            if self.turn_index >= n && self.skip[p] {
                self.skip[p] = false;
                self.turn_index += 1;
            } else {
                return;
            }
        }
        // End of round: leftovers go to the round track.
        for d in 0..DIE_KINDS {
            self.track[d] += self.pool[d];
            self.pool[d] = 0;
        }
        self.skip = [false; MAX_PLAYERS];
        self.turn_index = 0;
        self.round += 1;
        if self.round == ROUNDS {
            self.next_stage(Stage::Over);
        } else {
            self.next_stage(Stage::Draw);
            self.settle();
        }
    }

    /// After a player's action: end the turn when nothing useful is left in it.
    pub(super) fn after_action(&mut self) {
        if self.pending == Pending::None
            && self.placed
            && (self.tool_done || !self.tool_possible_after_placing(self.seat()))
        {
            self.end_turn();
        }
    }

    /// Whether the held die can be placed; if not it goes back to the pool and the tool's effect
    /// ends there.
    pub(super) fn place_held_or_return(&mut self) {
        let p = self.seat();
        if self.windows[p].allowed(self.held, Rule::Normal) != 0 {
            self.pending = Pending::PlaceHeld;
        } else {
            self.pool[self.held as usize] += 1;
            self.held = NONE;
            self.pending = Pending::None;
            self.after_action();
        }
    }
}
