//! The PUCT search's mathematics over one node's children (Silver et al., "Mastering the game
//! of Go without human knowledge", 2017, with KataGo's forced playouts and policy target
//! pruning, Wu 2019, 3.1), as free functions the search and the hand-computed tests both call:
//! the exploration term, first-play urgency, the selection rule and the pruned policy target.

/// One child as the formulas read it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Child {
    /// The child's (noised) prior.
    pub prior: f32,
    pub visits: u32,
    /// The child's mean value for the node's mover (read only where it was visited).
    pub q: f32,
}

/// PUCT's exploration term `c · P · √N / (1 + n)` of a child with `visits` under a parent
/// with √N = `sqrt_n`; the descent and policy target pruning score children by the same one.
pub fn exploration(c_puct: f32, prior: f32, sqrt_n: f32, visits: u32) -> f32 {
    c_puct * prior * sqrt_n / (1.0 + visits as f32)
}

/// The value an unvisited child counts with: its parent's, less the first-play urgency
/// reduction `fpu`, never below a loss.
pub fn unvisited_q(parent_q: f32, fpu: f32) -> f32 {
    (parent_q - fpu).max(0.0)
}

/// KataGo's forced-playout quota `√(k · P · Σ n)` of a child with prior `prior` when the
/// root's children hold `child_visits` visits.
pub fn forced_quota(k: f32, prior: f32, child_visits: u32) -> f32 {
    (k * prior * child_visits as f32).sqrt()
}

/// The child a descent visits (its index among `children`): the largest
/// `q + exploration`, an unvisited child valued by [`unvisited_q`]; with forced playouts
/// (`k > 0`, the root only), a child below its [`forced_quota`] comes before any score. The
/// first on a tie. `parent_visits` is the node's own visit count.
pub fn select(
    children: impl Iterator<Item = Child> + Clone,
    parent_visits: u32,
    parent_q: f32,
    c_puct: f32,
    fpu: f32,
    k: f32,
) -> usize {
    let sqrt_n = (parent_visits.max(1) as f32).sqrt();
    let child_visits: u32 = if k > 0.0 { children.clone().map(|c| c.visits).sum() } else { 0 };
    let mut best = (false, f32::NEG_INFINITY, 0);
    for (i, c) in children.enumerate() {
        let forced = k > 0.0 && (c.visits as f32) < forced_quota(k, c.prior, child_visits);
        let q = if c.visits > 0 { c.q } else { unvisited_q(parent_q, fpu) };
        let score = q + exploration(c_puct, c.prior, sqrt_n, c.visits);
        if (forced, score) > (best.0, best.1) {
            best = (forced, score, i);
        }
    }
    best.2
}

/// The visits the policy target keeps (Wu 2019, 3.1): every child but `best` gives back up to
/// its forced quota, while its PUCT score (with the root's `parent_visits`, as the descent
/// scored it) stays below `best`'s; a child left with one visit is dropped.
pub fn prune_forced(children: &[Child], best: usize, parent_visits: u32, c_puct: f32, k: f32) -> Vec<u32> {
    let sqrt_n = (parent_visits.max(1) as f32).sqrt();
    let puct = |c: &Child, n: u32| c.q + exploration(c_puct, c.prior, sqrt_n, n);
    let bar = puct(&children[best], children[best].visits);
    let child_visits: u32 = children.iter().map(|c| c.visits).sum();
    children
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if i == best || c.visits == 0 {
                return c.visits;
            }
            let floor = c.visits.saturating_sub(forced_quota(k, c.prior, child_visits) as u32);
            let mut n = c.visits;
            while n > floor && puct(c, n - 1) < bar {
                n -= 1;
            }
            if n <= 1 { 0 } else { n }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn child(prior: f32, visits: u32, q: f32) -> Child {
        Child { prior, visits, q }
    }

    /// By hand (c 2, fpu 0.25, parent visits 16, parent q 0.6, so √N = 4):
    /// A: 0.5 + 2 · 0.2 · 4 / 4 = 0.9; B: 0.3 + 2 · 0.5 · 4 / 2 = 2.3; C unvisited:
    /// (0.6 - 0.25) + 2 · 0.3 · 4 = 2.75. C is chosen; with fpu 1 its value is max(0.6 - 1, 0)
    /// = 0, 0 + 2.4 = 2.4, still above B; with c 1: A 0.7, B 1.3, C 0.35 + 1.2 = 1.55.
    #[test]
    fn selection_is_q_plus_exploration_with_first_play_urgency_for_the_unvisited() {
        let kids = [child(0.2, 3, 0.5), child(0.5, 1, 0.3), child(0.3, 0, 0.0)];
        assert!((exploration(2.0, 0.5, 4.0, 1) - 2.0).abs() < 1e-6);
        assert!((unvisited_q(0.6, 0.25) - 0.35).abs() < 1e-6);
        assert_eq!(unvisited_q(0.6, 1.0), 0.0);
        assert_eq!(select(kids.iter().copied(), 16, 0.6, 2.0, 0.25, 0.0), 2);
        assert_eq!(select(kids.iter().copied(), 16, 0.6, 2.0, 1.0, 0.0), 2);
        // A large enough first-play urgency sends the visit to B: c 1, fpu 0.6 gives C 0 + 1.2.
        assert_eq!(select(kids.iter().copied(), 16, 0.6, 1.0, 0.6, 0.0), 1);
        // c 0 is greedy on q: A.
        assert_eq!(select(kids.iter().copied(), 16, 0.6, 0.0, 0.25, 0.0), 0);
    }

    /// Forced playouts (k 2, 4 children visits): A's quota √(2 · 0.1 · 4) = 0.89, so with 3
    /// visits it is not forced; B's (prior 0.9, 1 visit) √7.2 = 2.68 forces it ahead of every
    /// score; C (prior 0) has no quota. Greedy (c 0, fpu 0) without forcing: A's 0.5 ties the
    /// unvisited C's (its parent's 0.5), and the first wins.
    #[test]
    fn a_child_below_its_forced_quota_comes_first() {
        let kids = [child(0.1, 3, 0.5), child(0.9, 1, 0.0), child(0.0, 0, 0.9)];
        assert!((forced_quota(2.0, 0.9, 4) - 7.2f32.sqrt()).abs() < 1e-6);
        assert_eq!(select(kids.iter().copied(), 5, 0.5, 0.0, 0.0, 0.0), 0, "greedy without forcing");
        assert_eq!(select(kids.iter().copied(), 5, 0.5, 0.0, 0.0, 2.0), 1, "forced");
    }

    #[test]
    fn policy_target_pruning_gives_back_forced_visits_while_the_puct_score_stays_below_the_best() {
        // Hand-checked (c_puct 2, k 2, 101 root visits, 100 in the children). The best, A:
        // 0.6 + 2 · 0.5 · √101 / 78 = 0.72885. B (quota √20, 4 back at most): B's score stays below
        // A's down to 6 visits, so the quota binds: 15 → 11. C: already above A's score at 5
        // visits, nothing back. D: below it down to one visit, so dropped.
        let children =
            [child(0.5, 77, 0.6), child(0.1, 15, 0.4), child(0.4, 5, 0.1), child(0.05, 3, 0.0), child(0.2, 0, 0.0)];
        assert_eq!(prune_forced(&children, 0, 101, 2.0, 2.0), vec![77, 11, 5, 0, 0]);
        // A tighter quota binds D before its last visit: k 0.5 gives back √2.5 → 1.
        assert_eq!(prune_forced(&children, 0, 101, 2.0, 0.5)[3], 2);
    }
}
