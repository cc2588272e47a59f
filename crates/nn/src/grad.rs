//! Training without burn's autodiff: the network's forward pass in training mode (BatchNorm on
//! the batch's statistics) and its backward pass written out layer by layer, every parameter
//! in one flat vector, and AdamW over that vector.
//!
//! Why: burn-flex's convolution builds the patch matrix of one sample at a time and multiplies
//! it alone, forwards and backwards, so a batch of 256 small boards costs hundreds of thin
//! products and the autodiff graph's bookkeeping on top (about half the speed of this pass on
//! connect four's tower; docs/experiments/general.md, "Network speed", has the figures). Here every 3x3
//! convolution is a patch product per chunk of a few boards, and the chunks run side by side on
//! the thread pool: the layer's output (patches times kernel), the weight gradient (patches
//! transposed times the output gradient) and the input gradient (the output gradient's patches
//! times the kernel turned half a turn). Where the layer's width fits the vector unit the patch
//! matrix is never built: `crate::conv`'s kernels read its rows in place from a zero-bordered
//! copy of each chunk; otherwise the patches are built and multiplied by faer, in place on these
//! buffers (`crate::gemm`), as are the dense layers. Gradients equal burn's autodiff on the same
//! loss to float rounding (tested), and the weights move between the two by value.

use crate::conv;
use crate::gemm::{mat, mat_mut, mul};
use crate::net::{ConvBn, Head, NetConfig, PolicyValueNet, Trunk};
use crate::{Batch, Losses};
use burn::module::{Param, RunningState};
use burn::nn::conv::Conv2d;
use burn::nn::{BatchNorm, Linear};
use burn::tensor::{Device, Tensor, TensorData};
use faer::MatRef;
use rayon::prelude::*;

mod planes;
use planes::*;

mod transplant;
pub(crate) use transplant::*;

mod products;
pub(crate) use products::*;

mod adamw;
pub(crate) use adamw::*;

/// A caller's loss at the network's outputs: `(logits, values, dlogits, dvalues)`, writing the
/// loss's gradient at the outputs into the zeroed `dlogits` and `dvalues`.
pub(crate) type Objective<'a> = dyn FnMut(&[f32], &[f32], &mut [f32], &mut [f32]) + 'a;

pub(crate) fn values<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data().convert::<f32>().try_into_vec::<f32>().expect("f32 weights")
}

/// Where one parameter tensor lies in the flat vector.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Span {
    at: usize,
    len: usize,
}

impl Span {
    fn of(self, v: &[f32]) -> &[f32] {
        &v[self.at..self.at + self.len]
    }
    fn of_mut(self, v: &mut [f32]) -> &mut [f32] {
        &mut v[self.at..self.at + self.len]
    }
}

/// BatchNorm's trained scale and shift, and where its running statistics are kept.
#[derive(Clone, Copy, Debug)]
struct Norm {
    gamma: Span,
    beta: Span,
    /// Offset of the running mean in `running`; the running variance follows it.
    stats: usize,
    epsilon: f32,
    momentum: f32,
}

/// A k x k convolution with same padding (k odd), its weight laid out `[(dy, dx, in), out]`,
/// followed by BatchNorm or a bias (or neither).
#[derive(Clone, Debug)]
struct Conv {
    k: usize,
    cin: usize,
    cout: usize,
    w: Span,
    norm: Option<Norm>,
    bias: Option<Span>,
}

/// A dense layer, weight `[in, out]` as burn keeps it.
#[derive(Clone, Copy, Debug)]
struct Dense {
    inputs: usize,
    outputs: usize,
    w: Span,
    b: Span,
}

/// A layer's saved forward values.
#[derive(Default)]
struct Saved {
    /// The BatchNorm's normalised input `[rows, out]`, or the raw output where there is none.
    xhat: Vec<f32>,
    /// 1 / standard deviation per output channel (BatchNorm only).
    inv: Vec<f32>,
    /// The output after its activation (and the skip, in a block's second convolution).
    out: Vec<f32>,
}

/// The network as flat vectors, with the forward and backward passes of a training step.
pub(crate) struct Model {
    config: NetConfig,
    /// Every trainable value.
    pub(crate) theta: Vec<f32>,
    /// BatchNorm running means and variances (not trained; updated by each forward pass).
    running: Vec<f32>,
    /// Each parameter tensor, in burn's module order (gradient clipping is per tensor, as
    /// burn's optimiser does it).
    tensors: Vec<Span>,
    stem: Option<Conv>,
    blocks: Vec<[Conv; 2]>,
    mlp: Vec<Dense>,
    policy_conv: Option<Conv>,
    value_conv: Option<Conv>,
    policy_fc: Option<Dense>,
    policy_planes: Option<Conv>,
    value_fc: Dense,
    value_out: Dense,
    ownership: Option<Conv>,
    score: Option<Dense>,
}

pub(crate) fn tensor1(v: &[f32], device: &Device) -> Tensor<1> {
    Tensor::from_data(TensorData::new(v.to_vec(), [v.len()]), device)
}

impl Model {
    /// The flat copy of a burn model.
    pub(crate) fn from_burn(model: &PolicyValueNet, config: &NetConfig) -> Self {
        let mut r = Reader { theta: Vec::new(), running: Vec::new(), tensors: Vec::new() };
        // burn's module order: the fields as declared.
        let stem = model.stem.as_ref().map(|s| r.conv_bn(s));
        let blocks = model.blocks.iter().map(|b| [r.conv_bn(&b.first), r.conv_bn(&b.second)]).collect();
        let mlp = model.mlp.iter().map(|l| r.dense(l)).collect();
        let policy_conv = model.policy_conv.as_ref().map(|c| r.conv_bn(c));
        let value_conv = model.value_conv.as_ref().map(|c| r.conv_bn(c));
        let policy_fc = model.policy_fc.as_ref().map(|l| r.dense(l));
        let policy_planes = model.policy_planes.as_ref().map(|c| r.conv(c, None));
        let value_fc = r.dense(&model.value_fc);
        let value_out = r.dense(&model.value_out);
        let ownership = model.ownership.as_ref().map(|c| r.conv(c, None));
        let score = model.score.as_ref().map(|l| r.dense(l));
        Model {
            config: config.clone(),
            theta: r.theta,
            running: r.running,
            tensors: r.tensors,
            stem,
            blocks,
            mlp,
            policy_conv,
            value_conv,
            policy_fc,
            policy_planes,
            value_fc,
            value_out,
            ownership,
            score,
        }
    }

    /// The weights as a burn model on `device`.
    pub(crate) fn to_burn(&self, device: &Device) -> PolicyValueNet {
        self.to_burn_with(&self.theta, device)
    }

    /// The model with `theta` (laid out like its own) in place of its weights, as a burn model.
    pub(crate) fn to_burn_with(&self, theta: &[f32], device: &Device) -> PolicyValueNet {
        let mut model = self.config.build(device);
        let conv = |c: &Conv, into: &mut Conv2d| {
            let (k, cin, cout) = (c.k, c.cin, c.cout);
            let w = c.w.of(theta);
            let mut burn = vec![0.0; w.len()];
            for o in 0..cout {
                for i in 0..cin {
                    for y in 0..k {
                        for x in 0..k {
                            burn[((o * cin + i) * k + y) * k + x] = w[((y * k + x) * cin + i) * cout + o];
                        }
                    }
                }
            }
            into.weight = Param::from_tensor(Tensor::from_data(TensorData::new(burn, [cout, cin, k, k]), device));
            if let (Some(b), Some(into)) = (c.bias, into.bias.as_mut()) {
                *into = Param::from_tensor(tensor1(b.of(theta), device));
            }
        };
        let norm = |n: &Norm, cout: usize, into: &mut BatchNorm| {
            into.gamma = Param::from_tensor(tensor1(n.gamma.of(theta), device));
            into.beta = Param::from_tensor(tensor1(n.beta.of(theta), device));
            into.running_mean = RunningState::new(tensor1(&self.running[n.stats..n.stats + cout], device));
            into.running_var = RunningState::new(tensor1(&self.running[n.stats + cout..n.stats + 2 * cout], device));
        };
        let conv_bn = |c: &Conv, into: &mut ConvBn| {
            conv(c, &mut into.conv);
            norm(c.norm.as_ref().expect("a norm"), c.cout, &mut into.norm);
        };
        let dense = |d: &Dense, into: &mut Linear| {
            into.weight = Param::from_tensor(Tensor::from_data(
                TensorData::new(d.w.of(theta).to_vec(), [d.inputs, d.outputs]),
                device,
            ));
            into.bias = Some(Param::from_tensor(tensor1(d.b.of(theta), device)));
        };
        if let (Some(c), Some(into)) = (&self.stem, model.stem.as_mut()) {
            conv_bn(c, into);
        }
        for (pair, into) in self.blocks.iter().zip(model.blocks.iter_mut()) {
            conv_bn(&pair[0], &mut into.first);
            conv_bn(&pair[1], &mut into.second);
        }
        for (d, into) in self.mlp.iter().zip(model.mlp.iter_mut()) {
            dense(d, into);
        }
        if let (Some(c), Some(into)) = (&self.policy_conv, model.policy_conv.as_mut()) {
            conv_bn(c, into);
        }
        if let (Some(c), Some(into)) = (&self.value_conv, model.value_conv.as_mut()) {
            conv_bn(c, into);
        }
        if let (Some(d), Some(into)) = (&self.policy_fc, model.policy_fc.as_mut()) {
            dense(d, into);
        }
        if let (Some(c), Some(into)) = (&self.policy_planes, model.policy_planes.as_mut()) {
            conv(c, into);
        }
        dense(&self.value_fc, &mut model.value_fc);
        dense(&self.value_out, &mut model.value_out);
        if let (Some(c), Some(into)) = (&self.ownership, model.ownership.as_mut()) {
            conv(c, into);
        }
        if let (Some(d), Some(into)) = (&self.score, model.score.as_mut()) {
            dense(d, into);
        }
        model
    }

    /// Each parameter tensor's place in the flat vector, in burn's module order.
    pub(crate) fn tensor_lengths(&self) -> Vec<usize> {
        self.tensors.iter().map(|s| s.len).collect()
    }
}

/// A convolution's output row: the skip added, then the ReLU, where given.
fn finish_row(row: &mut [f32], skip: Option<&[f32]>, relu: bool) {
    if let Some(skip) = skip {
        for (o, s) in row.iter_mut().zip(skip) {
            *o += s;
        }
    }
    if relu {
        for o in row.iter_mut() {
            *o = o.max(0.0);
        }
    }
}

/// `v` as `n` zeros (for sums).
fn sized(v: &mut Vec<f32>, n: usize) -> &mut [f32] {
    v.clear();
    v.resize(n, 0.0);
    &mut v[..]
}

/// `v` at length `n` with whatever it held (for outputs written whole).
fn resized(v: &mut Vec<f32>, n: usize) -> &mut [f32] {
    v.resize(n, 0.0);
    &mut v[..n]
}

/// Scratch buffers kept from step to step.
#[derive(Default)]
pub(crate) struct Work {
    saved: Vec<Saved>,
    input: Vec<f32>,
    grad_a: Vec<f32>,
    grad_b: Vec<f32>,
    grad_c: Vec<f32>,
    policy_in: Vec<f32>,
    hidden: Vec<f32>,
    logits: Vec<f32>,
    values: Vec<f32>,
    dlogits: Vec<f32>,
    dvalues: Vec<f32>,
    /// The ownership head's outputs (tanh) and the gradient before its tanh.
    owned: Vec<f32>,
    downed: Vec<f32>,
    /// The score-margin head's outputs (tanh) and the gradient before its tanh.
    scored: Vec<f32>,
    dscored: Vec<f32>,
    /// The gradient, laid out like `theta`.
    pub(crate) grad: Vec<f32>,
    /// Whether the backward pass also gives the gradient at the input (a dense trunk's), into
    /// `dinput`: an encoder in front of the network learns from it.
    pub(crate) want_input: bool,
    pub(crate) dinput: Vec<f32>,
}

/// How much the value and ownership losses count beside the policy's.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Weights {
    pub(crate) value: f32,
    pub(crate) ownership: f32,
    pub(crate) score: f32,
    /// The value loss: Huber with this threshold where given (quadratic within it, linear
    /// beyond), the squared error otherwise.
    pub(crate) huber: Option<f32>,
}

/// The loss terms and the gradients at the network's outputs (`cells`: the ownership head's,
/// 0 without one; `score`: whether there is a score-margin head).
fn loss_gradients(
    batch: &Batch,
    (actions, seats, cells, score): (usize, usize, usize, bool),
    weights: Weights,
    w: &mut Work,
) -> Losses {
    let value_weight = weights.value;
    let b = batch.size;
    let weighted = batch.policy_weight.iter().sum::<f32>().max(1.0);
    let dl = sized(&mut w.dlogits, b * actions);
    let (mut policy, mut entropy) = (0.0f64, 0.0f64);
    for i in 0..b {
        let z = &w.logits[i * actions..(i + 1) * actions];
        let legal = &batch.legal[i * actions..(i + 1) * actions];
        let t = &batch.policy[i * actions..(i + 1) * actions];
        let d = &mut dl[i * actions..(i + 1) * actions];
        // The softmax over the legal actions: illegal ones get no probability. Each legal
        // action's exponential is taken once and kept in `d` until its gradient replaces it
        // (two per action were a twentieth of a Cathedral step with 2,765 actions).
        let max = z.iter().zip(legal).filter(|(_, l)| **l > 0.0).map(|(z, _)| *z).fold(f32::NEG_INFINITY, f32::max);
        if max == f32::NEG_INFINITY {
            continue;
        }
        let mut total = 0.0f32;
        for ((d, z), l) in d.iter_mut().zip(z).zip(legal) {
            *d = if *l > 0.0 { (z - max).exp() } else { 0.0 };
            total += *d;
        }
        let (log_total, inv_total) = (total.ln(), 1.0 / total);
        let weight = batch.policy_weight[i];
        let target_sum: f32 = t.iter().zip(legal).filter(|(_, l)| **l > 0.0).map(|(t, _)| t).sum();
        let scale = weight / weighted;
        let (mut row_policy, mut row_entropy) = (0.0f32, 0.0f32);
        for (((d, z), t), l) in d.iter_mut().zip(z).zip(t).zip(legal) {
            if *l <= 0.0 {
                continue;
            }
            let logp = z - max - log_total;
            let p = *d * inv_total;
            row_policy += t * logp;
            row_entropy += p * logp;
            *d = scale * (p * target_sum - t);
        }
        policy -= (weight * row_policy) as f64;
        entropy -= row_entropy as f64;
    }
    let dv = sized(&mut w.dvalues, b * seats);
    let mut value = 0.0f64;
    for ((d, v), t) in dv.iter_mut().zip(&w.values).zip(&batch.value) {
        let e = v - t;
        let de = match weights.huber {
            None => {
                value += (e * e) as f64;
                2.0 * e
            }
            Some(delta) if e.abs() <= delta => {
                value += (0.5 * e * e) as f64;
                e
            }
            Some(delta) => {
                value += (delta * (e.abs() - 0.5 * delta)) as f64;
                delta * e.signum()
            }
        };
        // Through the sigmoid: dv/du = v (1 - v).
        *d = de / b as f32 * value_weight * v * (1.0 - v);
    }
    // Ownership: the mean squared error per cell over the positions whose target is known.
    let mut ownership = 0.0f64;
    if cells > 0 {
        let known = batch.ownership_weight.iter().sum::<f32>().max(1.0);
        let dz = sized(&mut w.downed, b * cells);
        for i in 0..b {
            let weight = batch.ownership_weight[i];
            let o = &w.owned[i * cells..(i + 1) * cells];
            let t = &batch.ownership[i * cells..(i + 1) * cells];
            for ((d, o), t) in dz[i * cells..(i + 1) * cells].iter_mut().zip(o).zip(t) {
                let e = o - t;
                ownership += (weight * e * e) as f64;
                // Through the tanh: do/dz = 1 - o^2.
                *d = 2.0 * e * weight / (known * cells as f32) * weights.ownership * (1.0 - o * o);
            }
        }
        ownership /= known as f64 * cells as f64;
    }
    // The score margin: the squared error over the positions whose target is known.
    let mut margin = 0.0f64;
    if score {
        let known = batch.score_weight.iter().sum::<f32>().max(1.0);
        let dz = sized(&mut w.dscored, b);
        for (((d, o), t), weight) in dz.iter_mut().zip(&w.scored).zip(&batch.score).zip(&batch.score_weight) {
            let e = o - t;
            margin += (weight * e * e) as f64;
            *d = 2.0 * e * weight / known * weights.score * (1.0 - o * o);
        }
        margin /= known as f64;
    }
    Losses {
        policy: policy / weighted as f64,
        value: value / b as f64,
        entropy: entropy / b as f64,
        lr: 0.0,
        ownership,
        score: margin,
    }
}

impl Model {
    fn weight(&self, span: Span, rows: usize, cols: usize) -> MatRef<'_, f32> {
        mat(span.of(&self.theta), rows, cols)
    }

    /// The kernel of the input gradient's convolution: `[(dy, dx, out), in]` from
    /// `[(dy, dx, in), out]`, turned half a turn.
    fn flipped(&self, conv: &Conv) -> Vec<f32> {
        let (k, cin, cout) = (conv.k, conv.cin, conv.cout);
        let w = conv.w.of(&self.theta);
        let mut f = vec![0.0; w.len()];
        for dy in 0..k {
            for dx in 0..k {
                let (fy, fx) = (k - 1 - dy, k - 1 - dx);
                for i in 0..cin {
                    for o in 0..cout {
                        f[((fy * k + fx) * cout + o) * cin + i] = w[((dy * k + dx) * cin + i) * cout + o];
                    }
                }
            }
        }
        f
    }

    /// A convolution with its BatchNorm (batch statistics, running statistics updated) or bias,
    /// then ReLU (with `skip` added first) where `relu`. Reads `input` `[m, cin]`, fills `saved`.
    #[allow(clippy::too_many_arguments)]
    fn conv_forward(
        &mut self,
        conv: &Conv,
        input: &[f32],
        board: Board,
        relu: bool,
        skip: Option<&[f32]>,
        saved: &mut Saved,
    ) {
        let (m, cout) = (board.m(), conv.cout);
        let w = (conv.w.of(&self.theta), cout);
        let z = resized(&mut saved.xhat, m * cout);
        let out = resized(&mut saved.out, m * cout);
        if let Some(n) = conv.norm {
            // The batch statistics from each chunk's moments, taken while the chunk is in cache
            // (two passes over the whole output, from memory, cost a tenth of a step).
            let parts = conv_product(input, board, conv.cin, conv.k, w, z, |z| moments(z, cout));
            let (mean, var) = combined(&parts, cout);
            let inv: Vec<f32> = var.iter().map(|v| 1.0 / (*v as f32 + n.epsilon).sqrt()).collect();
            let gamma = n.gamma.of(&self.theta);
            let beta = n.beta.of(&self.theta);
            let mean32: Vec<f32> = mean.iter().map(|&v| v as f32).collect();
            // Zipped rather than indexed, one slice per constant: the loop vectorises without
            // bounds checks or shuffles.
            for (i, (zr, orow)) in z.chunks_exact_mut(cout).zip(out.chunks_exact_mut(cout)).enumerate() {
                for ((((z, o), mu), iv), (g, b)) in
                    zr.iter_mut().zip(orow.iter_mut()).zip(&mean32).zip(&inv).zip(gamma.iter().zip(beta))
                {
                    let xhat = (*z - mu) * iv;
                    *z = xhat;
                    *o = g * xhat + b;
                }
                // The skip and the ReLU while the row is in cache, not as passes of their own.
                finish_row(orow, skip.map(|s| &s[i * cout..(i + 1) * cout]), relu);
            }
            let running = &mut self.running[n.stats..n.stats + 2 * cout];
            let mom = n.momentum;
            for c in 0..cout {
                running[c] = running[c] * (1.0 - mom) + mean32[c] * mom;
                running[cout + c] = running[cout + c] * (1.0 - mom) + var[c] as f32 * mom;
            }
            saved.inv = inv;
        } else {
            conv_product(input, board, conv.cin, conv.k, w, z, |_| ());
            let bias = conv.bias.map(|b| b.of(&self.theta).to_vec()).unwrap_or_else(|| vec![0.0; cout]);
            for (i, (zr, orow)) in z.chunks_exact(cout).zip(out.chunks_exact_mut(cout)).enumerate() {
                for ((o, z), b) in orow.iter_mut().zip(zr).zip(&bias) {
                    *o = z + b;
                }
                finish_row(orow, skip.map(|s| &s[i * cout..(i + 1) * cout]), relu);
            }
        }
    }

    /// The backward pass of [`Model::conv_forward`]: `dy` is the gradient at the layer's output,
    /// after its ReLU where `relu` (the mask is applied here; a caller that applied it already
    /// passes `false`); it is overwritten. Adds the weight gradients to `grad` and, where given,
    /// puts the input's gradient into `dinput`.
    #[allow(clippy::too_many_arguments)]
    fn conv_backward(
        &self,
        conv: &Conv,
        input: &[f32],
        board: Board,
        saved: &Saved,
        dy: &mut [f32],
        relu: bool,
        grad: &mut [f32],
        dinput: Option<InputGrad<'_>>,
    ) {
        let (m, k, cout) = (board.m(), conv.k * conv.k * conv.cin, conv.cout);
        let mask = relu.then_some(&saved.out[..]);
        let mut per_channel = None;
        if let Some(n) = conv.norm {
            let (mut dbeta, mut dgamma) = (vec![0.0f64; cout], vec![0.0f64; cout]);
            column_sums_and_products_f64(dy, mask, &saved.xhat, cout, &mut dbeta, &mut dgamma);
            let gamma = n.gamma.of(&self.theta);
            let scale: Vec<f32> = (0..cout).map(|c| gamma[c] * saved.inv[c]).collect();
            let mean_d: Vec<f32> = dbeta.iter().map(|v| (*v / m as f64) as f32).collect();
            let mean_dx: Vec<f32> = dgamma.iter().map(|v| (*v / m as f64) as f32).collect();
            for (g, v) in n.gamma.of_mut(grad).iter_mut().zip(&dgamma) {
                *g += *v as f32;
            }
            for (g, v) in n.beta.of_mut(grad).iter_mut().zip(&dbeta) {
                *g += *v as f32;
            }
            per_channel = Some((scale, mean_d, mean_dx));
        } else {
            if let Some(mask) = mask {
                relu_mask(dy, mask);
            }
            if let Some(b) = conv.bias {
                column_sums(dy, cout, b.of_mut(grad));
            }
        }
        let norm = per_channel.as_ref().map(|(scale, mean_d, mean_dx)| NormBackward { scale, mean_d, mean_dx });
        if conv.k == 1 {
            if let Some(nb) = &norm {
                nb.apply(dy, &saved.xhat);
            }
            product_tn(input, dy, m, k, cout, conv.w.of_mut(grad));
            if let Some(d) = dinput {
                product_into(dy, m, cout, self.weight(conv.w, k, cout).transpose(), d.buf, d.add);
            }
        } else {
            // The norm's step runs chunk by chunk inside the products, while each is in cache.
            let dinput = dinput.map(|d| (d, self.flipped(conv)));
            let norm = norm.as_ref().map(|nb| (nb, &saved.xhat[..]));
            conv_product_backward(input, dy, board, conv.cin, conv.k, cout, conv.w.of_mut(grad), dinput, norm);
        }
    }

    fn dense_forward(&self, d: &Dense, input: &[f32], rows: usize, relu: bool, out: &mut Vec<f32>) {
        let out = sized(out, rows * d.outputs);
        product(input, rows, d.inputs, self.weight(d.w, d.inputs, d.outputs), out);
        let bias = d.b.of(&self.theta);
        for row in out.chunks_exact_mut(d.outputs) {
            for (o, b) in row.iter_mut().zip(bias) {
                *o += b;
                if relu {
                    *o = o.max(0.0);
                }
            }
        }
    }

    /// `dout` is the gradient at the layer's output before its activation.
    fn dense_backward(
        &self,
        d: &Dense,
        input: &[f32],
        rows: usize,
        dout: &[f32],
        grad: &mut [f32],
        dinput: Option<&mut Vec<f32>>,
    ) {
        column_sums(dout, d.outputs, d.b.of_mut(grad));
        product_tn(input, dout, rows, d.inputs, d.outputs, d.w.of_mut(grad));
        if let Some(dinput) = dinput {
            let wt = self.weight(d.w, d.inputs, d.outputs).transpose();
            product(dout, rows, d.outputs, wt, sized(dinput, rows * d.inputs));
        }
    }

    /// One forward and backward pass over `batch`: the losses, and the gradient of
    /// `policy + weights.value * value + weights.ownership * ownership + weights.score * score`
    /// in `work.grad` (laid out like `theta`).
    pub(crate) fn gradients(&mut self, batch: &Batch, weights: Weights, work: &mut Work) -> Losses {
        let shape = (self.config.actions, self.config.seats, self.config.ownership_cells(), self.config.score);
        let value_in = self.forward_train(&batch.obs, batch.size, work);
        let losses = loss_gradients(batch, shape, weights, work);
        self.backward(&batch.obs, batch.size, &value_in, work);
        losses
    }

    /// One forward and backward pass for a loss of the caller's (see [`Objective`]): `objective(logits, values,
    /// dlogits, dvalues)` sees the network's outputs (values after their sigmoid) and writes the
    /// loss's gradient at them into the zeroed `dlogits` and `dvalues`; the gradient of the
    /// parameters lands in `work.grad`. Ownership and score heads, if any, get no gradient.
    pub(crate) fn gradients_with(&mut self, obs: &[f32], b: usize, work: &mut Work, objective: &mut Objective<'_>) {
        let (a, seats, cells) = (self.config.actions, self.config.seats, self.config.ownership_cells());
        let value_in = self.forward_train(obs, b, work);
        let dl = sized(&mut work.dlogits, b * a);
        dl.fill(0.0);
        let dv = sized(&mut work.dvalues, b * seats);
        dv.fill(0.0);
        objective(
            &work.logits[..b * a],
            &work.values[..b * seats],
            &mut work.dlogits[..b * a],
            &mut work.dvalues[..b * seats],
        );
        // Through the sigmoid: dv/du = v (1 - v).
        for (d, v) in work.dvalues.iter_mut().zip(&work.values) {
            *d *= v * (1.0 - v);
        }
        if cells > 0 {
            sized(&mut work.downed, b * cells).fill(0.0);
        }
        if self.config.score {
            sized(&mut work.dscored, b).fill(0.0);
        }
        self.backward(obs, b, &value_in, work);
    }

    /// The forward pass in training mode: logits in `work.logits`, values in `work.values`
    /// (after the sigmoid); returns the value head's input.
    fn forward_train(&mut self, obs: &[f32], b: usize, work: &mut Work) -> Vec<f32> {
        let board = self.board(b);
        // The trunk and the policy head; the value head's input: [b, cells] (tower) or [b, width]
        // (MLP).
        let value_in = match board {
            Some(board) => self.tower_forward(obs, board, work),
            None => self.mlp_forward(obs, b, work),
        };
        self.value_head_forward(&value_in, b, work);
        value_in
    }

    /// The backward pass from `work.dlogits`, `work.dvalues` (before the sigmoid) and
    /// `work.downed` into `work.grad`.
    fn backward(&mut self, obs: &[f32], b: usize, value_in: &[f32], work: &mut Work) {
        let board = self.board(b);
        sized(&mut work.grad, self.theta.len());
        let mut grad = std::mem::take(&mut work.grad);
        let dvalue_in = self.value_head_backward(value_in, b, work, &mut grad);
        match board {
            Some(board) => self.tower_backward(board, &dvalue_in, work, &mut grad),
            None => self.mlp_backward(obs, b, value_in, &dvalue_in, work, &mut grad),
        }
        work.grad = grad;
    }

    fn board(&self, b: usize) -> Option<Board> {
        match self.config.trunk {
            Trunk::Resnet { .. } => Some(Board { batch: b, rows: self.config.input[1], cols: self.config.input[2] }),
            Trunk::Mlp { .. } | Trunk::Resmlp { .. } => None,
        }
    }

    /// The tower's forward pass with its heads' convolutions (each layer's output kept in
    /// `work.saved`), the policy logits in `work.logits` and the ownership in `work.owned`;
    /// returns the value head's input.
    fn tower_forward(&mut self, obs: &[f32], board: Board, work: &mut Work) -> Vec<f32> {
        let config = self.config.clone();
        let (b, a, planes) = (board.batch, config.actions, config.input[0]);
        let cells = board.cells();
        // Planes-first observations to rows of (sample, cell) with the planes side by side.
        to_cells_first(obs, b, cells, planes, sized(&mut work.input, board.m() * planes));
        // The stem, the blocks, the policy's, the value's, the plane head's last and the
        // ownership head's convolutions.
        let convs = 1 + 2 * self.blocks.len() + 4;
        work.saved.resize_with(convs, Saved::default);
        let mut saved = std::mem::take(&mut work.saved);
        let stem = self.stem.clone().expect("a tower has a stem");
        self.conv_forward(&stem, &work.input, board, true, None, &mut saved[0]);
        let blocks = self.blocks.clone();
        for (i, pair) in blocks.iter().enumerate() {
            let (before, after) = saved.split_at_mut(2 * i + 1);
            let (first, second) = after.split_at_mut(1);
            let x = &before[2 * i].out;
            self.conv_forward(&pair[0], x, board, true, None, &mut first[0]);
            self.conv_forward(&pair[1], &first[0].out, board, true, Some(x), &mut second[0]);
        }
        let last = 2 * blocks.len();
        let (trunk, heads) = saved.split_at_mut(last + 1);
        let top = &trunk[last].out;
        let (pconv, vconv) = (self.policy_conv.clone().expect("heads"), self.value_conv.clone().expect("heads"));
        self.conv_forward(&pconv, top, board, true, None, &mut heads[0]);
        self.conv_forward(&vconv, top, board, true, None, &mut heads[1]);
        if let Some(oconv) = self.ownership.clone() {
            self.conv_forward(&oconv, top, board, false, None, &mut heads[3]);
            let owned = sized(&mut work.owned, b * cells);
            for (o, z) in owned.iter_mut().zip(&heads[3].out) {
                *o = z.tanh();
            }
        }
        // The value head reads its planes as burn flattens them: [b, planes * cells].
        let mut value_in = vec![0.0; b * vconv.cout * cells];
        to_planes_first(&heads[1].out, b, cells, vconv.cout, &mut value_in);
        let logits = sized(&mut work.logits, b * a);
        match (&self.policy_planes.clone(), &config.head) {
            (Some(last_conv), Head::Planes { planes: np, index }) => {
                let (ph, q) = heads.split_at_mut(2);
                self.conv_forward(last_conv, &ph[0].out, board, false, None, &mut q[0]);
                let out = &q[0].out;
                for s in 0..b {
                    for (l, &i) in logits[s * a..(s + 1) * a].iter_mut().zip(index) {
                        let (plane, cell) = (i as usize / cells, i as usize % cells);
                        *l = out[(s * cells + cell) * np + plane];
                    }
                }
            }
            _ => {
                // burn flattens [b, planes, rows, cols]: plane-major per sample.
                let pc = pconv.cout;
                to_planes_first(&heads[0].out, b, cells, pc, sized(&mut work.policy_in, b * pc * cells));
                let fc = self.policy_fc.expect("a dense head");
                self.dense_forward(&fc, &work.policy_in, b, false, &mut work.logits);
            }
        }
        work.saved = saved;
        value_in
    }

    /// The MLP's forward pass (each layer's output kept in `work.saved`) and the policy logits in
    /// `work.logits`; returns the trunk's output, the value head's input.
    fn mlp_forward(&mut self, obs: &[f32], b: usize, work: &mut Work) -> Vec<f32> {
        work.saved.resize_with(self.mlp.len(), Saved::default);
        let mut saved = std::mem::take(&mut work.saved);
        let residual = matches!(self.config.trunk, Trunk::Resmlp { .. });
        for (i, layer) in self.mlp.iter().enumerate() {
            let (before, after) = saved.split_at_mut(i);
            let input = if i == 0 { obs } else { &before[i - 1].out[..] };
            // In a residual MLP, layers 2, 4, ... close a block: their block's input (layer
            // i - 2's output) is added before the ReLU.
            let closes = residual && i >= 2 && i % 2 == 0;
            self.dense_forward(layer, input, b, !closes, &mut after[0].out);
            if closes {
                for (o, x) in after[0].out.iter_mut().zip(&before[i - 2].out) {
                    *o = (*o + x).max(0.0);
                }
            }
        }
        let value_in = saved.last().expect("an MLP has layers").out.clone();
        let fc = self.policy_fc.expect("a dense head");
        self.dense_forward(&fc, &value_in, b, false, &mut work.logits);
        work.saved = saved;
        value_in
    }

    /// The value head: hidden = relu(value_in . W1 + b1), values = sigmoid(hidden . W2 + b2);
    /// and the score margin, tanh(hidden . W3 + b3), where the network has it.
    fn value_head_forward(&self, value_in: &[f32], b: usize, work: &mut Work) {
        let (vfc, vout) = (self.value_fc, self.value_out);
        self.dense_forward(&vfc, value_in, b, true, &mut work.hidden);
        self.dense_forward(&vout, &work.hidden, b, false, &mut work.values);
        for v in work.values.iter_mut() {
            *v = 1.0 / (1.0 + (-*v).exp());
        }
        if let Some(score) = self.score {
            self.dense_forward(&score, &work.hidden, b, false, &mut work.scored);
            work.scored.iter_mut().for_each(|s| *s = s.tanh());
        }
    }

    /// The value head backwards from `work.dvalues`; returns the gradient of its input.
    fn value_head_backward(&self, value_in: &[f32], b: usize, work: &mut Work, grad: &mut [f32]) -> Vec<f32> {
        let (vfc, vout) = (self.value_fc, self.value_out);
        let mut dhidden = std::mem::take(&mut work.grad_c);
        self.dense_backward(&vout, &work.hidden, b, &work.dvalues, grad, Some(&mut dhidden));
        if let Some(score) = self.score {
            // The score margin reads the same hidden layer: its gradient there adds in.
            let mut dfrom_score = std::mem::take(&mut work.grad_b);
            self.dense_backward(&score, &work.hidden, b, &work.dscored, grad, Some(&mut dfrom_score));
            dhidden.iter_mut().zip(&dfrom_score).for_each(|(d, s)| *d += s);
            work.grad_b = dfrom_score;
        }
        for (d, h) in dhidden.iter_mut().zip(&work.hidden) {
            if *h <= 0.0 {
                *d = 0.0;
            }
        }
        let mut dvalue_in = Vec::new();
        self.dense_backward(&vfc, value_in, b, &dhidden, grad, Some(&mut dvalue_in));
        work.grad_c = dhidden;
        dvalue_in
    }

    /// The tower backwards: the policy, value and ownership heads into the gradient at the
    /// tower's top, then the blocks, last first, and the stem.
    fn tower_backward(&self, board: Board, dvalue_in: &[f32], work: &mut Work, grad: &mut [f32]) {
        let config = &self.config;
        let (b, a) = (board.batch, config.actions);
        let cells = board.cells();
        let saved = std::mem::take(&mut work.saved);
        let last = 2 * self.blocks.len();
        let (pconv, vconv) = (self.policy_conv.as_ref().expect("heads"), self.value_conv.as_ref().expect("heads"));
        let top = &saved[last].out;
        let channels = pconv.cin;
        let mut dtop = std::mem::take(&mut work.grad_a);
        resized(&mut dtop, board.m() * channels);
        // The policy head's gradient at its 1x1 block's output.
        let mut dp = std::mem::take(&mut work.grad_b);
        sized(&mut dp, board.m() * pconv.cout);
        match (&self.policy_planes, &config.head) {
            (Some(last_conv), Head::Planes { planes: np, index }) => {
                let mut dq = vec![0.0; board.m() * np];
                for s in 0..b {
                    for (d, &i) in work.dlogits[s * a..(s + 1) * a].iter().zip(index) {
                        let (plane, cell) = (i as usize / cells, i as usize % cells);
                        dq[(s * cells + cell) * np + plane] = *d;
                    }
                }
                let q = &saved[last + 3];
                let into = InputGrad { buf: &mut dp, add: true };
                self.conv_backward(last_conv, &saved[last + 1].out, board, q, &mut dq, false, grad, Some(into));
            }
            _ => {
                let fc = self.policy_fc.expect("a dense head");
                let mut dpin = std::mem::take(&mut work.hidden);
                self.dense_backward(&fc, &work.policy_in, b, &work.dlogits, grad, Some(&mut dpin));
                to_cells_first(&dpin, b, cells, pconv.cout, &mut dp);
                work.hidden = dpin;
            }
        }
        // The policy head's is the first contribution to the tower top's gradient.
        let into = InputGrad { buf: &mut dtop, add: false };
        self.conv_backward(pconv, top, board, &saved[last + 1], &mut dp, true, grad, Some(into));
        // Back from [b, planes * cells] to the convolution's rows of (sample, cell).
        let mut dv = vec![0.0; board.m() * vconv.cout];
        to_cells_first(dvalue_in, b, cells, vconv.cout, &mut dv);
        let into = InputGrad { buf: &mut dtop, add: true };
        self.conv_backward(vconv, top, board, &saved[last + 2], &mut dv, true, grad, Some(into));
        if let Some(oconv) = &self.ownership {
            let mut downed = std::mem::take(&mut work.downed);
            let into = InputGrad { buf: &mut dtop, add: true };
            self.conv_backward(oconv, top, board, &saved[last + 4], &mut downed, false, grad, Some(into));
            work.downed = downed;
        }
        // The blocks, last first: dtop is the gradient at a block's output.
        let mut dmid = dp;
        for (i, pair) in self.blocks.iter().enumerate().rev() {
            let input = &saved[2 * i].out;
            // The skip passes the gradient after the ReLU straight to the block's input.
            let mut dskip = std::mem::take(&mut work.grad_c);
            masked_copy(&mut dtop, &saved[2 * i + 2].out, resized(&mut dskip, board.m() * channels));
            resized(&mut dmid, board.m() * channels);
            let mid = &saved[2 * i + 1];
            let into = InputGrad { buf: &mut dmid, add: false };
            self.conv_backward(&pair[1], &mid.out, board, &saved[2 * i + 2], &mut dtop, false, grad, Some(into));
            let into = InputGrad { buf: &mut dskip, add: true };
            self.conv_backward(&pair[0], input, board, mid, &mut dmid, true, grad, Some(into));
            work.grad_c = std::mem::replace(&mut dtop, dskip);
        }
        let stem = self.stem.as_ref().expect("a stem");
        self.conv_backward(stem, &work.input, board, &saved[0], &mut dtop, true, grad, None);
        work.grad_a = dtop;
        work.grad_b = dmid;
        work.saved = saved;
    }

    /// The MLP backwards: the policy head and the value head's input gradient into the trunk's
    /// output, then the layers, last first.
    fn mlp_backward(
        &self,
        obs: &[f32],
        b: usize,
        value_in: &[f32],
        dvalue_in: &[f32],
        work: &mut Work,
        grad: &mut [f32],
    ) {
        let saved = std::mem::take(&mut work.saved);
        let fc = self.policy_fc.expect("a dense head");
        // The trunk's output feeds both heads.
        let mut dx = std::mem::take(&mut work.grad_a);
        self.dense_backward(&fc, value_in, b, &work.dlogits, grad, Some(&mut dx));
        for (d, v) in dx.iter_mut().zip(dvalue_in) {
            *d += v;
        }
        let mut dnext = std::mem::take(&mut work.grad_b);
        let mut skip = std::mem::take(&mut work.grad_c);
        let residual = matches!(self.config.trunk, Trunk::Resmlp { .. });
        for (i, layer) in self.mlp.iter().enumerate().rev() {
            relu_mask(&mut dx, &saved[i].out);
            if residual && i >= 2 && i % 2 == 0 {
                // The gradient at a block's sum reaches its input twice: through the skip here,
                // through the block's layers below.
                skip.clear();
                skip.extend_from_slice(&dx);
            }
            let input = if i == 0 { obs } else { &saved[i - 1].out[..] };
            let wants = (i > 0 || work.want_input).then_some(&mut dnext);
            self.dense_backward(layer, input, b, &dx, grad, wants);
            if residual && i % 2 == 1 {
                for (d, s) in dnext.iter_mut().zip(&skip) {
                    *d += s;
                }
            }
            std::mem::swap(&mut dx, &mut dnext);
        }
        if work.want_input {
            // The last swap left the first layer's input gradient in `dx`.
            work.dinput.clear();
            work.dinput.extend_from_slice(&dx[..b * self.config.input_len()]);
        }
        work.grad_a = dx;
        work.grad_b = dnext;
        work.grad_c = skip;
        work.saved = saved;
    }
}

/// `[b, cells, c]` (each cell's channels side by side, the convolutions' layout) to
/// `[b, c, cells]` (burn's flattening of `[b, c, rows, cols]`).
fn to_planes_first(src: &[f32], b: usize, cells: usize, c: usize, dst: &mut [f32]) {
    for s in 0..b {
        for cell in 0..cells {
            for k in 0..c {
                dst[(s * c + k) * cells + cell] = src[(s * cells + cell) * c + k];
            }
        }
    }
}

/// The inverse of [`to_planes_first`].
fn to_cells_first(src: &[f32], b: usize, cells: usize, c: usize, dst: &mut [f32]) {
    for s in 0..b {
        for cell in 0..cells {
            for k in 0..c {
                dst[(s * cells + cell) * c + k] = src[(s * c + k) * cells + cell];
            }
        }
    }
}

/// [`relu_mask`] with a copy of the result in `copy`, in one pass.
fn masked_copy(d: &mut [f32], out: &[f32], copy: &mut [f32]) {
    for ((d, o), c) in d.iter_mut().zip(out).zip(copy.iter_mut()) {
        *d = if *o > 0.0 { *d } else { 0.0 };
        *c = *d;
    }
}

/// Zeroes the gradient where the ReLU's output was zero.
pub(crate) fn relu_mask(d: &mut [f32], out: &[f32]) {
    // A select rather than a conditional store, so the loop vectorises (the store under an
    // `if` compiled to one branch per element: a tenth of a training step).
    for (d, o) in d.iter_mut().zip(out) {
        *d = if *o > 0.0 { *d } else { 0.0 };
    }
}

#[cfg(test)]
mod tests;
