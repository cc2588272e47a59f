//! Networks, training and checkpoints on small problems with known answers.

use meeple_nn::{Batch, NetConfig, Network, NnError, Sidecar, TrainConfig, Trainer, sidecar_path};
use std::path::PathBuf;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("meeple-nn-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn tower() -> NetConfig {
    NetConfig::from_spec("resnet:blocks=1,channels=8", &[3, 4, 5], 5, 2, None).unwrap()
}

/// The same tower with the plane head: 5 actions on 2 planes of the 4x5 board.
fn planes_tower() -> NetConfig {
    let config = NetConfig::from_spec(
        "resnet:blocks=1,channels=8,head=planes",
        &[3, 4, 5],
        5,
        2,
        Some((2, &[3, 8, 19, 20, 39])),
    );
    config.unwrap()
}

/// The tower with an ownership head.
fn owning_tower() -> NetConfig {
    NetConfig::from_spec("resnet:blocks=1,channels=8,ownership=true", &[3, 4, 5], 5, 2, None).unwrap()
}

/// A dense trunk with the score-margin head, three seats.
fn scoring_mlp() -> NetConfig {
    NetConfig::from_spec("mlp:layers=2,width=32,score=true", &[12], 5, 3, None).unwrap()
}

fn sidecar(net: &NetConfig) -> Sidecar {
    Sidecar {
        format: meeple_nn::SIDECAR_FORMAT,
        net: net.clone(),
        game: "test".into(),
        step: 0,
        run: Default::default(),
        commands: Vec::new(),
    }
}

/// A deterministic batch of `n` observations.
fn observations(config: &NetConfig, n: usize) -> Vec<f32> {
    (0..n * config.input_len()).map(|i| ((i * 7919) % 13) as f32 / 13.0).collect()
}

#[test]
fn the_same_seed_gives_the_same_network() {
    let obs = observations(&tower(), 4);
    let a = Network::new(tower(), 5, 1).evaluate(&obs, 4).unwrap();
    let b = Network::new(tower(), 5, 1).evaluate(&obs, 4).unwrap();
    let c = Network::new(tower(), 6, 1).evaluate(&obs, 4).unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert_eq!((a.logits.len(), a.values.len()), (4 * 5, 4 * 2));
    assert!(a.values.iter().all(|v| (0.0..=1.0).contains(v)), "values are expected returns");
    // A batch gives each position what it gets alone.
    let one = Network::new(tower(), 5, 1).evaluate(&obs[..tower().input_len()], 1).unwrap();
    for (x, y) in one.logits.iter().zip(&a.logits[..5]) {
        assert!((x - y).abs() < 1e-5, "{x} {y}");
    }
    let err = Network::new(tower(), 5, 1).evaluate(&obs[1..], 4).unwrap_err();
    assert!(matches!(err, NnError::Shape(_)), "{err}");
}

#[test]
fn checkpoints_round_trip_bit_for_bit() {
    let d = dir("roundtrip");
    let mlp = NetConfig::from_spec("mlp:layers=2,width=16", &[12], 5, 3, None).unwrap();
    for config in [tower(), planes_tower(), owning_tower(), mlp] {
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let mut trainer = Trainer::new(config.clone(), TrainConfig::default(), 1, 1);
        // A few steps so BatchNorm's running statistics and the weights move off their start.
        let batch = target_batch(&config, 8);
        for _ in 0..3 {
            trainer.train_step(&batch).unwrap();
        }
        let path = d.join("net.safetensors");
        trainer.save(&path, sidecar(&config)).unwrap();
        let (loaded, side) = Network::load(&path, Some("test"), 1).unwrap();
        assert_eq!(side.step, 3);
        assert_eq!(side.net, config);
        let obs = observations(&config, 6);
        assert_eq!(trainer.network(1).evaluate(&obs, 6).unwrap(), loaded.evaluate(&obs, 6).unwrap());
        // Written whole and renamed: nothing left beside the two files.
        let mut names: Vec<String> =
            std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        assert_eq!(names, ["net.json", "net.safetensors"]);
    }
}

#[test]
fn bad_checkpoints_are_refused_with_the_reason() {
    let d = dir("bad");
    let config = tower();
    let path = d.join("net.safetensors");
    Network::new(config.clone(), 1, 1).save(&path, &sidecar(&config)).unwrap();
    let err = |p: &PathBuf, game: Option<&str>| Network::load(p, game, 1).unwrap_err().to_string();
    assert!(err(&path, Some("connect4")).contains("trained for 'test', not 'connect4'"));
    assert!(err(&d.join("none.safetensors"), None).contains("no readable sidecar"));
    // A sidecar describing another shape.
    let other = d.join("other.safetensors");
    std::fs::copy(&path, &other).unwrap();
    let mut side = sidecar(&config);
    side.net = NetConfig::from_spec("resnet:blocks=2,channels=8", &[3, 4, 5], 5, 2, None).unwrap();
    std::fs::write(sidecar_path(&other), serde_json::to_string(&side).unwrap()).unwrap();
    assert!(err(&other, None).contains("do not fit the network"), "{}", err(&other, None));
    // A sidecar that promises an ownership head the weights lack.
    side.net = owning_tower();
    std::fs::write(sidecar_path(&other), serde_json::to_string(&side).unwrap()).unwrap();
    assert!(err(&other, None).contains("do not fit the network"), "{}", err(&other, None));
    // Truncated weights.
    let cut = d.join("cut.safetensors");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    std::fs::copy(sidecar_path(&path), sidecar_path(&cut)).unwrap();
    assert!(err(&cut, None).contains("unreadable weights"), "{}", err(&cut, None));
    // Garbage and oversized sidecars.
    std::fs::write(sidecar_path(&cut), "{not json").unwrap();
    assert!(err(&cut, None).contains("the sidecar is not valid"));
    let mut huge = sidecar(&config);
    huge.net.trunk = meeple_nn::Trunk::Resnet { blocks: 1000, channels: 8 };
    std::fs::write(sidecar_path(&cut), serde_json::to_string(&huge).unwrap()).unwrap();
    assert!(err(&cut, None).contains("outside 1..=40"), "{}", err(&cut, None));
}

/// A batch whose policy target is always action 2 among actions 1-3 (0 and 4 illegal), whose
/// value target is (0.9, 0.1), and whose ownership target (where the network has the head) is
/// the first observation plane, 1 where it is above a half and -1 elsewhere; whose score target
/// (where the network has the head) is 0.8 where the first observation value is above a half
/// and -0.6 elsewhere.
fn target_batch(config: &NetConfig, n: usize) -> Batch {
    let a = config.actions;
    let mut batch = Batch { size: n, obs: observations(config, n), ..Batch::default() };
    for _ in 0..n {
        batch.legal.extend((0..a).map(|i| if (1..=3).contains(&i) { 1.0 } else { 0.0 }));
        batch.policy.extend((0..a).map(|i| if i == 2 { 1.0 } else { 0.0 }));
        batch.policy_weight.push(1.0);
        batch.value.extend((0..config.seats).map(|s| if s == 0 { 0.9 } else { 0.1 }));
    }
    let cells = config.ownership_cells();
    if cells > 0 {
        for b in 0..n {
            let plane = &batch.obs[b * config.input_len()..][..cells];
            batch.ownership.extend(plane.iter().map(|&x| if x > 0.5 { 1.0 } else { -1.0 }));
            batch.ownership_weight.push(1.0);
        }
    }
    if config.score {
        for b in 0..n {
            batch.score.push(if batch.obs[b * config.input_len()] > 0.5 { 0.8 } else { -0.6 });
            batch.score_weight.push(1.0);
        }
    }
    batch
}

#[test]
fn training_fits_a_small_target() {
    for config in [tower(), planes_tower(), owning_tower(), scoring_mlp()] {
        fits_a_small_target(config);
    }
}

fn fits_a_small_target(config: NetConfig) {
    let batch = target_batch(&config, 16);
    let train = TrainConfig { warmup: 5, decay: 200, ..TrainConfig::default() };
    let mut trainer = Trainer::new(config.clone(), train, 3, 1);
    let first = trainer.train_step(&batch).unwrap();
    let mut last = first;
    for _ in 0..150 {
        last = trainer.train_step(&batch).unwrap();
    }
    assert!(last.policy < 0.1 && last.value < 0.01, "first {first:?}, last {last:?}");
    if config.ownership {
        assert!(first.ownership > 0.5 && last.ownership < 0.1, "first {first:?}, last {last:?}");
    } else {
        assert_eq!(last.ownership, 0.0);
    }
    if config.score {
        assert!(first.score > 0.2 && last.score < 0.02, "first {first:?}, last {last:?}");
    } else {
        assert_eq!(last.score, 0.0);
    }
    assert!(last.entropy < first.entropy);
    let out = trainer.network(1).evaluate(&batch.obs[..config.input_len()], 1).unwrap();
    let best = (1..=3).max_by(|&x, &y| out.logits[x].total_cmp(&out.logits[y])).unwrap();
    assert_eq!(best, 2);
    assert!((out.values[0] - 0.9).abs() < 0.1 && (out.values[1] - 0.1).abs() < 0.1, "{:?}", out.values);
    // Same seed, one thread: the same weights after the same steps.
    let mut again = Trainer::new(config.clone(), TrainConfig { warmup: 5, decay: 200, ..TrainConfig::default() }, 3, 1);
    for _ in 0..151 {
        again.train_step(&batch).unwrap();
    }
    let obs = observations(&config, 3);
    assert_eq!(again.network(1).evaluate(&obs, 3).unwrap(), trainer.network(1).evaluate(&obs, 3).unwrap());
    // After training, BatchNorm's running statistics are no longer the identity: the folded
    // fast pass must still match burn's.
    let (fast, slow) =
        (trainer.network(1).evaluate(&obs, 3).unwrap(), trainer.network(1).evaluate_reference(&obs, 3).unwrap());
    for (a, b) in fast.logits.iter().chain(&fast.values).zip(slow.logits.iter().chain(&slow.values)) {
        assert!((a - b).abs() < 1e-3 * (1.0 + b.abs()), "fast {a} burn {b}");
    }
    let wrong = Batch { size: 2, ..batch };
    assert!(matches!(trainer.train_step(&wrong), Err(NnError::Shape(_))));
}

#[test]
fn checkpoints_from_before_the_head_choice_load_with_the_dense_head() {
    // The shipped network's weights under a sidecar written the way it was before the head
    // field existed (no "head" in the net config).
    let shipped = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models/connect4-az.safetensors");
    let dir = std::env::temp_dir().join(format!("meeple-nn-legacy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let legacy = dir.join("legacy.safetensors");
    std::fs::copy(&shipped, &legacy).unwrap();
    let mut side: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sidecar_path(&shipped)).unwrap()).unwrap();
    side["net"].as_object_mut().unwrap().remove("head");
    let text = serde_json::to_string(&side).unwrap();
    assert!(!text.contains("\"head\""));
    std::fs::write(sidecar_path(&legacy), text).unwrap();
    let (net, side) = Network::load(&legacy, Some("connect4:rows=6,cols=7"), 1).unwrap();
    assert_eq!(side.net.head, meeple_nn::Head::Dense);
    let out = net.evaluate(&observations(net.config(), 2), 2).unwrap();
    assert_eq!(out.logits.len(), 2 * 7);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_schedule_warms_up_then_decays() {
    let t = TrainConfig { lr: 1.0, warmup: 10, decay: 100, ..TrainConfig::default() };
    assert!((t.lr_at(0) - 0.1).abs() < 1e-12);
    assert!((t.lr_at(9) - 1.0).abs() < 1e-12);
    assert!((t.lr_at(10) - 1.0).abs() < 1e-12);
    assert!((t.lr_at(60) - 0.55).abs() < 1e-9, "halfway: {}", t.lr_at(60));
    assert!((t.lr_at(110) - 0.1).abs() < 1e-12 && (t.lr_at(10_000) - 0.1).abs() < 1e-12);
}

#[test]
fn the_schedule_can_end_with_the_run() {
    use meeple_nn::Anneal;
    let t = TrainConfig { lr: 1.0, warmup: 10, decay: 0, ..TrainConfig::default() };
    // Halfway through the plan at step 60 of 120: the cosine's midpoint; the floor at the end.
    let half = Anneal { step: 60, done: 0.5, end: Some(120) };
    assert!((t.lr_annealed(60, Some(half)) - 0.55).abs() < 1e-9);
    assert!((t.lr_annealed(120, Some(half)) - 0.1).abs() < 1e-12);
    assert!((t.lr_annealed(500, Some(half)) - 0.1).abs() < 1e-12);
    // A pace not yet known holds the rate where it stands.
    let held = Anneal { end: None, ..half };
    assert!((t.lr_annealed(90, Some(held)) - 0.55).abs() < 1e-9);
    // The plan's end moved (a run extended at its floor): the rate goes on from the floor.
    let extended = Anneal { step: 120, done: 1.0, end: Some(180) };
    assert!((t.lr_annealed(150, Some(extended)) - 0.1).abs() < 1e-12);
    // Without a plan the decay takes 20,000 steps; a decay given in the config wins.
    assert!((t.lr_annealed(10_010, None) - 0.55).abs() < 1e-9);
    let fixed = TrainConfig { decay: 100, ..t };
    assert!((fixed.lr_annealed(60, Some(held)) - 0.55).abs() < 1e-9);
}

#[test]
fn the_fast_forward_pass_equals_burns() {
    use meeple_nn::{NetConfig, Network};
    for (spec, input) in [
        ("resnet:blocks=2,channels=8", vec![3, 6, 7]),
        ("resnet:blocks=1,channels=4", vec![4, 5, 5]),
        ("mlp:layers=2,width=16", vec![10]),
        ("resmlp:blocks=2,width=16", vec![10]),
        ("resnet:blocks=1,channels=4,head=planes", vec![4, 5, 5]),
        ("resnet:blocks=2,channels=8,head=planes", vec![3, 6, 7]),
        ("resnet:blocks=1,channels=4,policy_filters=3,value_filters=2", vec![4, 5, 5]),
        ("resnet:blocks=1,channels=4,head=planes,value_filters=3", vec![4, 5, 5]),
        // Widths the in-place products take (a multiple of the vector unit's 8 or 16 lanes).
        ("resnet:blocks=2,channels=16", vec![3, 6, 7]),
        ("resnet:blocks=1,channels=48,head=planes", vec![4, 5, 5]),
        ("resnet:blocks=1,channels=32", vec![28, 1, 9]),
    ] {
        // 11 actions spread over 9 planes: more planes than the tower has channels.
        let cells = input.get(1).map_or(0, |r| r * input[2]);
        let index: Vec<u32> = (0..11).map(|a| (a * (9 * cells) / 11) as u32).collect();
        let planes = spec.contains("head=planes").then_some((9, &index[..]));
        let config = NetConfig::from_spec(spec, &input, 11, 2, planes).unwrap();
        let net = Network::new(config.clone(), 5, 2);
        let batch = 9;
        let obs: Vec<f32> = (0..batch * config.input_len()).map(|i| ((i * 7919) % 13) as f32 / 6.0 - 1.0).collect();
        let fast = net.evaluate(&obs, batch).unwrap();
        let slow = net.evaluate_reference(&obs, batch).unwrap();
        assert_eq!(fast.logits.len(), slow.logits.len());
        assert_eq!(fast.values.len(), slow.values.len());
        let worst = fast.logits.iter().chain(&fast.values).zip(slow.logits.iter().chain(&slow.values));
        let worst = worst.map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(worst < 1e-4, "{spec}: fast and burn differ by {worst}");
        assert_eq!(net.evaluate_serial(&obs, batch).unwrap(), fast, "{spec}: on one thread, the same outputs");
    }
}

#[test]
fn listed_logits_equal_the_full_evaluation_at_those_actions() {
    // 300 actions, each sample listing a few (as a search's legal moves), some none; heads that
    // compute rows (dense) and one that falls back to the full product (planes).
    for (spec, input) in [
        ("mlp:layers=2,width=16", vec![10]),
        ("resmlp:blocks=1,width=24", vec![10]),
        ("mlp:layers=1,width=13,score=true", vec![7]),
        ("resnet:blocks=1,channels=4", vec![3, 6, 7]),
        ("resnet:blocks=1,channels=4,head=planes", vec![3, 6, 7]),
    ] {
        let actions = 300;
        let cells = input.get(1).map_or(0, |r| r * input[2]);
        let index: Vec<u32> = (0..actions).map(|a| (a * (9 * cells) / actions) as u32).collect();
        let planes = spec.contains("head=planes").then_some((9, &index[..]));
        let config = NetConfig::from_spec(spec, &input, actions, 3, planes).unwrap();
        let net = Network::new(config.clone(), 9, 2);
        let batch = 11;
        let obs: Vec<f32> = (0..batch * config.input_len()).map(|i| ((i * 7919) % 13) as f32 / 6.0 - 1.0).collect();
        let full = net.evaluate(&obs, batch).unwrap();
        let (mut listed, mut starts) = (Vec::new(), vec![0]);
        for b in 0..batch {
            // Sample 4 lists nothing; the others 1 to 10 ids spread over the range, out of order.
            let n = if b == 4 { 0 } else { 1 + (b * 7) % 10 };
            listed.extend((0..n).map(|j| ((b * 131 + j * 37 + (j * j * 11)) % actions) as u32).rev());
            starts.push(listed.len());
        }
        for serial in [false, true] {
            let got = net.evaluate_listed(&obs, batch, &listed, &starts, serial).unwrap();
            assert_eq!(got.values, full.values, "{spec}: the same values");
            assert_eq!(got.logits.len(), listed.len(), "{spec}: a logit per listed action");
            for b in 0..batch {
                let (ids, got) = (&listed[starts[b]..starts[b + 1]], &got.logits[starts[b]..starts[b + 1]]);
                for (&a, &g) in ids.iter().zip(got) {
                    let want = full.logits[b * actions + a as usize];
                    let diff = (g - want).abs();
                    assert!(diff <= 1e-5 * (1.0 + want.abs()), "{spec}: sample {b}'s action {a}: {g} vs {want}");
                }
            }
        }
        // Every id listed: the full product, picked out, the same figures.
        let all: Vec<u32> = (0..batch).flat_map(|_| 0..actions as u32).collect();
        let every: Vec<usize> = (0..=batch).map(|b| b * actions).collect();
        let got = net.evaluate_listed(&obs, batch, &all, &every, false).unwrap();
        assert_eq!(got.logits, full.logits, "{spec}: every action listed");
        // Bad lists are refused with the reason, not read past their ends.
        let refuse = |listed: &[u32], starts: &[usize], want: &str| {
            let e = net.evaluate_listed(&obs, batch, listed, starts, false).unwrap_err().to_string();
            assert!(e.contains(want), "{spec}: {e}");
        };
        refuse(&listed, &starts[..batch], "offsets");
        let mut falling = starts.clone();
        falling[3] = falling[2] + 100;
        refuse(&listed, &falling, "rising");
        refuse(
            &[actions as u32],
            &[0, 1].into_iter().chain(std::iter::repeat_n(1, batch - 1)).collect::<Vec<_>>(),
            "action 300",
        );
    }
}

#[test]
fn a_wide_network_evaluates_from_several_threads_at_once() {
    // Wide products go parallel inside a chunk; a pool thread waiting in one may start another
    // chunk on the same thread. Several callers at once, each with its own two-thread pool.
    let config = NetConfig::from_spec("resnet:blocks=2,channels=128", &[3, 6, 7], 7, 2, None).unwrap();
    let net = Network::new(config.clone(), 3, 2);
    let batch = 32;
    let obs = observations(&config, batch);
    let expected = net.evaluate_serial(&obs, batch).unwrap();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..3)
            .map(|_| {
                scope.spawn(|| {
                    for _ in 0..3 {
                        assert_eq!(net.evaluate(&obs, batch).unwrap(), expected, "the same outputs on every thread");
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("no thread panics");
        }
    });
}

#[test]
fn the_optimiser_state_resumes_exactly_and_a_bad_one_is_refused() {
    let config = tower();
    let batch = target_batch(&config, 8);
    let train = TrainConfig { warmup: 2, decay: 50, ..TrainConfig::default() };
    let d = dir("adamw");
    let path = d.join("last.safetensors");
    // Six steps in one go against three, a save, a resume and three more.
    let mut whole = Trainer::new(config.clone(), train.clone(), 4, 1);
    let mut first = Trainer::new(config.clone(), train.clone(), 4, 1);
    for _ in 0..3 {
        whole.train_step(&batch).unwrap();
        first.train_step(&batch).unwrap();
    }
    first.save_resumable(&path, sidecar(&config)).unwrap();
    let resumed = Trainer::resume(&path, "test", train.clone(), 1).unwrap();
    assert!(resumed.restored, "the moments were beside the weights");
    let mut resumed = resumed.trainer;
    for _ in 0..3 {
        assert_eq!(whole.train_step(&batch).unwrap(), resumed.train_step(&batch).unwrap());
    }
    let obs = observations(&config, 4);
    assert_eq!(whole.network(1).evaluate(&obs, 4).unwrap(), resumed.network(1).evaluate(&obs, 4).unwrap());
    // A state that is not one, or from another step than the weights, is refused by name.
    let state = meeple_nn::optimizer_path(&path);
    let good = std::fs::read(&state).unwrap();
    std::fs::write(&state, b"not an optimiser state at all").unwrap();
    let err = Trainer::resume(&path, "test", train.clone(), 1).err().unwrap().to_string();
    assert!(err.contains("not a meeple optimiser state") && err.contains("fresh moments"), "{err}");
    first.train_step(&batch).unwrap();
    first.save(&path, sidecar(&config)).unwrap();
    std::fs::write(&state, good).unwrap();
    let err = Trainer::resume(&path, "test", train.clone(), 1).err().unwrap().to_string();
    assert!(err.contains("from step 3, beside weights from step 4"), "{err}");
    // Without one (an older checkpoint) the moments start again, and the caller is told.
    std::fs::remove_file(&state).unwrap();
    assert!(!Trainer::resume(&path, "test", train, 1).unwrap().restored);
}

/// A caller's loss through `train_step_with` moves the weights exactly as the built-in step
/// does on the same loss: here the policy cross-entropy and the value's squared error written
/// out by hand, on a tower and on an MLP.
#[test]
fn a_callers_loss_trains_as_the_built_in_one() {
    for config in [tower(), NetConfig::from_spec("mlp:layers=2,width=16", &[3, 4, 5], 5, 2, None).unwrap()] {
        let batch = target_batch(&config, 6);
        let train = TrainConfig { warmup: 1, ..TrainConfig::default() };
        let mut built_in = Trainer::new(config.clone(), train.clone(), 5, 1);
        let mut by_hand = Trainer::new(config.clone(), train, 5, 1);
        let (a, s, b) = (config.actions, config.seats, batch.size);
        for _ in 0..3 {
            built_in.train_step(&batch).unwrap();
            by_hand
                .train_step_with(&batch.obs, b, |logits, values, dl, dv| {
                    let weighted: f32 = batch.policy_weight.iter().sum::<f32>().max(1.0);
                    for i in 0..b {
                        let z = &logits[i * a..(i + 1) * a];
                        let legal = &batch.legal[i * a..(i + 1) * a];
                        let max = (0..a).filter(|&j| legal[j] > 0.0).map(|j| z[j]).fold(f32::NEG_INFINITY, f32::max);
                        let total: f32 = (0..a).filter(|&j| legal[j] > 0.0).map(|j| (z[j] - max).exp()).sum();
                        let t = &batch.policy[i * a..(i + 1) * a];
                        let tsum: f32 = (0..a).filter(|&j| legal[j] > 0.0).map(|j| t[j]).sum();
                        for j in (0..a).filter(|&j| legal[j] > 0.0) {
                            let p = (z[j] - max).exp() / total;
                            dl[i * a + j] = batch.policy_weight[i] / weighted * (p * tsum - t[j]);
                        }
                    }
                    for k in 0..b * s {
                        dv[k] = 2.0 * (values[k] - batch.value[k]) / b as f32;
                    }
                })
                .unwrap();
        }
        let worst =
            built_in.parameters().iter().zip(by_hand.parameters()).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
        assert!(worst < 1e-5, "{config:?}: weights apart by {worst}");
        assert_ne!(Trainer::new(config.clone(), TrainConfig::default(), 5, 1).parameters(), by_hand.parameters());
        // A target network built from a copy of the weights answers as the trainer's own.
        let copy = by_hand.parameters().to_vec();
        let a_net = by_hand.network(1).evaluate(&batch.obs, b).unwrap();
        let b_net = by_hand.network_with(&copy, 1).unwrap().evaluate(&batch.obs, b).unwrap();
        assert_eq!(a_net, b_net);
        assert!(by_hand.network_with(&copy[1..], 1).is_err());
    }
}

/// A warm start takes another run's weights (whatever game its sidecar names) at step 0 with
/// fresh optimiser moments; the network it gives answers as the checkpoint does.
#[test]
fn a_warm_start_takes_the_weights_and_starts_at_step_zero() {
    let d = dir("warm");
    let config = NetConfig::from_spec("resmlp:blocks=1,width=16", &[12], 5, 3, None).unwrap();
    let mut trained = Trainer::new(config.clone(), TrainConfig::default(), 3, 1);
    trained.train_step(&target_batch(&config, 8)).unwrap();
    let path = d.join("from.safetensors");
    trained.save_resumable(&path, Sidecar { game: "another:variant=1".into(), ..sidecar(&config) }).unwrap();
    let (warm, side) = Trainer::warm_start(&path, TrainConfig::default(), 1).unwrap();
    assert_eq!((warm.step(), side.game.as_str()), (0, "another:variant=1"));
    assert_eq!(warm.parameters(), trained.parameters());
    let obs = observations(&config, 4);
    assert_eq!(warm.network(1).evaluate(&obs, 4).unwrap(), trained.network(1).evaluate(&obs, 4).unwrap());
    assert!(Trainer::warm_start(&d.join("missing.safetensors"), TrainConfig::default(), 1).is_err());
    let _ = std::fs::remove_dir_all(&d);
}

/// A network for a narrower variant starts a wider one: with the new inputs weighted zero it
/// values every observation as before, whatever the new inputs hold, and the old actions' logits
/// are unchanged (the new ones zero); a tower or a smaller observation is refused.
#[test]
fn a_widened_warm_start_values_positions_as_the_narrow_network() {
    let d = dir("widen");
    let config = NetConfig::from_spec("resmlp:blocks=1,width=16", &[12], 5, 3, None).unwrap();
    let mut trained = Trainer::new(config.clone(), TrainConfig::default(), 3, 1);
    trained.train_step(&target_batch(&config, 8)).unwrap();
    let path = d.join("narrow.safetensors");
    trained.save_resumable(&path, sidecar(&config)).unwrap();
    let (wide, _) = Trainer::warm_start_widened(&path, &[15], 7, TrainConfig::default(), 1).unwrap();
    assert_eq!((wide.config().input.clone(), wide.config().actions, wide.step()), (vec![15], 7, 0));
    let narrow_obs = observations(&config, 4);
    let mut wide_obs = Vec::new();
    for (i, row) in narrow_obs.chunks(12).enumerate() {
        wide_obs.extend_from_slice(row);
        wide_obs.extend([0.9, 0.1 * i as f32, 1.0]);
    }
    let before = trained.network(1).evaluate(&narrow_obs, 4).unwrap();
    let after = wide.network(1).evaluate(&wide_obs, 4).unwrap();
    for (a, b) in before.values.iter().zip(&after.values) {
        assert!((a - b).abs() < 1e-5, "values {:?} became {:?}", before.values, after.values);
    }
    for (k, row) in after.logits.chunks(7).enumerate() {
        for (a, b) in before.logits[k * 5..k * 5 + 5].iter().zip(&row[..5]) {
            assert!((a - b).abs() < 1e-5);
        }
        assert!(row[5..].iter().all(|&l| l == 0.0), "{row:?}");
    }
    assert!(Trainer::warm_start_widened(&path, &[10], 7, TrainConfig::default(), 1).is_err());
    let tower_path = d.join("tower.safetensors");
    Trainer::new(tower(), TrainConfig::default(), 1, 1).save_resumable(&tower_path, sidecar(&tower())).unwrap();
    let e = Trainer::warm_start_widened(&tower_path, &[1000], 9, TrainConfig::default(), 1).err().unwrap().to_string();
    assert!(e.contains("dense"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

/// The gradient at the observations an encoder learns from equals finite differences of the
/// same loss through the network before the step (dense trunks; a tower says it has none).
#[test]
fn the_input_gradient_matches_finite_differences() {
    for spec in ["mlp:layers=2,width=16", "resmlp:blocks=1,width=16"] {
        let config = NetConfig::from_spec(spec, &[6], 4, 2, None).unwrap();
        let mut t = Trainer::new(config.clone(), TrainConfig::default(), 7, 1);
        let before = t.network(1);
        let (b, n) = (3, 6);
        let obs = observations(&config, b);
        // The loss: sum of logits times c plus values times d.
        let c: Vec<f32> = (0..b * 4).map(|i| (i as f32 * 0.37).sin()).collect();
        let d: Vec<f32> = (0..b * 2).map(|i| (i as f32 * 0.91).cos()).collect();
        let loss = |o: &[f32]| {
            let out = before.evaluate(o, b).unwrap();
            let l: f64 = out.logits.iter().zip(&c).map(|(x, y)| (x * y) as f64).sum();
            l + out.values.iter().zip(&d).map(|(x, y)| (x * y) as f64).sum::<f64>()
        };
        let mut dobs = Vec::new();
        t.train_step_with_input_grad(
            &obs,
            b,
            |_, _, dl, dv| {
                dl.copy_from_slice(&c);
                dv.copy_from_slice(&d);
            },
            &mut dobs,
        )
        .unwrap();
        assert_eq!(dobs.len(), b * n);
        let mut worst = 0.0f64;
        for k in 0..b * n {
            let (mut up, mut down) = (obs.clone(), obs.clone());
            up[k] += 1e-2;
            down[k] -= 1e-2;
            let numeric = (loss(&up) - loss(&down)) / 2e-2;
            worst = worst.max((numeric - dobs[k] as f64).abs() / (1.0 + numeric.abs()));
        }
        assert!(worst < 2e-2, "{spec}: {worst}");
    }
    let mut t = Trainer::new(tower(), TrainConfig::default(), 7, 1);
    let obs = observations(&tower(), 1);
    assert!(t.train_step_with_input_grad(&obs, 1, |_, _, _, _| {}, &mut Vec::new()).is_err());
}
