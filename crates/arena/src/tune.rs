//! Black-box tuning of a few real parameters against a noisy objective (a match result):
//! random search, as the Sagrada thesis tuned its five heuristic weights, and SPSA
//! (simultaneous perturbation stochastic approximation, Spall 1992), which estimates a gradient
//! from two evaluations per step whatever the number of parameters, with both evaluations of a
//! step on the same seed (common random numbers) so the luck of the dice cancels.

use meeple_game::{Error, derive_seed, rng_from_seed};
use rand::RngExt;
use serde::{Deserialize, Serialize};

/// A parameter and the range searched.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Param {
    pub name: String,
    pub low: f64,
    pub high: f64,
    /// Search the range on a log scale (for weights spanning orders of magnitude).
    pub log: bool,
}

impl Param {
    /// Reads `name=low..high` or `name=low..high:log`.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let bad =
            || Error::Invalid(format!("bad parameter range '{text}'; expected name=low..high or name=low..high:log"));
        let (name, range) = text.split_once('=').ok_or_else(bad)?;
        let (range, log) = match range.strip_suffix(":log") {
            Some(r) => (r, true),
            None => (range, false),
        };
        let (low, high) = range.split_once("..").ok_or_else(bad)?;
        let (low, high): (f64, f64) = (low.trim().parse().map_err(|_| bad())?, high.trim().parse().map_err(|_| bad())?);
        if name.is_empty() || !(low.is_finite() && high.is_finite() && low < high) || (log && low <= 0.0) {
            return Err(bad());
        }
        Ok(Param { name: name.to_string(), low, high, log })
    }

    /// The value at position `x` in [0, 1] of the range.
    pub fn value(&self, x: f64) -> f64 {
        let x = x.clamp(0.0, 1.0);
        if self.log {
            (self.low.ln() + x * (self.high.ln() - self.low.ln())).exp().clamp(self.low, self.high)
        } else {
            self.low + x * (self.high - self.low)
        }
    }

    /// The position in [0, 1] of `value` (clamped into the range).
    pub fn position(&self, value: f64) -> f64 {
        let v = value.clamp(self.low, self.high);
        if self.log {
            (v.ln() - self.low.ln()) / (self.high.ln() - self.low.ln())
        } else {
            (v - self.low) / (self.high - self.low)
        }
    }
}

/// The search method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Method {
    /// Independent uniform samples of the whole range; the best evaluation wins.
    Random,
    /// SPSA from a starting point; the final iterate is the answer.
    Spsa,
}

/// One evaluation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    /// Evaluation number, from 0.
    pub evaluation: usize,
    /// Parameter values, in the order of the parameters.
    pub values: Vec<f64>,
    /// The objective (higher is better).
    pub score: f64,
    /// SPSA: the current estimate after this evaluation's step (absent for random search).
    pub estimate: Option<Vec<f64>>,
}

/// Maximises `objective(values, seed)` over the parameters with `evaluations` calls.
/// `start` (SPSA only; default the middle of every range) is where SPSA begins. `on_trial` sees
/// each evaluation and the answer so far (the best trial for random search, the current
/// iterate for SPSA). Returns that answer.
pub fn tune(
    params: &[Param],
    method: Method,
    evaluations: usize,
    start: Option<&[f64]>,
    seed: u64,
    mut objective: impl FnMut(&[f64], u64) -> Result<f64, Error>,
    mut on_trial: impl FnMut(&Trial, &[f64]),
) -> Result<Vec<f64>, Error> {
    if params.is_empty() || evaluations == 0 {
        return Err(Error::Invalid("tuning needs at least one parameter and one evaluation".into()));
    }
    let values = |x: &[f64]| -> Vec<f64> { params.iter().zip(x).map(|(p, &x)| p.value(x)).collect() };
    let mut rng = rng_from_seed(derive_seed(seed, 0x7e5e));
    match method {
        Method::Random => {
            let mut best: Option<(f64, Vec<f64>)> = None;
            for i in 0..evaluations {
                let x: Vec<f64> = params.iter().map(|_| rng.random::<f64>()).collect();
                let v = values(&x);
                let score = objective(&v, derive_seed(seed, i as u64))?;
                if best.as_ref().is_none_or(|b| score > b.0) {
                    best = Some((score, v.clone()));
                }
                let trial = Trial { evaluation: i, values: v, score, estimate: None };
                on_trial(&trial, &best.as_ref().expect("set above").1);
            }
            Ok(best.expect("at least one evaluation").1)
        }
        Method::Spsa => {
            let mut theta: Vec<f64> = match start {
                Some(s) if s.len() == params.len() => params.iter().zip(s).map(|(p, &v)| p.position(v)).collect(),
                Some(_) => return Err(Error::Invalid("start point has the wrong number of values".into())),
                None => vec![0.5; params.len()],
            };
            let steps = (evaluations / 2).max(1);
            let stability = steps as f64 / 10.0;
            // Steps are scaled by a running RMS of the gradient estimates, so the first step moves each
            // parameter about 0.1 of its range whatever the objective's units, and a noisy early
            // estimate cannot set the pace for the whole run.
            let mut mean_square: Option<f64> = None;
            let mut evaluation = 0;
            for k in 0..steps {
                let ck = 0.1 / ((k + 1) as f64).powf(0.101);
                let delta: Vec<f64> = params.iter().map(|_| if rng.random::<bool>() { 1.0 } else { -1.0 }).collect();
                let plus: Vec<f64> = theta.iter().zip(&delta).map(|(t, d)| (t + ck * d).clamp(0.0, 1.0)).collect();
                let minus: Vec<f64> = theta.iter().zip(&delta).map(|(t, d)| (t - ck * d).clamp(0.0, 1.0)).collect();
                let step_seed = derive_seed(seed, k as u64);
                let mut ys = [0.0; 2];
                for (j, x) in [&plus, &minus].into_iter().enumerate() {
                    let v = values(x);
                    ys[j] = objective(&v, step_seed)?;
                    let trial = Trial { evaluation, values: v, score: ys[j], estimate: None };
                    evaluation += 1;
                    if j == 1 {
                        let gradient: Vec<f64> = plus
                            .iter()
                            .zip(&minus)
                            .map(|(p, m)| if p != m { (ys[0] - ys[1]) / (p - m) } else { 0.0 })
                            .collect();
                        let square = gradient.iter().map(|g| g * g).sum::<f64>() / gradient.len() as f64;
                        let ms = mean_square.map_or(square, |m| 0.9 * m + 0.1 * square);
                        mean_square = Some(ms);
                        let ak = 0.1 * ((stability + 1.0) / (k as f64 + 1.0 + stability)).powf(0.602);
                        if ms > 0.0 {
                            for (t, g) in theta.iter_mut().zip(&gradient) {
                                *t = (*t + ak * g / ms.sqrt()).clamp(0.0, 1.0);
                            }
                        }
                        let estimate = values(&theta);
                        on_trial(&Trial { estimate: Some(estimate.clone()), ..trial }, &estimate);
                    } else {
                        on_trial(&trial, &values(&theta));
                    }
                }
            }
            Ok(values(&theta))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A normal deviate from two uniforms (Box-Muller), enough for test noise.
    fn normal(rng: &mut meeple_game::Rng) -> f64 {
        let (u, v): (f64, f64) = (rng.random::<f64>().max(1e-12), rng.random());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    fn params() -> Vec<Param> {
        vec![
            Param::parse("a=0..10").unwrap(),
            Param::parse("b=-5..5").unwrap(),
            Param::parse("c=0.01..100:log").unwrap(),
        ]
    }

    const TARGET: [f64; 3] = [7.0, -2.0, 1.0];

    /// A noisy bowl with its top at TARGET, measured in range positions.
    fn bowl(v: &[f64], seed: u64) -> Result<f64, Error> {
        let p = params();
        let mut rng = rng_from_seed(seed ^ v.iter().map(|x| x.to_bits()).fold(0, |a, b| a ^ b));
        let d2: f64 = (0..3).map(|i| (p[i].position(v[i]) - p[i].position(TARGET[i])).powi(2)).sum();
        Ok(-d2 + 0.02 * normal(&mut rng))
    }

    fn distance(v: &[f64]) -> f64 {
        let p = params();
        (0..3).map(|i| (p[i].position(v[i]) - p[i].position(TARGET[i])).powi(2)).sum::<f64>().sqrt()
    }

    #[test]
    fn ranges_parse_and_map_both_ways() {
        let p = Param::parse("dead=10..1000:log").unwrap();
        assert!((p.value(0.5) - 100.0).abs() < 1e-9);
        assert!((p.position(100.0) - 0.5).abs() < 1e-12);
        for bad in ["x", "x=1", "x=2..1", "x=0..1:log", "=0..1", "x=a..b"] {
            assert!(Param::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn spsa_climbs_a_noisy_bowl() {
        let start = [1.0, 4.0, 50.0];
        let got = tune(&params(), Method::Spsa, 400, Some(&start), 5, bowl, |_, _| {}).unwrap();
        assert!(distance(&start) > 0.8);
        assert!(distance(&got) < 0.1, "SPSA ended {got:?}, {} from the top", distance(&got));
    }

    #[test]
    fn random_search_keeps_the_best_sample() {
        let mut seen = Vec::new();
        let got = tune(&params(), Method::Random, 200, None, 5, bowl, |t, _| seen.push(t.score)).unwrap();
        assert_eq!(seen.len(), 200);
        let best = seen.iter().cloned().fold(f64::MIN, f64::max);
        assert_eq!(bowl(&got, 0).map(|_| ()).ok(), Some(()));
        assert!(distance(&got) < 0.35, "{got:?}");
        assert!(best > -0.1);
        // SPSA from the middle with the same budget also ends near the top.
        let spsa = tune(&params(), Method::Spsa, 200, None, 5, bowl, |_, _| {}).unwrap();
        assert!(distance(&spsa) < 0.15, "spsa ended {} from the top", distance(&spsa));
    }
}
