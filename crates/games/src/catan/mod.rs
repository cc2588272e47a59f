//! Catan (base game) for 2-4 players under the official rules; player-to-player trading with
//! `trades=true` (off by default, as in the Catan self-play study).
//!
//! A turn is a sequence of actions: `roll` (or a development card first), then any builds,
//! purchases, development cards, bank trades and offers to the other players, then `end`. An
//! offer is answered by each other seat in turn order (their own decisions), then the mover
//! trades with one seat that accepted or withdraws it. Dice, development-card draws, stolen cards
//! and a random board's tiles, numbers and harbours are chance nodes. Opponents' development
//! cards are hidden: observations give their number only, and [`State::determinize`] deals
//! them again from the cards nobody has seen.
//!
//! Rules as in the rulebook: setup in snake order, resources for the second settlement; the
//! distance rule; production with the bank-shortage rule (a resource the bank cannot pay to
//! everyone owed goes to nobody, unless only one player is owed: they get what is left); a 7
//! makes everyone with more than 7 cards discard half (rounded down), then the roller moves the
//! robber and steals a random card from a player at the new hex; one development card per turn,
//! none bought this turn (victory point cards only count), before or after the roll; largest
//! army from 3 knights and longest road from 5 roads, taken only by a strictly larger count,
//! with the rulebook's rules for broken roads; 4:1, 3:1 and 2:1 bank trades; a player wins on reaching 10 points on their
//! own turn. A turn limit (`turns`, default 1,000 turns) ends endless games as a draw.

// Seats, resources, hexes and corners are small index spaces shared by several arrays.
#![allow(clippy::needless_range_loop)]

mod apply;
pub mod board;
mod eval;
mod notation;
mod observe;
mod render;
mod rules;
use rules::push_weighted;
#[cfg(test)]
mod tests;
mod trade;
#[cfg(test)]
mod trade_tests;
mod words;

pub(crate) use trade::{ACCEPT, DECLINE, OFFER, TRADE_FEATURES, TRADE_WITH, WITHDRAW};
pub use trade::{NUM_ACTIONS_TRADING, OFFER_KINDS, OFFERS, Offer};

pub use eval::{CatanValue, ValueAgent, WeightedRandom};

use board::{EDGES, HARBOURS, HEXES, TOPOLOGY, VERTICES};
use meeple_game::{
    Action, AgentInfo, BoxedAgent, BoxedEvaluator, Error, Game, GameInfo, ParamInfo, Player, Rng, RulesSection, Spec,
    State, Turn, Values, zobrist::splitmix64,
};
use rand::RngExt;
use std::fmt;
use std::hash::{Hash, Hasher};

/// Most seats.
pub const MAX_PLAYERS: usize = 4;
/// Resource kinds: brick, lumber, wool, grain, ore.
pub const RESOURCES: usize = 5;
/// Resource names, in index order.
pub const RESOURCE_NAMES: [&str; RESOURCES] = ["brick", "lumber", "wool", "grain", "ore"];
/// Terrain names: the five producing terrains in resource order, then the desert.
pub const TERRAIN_NAMES: [&str; 6] = ["hills", "forest", "pasture", "fields", "mountains", "desert"];
pub(crate) const DESERT: u8 = 5;
/// Development card kinds.
pub const DEV_KINDS: usize = 5;
/// Development card names, in index order.
pub const DEV_NAMES: [&str; DEV_KINDS] = ["knight", "road_building", "year_of_plenty", "monopoly", "victory_point"];
pub(crate) const KNIGHT: usize = 0;
pub(crate) const ROAD_BUILDING: usize = 1;
pub(crate) const YEAR_OF_PLENTY: usize = 2;
pub(crate) const MONOPOLY: usize = 3;
pub(crate) const VICTORY_POINT: usize = 4;
const DEV_DECK: [u8; DEV_KINDS] = [14, 2, 2, 2, 5];
const BANK: u8 = 19;
/// Harbour kinds: a 2:1 harbour per resource, then the 3:1 harbour.
pub(crate) const GENERIC_HARBOUR: u8 = 5;
const HARBOUR_SET: [u8; 6] = [1, 1, 1, 1, 1, 4];
const TERRAIN_SET: [u8; 6] = [3, 4, 4, 4, 3, 1];
/// Number tokens by value 2-12 (index = value).
const TOKENS: [u8; 13] = [0, 0, 1, 2, 2, 2, 2, 0, 2, 2, 2, 2, 1];
const ROADS: u8 = 15;
const SETTLEMENTS: u8 = 5;
const CITIES: u8 = 4;
/// Points to win.
pub const WIN_POINTS: u8 = 10;

pub(crate) const ROAD_COST: [u8; RESOURCES] = [1, 1, 0, 0, 0];
pub(crate) const SETTLEMENT_COST: [u8; RESOURCES] = [1, 1, 1, 1, 0];
pub(crate) const CITY_COST: [u8; RESOURCES] = [0, 0, 0, 2, 3];
pub(crate) const DEV_COST: [u8; RESOURCES] = [0, 0, 1, 1, 1];

// Player action ids: dense ranges, in this order.
pub(crate) const SETTLE: u32 = 0; // vertex
pub(crate) const CITY: u32 = SETTLE + VERTICES as u32; // vertex
pub(crate) const ROAD: u32 = CITY + VERTICES as u32; // edge
pub(crate) const ROLL: u32 = ROAD + EDGES as u32;
pub(crate) const END: u32 = ROLL + 1;
pub(crate) const BUY: u32 = END + 1;
pub(crate) const PLAY_KNIGHT: u32 = BUY + 1;
pub(crate) const PLAY_ROAD_BUILDING: u32 = PLAY_KNIGHT + 1;
pub(crate) const PLAY_YEAR_OF_PLENTY: u32 = PLAY_ROAD_BUILDING + 1;
pub(crate) const PLAY_MONOPOLY: u32 = PLAY_YEAR_OF_PLENTY + 1; // resource
pub(crate) const TAKE: u32 = PLAY_MONOPOLY + RESOURCES as u32; // resource (year of plenty)
pub(crate) const ROBBER: u32 = TAKE + RESOURCES as u32; // hex
pub(crate) const STEAL: u32 = ROBBER + HEXES as u32; // victim seat
pub(crate) const DISCARD: u32 = STEAL + MAX_PLAYERS as u32; // resource
pub(crate) const TRADE: u32 = DISCARD + RESOURCES as u32; // give * 5 + get (give != get)
/// Number of distinct player actions without player-to-player trading (`trades=false`).
pub const NUM_ACTIONS: u32 = TRADE + (RESOURCES * RESOURCES) as u32;

/// Where the game stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Phase {
    /// Chance: the terrain of hex `count`.
    BoardTiles,
    /// Chance: the hex for red token `count` (6, 6, 8, 8) when reds must not touch.
    RedHexes,
    /// Chance: the number token of the next hex without one.
    Numbers,
    /// Chance: the kind of harbour `count`.
    Harbours,
    /// Setup: settlement `count` (0..2n) of the snake order.
    SetupSettlement,
    /// Setup: the road next to the settlement just placed.
    SetupRoad,
    /// Before the roll (a development card may be played first).
    Roll,
    /// Chance: the dice.
    Dice,
    /// Players with more than 7 cards discard, one card per action.
    Discard,
    /// The current player moves the robber.
    MoveRobber,
    /// The current player picks whom to rob.
    Steal,
    /// Chance: the card taken from `victim`.
    StealCard,
    /// Builds, trades, cards, `end`.
    Main,
    /// Chance: the development card bought.
    DevCard,
    /// Road Building: free roads left in `count`.
    FreeRoads,
    /// Year of Plenty: resources left to take in `count`.
    Plenty,
    /// Seat `responder` accepts or declines the offer on the table.
    Answer,
    /// The mover trades with one seat that accepted, or withdraws the offer.
    Choose,
    /// Game over.
    Over,
}

/// One seat's pieces and cards.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Seat {
    pub(crate) hand: [u8; RESOURCES],
    /// Unplayed development cards, bought this turn included.
    pub(crate) dev: [u8; DEV_KINDS],
    /// Development cards bought this turn (not playable yet).
    pub(crate) fresh: [u8; DEV_KINDS],
    pub(crate) knights: u8,
    pub(crate) settlements: u64,
    pub(crate) cities: u64,
    pub(crate) roads: u128,
    /// Corners touched by this seat's roads.
    pub(crate) road_ends: u64,
    /// Harbours owned: bit k for kind k (5 = 3:1).
    pub(crate) harbours: u8,
    pub(crate) longest: u8,
}

impl Seat {
    pub(crate) fn cards(&self) -> u32 {
        self.hand.iter().map(|&c| c as u32).sum()
    }

    pub(crate) fn dev_cards(&self) -> u32 {
        self.dev.iter().map(|&c| c as u32).sum()
    }

    fn can_pay(&self, cost: &[u8; RESOURCES]) -> bool {
        self.hand.iter().zip(cost).all(|(h, c)| h >= c)
    }

    pub(crate) fn buildings(&self) -> u64 {
        self.settlements | self.cities
    }

    /// Cards of `kind` it could play now (not bought this turn).
    pub(crate) fn playable(&self, kind: usize) -> bool {
        self.dev[kind] > self.fresh[kind]
    }

    /// Bank trade rate for giving `resource`.
    pub(crate) fn rate(&self, resource: usize) -> u8 {
        if self.harbours >> resource & 1 == 1 {
            2
        } else if self.harbours >> GENERIC_HARBOUR & 1 == 1 {
            3
        } else {
            4
        }
    }
}

/// How the board is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BoardKind {
    /// The rulebook's starting map for beginners.
    Beginner,
    /// Tiles, numbers and harbours shuffled (chance nodes at the start).
    Random,
}

/// The game and its options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Catan {
    players: u8,
    board: BoardKind,
    /// With a random board: 6s and 8s never on neighbouring hexes.
    separate_reds: bool,
    /// Stolen cards are seen by thief and victim only.
    hidden_hands: bool,
    turns: u32,
    /// 0: winner 1, others 0. Otherwise the reward for finishing (see [`State::returns`]).
    points_to_win: u8,
    /// Player-to-player trading.
    trades: bool,
    /// Offers a player may make in one turn (with `trades`).
    offers_per_turn: u8,
}

const PARAMS: &[ParamInfo] = &[
    ParamInfo { name: "players", default: "4", accepts: "2, 3 or 4", help: "number of players" },
    ParamInfo {
        name: "board",
        default: "beginner",
        accepts: "beginner or random",
        help: "the rulebook's beginner map, or tiles, numbers and harbours shuffled",
    },
    ParamInfo {
        name: "separate_reds",
        default: "true",
        accepts: "true or false",
        help: "with board=random: no 6 or 8 next to another 6 or 8",
    },
    ParamInfo {
        name: "hidden_hands",
        default: "false",
        accepts: "true or false",
        help: "a stolen card is known to thief and victim only: others see hands up to those cards, and \
               determinize samples them",
    },
    ParamInfo {
        name: "turns",
        default: "1000",
        accepts: "integer 10..=100000",
        help: "turn limit (all players' turns counted): the game ends there as a draw",
    },
    ParamInfo { name: "points", default: "10", accepts: "integer 3..=20", help: "victory points to win" },
    ParamInfo {
        name: "trades",
        default: "false",
        accepts: "true or false",
        help: "player-to-player trading as the rulebook has it: after the roll the mover offers cards for cards \
               (any 1-for-1, 1-for-2 or 2-for-1 of different resources it can pay), each other seat accepts or \
               declines in turn order, the mover trades with one that accepted or withdraws",
    },
    ParamInfo {
        name: "offers",
        default: "3",
        accepts: "integer 1..=20 (with trades=true)",
        help: "offers a player may make in one turn; an offer nobody took cannot be made again that turn",
    },
];

/// The rulebook's starting map for beginners (base game, 4th edition), hexes in `H0`-`H18` order:
/// terrain and number. Checked against three independent open transcriptions of the printed map,
/// which agree on every hex.
const BEGINNER_TILES: [(u8, u8); HEXES] = [
    (4, 10),
    (2, 2),
    (1, 9),
    (3, 12),
    (0, 6),
    (2, 4),
    (0, 10),
    (3, 9),
    (1, 11),
    (DESERT, 0),
    (1, 3),
    (4, 8),
    (1, 8),
    (4, 3),
    (3, 4),
    (2, 5),
    (0, 5),
    (3, 6),
    (2, 11),
];
/// Harbour kinds of the beginner map, clockwise from the top left (see [`board::Topology`]):
/// 3:1, grain, ore, 3:1, wool, 3:1, 3:1, brick, lumber. The cyclic order is the same in four
/// open transcriptions; where it starts (which sides) follows the one that gives corners.
const BEGINNER_HARBOURS: [u8; HARBOURS] =
    [GENERIC_HARBOUR, 3, 4, GENERIC_HARBOUR, 2, GENERIC_HARBOUR, GENERIC_HARBOUR, 0, 1];

impl Game for Catan {
    fn rules(&self) -> Vec<RulesSection> {
        let mut card = vec![
            RulesSection {
                heading: "How to play".into(),
                lines: vec![
                    format!(
                        "{} players. Set-up: each places a settlement and a road, then again in reverse order; the \
                         second settlement pays its neighbouring resources.",
                        self.players
                    ),
                    "A turn: roll the dice (every hex with that number pays each settlement beside it 1 card and \
                     each city 2), then trade and build as you like, then end the turn."
                        .into(),
                    "A 7: everyone holding more than 7 cards discards half (rounded down); you move the robber \
                     (its hex pays nothing) and steal a random card from a player beside it."
                        .into(),
                    format!("The first to reach {} victory points on their own turn wins.", self.points_to_win),
                ],
            },
            RulesSection::new(
                "Building costs",
                &[
                    "Road: 1 brick, 1 lumber.",
                    "Settlement (1 point): 1 brick, 1 lumber, 1 wool, 1 grain. At least two corners from any \
                     other settlement, and on your own road (after set-up).",
                    "City (2 points, replaces a settlement): 3 ore, 2 grain.",
                    "Development card: 1 ore, 1 wool, 1 grain.",
                ],
            ),
            RulesSection::new(
                "Development cards",
                &[
                    "Knight (move the robber and steal), road building (two free roads), year of plenty (two \
                     cards of your choice), monopoly (every card of one resource from the others), victory \
                     point (counts at once, kept hidden).",
                    "One per turn, before or after the roll, not one bought this turn.",
                    "Largest army: the first with 3 knights played, 2 points. Longest road: the first with 5 \
                     roads in a row, 2 points; taken only by a longer one.",
                ],
            ),
        ];
        let mut trade = vec![
            "With the bank: 4 of one resource for 1 of another; 3:1 at a harbour of yours, 2:1 \
                              of its resource at a special one."
                .to_string(),
        ];
        trade.push(trade::rules_line(self.trades, self.offers_per_turn));
        if self.hidden_hands {
            trade.push("A stolen card is seen by thief and victim only; the others see counts.".into());
        }
        card.push(RulesSection { heading: "Trading".into(), lines: trade });
        card
    }

    fn table_agents(&self) -> (String, String) {
        ("catan-value".into(), "catan-value".into())
    }

    type State = CatanState;

    const INFO: GameInfo = GameInfo {
        name: "catan",
        about: "Catan (base game; player trades with trades=true): settle, build roads and cities, 10 points wins",
        params: PARAMS,
    };

    fn from_spec(spec: &Spec) -> Result<Self, Error> {
        let o = spec.options("game catan", PARAMS)?;
        let players = o.get_in("players", 2..=4)?;
        let board = match o.get::<String>("board")?.as_str() {
            "beginner" => BoardKind::Beginner,
            "random" => BoardKind::Random,
            other => return Err(o.bad_value("board", other)),
        };
        let trades = o.get_bool("trades")?;
        if !trades && o.given("offers") {
            return Err(Error::Invalid(
                "game catan: 'offers' limits player-to-player offers, which need trades=true".into(),
            ));
        }
        Ok(Catan {
            players,
            board,
            separate_reds: o.get_bool("separate_reds")?,
            hidden_hands: o.get_bool("hidden_hands")?,
            turns: o.get_in("turns", 10..=100_000)?,
            points_to_win: o.get_in("points", 3..=20)?,
            trades,
            offers_per_turn: o.get_in("offers", 1..=20)?,
        })
    }

    fn spec(&self) -> Spec {
        let spec = Spec::new("catan")
            .with("players", self.players)
            .with("board", if self.board == BoardKind::Beginner { "beginner" } else { "random" })
            .with("separate_reds", self.separate_reds)
            .with("hidden_hands", self.hidden_hands)
            .with("turns", self.turns)
            .with("points", self.points_to_win)
            .with("trades", self.trades);
        // The limit is a setting of trading, so a game without trading does not name it.
        if self.trades { spec.with("offers", self.offers_per_turn) } else { spec }
    }

    fn num_players(&self) -> usize {
        self.players as usize
    }

    fn num_actions(&self) -> usize {
        (if self.trades { NUM_ACTIONS_TRADING } else { NUM_ACTIONS }) as usize
    }

    fn max_chance_outcomes(&self) -> usize {
        HEXES
    }

    fn observation_shape(&self) -> Vec<usize> {
        vec![OBSERVATION_LEN + if self.trades { TRADE_FEATURES } else { 0 }]
    }

    /// Trading appends its features to the observation and its actions after the bank trades.
    fn extends(&self, narrower: &Self) -> bool {
        let plain = Catan { trades: false, offers_per_turn: narrower.offers_per_turn, ..self.clone() };
        self.trades && plain == *narrower
    }

    fn initial_state(&self) -> CatanState {
        let mut s = CatanState {
            n: self.players,
            separate_reds: self.separate_reds,
            hidden_hands: self.hidden_hands,
            unseen: [[[0; RESOURCES]; MAX_PLAYERS]; MAX_PLAYERS],
            turn_limit: self.turns,
            win_points: self.points_to_win,
            trades: self.trades,
            offers_per_turn: self.offers_per_turn,
            offers_made: 0,
            declined: 0,
            offer: 0,
            responder: 0,
            accepted: 0,
            trades_made: 0,
            phase: Phase::BoardTiles,
            count: 0,
            terrain: [DESERT; HEXES],
            number: [0; HEXES],
            harbour: [GENERIC_HARBOUR; HARBOURS],
            robber: 0,
            seats: [Seat::default(); MAX_PLAYERS],
            bank: [BANK; RESOURCES],
            deck: DEV_DECK,
            current: 0,
            played_dev: false,
            resume: Phase::Main,
            victim: 0,
            discards: [0; MAX_PLAYERS],
            last_vertex: 0,
            army: None,
            road: None,
            winner: None,
            rolls: 0,
            turns: 0,
            last_roll: 0,
        };
        match self.board {
            BoardKind::Beginner => {
                for (h, &(t, n)) in BEGINNER_TILES.iter().enumerate() {
                    s.terrain[h] = t;
                    s.number[h] = n;
                }
                s.harbour = BEGINNER_HARBOURS;
                s.finish_board();
            }
            BoardKind::Random => {}
        }
        s
    }

    fn game_agent(&self, spec: &Spec, seed: u64) -> Option<Result<BoxedAgent<CatanState>, Error>> {
        eval::make_agent(spec, seed)
    }

    fn game_agent_infos(&self) -> Vec<AgentInfo> {
        eval::AGENT_INFOS.to_vec()
    }

    fn evaluator(&self, spec: &Spec) -> Option<Result<BoxedEvaluator<CatanState>, Error>> {
        eval::make_evaluator(spec)
    }

    fn evaluator_infos(&self) -> Vec<AgentInfo> {
        vec![eval::EVALUATOR_INFO]
    }

    fn ladder_agents(&self) -> Vec<String> {
        vec!["catan-value".to_string()]
    }
}

/// A Catan position.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CatanState {
    n: u8,
    separate_reds: bool,
    hidden_hands: bool,
    /// With `hidden_hands`: `unseen[thief][victim][r]` counts cards of resource `r` stolen so
    /// far, which only those two saw.
    pub(crate) unseen: [[[u8; RESOURCES]; MAX_PLAYERS]; MAX_PLAYERS],
    turn_limit: u32,
    win_points: u8,
    trades: bool,
    offers_per_turn: u8,
    /// Offers made this turn.
    pub(crate) offers_made: u8,
    /// Offers made this turn that nobody took (bit per offer id): not made again this turn.
    pub(crate) declined: u128,
    /// The offer on the table (in `Answer` and `Choose`).
    pub(crate) offer: u8,
    /// The seat answering it (in `Answer`).
    pub(crate) responder: u8,
    /// Seats that accepted it (bit per seat).
    pub(crate) accepted: u8,
    /// Player-to-player trades made so far.
    pub trades_made: u32,
    pub(crate) phase: Phase,
    /// Step within the phase (setup placements, board draws, free roads, picks left).
    pub(crate) count: u8,
    pub(crate) terrain: [u8; HEXES],
    /// Number token per hex (0: none).
    pub(crate) number: [u8; HEXES],
    pub(crate) harbour: [u8; HARBOURS],
    pub(crate) robber: u8,
    pub(crate) seats: [Seat; MAX_PLAYERS],
    pub(crate) bank: [u8; RESOURCES],
    pub(crate) deck: [u8; DEV_KINDS],
    pub(crate) current: u8,
    pub(crate) played_dev: bool,
    /// Where the turn goes on after the robber, free roads or Year of Plenty (before or after
    /// the roll).
    resume: Phase,
    pub(crate) victim: u8,
    /// Cards each seat still has to discard.
    pub(crate) discards: [u8; MAX_PLAYERS],
    last_vertex: u8,
    pub(crate) army: Option<u8>,
    pub(crate) road: Option<u8>,
    winner: Option<u8>,
    /// Dice rolls so far.
    pub rolls: u32,
    /// Turns started so far (after setup).
    pub turns: u32,
    pub(crate) last_roll: u8,
}

const OBSERVATION_LEN: usize = HEXES * 8
    + VERTICES * 8
    + EDGES * 4
    + MAX_PLAYERS * SEAT_FEATURES
    + DEV_KINDS
    + 12
    + VERTICES * VERTEX_EXTRA
    + MAX_PLAYERS * RESOURCES
    + MAX_PLAYERS * eval::SEAT_FEATURES;
/// Derived features of each vertex: the dots of each resource around it (the robber's hex
/// gives none), whether it is open to a settlement, and whether the viewer's roads reach it
/// there. The Catan self-play study found shuffled boards hard for a network reading tiles alone and proposed
/// exactly these; they make the board's geometry explicit.
const VERTEX_EXTRA: usize = RESOURCES + 2;
/// The most each catan-value seat feature reaches in play (points, cards a roll, the excess
/// over a quarter per resource, resources produced, harbours, road length, knights, cards,
/// hand up to 7 and beyond, and five yes-or-no flags).
const SEAT_FEATURE_SCALE: [f64; eval::SEAT_FEATURES] =
    [10.0, 2.0, 1.0, 5.0, 6.0, 8.0, 14.0, 25.0, 7.0, 13.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// Features of each seat in an observation.
const SEAT_FEATURES: usize = 15;

impl CatanState {
    /// Seats.
    pub fn players(&self) -> usize {
        self.n as usize
    }

    /// The seat whose turn it is (also while others discard).
    pub fn turn_player(&self) -> usize {
        self.current as usize
    }

    /// Victory points of `seat`, hidden victory point cards included.
    pub fn points(&self, seat: usize) -> u8 {
        self.public_points(seat) + self.seats[seat].dev[VICTORY_POINT]
    }

    /// Victory points everyone can see.
    pub fn public_points(&self, seat: usize) -> u8 {
        let s = &self.seats[seat];
        let mut p = s.settlements.count_ones() as u8 + 2 * s.cities.count_ones() as u8;
        if self.army == Some(seat as u8) {
            p += 2;
        }
        if self.road == Some(seat as u8) {
            p += 2;
        }
        p
    }

    /// Length of `seat`'s longest road.
    pub fn longest_road(&self, seat: usize) -> u8 {
        self.seats[seat].longest
    }

    /// Knights `seat` has played.
    pub fn knights(&self, seat: usize) -> u8 {
        self.seats[seat].knights
    }

    /// Resource cards of `seat`, by resource.
    pub fn hand(&self, seat: usize) -> [u8; RESOURCES] {
        self.seats[seat].hand
    }

    /// The terrain (index into [`TERRAIN_NAMES`]) and number token of each hex.
    pub fn hexes(&self) -> impl Iterator<Item = (u8, u8)> + '_ {
        self.terrain.iter().copied().zip(self.number.iter().copied())
    }

    /// `seat`'s hand as `viewer` knows it: exact, except that with `hidden_hands` the cards
    /// stolen between two other players are left out (added back to the victim, taken from the
    /// thief, so an entry can go below zero), with the number of such cards the seat gained.
    pub fn visible_hand(&self, viewer: usize, seat: usize) -> ([i32; RESOURCES], i32) {
        let mut hand = self.seats[seat].hand.map(|c| c as i32);
        let mut unknown = 0;
        if self.hidden_hands {
            for t in 0..self.n as usize {
                for x in 0..self.n as usize {
                    if t == viewer || x == viewer {
                        continue;
                    }
                    for r in 0..RESOURCES {
                        let c = self.unseen[t][x][r] as i32;
                        if seat == t {
                            hand[r] -= c;
                            unknown += c;
                        }
                        if seat == x {
                            hand[r] += c;
                            unknown -= c;
                        }
                    }
                }
            }
        }
        (hand, unknown)
    }
}

fn push_bits64(out: &mut Vec<Action>, mut m: u64, base: u32) {
    while m != 0 {
        out.push(base + m.trailing_zeros());
        m &= m - 1;
    }
}

fn push_bits128(out: &mut Vec<Action>, mut m: u128, base: u32) {
    while m != 0 {
        out.push(base + m.trailing_zeros());
        m &= m - 1;
    }
}

impl State for CatanState {
    fn view(&self, viewer: Option<Player>) -> serde_json::Value {
        self.view_of(viewer)
    }

    fn action_path(&self, action: Action) -> Vec<String> {
        let text = self.action_to_string(action);
        match action {
            a if a < ROAD => vec![format!("v:{}", (if a < CITY { a - SETTLE } else { a - CITY }))],
            a if a < ROLL => vec![format!("e:{}", a - ROAD)],
            a if (ROBBER..STEAL).contains(&a) => vec![format!("h:{}", a - ROBBER)],
            a if (STEAL..DISCARD).contains(&a) => vec![format!("s:{}", a - STEAL)],
            a if (TRADE..NUM_ACTIONS).contains(&a) => vec!["btn:trade".into(), format!("btn:{text}")],
            a if (PLAY_MONOPOLY..TAKE).contains(&a) => vec!["btn:monopoly".into(), format!("btn:{text}")],
            // An offer is built: what to give, then what to ask for (each side as its notation).
            a if (OFFER..ACCEPT).contains(&a) => {
                let (give, get) = text.trim_start_matches("offer:").split_once('>').unwrap_or(("", ""));
                vec!["btn:offer".into(), format!("give:{give}"), format!("get:{get}")]
            }
            _ => vec![format!("btn:{text}")],
        }
    }

    fn turn(&self) -> Turn {
        match self.phase {
            Phase::Over => Turn::Terminal,
            Phase::BoardTiles
            | Phase::RedHexes
            | Phase::Numbers
            | Phase::Harbours
            | Phase::Dice
            | Phase::StealCard
            | Phase::DevCard => Turn::Chance,
            Phase::SetupSettlement | Phase::SetupRoad => Turn::Player(self.setup_seat(self.count) as usize),
            Phase::Discard => Turn::Player(self.discarder().unwrap_or(self.current as usize)),
            Phase::Answer => Turn::Player(self.responder as usize),
            _ => Turn::Player(self.current as usize),
        }
    }

    fn legal_actions(&self, out: &mut Vec<Action>) {
        out.clear();
        let p = self.current as usize;
        match self.phase {
            Phase::SetupSettlement => push_bits64(out, self.open_vertices(), SETTLE),
            Phase::SetupRoad => {
                let v = self.last_vertex as usize;
                push_bits128(out, TOPOLOGY.vertex_edges[v] & !self.all_roads(), ROAD);
            }
            Phase::Roll => {
                out.push(ROLL);
                self.push_dev_plays(out);
            }
            Phase::Discard => {
                if let Some(d) = self.discarder() {
                    for r in 0..RESOURCES {
                        if self.seats[d].hand[r] > 0 {
                            out.push(DISCARD + r as u32);
                        }
                    }
                }
            }
            Phase::MoveRobber => {
                for h in 0..HEXES {
                    if h != self.robber as usize {
                        out.push(ROBBER + h as u32);
                    }
                }
            }
            Phase::Steal => {
                let v = self.victims();
                for q in 0..self.n as usize {
                    if v >> q & 1 == 1 {
                        out.push(STEAL + q as u32);
                    }
                }
            }
            Phase::FreeRoads => push_bits128(out, self.road_spots(p), ROAD),
            Phase::Plenty => {
                for r in 0..RESOURCES {
                    if self.bank[r] > 0 {
                        out.push(TAKE + r as u32);
                    }
                }
            }
            Phase::Main => {
                let s = &self.seats[p];
                let (roads, settlements, cities) = self.pieces_left(p);
                if settlements > 0 && s.can_pay(&SETTLEMENT_COST) {
                    push_bits64(out, self.settlement_spots(p), SETTLE);
                }
                if cities > 0 && s.can_pay(&CITY_COST) {
                    push_bits64(out, s.settlements, CITY);
                }
                if roads > 0 && s.can_pay(&ROAD_COST) {
                    push_bits128(out, self.road_spots(p), ROAD);
                }
                out.push(END);
                if s.can_pay(&DEV_COST) && self.deck.iter().any(|&c| c > 0) {
                    out.push(BUY);
                }
                self.push_dev_plays(out);
                for give in 0..RESOURCES {
                    if s.hand[give] >= s.rate(give) {
                        for get in 0..RESOURCES {
                            if get != give && self.bank[get] > 0 {
                                out.push(TRADE + (give * RESOURCES + get) as u32);
                            }
                        }
                    }
                }
                self.push_offers(out);
            }
            Phase::Answer | Phase::Choose => self.push_replies(out),
            _ => {}
        }
    }

    fn chance_outcomes(&self, out: &mut Vec<(Action, f64)>) {
        out.clear();
        match self.phase {
            Phase::BoardTiles => {
                let mut left = TERRAIN_SET;
                for &t in &self.terrain[..self.count as usize] {
                    left[t as usize] -= 1;
                }
                push_weighted(out, &left);
            }
            Phase::RedHexes => {
                let spots = self.red_spots();
                let k = spots.count_ones() as f64;
                let mut m = spots;
                while m != 0 {
                    out.push((m.trailing_zeros(), 1.0 / k));
                    m &= m - 1;
                }
            }
            Phase::Numbers => push_weighted(out, &self.tokens_left()),
            Phase::Harbours => {
                let mut left = HARBOUR_SET;
                for &h in &self.harbour[..self.count as usize] {
                    left[h as usize] -= 1;
                }
                push_weighted(out, &left);
            }
            Phase::Dice => {
                for sum in 2..=12u32 {
                    let ways = 6 - (sum as i32 - 7).unsigned_abs();
                    out.push((sum, ways as f64 / 36.0));
                }
            }
            Phase::DevCard => push_weighted(out, &self.deck),
            Phase::StealCard => push_weighted(out, &self.seats[self.victim as usize].hand),
            _ => {}
        }
    }

    fn random_action(&self, rng: &mut Rng, buf: &mut Vec<Action>) -> Action {
        // Dice without listing outcomes: two dice, as at the table.
        if self.phase == Phase::Dice {
            return rng.random_range(1..=6u32) + rng.random_range(1..=6u32);
        }
        if self.turn() == Turn::Chance {
            let mut outcomes = Vec::new();
            return meeple_game::draw_chance(self, &mut outcomes, rng);
        }
        self.legal_actions(buf);
        buf[rng.random_range(0..buf.len())]
    }

    fn apply_unchecked(&mut self, action: Action) {
        match self.phase {
            Phase::BoardTiles | Phase::RedHexes | Phase::Numbers | Phase::Harbours => self.apply_board(action),
            Phase::SetupSettlement | Phase::SetupRoad => self.apply_setup(action),
            Phase::Roll => match action {
                ROLL => self.phase = Phase::Dice,
                PLAY_KNIGHT => self.play_knight(Phase::Roll),
                _ => self.play_progress(action, Phase::Roll),
            },
            Phase::Dice => self.apply_roll(action as u8),
            Phase::Discard | Phase::MoveRobber | Phase::Steal | Phase::StealCard => self.apply_robber(action),
            Phase::DevCard | Phase::FreeRoads | Phase::Plenty => self.apply_card(action),
            Phase::Main => self.apply_main(action),
            Phase::Answer | Phase::Choose => self.apply_reply(action),
            Phase::Over => {}
        }
    }

    fn returns(&self) -> Option<Values> {
        if self.phase != Phase::Over {
            return None;
        }
        let n = self.n as usize;
        Some(match self.winner {
            Some(w) => {
                let mut data = [0.0; MAX_PLAYERS];
                data[w as usize] = 1.0;
                Values::from_slice(&data[..n])
            }
            None => Values::filled(n, 1.0 / n as f64),
        })
    }

    fn metrics(&self) -> Vec<(&'static str, f64)> {
        let mut m = vec![("dice_rolls", self.rolls as f64), ("turns", self.turns.min(self.turn_limit) as f64)];
        if self.trades {
            m.push(("player_trades", self.trades_made as f64));
        }
        m
    }

    fn scores(&self) -> Values {
        let data: Vec<f64> = (0..self.n as usize).map(|p| self.points(p) as f64).collect();
        Values::from_slice(&data)
    }

    fn score_scale(&self) -> Option<f32> {
        // Victory points: the winner has 10, the others from 2 up.
        Some(10.0)
    }

    fn observation(&self, player: Player, out: &mut Vec<f32>) {
        out.clear();
        self.observe_board(player, out);
        self.observe_seats(player, out);
        self.observe_table(player, out);
        self.observe_derived(player, out);
        if self.trades {
            self.trade_features(player, out);
        }
    }

    fn observation_string(&self, player: Player) -> String {
        let mut s = render::View(self, player).to_string();
        s.push_str(&format!("development cards of seat {player}: "));
        let cards: Vec<String> = (0..DEV_KINDS)
            .filter(|&k| self.seats[player].dev[k] > 0)
            .map(|k| format!("{} {}", self.seats[player].dev[k], DEV_NAMES[k]))
            .collect();
        s.push_str(&if cards.is_empty() { "none".to_string() } else { cards.join(", ") });
        s.push('\n');
        s
    }

    fn determinize(&self, player: Player, rng: &mut Rng) -> Self {
        self.redeal(player, rng)
    }

    fn zobrist(&self) -> u64 {
        let mut h = rustc_hash::FxHasher::default();
        self.hash(&mut h);
        splitmix64(h.finish())
    }

    fn action_to_string(&self, action: Action) -> String {
        notation::action_to_string(self, action)
    }

    fn action_to_string_for(&self, viewer: Player, action: Action) -> String {
        if self.phase == Phase::DevCard && viewer != self.current as usize {
            return "drew a development card".to_string();
        }
        if self.phase == Phase::StealCard
            && self.hidden_hands
            && viewer != self.current as usize
            && viewer != self.victim as usize
        {
            return "stole a card".to_string();
        }
        self.action_to_string(action)
    }

    fn parse_action(&self, text: &str) -> Result<Action, Error> {
        notation::parse_action(self, text)
    }

    fn prompt(&self) -> Option<String> {
        self.prompt_words()
    }

    fn completed(&self, action: Action) -> Option<Self> {
        self.completed_trade(action)
    }

    fn unanswered(&self) -> Option<Action> {
        (self.phase == Phase::Answer).then_some(DECLINE)
    }

    fn describe_for(&self, viewer: Player, action: Action) -> String {
        self.describe(viewer, action)
    }

    fn illegal_reason(&self, action: Action) -> String {
        self.refusal(action)
    }
}
