//! The Gumbel search's mathematics over one node's children (Danihelka, Guez, Schrittwieser
//! and Silver, "Policy improvement by planning with Gumbel", ICLR 2022), as free functions the
//! search and the hand-computed tests both call: completed Q (eq. 10 and appendix D's v_mix),
//! the monotone transformation σ, the improved policy `softmax(logits + σ(completed Q))`, the
//! deterministic selection below the root (eq. 14) and sequential halving's survivors.

/// One child as the formulas read it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Child {
    pub visits: u32,
    /// The network's prior (softmax of the logits) of the move.
    pub prior: f32,
    pub logit: f32,
    /// The child's value for the node's mover (read only where it was visited).
    pub q: f32,
}

/// Completed Q: each visited child's value, the unvisited ones' the mixed value
/// `v_mix = (v̂ + N / Σ_visited π · Σ_visited π q) / (1 + N)` (N the children's visits, v̂ the
/// network's value of the node; v̂ alone with no visit).
pub fn completed_q(children: &[Child], v_hat: f32, out: &mut Vec<f32>) {
    let (mut visits, mut pi_visited, mut pi_q) = (0u32, 0.0f32, 0.0f32);
    for c in children {
        if c.visits > 0 {
            visits += c.visits;
            pi_visited += c.prior;
            pi_q += c.prior * c.q;
        }
    }
    let v_mix = if visits > 0 && pi_visited > 0.0 {
        (v_hat + visits as f32 / pi_visited * pi_q) / (1.0 + visits as f32)
    } else {
        v_hat
    };
    out.clear();
    out.extend(children.iter().map(|c| if c.visits > 0 { c.q } else { v_mix }));
}

/// Stretches `q` to [0, 1] by its smallest and largest (mctx's
/// `qtransform_completed_by_mix_value`): σ then weighs the differences between the moves, not
/// how near a win the position is.
pub fn rescale(q: &mut [f32]) {
    let lo = q.iter().copied().fold(f32::INFINITY, f32::min);
    let hi = q.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let span = (hi - lo).max(1e-8);
    for v in q.iter_mut() {
        *v = (*v - lo) / span;
    }
}

/// `σ(q) = (c_visit + max_b N(b)) · c_scale · q`.
pub fn sigma(q: f32, max_visits: u32, c_visit: f32, c_scale: f32) -> f32 {
    (c_visit + max_visits as f32) * c_scale * q
}

/// The improved policy `softmax(logit + σ(q))` over the children, `q` their (transformed)
/// completed Q, into `out`.
pub fn improved_policy(children: &[Child], q: &[f32], c_visit: f32, c_scale: f32, out: &mut Vec<f32>) {
    let max_visits = children.iter().map(|c| c.visits).max().unwrap_or(0);
    out.clear();
    out.extend(children.iter().zip(q).map(|(c, &qi)| c.logit + sigma(qi, max_visits, c_visit, c_scale)));
    let max = out.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    for s in out.iter_mut() {
        *s = (*s - max).exp();
    }
    let total: f32 = out.iter().sum();
    for p in out.iter_mut() {
        *p /= total;
    }
}

/// The child a descent below the root visits (eq. 14): the largest `π'(a) - N(a) / (1 + total)`,
/// `total` the node's visits below it; the first on a tie.
pub fn select(children: &[Child], pi: &[f32], total: u32) -> usize {
    let mut best = (f32::NEG_INFINITY, 0);
    for (k, (c, &p)) in children.iter().zip(pi).enumerate() {
        let score = p - c.visits as f32 / (1.0 + total as f32);
        if score > best.0 {
            best = (score, k);
        }
    }
    best.1
}

/// Candidates a halving of sequential halving keeps out of `n`: half, never fewer than two
/// (the last phases share what is left of the budget between the final pair).
pub fn halving_keeps(n: usize) -> usize {
    (n / 2).max(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f32], b: &[f32]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-5)
    }

    /// By hand: visited children q 0.8 (prior 0.5, 2 visits) and 0.2 (prior 0.25, 1 visit), one
    /// unvisited (prior 0.25), v̂ 0.4: N = 3, Σπ = 0.75, Σπq = 0.45, v_mix = (0.4 + 3 / 0.75 ·
    /// 0.45) / 4 = 0.55.
    #[test]
    fn completed_q_gives_unvisited_children_the_mixed_value() {
        let kids = [
            Child { visits: 2, prior: 0.5, logit: 0.0, q: 0.8 },
            Child { visits: 1, prior: 0.25, logit: 0.0, q: 0.2 },
            Child { visits: 0, prior: 0.25, logit: 0.0, q: 0.0 },
        ];
        let mut q = Vec::new();
        completed_q(&kids, 0.4, &mut q);
        assert!(close(&q, &[0.8, 0.2, 0.55]), "{q:?}");
        // No visit: every child is v̂.
        completed_q(&[Child::default(); 2], 0.3, &mut q);
        assert!(close(&q, &[0.3, 0.3]), "{q:?}");
        // Rescaled: (q - 0.2) / 0.6.
        let mut r = vec![0.8, 0.2, 0.55];
        rescale(&mut r);
        assert!(close(&r, &[1.0, 0.0, 0.35 / 0.6]), "{r:?}");
    }

    /// By hand: σ = (50 + 2) · 0.1 · q = 5.2 q; logits (0, ln 2, 0) and q (1, 0, 0) score
    /// (5.2, 0.693, 0): π' = (e^5.2, 2, 1) / (e^5.2 + 3) = (0.98319, 0.01092, 0.00546).
    #[test]
    fn the_improved_policy_is_the_softmax_of_logits_and_sigma() {
        assert!((sigma(0.5, 2, 50.0, 0.1) - 2.6).abs() < 1e-6);
        let kids = [
            Child { visits: 2, prior: 0.25, logit: 0.0, q: 1.0 },
            Child { visits: 1, prior: 0.5, logit: 2f32.ln(), q: 0.0 },
            Child { visits: 0, prior: 0.25, logit: 0.0, q: 0.0 },
        ];
        let mut pi = Vec::new();
        improved_policy(&kids, &[1.0, 0.0, 0.0], 50.0, 0.1, &mut pi);
        let e = 5.2f32.exp();
        assert!(close(&pi, &[e / (e + 3.0), 2.0 / (e + 3.0), 1.0 / (e + 3.0)]), "{pi:?}");
        // Below the root, the visit that brings the visits nearest π': with 3 visits, scores
        // 0.983 - 2/4, 0.011 - 1/4, 0.005 - 0: the first.
        assert_eq!(select(&kids, &pi, 3), 0);
        // A policy the visits already match sends the next visit to the one furthest behind.
        assert_eq!(select(&kids, &[0.5, 0.25, 0.25], 3), 2);
    }

    #[test]
    fn sequential_halving_keeps_half_and_never_fewer_than_two() {
        assert_eq!([16, 8, 5, 4, 3, 2].map(halving_keeps), [8, 4, 2, 2, 2, 2]);
    }
}
