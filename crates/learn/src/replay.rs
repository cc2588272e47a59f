//! Replay memory for DQN: uniform or prioritized sampling (Schaul et al. 2016, proportional
//! variant, on a sum tree), and the assembly of n-step transitions from games stepped together.
//!
//! Two-player games alternate movers, so a transition carries a signed discount: the value of
//! the position it leads to counts for its mover with `+γ^n` when the same seat is to move
//! there and `-γ^n` when the opponent is (negamax; Defradas et al.'s `r - γ max Q_t(s', a')`), and 0
//! when the game ended.

use crate::LearnError;
use meeple_game::Rng;
use rand::RngExt;
use std::collections::VecDeque;

/// A binary tree of sums over `capacity` non-negative priorities: set one in O(log n), find the
/// item where a running mass falls in O(log n).
#[derive(Clone, Debug)]
pub struct SumTree {
    leaves: usize,
    /// Node `i` holds the sum of its children `2i` and `2i + 1`; leaf `k` is node `leaves + k`.
    nodes: Vec<f64>,
}

impl SumTree {
    pub fn new(capacity: usize) -> Self {
        let leaves = capacity.max(1).next_power_of_two();
        SumTree { leaves, nodes: vec![0.0; 2 * leaves] }
    }

    /// Sets item `k`'s priority (negative or non-finite values count as 0).
    pub fn set(&mut self, k: usize, priority: f64) {
        let mut i = self.leaves + k;
        self.nodes[i] = if priority.is_finite() { priority.max(0.0) } else { 0.0 };
        while i > 1 {
            i /= 2;
            self.nodes[i] = self.nodes[2 * i] + self.nodes[2 * i + 1];
        }
    }

    pub fn get(&self, k: usize) -> f64 {
        self.nodes[self.leaves + k]
    }

    pub fn total(&self) -> f64 {
        self.nodes[1]
    }

    /// The item whose share of the total covers `mass` (0 <= mass < total): item k is found
    /// for masses in [sum of items before k, that + priority k). Never an item of priority 0.
    pub fn find(&self, mass: f64) -> usize {
        let mut mass = mass.clamp(0.0, self.total());
        let mut i = 1;
        while i < self.leaves {
            let left = self.nodes[2 * i];
            // Rounding can leave `mass` a hair above a subtree's sum: go right only where the
            // right side has something to give.
            if mass < left || self.nodes[2 * i + 1] <= 0.0 {
                i *= 2;
            } else {
                mass -= left;
                i = 2 * i + 1;
            }
        }
        i - self.leaves
    }
}

/// How the replay memory samples.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Priorities {
    /// Priority exponent α (0: uniform; Schaul et al. 0.6).
    pub alpha: f64,
    /// Importance-sampling exponent β at the start, annealed linearly to 1 by `beta_steps`.
    pub beta: f64,
    /// Optimiser steps over which β reaches 1; 0: over the run (the learner sets the steps it
    /// expects the run to take, [`Replay::set_beta_steps`]; [`DEFAULT_BETA_STEPS`] until then).
    pub beta_steps: u64,
    /// Added to every |TD error| so that no transition is never replayed.
    pub epsilon: f64,
}

impl Default for Priorities {
    fn default() -> Self {
        Priorities { alpha: 0.6, beta: 0.4, beta_steps: 0, epsilon: 1e-3 }
    }
}

/// The steps over which β anneals when a run's length is not known.
pub const DEFAULT_BETA_STEPS: u64 = 100_000;

impl Priorities {
    /// β after `step` optimiser steps.
    pub fn beta_at(&self, step: u64) -> f64 {
        let steps = if self.beta_steps == 0 { DEFAULT_BETA_STEPS } else { self.beta_steps };
        let t = (step as f64 / steps as f64).min(1.0);
        self.beta + (1.0 - self.beta) * t
    }
}

/// One transition handed to the memory.
pub struct Transition<'a> {
    pub obs: &'a [f32],
    pub action: u32,
    /// The discounted rewards of the mover over the transition's steps.
    pub reward: f32,
    /// `±γ^n` (the sign: the same seat or the opponent to move at `next_obs`), 0 at a game's end.
    pub discount: f32,
    /// Where the transition leads (ignored when `discount` is 0).
    pub next_obs: &'a [f32],
    pub next_mask: &'a [bool],
}

/// A sampled batch, laid out flat like the network's input.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    pub indices: Vec<usize>,
    pub obs: Vec<f32>,
    pub actions: Vec<u32>,
    pub rewards: Vec<f32>,
    pub discounts: Vec<f32>,
    pub next_obs: Vec<f32>,
    pub next_mask: Vec<bool>,
    /// Importance-sampling weights (all 1 when sampling uniformly), largest 1.
    pub weights: Vec<f32>,
}

/// A ring buffer of transitions, the oldest overwritten first.
pub struct Replay {
    capacity: usize,
    obs_len: usize,
    actions: usize,
    len: usize,
    next: usize,
    obs: Vec<f32>,
    next_obs: Vec<f32>,
    next_mask: Vec<bool>,
    action: Vec<u32>,
    reward: Vec<f32>,
    discount: Vec<f32>,
    prioritized: Option<(Priorities, SumTree)>,
    /// The largest priority seen, given to new transitions so each is replayed at least once soon.
    max_priority: f64,
}

impl Replay {
    /// A memory of `capacity` transitions; `priorities` None samples uniformly. Refuses a size
    /// that would take more than a quarter of this machine's memory.
    pub fn new(
        capacity: usize,
        obs_len: usize,
        actions: usize,
        priorities: Option<Priorities>,
    ) -> Result<Self, LearnError> {
        let per = (2 * obs_len * 4 + actions + 16) as u64;
        let need = per.saturating_mul(capacity as u64);
        let room = meeple_game::limits::memory() / 4;
        if capacity == 0 || need > room {
            return Err(LearnError::Config(format!(
                "--buffer {capacity}: give 1 to {} transitions ({} each here; a quarter of this machine's memory is {})",
                room / per.max(1),
                meeple_game::limits::format_bytes(per),
                meeple_game::limits::format_bytes(room)
            )));
        }
        Ok(Replay {
            capacity,
            obs_len,
            actions,
            len: 0,
            next: 0,
            obs: Vec::new(),
            next_obs: Vec::new(),
            next_mask: Vec::new(),
            action: Vec::new(),
            reward: Vec::new(),
            discount: Vec::new(),
            prioritized: priorities.map(|p| (p, SumTree::new(capacity))),
            max_priority: 1.0,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The steps over which β anneals (a run of `beta_steps = 0` sets them as it learns how
    /// long it will be).
    pub fn set_beta_steps(&mut self, steps: u64) {
        if let Some((p, _)) = &mut self.prioritized {
            p.beta_steps = steps.max(1);
        }
    }

    /// β at `step` (1 for uniform replay, which has no importance weights).
    pub fn beta_at(&self, step: u64) -> f64 {
        self.prioritized.as_ref().map_or(1.0, |(p, _)| p.beta_at(step))
    }

    pub fn push(&mut self, t: &Transition<'_>) {
        let (k, o, a) = (self.next, self.obs_len, self.actions);
        if self.len < self.capacity {
            // Grow as transitions come, so a large memory costs only what it holds.
            self.obs.extend_from_slice(t.obs);
            self.next_obs.extend_from_slice(if t.discount != 0.0 { t.next_obs } else { t.obs });
            if t.discount != 0.0 {
                self.next_mask.extend_from_slice(t.next_mask);
            } else {
                self.next_mask.resize(self.next_mask.len() + a, false);
            }
            self.action.push(t.action);
            self.reward.push(t.reward);
            self.discount.push(t.discount);
            self.len += 1;
        } else {
            self.obs[k * o..(k + 1) * o].copy_from_slice(t.obs);
            if t.discount != 0.0 {
                self.next_obs[k * o..(k + 1) * o].copy_from_slice(t.next_obs);
                self.next_mask[k * a..(k + 1) * a].copy_from_slice(t.next_mask);
            }
            self.action[k] = t.action;
            self.reward[k] = t.reward;
            self.discount[k] = t.discount;
        }
        if let Some((p, tree)) = &mut self.prioritized {
            tree.set(k, self.max_priority.powf(p.alpha));
        }
        self.next = (k + 1) % self.capacity;
    }

    /// Draws `n` transitions (with replacement) into `out`: uniformly, or in proportion to their
    /// priorities (stratified: one from each of `n` equal slices of the total mass) with
    /// importance weights `(len · P(i))^-β` scaled so the largest in the batch is 1.
    pub fn sample(&self, n: usize, step: u64, rng: &mut Rng, out: &mut Sample) {
        assert!(self.len > 0, "sampling an empty replay memory");
        out.indices.clear();
        out.weights.clear();
        match &self.prioritized {
            None => {
                for _ in 0..n {
                    out.indices.push(rng.random_range(0..self.len));
                    out.weights.push(1.0);
                }
            }
            Some((p, tree)) => {
                let total = tree.total();
                let slice = total / n as f64;
                let beta = p.beta_at(step);
                let mut largest = 0.0f64;
                for i in 0..n {
                    let mass = (i as f64 + rng.random::<f64>()) * slice;
                    let k = tree.find(mass).min(self.len - 1);
                    let prob = (tree.get(k) / total).max(f64::MIN_POSITIVE);
                    let w = (self.len as f64 * prob).powf(-beta);
                    largest = largest.max(w);
                    out.indices.push(k);
                    out.weights.push(w as f32);
                }
                for w in &mut out.weights {
                    *w = (*w as f64 / largest) as f32;
                }
            }
        }
        let (o, a) = (self.obs_len, self.actions);
        out.obs.clear();
        out.next_obs.clear();
        out.next_mask.clear();
        out.actions.clear();
        out.rewards.clear();
        out.discounts.clear();
        for &k in &out.indices {
            out.obs.extend_from_slice(&self.obs[k * o..(k + 1) * o]);
            out.next_obs.extend_from_slice(&self.next_obs[k * o..(k + 1) * o]);
            out.next_mask.extend_from_slice(&self.next_mask[k * a..(k + 1) * a]);
            out.actions.push(self.action[k]);
            out.rewards.push(self.reward[k]);
            out.discounts.push(self.discount[k]);
        }
    }

    /// New priorities from the sampled transitions' TD errors (ignored when sampling uniformly).
    pub fn update(&mut self, indices: &[usize], errors: &[f32]) {
        let Some((p, tree)) = &mut self.prioritized else { return };
        for (&k, &e) in indices.iter().zip(errors) {
            let priority = e.abs() as f64 + p.epsilon;
            self.max_priority = self.max_priority.max(priority);
            tree.set(k, priority.powf(p.alpha));
        }
    }

    /// Transition `k` as stored (`0..len()`, oldest first until the memory wraps).
    pub fn transition(&self, k: usize) -> Transition<'_> {
        let (o, a) = (self.obs_len, self.actions);
        Transition {
            obs: &self.obs[k * o..(k + 1) * o],
            action: self.action[k],
            reward: self.reward[k],
            discount: self.discount[k],
            next_obs: &self.next_obs[k * o..(k + 1) * o],
            next_mask: &self.next_mask[k * a..(k + 1) * a],
        }
    }

    /// The sampling probability of transition `k` (for tests and diagnostics).
    pub fn probability(&self, k: usize) -> f64 {
        match &self.prioritized {
            None => 1.0 / self.len.max(1) as f64,
            Some((_, tree)) => tree.get(k) / tree.total(),
        }
    }
}

/// A decision waiting for its n-step return.
struct Pending {
    obs: Vec<f32>,
    action: u32,
    player: usize,
    reward: f32,
    steps: u32,
}

/// Turns the steps of many games into n-step transitions: each decision waits until `n` more
/// decisions of its game (by either seat) have been made or the game has ended.
pub struct NStep {
    n: u32,
    gamma: f32,
    games: Vec<VecDeque<Pending>>,
    spare: Vec<Vec<f32>>,
}

impl NStep {
    pub fn new(games: usize, n: u32, gamma: f32) -> Self {
        NStep { n: n.max(1), gamma, games: (0..games).map(|_| VecDeque::new()).collect(), spare: Vec::new() }
    }

    /// Game `game`'s seat `player` chose `action` seeing `obs`.
    pub fn decide(&mut self, game: usize, obs: &[f32], action: u32, player: usize) {
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(obs);
        self.games[game].push_back(Pending { obs: buf, action, player, reward: 0.0, steps: 0 });
    }

    /// The step after game `game`'s last decision: every seat's `rewards`, and either the
    /// game's end (`ended`), or the next decision (`next_player` seeing `next_obs`, legal
    /// `next_mask`). Completed transitions go to `emit`. A game cut off (`truncated`) drops its
    /// waiting decisions: nothing is known of their returns.
    #[allow(clippy::too_many_arguments)]
    pub fn step(
        &mut self,
        game: usize,
        rewards: &[f32],
        ended: bool,
        truncated: bool,
        next_player: usize,
        next_obs: &[f32],
        next_mask: &[bool],
        mut emit: impl FnMut(&Transition<'_>),
    ) {
        let queue = &mut self.games[game];
        for p in queue.iter_mut() {
            p.reward += self.gamma.powi(p.steps as i32) * rewards.get(p.player).copied().unwrap_or(0.0);
            p.steps += 1;
        }
        while let Some(front) = queue.front() {
            if !(ended || truncated || front.steps >= self.n) {
                break;
            }
            let p = queue.pop_front().expect("a front");
            if !truncated {
                let discount = if ended {
                    0.0
                } else {
                    let sign = if next_player == p.player { 1.0 } else { -1.0 };
                    sign * self.gamma.powi(p.steps as i32)
                };
                emit(&Transition { obs: &p.obs, action: p.action, reward: p.reward, discount, next_obs, next_mask });
            }
            self.spare.push(p.obs);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meeple_game::rng_from_seed;

    #[test]
    fn the_sum_tree_keeps_sums_and_finds_by_mass() {
        let mut t = SumTree::new(5);
        for (k, p) in [1.0, 0.0, 3.0, 2.0, 4.0].into_iter().enumerate() {
            t.set(k, p);
        }
        assert_eq!(t.total(), 10.0);
        // Masses [0,1) item 0, [1,4) item 2 (item 1 has none), [4,6) item 3, [6,10) item 4.
        for (mass, k) in [(0.0, 0), (0.99, 0), (1.0, 2), (3.99, 2), (4.0, 3), (5.5, 3), (6.0, 4), (9.99, 4)] {
            assert_eq!(t.find(mass), k, "mass {mass}");
        }
        // The top of the range and beyond never give an empty item.
        assert_eq!(t.find(10.0), 4);
        assert_eq!(t.find(1e9), 4);
        t.set(2, 0.5);
        assert_eq!(t.total(), 7.5);
        assert_eq!(t.get(2), 0.5);
        assert_eq!(t.find(1.2), 2);
        assert_eq!(t.find(1.5), 3);
        t.set(4, f64::NAN);
        assert_eq!(t.total(), 3.5);
        t.set(3, -1.0);
        assert_eq!(t.total(), 1.5);
    }

    /// Sampled by priority: each transition's share of 200,000 draws is its priority's share.
    #[test]
    fn prioritized_replay_samples_in_proportion_and_weights_by_importance() {
        let p = Priorities { alpha: 1.0, beta: 1.0, beta_steps: 1, epsilon: 0.0 };
        let mut r = Replay::new(4, 1, 2, Some(p)).unwrap();
        for k in 0..4 {
            let obs = [k as f32];
            r.push(&Transition { obs: &obs, action: 0, reward: 0.0, discount: 0.0, next_obs: &obs, next_mask: &[] });
        }
        r.update(&[0, 1, 2, 3], &[1.0, 2.0, 3.0, 4.0]);
        let mut rng = rng_from_seed(3);
        let mut counts = [0usize; 4];
        let mut s = Sample::default();
        for _ in 0..25_000 {
            r.sample(8, 0, &mut rng, &mut s);
            for (&k, (&obs, &w)) in s.indices.iter().zip(s.obs.iter().zip(&s.weights)) {
                counts[k] += 1;
                assert_eq!(obs, k as f32, "the sample's rows are the drawn transitions");
                // β = 1: w ∝ 1 / P(k), the rarest drawn (here) weighing 1 at most.
                assert!(w > 0.0 && w <= 1.0);
            }
        }
        for (k, &c) in counts.iter().enumerate() {
            let share = c as f64 / 200_000.0;
            let want = (k + 1) as f64 / 10.0;
            assert!((share - want).abs() < 0.005, "item {k}: {share} vs {want}");
            assert!((r.probability(k) - want).abs() < 1e-12);
        }
        // A batch of the four: weights 1/P scaled so the largest is 1.
        let mut s = Sample::default();
        loop {
            r.sample(4, 0, &mut rng, &mut s);
            if s.indices == [0, 1, 2, 3] {
                break;
            }
        }
        for (k, &w) in s.weights.iter().enumerate() {
            assert!((w as f64 - 1.0 / (k + 1) as f64).abs() < 1e-6, "{:?}", s.weights);
        }
    }

    /// A new transition enters at the largest priority seen so far (Schaul et al.: so every
    /// transition is replayed at least once), not at its own or the newest's.
    #[test]
    fn new_transitions_enter_at_the_largest_priority_seen() {
        let p = Priorities { alpha: 1.0, beta: 1.0, beta_steps: 1, epsilon: 0.0 };
        let mut r = Replay::new(8, 1, 2, Some(p)).unwrap();
        let push = |r: &mut Replay, k: usize| {
            let obs = [k as f32];
            r.push(&Transition { obs: &obs, action: 0, reward: 0.0, discount: 0.0, next_obs: &obs, next_mask: &[] });
        };
        for k in 0..3 {
            push(&mut r, k);
        }
        r.update(&[0, 1, 2], &[0.5, 7.0, 2.0]);
        // Item 1's 7 was the largest, though item 2's was set last.
        push(&mut r, 3);
        let total = 0.5 + 7.0 + 2.0 + 7.0;
        assert!((r.probability(3) - 7.0 / total).abs() < 1e-12, "{}", r.probability(3));
        // β anneals over the steps a run sets, and 0 steps means the default until it does.
        assert_eq!(Priorities { beta: 0.4, beta_steps: 0, ..p }.beta_at(DEFAULT_BETA_STEPS / 2), 0.7);
        r.set_beta_steps(10);
        assert_eq!(r.beta_at(5), 1.0);
        let mut q = Replay::new(8, 1, 2, Some(Priorities { beta: 0.4, beta_steps: 0, ..p })).unwrap();
        q.set_beta_steps(10);
        assert!((q.beta_at(5) - 0.7).abs() < 1e-12);
    }

    #[test]
    fn uniform_replay_overwrites_the_oldest_and_samples_evenly() {
        let mut r = Replay::new(3, 1, 1, None).unwrap();
        for k in 0..5 {
            let obs = [k as f32];
            r.push(&Transition { obs: &obs, action: k, reward: 0.0, discount: 0.0, next_obs: &obs, next_mask: &[] });
        }
        assert_eq!(r.len(), 3);
        let mut rng = rng_from_seed(1);
        let mut s = Sample::default();
        let mut seen = [0usize; 5];
        for _ in 0..3000 {
            r.sample(4, 0, &mut rng, &mut s);
            assert!(s.weights.iter().all(|&w| w == 1.0));
            for &a in &s.actions {
                seen[a as usize] += 1;
            }
        }
        // Transitions 0 and 1 were overwritten by 3 and 4.
        assert_eq!(seen[..2], [0, 0]);
        for &c in &seen[2..] {
            assert!((c as f64 / 12_000.0 - 1.0 / 3.0).abs() < 0.02, "{seen:?}");
        }
        assert!(Replay::new(0, 1, 1, None).is_err());
        assert!(Replay::new(usize::MAX / 64, 1000, 10, None).is_err());
    }

    type Row = (f32, u32, f32, f32, f32);

    /// One step of game 0 into rows (obs, action, reward, discount, next obs or -1 at an end).
    fn step(n: &mut NStep, rewards: &[f32], ended: bool, cut: bool, next_player: usize, next: f32) -> Vec<Row> {
        let mut out = Vec::new();
        n.step(0, rewards, ended, cut, next_player, &[next], &[true], |t| {
            let next = if t.discount != 0.0 { t.next_obs[0] } else { -1.0 };
            out.push((t.obs[0], t.action, t.reward, t.discount, next));
        });
        out
    }

    /// One game by hand, γ 0.5, n 2. Seats alternate: A (0) plays at t0, B (1) at t1, A at t2,
    /// then A wins (rewards +1 for A, -1 for B at the last step).
    #[test]
    fn n_step_returns_by_hand() {
        let mut n = NStep::new(1, 2, 0.5);
        let none = [0.0, 0.0];
        n.decide(0, &[0.0], 10, 0);
        assert!(step(&mut n, &none, false, false, 1, 1.0).is_empty(), "one step of two");
        n.decide(0, &[1.0], 11, 1);
        // A small reward for A on B's move counts for A at γ^1; t0 is done after two steps, A to
        // move again at obs 2: discount +γ².
        assert_eq!(step(&mut n, &[0.25, 0.0], false, false, 0, 2.0), [(0.0, 10, 0.125, 0.25, 2.0)]);
        n.decide(0, &[2.0], 12, 0);
        // B's t1: -1 at its second step (γ): -0.5, ended; A's t2: +1 at once, ended.
        assert_eq!(
            step(&mut n, &[1.0, -1.0], true, false, 0, 9.0),
            [(1.0, 11, -0.5, 0.0, -1.0), (2.0, 12, 1.0, 0.0, -1.0)]
        );
        // With n 1 the opponent is to move next: the discount is -γ.
        let mut n = NStep::new(1, 1, 0.5);
        n.decide(0, &[0.0], 3, 0);
        assert_eq!(step(&mut n, &none, false, false, 1, 1.0), [(0.0, 3, 0.0, -0.5, 1.0)]);
        // A game cut off leaves no transitions for its waiting decisions.
        let mut n = NStep::new(1, 3, 0.5);
        n.decide(0, &[0.0], 3, 0);
        assert!(step(&mut n, &none, false, true, 1, 1.0).is_empty());
    }
}
