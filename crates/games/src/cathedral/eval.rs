//! Cathedral knowledge for search: an area/territory/mobility evaluator and the first report's
//! "largest building first" player.

use super::CathedralState;
use meeple_game::{
    Action, Agent, AgentInfo, Budget, Error, Evaluator, ParamInfo, Player, Rng, Spec, State, rng_from_seed,
};
use rand::RngExt;

pub(crate) const EVALUATOR_INFO: AgentInfo = AgentInfo {
    name: "area",
    about: "squares placed (the score) difference + 0.5 x territory difference + 0.05 x difference in squares each \
            player may still build on",
    params: &[ParamInfo {
        name: "weights",
        default: "",
        accepts: "3 comma-separated numbers in brackets, or a file of them (meeple train rootstrap)",
        help: "weights of the placed, territory and room differences (default 1,0.5,0.05)",
    }],
};

/// The hand weights of [`CathedralEvaluator`]'s three features.
pub const AREA_WEIGHTS: [f64; 3] = [1.0, 0.5, 0.05];

pub(crate) const LARGEST_FIRST_INFO: AgentInfo = AgentInfo {
    name: "cathedral-largest",
    about: "places its largest building that fits (the first report's observed strategy), where it claims the most \
            (territory and captures), random among equals",
    params: &[],
};

/// Area, territory and room to build, each as "mine minus theirs", weighted.
#[derive(Clone, Copy, Debug)]
pub struct CathedralEvaluator {
    weights: [f64; 3],
}

impl Default for CathedralEvaluator {
    fn default() -> Self {
        CathedralEvaluator { weights: AREA_WEIGHTS }
    }
}

impl CathedralEvaluator {
    /// The evaluator with other weights.
    pub fn with_weights(weights: [f64; 3]) -> Self {
        CathedralEvaluator { weights }
    }

    pub(crate) fn from_spec(spec: &Spec) -> Result<Self, Error> {
        crate::weights_from(spec, "evaluator area", EVALUATOR_INFO.params, AREA_WEIGHTS).map(Self::with_weights)
    }

    /// Squares placed, territory and room to build, each the player's minus the opponent's.
    pub fn features_of(s: &CathedralState, player: Player) -> [f64; 3] {
        let o = 1 - player;
        let placed = s.squares_in_hand(o) as f64 - s.squares_in_hand(player) as f64;
        let territory = s.territory[player].count_ones() as f64 - s.territory[o].count_ones() as f64;
        let room = |p: usize| (s.full() & !s.blocked_for(p)).count_ones() as f64;
        [placed, territory, room(player) - room(o)]
    }
}

impl Evaluator<CathedralState> for CathedralEvaluator {
    fn evaluate(&self, s: &CathedralState, player: Player) -> f64 {
        Self::features_of(s, player).iter().zip(&self.weights).map(|(f, w)| f * w).sum()
    }

    fn features(&self, s: &CathedralState, player: Player, out: &mut Vec<f64>) -> bool {
        out.clear();
        out.extend_from_slice(&Self::features_of(s, player));
        true
    }

    fn weights(&self) -> Vec<f64> {
        self.weights.to_vec()
    }
}

/// The largest-building-first player.
pub struct LargestFirstAgent {
    rng: Rng,
    legal: Vec<Action>,
}

impl LargestFirstAgent {
    /// A player breaking ties from `seed`.
    pub fn new(seed: u64) -> Self {
        LargestFirstAgent { rng: rng_from_seed(seed), legal: Vec::new() }
    }
}

impl Agent<CathedralState> for LargestFirstAgent {
    fn spec(&self) -> String {
        LARGEST_FIRST_INFO.name.into()
    }

    fn act(&mut self, s: &CathedralState, _budget: &Budget) -> Result<Action, Error> {
        let Some(me) = s.current_player() else {
            return Err(Error::Agent { agent: LARGEST_FIRST_INFO.name.into(), reason: "no decision to make".into() });
        };
        s.legal_actions(&mut self.legal);
        if self.legal.is_empty() {
            return Err(Error::Agent { agent: LARGEST_FIRST_INFO.name.into(), reason: "no legal action".into() });
        }
        let t = s.table();
        let size = |a: Action| t.placements[a as usize].building.map_or(6, |b| b.squares());
        let largest = self.legal.iter().map(|&a| size(a)).max().unwrap_or(0);
        // Among the largest buildings, the placement that gains the most for us right now.
        let gain = |a: Action| {
            let mut next = s.clone();
            next.apply_unchecked(a);
            let mine = next.territory[me].count_ones() as i64 - s.territory[me].count_ones() as i64;
            let theirs = next.squares_in_hand(1 - me) as i64 - s.squares_in_hand(1 - me) as i64;
            mine + 2 * theirs
        };
        let candidates: Vec<(i64, Action)> =
            self.legal.iter().filter(|&&a| size(a) == largest).map(|&a| (gain(a), a)).collect();
        let best = candidates.iter().map(|c| c.0).max().unwrap_or(0);
        let top: Vec<Action> = candidates.iter().filter(|c| c.0 == best).map(|c| c.1).collect();
        Ok(top[self.rng.random_range(0..top.len())])
    }
}
