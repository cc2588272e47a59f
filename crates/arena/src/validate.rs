//! The checks made on a match before anything is played. Apart from the configuration
//! (`config.rs`), since they need the schedule, which reads the configuration.

use crate::config::{MatchConfig, anchor_index};
use crate::schedule::{pairings, random_opening, seatings};
use meeple_game::{Error, Game, derive_seed, limits};
use meeple_search::{Ext, make_agent_with};

/// Checks a match configuration against a game before anything is played: agent count, game
/// count, threads, every agent spec (so a typo fails at once, not after hours), the memory the
/// agents take in the games played at once, and that a random opening of the asked length can
/// leave a game to play.
pub fn validate<G: Game>(game: &G, agents: &Ext<G>, config: &MatchConfig) -> Result<(), Error> {
    let n = game.num_players();
    let k = config.agents.len();
    if k != n && !(n == 2 && k > 2) {
        return Err(Error::Invalid(format!(
            "{} has {n} seats: give {n} agent specs{}, not {k}",
            game.spec(),
            if n == 2 { " (or more, for a round robin)" } else { "" }
        )));
    }
    if !(config.confidence > 0.0 && config.confidence < 1.0) {
        return Err(Error::Invalid(format!("--confidence {} must be between 0 and 1, like 0.95", config.confidence)));
    }
    if let Some(anchor) = &config.anchor
        && anchor_index(config, anchor).is_none()
    {
        return Err(Error::Invalid(format!(
            "--anchor '{anchor}' is not one of the agents: {}",
            config.labels().join(", ")
        )));
    }
    let per_seed = seatings(n).len();
    if config.games == 0 || !config.games.is_multiple_of(per_seed) {
        return Err(Error::Invalid(format!(
            "--games {} must be a positive multiple of {per_seed}: each seed is played in all {per_seed} seatings",
            config.games
        )));
    }
    let groups = pairings(n, config);
    if config.games > limits::MAX_GAMES || groups.len() * config.games > limits::MAX_GAMES {
        return Err(Error::Invalid(format!(
            "--games {} over {} pairings is more than the limit of {} games in one match (split it into runs \
             with other --seed values)",
            config.games,
            groups.len(),
            limits::MAX_GAMES
        )));
    }
    if let Some(t) = config.threads {
        limits::check_threads("--threads", t)?;
    }
    if let Some(sprt) = &config.sprt {
        if k != 2 || n != 2 {
            return Err(Error::Invalid("--sprt tests two agents in a two-player game".into()));
        }
        if !(sprt.elo1 > sprt.elo0
            && sprt.elo0.is_finite()
            && sprt.elo1.is_finite()
            && sprt.alpha > 0.0
            && sprt.alpha < 0.5
            && sprt.beta > 0.0
            && sprt.beta < 0.5)
        {
            return Err(Error::Invalid("--sprt needs finite elo0 < elo1 and alpha, beta in (0, 0.5)".into()));
        }
    }
    let mut memory = Vec::with_capacity(k);
    for spec in &config.agents {
        memory.push(make_agent_with(game, spec, 0, agents)?.memory_bytes());
    }
    // Every game holds its seated agents' tables; as many games run at once as there are
    // worker threads.
    let per_game = groups.iter().map(|g| g.iter().map(|&a| memory[a]).sum::<u64>()).max().unwrap_or(0);
    let at_once = config.threads.unwrap_or_else(limits::cores).min(groups.len() * config.games) as u64;
    let needed = per_game.saturating_mul(at_once);
    let allowed = limits::memory() / 4 * 3;
    if needed > allowed {
        return Err(Error::Invalid(format!(
            "the agents' tables need about {} ({} per game, {at_once} games at once), more than the {} this machine \
             can spare (three quarters of {}): give a smaller tt= or fewer --threads",
            limits::format_bytes(needed),
            limits::format_bytes(per_game),
            limits::format_bytes(allowed),
            limits::format_bytes(limits::memory())
        )));
    }
    if config.opening_plies > 0 {
        random_opening(game, config, derive_seed(config.seed, 0))?;
    }
    Ok(())
}
