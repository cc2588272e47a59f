use super::*;
use burn::module::{Module, ModuleVisitor};
use burn::tensor::activation::log_softmax;

/// Every float tensor's values (or gradients), in module order; running statistics are
/// visited too, and have no gradient.
struct Collect<'a> {
    grads: Option<&'a burn::tensor::Gradients>,
    out: Vec<Option<Vec<f32>>>,
}

impl ModuleVisitor for Collect<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let t = match self.grads {
            Some(g) => param.val().grad(g),
            None => Some(param.val()),
        };
        self.out.push(t.map(values));
    }
}

fn collect(model: &PolicyValueNet, grads: Option<&burn::tensor::Gradients>) -> Vec<Option<Vec<f32>>> {
    let mut c = Collect { grads, out: Vec::new() };
    model.visit(&mut c);
    c.out
}

/// A batch with varied targets: some illegal actions, policy weights 0 and 1, values off
/// 0 and 1.
fn batch(config: &NetConfig, n: usize) -> Batch {
    let a = config.actions;
    let mut b = Batch { size: n, ..Batch::default() };
    b.obs = (0..n * config.input_len()).map(|i| ((i * 7919 + 13) % 17) as f32 / 17.0).collect();
    for s in 0..n {
        let legal: Vec<f32> = (0..a).map(|i| if (i + s) % 3 == 0 && i != s % a { 0.0 } else { 1.0 }).collect();
        let total: f32 = (0..a).filter(|&i| legal[i] > 0.0).map(|i| (i % 4 + 1) as f32).sum();
        b.policy.extend((0..a).map(|i| if legal[i] > 0.0 { (i % 4 + 1) as f32 / total } else { 0.0 }));
        b.legal.extend(legal);
        b.policy_weight.push(if s % 4 == 3 { 0.0 } else { 1.0 });
        b.value.extend((0..config.seats).map(|k| ((s + k) % 5) as f32 / 4.0));
        let cells = config.ownership_cells();
        b.ownership.extend((0..cells).map(|c| ((c * 5 + s) % 3) as f32 - 1.0));
        if cells > 0 {
            b.ownership_weight.push(if s % 3 == 1 { 0.0 } else { 1.0 });
        }
        if config.score {
            b.score.push(((s * 3) % 7) as f32 / 3.0 - 1.0);
            b.score_weight.push(if s % 4 == 2 { 0.0 } else { 1.0 });
        }
    }
    b
}

/// burn's autodiff on the same loss: the reference the hand-written gradients must equal.
fn burn_reference(
    model: &PolicyValueNet,
    config: &NetConfig,
    batch: &Batch,
    (vw, ow, sw): (f64, f64, f64),
    huber: Option<f32>,
) -> ([f64; 4], Vec<Option<Vec<f32>>>) {
    let device = Device::flex().autodiff();
    let (b, n, a, s) = (batch.size, config.input_len(), config.actions, config.seats);
    let t = |d: &[f32], shape: [usize; 2]| Tensor::<2>::from_data(TensorData::new(d.to_vec(), shape), &device);
    let out = model.forward_all(t(&batch.obs, [b, n]), config);
    let (logits, values, owned) = (out.logits, out.values, out.ownership);
    let legal = t(&batch.legal, [b, a]);
    let logp = log_softmax(logits + (legal - 1.0) * 1e9, 1);
    let weight = t(&batch.policy_weight, [b, 1]);
    let weighted = weight.clone().sum().into_scalar::<f32>().max(1.0) as f64;
    let policy = (t(&batch.policy, [b, a]) * logp * weight).sum().neg() / weighted;
    let error = values - t(&batch.value, [b, s]);
    let value = match huber {
        None => error.powi_scalar(2).sum_dim(1).mean(),
        Some(delta) => {
            let size = error.abs();
            let inside = size.clone().clamp_max(delta);
            (inside.clone().powi_scalar(2) * 0.5 + (size - inside) * delta).sum_dim(1).mean()
        }
    };
    let mut loss = policy.clone() + value.clone() * vw;
    let mut ownership = 0.0;
    if let Some(o) = owned {
        let cells = config.ownership_cells();
        let w = t(&batch.ownership_weight, [b, 1]);
        let known = batch.ownership_weight.iter().sum::<f32>().max(1.0) as f64;
        let own = ((o - t(&batch.ownership, [b, cells])).powi_scalar(2) * w).sum() / (known * cells as f64);
        loss = loss + own.clone() * ow;
        ownership = own.into_scalar::<f32>() as f64;
    }
    let mut margin = 0.0;
    if let Some(m) = out.score {
        let w = t(&batch.score_weight, [b, 1]);
        let known = batch.score_weight.iter().sum::<f32>().max(1.0) as f64;
        let error = ((m - t(&batch.score, [b, 1])).powi_scalar(2) * w).sum() / known;
        loss = loss + error.clone() * sw;
        margin = error.into_scalar::<f32>() as f64;
    }
    let grads = loss.backward();
    let policy = policy.into_scalar::<f32>() as f64;
    ([policy, value.into_scalar::<f32>() as f64, ownership, margin], collect(model, Some(&grads)))
}

fn check(config: NetConfig) {
    check_at(config.clone(), false, None);
    check_at(config, true, None);
}

/// At initialisation every BatchNorm has scale 1, shift 0, mean 0 and variance 1, where a
/// missing scale or shift term costs nothing; `moved` checks at weights moved away from
/// there (every parameter and running statistic shifted by seeded noise).
fn check_at(config: NetConfig, moved: bool, huber: Option<f32>) {
    let device = Device::flex().autodiff();
    let mut model = crate::initialise(&config, &device, 11);
    if moved {
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut noise = move || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        let mut m = Model::from_burn(&model, &config);
        m.theta.iter_mut().for_each(|t| *t += 0.6 * noise());
        for r in m.running.iter_mut() {
            // Means (0) move up to 0.3; variances (1) to 0.5-1.8: both stay positive.
            *r = *r * (1.0 + noise()) + 0.6 * noise().abs();
        }
        model = m.to_burn(&device);
    }
    let data = batch(&config, 6);
    let mut mine = Model::from_burn(&model, &config);
    let mut work = Work::default();
    let losses = mine.gradients(&data, Weights { value: 0.7, ownership: 1.3, score: 0.9, huber }, &mut work);
    let ([policy, value, ownership, margin], reference) =
        burn_reference(&model, &config, &data, (0.7, 1.3, 0.9), huber);
    assert!((losses.policy - policy).abs() < 1e-4 * policy.abs().max(1.0), "{} {policy}", losses.policy);
    assert!((losses.value - value).abs() < 1e-5, "{} {value}", losses.value);
    assert!((losses.ownership - ownership).abs() < 1e-5, "{} {ownership}", losses.ownership);
    assert_eq!(ownership > 0.0, config.ownership, "{}", config.spec());
    assert!((losses.score - margin).abs() < 1e-5, "{} {margin}", losses.score);
    assert_eq!(margin > 0.0, config.score, "{}", config.spec());
    // My gradient in burn's layout: the flat vector as weights, read back in module order.
    let mut as_model = Model::from_burn(&model, &config);
    as_model.theta.clone_from(&work.grad);
    let got = collect(&as_model.to_burn(&Device::flex()), None);
    assert_eq!(got.len(), reference.len(), "{}", config.spec());
    assert_eq!(reference.iter().flatten().count(), mine.tensors.len(), "{}", config.spec());
    let scale = reference.iter().flatten().flatten().fold(0.0f32, |m, v| m.max(v.abs()));
    for (i, (g, r)) in got.iter().zip(&reference).enumerate() {
        // Running statistics: no gradient.
        let (Some(g), Some(r)) = (g, r) else { continue };
        assert_eq!(g.len(), r.len(), "tensor {i}");
        for (x, y) in g.iter().zip(r) {
            assert!(
                (x - y).abs() <= 2e-4 * scale + 1e-3 * y.abs(),
                "{}: tensor {i}: {x} against burn's {y}",
                config.spec()
            );
        }
    }
    // BatchNorm's running statistics moved as burn's did in its training forward pass.
    let burn_after = Model::from_burn(&model, &config);
    for (x, y) in mine.running.iter().zip(&burn_after.running) {
        assert!((x - y).abs() < 1e-5, "running statistics {x} {y}");
    }
    // The round trip through burn keeps every value.
    let back = Model::from_burn(&mine.to_burn(&Device::flex()), &config);
    assert_eq!((back.theta, back.running), (mine.theta.clone(), mine.running.clone()));
}

/// Clipping by each tensor's norm leaves a small tensor's gradient alone beside a large
/// one; by the global norm both shrink by one factor (hand-checked: norms 5 and 1, global
/// sqrt(26), clipped to 1).
#[test]
fn gradients_clip_per_tensor_or_by_one_global_norm() {
    let tensors = [2, 1];
    let clipped = |global: bool| {
        let (mut theta, mut grad) = (vec![0.0f32; 3], vec![3.0f32, 4.0, 1.0]);
        AdamW::new(3).step(&mut theta, &mut grad, &tensors, 0.0, 0.0, (1.0, global));
        grad
    };
    let each = clipped(false);
    assert!((each[0] - 0.6).abs() < 1e-6 && (each[1] - 0.8).abs() < 1e-6 && (each[2] - 1.0).abs() < 1e-6, "{each:?}");
    let all = clipped(true);
    let k = 1.0 / 26f32.sqrt();
    for (g, want) in all.iter().zip([3.0 * k, 4.0 * k, k]) {
        assert!((g - want).abs() < 1e-6, "{all:?}");
    }
}

#[test]
fn chunk_moments_combine_to_the_batch_mean_and_variance() {
    // Values far from zero with a small spread, cut into uneven chunks: sums of squares
    // taken from zero would lose the spread in f32; the shifted sums and the pairwise
    // combination must not.
    let n = 3;
    let mut state: u64 = 7;
    let mut next = move || {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let rows = 1000;
    let z: Vec<f32> = (0..rows * n).map(|i| [1000.0, -50.0, 0.0][i % n] + [0.01, 1.0, 3.0][i % n] * next()).collect();
    let parts: Vec<Moments> = [0, 130, 131, 700, rows].windows(2).map(|w| moments(&z[w[0] * n..w[1] * n], n)).collect();
    let (mean, var) = combined(&parts, n);
    for c in 0..n {
        let column: Vec<f64> = z.iter().skip(c).step_by(n).map(|&v| v as f64).collect();
        let m = column.iter().sum::<f64>() / rows as f64;
        let v = column.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / rows as f64;
        assert!((mean[c] - m).abs() <= 1e-6 * m.abs().max(1.0), "column {c}: mean {} against {m}", mean[c]);
        assert!((var[c] - v).abs() <= 1e-4 * v, "column {c}: variance {} against {v}", var[c]);
    }
}

#[test]
fn gradients_equal_burns_autodiff() {
    check(NetConfig::from_spec("resnet:blocks=2,channels=8", &[3, 4, 5], 7, 2, None).unwrap());
    // Boards one cell high and one wide: every patch row runs past an edge.
    check(NetConfig::from_spec("resnet:blocks=1,channels=5", &[2, 1, 7], 7, 2, None).unwrap());
    check(NetConfig::from_spec("resnet:blocks=1,channels=5", &[2, 6, 1], 6, 2, None).unwrap());
    check(
        NetConfig::from_spec(
            "resnet:blocks=1,channels=6,head=planes",
            &[2, 3, 4],
            5,
            3,
            Some((2, &[0, 5, 13, 20, 23])),
        )
        .unwrap(),
    );
    // Widths the bordered, implicit products take (`conv::fits`: a multiple of the vector
    // unit's 8 or 16 lanes; 48 on AVX-512 also an odd count of vectors), on a board, a row
    // and a column; the narrower towers above take the patch matrices.
    for channels in [16, 48] {
        for shape in [[3, 4, 5], [2, 1, 7], [2, 6, 1]] {
            let spec = format!("resnet:blocks=1,channels={channels}");
            let config = NetConfig::from_spec(&spec, &shape, 7, 2, None).unwrap();
            if channels == 16 || shape[1] > 1 {
                check(config);
            }
        }
    }
    check(NetConfig::from_spec("mlp:layers=3,width=16", &[10], 6, 2, None).unwrap());
    check(NetConfig::from_spec("resmlp:blocks=2,width=12", &[10], 6, 3, None).unwrap());
    // The Catan self-play study's value loss: Huber, with a threshold some errors pass.
    check_at(NetConfig::from_spec("resmlp:blocks=1,width=8", &[10], 4, 3, None).unwrap(), true, Some(0.2));
    check(NetConfig::from_spec("resnet:blocks=2,channels=8,ownership=true", &[3, 4, 5], 7, 2, None).unwrap());
    // The score margin beside the value, on a tower with ownership and on a dense trunk.
    check(
        NetConfig::from_spec("resnet:blocks=1,channels=6,ownership=true,score=true", &[3, 4, 5], 7, 2, None).unwrap(),
    );
    check(NetConfig::from_spec("resmlp:blocks=1,width=12,score=true", &[10], 6, 3, None).unwrap());
    check(
        NetConfig::from_spec("resnet:blocks=1,channels=8,policy_filters=3,value_filters=4", &[3, 4, 5], 7, 2, None)
            .unwrap(),
    );
    check(
        NetConfig::from_spec(
            "resnet:blocks=1,channels=6,head=planes,ownership=true",
            &[2, 3, 4],
            5,
            3,
            Some((2, &[0, 5, 13, 20, 23])),
        )
        .unwrap(),
    );
}
