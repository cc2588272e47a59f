//! A match's results: per-agent totals with Wilson intervals, pairwise results, Elo, move times.

use crate::config::{MatchConfig, anchor_index};
use crate::ratings::SprtDecision;
use crate::records::PlayedGame;
use crate::{Z95, ratings, wilson};
use meeple_game::Budget;
use serde::{Deserialize, Serialize};

/// Per-agent totals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentSummary {
    /// The agent's name in this match: its spec, with `#k` where the same spec plays twice.
    #[serde(default)]
    pub name: String,
    /// The agent's spec as given.
    pub spec: String,
    /// Games it finished strictly ahead of every other player.
    pub wins: u64,
    /// Games it shared the best result.
    pub draws: u64,
    /// Games another player finished ahead of it.
    pub losses: u64,
    /// (wins + draws/2) / games.
    pub score: f64,
    /// 95% Wilson interval of the score.
    pub ci95: [f64; 2],
    /// Wilson interval at the match's `confidence`.
    pub ci: [f64; 2],
    /// Maximum-likelihood Elo, anchored at 0 (two-player games).
    pub elo: Option<f64>,
    /// Elo interval at the match's `confidence`.
    pub elo_ci: Option<[f64; 2]>,
    /// Mean wall time per move, milliseconds.
    pub mean_move_ms: f64,
    /// Longest move, milliseconds.
    pub max_move_ms: f64,
    /// 99th percentile of move times, milliseconds.
    pub p99_move_ms: f64,
    /// The agent's time budget per move, if it has one (its `time=` option or `--move-time`,
    /// whichever is smaller), milliseconds.
    pub budget_ms: Option<f64>,
    /// Moves that took longer than `budget_ms`.
    pub over_budget: u64,
    /// The same totals split by the seat it played, `by_seat[k]` for seat k: games like
    /// Cathedral favour one seat, and a paired match's total hides where an agent drops points.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_seat: Vec<SeatResult>,
    /// The files its spec names (networks, weights), each with its sha256.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<crate::ModelFile>,
}

/// An agent's results in one seat.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SeatResult {
    pub wins: u64,
    pub draws: u64,
    pub losses: u64,
    /// (wins + draws/2) / games in this seat (0 when it never sat there).
    pub score: f64,
}

/// The result of a match.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatchSummary {
    /// Canonical game spec.
    pub game: String,
    /// Games played.
    pub games: usize,
    /// Base seed.
    pub seed: u64,
    /// Confidence of `ci` and `elo_ci`.
    pub confidence: f64,
    /// The agent rated 0 Elo (its name).
    pub anchor: Option<String>,
    /// `--move-overhead`: how long before its time each timed search stopped, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub move_overhead_ms: Option<f64>,
    /// One entry per agent, in the order given.
    pub agents: Vec<AgentSummary>,
    /// Head-to-head results of each pair that met (two-player games), from `a`'s side.
    pub pairwise: Vec<PairwiseSummary>,
    /// The SPRT's outcome, in `--sprt` mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sprt: Option<SprtReport>,
    /// Per-game means of the game's own figures (Catan: `dice_rolls`, `turns`), over the games
    /// that finished: `[mean, standard deviation]`.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub metrics: std::collections::BTreeMap<String, [f64; 2]>,
}

/// Results of agent `a` against agent `b` (by name).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairwiseSummary {
    pub a: String,
    pub b: String,
    pub wins: u64,
    pub draws: u64,
    pub losses: u64,
    pub score: f64,
    pub ci: [f64; 2],
}

/// How an SPRT match ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SprtReport {
    pub elo0: f64,
    pub elo1: f64,
    pub alpha: f64,
    pub beta: f64,
    /// Log-likelihood ratio at the end.
    pub llr: f64,
    pub lower: f64,
    pub upper: f64,
    /// `H1` (the first agent is at least `elo1` stronger), `H0`, or `inconclusive` (the game
    /// limit came first).
    pub decision: SprtDecision,
}

/// The result for the player in `seat`: 0 a win (strictly ahead of every other player), 1 a
/// draw (sharing the best return), 2 a loss.
pub fn outcome(returns: &[f64], seat: usize) -> usize {
    let mine = returns[seat];
    let best_other = returns.iter().enumerate().filter(|&(s, _)| s != seat).map(|(_, &r)| r).fold(f64::MIN, f64::max);
    if mine > best_other {
        0
    } else if mine == best_other {
        1
    } else {
        2
    }
}

/// The per-move time an agent is held to: its own `time=` option and the match's move time,
/// whichever is smaller.
fn agent_budget(spec: &str, budget: &Budget) -> Option<std::time::Duration> {
    budget.time_for(
        spec.parse::<meeple_game::Spec>().ok().and_then(|s| s.get("time").and_then(meeple_game::parse_duration)),
    )
}

/// Totals per agent, pairwise results and Elo from finished games (in any order).
pub fn summarize(game: String, players: usize, config: &MatchConfig, played: &[PlayedGame]) -> MatchSummary {
    let n = config.agents.len();
    let labels = config.labels();
    let z = ratings::z_for_confidence(config.confidence);
    let mut wdl = vec![[0u64; 3]; n];
    let mut seat_wdl = vec![vec![[0u64; 3]; players]; n];
    let mut pair = vec![vec![[0u64; 3]; n]; n];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); n];
    for g in played {
        let Some(returns) = &g.record.returns else { continue };
        for (seat, &agent) in g.seating.iter().enumerate() {
            let k = outcome(returns, seat);
            wdl[agent][k] += 1;
            if let Some(cell) = seat_wdl[agent].get_mut(seat) {
                cell[k] += 1;
            }
            if players == 2 {
                pair[agent][g.seating[1 - seat]][k] += 1;
            }
        }
        for (&ms, &seat) in g.move_ms.iter().zip(&g.move_seats) {
            times[g.seating[seat]].push(ms);
        }
    }
    let score_of = |[w, d, l]: [u64; 3]| {
        let total = (w + d + l) as f64;
        if total > 0.0 { (w as f64 + 0.5 * d as f64) / total } else { 0.0 }
    };
    let mut pairwise = Vec::new();
    let mut table = Vec::new();
    for (a, row) in pair.iter().enumerate() {
        for (b, &[w, d, l]) in row.iter().enumerate().skip(a + 1) {
            if w + d + l == 0 {
                continue;
            }
            let score = score_of([w, d, l]);
            let (lo, hi) = wilson(score, (w + d + l) as f64, z);
            pairwise.push(PairwiseSummary {
                a: labels[a].clone(),
                b: labels[b].clone(),
                wins: w,
                draws: d,
                losses: l,
                score,
                ci: [lo, hi],
            });
            table.push(ratings::Pairing { a, b, wins: w as f64, draws: d as f64, losses: l as f64 });
        }
    }
    let anchor = match &config.anchor {
        Some(a) => anchor_index(config, a),
        None => config.agents.iter().position(|x| x == "random").or(Some(0)),
    };
    let fit = (players == 2 && n >= 2).then(|| ratings::fit_elo(n, &table, anchor.unwrap_or(0), z));
    let agents = (0..n)
        .map(|a| {
            let [wins, draws, losses] = wdl[a];
            let total = (wins + draws + losses) as f64;
            let score = score_of(wdl[a]);
            let (lo, hi) = wilson(score, total, Z95);
            let (clo, chi) = wilson(score, total, z);
            let t = &mut times[a];
            t.sort_unstable_by(f64::total_cmp);
            let budget_ms = agent_budget(&config.agents[a], &config.budget).map(|d| d.as_secs_f64() * 1e3);
            AgentSummary {
                name: labels[a].clone(),
                spec: config.agents[a].clone(),
                wins,
                draws,
                losses,
                score,
                ci95: [lo, hi],
                ci: [clo, chi],
                elo: fit.as_ref().map(|f| f.elo[a]),
                elo_ci: fit.as_ref().map(|f| f.interval[a]),
                mean_move_ms: if t.is_empty() { 0.0 } else { t.iter().sum::<f64>() / t.len() as f64 },
                max_move_ms: t.last().copied().unwrap_or(0.0),
                p99_move_ms: t.get(((t.len() as f64 * 0.99).ceil() as usize).saturating_sub(1)).copied().unwrap_or(0.0),
                budget_ms,
                over_budget: budget_ms.map_or(0, |b| t.iter().filter(|&&x| x > b).count() as u64),
                by_seat: seat_wdl[a]
                    .iter()
                    .map(|&[wins, draws, losses]| SeatResult {
                        wins,
                        draws,
                        losses,
                        score: score_of([wins, draws, losses]),
                    })
                    .collect(),
                files: crate::model_files(&config.agents[a]),
            }
        })
        .collect();
    MatchSummary {
        game,
        games: played.len(),
        seed: config.seed,
        confidence: config.confidence,
        move_overhead_ms: config.budget.overhead.map(|d| d.as_secs_f64() * 1e3),
        anchor: fit.as_ref().and(anchor).map(|a| labels[a].clone()),
        agents,
        pairwise,
        sprt: None,
        metrics: metric_means(played),
    }
}

/// Mean and standard deviation of each game metric over the finished games.
fn metric_means(played: &[PlayedGame]) -> std::collections::BTreeMap<String, [f64; 2]> {
    let mut values: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for g in played.iter().filter(|g| g.record.returns.is_some()) {
        for (k, &v) in &g.record.metrics {
            values.entry(k.clone()).or_default().push(v);
        }
    }
    values
        .into_iter()
        .map(|(k, v)| {
            let n = v.len() as f64;
            let mean = v.iter().sum::<f64>() / n;
            let var = if v.len() > 1 { v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
            (k, [mean, var.sqrt()])
        })
        .collect()
}
