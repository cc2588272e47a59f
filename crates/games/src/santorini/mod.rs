//! Santorini on 25-bit bitboards: the base game, and with the base box's ten simple gods.
//!
//! Cells are numbered `row * 5 + col` with row 0 the first rank (`a1` is cell 0, `e5` cell 24).
//! Heights are kept as cumulative planes (`height >= 1`, `>= 2`, `>= 3`) plus a dome plane, so
//! climb limits are mask tests and the number of blocks used is a popcount (the official supply
//! needs no extra state). A dome is its own plane over the blocks beneath it, so Atlas's dome on
//! a low level keeps the block count honest.
//!
//! The base game plays a turn (move and build) as one action; with gods a turn is a few steps
//! (see [`gods`]), and the base game's ids and speed are untouched.

mod eval;
pub mod gods;
#[cfg(test)]
mod gods_tests;
mod notation;
mod symmetry;
pub use symmetry::map_cell;
#[cfg(test)]
mod tests;

pub use eval::{GreedyAgent, Linear, Linear8, Linear22, Tempo16};
use gods::{GOD_ACTIONS, PAIRINGS, Steps};
pub use gods::{GODS, POWERS};

use meeple_game::{
    Action, AgentInfo, BoxedAgent, BoxedEvaluator, Error, Game, GameInfo, ParamInfo, Player, RulesSection, Spec, State,
    Turn, Values,
};
use std::fmt;

/// Cells on the board.
pub const CELLS: usize = 25;
const ALL: u32 = (1 << CELLS) - 1;
/// Action ids: placements `0..25`, move-and-build `25..153`, winning moves `153..169`.
const TURN_BASE: u32 = 25;
const WIN_BASE: u32 = TURN_BASE + 128;
pub(crate) const NUM_ACTIONS: usize = WIN_BASE as usize + 16;
const UNPLACED: u8 = 25;
const NO_WINNER: u8 = 2;
/// Official supply: level-1, level-2 and level-3 blocks, then domes.
const SUPPLY: [u32; 4] = [22, 18, 14, 18];

/// The eight directions as (row, column) steps, in action-id order.
const DIRS: [(i8, i8); 8] = [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)];

const fn neighbour_table() -> [[u8; 8]; CELLS] {
    let mut t = [[UNPLACED; 8]; CELLS];
    let mut c = 0;
    while c < CELLS {
        let (r, col) = ((c / 5) as i8, (c % 5) as i8);
        let mut d = 0;
        while d < 8 {
            let (rr, cc) = (r + DIRS[d].0, col + DIRS[d].1);
            if rr >= 0 && rr < 5 && cc >= 0 && cc < 5 {
                t[c][d] = (rr * 5 + cc) as u8;
            }
            d += 1;
        }
        c += 1;
    }
    t
}

const fn direction_table() -> [[u8; CELLS]; CELLS] {
    let mut t = [[8u8; CELLS]; CELLS];
    let mut c = 0;
    while c < CELLS {
        let mut d = 0;
        while d < 8 {
            if NEIGHBOUR[c][d] != UNPLACED {
                t[c][NEIGHBOUR[c][d] as usize] = d as u8;
            }
            d += 1;
        }
        c += 1;
    }
    t
}

const fn neighbour_masks() -> [u32; CELLS] {
    let mut m = [0u32; CELLS];
    let mut c = 0;
    while c < CELLS {
        let mut d = 0;
        while d < 8 {
            if NEIGHBOUR[c][d] != UNPLACED {
                m[c] |= 1 << NEIGHBOUR[c][d];
            }
            d += 1;
        }
        c += 1;
    }
    m
}

/// `NEIGHBOUR[cell][dir]`: the adjacent cell in direction `dir`, or 25 off the board.
pub(crate) const NEIGHBOUR: [[u8; 8]; CELLS] = neighbour_table();
/// All adjacent cells of a cell.
pub(crate) const NEIGHBOURS: [u32; CELLS] = neighbour_masks();
/// `DIRECTION[from][to]`: the direction index of a step between adjacent cells (8 otherwise).
const DIRECTION: [[u8; CELLS]; CELLS] = direction_table();

/// Which block supply the game uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Supply {
    /// As many blocks and domes as needed (the usual choice for AI play).
    Unlimited,
    /// The box: 22/18/14 blocks for levels 1/2/3 and 18 domes.
    Official,
}

/// Which god powers are in play.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gods {
    /// The base game.
    None,
    /// A chance move before placement draws two different gods, the first for the first player.
    Random,
    /// These gods (ids 1-10 as in [`GODS`], 0 for a player without a power), first player first.
    Pair([u8; 2]),
}

/// Santorini for two players: the base game, or with god powers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Santorini {
    supply: Supply,
    gods: Gods,
}

impl Default for Santorini {
    fn default() -> Self {
        Santorini { supply: Supply::Unlimited, gods: Gods::None }
    }
}

impl Santorini {
    /// The base game with the given supply rule.
    pub fn new(supply: Supply) -> Self {
        Santorini { supply, gods: Gods::None }
    }

    /// The game with these gods.
    pub fn with_gods(self, gods: Gods) -> Self {
        Santorini { gods, ..self }
    }

    /// The game with this supply rule.
    pub fn with_supply(self, supply: Supply) -> Self {
        Santorini { supply, ..self }
    }

    fn stepped(&self) -> bool {
        self.gods != Gods::None
    }
}

/// Reads `gods=...`: `none`, `random`, or two names joined by `+` (`apollo+pan`).
fn parse_gods(text: &str) -> Option<Gods> {
    match text {
        "none" => return Some(Gods::None),
        "random" => return Some(Gods::Random),
        _ => {}
    }
    let (a, b) = text.split_once('+')?;
    let pair = [gods::parse_god(a)?, gods::parse_god(b)?];
    (pair != [0, 0]).then_some(Gods::Pair(pair))
}

impl Game for Santorini {
    fn rules(&self) -> Vec<RulesSection> {
        let mut card = vec![RulesSection::new(
            "How to play",
            &[
                "Each player places two workers on empty spaces; then the players take turns.",
                "A turn: move one of your workers to a neighbouring space (any of eight directions) that is \
                 free of workers and domes, up at most one level or down any number; then build with that \
                 worker on a neighbouring free space: a block on the ground or on levels 1-2, a dome on level 3.",
                "You win by moving a worker up onto level 3.",
                "A player with no move that can be followed by a build loses.",
            ],
        )];
        if self.supply == Supply::Official {
            card.push(RulesSection::new(
                "Supply",
                &["The box's pieces only: 22, 18 and 14 blocks for levels 1, 2 and 3, and 18 domes; a piece \
                   that has run out cannot be built."],
            ));
        }
        let gods: Vec<u8> = match self.gods {
            Gods::None => Vec::new(),
            Gods::Random => (1..=GODS.len() as u8).collect(),
            Gods::Pair(pair) => pair.iter().copied().filter(|&g| g != 0).collect(),
        };
        if !gods.is_empty() {
            let mut lines = vec![match self.gods {
                Gods::Random => "Each player gets a god, two different ones drawn at random before the workers are \
                                 placed; a god's power changes its player's turn:"
                    .to_string(),
                _ => "Each player's god changes their turn:".to_string(),
            }];
            lines.extend(gods.iter().map(|&g| {
                let name = GODS[g as usize - 1];
                format!("{}{}: {}", name[..1].to_uppercase(), &name[1..], POWERS[g as usize - 1])
            }));
            card.push(RulesSection { heading: "Gods".into(), lines });
        }
        card
    }

    fn table_agents(&self) -> (String, String) {
        if self.stepped() {
            // The network trained on every pairing: 70.2% [65.6, 74.5] against alpha-beta on the
            // gods evaluator at equal time (experiments/santorini-gods-warm-start).
            let agent = |t: &str| format!("az:model=santorini-gods-az.safetensors,time={t}");
            return (agent("1s"), agent("2s"));
        }
        ("alphabeta:time=1s,eval=linear8".into(), "alphabeta:time=2s,eval=linear8".into())
    }

    type State = SantoriniState;

    const INFO: GameInfo = GameInfo {
        name: "santorini",
        about: "Santorini: move a worker, then build; climb onto level 3 to win (base game, or with gods)",
        params: &[
            ParamInfo {
                name: "supply",
                default: "unlimited",
                accepts: "unlimited or official",
                help: "block supply: unlimited, or the box's 22/18/14 blocks and 18 domes",
            },
            ParamInfo {
                name: "gods",
                default: "none",
                accepts: "none, random, or two of apollo, artemis, athena, atlas, demeter, hephaestus, hermes, \
                          minotaur, pan, prometheus (or none) joined by + (apollo+pan: the first player's god first)",
                help: "god powers: none (the base game), random (a chance move draws two different gods), or a pairing",
            },
        ],
    };

    fn from_spec(spec: &Spec) -> Result<Self, Error> {
        let o = spec.options("game santorini", Self::INFO.params)?;
        let supply = match o.get::<String>("supply")?.as_str() {
            "unlimited" => Supply::Unlimited,
            "official" => Supply::Official,
            other => return Err(o.bad_value("supply", other)),
        };
        let text = o.get::<String>("gods")?;
        let gods = parse_gods(&text).ok_or_else(|| {
            if text == "none+none" {
                Error::Invalid("gods=none+none: write gods=none for the base game".into())
            } else {
                o.bad_value("gods", &text)
            }
        })?;
        Ok(Santorini { supply, gods })
    }

    fn spec(&self) -> Spec {
        let supply = match self.supply {
            Supply::Unlimited => "unlimited",
            Supply::Official => "official",
        };
        let spec = Spec::new("santorini").with("supply", supply);
        // The base game's spec names no gods, so every model and record made before gods keeps its
        // spec (and its meaning).
        match self.gods {
            Gods::None => spec,
            Gods::Random => spec.with("gods", "random"),
            Gods::Pair([a, b]) => spec.with("gods", format!("{}+{}", gods::god_name(a), gods::god_name(b))),
        }
    }

    fn network_spec(&self) -> Spec {
        // The pairing is in the observation (each player's god planes), so every pairing is the
        // game of the network trained on random ones.
        match self.gods {
            Gods::None => self.spec(),
            Gods::Random | Gods::Pair(_) => Santorini { gods: Gods::Random, ..*self }.spec(),
        }
    }

    fn num_players(&self) -> usize {
        2
    }

    fn num_actions(&self) -> usize {
        if self.stepped() { GOD_ACTIONS } else { NUM_ACTIONS }
    }

    fn max_chance_outcomes(&self) -> usize {
        if self.gods == Gods::Random { PAIRINGS } else { 0 }
    }

    fn observation_shape(&self) -> Vec<usize> {
        vec![if self.stepped() { GOD_PLANES } else { 8 }, 5, 5]
    }

    fn initial_state(&self) -> SantoriniState {
        SantoriniState {
            level: [0; 3],
            dome: 0,
            workers: [[UNPLACED; 2]; 2],
            worker_bits: [0; 2],
            placed: 0,
            to_move: 0,
            winner: NO_WINNER,
            official: self.supply == Supply::Official,
            gods: match self.gods {
                Gods::Pair(pair) => pair,
                _ => [0; 2],
            },
            drawing: self.gods == Gods::Random,
            steps: Steps::START,
        }
    }

    fn game_agent(&self, spec: &Spec, seed: u64) -> Option<Result<BoxedAgent<SantoriniState>, Error>> {
        (spec.name == eval::GREEDY_INFO.name).then(|| {
            spec.options("agent santorini-greedy", eval::GREEDY_INFO.params)?;
            Ok(Box::new(GreedyAgent::new(seed)) as BoxedAgent<SantoriniState>)
        })
    }

    fn game_agent_infos(&self) -> Vec<AgentInfo> {
        vec![eval::GREEDY_INFO]
    }

    fn evaluator(&self, spec: &Spec) -> Option<Result<BoxedEvaluator<SantoriniState>, Error>> {
        eval::make_evaluator(spec)
    }

    fn evaluator_infos(&self) -> Vec<AgentInfo> {
        eval::EVALUATOR_INFOS.to_vec()
    }

    fn ladder_agents(&self) -> Vec<String> {
        vec!["alphabeta:depth=3,eval=linear8".to_string()]
    }
}

/// A Santorini position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SantoriniState {
    /// `level[k]`: cells of height at least `k + 1`.
    level: [u32; 3],
    dome: u32,
    /// Each player's worker cells, ascending (25 = not placed yet).
    workers: [[u8; 2]; 2],
    worker_bits: [u32; 2],
    /// Workers placed so far (0-4): the first player places two, then the second player.
    placed: u8,
    to_move: u8,
    winner: u8,
    official: bool,
    /// Each player's god (0: none); both 0 in the base game.
    gods: [u8; 2],
    /// The random pairing is still to be drawn (a chance move before placement).
    drawing: bool,
    /// Where a turn with gods stands.
    steps: Steps,
}

/// Observation planes with gods: the base game's 8, each player's god (10 + 10, the viewer's
/// first), and the turn's progress (acting worker, its start cell, the first build, and flags
/// for moved, moved up, built first, Hermes's power, Athena's block).
const GOD_PLANES: usize = 8 + 20 + 8;

/// What a turn action does, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decoded {
    Place(usize),
    /// Move worker `worker` from `from` to `to`, then build on `build` (`None`: a winning move).
    Turn {
        worker: usize,
        from: usize,
        to: usize,
        build: Option<usize>,
    },
}

impl SantoriniState {
    /// Height of `cell`: 0-3, or 4 for a dome.
    #[inline]
    pub fn height(&self, cell: usize) -> u8 {
        let blocks = ((self.level[0] >> cell & 1) + (self.level[1] >> cell & 1) + (self.level[2] >> cell & 1)) as u8;
        if self.dome >> cell & 1 != 0 { 4 } else { blocks }
    }

    /// The cells of `player`'s workers (placed ones only).
    pub fn workers(&self, player: Player) -> impl Iterator<Item = usize> + '_ {
        self.workers[player].iter().filter(|&&c| c != UNPLACED).map(|&c| c as usize)
    }

    /// The player whose turn it is (also during placement).
    pub(crate) fn mover(&self) -> usize {
        if self.placed < 4 { (self.placed / 2) as usize } else { self.to_move as usize }
    }

    fn occupied(&self) -> u32 {
        self.worker_bits[0] | self.worker_bits[1]
    }

    /// Cells a worker standing at height `h` may step onto (ignoring workers and domes).
    fn climbable(&self, h: u8) -> u32 {
        match h {
            0 => !self.level[1] & ALL,
            1 => !self.level[2] & ALL,
            _ => ALL,
        }
    }

    fn supply_allows(&self, cell: usize) -> bool {
        if !self.official {
            return true;
        }
        let h = self.height(cell) as usize;
        let used = if h == 3 { self.dome.count_ones() } else { self.level[h].count_ones() };
        used < SUPPLY[h]
    }

    /// Visits every legal turn of `player` as (worker, move dir, build dir or None for a win);
    /// stops early when `f` returns true. Returns whether it stopped early.
    fn for_each_turn(&self, player: usize, mut f: impl FnMut(usize, usize, Option<usize>) -> bool) -> bool {
        let blocked = self.dome | self.occupied();
        for w in 0..2 {
            let from = self.workers[player][w] as usize;
            if from == UNPLACED as usize {
                continue;
            }
            let dests = NEIGHBOURS[from] & !blocked & self.climbable(self.height(from));
            if dests == 0 {
                continue;
            }
            for (md, &to) in NEIGHBOUR[from].iter().enumerate() {
                let to = to as usize;
                if to == UNPLACED as usize || dests >> to & 1 == 0 {
                    continue;
                }
                if self.level[2] >> to & 1 != 0 {
                    if f(w, md, None) {
                        return true;
                    }
                    continue;
                }
                // After the move, `from` is empty and `to` is taken.
                let builds = NEIGHBOURS[to] & !(self.dome | ((self.occupied() & !(1 << from)) | 1 << to));
                for (bd, &b) in NEIGHBOUR[to].iter().enumerate() {
                    let b = b as usize;
                    if b != UNPLACED as usize && builds >> b & 1 != 0 && self.supply_allows(b) && f(w, md, Some(bd)) {
                        return true;
                    }
                }
            }
        }
        false
    }

    fn can_move(&self, player: usize) -> bool {
        if !self.official {
            // The square a worker leaves is always free to build on, so moving is enough.
            let blocked = self.dome | self.occupied();
            return self.workers[player].iter().any(|&c| {
                c != UNPLACED && NEIGHBOURS[c as usize] & !blocked & self.climbable(self.height(c as usize)) != 0
            });
        }
        self.for_each_turn(player, |_, _, _| true)
    }

    /// A turn id's worker, move direction and build direction (none for a winning climb).
    fn turn_parts(action: Action) -> (usize, usize, Option<usize>) {
        if action >= WIN_BASE {
            let x = (action - WIN_BASE) as usize;
            (x / 8, x % 8, None)
        } else {
            let x = (action - TURN_BASE) as usize;
            (x / 64, x / 8 % 8, Some(x % 8))
        }
    }

    pub(crate) fn decode(&self, action: Action) -> Decoded {
        if action < TURN_BASE {
            return Decoded::Place(action as usize);
        }
        let p = self.mover();
        let (worker, md, bd) = Self::turn_parts(action);
        let from = self.workers[p][worker] as usize;
        let to = if from < CELLS { NEIGHBOUR[from][md] as usize } else { CELLS };
        let build = bd.map(|bd| if to < CELLS { NEIGHBOUR[to][bd] as usize } else { CELLS });
        Decoded::Turn { worker, from, to, build }
    }

    pub(crate) fn encode_turn(worker: usize, md: usize, bd: Option<usize>) -> Action {
        match bd {
            Some(bd) => TURN_BASE + (worker * 64 + md * 8 + bd) as u32,
            None => WIN_BASE + (worker * 8 + md) as u32,
        }
    }

    fn place(&mut self, cell: usize) {
        let p = (self.placed / 2) as usize;
        self.workers[p][(self.placed % 2) as usize] = cell as u8;
        self.workers[p].sort_unstable();
        self.worker_bits[p] |= 1 << cell;
        self.placed += 1;
    }

    /// Builds a position: `heights` is 25 digits (0-3, 4 = dome) row by row from rank 5 down
    /// to rank 1; `workers` are the first player's two cells then the second player's, in
    /// notation (`"c3 d4 b2 e5"`); `to_move` is 0 or 1. For tests, puzzles and analysis.
    pub fn from_parts(game: &Santorini, heights: &str, workers: &str, to_move: usize) -> Result<Self, Error> {
        let bad =
            |reason: &str| Error::BadNotation { text: format!("{heights} / {workers}"), reason: reason.to_string() };
        let digits: Vec<u8> = heights.chars().filter(|c| !c.is_whitespace()).map(|c| c as u8).collect();
        if digits.len() != CELLS || digits.iter().any(|d| !(b'0'..=b'4').contains(d)) {
            return Err(bad("heights are 25 digits 0-4, rank 5 first"));
        }
        let mut s = game.initial_state();
        for (i, &d) in digits.iter().enumerate() {
            let cell = (4 - i / 5) * 5 + i % 5;
            let h = d - b'0';
            for k in 0..3 {
                if h > k && h < 4 {
                    s.level[k as usize] |= 1 << cell;
                }
            }
            if h == 4 {
                s.level = s.level.map(|l| l | 1 << cell);
                s.dome |= 1 << cell;
            }
        }
        let cells: Vec<&str> = workers.split_whitespace().collect();
        if cells.len() != 4 {
            return Err(bad("name four worker cells: the first player's two, then the second player's"));
        }
        for text in cells {
            let c = notation::parse_cell(text).ok_or_else(|| bad("worker cells are a1-e5"))?;
            if s.occupied() >> c & 1 != 0 || s.dome >> c & 1 != 0 {
                return Err(bad("two workers on one cell, or a worker on a dome"));
            }
            s.place(c);
        }
        if to_move > 1 {
            return Err(bad("to_move is 0 or 1"));
        }
        if s.drawing {
            return Err(bad("name the gods (gods=apollo+pan) to build a position"));
        }
        s.to_move = to_move as u8;
        if s.stuck() {
            s.winner = 1 - to_move as u8;
        }
        Ok(s)
    }
}

impl State for SantoriniState {
    fn prompt(&self) -> Option<String> {
        Some(if self.placed < 4 {
            "Place a worker on an empty cell".into()
        } else if self.stepped() {
            self.step_prompt()
        } else {
            "Move a worker, then build next to where it lands".into()
        })
    }

    fn describe_for(&self, _viewer: Player, action: Action) -> String {
        let name = notation::cell_name;
        if self.drawing {
            return self.action_to_string(action);
        }
        if self.stepped() && action >= gods::STEP_MOVE {
            return self.describe_step(action);
        }
        if action as usize >= NUM_ACTIONS {
            return self.action_to_string(action);
        }
        match self.decode(action) {
            Decoded::Place(c) => format!("worker placed on {}", name(c)),
            Decoded::Turn { from, to, build: None, .. } => {
                format!("worker {} to {} (up to level 3: wins)", name(from), name(to))
            }
            Decoded::Turn { from, to, build: Some(b), .. } => {
                format!("worker {} to {}, builds on {}", name(from), name(to), name(b))
            }
        }
    }

    fn view(&self, _viewer: Option<Player>) -> serde_json::Value {
        let height: Vec<u32> = (0..CELLS).map(|c| self.level.iter().map(|l| l >> c & 1).sum()).collect();
        let dome: Vec<bool> = (0..CELLS).map(|c| self.dome >> c & 1 == 1).collect();
        let workers: Vec<Vec<Option<u8>>> =
            self.workers.iter().map(|w| w.iter().map(|&c| (c != UNPLACED).then_some(c)).collect()).collect();
        let supply = self.official.then(|| {
            (0..4)
                .map(|h| SUPPLY[h] - if h == 3 { self.dome.count_ones() } else { self.level[h].count_ones() })
                .collect::<Vec<u32>>()
        });
        let phase = if self.drawing {
            "draw"
        } else if self.placed < 4 {
            "place"
        } else {
            "move"
        };
        let mut v = serde_json::json!({
            "size": 5, "height": height, "dome": dome, "workers": workers,
            "phase": phase, "supply": supply, "winner": (self.winner != NO_WINNER).then_some(self.winner),
        });
        if self.stepped() {
            v["step"] = self.gods_view();
        }
        v
    }

    fn action_path(&self, action: Action) -> Vec<String> {
        let name = |c: usize| notation::cell_name(c);
        if self.drawing {
            return vec![format!("draw:{}", gods::pairing_to_string(action))];
        }
        if self.stepped() && action >= gods::STEP_MOVE {
            return self.step_path(action);
        }
        match self.decode(action) {
            Decoded::Place(c) => vec![format!("c:{}", name(c))],
            Decoded::Turn { from, to, build, .. } => {
                let mut path = vec![format!("w:{}", name(from)), format!("m:{}", name(to))];
                if let Some(b) = build {
                    path.push(format!("b:{}", name(b)));
                }
                path
            }
        }
    }

    const CHEAP_IS_LEGAL: bool = true;

    fn turn(&self) -> Turn {
        if self.winner != NO_WINNER {
            Turn::Terminal
        } else if self.drawing {
            Turn::Chance
        } else {
            Turn::Player(self.mover())
        }
    }

    fn chance_outcomes(&self, out: &mut Vec<(Action, f64)>) {
        out.clear();
        if self.drawing {
            let p = 1.0 / 90.0;
            out.extend((0..PAIRINGS as Action).filter(|k| k / 10 != k % 10).map(|k| (k, p)));
        }
    }

    fn legal_actions(&self, out: &mut Vec<Action>) {
        out.clear();
        if self.winner != NO_WINNER || self.drawing {
            return;
        }
        if self.placed < 4 {
            let mut free = !self.occupied() & ALL;
            while free != 0 {
                out.push(free.trailing_zeros());
                free &= free - 1;
            }
            return;
        }
        if self.stepped() {
            self.step_legal_actions(out);
            return;
        }
        // Winning moves have the highest ids: collect them after the others to stay ascending.
        let mut wins = [0u32; 16];
        let mut n_wins = 0;
        self.for_each_turn(self.to_move as usize, |w, md, bd| {
            match bd {
                Some(_) => out.push(Self::encode_turn(w, md, bd)),
                None => {
                    wins[n_wins] = Self::encode_turn(w, md, None);
                    n_wins += 1;
                }
            }
            false
        });
        out.extend_from_slice(&wins[..n_wins]);
    }

    fn random_action(&self, rng: &mut meeple_game::Rng, buf: &mut Vec<Action>) -> Action {
        use rand::RngExt;
        if self.placed < 4 || self.official || self.stepped() {
            self.legal_actions(buf);
            return buf[rng.random_range(0..buf.len())];
        }
        // Count every (move, build) with popcounts, draw one index, then walk to it: uniform
        // over the legal actions without writing them out.
        let p = self.to_move as usize;
        let blocked = self.dome | self.occupied();
        let dests =
            self.workers[p].map(|c| NEIGHBOURS[c as usize] & !blocked & self.climbable(self.height(c as usize)));
        let builds =
            |from: usize, to: usize| NEIGHBOURS[to] & !(self.dome | (self.occupied() & !(1 << from)) | 1 << to);
        let mut total = 0;
        for (w, &worker_dests) in dests.iter().enumerate() {
            let from = self.workers[p][w] as usize;
            let mut d = worker_dests;
            while d != 0 {
                let to = d.trailing_zeros() as usize;
                d &= d - 1;
                total += if self.level[2] >> to & 1 != 0 { 1 } else { builds(from, to).count_ones() };
            }
        }
        let mut r = rng.random_range(0..total);
        for (w, &worker_dests) in dests.iter().enumerate() {
            let from = self.workers[p][w] as usize;
            let mut d = worker_dests;
            while d != 0 {
                let to = d.trailing_zeros() as usize;
                d &= d - 1;
                let md = DIRECTION[from][to] as usize;
                if self.level[2] >> to & 1 != 0 {
                    if r == 0 {
                        return Self::encode_turn(w, md, None);
                    }
                    r -= 1;
                    continue;
                }
                let mut b = builds(from, to);
                let n = b.count_ones();
                if r < n {
                    for _ in 0..r {
                        b &= b - 1;
                    }
                    let cell = b.trailing_zeros() as usize;
                    return Self::encode_turn(w, md, Some(DIRECTION[to][cell] as usize));
                }
                r -= n;
            }
        }
        unreachable!("the drawn index is below the number of legal actions")
    }

    fn is_legal(&self, action: Action) -> bool {
        if self.drawing {
            return (action as usize) < PAIRINGS && action / 10 != action % 10;
        }
        if self.winner != NO_WINNER || action as usize >= self.action_ids() {
            return false;
        }
        if self.placed < 4 {
            return action < TURN_BASE && self.occupied() >> action & 1 == 0;
        }
        if self.stepped() {
            return self.step_is_legal(action);
        }
        if action < TURN_BASE {
            return false;
        }
        // Directly, without generating moves (search asks this for its killer moves): the rules
        // of `for_each_turn` for one worker, move and build.
        let (worker, md, bd) = Self::turn_parts(action);
        let from = self.workers[self.to_move as usize][worker] as usize;
        let to = NEIGHBOUR[from][md] as usize;
        if to == UNPLACED as usize {
            return false;
        }
        let blocked = self.dome | self.occupied();
        if (NEIGHBOURS[from] & !blocked & self.climbable(self.height(from))) >> to & 1 == 0 {
            return false;
        }
        let wins = self.level[2] >> to & 1 != 0;
        match bd {
            None => wins,
            Some(bd) => {
                let b = NEIGHBOUR[to][bd] as usize;
                let builds = NEIGHBOURS[to] & !(self.dome | ((self.occupied() & !(1 << from)) | 1 << to));
                !wins && b != UNPLACED as usize && builds >> b & 1 != 0 && self.supply_allows(b)
            }
        }
    }

    fn apply_unchecked(&mut self, action: Action) {
        if self.drawing {
            self.gods = [(action / 10) as u8 + 1, (action % 10) as u8 + 1];
            self.drawing = false;
            return;
        }
        if self.stepped() && action >= gods::STEP_MOVE {
            self.apply_step(action);
            return;
        }
        match self.decode(action) {
            Decoded::Place(cell) => {
                self.place(cell);
                if self.placed == 4 {
                    self.to_move = 0;
                    if self.stuck() {
                        self.winner = 1;
                    }
                }
            }
            Decoded::Turn { worker, from, to, build } => {
                let p = self.to_move as usize;
                self.workers[p][worker] = to as u8;
                self.workers[p].sort_unstable();
                self.worker_bits[p] ^= (1 << from) | (1 << to);
                match build {
                    None => self.winner = p as u8,
                    Some(b) => {
                        let h = self.height(b) as usize;
                        if h == 3 {
                            self.dome |= 1 << b;
                        } else {
                            self.level[h] |= 1 << b;
                        }
                        self.to_move = 1 - p as u8;
                        if !self.can_move(1 - p) {
                            self.winner = p as u8;
                        }
                    }
                }
            }
        }
    }

    fn returns(&self) -> Option<Values> {
        (self.winner != NO_WINNER).then(|| Values::two_player_win(self.winner as usize))
    }

    fn scores(&self) -> Values {
        Values::two_player_scores((self.winner != NO_WINNER).then_some(self.winner as usize))
    }

    fn observation(&self, player: Player, out: &mut Vec<f32>) {
        out.clear();
        let planes = [
            self.worker_bits[player],
            self.worker_bits[1 - player],
            !self.level[0] & !self.dome & ALL,
            self.level[0] & !self.level[1],
            self.level[1] & !self.level[2],
            self.level[2] & !self.dome,
            self.dome,
            if self.mover() == player { ALL } else { 0 },
        ];
        for plane in planes {
            out.extend((0..CELLS).map(|c| (plane >> c & 1) as f32));
        }
        if self.stepped() {
            self.gods_observation(player, out);
        }
    }

    fn zobrist(&self) -> u64 {
        use meeple_game::zobrist::splitmix64;
        let a = self.level[0] as u64
            | (self.level[1] as u64) << 25
            | (self.placed as u64) << 50
            | (self.to_move as u64) << 53;
        let b = self.level[2] as u64 | (self.dome as u64) << 25 | (self.winner as u64) << 50;
        let c = self.worker_bits[0] as u64 | (self.worker_bits[1] as u64) << 25;
        let h = splitmix64(a ^ splitmix64(b ^ splitmix64(c)));
        if !self.stepped() {
            return h;
        }
        let t = self.steps;
        let d = (t.active as u64) << 25
            | (t.origin as u64) << 30
            | (t.built as u64) << 35
            | (t.moves as u64) << 40
            | (t.flags as u64) << 48
            | (self.drawing as u64) << 56;
        let e = self.gods[0] as u64 | (self.gods[1] as u64) << 8;
        splitmix64(h ^ splitmix64(d ^ splitmix64(e)))
    }

    fn action_to_string(&self, action: Action) -> String {
        if self.drawing {
            return gods::pairing_to_string(action);
        }
        if self.stepped() && action >= gods::STEP_MOVE {
            return self.step_to_string(action);
        }
        notation::action_to_string(self, action)
    }

    fn parse_action(&self, text: &str) -> Result<Action, Error> {
        if self.drawing {
            return gods::parse_pairing(text);
        }
        if self.stepped() {
            return self.parse_step(text);
        }
        notation::parse_action(self, text)
    }

    fn illegal_reason(&self, action: Action) -> String {
        if self.drawing {
            return "the gods are drawn by chance, two different ones (0-99: first × 10 + second)".into();
        }
        if self.stepped()
            && let Some(why) = self.gods_illegal_reason(action)
        {
            return why;
        }
        notation::illegal_reason(self, action)
    }

    fn symmetries(&self) -> usize {
        8
    }

    fn symmetric(&self, k: usize) -> Self {
        SantoriniState::symmetric(self, k)
    }

    fn symmetric_action(&self, action: Action, k: usize) -> Action {
        SantoriniState::symmetric_action(self, action, k)
    }
}

impl fmt::Display for SantoriniState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Each cell: height digit (or ^ for a dome) and the worker letter (X first player, O second).
        for row in (0..5).rev() {
            write!(f, "{} ", row + 1)?;
            for col in 0..5 {
                let c = row * 5 + col;
                let h = self.height(c);
                let hc = if h == 4 { '^' } else { (b'0' + h) as char };
                let w = if self.worker_bits[0] >> c & 1 != 0 {
                    'X'
                } else if self.worker_bits[1] >> c & 1 != 0 {
                    'O'
                } else {
                    '.'
                };
                write!(f, " {hc}{w}")?;
            }
            writeln!(f)?;
        }
        write!(f, "   a  b  c  d  e")?;
        if self.stepped() && !self.drawing {
            let [a, b] = self.gods();
            write!(f, "\ngods: X {a}, O {b}")?;
        }
        match self.turn() {
            Turn::Terminal => write!(f, "\n{} wins", ["X", "O"][self.winner as usize]),
            Turn::Player(p) if self.placed < 4 => write!(f, "\n{} to place a worker", ["X", "O"][p]),
            Turn::Player(p) => write!(f, "\n{} to move", ["X", "O"][p]),
            Turn::Chance => Ok(()),
        }
    }
}

impl SantoriniState {
    /// The action ids of this setting: a whole turn's, or with gods a step's.
    fn action_ids(&self) -> usize {
        if self.stepped() { GOD_ACTIONS } else { NUM_ACTIONS }
    }

    /// Whether the player to move cannot finish a turn, and so has lost.
    fn stuck(&self) -> bool {
        if self.stepped() { !self.can_finish_turn() } else { !self.can_move(self.to_move as usize) }
    }
}
