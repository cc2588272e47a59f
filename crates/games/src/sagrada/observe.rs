//! What a seat is shown: the web's view of the table and the network's observation.

use super::*;

impl SagradaState {
    pub(super) fn view_of(&self, viewer: Option<Player>) -> serde_json::Value {
        use serde_json::json;
        let n = self.players();
        let sees =
            |q: Player| viewer.is_some_and(|v| self.sees_private(v, q)) || (viewer.is_none() && self.deterministic);
        let dice = |counts: &[u8; DIE_KINDS]| -> Vec<String> {
            (0..DIE_KINDS as u8)
                .flat_map(|d| std::iter::repeat_n(cards::die_name(d), counts[d as usize] as usize))
                .collect()
        };
        let players: Vec<serde_json::Value> = (0..n)
            .map(|p| {
                let w = self.window(p);
                let r = w.restrictions();
                let restrictions: Vec<Option<String>> = (0..CELLS)
                    .map(|c| match r.of(c) {
                        Some(Ok(colour)) => Some(cards::COLOUR_LETTERS[colour].to_string()),
                        Some(Err(v)) => Some(v.to_string()),
                        None => None,
                    })
                    .collect();
                let placed: Vec<Option<String>> = (0..CELLS).map(|c| w.die_at(c).map(cards::die_name)).collect();
                let pattern = (w.pattern != NO_PATTERN).then(|| PATTERNS[w.pattern as usize].name);
                let offers: Option<Vec<serde_json::Value>> = (w.pattern == NO_PATTERN
                    && (sees(p) || viewer.is_some_and(|v| self.sees_offers(v, p))))
                .then(|| {
                    self.offers[p]
                        .iter()
                        .filter(|&&o| o != NONE)
                        .map(|&o| {
                            let pat = &PATTERNS[o as usize];
                            json!({ "name": pat.name, "tokens": pat.tokens, "rows": pat.rows })
                        })
                        .collect()
                });
                let private = if sees(p) { self.private_colour(p).map(|c| cards::COLOUR_NAMES[c]) } else { None };
                let score = (sees(p) || self.deterministic).then(|| self.score(p));
                json!({
                    "pattern": pattern, "restrictions": restrictions, "dice": placed, "tokens": self.tokens(p),
                    "private": private, "private_hidden": !sees(p) && self.private_colour(p).is_some(),
                    "score": score, "offers": offers,
                })
            })
            .collect();
        let tools: Vec<serde_json::Value> = self
            .tools()
            .iter()
            .enumerate()
            .map(|(k, &t)| {
                let t = t as usize;
                json!({ "key": cards::TOOL_KEYS[t], "name": cards::TOOL_NAMES[t], "text": cards::TOOL_TEXTS[t], "cost": self.tool_cost(k) })
            })
            .collect();
        let objectives: Vec<serde_json::Value> = self
            .objectives()
            .iter()
            .map(|&o| json!({ "name": cards::OBJECTIVE_NAMES[o as usize], "text": cards::OBJECTIVE_TEXTS[o as usize] }))
            .collect();
        let stage = match self.stage {
            Stage::Over => "over",
            Stage::Play | Stage::Draw => "play",
            Stage::Choose => "choose",
            _ => "setup",
        };
        json!({
            "stage": stage, "round": self.round() + 1, "pool": dice(self.pool()), "track": dice(self.track()),
            "held": (self.held != NONE).then(|| cards::die_name(self.held)), "bag": self.bag,
            "tools": tools, "objectives": objectives, "players": players,
            "drafted": self.has_drafted(), "tool_used": self.has_used_tool(),
        })
    }

    pub(super) fn observation_of(&self, player: Player, out: &mut Vec<f32>) {
        out.clear();
        let n = self.n as usize;
        for k in 0..n {
            let q = (player + k) % n;
            let w = &self.windows[q];
            for cell in 0..CELLS {
                let mut f = [0.0f32; 11];
                if let Some(d) = w.die_at(cell) {
                    f[cards::colour(d)] = 1.0;
                    f[5 + cards::value(d) as usize - 1] = 1.0;
                }
                out.extend_from_slice(&f);
            }
            let r = w.restrictions();
            for cell in 0..CELLS {
                let mut f = [0.0f32; 11];
                match r.of(cell) {
                    Some(Ok(c)) => f[c] = 1.0,
                    Some(Err(v)) => f[5 + v as usize - 1] = 1.0,
                    None => {}
                }
                out.extend_from_slice(&f);
            }
            out.push(self.tokens[q] as f32 / 6.0);
            let mut private = [0.0f32; COLOURS];
            if let Some(c) = self.private_colour(q).filter(|_| self.sees_private(player, q)) {
                private[c] = 1.0;
            }
            out.extend_from_slice(&private);
            self.standing(q, player, out);
        }
        // Counts scaled by what they can reach (observations stay in 0..=1): a pool holds at most
        // 2 x 4 + 1 dice, and no die code appears more often than its colour has dice.
        out.extend(self.pool.iter().map(|&c| c as f32 / 9.0));
        out.extend(self.track.iter().map(|&c| c as f32 / DICE_PER_COLOUR as f32));
        out.extend(self.bag.iter().map(|&c| c as f32 / DICE_PER_COLOUR as f32));
        let mut tools = [0.0f32; 24];
        for (k, &t) in self.tools().iter().enumerate() {
            tools[t as usize] = 1.0;
            tools[12 + t as usize] = self.tool_used[k] as u8 as f32;
        }
        out.extend_from_slice(&tools);
        let mut objectives = [0.0f32; 10];
        for &o in self.objectives() {
            objectives[o as usize] = 1.0;
        }
        out.extend_from_slice(&objectives);
        let one_hot = |out: &mut Vec<f32>, len: usize, i: usize| out.extend((0..len).map(|k| (k == i) as u8 as f32));
        one_hot(out, 10, self.round as usize);
        one_hot(out, 8, self.turn_index as usize);
        out.push(self.placed as u8 as f32);
        out.push(self.tool_done as u8 as f32);
        let pending = match self.pending {
            Pending::None => 0,
            Pending::PlaceHeld => 1,
            Pending::FluxBrushRoll => 2,
            Pending::FluxRemoverDraw => 3,
            Pending::FluxRemoverValue => 4,
            Pending::HammerRoll => 5,
            Pending::LathekinSecond(_) => 6,
            Pending::TapWheelSecond(..) => 7,
        };
        one_hot(out, 8, pending);
        one_hot(out, 30, self.held as usize);
        one_hot(out, 9, self.stage as usize);
        let mut offers = [0.0f32; 24];
        for &o in &self.offers[player] {
            if o != NONE {
                offers[o as usize] = 1.0;
            }
        }
        out.extend_from_slice(&offers);
    }
}
