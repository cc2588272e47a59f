//! How often agents play a perfect move in connect four positions solved here by exact
//! alpha-beta (every child searched to the end of the game):
//!
//! `cargo run --release -p meeple-learn --example connect4_solved -- POSITIONS SEED MIN_PLY MAX_PLY AGENT...`
//!
//! Positions come from random play (seeded), `MIN_PLY..=MAX_PLY` moves in; those where every
//! move has the same value (won, drawn or lost whatever is played) say nothing and are left out.
//! A move is perfect when it keeps the position's value under best play.

use meeple_game::{Budget, Game, State, rng_from_seed};
use meeple_games::Connect4;
use meeple_search::{AlphaBeta, AlphaBetaConfig};
use rand::RngExt;

/// alpha-beta's value of a forced win (its `WIN` less the plies to it) is above this.
const WON: f64 = 500_000.0;

/// The value of `state`, `plies` moves in, for `mover` (the player to move, or who would be)
/// under best play: 1 won, 0 drawn, -1 lost.
fn solve(game: &Connect4, state: &<Connect4 as Game>::State, mover: usize, plies: usize) -> i32 {
    if let Some(r) = state.returns() {
        return (r[mover] * 2.0 - 1.0).round() as i32;
    }
    let left = 42 - plies as u32;
    let spec: meeple_game::Spec =
        format!("alphabeta:depth={left},tt=64mb,lmr=false,lmp=false").parse().expect("a spec");
    let mut ab = AlphaBeta::new(game, AlphaBetaConfig::from_spec(&spec).expect("a config"), 0).expect("alpha-beta");
    meeple_game::Agent::act(&mut ab, state, &Budget::default()).expect("a move");
    let v = ab.report().value;
    if v > WON {
        1
    } else if v < -WON {
        -1
    } else {
        0
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 5 {
        eprintln!("usage: connect4_solved POSITIONS SEED MIN_PLY MAX_PLY AGENT...");
        std::process::exit(2);
    }
    let n: usize = args[0].parse().expect("POSITIONS");
    let seed: u64 = args[1].parse().expect("SEED");
    let (lo, hi): (usize, usize) = (args[2].parse().expect("MIN_PLY"), args[3].parse().expect("MAX_PLY"));
    let game = Connect4::default();
    let mut rng = rng_from_seed(seed);
    let mut agents: Vec<_> = args[4..]
        .iter()
        .map(|s| (s.clone(), meeple_learn::make_agent(&game, s, seed).expect("an agent"), 0usize))
        .collect();
    let (mut informative, mut legal) = (0usize, Vec::new());
    let start = std::time::Instant::now();
    while informative < n {
        let target = rng.random_range(lo..=hi);
        let (mut state, mut plies) = (game.initial_state(), 0);
        while plies < target && state.returns().is_none() {
            state.legal_actions(&mut legal);
            state.apply_unchecked(legal[rng.random_range(0..legal.len())]);
            plies += 1;
        }
        if state.returns().is_some() {
            continue;
        }
        state.legal_actions(&mut legal);
        // Each move's value for the mover: minus the value of the position it leaves.
        let values: Vec<(meeple_game::Action, i32)> = legal
            .iter()
            .map(|&a| {
                let mut child = state;
                child.apply_unchecked(a);
                (a, -solve(&game, &child, 1 - plies % 2, plies + 1))
            })
            .collect();
        let best = values.iter().map(|v| v.1).max().expect("moves");
        if values.iter().all(|v| v.1 == best) {
            continue;
        }
        informative += 1;
        for (_, agent, perfect) in agents.iter_mut() {
            let a = agent.act(&state, &Budget::default()).expect("a move");
            if values.iter().any(|&(m, v)| m == a && v == best) {
                *perfect += 1;
            }
        }
    }
    println!("{n} positions {lo}..={hi} plies in (seed {seed}), solved in {:.0} s:", start.elapsed().as_secs_f64());
    for (spec, _, perfect) in &agents {
        println!("  {:>5.1}%  {spec}", 100.0 * *perfect as f64 / n as f64);
    }
}
