//! What the end-to-end learning tests share.

use meeple_game::{Game, State, Turn, derive_seed, rng_from_seed};
use meeple_games::TicTacToe;

/// Plays `agent` against `random` over `seeds` seeds in both seats; returns (wins, draws, losses).
pub fn match_against_random(agent: &str, seeds: u64) -> (u32, u32, u32) {
    match_between(agent, "random", seeds, 0)
}

/// Plays `agent` against `other` over `seeds` seeds in both seats, each game opening with
/// `opening` random plies (the seed's: both seatings play the same opening); returns `agent`'s
/// (wins, draws, losses).
#[allow(dead_code)]
pub fn match_between(agent: &str, other: &str, seeds: u64, opening: usize) -> (u32, u32, u32) {
    let game = TicTacToe;
    let mut wdl = (0, 0, 0);
    for seed in 0..seeds {
        for seat in 0..2 {
            let mut players = [
                meeple_learn::make_agent(&game, agent, derive_seed(seed, 1)).unwrap(),
                meeple_learn::make_agent(&game, other, derive_seed(seed, 2)).unwrap(),
            ];
            if seat == 1 {
                players.swap(0, 1);
            }
            let mut s = game.initial_state();
            let mut rng = rng_from_seed(seed);
            let mut outcomes = Vec::new();
            let mut legal = Vec::new();
            for _ in 0..opening {
                s.legal_actions(&mut legal);
                s.apply_unchecked(legal[rand::RngExt::random_range(&mut rng, 0..legal.len())]);
            }
            loop {
                match s.turn() {
                    Turn::Terminal => break,
                    Turn::Chance => {
                        s.apply_unchecked(meeple_game::draw_chance(&s, &mut outcomes, &mut rng));
                    }
                    Turn::Player(p) => {
                        let a = players[p].act(&s, &meeple_game::Budget::UNLIMITED).unwrap();
                        s.apply(a).unwrap();
                    }
                }
            }
            let r = s.returns().unwrap()[seat];
            if r == 1.0 {
                wdl.0 += 1;
            } else if r == 0.5 {
                wdl.1 += 1;
            } else {
                wdl.2 += 1;
            }
        }
    }
    wdl
}
