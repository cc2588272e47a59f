//! Ratings from a results table: maximum-likelihood Bradley-Terry (Elo) fitted over all games at
//! once, with intervals from the likelihood, and the sequential probability ratio test.
//!
//! Sequential K-factor updates (as the seed reports used) depend on the order of games; a
//! maximum-likelihood fit over the whole table does not.

/// Head-to-head results of agent `a` against agent `b` (from `a`'s side).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Pairing {
    pub a: usize,
    pub b: usize,
    pub wins: f64,
    pub draws: f64,
    pub losses: f64,
}

impl Pairing {
    fn games(&self) -> f64 {
        self.wins + self.draws + self.losses
    }
}

/// Fitted ratings: Elo points relative to the anchor (rated 0), with a symmetric interval.
#[derive(Clone, Debug, PartialEq)]
pub struct Ratings {
    pub elo: Vec<f64>,
    /// `[low, high]` at the requested confidence; the anchor's is `[0, 0]`.
    pub interval: Vec<[f64; 2]>,
}

const ELO_PER_NAT: f64 = 400.0 / std::f64::consts::LN_10;

/// Maximum-likelihood Elo for `agents` agents from `pairings` (draws count half a win each
/// way), anchored so `anchor` is 0, with intervals at normal quantile `z`.
///
/// One virtual draw is added to every pairing that was played, a weak prior that keeps ratings
/// finite when an agent won or lost every game (the usual practice, as in BayesElo). Agents
/// that never played get 0 with an infinite interval.
pub fn fit_elo(agents: usize, pairings: &[Pairing], anchor: usize, z: f64) -> Ratings {
    let mut score = vec![vec![0.0; agents]; agents];
    let mut games = vec![vec![0.0; agents]; agents];
    for p in pairings {
        if p.a == p.b || p.games() == 0.0 {
            continue;
        }
        let (w, n) = (p.wins + 0.5 * p.draws, p.games());
        score[p.a][p.b] += w + 0.5;
        score[p.b][p.a] += n - w + 0.5;
        games[p.a][p.b] += n + 1.0;
        games[p.b][p.a] += n + 1.0;
    }
    // Minorization-maximization (Hunter 2004) on strengths gamma = exp(theta).
    let mut gamma = vec![1.0f64; agents];
    for _ in 0..10_000 {
        let mut change: f64 = 0.0;
        for i in 0..agents {
            let wins: f64 = score[i].iter().sum();
            let denom: f64 =
                (0..agents).filter(|&j| games[i][j] > 0.0).map(|j| games[i][j] / (gamma[i] + gamma[j])).sum();
            if denom > 0.0 && wins > 0.0 {
                let new = wins / denom;
                change = change.max((new.ln() - gamma[i].ln()).abs());
                gamma[i] = new;
            }
        }
        let norm = gamma[anchor.min(agents - 1)];
        gamma.iter_mut().for_each(|g| *g /= norm);
        if change < 1e-12 {
            break;
        }
    }
    let theta: Vec<f64> = gamma.iter().map(|g| g.ln()).collect();
    // Observed information (negative Hessian of the log-likelihood in theta), anchor removed.
    let free: Vec<usize> = (0..agents).filter(|&i| i != anchor).collect();
    let k = free.len();
    let mut info = vec![vec![0.0; k]; k];
    for (x, &i) in free.iter().enumerate() {
        for j in 0..agents {
            if games[i][j] == 0.0 {
                continue;
            }
            let p = 1.0 / (1.0 + (theta[j] - theta[i]).exp());
            let w = games[i][j] * p * (1.0 - p);
            info[x][x] += w;
            if let Some(y) = free.iter().position(|&f| f == j) {
                info[x][y] -= w;
            }
        }
    }
    let cov = invert(info);
    let mut elo = vec![0.0; agents];
    let mut interval = vec![[0.0, 0.0]; agents];
    for i in 0..agents {
        elo[i] = theta[i] * ELO_PER_NAT;
    }
    for (x, &i) in free.iter().enumerate() {
        let sd = cov.as_ref().map_or(f64::INFINITY, |c| c[x][x].max(0.0).sqrt() * ELO_PER_NAT);
        interval[i] = [elo[i] - z * sd, elo[i] + z * sd];
    }
    Ratings { elo, interval }
}

/// One agent's maximum-likelihood Elo against opponents of known, fixed ratings (a ladder
/// rated once, beforehand): `results` holds (opponent's Elo, wins, draws, losses). As in
/// [`fit_elo`], one virtual draw per opponent played keeps the rating finite when every game was
/// won or lost. Returns the rating and its interval at normal quantile `z`, or `None` when no
/// games were played.
pub fn elo_against_fixed(results: &[(f64, f64, f64, f64)], z: f64) -> Option<(f64, [f64; 2])> {
    let played: Vec<(f64, f64, f64)> = results
        .iter()
        .filter(|r| r.1 + r.2 + r.3 > 0.0 && r.0.is_finite())
        .map(|&(elo, w, d, l)| (elo / ELO_PER_NAT, w + 0.5 * d + 0.5, w + d + l + 1.0))
        .collect();
    if played.is_empty() {
        return None;
    }
    // Newton's method on the concave log-likelihood in theta; it starts at the opponents' mean.
    let mut theta = played.iter().map(|p| p.0).sum::<f64>() / played.len() as f64;
    let mut info = 0.0;
    for _ in 0..100 {
        let (mut grad, mut hess) = (0.0, 0.0);
        for &(opp, score, n) in &played {
            let p = 1.0 / (1.0 + (opp - theta).exp());
            grad += score - n * p;
            hess += n * p * (1.0 - p);
        }
        info = hess;
        let step = (grad / hess.max(1e-12)).clamp(-2.0, 2.0);
        theta += step;
        if step.abs() < 1e-12 {
            break;
        }
    }
    let elo = theta * ELO_PER_NAT;
    let sd = if info > 0.0 { ELO_PER_NAT / info.sqrt() } else { f64::INFINITY };
    Some((elo, [elo - z * sd, elo + z * sd]))
}

/// Gauss-Jordan inverse; `None` if singular (an agent with no games).
fn invert(mut m: Vec<Vec<f64>>) -> Option<Vec<Vec<f64>>> {
    let n = m.len();
    let mut inv: Vec<Vec<f64>> = (0..n).map(|i| (0..n).map(|j| if i == j { 1.0 } else { 0.0 }).collect()).collect();
    for col in 0..n {
        let pivot = (col..n).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        if m[pivot][col].abs() < 1e-12 {
            return None;
        }
        m.swap(col, pivot);
        inv.swap(col, pivot);
        let d = m[col][col];
        for j in 0..n {
            m[col][j] /= d;
            inv[col][j] /= d;
        }
        for r in 0..n {
            if r != col {
                let f = m[r][col];
                if f != 0.0 {
                    for j in 0..n {
                        m[r][j] -= f * m[col][j];
                        inv[r][j] -= f * inv[col][j];
                    }
                }
            }
        }
    }
    Some(inv)
}

/// The normal quantile for a two-sided interval at `confidence` (0 < confidence < 1), by
/// Acklam's rational approximation (relative error below 1.2e-9).
pub fn z_for_confidence(confidence: f64) -> f64 {
    inverse_normal(0.5 + confidence / 2.0)
}

fn inverse_normal(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.38357751867269e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] =
        [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
    let (lo, hi) = (0.02425, 1.0 - 0.02425);
    if p < lo {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= hi {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -inverse_normal(1.0 - p)
    }
}

/// A sequential probability ratio test of H0: Elo difference = `elo0` against H1: = `elo1`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sprt {
    pub elo0: f64,
    pub elo1: f64,
    pub alpha: f64,
    pub beta: f64,
}

/// What an SPRT says so far; at the end of a match, `Continue` means the game limit came
/// first. Written `H0`, `H1` and `inconclusive` in results files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SprtDecision {
    #[serde(rename = "H0")]
    AcceptH0,
    #[serde(rename = "H1")]
    AcceptH1,
    #[serde(rename = "inconclusive")]
    Continue,
}

impl Sprt {
    /// Log-likelihood ratio of H1 over H0 for `wins`/`draws`/`losses` of the tested agent, by
    /// the generalised SPRT's normal approximation on the per-game score (as fishtest uses).
    pub fn llr(&self, wins: f64, draws: f64, losses: f64) -> f64 {
        if wins + draws + losses == 0.0 {
            return 0.0;
        }
        // One virtual draw keeps the variance positive when every game had the same result
        // (a clean sweep would otherwise never decide); it is negligible at real sample sizes.
        let draws = draws + 1.0;
        let n = wins + draws + losses;
        let mean = (wins + 0.5 * draws) / n;
        let var = (wins * (1.0 - mean).powi(2) + draws * (0.5 - mean).powi(2) + losses * mean.powi(2)) / n;
        if var <= 0.0 {
            return 0.0;
        }
        let score = |elo: f64| 1.0 / (1.0 + 10f64.powf(-elo / 400.0));
        let (s0, s1) = (score(self.elo0), score(self.elo1));
        n / (2.0 * var) * ((mean - s0).powi(2) - (mean - s1).powi(2))
    }

    /// The decision for the results so far.
    pub fn decide(&self, wins: f64, draws: f64, losses: f64) -> SprtDecision {
        let llr = self.llr(wins, draws, losses);
        let (lower, upper) = self.bounds();
        if llr >= upper {
            SprtDecision::AcceptH1
        } else if llr <= lower {
            SprtDecision::AcceptH0
        } else {
            SprtDecision::Continue
        }
    }

    /// The (lower, upper) LLR bounds: ln(beta / (1 - alpha)) and ln((1 - beta) / alpha).
    pub fn bounds(&self) -> (f64, f64) {
        ((self.beta / (1.0 - self.alpha)).ln(), ((1.0 - self.beta) / self.alpha).ln())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meeple_game::rng_from_seed;
    use rand::RngExt;

    fn expected(diff: f64) -> f64 {
        1.0 / (1.0 + 10f64.powf(-diff / 400.0))
    }

    #[test]
    fn elo_against_a_fixed_ladder() {
        // Exactly the expected score against opponents at -200, 0 and 300 for an agent at 100
        // (large counts make the virtual draw negligible).
        let n = 1e6;
        let results: Vec<_> = [-200.0, 0.0, 300.0]
            .iter()
            .map(|&o| (o, n * expected(100.0 - o), 0.0, n * (1.0 - expected(100.0 - o))))
            .collect();
        let (elo, [lo, hi]) = elo_against_fixed(&results, 1.96).unwrap();
        assert!((elo - 100.0).abs() < 0.5, "{elo}");
        assert!(lo < elo && elo < hi && hi - lo < 5.0);
        // Every game won: finite, above the strongest opponent, and a wide interval.
        let (elo, [lo, hi]) = elo_against_fixed(&[(0.0, 20.0, 0.0, 0.0), (400.0, 20.0, 0.0, 0.0)], 1.96).unwrap();
        assert!(elo.is_finite() && elo > 400.0 && lo < elo && hi > elo, "{elo} [{lo}, {hi}]");
        // More wins never lower the rating.
        let (more, _) = elo_against_fixed(&[(0.0, 20.0, 0.0, 0.0), (400.0, 15.0, 0.0, 5.0)], 1.96).unwrap();
        let (less, _) = elo_against_fixed(&[(0.0, 20.0, 0.0, 0.0), (400.0, 10.0, 0.0, 10.0)], 1.96).unwrap();
        assert!(more > less);
        assert!(elo_against_fixed(&[(0.0, 0.0, 0.0, 0.0)], 1.96).is_none());
    }

    #[test]
    fn z_values() {
        assert!((z_for_confidence(0.95) - 1.959_963_985).abs() < 1e-8);
        assert!((z_for_confidence(0.98) - 2.326_347_874).abs() < 1e-8);
        assert!((z_for_confidence(0.6827) - 1.0).abs() < 1e-3);
    }

    #[test]
    fn elo_fit_recovers_known_ratings_within_their_intervals() {
        // Four agents at 0, 100, 250 and 500 Elo; 400 games per pair with a 20% draw rate.
        let truth = [0.0, 100.0, 250.0, 500.0];
        let mut rng = rng_from_seed(12);
        let mut pairings = Vec::new();
        for a in 0..4 {
            for b in a + 1..4 {
                let p = expected(truth[a] - truth[b]);
                let mut r = Pairing { a, b, ..Default::default() };
                for _ in 0..400 {
                    let x: f64 = rng.random();
                    // Draw with probability 0.2, otherwise a win for a with the rest of p.
                    let draw = 0.2 * (1.0 - (2.0 * p - 1.0).abs());
                    if x < draw {
                        r.draws += 1.0;
                    } else if x < draw + (p - draw / 2.0) {
                        r.wins += 1.0;
                    } else {
                        r.losses += 1.0;
                    }
                }
                pairings.push(r);
            }
        }
        let fit = fit_elo(4, &pairings, 0, z_for_confidence(0.95));
        assert_eq!(fit.elo[0], 0.0);
        for (i, &t) in truth.iter().enumerate().skip(1) {
            let [lo, hi] = fit.interval[i];
            assert!(lo <= t && t <= hi, "agent {i}: {} in [{lo}, {hi}], truth {t}", fit.elo[i]);
            assert!(hi - lo < 120.0, "interval too wide: {lo}..{hi}");
        }
        // Order is right, and the fit does not depend on the order of the table.
        let mut shuffled = pairings.clone();
        shuffled.reverse();
        let again = fit_elo(4, &shuffled, 0, 1.96);
        for i in 0..4 {
            assert!((again.elo[i] - fit.elo[i]).abs() < 1e-6);
        }
    }

    #[test]
    fn perfect_scores_stay_finite() {
        let fit = fit_elo(2, &[Pairing { a: 1, b: 0, wins: 50.0, draws: 0.0, losses: 0.0 }], 0, 1.96);
        assert!(fit.elo[1].is_finite() && fit.elo[1] > 400.0, "{:?}", fit);
    }

    /// Simulates SPRT runs at a true Elo difference; returns the share that accept H1.
    fn accept_h1_rate(true_elo: f64, runs: usize, seed: u64) -> f64 {
        let sprt = Sprt { elo0: 0.0, elo1: 20.0, alpha: 0.05, beta: 0.05 };
        let mut rng = rng_from_seed(seed);
        let p = expected(true_elo);
        let draw = 0.3;
        let mut h1 = 0;
        for _ in 0..runs {
            let (mut w, mut d, mut l) = (0.0, 0.0, 0.0);
            loop {
                let x: f64 = rng.random();
                if x < draw {
                    d += 1.0;
                } else if x < draw + (p - draw / 2.0) {
                    w += 1.0;
                } else {
                    l += 1.0;
                }
                match sprt.decide(w, d, l) {
                    SprtDecision::AcceptH1 => {
                        h1 += 1;
                        break;
                    }
                    SprtDecision::AcceptH0 => break,
                    SprtDecision::Continue => {}
                }
            }
        }
        h1 as f64 / runs as f64
    }

    #[test]
    fn sprt_decides_on_a_clean_sweep() {
        let sprt = Sprt { elo0: 0.0, elo1: 50.0, alpha: 0.05, beta: 0.05 };
        assert_eq!(sprt.decide(40.0, 0.0, 0.0), SprtDecision::AcceptH1);
        assert_eq!(sprt.decide(0.0, 0.0, 40.0), SprtDecision::AcceptH0);
        assert_eq!(sprt.decide(1.0, 0.0, 0.0), SprtDecision::Continue);
    }

    #[test]
    fn sprt_accepts_at_the_intended_rates() {
        // At elo1 it should accept H1 about 95% of the time; at elo0 about 5%.
        let at_h1 = accept_h1_rate(20.0, 300, 1);
        let at_h0 = accept_h1_rate(0.0, 300, 2);
        assert!(at_h1 > 0.88, "accepted H1 in {at_h1} of runs at elo1");
        assert!(at_h0 < 0.12, "accepted H1 in {at_h0} of runs at elo0");
        let (lo, hi) = Sprt { elo0: 0.0, elo1: 5.0, alpha: 0.05, beta: 0.05 }.bounds();
        assert!((hi - 2.944).abs() < 1e-3 && (lo + 2.944).abs() < 1e-3);
    }
}
