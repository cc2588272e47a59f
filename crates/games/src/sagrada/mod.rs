//! Sagrada for 2-4 players under the official rules, with the setup variant and the
//! deterministic mode of the Sagrada thesis (a bachelor thesis with a C++ engine).
//!
//! A player's turn is a short sequence of actions: at most one die drafted and placed, at most
//! one tool card, then `pass` (a turn ends by itself once both are done, or once the die is
//! placed and no tool could still be used). Tool cards that modify a drafted die and place it are
//! one action (`grozing:R3+@b2`); cards with a random step (Flux Brush, Flux Remover, Glazing
//! Hammer) and cards that move two dice (Lathekin, Tap Wheel) take several, with chance nodes
//! for the rolls and draws. Setup is dealt by chance nodes too, then each player chooses a
//! window pattern (an action). Private objectives are hidden: observations leave out the
//! opponents' colours and [`State::determinize`] samples them, plus a fixed future for every
//! later chance event (the thesis's "worlds").
//!
//! Spaces are numbered `row * 5 + col` from the top left and named `a1`-`e4` (column letter,
//! row number from the top).

pub mod cards;
mod chance;
mod eval;
mod moves;
mod notation;
mod observe;
#[cfg(test)]
mod tests;
pub mod window;

pub use eval::{HeuristicWeights, RulesAgent, SagradaHeuristic, Strategy};

use cards::{CELLS, COLOURS, DICE_PER_COLOUR, DIE_KINDS, OBJECTIVES, PATTERNS, TOOLS, Tool};
use meeple_game::{
    Action, AgentInfo, BoxedAgent, BoxedEvaluator, Error, Game, GameInfo, ParamInfo, Player, Rng, RulesSection, Spec,
    State, Turn, Values, zobrist::splitmix64,
};
use rand::RngExt;
use std::fmt;
use std::hash::{Hash, Hasher};
pub use window::{NO_PATTERN, Rule, Window};

/// Rounds in a game.
pub const ROUNDS: u8 = 10;
/// Most seats.
pub const MAX_PLAYERS: usize = 4;
const NONE: u8 = u8::MAX;

// Action ids: dense ranges, in this order (legal actions are listed in ascending id order).
pub(crate) const PLACE: u32 = 0; // die * 20 + cell
pub(crate) const PASS: u32 = PLACE + (DIE_KINDS * CELLS) as u32;
pub(crate) const CHOOSE: u32 = PASS + 1; // offer 0-3
pub(crate) const GROZING: u32 = CHOOSE + 4; // die * 40 + (0 down, 1 up) * 20 + cell
pub(crate) const EGLOMISE: u32 = GROZING + (DIE_KINDS * 2 * CELLS) as u32; // from * 20 + to
pub(crate) const COPPER: u32 = EGLOMISE + (CELLS * CELLS) as u32;
pub(crate) const LATHEKIN: u32 = COPPER + (CELLS * CELLS) as u32;
pub(crate) const LENS: u32 = LATHEKIN + (CELLS * CELLS) as u32; // pool die * 30 + track die
pub(crate) const FLUX_BRUSH: u32 = LENS + (DIE_KINDS * DIE_KINDS) as u32; // die
pub(crate) const HAMMER: u32 = FLUX_BRUSH + DIE_KINDS as u32;
pub(crate) const PLIERS: u32 = HAMMER + 1;
pub(crate) const CORK: u32 = PLIERS + 1; // die * 20 + cell
pub(crate) const GRINDING: u32 = CORK + (DIE_KINDS * CELLS) as u32; // pool die * 20 + cell
pub(crate) const FLUX_REMOVER: u32 = GRINDING + (DIE_KINDS * CELLS) as u32; // die
pub(crate) const FLUX_VALUE: u32 = FLUX_REMOVER + DIE_KINDS as u32; // value - 1
pub(crate) const TAP_WHEEL: u32 = FLUX_VALUE + 6; // from * 20 + to
pub(crate) const TAP_STOP: u32 = TAP_WHEEL + (CELLS * CELLS) as u32;
/// Number of distinct player actions.
pub const NUM_ACTIONS: u32 = TAP_STOP + 1;

/// How window patterns are offered at setup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Windows {
    /// Official: each player is dealt 2 window cards and picks one of the 4 sides.
    Cards,
    /// The thesis: each player is offered 4 random patterns.
    Random4,
}

/// Sagrada: the rules and the setup options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sagrada {
    players: u8,
    windows: Windows,
    /// Tool cards in play when fixed by the spec (tool indices); `None` = 3 dealt at random.
    tools: Option<Vec<u8>>,
    /// Public objectives when fixed by the spec; `None` = 3 dealt at random.
    objectives: Option<Vec<u8>>,
    deterministic: bool,
}

impl Default for Sagrada {
    fn default() -> Self {
        Sagrada { players: 2, windows: Windows::Cards, tools: None, objectives: None, deterministic: false }
    }
}

const PARAMS: &[ParamInfo] = &[
    ParamInfo { name: "players", default: "2", accepts: "2, 3 or 4", help: "number of players" },
    ParamInfo {
        name: "windows",
        default: "cards",
        accepts: "cards or random4",
        help: "window patterns offered: 2 window cards = 4 sides (official), or 4 random patterns (the thesis)",
    },
    ParamInfo {
        name: "tools",
        default: "random",
        accepts: "random, none, or up to 3 tool names joined by + (grozing+lens+tapwheel)",
        help: "tool cards in play (names: grozing eglomise copper lathekin lens fluxbrush hammer pliers cork grinding \
               fluxremover tapwheel)",
    },
    ParamInfo {
        name: "objectives",
        default: "random",
        accepts: "random, or 1-3 objective names joined by +",
        help: "public objectives (names: row-colour column-colour row-shade column-shade light medium deep \
               shade-variety colour-variety diagonals)",
    },
    ParamInfo {
        name: "deterministic",
        default: "false",
        accepts: "true or false",
        help: "the thesis's -d mode: every future die and every private objective visible to all, fixed by the seed",
    },
];

fn parse_names(o: &meeple_game::Options<'_>, key: &str, names: &[&str], most: usize) -> Result<Option<Vec<u8>>, Error> {
    let text: String = o.get(key)?;
    match text.as_str() {
        "random" => return Ok(None),
        "none" if key == "tools" => return Ok(Some(Vec::new())),
        _ => {}
    }
    let mut out = Vec::new();
    for part in text.split('+') {
        let i = names.iter().position(|n| *n == part).ok_or_else(|| o.bad_value(key, &text))?;
        if out.contains(&(i as u8)) {
            return Err(o.bad_value(key, &text));
        }
        out.push(i as u8);
    }
    if out.is_empty() || out.len() > most {
        return Err(o.bad_value(key, &text));
    }
    out.sort_unstable();
    Ok(Some(out))
}

impl Sagrada {
    /// A game for `players` (2-4) with the official setup and random cards.
    pub fn new(players: usize) -> Result<Self, Error> {
        Self::from_spec(&Spec::new("sagrada").with("players", players))
    }

    /// Whether this is the thesis's deterministic mode.
    pub fn deterministic(&self) -> bool {
        self.deterministic
    }
}

impl Game for Sagrada {
    fn rules(&self) -> Vec<RulesSection> {
        let n = self.players as usize;
        vec![
            RulesSection {
                heading: "How to play".into(),
                lines: vec![
                    "Each player chooses a window pattern (its difficulty is their favour tokens) and has a \
                     secret colour, their private objective."
                        .into(),
                    format!(
                        "Ten rounds. Each round {} dice are drawn; the players draft in turn, there and back, \
                         two turns each; the last die is left over.",
                        2 * n + 1
                    ),
                    "A turn: place at most one die from the draft in your window, use at most one tool card \
                     (1 favour token, 2 once it has been used), or pass."
                        .into(),
                ],
            },
            RulesSection::new(
                "Placing a die",
                &[
                    "Your first die goes on an edge or corner space; every later die next to one already placed \
                     (diagonals count).",
                    "A coloured space takes only that colour; a shaded space only that value.",
                    "Never beside a die of the same colour or the same value, side by side (diagonals are fine).",
                ],
            ),
            RulesSection::new(
                "Scoring",
                &[
                    "The three public objectives, each as often as your window meets it.",
                    "Your private objective: the sum of the values of the dice of your colour.",
                    "One point per favour token left, minus one per empty space. Ties go to the private \
                     objective, then favour tokens, then whoever played later in the last round.",
                ],
            ),
        ]
    }

    fn table_agents(&self) -> (String, String) {
        ("alphabeta:depth=1,filter=true,eval=thesis".into(), "mcts:time=2s,playout=sagrada-rules".into())
    }

    type State = SagradaState;

    const INFO: GameInfo = GameInfo {
        name: "sagrada",
        about: "Sagrada: draft dice and build a stained-glass window; tool cards, public and secret objectives",
        params: PARAMS,
    };

    fn from_spec(spec: &Spec) -> Result<Self, Error> {
        let o = spec.options("game sagrada", PARAMS)?;
        let players = o.get_in("players", 2..=4)?;
        let windows = match o.get::<String>("windows")?.as_str() {
            "cards" => Windows::Cards,
            "random4" => Windows::Random4,
            other => return Err(o.bad_value("windows", other)),
        };
        let tools = parse_names(&o, "tools", &cards::TOOL_KEYS, 3)?;
        let objectives = parse_names(&o, "objectives", &cards::OBJECTIVE_KEYS, 3)?;
        Ok(Sagrada { players, windows, tools, objectives, deterministic: o.get_bool("deterministic")? })
    }

    fn spec(&self) -> Spec {
        let names = |v: &Option<Vec<u8>>, keys: &[&str]| match v {
            None => "random".to_string(),
            Some(v) if v.is_empty() => "none".to_string(),
            Some(v) => v.iter().map(|&i| keys[i as usize]).collect::<Vec<_>>().join("+"),
        };
        Spec::new("sagrada")
            .with("players", self.players)
            .with("windows", if self.windows == Windows::Cards { "cards" } else { "random4" })
            .with("tools", names(&self.tools, &cards::TOOL_KEYS))
            .with("objectives", names(&self.objectives, &cards::OBJECTIVE_KEYS))
            .with("deterministic", self.deterministic)
    }

    fn num_players(&self) -> usize {
        self.players as usize
    }

    fn num_actions(&self) -> usize {
        NUM_ACTIONS as usize
    }

    fn max_chance_outcomes(&self) -> usize {
        if self.deterministic { 256 } else { DIE_KINDS }
    }

    fn observation_shape(&self) -> Vec<usize> {
        vec![PLAYER_FEATURES * self.players as usize + GLOBAL_FEATURES]
    }

    fn initial_state(&self) -> SagradaState {
        let mut s = SagradaState {
            n: self.players,
            windows_mode: self.windows,
            deterministic: self.deterministic,
            stage: if self.deterministic { Stage::Fate } else { Stage::Tools },
            count: 0,
            fate: 0,
            fated: false,
            events: 0,
            tools: [NONE; 3],
            tools_n: 0,
            draw_tools: self.tools.is_none(),
            tool_used: [false; 3],
            objectives: [NONE; 3],
            objectives_n: 0,
            draw_objectives: self.objectives.is_none(),
            private: [NONE; MAX_PLAYERS],
            offers: [[NONE; 4]; MAX_PLAYERS],
            windows: [Window::default(); MAX_PLAYERS],
            tokens: [0; MAX_PLAYERS],
            bag: [DICE_PER_COLOUR; COLOURS],
            pool: [0; DIE_KINDS],
            track: [0; DIE_KINDS],
            round: 0,
            turn_index: 0,
            placed: false,
            tool_done: false,
            skip: [false; MAX_PLAYERS],
            pending: Pending::None,
            held: NONE,
            reroll: [0; COLOURS],
            last_turn: [0; MAX_PLAYERS],
        };
        for (i, &t) in self.tools.iter().flatten().enumerate() {
            s.tools[i] = t;
            s.tools_n += 1;
        }
        for (i, &t) in self.objectives.iter().flatten().enumerate() {
            s.objectives[i] = t;
            s.objectives_n += 1;
        }
        s.settle();
        s
    }

    fn game_agent(&self, spec: &Spec, seed: u64) -> Option<Result<BoxedAgent<SagradaState>, Error>> {
        (spec.name == eval::RULES_INFO.name).then(|| RulesAgent::from_spec(spec, seed).map(|a| Box::new(a) as _))
    }

    fn game_agent_infos(&self) -> Vec<AgentInfo> {
        vec![eval::RULES_INFO]
    }

    fn evaluator(&self, spec: &Spec) -> Option<Result<BoxedEvaluator<SagradaState>, Error>> {
        (spec.name == eval::HEURISTIC_INFO.name)
            .then(|| SagradaHeuristic::from_spec(spec).map(|e| Box::new(e) as BoxedEvaluator<SagradaState>))
    }

    fn evaluator_infos(&self) -> Vec<AgentInfo> {
        vec![eval::HEURISTIC_INFO]
    }

    fn ladder_agents(&self) -> Vec<String> {
        vec!["sagrada-rules".to_string()]
    }

    fn tuning_defaults(&self) -> Option<meeple_game::TuningDefaults> {
        // The thesis's five weights with its ranges (Table 8.2) and tuned values (Table 8.3).
        Some(meeple_game::TuningDefaults {
            agent: "alphabeta:depth=1,filter=true,eval=(thesis:{params})",
            opponent: "sagrada-rules",
            params: &[
                "opponent=0.01..10:log",
                "power=0.01..10:log",
                "dead=10..1000:log",
                "points=1..500:log",
                "lost=1..100:log",
            ],
            start: &[9.83724229656198, 3.1133889400588606, 373.0, 416.0, 7.0],
        })
    }
}

/// Where the game is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Stage {
    /// Deterministic mode: 4 chance bytes fix every later chance event.
    Fate,
    /// Tool cards are dealt.
    Tools,
    /// Public objectives are dealt.
    Objectives,
    /// Private objective colours are dealt.
    Privates,
    /// Window cards (or patterns) are dealt.
    Offers,
    /// Players choose their patterns in seat order.
    Choose,
    /// The round's draft pool is drawn and rolled.
    Draw,
    /// Players take turns.
    Play,
    /// After the tenth round.
    Over,
}

/// A tool card's unfinished effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Pending {
    /// Nothing pending.
    None,
    /// The held die must be placed (Lens Cutter, Flux Brush, Flux Remover).
    PlaceHeld,
    /// Flux Brush: the held die is rerolled (chance).
    FluxBrushRoll,
    /// Flux Remover: a die is drawn from the bag (chance).
    FluxRemoverDraw,
    /// Flux Remover: the player chooses the drawn die's value.
    FluxRemoverValue,
    /// Glazing Hammer: pool dice are rerolled one by one (chance).
    HammerRoll,
    /// Lathekin: the second die moves; the first now stands on the given space.
    LathekinSecond(u8),
    /// Tap Wheel: another die of the colour may move, or the player stops; the first moved die
    /// now stands on the given space.
    TapWheelSecond(u8, u8),
}

/// A Sagrada position.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SagradaState {
    n: u8,
    windows_mode: Windows,
    deterministic: bool,
    stage: Stage,
    /// Chance events done in the current setup or draw stage (or choices made in `Choose`).
    count: u8,
    /// Fixed future for every chance event (deterministic mode, determinized worlds).
    fate: u64,
    fated: bool,
    /// Tool-card chance events so far (keys the fixed future of rerolls and draws).
    events: u16,
    tools: [u8; 3],
    tools_n: u8,
    draw_tools: bool,
    /// Whether each tool in play has favor tokens on it (then it costs 2).
    tool_used: [bool; 3],
    objectives: [u8; 3],
    objectives_n: u8,
    draw_objectives: bool,
    private: [u8; MAX_PLAYERS],
    /// Patterns offered to each player (two cards' sides, or four random patterns).
    offers: [[u8; 4]; MAX_PLAYERS],
    windows: [Window; MAX_PLAYERS],
    tokens: [u8; MAX_PLAYERS],
    bag: [u8; COLOURS],
    /// Draft pool dice by die code.
    pool: [u8; DIE_KINDS],
    /// Round track dice by die code.
    track: [u8; DIE_KINDS],
    round: u8,
    /// Turn within the round, 0..2n (snake order).
    turn_index: u8,
    placed: bool,
    tool_done: bool,
    /// Running Pliers: this player's second turn of the round is skipped.
    skip: [bool; MAX_PLAYERS],
    pending: Pending,
    /// A die between the pool and the window (tool cards with several steps).
    held: u8,
    /// Glazing Hammer: pool dice of each colour still to reroll.
    reroll: [u8; COLOURS],
    /// Turn index of each player's last turn in the final round (the last tie-break).
    last_turn: [u8; MAX_PLAYERS],
}

/// An action, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Move {
    Place { die: u8, cell: u8 },
    Pass,
    Choose(u8),
    Grozing { die: u8, up: bool, cell: u8 },
    Relocate { tool: Tool, from: u8, to: u8 },
    Lens { die: u8, track: u8 },
    FluxBrush(u8),
    Hammer,
    Pliers,
    Cork { die: u8, cell: u8 },
    Grinding { die: u8, cell: u8 },
    FluxRemover(u8),
    FluxValue(u8),
    TapStop,
}

pub(crate) fn decode(a: Action) -> Option<Move> {
    let split20 = |x: u32| ((x / 20) as u8, (x % 20) as u8);
    Some(match a {
        a if a < PASS => {
            let (die, cell) = split20(a - PLACE);
            Move::Place { die, cell }
        }
        a if a == PASS => Move::Pass,
        a if a < GROZING => Move::Choose((a - CHOOSE) as u8),
        a if a < EGLOMISE => {
            let x = a - GROZING;
            Move::Grozing { die: (x / 40) as u8, up: (x / 20) % 2 == 1, cell: (x % 20) as u8 }
        }
        a if a < LENS => {
            let (tool, base) = if a < COPPER {
                (Tool::EglomiseBrush, EGLOMISE)
            } else if a < LATHEKIN {
                (Tool::CopperFoilBurnisher, COPPER)
            } else {
                (Tool::Lathekin, LATHEKIN)
            };
            let (from, to) = split20(a - base);
            Move::Relocate { tool, from, to }
        }
        a if a < FLUX_BRUSH => Move::Lens { die: ((a - LENS) / 30) as u8, track: ((a - LENS) % 30) as u8 },
        a if a < HAMMER => Move::FluxBrush((a - FLUX_BRUSH) as u8),
        a if a == HAMMER => Move::Hammer,
        a if a == PLIERS => Move::Pliers,
        a if a < GRINDING => {
            let (die, cell) = split20(a - CORK);
            Move::Cork { die, cell }
        }
        a if a < FLUX_REMOVER => {
            let (die, cell) = split20(a - GRINDING);
            Move::Grinding { die, cell }
        }
        a if a < FLUX_VALUE => Move::FluxRemover((a - FLUX_REMOVER) as u8),
        a if a < TAP_WHEEL => Move::FluxValue((a - FLUX_VALUE) as u8 + 1),
        a if a < TAP_STOP => {
            let (from, to) = split20(a - TAP_WHEEL);
            Move::Relocate { tool: Tool::TapWheel, from, to }
        }
        a if a == TAP_STOP => Move::TapStop,
        _ => return None,
    })
}

fn relocate_base(tool: Tool) -> u32 {
    match tool {
        Tool::EglomiseBrush => EGLOMISE,
        Tool::CopperFoilBurnisher => COPPER,
        Tool::Lathekin => LATHEKIN,
        _ => TAP_WHEEL,
    }
}

fn relocate_rule(tool: Tool) -> Rule {
    match tool {
        Tool::EglomiseBrush => Rule::IgnoreColour,
        Tool::CopperFoilBurnisher => Rule::IgnoreValue,
        _ => Rule::Normal,
    }
}

/// Iterates the set bits of a mask, lowest first.
#[inline]
pub(crate) fn bits(mut m: u32) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (m != 0).then(|| {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            i
        })
    })
}

/// A die turned to its opposite face (1-6, 2-5, 3-4).
pub(crate) const fn flip(d: u8) -> u8 {
    cards::die(cards::colour(d), 7 - cards::value(d))
}

impl SagradaState {
    /// Number of players.
    pub fn players(&self) -> usize {
        self.n as usize
    }

    /// The window of `player`.
    pub fn window(&self, player: Player) -> &Window {
        &self.windows[player]
    }

    /// The private objective colour of `player` (0-4), once dealt.
    pub fn private_colour(&self, player: Player) -> Option<usize> {
        (self.private[player] != NONE).then_some(self.private[player] as usize)
    }

    /// Favor tokens `player` has left.
    pub fn tokens(&self, player: Player) -> u8 {
        self.tokens[player]
    }

    /// The tool cards in play (tool indices).
    pub fn tools(&self) -> &[u8] {
        &self.tools[..self.tools_n as usize]
    }

    /// The public objectives in play (objective indices).
    pub fn objectives(&self) -> &[u8] {
        &self.objectives[..self.objectives_n as usize]
    }

    /// The draft pool: count of each die code.
    pub fn pool(&self) -> &[u8; DIE_KINDS] {
        &self.pool
    }

    /// The round track: count of each die code.
    pub fn track(&self) -> &[u8; DIE_KINDS] {
        &self.track
    }

    /// Dice of each colour left in the bag.
    pub fn bag(&self) -> &[u8; COLOURS] {
        &self.bag
    }

    /// The round, 0-9 (10 once the game is over).
    pub fn round(&self) -> u8 {
        self.round
    }

    /// Whether the player to move has drafted a die this turn.
    pub fn has_drafted(&self) -> bool {
        self.placed
    }

    /// Whether the player to move has used a tool card this turn.
    pub fn has_used_tool(&self) -> bool {
        self.tool_done
    }

    /// Whether the state runs on a fixed future (deterministic mode or a determinized world).
    pub fn is_fated(&self) -> bool {
        self.fated
    }

    /// The seat taking turn `t` (0..2n) of round `round`: around the table from the round's start
    /// player, then back.
    pub fn seat_of_turn(n: usize, round: usize, t: usize) -> Player {
        let start = round % n;
        if t < n { (start + t) % n } else { (start + 2 * n - 1 - t) % n }
    }

    fn seat(&self) -> Player {
        Self::seat_of_turn(self.n as usize, self.round as usize, self.turn_index as usize)
    }

    /// A state in the middle of play for tests and analysis: patterns, private colours, tools,
    /// objectives and pool given, round `round`, first turn of the round, no dice placed.
    pub fn setup(
        game: &Sagrada,
        patterns: &[u8],
        privates: &[u8],
        tools: &[u8],
        objectives: &[u8],
        pool: &[u8],
        round: u8,
    ) -> Result<Self, Error> {
        let bad = |what: &str| Err(Error::Invalid(format!("sagrada setup: {what}")));
        let n = game.players as usize;
        if patterns.len() != n || privates.len() != n || patterns.iter().any(|&p| p as usize >= PATTERNS.len()) {
            return bad("one pattern (0-23) and one private colour per player");
        }
        if privates.iter().any(|&c| c as usize >= COLOURS) || tools.len() > 3 || objectives.len() > 3 {
            return bad("colours 0-4, at most 3 tools and 3 objectives");
        }
        if tools.iter().any(|&t| t >= 12) || objectives.iter().any(|&o| o >= 10) || round >= ROUNDS {
            return bad("tools 0-11, objectives 0-9, round 0-9");
        }
        let mut s = game.initial_state();
        s.stage = Stage::Play;
        s.fated = false;
        s.tools = [NONE; 3];
        s.tools_n = tools.len() as u8;
        let mut sorted = tools.to_vec();
        sorted.sort_unstable();
        s.tools[..tools.len()].copy_from_slice(&sorted);
        s.objectives = [NONE; 3];
        s.objectives_n = objectives.len() as u8;
        s.objectives[..objectives.len()].copy_from_slice(objectives);
        for p in 0..n {
            s.windows[p] = Window::new(patterns[p]);
            s.tokens[p] = PATTERNS[patterns[p] as usize].tokens;
            s.private[p] = privates[p];
        }
        for &d in pool {
            if d as usize >= DIE_KINDS || s.bag[cards::colour(d)] == 0 {
                return bad("pool dice are die codes 0-29 still in the bag");
            }
            s.bag[cards::colour(d)] -= 1;
            s.pool[d as usize] += 1;
        }
        s.round = round;
        Ok(s)
    }

    /// Puts a die straight onto `player`'s window, taking it from the bag (for tests and
    /// analysis); the placement rules are not checked.
    pub fn put_die(&mut self, player: Player, cell: usize, d: u8) -> Result<(), Error> {
        if cell >= CELLS || d as usize >= DIE_KINDS || self.windows[player].cells[cell] != 0 {
            return Err(Error::Invalid(format!("cannot put die {d} on space {cell}")));
        }
        let c = cards::colour(d);
        if self.bag[c] == 0 {
            return Err(Error::Invalid(format!("no {} dice left in the bag", cards::COLOUR_NAMES[c])));
        }
        self.bag[c] -= 1;
        self.windows[player].put(cell, d);
        Ok(())
    }

    /// Puts a die on the round track, taking it from the bag (for tests and analysis).
    pub fn put_on_track(&mut self, d: u8) -> Result<(), Error> {
        let c = cards::colour(d);
        if d as usize >= DIE_KINDS || self.bag[c] == 0 {
            return Err(Error::Invalid(format!("cannot put die {d} on the round track")));
        }
        self.bag[c] -= 1;
        self.track[d as usize] += 1;
        Ok(())
    }

    /// Sets a player's favor tokens (for tests and analysis).
    pub fn set_tokens(&mut self, player: Player, tokens: u8) {
        self.tokens[player] = tokens;
    }

    /// Moves to turn `t` (0..2n) of the current round (for tests and analysis).
    pub fn set_turn_index(&mut self, t: u8) {
        self.turn_index = t.min(2 * self.n - 1);
    }

    fn tool_slot(&self, tool: Tool) -> Option<usize> {
        self.tools().iter().position(|&t| TOOLS[t as usize] == tool)
    }

    /// What using tool slot `k` costs now: 1 token if unused so far, else 2.
    pub fn tool_cost(&self, k: usize) -> u8 {
        if self.tool_used[k] { 2 } else { 1 }
    }

    fn can_afford(&self, player: Player, tool: Tool) -> bool {
        self.tool_slot(tool).is_some_and(|k| self.tokens[player] >= self.tool_cost(k))
    }

    fn pay(&mut self, player: Player, tool: Tool) {
        let k = self.tool_slot(tool).expect("tool in play");
        self.tokens[player] -= self.tool_cost(k);
        self.tool_used[k] = true;
        self.tool_done = true;
    }

    fn track_colours(&self) -> u32 {
        (0..DIE_KINDS).filter(|&d| self.track[d] > 0).fold(0, |m, d| m | 1 << cards::colour(d as u8))
    }

    /// Whether a tool that works after drafting could still be used this turn (if not, placing
    /// a die ends the turn by itself).
    fn tool_possible_after_placing(&self, player: Player) -> bool {
        if self.tool_done {
            return false;
        }
        let w = &self.windows[player];
        self.tools().iter().any(|&t| {
            let tool = TOOLS[t as usize];
            self.can_afford(player, tool)
                && match tool {
                    Tool::EglomiseBrush | Tool::CopperFoilBurnisher => w.occupied != 0,
                    Tool::Lathekin => w.dice() >= 2,
                    Tool::TapWheel => {
                        let tc = self.track_colours();
                        (0..COLOURS).any(|c| tc & (1 << c) != 0 && w.colour[c] != 0)
                    }
                    Tool::RunningPliers => (self.turn_index as usize) < self.n as usize && self.pool_size() > 0,
                    _ => false,
                }
        })
    }

    fn pool_size(&self) -> u32 {
        self.pool.iter().map(|&c| c as u32).sum()
    }

    fn pool_dice(&self) -> impl Iterator<Item = u8> + '_ {
        (0..DIE_KINDS as u8).filter(|&d| self.pool[d as usize] > 0)
    }

    fn track_dice(&self) -> impl Iterator<Item = u8> + '_ {
        (0..DIE_KINDS as u8).filter(|&d| self.track[d as usize] > 0)
    }

    /// Points `player` would score if the game ended now: public objectives, private objective,
    /// favor tokens, minus empty spaces.
    pub fn score(&self, player: Player) -> i32 {
        let w = &self.windows[player];
        if w.pattern == NO_PATTERN {
            return 0;
        }
        let public: i32 = self.objectives().iter().map(|&o| OBJECTIVES[o as usize].score(&w.colour, &w.value)).sum();
        public + self.private_score(player) + self.tokens[player] as i32 - (CELLS as i32 - w.dice() as i32)
    }

    /// The private objective's points of `player` (0 before it is dealt).
    pub fn private_score(&self, player: Player) -> i32 {
        self.private_colour(player).map_or(0, |c| self.windows[player].private_score(c))
    }

    /// Players from first to last by score, then private objective, then favor tokens, then who
    /// took the later turn in the final round.
    pub fn ranking(&self) -> Vec<Player> {
        let mut order: Vec<Player> = (0..self.n as usize).collect();
        let key = |p: Player| (self.score(p), self.private_score(p), self.tokens[p], self.last_turn[p]);
        order.sort_by_key(|&p| std::cmp::Reverse(key(p)));
        order
    }

    /// Whether `player` may see `other`'s private objective.
    fn sees_private(&self, player: Player, other: Player) -> bool {
        player == other || self.deterministic
    }

    /// Whether `player` may see what was offered to `other` at setup.
    fn sees_offers(&self, player: Player, other: Player) -> bool {
        player == other || self.deterministic
    }
}

/// Per-player observation features: 20 spaces x (5 colours + 6 values) of dice, the same again
/// for the pattern's restrictions, favor tokens, private colour (5, own only), then the window's
/// standing ([`SCORE_FEATURES`]).
pub const PLAYER_FEATURES: usize = CELLS * 11 * 2 + 1 + COLOURS + SCORE_FEATURES;
/// A window's standing, what a network would otherwise have to learn to add up from the cells
/// (as Catan's observation carries its evaluator's features): the dice values summed per colour
/// (5: any one of them may be a hidden private objective's points), public-objective points,
/// the thesis heuristic's completable-pattern sum and lost points, empty and dead spaces, and
/// the private objective's points where the viewer may see them.
pub const SCORE_FEATURES: usize = COLOURS + 6;
/// Shared features: pool (30), track (30), bag (5), tools in play (12) and used (12),
/// objectives (10), round (10), turn in round (8), drafted and tool used (2), pending step (8),
/// held die (30), stage (9), own offers (24).
pub const GLOBAL_FEATURES: usize = 30 + 30 + 5 + 12 + 12 + 10 + 10 + 8 + 2 + 8 + 30 + 9 + 24;

impl State for SagradaState {
    fn describe_for(&self, viewer: Player, action: Action) -> String {
        let text = self.action_to_string_for(viewer, action);
        let die = |d: &str| -> Option<String> {
            let mut c = d.chars();
            let colour = match c.next()? {
                'R' => "red",
                'Y' => "yellow",
                'G' => "green",
                'B' => "blue",
                'P' => "purple",
                _ => return None,
            };
            let value: u8 = c.as_str().parse().ok()?;
            Some(format!("{colour} {value}"))
        };
        if let Some((d, cell)) = text.split_once('@')
            && let Some(d) = die(d)
        {
            return format!("{d} on {cell}");
        }
        if let Some(d) = text.strip_prefix("draw:").and_then(die) {
            return format!("drawn: {d}");
        }
        if let Some(k) = text.strip_prefix("window:") {
            return format!("window {k}");
        }
        text
    }

    fn prompt(&self) -> Option<String> {
        Some(match self.stage {
            Stage::Choose => "Choose your window pattern".into(),
            Stage::Play if self.pending != Pending::None => "Finish the tool card's effect".into(),
            Stage::Play => "Draft a die from the pool and place it on your window, use a tool, or pass".into(),
            _ => return None,
        })
    }

    fn view(&self, viewer: Option<Player>) -> serde_json::Value {
        self.view_of(viewer)
    }

    fn action_path(&self, action: Action) -> Vec<String> {
        let text = self.action_to_string(action);
        match decode(action) {
            Some(Move::Place { die, cell }) => {
                vec![format!("d:{}", cards::die_name(die)), format!("c:{}", notation::cell_name(cell as usize))]
            }
            Some(Move::Pass) => vec!["btn:pass".into()],
            _ => match text.split_once(':') {
                Some((tool, _)) if cards::TOOL_KEYS.contains(&tool) => vec![format!("t:{tool}"), format!("btn:{text}")],
                _ if cards::TOOL_KEYS.contains(&text.as_str()) => vec![format!("t:{text}")],
                _ => vec![format!("btn:{text}")],
            },
        }
    }

    fn turn(&self) -> Turn {
        match self.stage {
            Stage::Over => Turn::Terminal,
            Stage::Choose => Turn::Player(self.count as usize),
            Stage::Play => match self.pending {
                Pending::FluxBrushRoll | Pending::FluxRemoverDraw | Pending::HammerRoll => Turn::Chance,
                _ => Turn::Player(self.seat()),
            },
            _ => Turn::Chance,
        }
    }

    fn legal_actions(&self, out: &mut Vec<Action>) {
        self.list_actions(out);
    }

    fn chance_outcomes(&self, out: &mut Vec<(Action, f64)>) {
        out.clear();
        if self.turn() != Turn::Chance {
            return;
        }
        self.chance_weights(out);
        let total: f64 = out.iter().map(|w| w.1).sum();
        for o in out.iter_mut() {
            o.1 /= total;
        }
    }

    fn apply_unchecked(&mut self, action: Action) {
        match self.turn() {
            Turn::Chance => self.apply_chance(action),
            Turn::Player(_) => {
                if let Some(m) = decode(action) {
                    self.apply_move(m);
                }
            }
            Turn::Terminal => {}
        }
    }

    fn is_legal(&self, action: Action) -> bool {
        match self.turn() {
            Turn::Terminal => false,
            Turn::Chance => {
                let mut w = Vec::new();
                self.chance_weights(&mut w);
                w.iter().any(|o| o.0 == action)
            }
            Turn::Player(_) => {
                let mut buf = Vec::new();
                self.list_actions(&mut buf);
                buf.binary_search(&action).is_ok()
            }
        }
    }

    fn illegal_reason(&self, action: Action) -> String {
        notation::illegal_reason(self, action)
    }

    fn returns(&self) -> Option<Values> {
        (self.stage == Stage::Over).then(|| {
            let winner = self.ranking()[0];
            let v: [f64; MAX_PLAYERS] = std::array::from_fn(|p| (p == winner) as u8 as f64);
            Values::from_slice(&v[..self.n as usize])
        })
    }

    fn scores(&self) -> Values {
        let v: [f64; MAX_PLAYERS] =
            std::array::from_fn(|p| if p < self.n as usize { self.score(p) as f64 } else { 0.0 });
        Values::from_slice(&v[..self.n as usize])
    }

    fn score_scale(&self) -> Option<f32> {
        // Points: windows score a few dozen, and games are mostly decided within 30 of them.
        Some(30.0)
    }

    fn observation(&self, player: Player, out: &mut Vec<f32>) {
        self.observation_of(player, out)
    }

    fn observation_string(&self, player: Player) -> String {
        notation::render(self, Some(player))
    }

    fn text_views(&self) -> &'static [(&'static str, &'static str)] {
        &[("cards", "the tool cards and public objectives in play with what they do, and your private objective")]
    }

    fn text_view(&self, viewer: Player, name: &str) -> Option<String> {
        (name == "cards").then(|| notation::cards_view(self, viewer))
    }

    fn determinize(&self, player: Player, rng: &mut Rng) -> Self {
        self.world(player, rng, true)
    }

    fn determinize_open(&self, player: Player, rng: &mut Rng) -> Self {
        self.world(player, rng, false)
    }

    fn zobrist(&self) -> u64 {
        let mut h = rustc_hash::FxHasher::default();
        self.hash(&mut h);
        splitmix64(h.finish())
    }

    fn action_to_string(&self, action: Action) -> String {
        notation::action_to_string(self, action)
    }

    fn parse_action(&self, text: &str) -> Result<Action, Error> {
        notation::parse_action(self, text)
    }

    fn action_to_string_for(&self, viewer: Player, action: Action) -> String {
        let hidden = match self.stage {
            Stage::Privates => !self.sees_private(viewer, self.count as usize),
            Stage::Offers => {
                let per = if self.windows_mode == Windows::Cards { 2 } else { 4 };
                !self.sees_offers(viewer, (self.count / per) as usize)
            }
            _ => false,
        };
        if hidden {
            let text = self.action_to_string(action);
            format!("{}:?", text.split(':').next().unwrap_or("hidden"))
        } else {
            self.action_to_string(action)
        }
    }
}

impl fmt::Display for SagradaState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&notation::render(self, None))
    }
}
