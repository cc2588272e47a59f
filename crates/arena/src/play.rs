//! Playing a match: games in parallel on plain threads, resumed from records, or stopped early by an SPRT.

use crate::config::MatchConfig;
use crate::ratings;
use crate::records::{PlayedGame, check_resumed};
use crate::schedule::{game_slot, random_opening, total_games};
use crate::summary::{MatchSummary, SprtReport, summarize};
use crate::validate::validate;
use meeple_game::{Error, Game, GameRecord, State, Turn, limits, seat_seed};
use meeple_search::{Ext, make_agent_with};
use std::time::Instant;

/// Plays game `index` of a match, seated and seeded by [`game_slot`], so every pairing plays
/// the same seeds (common random numbers across the whole tournament).
pub fn play_game<G: Game>(game: &G, agents: &Ext<G>, config: &MatchConfig, index: usize) -> Result<PlayedGame, Error> {
    let (seating, seed) = game_slot(game.num_players(), config, index);
    let mut players = Vec::with_capacity(seating.len());
    for &a in &seating {
        // An agent's randomness follows the agent, not the seat, so paired games differ only
        // in who sits where.
        players.push(make_agent_with(game, &config.agents[a], seat_seed(seed, a), agents)?);
    }
    let (mut state, mut actions, mut chance_rng) = random_opening(game, config, seed)?;
    let mut outcomes = Vec::new();
    let (mut move_ms, mut move_seats) = (Vec::new(), Vec::new());
    loop {
        let action = match state.turn() {
            Turn::Terminal => break,
            Turn::Chance => meeple_game::draw_chance(&state, &mut outcomes, &mut chance_rng),
            Turn::Player(seat) => {
                let start = Instant::now();
                let action = players[seat].act(&state, &config.budget)?;
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
        metrics: state.metrics().into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        resigned: None,
    };
    Ok(PlayedGame { index, seating, record, move_ms, move_seats, settings: Some(config.settings()), check: None })
}

/// Plays the whole match in parallel. `on_game` sees each game as it finishes (in any order;
/// use it for progress and records); the summary is the same for any thread count.
pub fn run_match<G: Game>(
    game: &G,
    agents: &Ext<G>,
    config: &MatchConfig,
    on_game: impl Fn(&PlayedGame) + Sync,
) -> Result<(MatchSummary, Vec<PlayedGame>), Error> {
    run_match_from(game, agents, config, Vec::new(), on_game)
}

/// Like [`run_match`], keeping the games in `done` (read back from a records file) and playing
/// only the missing ones. Each kept game must be the game its index would produce: made with
/// the same settings, in the same seat and seed, and it must replay move by move through the
/// rules to the returns it claims; otherwise this is an error naming what differs.
///
/// With [`MatchConfig::sprt`] games are played in batches of [`SPRT_BATCH`] until the test
/// decides; kept games count toward the batches they belong to.
pub fn run_match_from<G: Game>(
    game: &G,
    agents: &Ext<G>,
    config: &MatchConfig,
    done: Vec<PlayedGame>,
    on_game: impl Fn(&PlayedGame) + Sync,
) -> Result<(MatchSummary, Vec<PlayedGame>), Error> {
    validate(game, agents, config)?;
    let total = total_games(game.num_players(), config);
    let have = check_games(game, config, &done, total)?;
    let Some(sprt) = config.sprt else {
        let missing: Vec<usize> = (0..total).filter(|&i| !have[i]).collect();
        let mut played = done;
        played.extend(play_indices(game, agents, config, &missing, &on_game)?);
        played.sort_by_key(|g| g.index);
        return Ok((summarize(game.spec().to_string(), game.num_players(), config, &played), played));
    };
    let mut kept: std::collections::BTreeMap<usize, PlayedGame> = done.into_iter().map(|g| (g.index, g)).collect();
    let mut played = Vec::new();
    let mut decision = ratings::SprtDecision::Continue;
    let mut start = 0;
    while start < config.games && decision == ratings::SprtDecision::Continue {
        let end = (start + SPRT_BATCH).min(config.games);
        let missing: Vec<usize> = (start..end).filter(|&i| !have[i]).collect();
        played.extend((start..end).filter_map(|i| kept.remove(&i)));
        played.extend(play_indices(game, agents, config, &missing, &on_game)?);
        start = end;
        let s = summarize(game.spec().to_string(), 2, config, &played);
        let a = &s.agents[0];
        decision = sprt.decide(a.wins as f64, a.draws as f64, a.losses as f64);
    }
    Ok((sprt_summary(game, config, sprt, decision, &mut played), played))
}

/// Checks games played earlier (read back from records, or by other processes) against the
/// match, each replayed, and returns which of its `total` games they are; a game given twice
/// is an error.
fn check_games<G: Game>(
    game: &G,
    config: &MatchConfig,
    games: &[PlayedGame],
    total: usize,
) -> Result<Vec<bool>, Error> {
    let settings = config.settings();
    let mut have = vec![false; total];
    for g in games {
        check_resumed(game, config, &settings, g, total)?;
        if std::mem::replace(&mut have[g.index], true) {
            return Err(Error::Record(format!("game {} appears twice in the records", g.index)));
        }
    }
    Ok(have)
}

/// The summary of an SPRT match over `played` (sorted here), with the test's report.
fn sprt_summary<G: Game>(
    game: &G,
    config: &MatchConfig,
    sprt: ratings::Sprt,
    decision: ratings::SprtDecision,
    played: &mut [PlayedGame],
) -> MatchSummary {
    played.sort_by_key(|g| g.index);
    let mut summary = summarize(game.spec().to_string(), 2, config, played);
    let a = &summary.agents[0];
    let (lower, upper) = sprt.bounds();
    summary.sprt = Some(SprtReport {
        elo0: sprt.elo0,
        elo1: sprt.elo1,
        alpha: sprt.alpha,
        beta: sprt.beta,
        llr: sprt.llr(a.wins as f64, a.draws as f64, a.losses as f64),
        lower,
        upper,
        decision,
    });
    summary
}

/// Plays exactly the games `indices` of a match (each as [`run_match`] would play it: the
/// same seats, seeds and openings), for a caller that splits a match across processes or
/// machines and merges the games with [`merge_games`]. Indices must be distinct and below the
/// match's game count.
pub fn play_games<G: Game>(
    game: &G,
    agents: &Ext<G>,
    config: &MatchConfig,
    indices: &[usize],
    on_game: impl Fn(&PlayedGame) + Sync,
) -> Result<Vec<PlayedGame>, Error> {
    validate(game, agents, config)?;
    let total = total_games(game.num_players(), config);
    let mut seen = std::collections::BTreeSet::new();
    for &i in indices {
        if i >= total {
            return Err(Error::Invalid(format!(
                "game index {i} is beyond the match's {total} games (0 to {})",
                total - 1
            )));
        }
        if !seen.insert(i) {
            return Err(Error::Invalid(format!("game index {i} is asked for twice")));
        }
    }
    play_indices(game, agents, config, indices, &on_game)
}

/// Where a match split across processes stands, from the games played so far.
#[derive(Debug)]
pub enum Merged {
    /// Every game the match needs is in: its summary (an SPRT match's once the test decided,
    /// counting only the games up to that point).
    Done(Box<MatchSummary>),
    /// The games still to play before the summary can be given: all that are missing, or for an
    /// SPRT match those of the next batches (from the first missing game, `SPRT_BATCH` at a time).
    Missing(Vec<usize>),
}

/// Merges the games of a match played in pieces ([`play_games`]): each is checked as a resumed
/// game is (the same match, seat and seed, and it replays through the rules to its result) and
/// counted once (a game given twice is an error). With everything in, the summary is the one
/// [`run_match`] gives for the same match.
pub fn merge_games<G: Game>(
    game: &G,
    agents: &Ext<G>,
    config: &MatchConfig,
    played: Vec<PlayedGame>,
) -> Result<Merged, Error> {
    validate(game, agents, config)?;
    let total = total_games(game.num_players(), config);
    let have = check_games(game, config, &played, total)?;
    let Some(sprt) = config.sprt else {
        let missing: Vec<usize> = (0..total).filter(|&i| !have[i]).collect();
        if !missing.is_empty() {
            return Ok(Merged::Missing(missing));
        }
        let mut played = played;
        played.sort_by_key(|g| g.index);
        return Ok(Merged::Done(Box::new(summarize(game.spec().to_string(), game.num_players(), config, &played))));
    };
    let mut by_index: std::collections::BTreeMap<usize, PlayedGame> =
        played.into_iter().map(|g| (g.index, g)).collect();
    let mut counted = Vec::new();
    let mut start = 0;
    let mut decision = ratings::SprtDecision::Continue;
    while start < config.games && decision == ratings::SprtDecision::Continue {
        let end = (start + SPRT_BATCH).min(config.games);
        let missing: Vec<usize> = (start..end).filter(|&i| !have[i]).collect();
        if !missing.is_empty() {
            return Ok(Merged::Missing(missing));
        }
        counted.extend((start..end).filter_map(|i| by_index.remove(&i)));
        start = end;
        let s = summarize(game.spec().to_string(), 2, config, &counted);
        let a = &s.agents[0];
        decision = sprt.decide(a.wins as f64, a.draws as f64, a.losses as f64);
    }
    Ok(Merged::Done(Box::new(sprt_summary(game, config, sprt, decision, &mut counted))))
}

fn play_indices<G: Game>(
    game: &G,
    agents: &Ext<G>,
    config: &MatchConfig,
    indices: &[usize],
    on_game: &(impl Fn(&PlayedGame) + Sync),
) -> Result<Vec<PlayedGame>, Error> {
    if indices.is_empty() {
        return Ok(Vec::new());
    }
    // Plain threads taking the next game from a counter, not a rayon pool: an agent that
    // computes on rayon itself (a network's inference pool, burn) would otherwise let the
    // waiting worker steal a whole other game in the middle of a move, and that move would
    // take the length of a game.
    let threads = config.threads.unwrap_or_else(limits::cores).clamp(1, indices.len());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed = std::sync::atomic::AtomicBool::new(false);
    let results: Vec<std::sync::Mutex<Option<Result<PlayedGame, Error>>>> =
        indices.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let worker = || {
        use std::sync::atomic::Ordering;
        while !failed.load(Ordering::Relaxed) {
            let k = next.fetch_add(1, Ordering::Relaxed);
            let Some(&i) = indices.get(k) else { break };
            let r = play_game(game, agents, config, i);
            match &r {
                Ok(g) => on_game(g),
                Err(_) => failed.store(true, Ordering::Relaxed),
            }
            *results[k].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
        }
    };
    std::thread::scope(|scope| -> Result<(), Error> {
        for t in 0..threads {
            std::thread::Builder::new()
                .name(format!("meeple-arena-{t}"))
                .spawn_scoped(scope, worker)
                .map_err(|e| Error::Invalid(format!("cannot start worker threads: {e}")))?;
        }
        Ok(())
    })?;
    let mut games = Vec::with_capacity(indices.len());
    for r in results {
        match r.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(Ok(g)) => games.push(g),
            Some(Err(e)) => return Err(e),
            // Not played because another game failed first: that error is returned above or
            // below in index order.
            None => {}
        }
    }
    if games.len() < indices.len() {
        return Err(Error::Invalid("a game failed and the match stopped".into()));
    }
    Ok(games)
}

/// Games an SPRT plays between looks at the result: fixed, so the stopping point does not
/// depend on the thread count.
pub const SPRT_BATCH: usize = 16;

/// A two-agent match that stops as soon as `sprt` decides, or after `config.games` games.
pub fn run_sprt<G: Game>(
    game: &G,
    agents: &Ext<G>,
    config: &MatchConfig,
    sprt: ratings::Sprt,
    on_game: impl Fn(&PlayedGame) + Sync,
) -> Result<(MatchSummary, Vec<PlayedGame>), Error> {
    run_match_from(game, agents, &MatchConfig { sprt: Some(sprt), ..config.clone() }, Vec::new(), on_game)
}
