//! Where each game of a match sits: its pairing, seating, seed and random opening.

use crate::config::MatchConfig;
use meeple_game::{Error, Game, State, Turn, derive_seed, rng_from_seed};

/// The seatings each seed is played in: every ordering of `n` agents over `n` seats up to four
/// players (at most 24); from five players, the `n` rotations, a balanced subset in which every
/// agent sits in every seat exactly once.
pub fn seatings(n: usize) -> Vec<Vec<usize>> {
    if n >= 5 {
        return (0..n).map(|r| (0..n).map(|seat| (seat + r) % n).collect()).collect();
    }
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

/// The groups of agents that meet: all agents at once when they fill the seats; for
/// two-player games with more agents, every pair (round robin) or the first against each other
/// one (gauntlet).
pub fn pairings(players: usize, config: &MatchConfig) -> Vec<Vec<usize>> {
    let k = config.agents.len();
    if k == players || players != 2 {
        return vec![(0..k).collect()];
    }
    if config.gauntlet {
        return (1..k).map(|j| vec![0, j]).collect();
    }
    (0..k).flat_map(|i| (i + 1..k).map(move |j| vec![i, j])).collect()
}

/// Games a match plays: `games` for every pairing.
pub fn total_games(players: usize, config: &MatchConfig) -> usize {
    pairings(players, config).len() * config.games
}

/// Random openings tried per seed before giving up: an opening that ends the game is drawn
/// again, so no game is decided before the agents move.
const OPENING_TRIES: u64 = 100;

/// The state after the random opening of a seed, the actions that reached it, and the chance
/// generator to go on with. The same for every seating of the seed. An opening that ends the
/// game is drawn again (from the next stream of the seed); an error if every try ends it.
pub(crate) fn random_opening<G: Game>(
    game: &G,
    config: &MatchConfig,
    seed: u64,
) -> Result<(G::State, Vec<String>, meeple_game::Rng), Error> {
    let (mut outcomes, mut legal) = (Vec::new(), Vec::new());
    for attempt in 0..OPENING_TRIES {
        let mut chance_rng = rng_from_seed(derive_seed(seed, 0));
        let mut opening_rng = rng_from_seed(derive_seed(seed, (1 << 32) + attempt));
        let mut state = game.initial_state();
        let mut actions = Vec::new();
        let mut plies = 0;
        while plies < config.opening_plies {
            let action = match state.turn() {
                Turn::Terminal => break,
                Turn::Chance => meeple_game::draw_chance(&state, &mut outcomes, &mut chance_rng),
                Turn::Player(_) => {
                    plies += 1;
                    state.legal_actions(&mut legal);
                    legal[rand::RngExt::random_range(&mut opening_rng, 0..legal.len())]
                }
            };
            actions.push(state.action_to_string(action));
            state.apply_unchecked(action);
        }
        if state.turn() != Turn::Terminal {
            return Ok((state, actions, chance_rng));
        }
    }
    Err(Error::Invalid(format!(
        "--opening-plies {}: {OPENING_TRIES} random openings of {} all ended the game before the agents moved; \
         give fewer plies",
        config.opening_plies,
        game.spec()
    )))
}

/// Where game `index` of a match sits: `seating[seat]` is the agent in that seat, and the seed.
/// Pairing `index / games`; within it, game `j = index % games` has seed
/// `derive_seed(base, j / seatings)` and seating `j % seatings`.
pub(crate) fn game_slot(players: usize, config: &MatchConfig, index: usize) -> (Vec<usize>, u64) {
    let all = seatings(players);
    let groups = pairings(players, config);
    let group = &groups[index / config.games];
    let j = index % config.games;
    let seating = all[j % all.len()].iter().map(|&i| group[i]).collect();
    (seating, derive_seed(config.seed, (j / all.len()) as u64))
}
