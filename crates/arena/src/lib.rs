//! Matches between agents: paired seats, parallel games, deterministic results, Wilson intervals.
//!
//! A match is a list of seeds; each seed is played once per seating (every permutation of the
//! agents over the seats), and a seed gives the same chance events in every seating, so luck
//! cancels between paired games. Game `i` depends only on the base seed and `i`, and results are
//! gathered in game order, so the outcome is identical whatever the thread count.

mod stats;

pub use stats::{Z95, wilson};

use meeple_game::{Budget, Error, Game, GameRecord, State, Turn, derive_seed, rng_from_seed, sample_chance};
use meeple_search::make_agent;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// What to play.
#[derive(Clone, Debug)]
pub struct MatchConfig {
    /// Agent specs; as many as the game has seats.
    pub agents: Vec<String>,
    /// Total games; a multiple of the number of seatings (2 for two-player games).
    pub games: usize,
    /// Base seed of the whole match.
    pub seed: u64,
    /// Worker threads; `None` uses every core.
    pub threads: Option<usize>,
    /// Outside limit for every move (`--move-time`).
    pub budget: Budget,
    /// Uniformly random plies played before the agents take over, the same for every seating
    /// of a seed (so deterministic agents still meet varied positions).
    pub opening_plies: usize,
}

/// One finished game.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PlayedGame {
    /// Index in the match, `0..games`.
    pub index: usize,
    /// `seating[seat]` is the index of the agent in that seat.
    pub seating: Vec<usize>,
    /// The replayable record (agents in seat order).
    #[serde(flatten)]
    pub record: GameRecord,
    /// Milliseconds each player action took, in order (chance outcomes excluded).
    pub move_ms: Vec<f64>,
    /// Seat of each player action, parallel to `move_ms`.
    pub move_seats: Vec<usize>,
}

/// Per-agent totals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentSummary {
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
    /// Mean wall time per move, milliseconds.
    pub mean_move_ms: f64,
    /// Longest move, milliseconds.
    pub max_move_ms: f64,
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
    /// One entry per agent, in the order given.
    pub agents: Vec<AgentSummary>,
}

/// Every ordering of `n` agents over `n` seats, in lexicographic order (identity first).
pub fn seatings(n: usize) -> Vec<Vec<usize>> {
    fn extend(prefix: &mut Vec<usize>, n: usize, out: &mut Vec<Vec<usize>>) {
        if prefix.len() == n {
            out.push(prefix.clone());
            return;
        }
        for a in 0..n {
            if !prefix.contains(&a) {
                prefix.push(a);
                extend(prefix, n, out);
                prefix.pop();
            }
        }
    }
    let mut out = Vec::new();
    extend(&mut Vec::with_capacity(n), n, &mut out);
    out
}

/// Checks a match configuration against a game before anything is played: agent count, game
/// count, and every agent spec (so a typo fails at once, not after hours).
pub fn validate<G: Game>(game: &G, config: &MatchConfig) -> Result<(), Error> {
    let n = game.num_players();
    if config.agents.len() != n {
        return Err(Error::Invalid(format!(
            "{} has {n} seats: give {n} agent specs, not {}",
            game.spec(),
            config.agents.len()
        )));
    }
    let per_seed = seatings(n).len();
    if config.games == 0 || !config.games.is_multiple_of(per_seed) {
        return Err(Error::Invalid(format!(
            "--games {} must be a positive multiple of {per_seed}: each seed is played in all {per_seed} seatings",
            config.games
        )));
    }
    for spec in &config.agents {
        make_agent(game, spec, 0)?;
    }
    Ok(())
}

/// Plays game `index` of a match: seed `derive_seed(base, index / seatings)`, seating
/// `index % seatings`.
pub fn play_game<G: Game>(game: &G, config: &MatchConfig, index: usize) -> Result<PlayedGame, Error> {
    let all = seatings(game.num_players());
    let seating = all[index % all.len()].clone();
    let seed = derive_seed(config.seed, (index / all.len()) as u64);
    let mut agents = Vec::with_capacity(seating.len());
    for &a in &seating {
        // An agent's randomness follows the agent, not the seat, so paired games differ only
        // in who sits where.
        agents.push(make_agent(game, &config.agents[a], derive_seed(seed, 1 + a as u64))?);
    }
    let mut chance_rng = rng_from_seed(derive_seed(seed, 0));
    let mut opening_rng = rng_from_seed(derive_seed(seed, 1 << 32));
    let mut state = game.initial_state();
    let (mut outcomes, mut legal) = (Vec::new(), Vec::new());
    let mut actions = Vec::new();
    let (mut move_ms, mut move_seats) = (Vec::new(), Vec::new());
    let mut player_plies = 0;
    loop {
        let action = match state.turn() {
            Turn::Terminal => break,
            Turn::Chance => {
                state.chance_outcomes(&mut outcomes);
                sample_chance(&outcomes, &mut chance_rng)
            }
            Turn::Player(_) if player_plies < config.opening_plies => {
                player_plies += 1;
                state.legal_actions(&mut legal);
                legal[rand::RngExt::random_range(&mut opening_rng, 0..legal.len())]
            }
            Turn::Player(seat) => {
                player_plies += 1;
                let start = Instant::now();
                let action = agents[seat].act(&state, &config.budget)?;
                move_ms.push(start.elapsed().as_secs_f64() * 1e3);
                move_seats.push(seat);
                if !state.is_legal(action) {
                    return Err(Error::Agent {
                        agent: config.agents[seating[seat]].clone(),
                        reason: format!("chose an illegal move: {}", state.illegal_reason(action)),
                    });
                }
                action
            }
        };
        actions.push(state.action_to_string(action));
        state.apply_unchecked(action);
    }
    let record = GameRecord {
        game: game.spec().to_string(),
        seed,
        agents: seating.iter().map(|&a| config.agents[a].clone()).collect(),
        actions,
        returns: state.returns().map(|r| r.to_vec()),
        scores: state.scores().to_vec(),
    };
    Ok(PlayedGame { index, seating, record, move_ms, move_seats })
}

/// Plays the whole match in parallel. `on_game` sees each game as it finishes (in any order;
/// use it for progress and records); the summary is the same for any thread count.
pub fn run_match<G: Game>(
    game: &G,
    config: &MatchConfig,
    on_game: impl Fn(&PlayedGame) + Sync,
) -> Result<(MatchSummary, Vec<PlayedGame>), Error> {
    validate(game, config)?;
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(t) = config.threads {
        builder = builder.num_threads(t.max(1));
    }
    let pool = builder.build().map_err(|e| Error::Invalid(format!("cannot start worker threads: {e}")))?;
    let played: Vec<PlayedGame> = pool.install(|| {
        (0..config.games)
            .into_par_iter()
            .map(|i| {
                let g = play_game(game, config, i)?;
                on_game(&g);
                Ok(g)
            })
            .collect::<Result<_, Error>>()
    })?;
    Ok((summarize(game.spec().to_string(), config, &played), played))
}

/// Totals per agent from finished games (in any order).
pub fn summarize(game: String, config: &MatchConfig, played: &[PlayedGame]) -> MatchSummary {
    let n = config.agents.len();
    let mut wdl = vec![[0u64; 3]; n];
    let mut time = vec![(0.0f64, 0u64, 0.0f64); n];
    for g in played {
        let Some(returns) = &g.record.returns else { continue };
        for (seat, &agent) in g.seating.iter().enumerate() {
            let mine = returns[seat];
            let best_other =
                returns.iter().enumerate().filter(|&(s, _)| s != seat).map(|(_, &r)| r).fold(f64::MIN, f64::max);
            let k = if mine > best_other {
                0
            } else if mine == best_other {
                1
            } else {
                2
            };
            wdl[agent][k] += 1;
        }
        for (&ms, &seat) in g.move_ms.iter().zip(&g.move_seats) {
            let t = &mut time[g.seating[seat]];
            t.0 += ms;
            t.1 += 1;
            t.2 = t.2.max(ms);
        }
    }
    let agents = (0..n)
        .map(|a| {
            let [wins, draws, losses] = wdl[a];
            let total = (wins + draws + losses) as f64;
            let score = if total > 0.0 { (wins as f64 + 0.5 * draws as f64) / total } else { 0.0 };
            let (lo, hi) = wilson(score, total, Z95);
            let (sum, count, max) = time[a];
            AgentSummary {
                spec: config.agents[a].clone(),
                wins,
                draws,
                losses,
                score,
                ci95: [lo, hi],
                mean_move_ms: if count > 0 { sum / count as f64 } else { 0.0 },
                max_move_ms: max,
            }
        })
        .collect();
    MatchSummary { game, games: played.len(), seed: config.seed, agents }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meeple_games::{Connect4, TicTacToe};

    fn config(agents: &[&str], games: usize, threads: Option<usize>) -> MatchConfig {
        MatchConfig {
            agents: agents.iter().map(|s| s.to_string()).collect(),
            games,
            seed: 7,
            threads,
            budget: Budget::UNLIMITED,
            opening_plies: 0,
        }
    }

    #[test]
    fn seatings_are_all_permutations() {
        assert_eq!(seatings(2), vec![vec![0, 1], vec![1, 0]]);
        assert_eq!(seatings(3).len(), 6);
        assert_eq!(seatings(4).len(), 24);
    }

    #[test]
    fn same_seed_same_results_for_any_thread_count() {
        let game = Connect4::default();
        let (one, g1) = run_match(&game, &config(&["first", "random"], 60, Some(1)), |_| {}).unwrap();
        let (two, g2) = run_match(&game, &config(&["first", "random"], 60, Some(2)), |_| {}).unwrap();
        let counts = |s: &MatchSummary| s.agents.iter().map(|a| (a.wins, a.draws, a.losses)).collect::<Vec<_>>();
        assert_eq!(counts(&one), counts(&two));
        let records = |g: &[PlayedGame]| g.iter().map(|g| g.record.clone()).collect::<Vec<_>>();
        assert_eq!(records(&g1), records(&g2));
        for a in &one.agents {
            assert_eq!(a.wins + a.draws + a.losses, 60);
        }
        // Paired seats: each seed appears twice, with the agents swapped.
        assert_eq!(g1[0].record.seed, g1[1].record.seed);
        assert_eq!(g1[0].record.agents, vec!["first", "random"]);
        assert_eq!(g1[1].record.agents, vec!["random", "first"]);
        assert_ne!(g1[0].record.seed, g1[2].record.seed);
    }

    #[test]
    fn results_are_counted_from_returns() {
        // first vs first at tic-tac-toe: X fills a3 b3 c3 in seven plies and always wins.
        let (s, games) = run_match(&TicTacToe, &config(&["first", "first"], 4, None), |_| {}).unwrap();
        assert!(games.iter().all(|g| g.record.returns == Some(vec![1.0, 0.0])));
        // Both agents are "first": each sits as X in half the games.
        assert_eq!((s.agents[0].wins, s.agents[0].losses), (2, 2));
        assert_eq!(s.agents[0].score, 0.5);
        // Records replay.
        for g in &games {
            meeple_game::replay(&TicTacToe, &g.record).unwrap();
        }
    }

    #[test]
    fn first_beats_random_at_connect_four() {
        // "first" stacks column 1 and wins with a vertical four unless random happens to block
        // it, so it scores about 3/4; the interval must exclude an even match.
        let (s, _) = run_match(&Connect4::default(), &config(&["random", "first"], 200, None), |_| {}).unwrap();
        let r = &s.agents[0];
        assert!(r.ci95[1] < 0.5, "first should beat random: {r:?}");
        assert_eq!(s.agents[1].wins, r.losses);
        assert!(r.ci95[0] <= r.score && r.score <= r.ci95[1]);
    }

    #[test]
    fn bad_configurations_are_refused_before_playing() {
        let game = Connect4::default();
        let err = run_match(&game, &config(&["random"], 10, None), |_| {}).unwrap_err().to_string();
        assert!(err.contains("has 2 seats: give 2 agent specs, not 1"), "{err}");
        let err = run_match(&game, &config(&["random", "first"], 7, None), |_| {}).unwrap_err().to_string();
        assert!(err.contains("multiple of 2"), "{err}");
        let err = run_match(&game, &config(&["random", "bogus"], 10, None), |_| {}).unwrap_err().to_string();
        assert!(err.contains("unknown agent 'bogus'"), "{err}");
    }
}

#[cfg(test)]
mod opening_tests {
    use super::*;
    use meeple_games::Connect4;

    #[test]
    fn random_openings_are_shared_by_both_seatings() {
        let config = MatchConfig {
            agents: vec!["first".into(), "first".into()],
            games: 8,
            seed: 3,
            threads: Some(1),
            budget: Budget::UNLIMITED,
            opening_plies: 4,
        };
        let (_, games) = run_match(&Connect4::default(), &config, |_| {}).unwrap();
        for pair in games.chunks(2) {
            assert_eq!(pair[0].record.actions[..4], pair[1].record.actions[..4], "same opening in both seatings");
        }
        let openings: std::collections::BTreeSet<_> = games.iter().map(|g| g.record.actions[..4].to_vec()).collect();
        assert!(openings.len() >= 3, "seeds give different openings: {openings:?}");
        // The agents' own moves are not counted as opening: times exist only for them.
        assert!(games.iter().all(|g| g.move_ms.len() + 4 == g.record.actions.len()));
    }
}
