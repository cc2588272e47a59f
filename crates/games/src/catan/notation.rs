//! Move notation. Corners are numbered 0-53 and hexes `H0`-`H18` (see [`super::board`]):
//! `S12` settles corner 12, `C12` makes it a city, `R12-17` builds the road between two corners;
//! `roll`, `end`, `buy`; `knight`, `roads` (Road Building), `plenty` (Year of Plenty) then
//! `take:grain` twice, `monopoly:ore`; `robber:H7`, `steal:2` (a seat), `discard:wool`;
//! `trade:brick>ore` (a bank or harbour trade at the player's best rate). With player trading,
//! `offer:wool>ore+ore` offers the other players one wool for two ore (each side's cards in
//! resource order, joined by `+`), `accept` and `decline` answer it, `with:2` trades with seat 2
//! (one that accepted) and `withdraw` takes it back. Chance outcomes:
//! `dice:8`, `card:knight`, `stole:ore`, and for a random board `tile:hills`, `red:H4`,
//! `number:9`, `harbour:wool` / `harbour:any`.

use super::board::{EDGES, HEXES, TOPOLOGY, VERTICES, edge_between};
use super::{
    ACCEPT, BUY, CITY, CatanState, DECLINE, DEV_NAMES, DISCARD, END, MAX_PLAYERS, NUM_ACTIONS, OFFER, OFFERS,
    PLAY_KNIGHT, PLAY_MONOPOLY, PLAY_ROAD_BUILDING, PLAY_YEAR_OF_PLENTY, Phase, RESOURCE_NAMES, RESOURCES, ROAD,
    ROBBER, ROLL, SETTLE, STEAL, TAKE, TERRAIN_NAMES, TRADE, TRADE_WITH, WITHDRAW,
};
use meeple_game::{Action, Error, State, Turn};

const HARBOUR_NAMES: [&str; 6] = ["brick", "lumber", "wool", "grain", "ore", "any"];

pub(crate) fn action_to_string(s: &CatanState, a: Action) -> String {
    if s.turn() == Turn::Chance {
        let i = a as usize;
        return match s.phase {
            Phase::BoardTiles => format!("tile:{}", TERRAIN_NAMES.get(i).unwrap_or(&"?")),
            Phase::RedHexes => format!("red:H{a}"),
            Phase::Numbers => format!("number:{a}"),
            Phase::Harbours => format!("harbour:{}", HARBOUR_NAMES.get(i).unwrap_or(&"?")),
            Phase::Dice => format!("dice:{a}"),
            Phase::DevCard => format!("card:{}", DEV_NAMES.get(i).unwrap_or(&"?")),
            Phase::StealCard => format!("stole:{}", RESOURCE_NAMES.get(i).unwrap_or(&"?")),
            _ => format!("chance:{a}"),
        };
    }
    let r = |base: Action| RESOURCE_NAMES[((a - base) as usize).min(RESOURCES - 1)];
    match a {
        a if a < CITY => format!("S{}", a - SETTLE),
        a if a < ROAD => format!("C{}", a - CITY),
        a if a < ROLL => {
            let (x, y) = TOPOLOGY.edge_vertices[(a - ROAD) as usize];
            format!("R{x}-{y}")
        }
        ROLL => "roll".into(),
        END => "end".into(),
        BUY => "buy".into(),
        PLAY_KNIGHT => "knight".into(),
        PLAY_ROAD_BUILDING => "roads".into(),
        PLAY_YEAR_OF_PLENTY => "plenty".into(),
        a if a < TAKE => format!("monopoly:{}", r(PLAY_MONOPOLY)),
        a if a < ROBBER => format!("take:{}", r(TAKE)),
        a if a < STEAL => format!("robber:H{}", a - ROBBER),
        a if a < DISCARD => format!("steal:{}", a - STEAL),
        a if a < TRADE => format!("discard:{}", r(DISCARD)),
        a if a < NUM_ACTIONS => {
            let k = (a - TRADE) as usize;
            format!("trade:{}>{}", RESOURCE_NAMES[k / RESOURCES], RESOURCE_NAMES[k % RESOURCES])
        }
        a if a < ACCEPT => {
            let o = OFFERS[(a - OFFER) as usize];
            format!("offer:{}>{}", cards(&o.give), cards(&o.get))
        }
        ACCEPT => "accept".into(),
        DECLINE => "decline".into(),
        a if a < WITHDRAW => format!("with:{}", a - TRADE_WITH),
        WITHDRAW => "withdraw".into(),
        _ => format!("action{a}"),
    }
}

/// Cards as notation writes them: each card's resource, in resource order, joined by `+`.
fn cards(c: &[u8; RESOURCES]) -> String {
    let mut names = Vec::new();
    for r in 0..RESOURCES {
        for _ in 0..c[r] {
            names.push(RESOURCE_NAMES[r]);
        }
    }
    names.join("+")
}

fn bad(text: &str, reason: impl Into<String>) -> Error {
    Error::BadNotation { text: text.to_string(), reason: reason.into() }
}

fn index_of(names: &[&str], name: &str, text: &str, what: &str) -> Result<usize, Error> {
    names
        .iter()
        .position(|&n| n == name)
        .ok_or_else(|| bad(text, format!("unknown {what} '{name}'; accepted: {}", names.join(", "))))
}

fn number(text: &str, s: &str, what: &str, below: usize) -> Result<usize, Error> {
    match s.parse::<usize>() {
        Ok(v) if v < below => Ok(v),
        _ => Err(bad(text, format!("{what} must be 0-{}", below - 1))),
    }
}

fn hex(text: &str, s: &str) -> Result<usize, Error> {
    let digits = s.strip_prefix('H').or_else(|| s.strip_prefix('h')).ok_or_else(|| bad(text, "a hex is H0-H18"))?;
    number(text, digits, "a hex", HEXES)
}

pub(crate) fn parse_action(_s: &CatanState, text: &str) -> Result<Action, Error> {
    let t = text.trim();
    let res = |name: &str| index_of(&RESOURCE_NAMES, name, t, "resource").map(|r| r as Action);
    if let Some((kind, arg)) = t.split_once(':') {
        return match kind {
            "monopoly" => Ok(PLAY_MONOPOLY + res(arg)?),
            "take" => Ok(TAKE + res(arg)?),
            "discard" => Ok(DISCARD + res(arg)?),
            "robber" => Ok(ROBBER + hex(t, arg)? as Action),
            "steal" => Ok(STEAL + number(t, arg, "a seat", MAX_PLAYERS)? as Action),
            "trade" => {
                let (give, get) = arg.split_once('>').ok_or_else(|| bad(t, "a trade is trade:GIVE>GET"))?;
                let (give, get) = (res(give)?, res(get)?);
                if give == get {
                    return Err(bad(t, "a trade needs two different resources"));
                }
                Ok(TRADE + give * RESOURCES as Action + get)
            }
            "offer" => {
                let (give, get) =
                    arg.split_once('>').ok_or_else(|| bad(t, "an offer is offer:GIVE>GET, e.g. offer:wool>ore+ore"))?;
                let side = |text: &str| -> Result<[u8; RESOURCES], Error> {
                    let mut c = [0u8; RESOURCES];
                    for name in text.split('+') {
                        c[res(name)? as usize] += 1;
                    }
                    Ok(c)
                };
                let (give, get) = (side(give)?, side(get)?);
                OFFERS.iter().position(|o| o.give == give && o.get == get).map(|k| OFFER + k as Action).ok_or_else(
                    || {
                        bad(
                            t,
                            "offers are one card for one, one for two or two for one, with no resource on both sides",
                        )
                    },
                )
            }
            "with" => Ok(TRADE_WITH + number(t, arg, "a seat", MAX_PLAYERS)? as Action),
            "tile" => Ok(index_of(&TERRAIN_NAMES, arg, t, "terrain")? as Action),
            "red" => Ok(hex(t, arg)? as Action),
            "number" => match arg.parse::<u32>() {
                Ok(v) if (2..=12).contains(&v) && v != 7 => Ok(v),
                _ => Err(bad(t, "a number token is 2-6 or 8-12")),
            },
            "harbour" => Ok(index_of(&HARBOUR_NAMES, arg, t, "harbour")? as Action),
            "dice" => match arg.parse::<u32>() {
                Ok(v) if (2..=12).contains(&v) => Ok(v),
                _ => Err(bad(t, "dice sum to 2-12")),
            },
            "card" => Ok(index_of(&DEV_NAMES, arg, t, "development card")? as Action),
            "stole" => Ok(res(arg)?),
            _ => Err(bad(t, format!("unknown move kind '{kind}'"))),
        };
    }
    match t {
        "roll" => return Ok(ROLL),
        "end" => return Ok(END),
        "buy" => return Ok(BUY),
        "knight" => return Ok(PLAY_KNIGHT),
        "roads" => return Ok(PLAY_ROAD_BUILDING),
        "plenty" => return Ok(PLAY_YEAR_OF_PLENTY),
        "accept" => return Ok(ACCEPT),
        "decline" => return Ok(DECLINE),
        "withdraw" => return Ok(WITHDRAW),
        _ => {}
    }
    let mut chars = t.chars();
    match chars.next() {
        Some('S') | Some('s') => Ok(SETTLE + number(t, chars.as_str(), "a corner", VERTICES)? as Action),
        Some('C') | Some('c') => Ok(CITY + number(t, chars.as_str(), "a corner", VERTICES)? as Action),
        Some('R') | Some('r') => {
            let (a, b) = chars.as_str().split_once('-').ok_or_else(|| bad(t, "a road is R<corner>-<corner>"))?;
            let (a, b) = (number(t, a, "a corner", VERTICES)?, number(t, b, "a corner", VERTICES)?);
            let e = edge_between(a, b).ok_or_else(|| bad(t, format!("corners {a} and {b} are not adjacent")))?;
            debug_assert!(e < EDGES);
            Ok(ROAD + e as Action)
        }
        _ => Err(bad(
            t,
            "expected S<corner>, C<corner>, R<corner>-<corner>, roll, end, buy, knight, roads, plenty, monopoly:R, \
             take:R, robber:H<n>, steal:<seat>, discard:R, trade:R>R, offer:R>R+R, accept, decline, with:<seat>, withdraw, \
             or a chance outcome (dice:8, card:knight, ...)",
        )),
    }
}
