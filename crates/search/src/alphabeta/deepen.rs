//! Iterative deepening at the root: one iteration over the root's moves, the deepening loop
//! and its form over sampled worlds for hidden information.

use super::*;

impl<S: State> AlphaBeta<S> {
    /// One iteration at the root. Returns each fully searched root move with its value (exact
    /// with `full_window`, else exact for the best and upper bounds for the rest), best first.
    pub(super) fn root_iteration(
        &mut self,
        state: &S,
        depth: u32,
        first: Action,
        full_window: bool,
        window: (f64, f64),
    ) -> Vec<(Action, f64)> {
        self.ensure_ply(0);
        self.ordered_moves(state, 0, self.root_player, first, true);
        let moves = self.moves[0].clone();
        let mut results: Vec<(Action, f64)> = Vec::with_capacity(moves.len());
        let (mut alpha, beta) = if full_window { (-INF, INF) } else { window };
        for (i, a) in moves.into_iter().enumerate() {
            let mut child = state.clone();
            child.apply_unchecked(a);
            // Principal variation search at the root too: a later move first has to show with a
            // null window that it beats the best so far.
            let v = if full_window {
                self.search(&child, depth - 1, 1, -INF, INF)
            } else if i == 0 || alpha == -INF {
                self.search(&child, depth - 1, 1, alpha, beta)
            } else {
                let v = self.search(&child, depth - 1, 1, alpha, next_up(alpha));
                if v > alpha && v < beta && !self.aborted { self.search(&child, depth - 1, 1, alpha, beta) } else { v }
            };
            if self.aborted {
                break;
            }
            results.push((a, v));
            alpha = alpha.max(v);
            if alpha >= beta {
                break; // above the aspiration window: the caller searches again with a wider one
            }
        }
        // Stable: among equal values the earlier (better ordered) move stays first.
        results.sort_by(|x, y| y.1.total_cmp(&x.1));
        results
    }

    /// Iterative deepening on one (determinized) state until a limit; returns the root moves of
    /// the deepest useful iteration and the depth completed.
    pub(super) fn deepen(
        &mut self,
        state: &S,
        max_depth: u32,
        (budget_time, stop): (Option<Duration>, Option<Instant>),
        full_window: bool,
        start: Instant,
    ) -> (Vec<(Action, f64)>, u32) {
        self.start_clock(start, stop);
        self.aborted = false;
        let mut best: Vec<(Action, f64)> = Vec::new();
        let mut completed = 0;
        // Plain search is one fixed-depth pass, as the reports' minimax was.
        let first_depth = if self.config.plain { max_depth } else { 1 };
        // Aspiration: from depth 3 the iteration starts with a window around the last value,
        // as wide as the value moved between the last iterations; a result outside it is
        // searched again with that side open.
        let mut values: Vec<f64> = Vec::new();
        for depth in first_depth..=max_depth {
            let first = best.first().map_or(Action::MAX, |m| m.0);
            self.saw_chance = false;
            let mut window = (-INF, INF);
            if !full_window
                && !self.config.plain
                && let [.., a, b] = values[..]
                && b.abs() < MATE_BOUND
                && a.abs() < MATE_BOUND
            {
                // Centred on the value of the same parity (one side's extra move at the horizon
                // makes values alternate between odd and even depths).
                let delta = (b - a).abs().max(1e-3 * (1.0 + a.abs()));
                window = (a - delta, a + delta);
            }
            let mut results = self.root_iteration(state, depth, first, full_window, window);
            while !self.aborted
                && let Some(&(_, v)) = results.first()
            {
                if v <= window.0 && window.0 > -INF {
                    window.0 = -INF;
                } else if v >= window.1 && window.1 < INF {
                    window.1 = INF;
                } else {
                    break;
                }
                self.researches += 1;
                results = self.root_iteration(state, depth, first, full_window, window);
            }
            if self.aborted {
                // A partial iteration still counts if it searched the previous best move first
                // and found something at least as good; otherwise keep the completed one.
                if !full_window
                    && let (Some(new), Some(old)) = (results.first(), best.first())
                    && results.iter().any(|m| m.0 == old.0)
                    && new.1 >= old.1
                {
                    best = results;
                }
                break;
            }
            best = results;
            completed = depth;
            if let Some(m) = best.first() {
                values.push(m.1);
            }
            // A forced win or loss does not change with more depth.
            if !self.saw_chance && !full_window && best.first().is_some_and(|m| m.1.abs() > MATE_BOUND) {
                break;
            }
            if let Some(stop) = self.deadline
                && start.elapsed() * 2 > budget_time.unwrap_or_else(|| stop.saturating_duration_since(start))
            {
                break; // the next iteration would most likely not finish
            }
        }
        (best, completed)
    }

    /// Iterative deepening across `count` determinized worlds of `state`: each depth is searched
    /// in every world before the next depth starts, so all worlds are compared at the same depth
    /// and the whole time budget is used. The result is the last depth completed in every world,
    /// each root move's exact values summed over the worlds, and the number of worlds summed.
    /// Worlds are sampled as the first iteration reaches them, on the clock; if time runs out
    /// before the first iteration has seen every world, the worlds it finished decide.
    pub(super) fn deepen_worlds(
        &mut self,
        state: &S,
        root: Player,
        count: usize,
        max_depth: u32,
        stop: Option<Instant>,
        start: Instant,
    ) -> (Vec<(Action, f64)>, u32, usize) {
        self.start_clock(start, stop);
        self.aborted = false;
        let mut worlds: Vec<S> = Vec::new();
        let mut best: Vec<(Action, f64)> = Vec::new();
        let (mut completed, mut used) = (0, 0);
        let first_depth = if self.config.plain { max_depth } else { 1 };
        for depth in first_depth..=max_depth {
            let mut sum: Vec<(Action, f64)> = Vec::new();
            let first = best.first().map_or(Action::MAX, |m| m.0);
            let mut finished = 0;
            for w in 0..count {
                if w == worlds.len() {
                    if stop.is_some_and(|d| Instant::now() >= d) {
                        self.aborted = true;
                        break;
                    }
                    worlds.push(state.determinize(root, &mut self.rng));
                }
                self.key_salt = meeple_game::zobrist::splitmix64(((root as u64) << 32) | (w as u64 + 1));
                let results = self.root_iteration(&worlds[w], depth, first, true, (-INF, INF));
                if self.aborted {
                    break;
                }
                for (a, v) in results {
                    match sum.iter_mut().find(|m| m.0 == a) {
                        Some(m) => m.1 += v,
                        None => sum.push((a, v)),
                    }
                }
                finished += 1;
            }
            if self.aborted && !(completed == 0 && finished > 0) {
                break;
            }
            sum.sort_by(|x, y| y.1.total_cmp(&x.1));
            best = sum;
            used = finished;
            completed = depth;
            if self.aborted {
                break;
            }
        }
        (best, completed, used)
    }
}
