//! Catan knowledge: a hand-set value function (points, production by resource and number
//! probability, harbours, road length, army, cards), the greedy agent that plays the action
//! whose result it values most, and a weighted random agent that prefers building.

use super::board::{HEXES, TOPOLOGY};
use super::{BUY, CatanState, END, MAX_PLAYERS, Phase, RESOURCES, ROAD, ROLL, VICTORY_POINT};
use meeple_game::{
    Action, Agent, AgentInfo, BoxedAgent, BoxedEvaluator, Budget, Error, Evaluator, Player, Rng, Spec, State, Turn,
    rng_from_seed,
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
                cards and steals one step ahead); ends the turn on ties",
        params: &[],
    },
];

pub(crate) const EVALUATOR_INFO: AgentInfo = AgentInfo {
    name: "catan-value",
    about: "hand-set value: 10 per point, production (dots of the numbers under each building, a city twice) per \
            resource with a bonus for variety, harbours, road length, knights, cards in hand (minus the risk over \
            7), development cards, what the hand can build; a player's value minus the best opponent's",
    params: &[],
};

pub(crate) fn make_agent(spec: &Spec, seed: u64) -> Option<Result<BoxedAgent<CatanState>, Error>> {
    match spec.name.as_str() {
        "catan-weighted" => Some(
            spec.options("agent catan-weighted", AGENT_INFOS[0].params)
                .map(|_| Box::new(WeightedRandom::new(seed)) as BoxedAgent<CatanState>),
        ),
        "catan-value" => Some(
            spec.options("agent catan-value", AGENT_INFOS[1].params)
                .map(|_| Box::new(ValueAgent::new(seed)) as BoxedAgent<CatanState>),
        ),
        _ => None,
    }
}

pub(crate) fn make_evaluator(spec: &Spec) -> Option<Result<BoxedEvaluator<CatanState>, Error>> {
    match spec.name.as_str() {
        "catan-value" => Some(
            spec.options("evaluator catan-value", EVALUATOR_INFO.params)
                .map(|_| Box::new(CatanValue) as BoxedEvaluator<CatanState>),
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

/// The value of `seat`'s position, on its own.
pub fn seat_value(state: &CatanState, seat: usize) -> f64 {
    let s = &state.seats[seat];
    let prod = production(state, seat);
    let mut v = 10.0 * state.points(seat) as f64;
    // Production: each resource counts, with diminishing returns so variety is worth more.
    for &p in &prod {
        v += 25.0 * p - 12.0 * (p - 0.25).max(0.0);
    }
    v += 1.5 * prod.iter().filter(|&&p| p > 0.0).count() as f64;
    v += 1.0 * s.harbours.count_ones() as f64;
    v += 0.6 * s.longest.min(8) as f64;
    v += 1.2 * s.knights as f64;
    v += 1.5 * (s.dev_cards() - s.dev[VICTORY_POINT] as u32) as f64;
    let cards = s.cards() as f64;
    v += 0.4 * cards.min(7.0) - 0.8 * (cards - 7.0).max(0.0);
    // What the hand can pay for now.
    let have = |cost: [u8; RESOURCES]| s.hand.iter().zip(cost).all(|(&h, c)| h >= c);
    if have(super::CITY_COST) && s.settlements != 0 {
        v += 3.0;
    }
    if have(super::SETTLEMENT_COST) {
        v += if state.settlement_spots(seat) != 0 { 3.0 } else { 0.5 };
    }
    if have(super::DEV_COST) {
        v += 1.0;
    }
    // Room to expand: a free settlement spot at the end of a road.
    if state.settlement_spots(seat) != 0 {
        v += 2.0;
    }
    v
}

/// The hand-set evaluator: the player's value minus the best opponent's.
#[derive(Clone, Copy, Debug, Default)]
pub struct CatanValue;

impl Evaluator<CatanState> for CatanValue {
    fn evaluate(&self, state: &CatanState, player: Player) -> f64 {
        let n = state.players();
        let mut values = [0.0; MAX_PLAYERS];
        for (q, v) in values.iter_mut().enumerate().take(n) {
            *v = seat_value(state, q);
        }
        let best_other = (0..n).filter(|&q| q != player).map(|q| values[q]).fold(f64::MIN, f64::max);
        values[player] - best_other
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
}

impl ValueAgent {
    /// A greedy agent; `seed` breaks ties.
    pub fn new(seed: u64) -> Self {
        ValueAgent { rng: rng_from_seed(seed), outcomes: Vec::new(), legal: Vec::new() }
    }
}

impl Agent<CatanState> for ValueAgent {
    fn spec(&self) -> String {
        "catan-value".to_string()
    }

    fn act(&mut self, state: &CatanState, _budget: &Budget) -> Result<Action, Error> {
        let me = state.current_player().ok_or_else(|| Error::Invalid("no player to move".into()))?;
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
        for &a in &legal {
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
        // Ends the turn rather than shuffle cards for nothing.
        if end_value.is_some_and(|e| (e - best_value).abs() <= 1e-9) {
            return Ok(END);
        }
        Ok(best[self.rng.random_range(0..best.len())])
    }
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
