//! Speed of the engines and searches: `cargo bench -p meeple-search`.
//! `meeple bench GAME` reports the same figures as rates for any registered game.

use meeple_game::{Agent, Budget, Game, perft, rng_from_seed};
use meeple_games::{Connect4, TicTacToe};
use meeple_search::{AlphaBeta, AlphaBetaConfig, Mcts, MctsConfig, random_playout};

fn main() {
    divan::main();
}

#[divan::bench]
fn connect4_random_playout(bencher: divan::Bencher<'_, '_>) {
    let start = Connect4::default().initial_state();
    let mut rng = rng_from_seed(1);
    let (mut legal, mut outcomes) = (Vec::new(), Vec::new());
    bencher.bench_local(|| {
        let mut s = start;
        random_playout(&mut s, &mut rng, &mut legal, &mut outcomes)
    });
}

#[divan::bench]
fn connect4_perft_6() -> u64 {
    perft(&Connect4::default().initial_state(), divan::black_box(6))
}

#[divan::bench]
fn tictactoe_perft_9() -> u64 {
    perft(&TicTacToe.initial_state(), divan::black_box(9))
}

#[divan::bench(args = [1000, 10000])]
fn connect4_mcts_decision(bencher: divan::Bencher<'_, '_>, iters: u64) {
    let game = Connect4::default();
    let spec = format!("mcts:iters={iters},solver=false,reuse=false");
    let mut agent = Mcts::new(&game, MctsConfig::from_spec(&spec.parse().unwrap()).unwrap(), spec, 1).unwrap();
    let start = game.initial_state();
    bencher.bench_local(|| agent.act(&start, &Budget::UNLIMITED).unwrap());
}

#[divan::bench(args = [6, 8])]
fn connect4_alphabeta_depth(bencher: divan::Bencher<'_, '_>, depth: u32) {
    let game = Connect4::default();
    let start = game.initial_state();
    bencher.bench_local(|| {
        // A fresh agent each time: a warm table would make later runs free.
        let spec = format!("alphabeta:depth={depth},tt=16mb");
        let mut agent = AlphaBeta::new(&game, AlphaBetaConfig::from_spec(&spec.parse().unwrap()).unwrap(), 1).unwrap();
        agent.act(&start, &Budget::UNLIMITED).unwrap()
    });
}
