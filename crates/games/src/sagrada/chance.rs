//! Chance in Sagrada: what the bag and the dice may give, fated draws, a drawn outcome applied,
//! and the worlds a seat cannot tell apart.

use super::*;

impl SagradaState {
    /// Chance outcomes with integer weights (held as `f64`, exact), in ascending outcome order;
    /// `chance_outcomes` normalises them in place, so listing outcomes allocates nothing.
    pub(super) fn chance_weights(&self, out: &mut Vec<(Action, f64)>) {
        out.clear();
        let mut unused = |count: usize, used: &dyn Fn(u8) -> bool| {
            for i in 0..count {
                if !used(i as u8) {
                    out.push((i as Action, 1.0));
                }
            }
        };
        match self.stage {
            Stage::Fate => unused(256, &|_| false),
            Stage::Tools => unused(TOOLS.len(), &|i| self.tools().contains(&i)),
            Stage::Objectives => unused(OBJECTIVES.len(), &|i| self.objectives().contains(&i)),
            Stage::Privates => unused(COLOURS, &|c| self.private[..self.n as usize].contains(&c)),
            Stage::Offers => {
                let dealt: Vec<u8> = self.offers[..self.n as usize].iter().flatten().copied().collect();
                match self.windows_mode {
                    Windows::Cards => unused(12, &|card| dealt.contains(&(2 * card))),
                    Windows::Random4 => unused(PATTERNS.len(), &|p| dealt.contains(&p)),
                }
            }
            Stage::Draw => {
                for d in 0..DIE_KINDS as u8 {
                    let w = self.bag[cards::colour(d)] as f64;
                    if w > 0.0 {
                        out.push((d as Action, w));
                    }
                }
            }
            Stage::Play => match self.pending {
                Pending::FluxBrushRoll => {
                    let c = cards::colour(self.held);
                    out.extend((1..=6).map(|v| (cards::die(c, v) as Action, 1.0)));
                }
                Pending::HammerRoll => {
                    if let Some(c) = (0..COLOURS).find(|&c| self.reroll[c] > 0) {
                        out.extend((1..=6).map(|v| (cards::die(c, v) as Action, 1.0)));
                    }
                }
                Pending::FluxRemoverDraw => {
                    out.extend((0..COLOURS).filter(|&c| self.bag[c] > 0).map(|c| (c as Action, self.bag[c] as f64)))
                }
                _ => {}
            },
            Stage::Choose | Stage::Over => {}
        }
        if self.fated && !out.is_empty() {
            let pick = self.fated_pick(out);
            out.clear();
            out.push((pick, 1.0));
        }
    }

    /// The outcome a fixed future gives at this chance node. Round draws are keyed by round and
    /// draw number, so the dice of later rounds do not shift when a tool card rolls dice.
    pub(super) fn fated_pick(&self, out: &[(Action, f64)]) -> Action {
        let (kind, a, b): (u64, u64, u64) = match self.stage {
            Stage::Draw => (1, self.round as u64, self.count as u64),
            Stage::Play => (2, self.events as u64, 0),
            _ => (3, self.stage as u64, self.count as u64),
        };
        let key = splitmix64(self.fate ^ splitmix64((kind << 56) ^ (a << 24) ^ b));
        let total: u64 = out.iter().map(|o| o.1 as u64).sum();
        // Weights are small whole numbers, so `as u64` is exact.
        let mut target = ((key as u128 * total as u128) >> 64) as u64;
        for &(action, w) in out {
            if target < w as u64 {
                return action;
            }
            target -= w as u64;
        }
        out.last().expect("outcomes").0
    }

    pub(super) fn apply_chance(&mut self, outcome: Action) {
        let o = outcome as u8;
        match self.stage {
            Stage::Fate => self.fate = (self.fate << 8) | o as u64,
            Stage::Tools => {
                self.tools[self.tools_n as usize] = o;
                self.tools_n += 1;
            }
            Stage::Objectives => {
                self.objectives[self.objectives_n as usize] = o;
                self.objectives_n += 1;
            }
            Stage::Privates => self.private[self.count as usize] = o,
            Stage::Offers => match self.windows_mode {
                Windows::Cards => {
                    let (p, k) = ((self.count / 2) as usize, (self.count % 2) as usize * 2);
                    self.offers[p][k] = 2 * o;
                    self.offers[p][k + 1] = 2 * o + 1;
                }
                Windows::Random4 => self.offers[(self.count / 4) as usize][(self.count % 4) as usize] = o,
            },
            Stage::Draw => {
                self.bag[cards::colour(o)] -= 1;
                self.pool[o as usize] += 1;
            }
            Stage::Play => {
                self.events = self.events.wrapping_add(1);
                match self.pending {
                    Pending::FluxBrushRoll => {
                        self.held = o;
                        self.place_held_or_return();
                    }
                    Pending::HammerRoll => {
                        self.reroll[cards::colour(o)] -= 1;
                        self.pool[o as usize] += 1;
                        if self.reroll.iter().all(|&r| r == 0) {
                            self.pending = Pending::None;
                        }
                    }
                    Pending::FluxRemoverDraw => {
                        self.bag[o as usize] -= 1;
                        self.held = cards::die(o as usize, 1);
                        self.pending = Pending::FluxRemoverValue;
                    }
                    _ => {}
                }
                return;
            }
            Stage::Choose | Stage::Over => return,
        }
        self.count += 1;
        self.settle();
    }

    /// `q`'s window standing as `viewer` may see it ([`SCORE_FEATURES`], each within 0..=1).
    pub(super) fn standing(&self, q: Player, viewer: Player, out: &mut Vec<f32>) {
        let w = &self.windows[q];
        if w.pattern == NO_PATTERN {
            out.extend_from_slice(&[0.0; SCORE_FEATURES]);
            return;
        }
        let scaled = |x: f64, full: f64| (x / full).clamp(0.0, 1.0) as f32;
        for c in 0..COLOURS {
            out.push(scaled(w.private_score(c) as f64, 30.0));
        }
        let e = eval::evaluate_board(self, q, &eval::OBSERVATION_POWERS);
        out.push(scaled(e.public_points as f64, 40.0));
        // The completable sum has no fixed ceiling: squashed.
        out.push((e.completable / (e.completable + 100.0)) as f32);
        out.push(scaled(e.uncompletable_points as f64, 40.0));
        out.push(scaled((CELLS as u32 - w.dice()) as f64, CELLS as f64));
        out.push(scaled(e.dead_spaces as f64, CELLS as f64));
        let private = if self.sees_private(viewer, q) { self.private_score(q) } else { 0 };
        out.push(scaled(private as f64, 30.0));
    }

    /// A world consistent with what `player` knows: hidden colours and offers resampled; with
    /// `fix_future` every later chance event fixed too (see [`State::determinize_open`]).
    pub(super) fn world(&self, player: Player, rng: &mut Rng, fix_future: bool) -> Self {
        let mut world = self.clone();
        if self.deterministic {
            return world;
        }
        let n = self.n as usize;
        // Opponents' private colours: any assignment of the colours the observer has not seen.
        let hidden: Vec<Player> =
            (0..n).filter(|&q| !self.sees_private(player, q) && self.private[q] != NONE).collect();
        let mut free: Vec<u8> = (0..COLOURS as u8)
            .filter(|c| !(0..n).any(|q| self.sees_private(player, q) && self.private[q] == *c))
            .collect();
        for &q in &hidden {
            let i = rng.random_range(0..free.len());
            world.private[q] = free.swap_remove(i);
        }
        // Opponents' unchosen offers at setup: redeal from what the observer has not seen.
        if matches!(self.stage, Stage::Offers | Stage::Choose) {
            let chosen = |q: Player| self.windows[q].pattern;
            let unit = |pattern: u8| if self.windows_mode == Windows::Cards { pattern / 2 } else { pattern };
            let mut seen: Vec<u8> = self.offers[player].iter().filter(|&&o| o != NONE).map(|&o| unit(o)).collect();
            seen.extend((0..n).filter(|&q| chosen(q) != NO_PATTERN).map(|q| unit(chosen(q))));
            let units = if self.windows_mode == Windows::Cards { 12 } else { PATTERNS.len() as u8 };
            let mut free: Vec<u8> = (0..units).filter(|u| !seen.contains(u)).collect();
            for q in (0..n).filter(|&q| !self.sees_offers(player, q)) {
                let step = if self.windows_mode == Windows::Cards { 2 } else { 1 };
                for k in (0..4).step_by(step) {
                    let o = self.offers[q][k];
                    if o == NONE || (chosen(q) != NO_PATTERN && unit(o) == unit(chosen(q))) {
                        continue;
                    }
                    let u = free.swap_remove(rng.random_range(0..free.len()));
                    if self.windows_mode == Windows::Cards {
                        world.offers[q][k] = 2 * u;
                        world.offers[q][k + 1] = 2 * u + 1;
                    } else {
                        world.offers[q][k] = u;
                    }
                }
            }
        }
        if fix_future {
            world.fate = rng.random::<u64>();
            world.fated = true;
        }
        world
    }
}
