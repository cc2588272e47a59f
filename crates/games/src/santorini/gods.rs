//! Santorini with god powers: the base box's ten simple gods.
//!
//! With a god in play a turn is a short sequence of steps, each one decision of the player to
//! move: a move (`c3-d4`), a build (`d4+e5`), Atlas's dome (`d4+e5^`), or `end` to decline an
//! optional second build. Optional powers are steps one may take or not (Artemis's second move,
//! Prometheus's build before moving, Demeter's and Hephaestus's second build, Hermes's further
//! moves); forced effects happen inside a step (Apollo's swap, Minotaur's push, Pan's drop win,
//! Athena's block on the next turn). A step is legal only if the turn can still be finished
//! after it, so every turn a player starts ends, and a player with no turn to take loses.
//!
//! Hermes's power ("any number of times") is played as where the moves lead: a worker's move
//! under it goes to any cell its level-walk can reach, then the other worker's to any cell the
//! two walks together allow, then a build by either. The end positions are exactly those of any
//! sequence of level moves, and a turn has at most three steps.
//!
//! Step ids follow the base game's (placements `0..25` are shared): moves `169..219` (worker
//! index × 25 + destination), builds `219..269` (builder × 25 + cell), domes `269..319`, and
//! `end` 319. Worker indexes are the mover's two workers in ascending cell order, as in the
//! base game.

use super::{
    ALL, CELLS, DIRECTION, NEIGHBOUR, NEIGHBOURS, NO_WINNER, NUM_ACTIONS, SantoriniState, UNPLACED, map_cell,
    notation::cell_name,
};
use meeple_game::{Action, Error, Player};

mod words;

/// The ten gods, in the order of their ids (1-10; 0 is no power).
pub const GODS: [&str; 10] =
    ["apollo", "artemis", "athena", "atlas", "demeter", "hephaestus", "hermes", "minotaur", "pan", "prometheus"];

/// Each god's power in words, as the card has it.
pub const POWERS: [&str; 10] = [
    "Your worker may move into an opponent worker's space by forcing their worker to the space yours just vacated.",
    "Your worker may move one additional time, but not back to the space it started on.",
    "If one of your workers moved up on your last turn, opponent workers cannot move up this turn.",
    "Your worker may build a dome at any level.",
    "Your worker may build one additional time, but not on the same space.",
    "Your worker may build one additional block (not a dome) on top of your first block.",
    "If your workers do not move up or down, they may each move any number of times (even zero), and then either builds.",
    "Your worker may move into an opponent worker's space if the next space in the same direction is unoccupied; their worker is forced into that space (at any level).",
    "You also win if your worker moves down two or more levels.",
    "If your worker does not move up, it may build both before and after moving.",
];

pub(crate) const NONE: u8 = 0;
pub(crate) const APOLLO: u8 = 1;
pub(crate) const ARTEMIS: u8 = 2;
pub(crate) const ATHENA: u8 = 3;
pub(crate) const ATLAS: u8 = 4;
pub(crate) const DEMETER: u8 = 5;
pub(crate) const HEPHAESTUS: u8 = 6;
pub(crate) const HERMES: u8 = 7;
pub(crate) const MINOTAUR: u8 = 8;
pub(crate) const PAN: u8 = 9;
pub(crate) const PROMETHEUS: u8 = 10;

pub(crate) const STEP_MOVE: Action = 169;
pub(crate) const STEP_BUILD: Action = STEP_MOVE + 50;
pub(crate) const STEP_DOME: Action = STEP_BUILD + 50;
pub(crate) const STEP_END: Action = STEP_DOME + 50;
/// The action space of a game with gods.
pub(crate) const GOD_ACTIONS: usize = STEP_END as usize + 1;
/// Chance outcomes of a random pairing: `first × 10 + second` (god ids less one), gods distinct.
pub(crate) const PAIRINGS: usize = 100;

/// Mid-turn flags.
pub(crate) const MOVED_UP: u8 = 1;
/// Prometheus built before moving.
pub(crate) const PREBUILT: u8 = 2;
/// Hermes is using his power (level moves, then either worker builds).
pub(crate) const HERMES_TURN: u8 = 4;
/// Athena moved up on her last turn: the player to move may not move up.
pub(crate) const ATHENA_BLOCK: u8 = 8;

/// Where a turn with gods stands. All `UNPLACED`/zero between turns except Athena's block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Steps {
    /// The cell of the worker acting this turn (`UNPLACED` before the first step).
    pub active: u8,
    /// The cell the acting worker started the turn on (Artemis may not return to it).
    pub origin: u8,
    /// The cell of this turn's first build after moving (`UNPLACED` before it).
    pub built: u8,
    /// Moves made this turn.
    pub moves: u8,
    pub flags: u8,
}

impl Steps {
    pub(crate) const START: Steps = Steps { active: UNPLACED, origin: UNPLACED, built: UNPLACED, moves: 0, flags: 0 };
}

/// A god by name (or `none`), for specs.
pub(crate) fn parse_god(name: &str) -> Option<u8> {
    if name == "none" {
        return Some(NONE);
    }
    GODS.iter().position(|&g| g == name).map(|i| i as u8 + 1)
}

pub(crate) fn god_name(god: u8) -> &'static str {
    if god == NONE { "none" } else { GODS[god as usize - 1] }
}

fn title(god: u8) -> String {
    let n = god_name(god);
    n[..1].to_ascii_uppercase() + &n[1..]
}

/// A fixed-capacity list of step ids: no allocation in the move generator.
pub(crate) struct StepList {
    ids: [Action; 64],
    len: usize,
}

impl StepList {
    pub(crate) fn new() -> Self {
        StepList { ids: [0; 64], len: 0 }
    }
    fn push(&mut self, a: Action) {
        self.ids[self.len] = a;
        self.len += 1;
    }
    pub(crate) fn as_slice(&self) -> &[Action] {
        &self.ids[..self.len]
    }
}

/// What a step id does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    Move { worker: usize, to: usize },
    Build { worker: usize, cell: usize },
    Dome { worker: usize, cell: usize },
    End,
}

pub(crate) fn decode_step(action: Action) -> Option<Step> {
    let x = action.checked_sub(STEP_MOVE)? as usize;
    Some(match x / 50 {
        0 => Step::Move { worker: x / 25, to: x % 25 },
        1 => Step::Build { worker: x % 50 / 25, cell: x % 25 },
        2 => Step::Dome { worker: x % 50 / 25, cell: x % 25 },
        3 if x == 150 => Step::End,
        _ => return None,
    })
}

pub(crate) fn encode_step(step: Step) -> Action {
    match step {
        Step::Move { worker, to } => STEP_MOVE + (worker * 25 + to) as Action,
        Step::Build { worker, cell } => STEP_BUILD + (worker * 25 + cell) as Action,
        Step::Dome { worker, cell } => STEP_DOME + (worker * 25 + cell) as Action,
        Step::End => STEP_END,
    }
}

fn bits(mut m: u32) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (m != 0).then(|| {
            let c = m.trailing_zeros() as usize;
            m &= m - 1;
            c
        })
    })
}

impl SantoriniState {
    /// Blocks under `cell` (0-3), a dome not counted.
    #[inline]
    pub(crate) fn blocks(&self, cell: usize) -> u8 {
        ((self.level[0] >> cell & 1) + (self.level[1] >> cell & 1) + (self.level[2] >> cell & 1)) as u8
    }

    /// Cells of height at most `h` (domes aside).
    fn at_most(&self, h: u8) -> u32 {
        match h {
            0 => !self.level[0] & ALL,
            1 => !self.level[1] & ALL,
            2 => !self.level[2] & ALL,
            _ => ALL,
        }
    }

    fn at_exactly(&self, h: u8) -> u32 {
        self.at_most(h) & !if h == 0 { 0 } else { self.at_most(h - 1) }
    }

    fn worker_index(&self, p: usize, cell: u8) -> usize {
        if self.workers[p][0] == cell { 0 } else { 1 }
    }

    /// Where the worker of `p` on `from` may move as the first (or Artemis's second) move.
    fn move_targets(&self, p: usize, from: usize, no_up: bool) -> u32 {
        let h = self.blocks(from);
        let mut t = NEIGHBOURS[from] & !self.dome & self.climbable(h) & !self.worker_bits[p];
        if no_up {
            t &= self.at_most(h);
        }
        let opp = self.worker_bits[1 - p];
        let theirs = t & opp;
        t &= !opp;
        match self.gods[p] {
            APOLLO => t |= theirs,
            MINOTAUR => {
                for c in bits(theirs) {
                    let beyond = NEIGHBOUR[c][DIRECTION[from][c] as usize];
                    if beyond != UNPLACED && (self.dome | self.occupied()) >> beyond & 1 == 0 {
                        t |= 1 << c;
                    }
                }
            }
            _ => {}
        }
        t
    }

    /// Cells next to `cell` a block may go on now.
    fn build_targets(&self, cell: usize) -> u32 {
        let mut t = NEIGHBOURS[cell] & !self.dome & !self.occupied();
        if self.official {
            for c in bits(t) {
                if !self.supply_allows(c) {
                    t &= !(1 << c);
                }
            }
        }
        t
    }

    /// Cells next to `cell` Atlas may dome below level 3 (a build on level 3 is a dome anyway).
    fn dome_targets(&self, cell: usize) -> u32 {
        if self.official && self.dome.count_ones() >= super::SUPPLY[3] {
            return 0;
        }
        NEIGHBOURS[cell] & !self.dome & !self.occupied() & !self.level[2]
    }

    /// Every step that the rules allow now, whether or not the turn can be finished after it.
    fn pseudo_steps(&self, out: &mut StepList) {
        let p = self.to_move as usize;
        let god = self.gods[p];
        let t = self.steps;
        let no_up = t.flags & ATHENA_BLOCK != 0;
        let cells = self.workers[p];
        if t.moves == 0 && t.flags & PREBUILT == 0 {
            for (w, &from) in cells.iter().enumerate() {
                let mut targets = self.move_targets(p, from as usize, no_up);
                if god == HERMES {
                    let reach = self.hermes_reach(p, from as usize, cells[1 - w] as usize);
                    // Not onto the other worker's cell: an end position with the first worker
                    // there is reached by walking the other one first.
                    targets |= (0..CELLS).filter(|&x| reach[x] != 0).fold(0, |m, x| m | 1 << x) & !self.occupied();
                }
                for to in bits(targets) {
                    out.push(encode_step(Step::Move { worker: w, to }));
                }
            }
            if god == PROMETHEUS {
                for (w, &from) in cells.iter().enumerate() {
                    for cell in bits(self.build_targets(from as usize)) {
                        out.push(encode_step(Step::Build { worker: w, cell }));
                    }
                }
            } else if god == HERMES {
                self.either_builds(p, out);
            }
        } else if t.moves == 0 {
            // Prometheus built first: the same worker moves, and not up.
            let w = self.worker_index(p, t.active);
            let from = t.active as usize;
            for to in bits(self.move_targets(p, from, true)) {
                out.push(encode_step(Step::Move { worker: w, to }));
            }
        } else if t.built == UNPLACED {
            if t.flags & HERMES_TURN != 0 {
                let mut stay = true;
                if t.moves == 1 {
                    // The other worker goes wherever the two walks together allow; if the first
                    // walked past it, it must (the first's walk alone could not end there).
                    let w = 1 - self.worker_index(p, t.active);
                    let other = cells[w] as usize;
                    let reach = self.hermes_reach(p, t.origin as usize, other)[t.active as usize];
                    stay = reach >> other & 1 != 0;
                    for to in bits(reach & !(1 << other)) {
                        out.push(encode_step(Step::Move { worker: w, to }));
                    }
                }
                if stay {
                    self.either_builds(p, out);
                }
            } else {
                let w = self.worker_index(p, t.active);
                let at = t.active as usize;
                if god == ARTEMIS && t.moves == 1 {
                    for to in bits(self.move_targets(p, at, no_up) & !(1 << t.origin)) {
                        out.push(encode_step(Step::Move { worker: w, to }));
                    }
                }
                for cell in bits(self.build_targets(at)) {
                    out.push(encode_step(Step::Build { worker: w, cell }));
                }
                if god == ATLAS {
                    for cell in bits(self.dome_targets(at)) {
                        out.push(encode_step(Step::Dome { worker: w, cell }));
                    }
                }
            }
        } else {
            let w = self.worker_index(p, t.active);
            for cell in bits(self.second_builds()) {
                out.push(encode_step(Step::Build { worker: w, cell }));
            }
            out.push(STEP_END);
        }
    }

    /// Under Hermes's power, with the mover's workers starting on `a` and `b`: for each cell the
    /// first can end on, the cells the second can end on, by any sequence of moves of either
    /// onto neighbouring free cells of its own level.
    fn hermes_reach(&self, p: usize, a: usize, b: usize) -> [u32; CELLS] {
        // Listing a turn's steps asks the same question once per candidate step (is the turn
        // finishable after it?): the last answer is kept, keyed by all it depends on.
        type Key = (u8, u8, u32, u32, [u32; 3]);
        thread_local! {
            static LAST: std::cell::Cell<Option<(Key, [u32; CELLS])>> = const { std::cell::Cell::new(None) };
        }
        // One walk answers both orders: the pair is kept lower cell first and turned round when
        // asked the other way.
        let (lo, hi) = (a.min(b), a.max(b));
        let key: Key = (lo as u8, hi as u8, self.dome, self.worker_bits[1 - p], self.level);
        let reach = match LAST.get() {
            Some((k, reach)) if k == key => reach,
            _ => {
                let reach = self.hermes_walks(p, lo, hi);
                LAST.set(Some((key, reach)));
                reach
            }
        };
        if a == lo {
            return reach;
        }
        let mut turned = [0u32; CELLS];
        for (x, &row) in reach.iter().enumerate() {
            for y in bits(row) {
                turned[y] |= 1 << x;
            }
        }
        turned
    }

    fn hermes_walks(&self, p: usize, a: usize, b: usize) -> [u32; CELLS] {
        let free = !self.dome & !self.worker_bits[1 - p] & ALL;
        let (la, lb) = (free & self.at_exactly(self.blocks(a)), free & self.at_exactly(self.blocks(b)));
        // Workers that cannot meet (other levels, or parts of the level apart) walk alone: every
        // cell of one's region goes with every cell of the other's.
        let flood = |start: usize, passable: u32| {
            let mut m = 1u32 << start;
            loop {
                let grown = (bits(m).fold(m, |g, c| g | NEIGHBOURS[c]) & passable) | m;
                if grown == m {
                    return m;
                }
                m = grown;
            }
        };
        let region_a = flood(a, la);
        if region_a >> b & 1 == 0 {
            let region_b = flood(b, lb & !region_a);
            let mut reach = [0u32; CELLS];
            for x in bits(region_a) {
                reach[x] = region_b;
            }
            return reach;
        }
        let mut seen = [0u32; CELLS];
        let mut stack = [(0u8, 0u8); CELLS * CELLS];
        let mut n = 1;
        stack[0] = (a as u8, b as u8);
        seen[a] |= 1 << b;
        while n > 0 {
            n -= 1;
            let (x, y) = (stack[n].0 as usize, stack[n].1 as usize);
            for x2 in bits(NEIGHBOURS[x] & la & !(1 << y)) {
                if seen[x2] >> y & 1 == 0 {
                    seen[x2] |= 1 << y;
                    stack[n] = (x2 as u8, y as u8);
                    n += 1;
                }
            }
            for y2 in bits(NEIGHBOURS[y] & lb & !(1 << x)) {
                if seen[x] >> y2 & 1 == 0 {
                    seen[x] |= 1 << y2;
                    stack[n] = (x as u8, y2 as u8);
                    n += 1;
                }
            }
        }
        seen
    }

    /// Hermes builds with either worker: each cell once, by the first worker next to it (which
    /// one builds changes nothing).
    fn either_builds(&self, p: usize, out: &mut StepList) {
        let a = self.build_targets(self.workers[p][0] as usize);
        let b = self.build_targets(self.workers[p][1] as usize) & !a;
        for cell in bits(a) {
            out.push(encode_step(Step::Build { worker: 0, cell }));
        }
        for cell in bits(b) {
            out.push(encode_step(Step::Build { worker: 1, cell }));
        }
    }

    /// Demeter's or Hephaestus's second build, after the first.
    fn second_builds(&self) -> u32 {
        let t = self.steps;
        let built = t.built as usize;
        match self.gods[self.to_move as usize] {
            DEMETER => self.build_targets(t.active as usize) & !(1 << built),
            HEPHAESTUS if self.dome >> built & 1 == 0 && self.blocks(built) < 3 && self.supply_allows(built) => {
                1 << built
            }
            _ => 0,
        }
    }

    fn add_block(&mut self, cell: usize) {
        let h = self.blocks(cell) as usize;
        if h == 3 {
            self.dome |= 1 << cell;
        } else {
            self.level[h] |= 1 << cell;
        }
    }

    fn shift_worker(&mut self, p: usize, from: usize, to: usize) {
        let w = self.worker_index(p, from as u8);
        self.workers[p][w] = to as u8;
        self.workers[p].sort_unstable();
        self.worker_bits[p] ^= (1 << from) | (1 << to);
    }

    /// Applies a step without the loss test of the next player's turn.
    fn apply_step_raw(&mut self, action: Action) {
        let p = self.to_move as usize;
        let god = self.gods[p];
        let Some(step) = decode_step(action) else { return };
        match step {
            Step::Move { worker, to } => {
                let from = self.workers[p][worker] as usize;
                let (hf, ht) = (self.blocks(from), self.blocks(to));
                if self.worker_bits[1 - p] >> to & 1 != 0 {
                    // Apollo's swap or Minotaur's push: the opponent's worker is forced first.
                    let pushed_to =
                        if god == APOLLO { from } else { NEIGHBOUR[to][DIRECTION[from][to] as usize] as usize };
                    let v = self.worker_index(1 - p, to as u8);
                    self.workers[1 - p][v] = pushed_to as u8;
                    self.workers[1 - p].sort_unstable();
                    self.worker_bits[1 - p] ^= (1 << to) | (1 << pushed_to);
                }
                self.shift_worker(p, from, to);
                let s = &mut self.steps;
                if s.moves == 0 {
                    s.origin = from as u8;
                    if god == HERMES && s.flags & PREBUILT == 0 && hf == ht {
                        s.flags |= HERMES_TURN;
                    }
                }
                s.moves += 1;
                // Under Hermes's power the first worker stays the acting one: the second's
                // targets are read from it and its start.
                if s.flags & HERMES_TURN == 0 || s.moves == 1 {
                    s.active = to as u8;
                }
                if ht > hf {
                    s.flags |= MOVED_UP;
                }
                if (hf < 3 && ht == 3) || (god == PAN && hf >= ht + 2) {
                    self.winner = p as u8;
                }
            }
            Step::Build { worker, cell } => {
                let builder = self.workers[p][worker];
                self.add_block(cell);
                self.after_build(builder, cell);
            }
            Step::Dome { worker, cell } => {
                let builder = self.workers[p][worker];
                self.dome |= 1 << cell;
                self.after_build(builder, cell);
            }
            Step::End => self.end_turn(),
        }
    }

    fn after_build(&mut self, builder: u8, cell: usize) {
        let god = self.gods[self.to_move as usize];
        let s = &mut self.steps;
        if s.moves == 0 && god == PROMETHEUS {
            s.flags |= PREBUILT;
            s.active = builder;
            s.origin = builder;
        } else if s.moves > 0 && s.built == UNPLACED && matches!(god, DEMETER | HEPHAESTUS) {
            s.built = cell as u8;
            if self.second_builds() == 0 {
                self.end_turn();
            }
        } else {
            self.end_turn();
        }
    }

    fn end_turn(&mut self) {
        let p = self.to_move as usize;
        let block = self.gods[p] == ATHENA && self.steps.flags & MOVED_UP != 0;
        self.steps = Steps::START;
        if block {
            self.steps.flags = ATHENA_BLOCK;
        }
        self.to_move = 1 - p as u8;
    }

    /// Whether the step, taken now, leaves a turn that can be finished.
    fn step_completes(&self, action: Action) -> bool {
        // Most steps are known to leave a finishable turn without playing it out: `end` ends
        // it, a build after moving ends it or leaves `end`, and a move leaves its worker the
        // vacated cell to build on, except where that cell is taken (Apollo's swap), the
        // worker walked away from it (Hermes), or the supply may lack the block.
        let p = self.to_move as usize;
        let god = self.gods[p];
        let t = self.steps;
        if !self.official {
            match decode_step(action) {
                Some(Step::End) => return true,
                Some(Step::Build { .. } | Step::Dome { .. }) if t.moves > 0 || god != PROMETHEUS => return true,
                Some(Step::Move { to, .. })
                    if god != HERMES && (god != APOLLO || self.worker_bits[1 - p] >> to & 1 == 0) =>
                {
                    return true;
                }
                _ => {}
            }
        }
        let mut next = *self;
        next.apply_step_raw(action);
        next.winner != NO_WINNER || next.to_move != self.to_move || next.can_finish_turn()
    }

    /// Whether some sequence of steps finishes the turn begun (or about to begin).
    pub(crate) fn can_finish_turn(&self) -> bool {
        let mut list = StepList::new();
        self.pseudo_steps(&mut list);
        // Builds and `end` finish a turn most often: try them first.
        list.as_slice().iter().rev().any(|&a| self.step_completes(a))
    }

    pub(crate) fn step_legal_actions(&self, out: &mut Vec<Action>) {
        let mut list = StepList::new();
        self.pseudo_steps(&mut list);
        out.extend(list.as_slice().iter().copied().filter(|&a| self.step_completes(a)));
    }

    pub(crate) fn step_is_legal(&self, action: Action) -> bool {
        let mut list = StepList::new();
        self.pseudo_steps(&mut list);
        list.as_slice().contains(&action) && self.step_completes(action)
    }

    pub(crate) fn apply_step(&mut self, action: Action) {
        let p = self.to_move;
        self.apply_step_raw(action);
        if self.winner == NO_WINNER && self.to_move != p && !self.can_finish_turn() {
            self.winner = p;
        }
    }

    /// The gods of the two players, first player first (`none` in the base game).
    pub fn gods(&self) -> [&'static str; 2] {
        self.gods.map(god_name)
    }

    /// Whether turns are played in steps (a game with gods: `none+none` is refused, so some
    /// player has a god once the draw is made).
    #[inline]
    pub fn stepped(&self) -> bool {
        self.drawing || self.gods != [NONE; 2]
    }

    /// The gods and the turn's progress, for the web page.
    pub(crate) fn gods_view(&self) -> serde_json::Value {
        let t = self.steps;
        let cell = |c: u8| (c != UNPLACED).then_some(c as usize);
        serde_json::json!({
            "gods": self.gods.map(|g| (g != NONE).then(|| serde_json::json!({
                "name": title(g), "power": POWERS[g as usize - 1],
            }))),
            "active": cell(t.active),
            "built": cell(t.built),
            "athena_block": t.flags & ATHENA_BLOCK != 0,
            "hermes": t.flags & HERMES_TURN != 0,
            "prebuilt": t.flags & PREBUILT != 0,
        })
    }
}

/// A drawn pairing in notation: `apollo+pan`.
pub(crate) fn pairing_to_string(k: Action) -> String {
    if k as usize >= PAIRINGS {
        return format!("#{k}");
    }
    format!("{}+{}", GODS[k as usize / 10], GODS[k as usize % 10])
}

pub(crate) fn parse_pairing(text: &str) -> Result<Action, Error> {
    let bad = || Error::BadNotation {
        text: text.to_string(),
        reason: "the draw is two different gods joined by + (apollo+pan)".into(),
    };
    let (a, b) = text
        .trim()
        .to_ascii_lowercase()
        .split_once('+')
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .ok_or_else(bad)?;
    match (parse_god(&a), parse_god(&b)) {
        (Some(x), Some(y)) if x != NONE && y != NONE => Ok((x as Action - 1) * 10 + y as Action - 1),
        _ => Err(bad()),
    }
}

impl SantoriniState {
    /// The observation's god and turn planes (after the base game's 8).
    pub(crate) fn gods_observation(&self, player: Player, out: &mut Vec<f32>) {
        let plane = |out: &mut Vec<f32>, bits: u32| out.extend((0..CELLS).map(|c| (bits >> c & 1) as f32));
        let full = |on: bool| if on { ALL } else { 0 };
        for side in [player, 1 - player] {
            for g in 1..=10 {
                plane(out, full(self.gods[side] == g));
            }
        }
        let t = self.steps;
        let cell = |c: u8| if c == UNPLACED { 0 } else { 1u32 << c };
        plane(out, cell(t.active));
        plane(out, cell(t.origin));
        plane(out, cell(t.built));
        plane(out, full(t.moves > 0));
        plane(out, full(t.flags & MOVED_UP != 0));
        plane(out, full(t.flags & PREBUILT != 0));
        plane(out, full(t.flags & HERMES_TURN != 0));
        plane(out, full(t.flags & ATHENA_BLOCK != 0));
    }

    /// A step under board symmetry `k` (see [`SantoriniState::symmetric`]).
    pub(crate) fn symmetric_step(&self, action: Action, k: usize) -> Action {
        let p = self.mover();
        let image = |w: usize| {
            let mut cells =
                self.workers[p].map(|c| if c == UNPLACED { UNPLACED } else { map_cell(k, c as usize) as u8 });
            cells.sort_unstable();
            let moved = map_cell(k, self.workers[p][w] as usize) as u8;
            cells.iter().position(|&c| c == moved).unwrap_or(w)
        };
        match decode_step(action) {
            Some(Step::Move { worker, to }) => encode_step(Step::Move { worker: image(worker), to: map_cell(k, to) }),
            Some(Step::Build { worker, cell }) => {
                let t = self.steps;
                let worker = if self.gods[p] == HERMES && (t.moves == 0 || t.flags & HERMES_TURN != 0) {
                    // Hermes's builds name the first worker next to the cell: so must the image's.
                    let s = self.symmetric(k);
                    let c = map_cell(k, cell);
                    if s.build_targets(s.workers[p][0] as usize) >> c & 1 != 0 { 0 } else { 1 }
                } else {
                    image(worker)
                };
                encode_step(Step::Build { worker, cell: map_cell(k, cell) })
            }
            Some(Step::Dome { worker, cell }) => {
                encode_step(Step::Dome { worker: image(worker), cell: map_cell(k, cell) })
            }
            Some(Step::End) | None => action,
        }
    }
}

impl SantoriniState {
    /// Whether the player to move can win within the turn under way: a move up onto level 3,
    /// Pan's drop, or Artemis's second move, with Athena's block and the forced moves applied.
    pub(crate) fn wins_this_turn(&self) -> bool {
        if !self.stepped() || self.placed < 4 || self.winner != NO_WINNER || self.steps.built != UNPLACED {
            return false;
        }
        if !self.may_win(self.to_move as usize) {
            return false;
        }
        let mut list = StepList::new();
        self.pseudo_steps(&mut list);
        list.as_slice().iter().any(|&a| {
            matches!(decode_step(a), Some(Step::Move { .. })) && {
                let mut next = *self;
                next.apply_step_raw(a);
                next.winner == self.to_move
                    || (next.to_move == self.to_move
                        && self.gods[self.to_move as usize] == ARTEMIS
                        && next.steps.moves == 1
                        && next.wins_this_turn())
            }
        })
    }

    /// How many winning first moves (and Artemis's second moves) `side` would have if its turn
    /// began on this board, under Athena's block where this turn sets it.
    pub(crate) fn threats(&self, side: usize) -> u32 {
        if !self.stepped() || self.placed < 4 || self.winner != NO_WINNER || !self.may_win(side) {
            return 0;
        }
        let mut next = *self;
        let mover = self.to_move as usize;
        next.to_move = side as u8;
        next.steps = Steps::START;
        let blocked = if side == mover {
            self.steps.flags & ATHENA_BLOCK != 0 && self.steps.moves == 0
        } else {
            self.gods[mover] == ATHENA && self.steps.flags & MOVED_UP != 0
        };
        if blocked {
            next.steps.flags = ATHENA_BLOCK;
        }
        let mut list = StepList::new();
        next.pseudo_steps(&mut list);
        list.as_slice()
            .iter()
            .filter(|&&a| {
                matches!(decode_step(a), Some(Step::Move { .. })) && {
                    let mut after = next;
                    after.apply_step_raw(a);
                    after.winner == side as u8 || (next.gods[side] == ARTEMIS && after.wins_this_turn())
                }
            })
            .count() as u32
    }

    /// A cheap necessary condition for `side` to win in one turn: a worker on level 2 beside a
    /// level-3 cell (Artemis: on level 1 or 2 within two steps of one), or Pan on level 2 or 3
    /// beside a cell two levels lower.
    fn may_win(&self, side: usize) -> bool {
        let towers = self.level[2] & !self.dome;
        let god = self.gods[side];
        self.workers[side].iter().any(|&c| {
            if c == UNPLACED {
                return false;
            }
            let c = c as usize;
            let h = self.blocks(c);
            let near = NEIGHBOURS[c];
            let climb = match god {
                ARTEMIS if h >= 1 => bits(near).fold(near, |m, n| m | NEIGHBOURS[n]) & towers != 0,
                _ => h == 2 && near & towers != 0,
            };
            climb || (god == PAN && h >= 2 && near & !self.dome & self.at_most(h - 2) != 0)
        })
    }

    /// Move ordering for steps: wins first, then climbing (the mover's squared heights after a
    /// move, as in the base game); builds that dome or leave a level-3 tower beside an opponent
    /// worker on level 2 are tried late, domes on such towers early.
    pub(crate) fn step_priority(&self, action: Action) -> i32 {
        let p = self.to_move as usize;
        let opp2 = self.workers[1 - p]
            .iter()
            .filter(|&&c| c != UNPLACED && self.blocks(c as usize) == 2)
            .fold(0u32, |m, &c| m | NEIGHBOURS[c as usize]);
        match decode_step(action) {
            Some(Step::Move { worker, to }) => {
                let mut next = *self;
                next.apply_step_raw(action);
                if next.winner == p as u8 {
                    return 1000;
                }
                let other = self.workers[p][1 - worker] as usize;
                let (h, o) = (self.blocks(to) as i32, self.blocks(other) as i32);
                h * h + o * o
            }
            Some(Step::Build { cell, .. }) => {
                let h = self.blocks(cell);
                if h == 2 && opp2 >> cell & 1 != 0 {
                    -10
                } else if h == 3 && opp2 >> cell & 1 != 0 {
                    20
                } else {
                    0
                }
            }
            Some(Step::Dome { cell, .. }) => {
                if self.blocks(cell) == 2 && opp2 >> cell & 1 != 0 {
                    5
                } else {
                    -5
                }
            }
            Some(Step::End) | None => 0,
        }
    }
}
