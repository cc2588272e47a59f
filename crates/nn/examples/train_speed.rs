//! Training-pass speed on a fixed random batch, for profiling the hand-written gradients:
//! `cargo run --release -p meeple-nn --example train_speed -- SPEC C H W ACTIONS [SECONDS] [THREADS]`
//! (connect four's default: `resnet 3 6 7 7`; Cathedral's: `resnet 28 10 10 ACTIONS`).

use meeple_nn::{Batch, NetConfig, TrainConfig, Trainer};
use rand::{RngExt, SeedableRng};
use std::time::Instant;

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() < 5 {
        eprintln!("usage: train_speed SPEC C H W ACTIONS [SECONDS] [THREADS]");
        std::process::exit(2);
    }
    let n = |i: usize| a[i].parse::<usize>().expect("a whole number");
    let (c, h, w, actions) = (n(1), n(2), n(3), n(4));
    let seconds: f64 = a.get(5).map_or(5.0, |s| s.parse().expect("seconds"));
    let threads = a.get(6).map_or(1, |s| s.parse().expect("threads"));
    let config = NetConfig::from_spec(&a[0], &[c, h, w], actions, 2, None).expect("a network spec");
    let size = 256;
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let input = config.input_len();
    let batch = Batch {
        size,
        obs: (0..size * input).map(|_| if rng.random_bool(0.3) { 1.0 } else { 0.0 }).collect(),
        legal: vec![1.0; size * actions],
        policy: vec![1.0 / actions as f32; size * actions],
        policy_weight: vec![1.0; size],
        value: vec![0.5; size * 2],
        ..Batch::default()
    };
    let mut trainer = Trainer::new(config.clone(), TrainConfig::default(), 1, threads);
    trainer.train_step(&batch).expect("a step");
    let start = Instant::now();
    let mut steps = 0u64;
    while start.elapsed().as_secs_f64() < seconds {
        trainer.train_step(&batch).expect("a step");
        steps += 1;
    }
    let s = start.elapsed().as_secs_f64();
    let samples = steps as f64 * size as f64 / s;
    println!(
        "{} : {:.0} samples/s, {:.1} GFLOP/s (3 x forward multiply-adds), {threads} thread(s)",
        config.spec(),
        samples,
        samples * config.macs() as f64 * 6.0 / 1e9
    );
}
