//! Trading between players (`trades=true`): the offers a mover may put on the table, each other
//! seat's answer in turn order, the mover's choice among those who accepted, and what the table
//! learns from it when hands are hidden. The base game meets it at one hook per step: the main
//! phase's legal offers ([`CatanState::push_offers`]), the answer and choice phases' actions
//! ([`CatanState::push_replies`], [`CatanState::apply_reply`]), an offer made
//! ([`CatanState::put_offer`]), a new turn ([`CatanState::new_turn_offers`]) and the
//! observation ([`CatanState::trade_features`]).

// Seats and resources are small index spaces shared by several arrays.
#![allow(clippy::needless_range_loop)]

use super::{CatanState, MAX_PLAYERS, NUM_ACTIONS, Phase, RESOURCES};
use meeple_game::{Action, Player};
use serde_json::json;

// The trading actions follow the base game's, so a game without them keeps its ids.
pub(crate) const OFFER: u32 = NUM_ACTIONS; // index into OFFERS
pub(crate) const ACCEPT: u32 = OFFER + OFFER_KINDS as u32;
pub(crate) const DECLINE: u32 = ACCEPT + 1;
pub(crate) const TRADE_WITH: u32 = DECLINE + 1; // partner seat
pub(crate) const WITHDRAW: u32 = TRADE_WITH + MAX_PLAYERS as u32;
/// Number of distinct player actions with player-to-player trading (`trades=true`).
pub const NUM_ACTIONS_TRADING: u32 = WITHDRAW + 1;

/// An exchange the player to move may offer the others: cards given for cards got.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Offer {
    /// Cards the mover gives, by resource.
    pub give: [u8; RESOURCES],
    /// Cards the mover gets, by resource.
    pub get: [u8; RESOURCES],
}

/// Distinct offers: every one-for-one (20), one-for-two (50) and two-for-one (50) exchange in
/// which no resource is on both sides.
pub const OFFER_KINDS: usize = 120;

/// The offer set, in id order: one-for-one by (give, get), then one-for-two by the card given,
/// then two-for-one by the card got (pairs of resources in index order, doubles included).
pub const OFFERS: [Offer; OFFER_KINDS] = offer_table();

const fn offer_table() -> [Offer; OFFER_KINDS] {
    let none = Offer { give: [0; RESOURCES], get: [0; RESOURCES] };
    let mut t = [none; OFFER_KINDS];
    let mut k = 0;
    let mut a = 0;
    while a < RESOURCES {
        let mut b = 0;
        while b < RESOURCES {
            if a != b {
                t[k].give[a] = 1;
                t[k].get[b] = 1;
                k += 1;
            }
            b += 1;
        }
        a += 1;
    }
    // One side a single card `a`, the other two cards `b <= c`, neither of them `a`.
    let mut pass = 0;
    while pass < 2 {
        let mut a = 0;
        while a < RESOURCES {
            let mut b = 0;
            while b < RESOURCES {
                let mut c = b;
                while c < RESOURCES {
                    if b != a && c != a {
                        if pass == 0 {
                            t[k].give[a] = 1;
                            t[k].get[b] += 1;
                            t[k].get[c] += 1;
                        } else {
                            t[k].get[a] = 1;
                            t[k].give[b] += 1;
                            t[k].give[c] += 1;
                        }
                        k += 1;
                    }
                    c += 1;
                }
                b += 1;
            }
            a += 1;
        }
        pass += 1;
    }
    t
}

/// Observation features of the trade in progress (with `trades=true`): the offer's cards (5 + 5,
/// halved), whether answers or the mover's choice are awaited, which seats accepted and which
/// answers now (relative to the viewer), and the share of this turn's offers made.
pub(crate) const TRADE_FEATURES: usize = 2 * RESOURCES + 2 + 2 * MAX_PLAYERS + 1;

impl CatanState {
    /// Whether the game has player-to-player trading (`trades=true`).
    pub fn trading(&self) -> bool {
        self.trades
    }

    /// The offer on the table while the others answer or the mover chooses: the mover, the
    /// offer, and the seats that accepted so far (bit per seat).
    pub fn pending_offer(&self) -> Option<(usize, Offer, u8)> {
        matches!(self.phase, Phase::Answer | Phase::Choose)
            .then(|| (self.current as usize, OFFERS[self.offer as usize], self.accepted))
    }

    /// The seat answering the offer on the table.
    pub fn responder(&self) -> Option<usize> {
        (self.phase == Phase::Answer).then_some(self.responder as usize)
    }

    /// Whether the mover may put offer `k` on the table now (in the main phase).
    pub(crate) fn may_offer(&self, k: usize) -> bool {
        self.trades
            && self.offers_made < self.offers_per_turn
            && self.declined >> k & 1 == 0
            && self.seats[self.current as usize].can_pay(&OFFERS[k].give)
    }

    /// The position with `offer`'s cards exchanged between the mover and `partner` (the
    /// mover's side only when `None`): what a trader weighs before offering or answering.
    pub fn exchanged(&self, offer: &Offer, partner: Option<usize>) -> CatanState {
        let mut s = self.clone();
        s.exchange(offer, partner);
        s
    }

    /// Moves `offer`'s cards between the mover and `partner` (the mover's side only when `None`).
    fn exchange(&mut self, offer: &Offer, partner: Option<usize>) {
        let p = self.current as usize;
        for r in 0..RESOURCES {
            self.seats[p].hand[r] = self.seats[p].hand[r].saturating_sub(offer.give[r]) + offer.get[r];
            if let Some(q) = partner {
                self.seats[q].hand[r] = self.seats[q].hand[r].saturating_sub(offer.get[r]) + offer.give[r];
            }
        }
    }

    /// Cards a seat has committed to the offer on the table: the mover's, and each accepter's.
    pub(super) fn committed(&self, seat: usize) -> [u8; RESOURCES] {
        match self.pending_offer() {
            Some((mover, o, _)) if seat == mover => o.give,
            Some((_, o, accepted)) if accepted >> seat & 1 == 1 => o.get,
            _ => [0; RESOURCES],
        }
    }

    /// With hidden hands: `seat` shows the table that it holds `cards`. Where its cards known
    /// to all fall short of them, cards it stole out of the others' sight become known.
    fn reveal(&mut self, seat: usize, cards: &[u8; RESOURCES]) {
        if !self.hidden_hands {
            return;
        }
        for r in 0..RESOURCES {
            let mut hidden: u8 = (0..self.n as usize).map(|x| self.unseen[seat][x][r]).sum();
            while self.seats[seat].hand[r].saturating_sub(hidden) < cards[r] && hidden > 0 {
                let x = (0..self.n as usize).find(|&x| self.unseen[seat][x][r] > 0).expect("a hidden card");
                self.unseen[seat][x][r] -= 1;
                hidden -= 1;
            }
        }
    }

    /// The next answer to the offer on the table, or what follows the last one: the mover's
    /// choice if anyone accepted, else the main phase with the offer spent for this turn.
    fn next_answer(&mut self) {
        self.responder = (self.responder + 1) % self.n;
        if self.responder != self.current {
            return;
        }
        if self.accepted == 0 {
            self.close_offer(None);
        } else {
            self.phase = Phase::Choose;
        }
    }

    /// The offer on the table ends: traded with `partner`, or spent for this turn with no trade;
    /// the turn goes on in the main phase.
    fn close_offer(&mut self, partner: Option<usize>) {
        match partner {
            Some(q) => {
                self.exchange(&OFFERS[self.offer as usize], Some(q));
                self.trades_made += 1;
            }
            None => self.declined |= 1 << self.offer,
        }
        self.accepted = 0;
        self.phase = Phase::Main;
    }

    /// The position after the trade `action` would complete ([`meeple_game::State::completed`]):
    /// an offer, by the trade with the first seat in answering order that would take it as
    /// `catan-value` answers (on what the mover knows of its hand), or the offer spent with no
    /// trade where none would; an answer, by the position after the trade with the answering seat
    /// (accept) or after the offer was spent with no trade (decline). Other actions: none.
    pub(super) fn completed_trade(&self, action: Action) -> Option<CatanState> {
        let mut s = self.clone();
        match self.phase {
            Phase::Main if (OFFER..ACCEPT).contains(&action) => {
                let k = (action - OFFER) as usize;
                let (n, mover) = (self.n as usize, self.current as usize);
                let known = super::eval::as_known(self, mover);
                let taker = (1..n).map(|d| (mover + d) % n).find(|&q| super::eval::takes(&known, &OFFERS[k], q));
                s.offer = k as u8;
                s.offers_made += 1;
                s.close_offer(taker);
            }
            Phase::Answer if action == ACCEPT => s.close_offer(Some(self.responder as usize)),
            Phase::Answer if action == DECLINE => s.close_offer(None),
            _ => return None,
        }
        Some(s)
    }

    /// The offers the mover may put on the table now (in the main phase).
    pub(super) fn push_offers(&self, out: &mut Vec<Action>) {
        if self.trades && self.offers_made < self.offers_per_turn {
            for k in 0..OFFER_KINDS {
                if self.may_offer(k) {
                    out.push(OFFER + k as u32);
                }
            }
        }
    }

    /// The actions while an offer is on the table: the answering seat's accept (if it can pay)
    /// or decline; the mover's trade with one seat that accepted, or withdrawal.
    pub(super) fn push_replies(&self, out: &mut Vec<Action>) {
        if self.phase == Phase::Answer {
            if self.seats[self.responder as usize].can_pay(&OFFERS[self.offer as usize].get) {
                out.push(ACCEPT);
            }
            out.push(DECLINE);
            return;
        }
        for q in 0..self.n as usize {
            if self.accepted >> q & 1 == 1 {
                out.push(TRADE_WITH + q as u32);
            }
        }
        out.push(WITHDRAW);
    }

    /// The mover puts offer `k` on the table; the seat after it answers first.
    pub(super) fn put_offer(&mut self, k: usize) {
        self.offer = k as u8;
        self.offers_made += 1;
        self.accepted = 0;
        self.responder = self.current;
        self.phase = Phase::Answer;
        let give = OFFERS[k].give;
        self.reveal(self.current as usize, &give);
        self.next_answer();
    }

    /// An answer to the offer, or the mover's choice once all have answered.
    pub(super) fn apply_reply(&mut self, action: Action) {
        if self.phase == Phase::Answer {
            if action == ACCEPT {
                let q = self.responder as usize;
                self.accepted |= 1 << q;
                let get = OFFERS[self.offer as usize].get;
                self.reveal(q, &get);
            }
            self.next_answer();
            return;
        }
        let partner = (action != WITHDRAW).then(|| (action - TRADE_WITH) as usize);
        self.close_offer(partner);
    }

    /// A new turn: no offers made, none declined.
    pub(super) fn new_turn_offers(&mut self) {
        self.offers_made = 0;
        self.declined = 0;
    }

    /// The trade in progress as `player` sees it ([`TRADE_FEATURES`] values, seats relative to
    /// the viewer).
    pub(super) fn trade_features(&self, player: Player, out: &mut Vec<f32>) {
        let n = self.n as usize;
        let rel = |q: usize| (q + n - player) % n;
        let mut f = [0.0f32; TRADE_FEATURES];
        if let Some((_, o, accepted)) = self.pending_offer() {
            for r in 0..RESOURCES {
                f[r] = o.give[r] as f32 / 2.0;
                f[RESOURCES + r] = o.get[r] as f32 / 2.0;
            }
            f[2 * RESOURCES] = (self.phase == Phase::Answer) as u8 as f32;
            f[2 * RESOURCES + 1] = (self.phase == Phase::Choose) as u8 as f32;
            for q in 0..n {
                f[2 * RESOURCES + 2 + rel(q)] = (accepted >> q & 1) as f32;
            }
            if self.phase == Phase::Answer {
                f[2 * RESOURCES + 2 + MAX_PLAYERS + rel(self.responder as usize)] = 1.0;
            }
        }
        f[TRADE_FEATURES - 1] = self.offers_made as f32 / self.offers_per_turn as f32;
        out.extend_from_slice(&f);
    }

    /// The trade in progress for the page: the offer on the table (its mover, cards, who accepted
    /// and who answers now), offers left this turn and trades made so far.
    pub(super) fn trade_view(&self) -> serde_json::Value {
        let n = self.n as usize;
        let offer = self.pending_offer().map(|(mover, o, accepted)| {
            json!({
                "from": mover, "give": o.give, "get": o.get,
                "accepted": (0..n).filter(|&q| accepted >> q & 1 == 1).collect::<Vec<_>>(),
                "responder": self.responder(),
            })
        });
        json!({ "offer": offer, "offers_left": self.offers_per_turn.saturating_sub(self.offers_made), "trades": self.trades_made })
    }
}

/// The rules card's line on trading between players in this setting.
pub(super) fn rules_line(trades: bool, offers_per_turn: u8) -> String {
    if !trades {
        return "No trading between players in this setting.".into();
    }
    format!(
        "With the other players, after your roll: offer 1 for 1, 1 for 2 or 2 for 1 of different \
         resources; each other player accepts or declines in turn, and you trade with one who \
         accepted. At most {offers_per_turn} offers a turn, none repeated."
    )
}
