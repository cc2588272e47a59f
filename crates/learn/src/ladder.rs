//! Checkpoint evaluation: a learner's checkpoints against a fixed ladder of opponents, played
//! through the arena (paired seats, random openings), and rated on one Elo scale.
//!
//! The opponents are rated once among themselves (a round robin, kept in `ladder.json` in the
//! run directory so a resumed run rates against the same numbers); each checkpoint then plays a
//! gauntlet against them and is rated against those fixed ratings, so every evaluation of a run
//! lands on the same scale (the gauntlet's own fit would rate a clean sweep of `random` the
//! same whatever else happened).

use crate::LearnError;
use meeple_arena::{MatchConfig, PlayedGame, agent_labels, run_match, seatings};
use meeple_game::{Game, derive_seed};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Games per opponent in an evaluation, before rounding up to the game's seatings.
pub const DEFAULT_GAMES: usize = 20;

/// How checkpoints are evaluated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LadderConfig {
    /// The evaluated agent, with `{model}` where the checkpoint's path goes
    /// (`az:model={model},sims=64`).
    pub agent: String,
    /// The fixed opponents; the first is rated 0 Elo.
    pub opponents: Vec<String>,
    /// Games against each opponent (a multiple of the game's seatings).
    pub games: usize,
    /// Uniformly random plies opening each game (the same for every seating of a seed), so
    /// deterministic pairs still meet varied positions.
    pub opening_plies: usize,
    /// Arena threads.
    pub threads: usize,
    /// Seed of the evaluations (each checkpoint's from it and its generation).
    pub seed: u64,
    /// An opponent given the evaluated agent's own mean time a move (an agent spec without
    /// `time=`, which each evaluation sets), so the curves show strength at equal cost. It is
    /// not rated on the ladder's Elo scale: its strength moves with the checkpoint's speed.
    #[serde(default)]
    pub equal_time: Option<String>,
}

/// The equal-time opponent every ladder has unless told otherwise.
pub const DEFAULT_EQUAL_TIME: &str = "mcts";

/// `spec` given `time` a move (whole microseconds, at least 1).
pub fn with_time(spec: &str, time: std::time::Duration) -> Result<String, LearnError> {
    let mut s: meeple_game::Spec =
        spec.parse().map_err(|e| LearnError::Config(format!("equal-time opponent '{spec}': {e}")))?;
    if s.get("time").is_some() {
        return Err(LearnError::Config(format!(
            "equal-time opponent '{spec}' names its own time; give it without time= (each evaluation sets it to the \
             evaluated agent's mean time a move)"
        )));
    }
    s.options.push(("time".into(), format!("{}us", time.as_micros().max(1))));
    Ok(s.to_string())
}

/// How an equal-time opponent is named in evaluations and plots, whatever its time.
pub fn equal_time_label(spec: &str) -> String {
    format!("{spec} at equal time")
}

impl LadderConfig {
    /// The default ladder for `game`: the opponents of [`default_opponents`], [`default_games`]
    /// games each, 2 random opening plies where the game has no chance of its own to vary its
    /// games (none where it has: Catan's first plies are its settlements, and random ones there
    /// decide more of the game than either agent does).
    pub fn new<G: Game>(game: &G, agent: &str, threads: usize, seed: u64) -> Self {
        LadderConfig {
            agent: agent.to_string(),
            opponents: default_opponents(game),
            games: default_games(game),
            opening_plies: if game.max_chance_outcomes() > 0 { 0 } else { 2 },
            threads,
            seed,
            equal_time: Some(DEFAULT_EQUAL_TIME.to_string()),
        }
    }
}

/// The opponents every game's ladder has (`random`, MCTS at 100 and 1,000 iterations), then the
/// game's own ([`Game::ladder_agents`]: a quick alpha-beta with its evaluator, or its rules-based
/// player).
pub fn default_opponents<G: Game>(game: &G) -> Vec<String> {
    let mut l = vec!["random".to_string(), "mcts:iters=100".to_string(), "mcts:iters=1000".to_string()];
    l.extend(game.ladder_agents());
    l
}

/// [`DEFAULT_GAMES`] rounded up to a multiple of the game's seatings (2 for two players, 6 for
/// three, 24 for four), as the arena rounds its default.
pub fn default_games<G: Game>(game: &G) -> usize {
    let per_seed = seatings(game.num_players()).len();
    DEFAULT_GAMES.div_ceil(per_seed) * per_seed
}

/// One opponent's result in an evaluation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Rung {
    pub opponent: String,
    /// The evaluated agent's score against it: (wins + draws / 2) / games.
    pub score: f64,
    /// 95% Wilson interval of the score.
    pub ci: [f64; 2],
    pub wins: u64,
    pub draws: u64,
    pub losses: u64,
    /// Mean milliseconds a move of the evaluated agent and of the opponent, so a score is read
    /// beside what each side spent.
    #[serde(default)]
    pub agent_ms: f64,
    #[serde(default)]
    pub opponent_ms: f64,
    /// The spec that played, where `opponent` is a label (the equal-time opponent, whose time
    /// each evaluation sets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<String>,
}

/// A checkpoint's evaluation. Fields an older log lacks read as their defaults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Evaluation {
    /// The agent that played (its spec, the checkpoint in it).
    #[serde(default)]
    pub agent: String,
    pub opponents: Vec<Rung>,
    /// Elo against the ladder's fixed ratings, and its 95% interval.
    pub elo: Option<f64>,
    pub elo_ci: Option<[f64; 2]>,
    /// The opponent rated 0.
    pub anchor: String,
    /// The opponents' ratings, in order.
    pub ladder: Option<Vec<f64>>,
    /// Games per opponent, and the random opening plies.
    #[serde(default)]
    pub games: usize,
    #[serde(default)]
    pub opening_plies: usize,
    /// Why the evaluation failed, if it did (the run goes on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Whether it rated its checkpoint the run's best so far (kept as `ckpt/best`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub best: bool,
}

impl Evaluation {
    /// What ranks checkpoints for the run's best (`ckpt/best`), and how it is named: the score
    /// against the equal-time opponent where it played (strength at equal cost), else the Elo
    /// against the ladder, else the mean score over the opponents; none for a failed evaluation.
    pub fn merit(&self) -> Option<(f64, String)> {
        if self.error.is_some() {
            return None;
        }
        if let Some(r) = self.opponents.iter().find(|r| r.spec.is_some()) {
            return Some((r.score, format!("score against {}", r.opponent)));
        }
        if let Some(e) = self.elo.filter(|e| e.is_finite()) {
            return Some((e, "Elo against the ladder".into()));
        }
        let n = self.opponents.len();
        (n > 0).then(|| {
            (self.opponents.iter().map(|r| r.score).sum::<f64>() / n as f64, "mean score against the ladder".into())
        })
    }
}

/// The ratings kept in `ladder.json`.
#[derive(Serialize, Deserialize)]
struct Stored {
    opponents: Vec<String>,
    elo: Vec<f64>,
    games: usize,
    #[serde(default)]
    opening_plies: usize,
}

/// A game's ladder, ready to evaluate checkpoints.
pub struct Ladder<G: Game> {
    game: G,
    config: LadderConfig,
    /// Where the opponents' ratings are kept.
    path: PathBuf,
    ratings: Option<Vec<f64>>,
}

impl<G: Game> Ladder<G> {
    /// Checks `config` against `game` (games a multiple of the seatings, every opponent and the
    /// agent template valid) before any training starts. `dir`: the run directory, where
    /// `ladder.json` is kept.
    pub fn new(game: &G, config: LadderConfig, dir: &Path) -> Result<Self, LearnError> {
        let per_seed = seatings(game.num_players()).len();
        if config.games == 0 || !config.games.is_multiple_of(per_seed) {
            return Err(LearnError::Config(format!(
                "--eval-games {} must be a positive multiple of {per_seed} (the seatings of {}; {} is the default)",
                config.games,
                game.spec(),
                default_games(game)
            )));
        }
        if config.opponents.is_empty() {
            return Err(LearnError::Config("the ladder needs at least one opponent".into()));
        }
        if !config.agent.contains("{model}") {
            return Err(LearnError::Config(format!(
                "the evaluated agent '{}' has no {{model}} for the checkpoint",
                config.agent
            )));
        }
        for o in &config.opponents {
            crate::make_agent(game, o, 0).map_err(|e| LearnError::Config(format!("ladder opponent '{o}': {e}")))?;
        }
        if let Some(o) = &config.equal_time {
            let timed = with_time(o, std::time::Duration::from_millis(1))?;
            crate::make_agent(game, &timed, 0)
                .map_err(|e| LearnError::Config(format!("equal-time opponent '{o}': {e}")))?;
        }
        Ok(Ladder { game: game.clone(), config, path: dir.join("ladder.json"), ratings: None })
    }

    pub fn config(&self) -> &LadderConfig {
        &self.config
    }

    /// A match of the ladder's games, openings and threads among `agents`, the first opponent
    /// rated 0, its seed from the ladder's and `stream`.
    fn match_config(&self, agents: Vec<String>, stream: u64) -> MatchConfig {
        let c = &self.config;
        let mut m = MatchConfig::new(agents, c.games, derive_seed(c.seed, stream));
        m.anchor = Some(c.opponents[0].clone());
        m.threads = Some(c.threads);
        m.opening_plies = c.opening_plies;
        m
    }

    /// The opponents' ratings (the first at 0): read from `ladder.json` when it was made with
    /// these opponents and openings, else measured by a round robin among them and kept there.
    pub fn ratings(&mut self) -> Result<Vec<f64>, LearnError> {
        if let Some(r) = &self.ratings {
            return Ok(r.clone());
        }
        let kept = meeple_game::limits::read_text(&self.path, meeple_game::limits::MAX_TEXT_FILE, "ladder file")
            .ok()
            .and_then(|t| serde_json::from_str::<Stored>(&t).ok());
        let c = &self.config;
        let ratings = match kept {
            Some(l)
                if l.opponents == c.opponents
                    && l.elo.len() == l.opponents.len()
                    && l.opening_plies == c.opening_plies =>
            {
                l.elo
            }
            _ if c.opponents.len() == 1 => vec![0.0],
            _ => {
                let m = self.match_config(c.opponents.clone(), 0x1adde7);
                let (s, _) = run_match(&self.game, &crate::extension(), &m, |_| {})
                    .map_err(|e| LearnError::Config(format!("rating the ladder: {e}")))?;
                let elo: Vec<f64> = agent_labels(&c.opponents)
                    .iter()
                    .map(|l| s.agents.iter().find(|a| &a.name == l).and_then(|a| a.elo).unwrap_or(0.0))
                    .collect();
                let stored = Stored {
                    opponents: c.opponents.clone(),
                    elo: elo.clone(),
                    games: c.games,
                    opening_plies: c.opening_plies,
                };
                let text = serde_json::to_string_pretty(&stored).expect("ladders serialise");
                meeple_arena::files::write_atomic(&self.path, text.as_bytes())
                    .map_err(|e| LearnError::Io(format!("cannot write '{}': {e}", self.path.display())))?;
                elo
            }
        };
        self.ratings = Some(ratings.clone());
        Ok(ratings)
    }

    /// `agent` against each of `opponents` (their indices from 1): in a two-player game one
    /// gauntlet match; with more players one match an opponent, `agent` against that opponent
    /// in every other seat, so each rung says how it does against a table of that player.
    fn gauntlet(&self, agent: &str, opponents: &[String], stream: u64) -> Result<Vec<(usize, Rung)>, String> {
        let n = self.game.num_players();
        if n == 2 {
            let mut agents = vec![agent.to_string()];
            agents.extend(opponents.iter().cloned());
            let m =
                MatchConfig { gauntlet: true, anchor: Some(opponents[0].clone()), ..self.match_config(agents, stream) };
            let (summary, played) =
                run_match(&self.game, &crate::extension(), &m, |_| {}).map_err(|e| e.to_string())?;
            return Ok(rungs(&m, &summary, &played));
        }
        // Every opponent meets the same seeds, as every pairing of a two-player gauntlet does.
        let mut out = Vec::with_capacity(opponents.len());
        for (j, o) in opponents.iter().enumerate() {
            let mut agents = vec![agent.to_string()];
            agents.extend(std::iter::repeat_n(o.clone(), n - 1));
            let m = MatchConfig { anchor: None, ..self.match_config(agents, stream) };
            let (summary, _) = run_match(&self.game, &crate::extension(), &m, |_| {}).map_err(|e| e.to_string())?;
            out.push((j + 1, table_rung(&summary, o)));
        }
        Ok(out)
    }

    /// Plays the checkpoint at `checkpoint` against every opponent and rates it (two-player
    /// games; with more players each opponent's rung is a score against a table of it, an
    /// equal seat scoring 1/players, and there is no Elo). A failed match is an evaluation with
    /// its error, not an error: a training run goes on.
    pub fn evaluate(&mut self, checkpoint: &Path, generation: u64) -> Evaluation {
        let agent = self.config.agent.replace("{model}", &checkpoint.display().to_string());
        let c = &self.config;
        let mut evaluation = Evaluation {
            agent: agent.clone(),
            anchor: c.opponents[0].clone(),
            games: c.games,
            opening_plies: c.opening_plies,
            ..Default::default()
        };
        match self.gauntlet(&agent, &c.opponents, 0xe7a1 + generation) {
            Ok(r) => {
                evaluation.opponents =
                    r.into_iter().map(|(k, r)| Rung { opponent: c.opponents[k - 1].clone(), ..r }).collect()
            }
            Err(e) => {
                evaluation.error = Some(e);
                return evaluation;
            }
        }
        if let Some(o) = c.equal_time.clone() {
            // The agent's mean time over every move it made in the gauntlet.
            let (total, moves) = evaluation.opponents.iter().fold((0.0, 0.0), |(t, n), r| {
                let k = (r.wins + r.draws + r.losses) as f64;
                (t + r.agent_ms * k, n + k)
            });
            let mean_ms = if moves > 0.0 { total / moves } else { 0.0 };
            let timed = with_time(&o, std::time::Duration::from_secs_f64(mean_ms.max(0.0) / 1e3));
            let played = timed.map_err(|e| e.to_string()).and_then(|spec| {
                let r = self.gauntlet(&evaluation.agent, std::slice::from_ref(&spec), 0xe9a1 + generation)?;
                Ok((spec, r))
            });
            match played {
                Ok((spec, mut r)) if !r.is_empty() => {
                    let (_, mut rung) = r.remove(0);
                    rung.opponent = equal_time_label(&o);
                    rung.spec = Some(spec);
                    evaluation.opponents.push(rung);
                }
                Ok(_) => {}
                Err(e) => evaluation.error = Some(format!("equal-time match: {e}")),
            }
        }
        if self.game.num_players() != 2 {
            return evaluation;
        }
        match self.ratings() {
            Ok(ladder) => {
                let results: Vec<_> = evaluation
                    .opponents
                    .iter()
                    .filter_map(|r| {
                        let k = self.config.opponents.iter().position(|o| *o == r.opponent)?;
                        Some((ladder[k], r.wins as f64, r.draws as f64, r.losses as f64))
                    })
                    .collect();
                if let Some((e, ci)) = meeple_arena::ratings::elo_against_fixed(&results, meeple_arena::Z95) {
                    evaluation.elo = Some(e);
                    evaluation.elo_ci = Some(ci);
                }
                evaluation.ladder = Some(ladder);
            }
            Err(e) => evaluation.error = Some(e.to_string()),
        }
        evaluation
    }
}

/// The first agent's result in a match of three or more players where every other seat is
/// `opponent`: its wins, shared wins and losses, and each side's mean move time.
fn table_rung(summary: &meeple_arena::MatchSummary, opponent: &str) -> Rung {
    let a = &summary.agents[0];
    let others = &summary.agents[1..];
    let opponent_ms = others.iter().map(|o| o.mean_move_ms).sum::<f64>() / others.len().max(1) as f64;
    Rung {
        opponent: opponent.to_string(),
        score: a.score,
        ci: a.ci95,
        wins: a.wins,
        draws: a.draws,
        losses: a.losses,
        agent_ms: a.mean_move_ms,
        opponent_ms,
        spec: None,
    }
}

/// The first agent's results against each other agent `k` of a gauntlet match `m` (named by its
/// label), with each side's mean move time.
fn rungs(m: &MatchConfig, summary: &meeple_arena::MatchSummary, played: &[PlayedGame]) -> Vec<(usize, Rung)> {
    let labels = m.labels();
    let mut out = Vec::new();
    for (k, label) in labels.iter().enumerate().skip(1) {
        let Some(p) = summary.pairwise.iter().find(|p| p.a == labels[0] && p.b == *label) else { continue };
        // Each side's mean move time in the games of this pairing.
        let (mut sums, mut counts) = ([0.0f64; 2], [0usize; 2]);
        for g in played.iter().filter(|g| g.seating.contains(&k) && g.seating.contains(&0)) {
            for (&ms, &seat) in g.move_ms.iter().zip(&g.move_seats) {
                let side = usize::from(g.seating[seat] != 0);
                sums[side] += ms;
                counts[side] += 1;
            }
        }
        let mean = |i: usize| if counts[i] > 0 { sums[i] / counts[i] as f64 } else { 0.0 };
        out.push((
            k,
            Rung {
                opponent: label.clone(),
                score: p.score,
                ci: p.ci,
                wins: p.wins,
                draws: p.draws,
                losses: p.losses,
                agent_ms: mean(0),
                opponent_ms: mean(1),
                spec: None,
            },
        ));
    }
    out
}
