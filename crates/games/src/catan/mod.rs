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

pub mod board;
mod eval;
mod notation;
#[cfg(test)]
mod tests;
mod trade;
mod words;

pub(crate) use trade::{ACCEPT, DECLINE, OFFER, TRADE_FEATURES, TRADE_WITH, WITHDRAW};
pub use trade::{NUM_ACTIONS_TRADING, OFFER_KINDS, OFFERS, Offer};

pub use eval::{CatanValue, ValueAgent, WeightedRandom};

use board::{EDGES, HARBOURS, HEXES, TOPOLOGY, VERTICES};
use meeple_game::{
    Action, AgentInfo, BoxedAgent, BoxedEvaluator, Error, Game, GameInfo, ParamInfo, Player, Rng, RulesSection, Spec,
    State, Turn, Values, sample_chance, zobrist::splitmix64,
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

    fn occupied(&self) -> u64 {
        self.seats.iter().fold(0, |m, s| m | s.buildings())
    }

    fn all_roads(&self) -> u128 {
        self.seats.iter().fold(0, |m, s| m | s.roads)
    }

    /// Corners where a settlement would satisfy the distance rule.
    fn open_vertices(&self) -> u64 {
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
    fn road_spots(&self, seat: usize) -> u128 {
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

    fn settlement_spots(&self, seat: usize) -> u64 {
        self.open_vertices() & self.seats[seat].road_ends
    }

    fn pieces_left(&self, seat: usize) -> (u8, u8, u8) {
        let s = &self.seats[seat];
        (
            ROADS - s.roads.count_ones() as u8,
            SETTLEMENTS - s.settlements.count_ones() as u8,
            CITIES - s.cities.count_ones() as u8,
        )
    }

    /// Lays out derived board facts once tiles and numbers are known: the robber on the desert.
    fn finish_board(&mut self) {
        self.robber = self.terrain.iter().position(|&t| t == DESERT).unwrap_or(0) as u8;
        self.phase = Phase::SetupSettlement;
        self.count = 0;
        self.current = 0;
    }

    /// Seat placing setup settlement `k` (snake order).
    fn setup_seat(&self, k: u8) -> u8 {
        if k < self.n { k } else { 2 * self.n - 1 - k }
    }

    fn pay(&mut self, seat: usize, cost: &[u8; RESOURCES]) {
        for r in 0..RESOURCES {
            self.seats[seat].hand[r] -= cost[r];
            self.bank[r] += cost[r];
        }
    }

    fn place_settlement(&mut self, seat: usize, v: usize) {
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

    fn place_road(&mut self, seat: usize, e: usize) {
        let (a, b) = TOPOLOGY.edge_vertices[e];
        let s = &mut self.seats[seat];
        s.roads |= 1 << e;
        s.road_ends |= 1 << a | 1 << b;
        self.update_longest(seat);
        self.award_road();
    }

    fn update_longest(&mut self, seat: usize) {
        let blocked = self.occupied() & !self.seats[seat].buildings();
        self.seats[seat].longest = longest_road(self.seats[seat].roads, blocked);
    }

    /// The rulebook's Longest Road: 5 roads at least; the holder keeps it while nobody is
    /// strictly longer; when the holder falls behind, the single longest seat takes it, and on a
    /// tie for the lead (or nobody at 5) it is set aside.
    fn award_road(&mut self) {
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
    fn check_win(&mut self) {
        let p = self.current as usize;
        if self.points(p) >= self.win_points {
            self.winner = Some(p as u8);
            self.phase = Phase::Over;
        }
    }

    fn start_turn(&mut self, seat: u8) {
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

    fn produce(&mut self, roll: u8) {
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
    fn victims(&self) -> u8 {
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

    fn after_robber_moved(&mut self) {
        let v = self.victims();
        if v == 0 {
            self.phase = self.resume;
        } else {
            self.phase = Phase::Steal;
        }
    }

    /// The next seat that still has to discard, in turn order from the current seat.
    fn discarder(&self) -> Option<usize> {
        let n = self.n as usize;
        (0..n).map(|k| (self.current as usize + k) % n).find(|&p| self.discards[p] > 0)
    }

    fn after_discards(&mut self) {
        if self.discarder().is_none() {
            self.resume = Phase::Main;
            self.phase = Phase::MoveRobber;
        }
    }

    fn next_number_hex(&self) -> Option<usize> {
        (0..HEXES).find(|&h| self.terrain[h] != DESERT && self.number[h] == 0)
    }

    /// Red hexes allowed for the next 6 or 8: producing, without a token, not next to a red.
    fn red_spots(&self) -> u32 {
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

    fn tokens_left(&self) -> [u8; 13] {
        let mut left = TOKENS;
        for h in 0..HEXES {
            if self.number[h] != 0 {
                left[self.number[h] as usize] -= 1;
            }
        }
        left
    }

    fn is_free_road_possible(&self) -> bool {
        let seat = self.current as usize;
        self.pieces_left(seat).0 > 0 && self.road_spots(seat) != 0
    }
}

/// Chance outcomes `0..counts.len()`, each as likely as its count (zero counts left out).
fn push_weighted(out: &mut Vec<(Action, f64)>, counts: &[u8]) {
    let total: u32 = counts.iter().map(|&c| c as u32).sum();
    for (k, &c) in counts.iter().enumerate() {
        if c > 0 {
            out.push((k as Action, c as f64 / total as f64));
        }
    }
}

/// A random index of `counts`, each as likely as its count (the counts may not all be zero).
fn draw(counts: &[u8], rng: &mut Rng) -> usize {
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
pub(crate) fn longest_road(roads: u128, blocked: u64) -> u8 {
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
        use serde_json::json;
        let n = self.n as usize;
        let bits64 = |m: u64| (0..64u32).filter(move |i| m >> i & 1 == 1);
        let hexes: Vec<serde_json::Value> = (0..HEXES)
            .map(|h| {
                let (q, r) = board::HEX_COORDS[h];
                json!({ "q": q, "r": r, "terrain": TERRAIN_NAMES.get(self.terrain[h] as usize), "number": self.number[h] })
            })
            .collect();
        let kinds = ["brick", "lumber", "wool", "grain", "ore", "3:1"];
        let harbours: Vec<serde_json::Value> = (0..HARBOURS)
            .map(|i| json!({ "kind": kinds.get(self.harbour[i] as usize), "vertices": TOPOLOGY.harbour_vertices[i] }))
            .collect();
        let mut vertices: Vec<Option<serde_json::Value>> = vec![None; VERTICES];
        let mut edges: Vec<Option<usize>> = vec![None; EDGES];
        for p in 0..n {
            let seat = &self.seats[p];
            for v in bits64(seat.settlements) {
                vertices[v as usize] = Some(json!({ "owner": p, "city": false }));
            }
            for v in bits64(seat.cities) {
                vertices[v as usize] = Some(json!({ "owner": p, "city": true }));
            }
            for (e, slot) in edges.iter_mut().enumerate() {
                if seat.roads >> e & 1 == 1 {
                    *slot = Some(p);
                }
            }
        }
        let players: Vec<serde_json::Value> = (0..n)
            .map(|p| {
                let seat = &self.seats[p];
                let own = viewer == Some(p);
                // A spectator is nobody's witness: it misses every unseen steal.
                let (hand, unseen) = self.visible_hand(viewer.unwrap_or(usize::MAX), p);
                let dev = own.then(|| {
                    (0..DEV_KINDS)
                        .filter(|&k| seat.dev[k] > 0)
                        .map(|k| json!({ "kind": DEV_NAMES[k], "count": seat.dev[k], "new": seat.fresh[k] }))
                        .collect::<Vec<_>>()
                });
                json!({
                    "points": if own { self.points(p) } else { self.public_points(p) },
                    "cards": seat.cards(), "hand": hand, "unseen": unseen, "dev_cards": seat.dev_cards(), "dev": dev,
                    "knights": seat.knights, "road_length": seat.longest, "discard": self.discards[p],
                })
            })
            .collect();
        let phase = format!("{:?}", self.phase).to_lowercase();
        let trade = self.trades.then(|| self.trade_view());
        let geometry = json!({
            "vertex_xy": TOPOLOGY.vertex_xy.to_vec(), "edge_vertices": TOPOLOGY.edge_vertices.to_vec(),
        });
        json!({
            "hexes": hexes, "harbours": harbours, "robber": self.robber, "vertices": vertices, "edges": edges,
            "players": players, "current": self.current, "phase": phase, "last_roll": self.last_roll,
            "bank": self.bank, "dev_deck": self.deck.iter().sum::<u8>(), "army": self.army, "road": self.road,
            "turns": self.turns, "win_points": self.win_points, "resources": RESOURCE_NAMES, "geometry": geometry,
            "trade": trade,
        })
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
            self.chance_outcomes(&mut outcomes);
            return sample_chance(&outcomes, rng);
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
        let mut s = View(self, player).to_string();
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

impl CatanState {
    fn play_knight(&mut self, back: Phase) {
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
    fn push_dev_plays(&self, out: &mut Vec<Action>) {
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
    fn play_progress(&mut self, action: Action, back: Phase) {
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

    fn apply_main(&mut self, action: Action) {
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

    /// The observation's board: each hex's terrain, number and robber; each corner's and
    /// road's owner, seats counted from the viewer.
    fn observe_board(&self, player: Player, out: &mut Vec<f32>) {
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
    fn observe_seats(&self, player: Player, out: &mut Vec<f32>) {
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
    fn observe_table(&self, player: Player, out: &mut Vec<f32>) {
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
    fn observe_derived(&self, player: Player, out: &mut Vec<f32>) {
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

    /// The board being laid out (a shuffled board's tiles, numbers and harbours, chance's picks).
    fn apply_board(&mut self, action: Action) {
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
    fn apply_setup(&mut self, action: Action) {
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
    fn apply_robber(&mut self, action: Action) {
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
    fn apply_card(&mut self, action: Action) {
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
    fn apply_roll(&mut self, roll: u8) {
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

impl fmt::Display for CatanState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.render(f, None)
    }
}

/// The position as one seat sees it.
struct View<'a>(&'a CatanState, usize);

impl fmt::Display for View<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.render(f, Some(self.1))
    }
}

impl CatanState {
    /// The island as a map a person can read moves off: every corner by the number notation
    /// uses (`S12` settles corner 12, `R12-17` builds the road from 12 to 17), each hex with
    /// its name (`H7`, for `robber:H7`), terrain and number; a settlement is the owner's seat
    /// letter after the corner's number (a-d), a city the capital (A-D), a road its sides
    /// drawn in that letter, the robber `robber`.
    pub fn map(&self) -> String {
        const W: usize = 62;
        const H: usize = 33;
        let mut grid = vec![[b' '; W]; H];
        // Grid points (x, y) with hex centres at (2q + r, 3r): x in -7..=7, y in -8..=8.
        let at = |x: i32, y: i32| (((y + 8) * 2) as usize, ((x + 7) * 4 + 2) as usize);
        let seat_letter = |p: usize| b'a' + p as u8;
        let owner = |mask: fn(&Seat) -> u128, bit: u32| -> Option<usize> {
            (0..self.n as usize).find(|&p| mask(&self.seats[p]) >> bit & 1 == 1)
        };
        for (e, &(a, b)) in TOPOLOGY.edge_vertices.iter().enumerate() {
            let (pa, pb) = (TOPOLOGY.vertex_xy[a as usize], TOPOLOGY.vertex_xy[b as usize]);
            let road = owner(|s| s.roads, e as u32).map(seat_letter);
            let (ra, ca) = at(pa.0, pa.1);
            let (rb, cb) = at(pb.0, pb.1);
            if ca == cb {
                for row in grid.iter_mut().take(ra.max(rb)).skip(ra.min(rb) + 1) {
                    row[ca] = road.unwrap_or(b'|');
                }
            } else {
                // A diagonal side: one character halfway, leaning with the side.
                let (r, c) = ((ra + rb) / 2, (ca + cb) / 2);
                let falling = (cb > ca) == (rb > ra);
                grid[r][c] = road.unwrap_or(if falling { b'\\' } else { b'/' });
            }
        }
        for v in 0..VERTICES {
            let (x, y) = TOPOLOGY.vertex_xy[v];
            let (r, c) = at(x, y);
            let label = v.to_string();
            let start = c + 1 - label.len();
            grid[r][start..=c].copy_from_slice(label.as_bytes());
            let settlement = owner(|s| s.settlements as u128, v as u32).map(seat_letter);
            let city = owner(|s| s.cities as u128, v as u32).map(|p| seat_letter(p).to_ascii_uppercase());
            if let Some(mark) = city.or(settlement) {
                grid[r][c + 1] = mark;
            }
        }
        for h in 0..HEXES {
            let (q, rr) = board::HEX_COORDS[h];
            let (r, c) = at(2 * q + rr, 3 * rr);
            let mut put = |row: usize, text: &str| {
                let start = c - text.len() / 2;
                grid[row][start..start + text.len()].copy_from_slice(text.as_bytes());
            };
            put(r - 1, &format!("H{h}"));
            let terrain = &TERRAIN_NAMES[self.terrain[h] as usize][..3];
            match self.number[h] {
                0 => put(r, terrain),
                n => put(r, &format!("{terrain} {n}")),
            }
            if h == self.robber as usize {
                put(r + 1, "robber");
            }
        }
        let mut out = String::new();
        for row in grid {
            out.push_str(String::from_utf8_lossy(&row).trim_end());
            out.push('\n');
        }
        out.push_str(
            "hil=hills (brick) for=forest (lumber) pas=pasture (wool) fie=fields (grain) mou=mountains (ore) \
             des=desert\ncorners by number: S12 settles 12, C12 builds a city there, R12-17 the road 12-17; after a \
             number, a-d is seat 0-3's settlement, A-D a city; roads drawn in their seat's letter\n",
        );
        out
    }

    /// Board and seats; with a `viewer`, hands as that seat knows them.
    fn render(&self, f: &mut fmt::Formatter<'_>, viewer: Option<usize>) -> fmt::Result {
        f.write_str(&self.map())?;
        let kinds = ["brick", "lumber", "wool", "grain", "ore", "3:1"];
        let harbours: Vec<String> = (0..HARBOURS)
            .map(|i| {
                let (a, b) = TOPOLOGY.harbour_vertices[i];
                format!("{}@{a}-{b}", kinds[self.harbour[i] as usize])
            })
            .collect();
        writeln!(f, "harbours: {}", harbours.join(" "))?;
        for p in 0..self.n as usize {
            let s = &self.seats[p];
            let list = |m: u64| {
                let mut v = Vec::new();
                let mut m = m;
                while m != 0 {
                    v.push(m.trailing_zeros().to_string());
                    m &= m - 1;
                }
                v.join(",")
            };
            let mut roads = Vec::new();
            let mut m = s.roads;
            while m != 0 {
                let (a, b) = TOPOLOGY.edge_vertices[m.trailing_zeros() as usize];
                roads.push(format!("{a}-{b}"));
                m &= m - 1;
            }
            let (hand, unknown) = self.visible_hand(viewer.unwrap_or(p), p);
            let unknown = if unknown > 0 { format!(" +{unknown} unseen") } else { String::new() };
            writeln!(
                f,
                "seat {p}{}: {} points, cards {} (brick {} lumber {} wool {} grain {} ore {}{unknown}), {} development \
                 cards, {} knights, road {}{}{}; settlements [{}] cities [{}] roads [{}]",
                if p == self.current as usize { " (to move)" } else { "" },
                self.public_points(p),
                s.cards(),
                hand[0],
                hand[1],
                hand[2],
                hand[3],
                hand[4],
                s.dev_cards(),
                s.knights,
                s.longest,
                if self.road == Some(p as u8) { ", longest road" } else { "" },
                if self.army == Some(p as u8) { ", largest army" } else { "" },
                list(s.settlements),
                list(s.cities),
                roads.join(",")
            )?;
        }
        writeln!(
            f,
            "bank {:?}, development deck {}, turn {}, dice rolls {}, last roll {}",
            self.bank,
            self.deck.iter().sum::<u8>(),
            self.turns,
            self.rolls,
            self.last_roll
        )
    }
}
