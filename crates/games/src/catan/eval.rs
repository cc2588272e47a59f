//! Catan knowledge: a hand-set value function (points, production by resource and number
//! probability, harbours, road length, army, cards), the greedy agent that plays the action
//! whose result it values most, and a weighted random agent that prefers building.

use super::board::{HEXES, TOPOLOGY};
use super::{
    ACCEPT, BUY, CatanState, DECLINE, END, OFFER, OFFERS, Phase, RESOURCES, ROAD, ROLL, TRADE_WITH, VICTORY_POINT,
    WITHDRAW,
};
use meeple_game::{
    Action, Agent, AgentInfo, BoxedAgent, BoxedEvaluator, Budget, Error, Evaluator, ParamInfo, Player, Rng, Spec,
    State, Turn, rng_from_seed,
};
use rand::RngExt;

pub(crate) const AGENT_INFOS: [AgentInfo; 2] = [
    AgentInfo {
        name: "catan-weighted",
        about: "weighted random: builds a settlement or city 10x, a road 4x, buys a card 2x as often as any other \
                action",
        params: &[],
    },
    AgentInfo {
        name: "catan-value",
        about: "greedy: plays the action whose result the catan-value evaluator rates best (expected over dice, \
                cards and steals one step ahead); ends the turn on ties. With player trading it offers the \
                exchange that raises its own value most (when that beats every other move), accepts an offer \
                only when it gains more than the offerer, and trades with the accepter who ends weakest",
        params: VALUE_AGENT_PARAMS,
    },
];

const VALUE_AGENT_PARAMS: &[ParamInfo] = &[ParamInfo {
    name: "trade",
    default: "true",
    accepts: "true or false",
    help: "false: never offer, decline every offer (for games with trades=true)",
}];

pub(crate) const EVALUATOR_INFO: AgentInfo = AgentInfo {
    name: "catan-value",
    about: "hand-set value: 10 per point, production (dots of the numbers under each building, a city twice) per \
            resource with a bonus for variety, harbours, road length, knights, cards in hand (minus the risk over \
            7), development cards, what the hand can build; a player's value minus the best opponent's",
    params: &[ParamInfo {
        name: "weights",
        default: "",
        accepts: "15 comma-separated numbers in brackets, or a file of them",
        help: "weights of the 15 seat features (default: the hand weights 10,25,-12,1.5,1,0.6,1.2,1.5,0.4,-0.8,3,3,0.5,1,2)",
    }],
};

pub(crate) fn make_agent(spec: &Spec, seed: u64) -> Option<Result<BoxedAgent<CatanState>, Error>> {
    match spec.name.as_str() {
        "catan-weighted" => Some(
            spec.options("agent catan-weighted", AGENT_INFOS[0].params)
                .map(|_| Box::new(WeightedRandom::new(seed)) as BoxedAgent<CatanState>),
        ),
        "catan-value" => Some((|| {
            let o = spec.options("agent catan-value", AGENT_INFOS[1].params)?;
            let mut agent = ValueAgent::new(seed);
            agent.trade = o.get_bool("trade")?;
            Ok(Box::new(agent) as BoxedAgent<CatanState>)
        })()),
        _ => None,
    }
}

pub(crate) fn make_evaluator(spec: &Spec) -> Option<Result<BoxedEvaluator<CatanState>, Error>> {
    match spec.name.as_str() {
        "catan-value" => Some(
            crate::weights_from(spec, "evaluator catan-value", EVALUATOR_INFO.params, CATAN_WEIGHTS)
                .map(|w| Box::new(CatanValue::with_weights(w)) as BoxedEvaluator<CatanState>),
        ),
        _ => None,
    }
}

/// Chance of rolling `number` with two dice.
fn probability(number: u8) -> f64 {
    if number == 0 || number == 7 { 0.0 } else { (6 - (number as i32 - 7).abs()) as f64 / 36.0 }
}

/// Expected cards per roll of each resource for `seat` (the robber's hex produces nothing).
pub fn production(state: &CatanState, seat: usize) -> [f64; RESOURCES] {
    let t = &*TOPOLOGY;
    let s = &state.seats[seat];
    let mut prod = [0.0; RESOURCES];
    for h in 0..HEXES {
        if h == state.robber as usize || state.number[h] == 0 {
            continue;
        }
        let mut weight = 0u32;
        for &v in &t.hex_vertices[h] {
            weight += (s.settlements >> v & 1) as u32 + 2 * (s.cities >> v & 1) as u32;
        }
        if weight > 0 {
            prod[state.terrain[h] as usize] += weight as f64 * probability(state.number[h]);
        }
    }
    prod
}

/// The hand weights of [`seat_features`]: 10 per point, 25 per expected card a roll less 12
/// per card above a quarter of each resource, 1.5 per resource produced at all, 1 per
/// harbour, 0.6 per road length (to 8), 1.2 per knight, 1.5 per development card in hand,
/// 0.4 per card up to 7 and -0.8 per card above, 3 for a city the hand pays for, 3 for a
/// settlement it pays for with a spot to put it (0.5 without), 1 for a card it pays for, 2
/// for a free spot at a road's end.
pub const CATAN_WEIGHTS: [f64; SEAT_FEATURES] =
    [10.0, 25.0, -12.0, 1.5, 1.0, 0.6, 1.2, 1.5, 0.4, -0.8, 3.0, 3.0, 0.5, 1.0, 2.0];

/// Features of one seat's position ([`CATAN_WEIGHTS`] weighs them).
pub const SEAT_FEATURES: usize = 15;

/// The features of `seat`'s position, on its own.
pub fn seat_features(state: &CatanState, seat: usize) -> [f64; SEAT_FEATURES] {
    let s = &state.seats[seat];
    let prod = production(state, seat);
    let mut f = [0.0; SEAT_FEATURES];
    f[0] = state.points(seat) as f64;
    // Production: each resource counts, with diminishing returns so variety is worth more.
    f[1] = prod.iter().sum();
    f[2] = prod.iter().map(|p| (p - 0.25).max(0.0)).sum();
    f[3] = prod.iter().filter(|&&p| p > 0.0).count() as f64;
    f[4] = s.harbours.count_ones() as f64;
    f[5] = s.longest.min(8) as f64;
    f[6] = s.knights as f64;
    f[7] = (s.dev_cards() - s.dev[VICTORY_POINT] as u32) as f64;
    let cards = s.cards() as f64;
    f[8] = cards.min(7.0);
    f[9] = (cards - 7.0).max(0.0);
    // What the hand can pay for now.
    let have = |cost: [u8; RESOURCES]| s.hand.iter().zip(cost).all(|(&h, c)| h >= c);
    let spots = state.settlement_spots(seat) != 0;
    f[10] = (have(super::CITY_COST) && s.settlements != 0) as u8 as f64;
    f[11] = (have(super::SETTLEMENT_COST) && spots) as u8 as f64;
    f[12] = (have(super::SETTLEMENT_COST) && !spots) as u8 as f64;
    f[13] = have(super::DEV_COST) as u8 as f64;
    // Room to expand: a free settlement spot at the end of a road.
    f[14] = spots as u8 as f64;
    f
}

fn dot(f: &[f64; SEAT_FEATURES], w: &[f64; SEAT_FEATURES]) -> f64 {
    f.iter().zip(w).map(|(a, b)| a * b).sum()
}

/// The value of `seat`'s position, on its own, with the hand weights.
pub fn seat_value(state: &CatanState, seat: usize) -> f64 {
    dot(&seat_features(state, seat), &CATAN_WEIGHTS)
}

/// The evaluator: the player's value minus the best opponent's, with the hand weights or
/// others (`catan-value:weights=...`).
#[derive(Clone, Copy, Debug)]
pub struct CatanValue {
    weights: [f64; SEAT_FEATURES],
}

impl Default for CatanValue {
    fn default() -> Self {
        CatanValue { weights: CATAN_WEIGHTS }
    }
}

impl CatanValue {
    /// The evaluator with other weights.
    pub fn with_weights(weights: [f64; SEAT_FEATURES]) -> Self {
        CatanValue { weights }
    }

    /// The player's features minus those of the opponent valued best (so the value is their
    /// dot product with the weights).
    fn difference(&self, state: &CatanState, player: Player) -> [f64; SEAT_FEATURES] {
        let mine = seat_features(state, player);
        let mut best: Option<(f64, [f64; SEAT_FEATURES])> = None;
        for q in (0..state.players()).filter(|&q| q != player) {
            let f = seat_features(state, q);
            let v = dot(&f, &self.weights);
            if best.is_none_or(|(b, _)| v > b) {
                best = Some((v, f));
            }
        }
        let other = best.map(|b| b.1).unwrap_or([0.0; SEAT_FEATURES]);
        std::array::from_fn(|i| mine[i] - other[i])
    }
}

impl Evaluator<CatanState> for CatanValue {
    fn evaluate(&self, state: &CatanState, player: Player) -> f64 {
        dot(&self.difference(state, player), &self.weights)
    }

    fn features(&self, state: &CatanState, player: Player, out: &mut Vec<f64>) -> bool {
        out.clear();
        out.extend_from_slice(&self.difference(state, player));
        true
    }

    fn weights(&self) -> Vec<f64> {
        self.weights.to_vec()
    }

    /// A seat answering an offer answers by `catan-value`'s own rule: it takes the trade when
    /// that gains it more than the offerer.
    fn expected_move(&self, state: &CatanState, root: Player) -> Option<Action> {
        let seat = state.responder().filter(|&s| s != root)?;
        let (_, offer, _) = state.pending_offer()?;
        Some(if takes(state, &offer, seat) { ACCEPT } else { DECLINE })
    }
}

/// Value of `state` for `seat` after whatever chance comes next (one level of chance averaged).
fn expected_value(state: &CatanState, seat: usize, outcomes: &mut Vec<(Action, f64)>) -> f64 {
    if let Some(r) = state.returns() {
        return 1000.0 * (r.as_slice()[seat] - 0.5);
    }
    if state.turn() == Turn::Chance {
        state.chance_outcomes(outcomes);
        let list = outcomes.clone();
        let mut total = 0.0;
        for (a, p) in list {
            let mut next = state.clone();
            next.apply_unchecked(a);
            total += p * value_for(&next, seat);
        }
        return total;
    }
    value_for(state, seat)
}

fn value_for(state: &CatanState, seat: usize) -> f64 {
    if let Some(r) = state.returns() {
        return 1000.0 * (r.as_slice()[seat] - 0.5);
    }
    seat_value(state, seat)
}

/// Greedy one-step agent on [`seat_value`].
pub struct ValueAgent {
    rng: Rng,
    outcomes: Vec<(Action, f64)>,
    legal: Vec<Action>,
    /// Whether it makes and takes player-to-player offers.
    trade: bool,
}

impl ValueAgent {
    /// A greedy agent that trades; `seed` breaks ties.
    pub fn new(seed: u64) -> Self {
        ValueAgent { rng: rng_from_seed(seed), outcomes: Vec::new(), legal: Vec::new(), trade: true }
    }

    /// The same agent, never offering and declining every offer.
    pub fn without_trades(seed: u64) -> Self {
        ValueAgent { trade: false, ..ValueAgent::new(seed) }
    }

    /// Accepts when the trade raises its own value, and by more than the offerer's.
    fn answer(&self, state: &CatanState, me: usize) -> Action {
        let Some((_, offer, _)) = state.pending_offer() else { return DECLINE };
        if self.trade && takes(state, &offer, me) { ACCEPT } else { DECLINE }
    }

    /// Trades with the accepter whose position the trade leaves weakest.
    fn choose(&self, state: &CatanState) -> Action {
        let Some((_, offer, accepted)) = state.pending_offer() else { return WITHDRAW };
        (0..state.players())
            .filter(|&q| accepted >> q & 1 == 1)
            .map(|q| (seat_value(&state.exchanged(&offer, Some(q)), q), q))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map_or(WITHDRAW, |(_, q)| TRADE_WITH + q as Action)
    }
}

impl Agent<CatanState> for ValueAgent {
    fn spec(&self) -> String {
        if self.trade { "catan-value" } else { "catan-value:trade=false" }.to_string()
    }

    fn act(&mut self, state: &CatanState, _budget: &Budget) -> Result<Action, Error> {
        let me = state.current_player().ok_or_else(|| Error::Invalid("no player to move".into()))?;
        match state.phase {
            Phase::Answer => return Ok(self.answer(state, me)),
            Phase::Choose => return Ok(self.choose(state)),
            _ => {}
        }
        state.legal_actions(&mut self.legal);
        if self.legal.len() == 1 {
            return Ok(self.legal[0]);
        }
        let legal = std::mem::take(&mut self.legal);
        // Robbing and discarding hurt others or lose cards, so the relative value decides those;
        // building decisions use the player's own value (the opponents' do not change).
        let relative = matches!(state.phase, Phase::MoveRobber | Phase::Steal);
        let mut best: Vec<Action> = Vec::new();
        let mut best_value = f64::MIN;
        let mut end_value = None;
        // An offer is valued as if taken, and made only if some seat, answering by this
        // agent's own rule on what this seat knows of its hand, would take it.
        let mut best_offer: Option<(f64, Action)> = None;
        let known = (self.trade && legal.iter().any(|a| (OFFER..ACCEPT).contains(a))).then(|| as_known(state, me));
        for &a in &legal {
            if (OFFER..ACCEPT).contains(&a) {
                let Some(known) = &known else { continue };
                let offer = &OFFERS[(a - OFFER) as usize];
                let v = value_for(&state.exchanged(offer, None), me);
                if best_offer.is_none_or(|(b, _)| v > b + 1e-9)
                    && (0..state.players()).any(|q| q != me && takes(known, offer, q))
                {
                    best_offer = Some((v, a));
                }
                continue;
            }
            let mut next = state.clone();
            next.apply_unchecked(a);
            let v = if relative {
                let own = expected_value(&next, me, &mut self.outcomes);
                let others = (0..state.players())
                    .filter(|&q| q != me)
                    .map(|q| expected_value(&next, q, &mut self.outcomes))
                    .fold(f64::MIN, f64::max);
                own - others
            } else if a == END {
                // The state after `end` is the next seat's; value the position as it stands.
                value_for(state, me)
            } else {
                expected_value(&next, me, &mut self.outcomes)
            };
            if a == END {
                end_value = Some(v);
            }
            if v > best_value + 1e-9 {
                best_value = v;
                best.clear();
                best.push(a);
            } else if (v - best_value).abs() <= 1e-9 {
                best.push(a);
            }
        }
        self.legal = legal;
        if let Some((v, a)) = best_offer
            && v > best_value + 1e-9
        {
            return Ok(a);
        }
        // Ends the turn rather than shuffle cards for nothing.
        if end_value.is_some_and(|e| (e - best_value).abs() <= 1e-9) {
            return Ok(END);
        }
        Ok(best[self.rng.random_range(0..best.len())])
    }
}

/// Whether `seat` gains from taking `offer` (the mover's, in `state`), and more than the mover.
pub(crate) fn takes(state: &CatanState, offer: &super::Offer, seat: usize) -> bool {
    if !state.seats[seat].can_pay(&offer.get) {
        return false;
    }
    let mover = state.turn_player();
    let after = state.exchanged(offer, Some(seat));
    let mine = seat_value(&after, seat) - seat_value(state, seat);
    let theirs = seat_value(&after, mover) - seat_value(state, mover);
    mine > 1e-9 && mine > theirs
}

/// The position as `viewer` knows it, for guessing others' answers: each other hand as the
/// viewer has seen it (cards stolen out of its sight left out).
pub(crate) fn as_known(state: &CatanState, viewer: usize) -> CatanState {
    let mut known = state.clone();
    for q in (0..state.players()).filter(|&q| q != viewer) {
        known.seats[q].hand = state.visible_hand(viewer, q).0.map(|c| c.clamp(0, u8::MAX as i32) as u8);
    }
    known
}

/// Random play weighted towards building.
pub struct WeightedRandom {
    rng: Rng,
    legal: Vec<Action>,
}

impl WeightedRandom {
    /// A weighted random agent.
    pub fn new(seed: u64) -> Self {
        WeightedRandom { rng: rng_from_seed(seed), legal: Vec::new() }
    }
}

fn weight(a: Action) -> u32 {
    match a {
        a if a < ROAD => 10, // settlement or city
        a if a < ROLL => 4,
        BUY => 2,
        _ => 1,
    }
}

impl Agent<CatanState> for WeightedRandom {
    fn spec(&self) -> String {
        "catan-weighted".to_string()
    }

    fn act(&mut self, state: &CatanState, _budget: &Budget) -> Result<Action, Error> {
        state.legal_actions(&mut self.legal);
        if self.legal.is_empty() {
            return Err(Error::Invalid("no legal action".into()));
        }
        // Setup placements are not building choices: uniform there.
        let setup = matches!(state.phase, Phase::SetupSettlement | Phase::SetupRoad);
        let total: u32 = self.legal.iter().map(|&a| if setup { 1 } else { weight(a) }).sum();
        let mut x = self.rng.random_range(0..total);
        for &a in &self.legal {
            let w = if setup { 1 } else { weight(a) };
            if x < w {
                return Ok(a);
            }
            x -= w;
        }
        Ok(*self.legal.last().expect("not empty"))
    }
}
