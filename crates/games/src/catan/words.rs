//! Catan for people: what the player to move is asked to do, moves in words, and which rule a
//! refused move breaks (the terminal and the page say it, not "action id 228 is not legal").

use super::board::{HEXES, TOPOLOGY};
use super::{
    ACCEPT, BUY, CITY, CITY_COST, CatanState, DECLINE, DEV_COST, DEV_NAMES, DISCARD, END, NUM_ACTIONS,
    NUM_ACTIONS_TRADING, OFFER, OFFERS, Offer, PLAY_KNIGHT, PLAY_MONOPOLY, PLAY_ROAD_BUILDING, PLAY_YEAR_OF_PLENTY,
    Phase, RESOURCE_NAMES, RESOURCES, ROAD, ROAD_COST, ROBBER, ROLL, SETTLE, SETTLEMENT_COST, STEAL, TAKE,
    TERRAIN_NAMES, TRADE, TRADE_WITH, WITHDRAW,
};
use meeple_game::{Action, Player, State, Turn};

const DEV_WORDS: [&str; 5] = ["knight", "Road Building", "Year of Plenty", "Monopoly", "victory point"];

fn cost(c: &[u8; RESOURCES]) -> String {
    let parts: Vec<String> =
        (0..RESOURCES).filter(|&r| c[r] > 0).map(|r| format!("{} {}", c[r], RESOURCE_NAMES[r])).collect();
    parts.join(", ")
}

/// An offer in words: "1 wool for 2 ore".
pub(crate) fn offer_words(o: &Offer) -> String {
    let side = |c: &[u8; RESOURCES]| {
        let parts: Vec<String> =
            (0..RESOURCES).filter(|&r| c[r] > 0).map(|r| format!("{} {}", c[r], RESOURCE_NAMES[r])).collect();
        parts.join(" and ")
    };
    format!("{} for {}", side(&o.give), side(&o.get))
}

fn seats(mask: u8) -> String {
    let list: Vec<String> = (0..8).filter(|q| mask >> q & 1 == 1).map(|q| q.to_string()).collect();
    match list.len() {
        1 => format!("seat {}", list[0]),
        _ => format!("seats {}", list.join(", ")),
    }
}

fn plural(n: u8, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl CatanState {
    fn hex_words(&self, h: usize) -> String {
        let terrain = TERRAIN_NAMES.get(self.terrain[h] as usize).copied().unwrap_or("?");
        match self.number[h] {
            0 => format!("H{h} ({terrain})"),
            n => format!("H{h} ({terrain} {n})"),
        }
    }

    pub(crate) fn prompt_words(&self) -> Option<String> {
        let p = self.current as usize;
        Some(match self.phase {
            Phase::SetupSettlement => "Place a starting settlement on a free corner".into(),
            Phase::SetupRoad => "Place a road next to the settlement you just placed".into(),
            Phase::Roll => {
                let mut plays = Vec::new();
                self.push_dev_plays(&mut plays);
                if plays.is_empty() {
                    "Roll the dice".into()
                } else {
                    "Roll the dice (or play a development card first)".into()
                }
            }
            Phase::Discard => {
                let d = self.discarder().unwrap_or(p);
                format!(
                    "Discard {}: you hold more than 7 (one card at a time)",
                    plural(self.discards[d], "card", "cards")
                )
            }
            Phase::MoveRobber => "Move the robber to another hex".into(),
            Phase::Steal => "Choose a player to rob (one with a building by the robber)".into(),
            Phase::Main => "Build, buy, trade or play a card; end your turn when done".into(),
            Phase::Answer => {
                let o = &OFFERS[self.offer as usize];
                let hand = &self.seats[self.responder as usize].hand;
                // Whoever cannot pay is told why, not offered a choice it does not have; the
                // prompt is everyone's, so only where hands are open to all.
                let short = (0..RESOURCES).find(|&r| hand[r] < o.get[r]).filter(|_| !self.hidden_hands);
                match short {
                    None => format!("Seat {p} offers {}: accept or decline", offer_words(o)),
                    Some(r) => format!(
                        "Seat {p} offers {}: you cannot accept (you hold {} {}); decline",
                        offer_words(o),
                        hand[r],
                        RESOURCE_NAMES[r]
                    ),
                }
            }
            Phase::Choose => format!(
                "{} accepted your offer of {}: trade with one of them or withdraw it",
                seats(self.accepted),
                offer_words(&OFFERS[self.offer as usize])
            ),
            Phase::FreeRoads => format!("Road Building: place {}", plural(self.count, "free road", "free roads")),
            Phase::Plenty => {
                format!("Year of Plenty: take {} from the bank", plural(self.count, "resource", "resources"))
            }
            _ => return None,
        })
    }

    pub(crate) fn describe(&self, viewer: Player, a: Action) -> String {
        if self.turn() == Turn::Chance {
            let i = a as usize;
            return match self.phase {
                Phase::Dice => format!("dice: {a}"),
                Phase::DevCard if viewer != self.current as usize => "drew a development card".into(),
                Phase::DevCard => format!("drew a {}", DEV_WORDS.get(i).unwrap_or(&"?")),
                Phase::StealCard => {
                    let hidden = self.hidden_hands && viewer != self.current as usize && viewer != self.victim as usize;
                    if hidden {
                        format!("took a card from seat {}", self.victim)
                    } else {
                        format!("took {} from seat {}", RESOURCE_NAMES.get(i).unwrap_or(&"?"), self.victim)
                    }
                }
                _ => format!("board: {}", self.action_to_string(a)),
            };
        }
        let r = |base: Action| RESOURCE_NAMES[((a - base) as usize).min(RESOURCES - 1)];
        match a {
            a if a < CITY => format!("settlement at corner {}", a - SETTLE),
            a if a < ROAD => format!("city at corner {}", a - CITY),
            a if a < ROLL => {
                let (x, y) = TOPOLOGY.edge_vertices[(a - ROAD) as usize];
                format!("road {x}–{y}")
            }
            ROLL => "roll the dice".into(),
            END => "end the turn".into(),
            BUY => "buy a development card".into(),
            PLAY_KNIGHT => "play a knight".into(),
            PLAY_ROAD_BUILDING => "play Road Building".into(),
            PLAY_YEAR_OF_PLENTY => "play Year of Plenty".into(),
            a if a < TAKE => format!("play Monopoly on {}", r(PLAY_MONOPOLY)),
            a if a < ROBBER => format!("take {}", r(TAKE)),
            a if a < STEAL => format!("robber to {}", self.hex_words((a - ROBBER) as usize)),
            a if a < DISCARD => format!("rob seat {}", a - STEAL),
            a if a < TRADE => format!("discard {}", r(DISCARD)),
            a if a < NUM_ACTIONS => {
                let k = (a - TRADE) as usize;
                let (give, get) = (k / RESOURCES, k % RESOURCES);
                let rate = self.seats[self.current as usize].rate(give);
                format!("trade {rate} {} for 1 {}", RESOURCE_NAMES[give], RESOURCE_NAMES[get])
            }
            a if a < ACCEPT => format!("offer {}", offer_words(&OFFERS[(a - OFFER) as usize])),
            ACCEPT => format!("accept seat {}'s offer of {}", self.current, offer_words(&OFFERS[self.offer as usize])),
            DECLINE => format!("decline seat {}'s offer", self.current),
            a if a < WITHDRAW => {
                format!("trade {} with seat {}", offer_words(&OFFERS[self.offer as usize]), a - TRADE_WITH)
            }
            WITHDRAW => "withdraw the offer".into(),
            _ => self.action_to_string(a),
        }
    }

    /// Which rule the move breaks, in words.
    pub(crate) fn refusal(&self, a: Action) -> String {
        let p = self.current as usize;
        let me = &self.seats[p];
        let all = if self.trades { NUM_ACTIONS_TRADING } else { NUM_ACTIONS };
        let shown = if a < all { self.describe(p, a) } else { format!("action {a}") };
        let now = self.prompt_words().unwrap_or_else(|| "wait".into());
        let why = |rule: String| format!("{shown}: {rule}");
        let phase_move = match self.phase {
            Phase::SetupSettlement => a < CITY,
            Phase::SetupRoad | Phase::FreeRoads => (ROAD..ROLL).contains(&a),
            Phase::Roll => (ROLL..TAKE).contains(&a) && a != END && a != BUY,
            Phase::Discard => (DISCARD..TRADE).contains(&a),
            Phase::MoveRobber => (ROBBER..STEAL).contains(&a),
            Phase::Steal => (STEAL..DISCARD).contains(&a),
            Phase::Plenty => (TAKE..ROBBER).contains(&a),
            Phase::Main => !(a == ROLL || (TAKE..DISCARD).contains(&a) || (DISCARD..TRADE).contains(&a) || a >= ACCEPT),
            Phase::Answer => a == ACCEPT || a == DECLINE,
            Phase::Choose => a >= TRADE_WITH,
            _ => false,
        };
        if (NUM_ACTIONS..NUM_ACTIONS_TRADING).contains(&a) && !self.trades {
            return format!("{}: this game has no player-to-player trading (trades=false)", self.action_to_string(a));
        }
        if a >= all {
            return format!("action id {a} is not a Catan move");
        }
        if !phase_move {
            return why(format!("not now — {}", now.to_lowercase()));
        }
        let occupied = self.occupied();
        let (roads, settlements, cities) = self.pieces_left(p);
        match a {
            a if a < CITY => {
                let v = (a - SETTLE) as usize;
                if occupied >> v & 1 == 1 {
                    why("that corner is taken".into())
                } else if self.open_vertices() >> v & 1 == 0 {
                    why("too close to another settlement (no building may stand on a corner next to one)".into())
                } else if self.phase == Phase::Main && me.road_ends >> v & 1 == 0 {
                    why("a settlement must touch one of your roads".into())
                } else if settlements == 0 {
                    why("you have no settlements left (build a city to free one)".into())
                } else {
                    why(format!("a settlement costs {}", cost(&SETTLEMENT_COST)))
                }
            }
            a if a < ROAD => {
                let v = (a - CITY) as usize;
                if me.settlements >> v & 1 == 0 {
                    why("a city replaces one of your own settlements".into())
                } else if cities == 0 {
                    why("you have no cities left".into())
                } else {
                    why(format!("a city costs {}", cost(&CITY_COST)))
                }
            }
            a if a < ROLL => {
                let e = (a - ROAD) as usize;
                if self.all_roads() >> e & 1 == 1 {
                    why("that edge has a road".into())
                } else if self.phase == Phase::SetupRoad {
                    why("the starting road must touch the settlement just placed".into())
                } else if self.road_spots(p) >> e & 1 == 0 {
                    why("a road must join your road or building (not through another player's building)".into())
                } else if roads == 0 {
                    why("you have no roads left".into())
                } else {
                    why(format!("a road costs {}", cost(&ROAD_COST)))
                }
            }
            BUY if self.deck.iter().all(|&c| c == 0) => why("the development cards are all gone".into()),
            BUY => why(format!("a development card costs {}", cost(&DEV_COST))),
            PLAY_KNIGHT | PLAY_ROAD_BUILDING | PLAY_YEAR_OF_PLENTY | PLAY_MONOPOLY..TAKE => {
                let kind = match a {
                    PLAY_KNIGHT => 0,
                    PLAY_ROAD_BUILDING => 1,
                    PLAY_YEAR_OF_PLENTY => 2,
                    _ => 3,
                };
                if self.played_dev {
                    why("one development card a turn".into())
                } else if me.dev[kind] > 0 {
                    why(format!("a {} bought this turn is played from the next turn on", DEV_WORDS[kind]))
                } else {
                    why(format!("you hold no {} card", DEV_NAMES[kind].replace('_', " ")))
                }
            }
            a if a < ROBBER => why(format!("the bank has no {} left", RESOURCE_NAMES[(a - TAKE) as usize])),
            a if a < STEAL => {
                let h = (a - ROBBER) as usize;
                if h >= HEXES { why("no such hex".into()) } else { why("the robber must move to another hex".into()) }
            }
            a if a < DISCARD => {
                why("only a player with a building by the robber and a card in hand can be robbed".into())
            }
            a if a < TRADE => why(format!("you hold no {}", RESOURCE_NAMES[(a - DISCARD) as usize])),
            a if (OFFER..ACCEPT).contains(&a) => {
                let k = (a - OFFER) as usize;
                if self.offers_made >= self.offers_per_turn {
                    why(format!(
                        "{} a turn (offers={})",
                        plural(self.offers_per_turn, "offer", "offers"),
                        self.offers_per_turn
                    ))
                } else if self.declined >> k & 1 == 1 {
                    why("nobody took that offer this turn, so it is not made again".into())
                } else {
                    why("you can only offer cards you hold".into())
                }
            }
            ACCEPT => why("you do not hold the cards asked for".into()),
            a if (TRADE_WITH..WITHDRAW).contains(&a) => {
                why(format!("seat {} did not accept the offer", a - TRADE_WITH))
            }
            a if a >= NUM_ACTIONS => why("not now".into()),
            _ => {
                let k = (a - TRADE) as usize;
                let (give, get) = (k / RESOURCES, k % RESOURCES);
                if give == get {
                    why("a trade gives one resource for another".into())
                } else if me.hand[give] < me.rate(give) {
                    why(format!("you need {} {} to trade at your rate", me.rate(give), RESOURCE_NAMES[give]))
                } else {
                    why(format!("the bank has no {} left", RESOURCE_NAMES[get]))
                }
            }
        }
    }
}
