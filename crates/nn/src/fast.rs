//! Inference without burn: the trained weights with BatchNorm folded into the convolutions,
//! evaluated by one matrix product per layer over the whole batch.
//!
//! Why: burn-flex's convolution builds its patch matrix and multiplies one sample at a time, so
//! a batch of 64 costs 64 small products; a self-play batch is many small boards. Here the
//! patches of every board in the batch form one matrix (`[batch * rows * cols, 9 * channels]`,
//! three contiguous runs per cell of a zero-bordered NHWC buffer) and one product gives the
//! layer; where the layer's width fits the vector unit, `crate::conv`'s kernel reads those runs
//! in place and no patch matrix is built. Outputs equal burn's forward pass to float rounding
//! (tested).

use std::cell::RefCell;

use burn::nn::conv::Conv2d;
use burn::nn::{BatchNorm, Linear};

use crate::conv;
use crate::gemm::{mat, mat_mut, mul};
use crate::grad::values;
use crate::net::{ConvBn, Head, NetConfig, PolicyValueNet, Trunk};

/// A dense layer: `weight[i * out + o]`.
#[derive(Clone, Debug)]
struct Dense {
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

impl Dense {
    fn from_linear(layer: &Linear) -> Self {
        let [inputs, outputs] = layer.weight.dims();
        let weight = values(layer.weight.val());
        let bias = layer.bias.as_ref().map(|b| values(b.val())).unwrap_or_else(|| vec![0.0; outputs]);
        Dense { weight, bias, inputs, outputs }
    }

    /// A convolution with its BatchNorm (if any) folded in; rows of the weight are ordered
    /// (dy, dx, in).
    fn from_conv(conv: &Conv2d, norm: Option<&BatchNorm>) -> Self {
        let [outputs, inputs, kh, kw] = conv.weight.dims();
        let w = values(conv.weight.val());
        // Without a norm: scale 1, shift 0.
        let (gamma, beta, mean, var, epsilon) = match norm {
            Some(n) => (
                values(n.gamma.val()),
                values(n.beta.val()),
                values(n.running_mean.value()),
                values(n.running_var.value()),
                n.epsilon as f32,
            ),
            None => (vec![1.0; outputs], vec![0.0; outputs], vec![0.0; outputs], vec![1.0; outputs], 0.0),
        };
        let conv_bias = conv.bias.as_ref().map(|b| values(b.val()));
        let mut weight = vec![0.0; kh * kw * inputs * outputs];
        let mut bias = vec![0.0; outputs];
        for o in 0..outputs {
            let scale = gamma[o] / (var[o] + epsilon).sqrt();
            let b = conv_bias.as_ref().map_or(0.0, |b| b[o]);
            bias[o] = beta[o] + (b - mean[o]) * scale;
            for i in 0..inputs {
                for y in 0..kh {
                    for x in 0..kw {
                        let row = (y * kw + x) * inputs + i;
                        weight[row * outputs + o] = w[((o * inputs + i) * kh + y) * kw + x] * scale;
                    }
                }
            }
        }
        Dense { weight, bias, inputs: kh * kw * inputs, outputs }
    }

    fn from_conv_bn(c: &ConvBn) -> Self {
        Self::from_conv(&c.conv, Some(&c.norm))
    }

    /// `out[m, outputs] = input[m, inputs] x weight` (bias and activation left to the caller).
    fn product(&self, input: &[f32], m: usize, out: &mut [f32]) {
        let (k, n) = (self.inputs, self.outputs);
        mul(mat_mut(out, m, n), false, mat(input, m, k), mat(&self.weight, k, n));
    }
}

/// The folded network.
#[derive(Clone, Debug)]
pub(crate) struct Fast {
    config: NetConfig,
    /// Tower: the stem, then two convolutions per block; MLP: the hidden layers.
    trunk: Vec<Dense>,
    /// Tower only: the policy (2 channels, or the tower's width for the plane head) and value
    /// (1 channel) 1x1 convolutions side by side.
    heads: Option<Dense>,
    /// The dense head's last layer.
    policy_fc: Option<Dense>,
    /// Its weights again, one row of `inputs` per action: where a leaf has a few dozen legal
    /// actions among thousands of ids (Sagrada's 5,574), their rows alone give the logits the
    /// search reads, a small part of the full product's work.
    policy_rows: Option<Vec<f32>>,
    /// The plane head's 3x3 convolution.
    policy_planes: Option<Dense>,
    value_fc: Dense,
    value_out: Dense,
}

/// Samples per product: the fastest of 1, 2, 4, 8 and 16 on connect four's default tower at batch
/// 64 (the measurement is in docs/experiments/general.md, "Network speed").
const CHUNK: usize = 4;

/// Samples per product of a dense trunk: its products are thin at a few rows (one row of
/// weights per output) and a few dozen rows feed the kernel well; measured on the Catan self-play study's
/// 4x500 residual MLP over Catan's observation (docs/experiments/catan.md).
const DENSE_CHUNK: usize = 64;

#[derive(Default)]
struct Scratch {
    pad: [Vec<f32>; 2],
    cols: Vec<f32>,
    /// Each cell's 3x3 window in a bordered buffer (`conv::Rows`).
    starts: Vec<usize>,
    out: Vec<f32>,
    policy_in: Vec<f32>,
    value_in: Vec<f32>,
    hidden: Vec<f32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

fn sized(v: &mut Vec<f32>, n: usize) -> &mut [f32] {
    if v.len() < n {
        v.resize(n, 0.0);
    }
    &mut v[..n]
}

impl Fast {
    pub(crate) fn new(model: &PolicyValueNet, config: &NetConfig) -> Self {
        let mut trunk = Vec::new();
        let mut heads = None;
        if let Some(stem) = &model.stem {
            trunk.push(Dense::from_conv_bn(stem));
            for block in &model.blocks {
                trunk.push(Dense::from_conv_bn(&block.first));
                trunk.push(Dense::from_conv_bn(&block.second));
            }
            let p = Dense::from_conv_bn(model.policy_conv.as_ref().expect("tower heads"));
            let v = Dense::from_conv_bn(model.value_conv.as_ref().expect("tower heads"));
            let (channels, pc, vc) = (p.inputs, p.outputs, v.outputs);
            let mut weight = Vec::with_capacity(channels * (pc + vc));
            for c in 0..channels {
                weight.extend_from_slice(&p.weight[c * pc..(c + 1) * pc]);
                weight.extend_from_slice(&v.weight[c * vc..(c + 1) * vc]);
            }
            let mut bias = p.bias.clone();
            bias.extend_from_slice(&v.bias);
            heads = Some(Dense { weight, bias, inputs: channels, outputs: pc + vc });
        } else {
            trunk.extend(model.mlp.iter().map(Dense::from_linear));
        }
        let policy_fc = model.policy_fc.as_ref().map(Dense::from_linear);
        let policy_rows = policy_fc.as_ref().map(|fc| {
            let (k, n) = (fc.inputs, fc.outputs);
            let mut rows = vec![0.0; k * n];
            for i in 0..k {
                for o in 0..n {
                    rows[o * k + i] = fc.weight[i * n + o];
                }
            }
            rows
        });
        Fast {
            config: config.clone(),
            trunk,
            heads,
            policy_fc,
            policy_rows,
            policy_planes: model.policy_planes.as_ref().map(|c| Dense::from_conv(c, None)),
            value_fc: Dense::from_linear(&model.value_fc),
            value_out: Dense::from_linear(&model.value_out),
        }
    }

    /// Logits `[batch, actions]` and sigmoid values `[batch, seats]` for `batch` observations.
    /// The batch is cut into chunks of a few samples that the current thread pool runs side by
    /// side: a product of a few boards' patches runs near the kernel's best speed, while one
    /// product of the whole batch is thin (32 output columns) and no faster per flop.
    pub(crate) fn evaluate(&self, obs: &[f32], batch: usize, logits: &mut Vec<f32>, vals: &mut Vec<f32>) {
        use rayon::prelude::*;
        let (n, a, seats) = (self.config.input_len(), self.config.actions, self.config.seats);
        let chunk = self.chunk_size(batch);
        logits.resize(batch * a, 0.0);
        vals.resize(batch * seats, 0.0);
        obs[..batch * n]
            .par_chunks(chunk * n)
            .zip(logits.par_chunks_mut(chunk * a))
            .zip(vals.par_chunks_mut(chunk * seats))
            .for_each(|((o, l), v)| self.chunk(o, o.len() / n, Policy::Full(l), v));
    }

    /// [`Fast::evaluate`] on the calling thread alone, chunk after chunk.
    pub(crate) fn evaluate_serial(&self, obs: &[f32], batch: usize, logits: &mut Vec<f32>, vals: &mut Vec<f32>) {
        let (n, a, seats) = (self.config.input_len(), self.config.actions, self.config.seats);
        let chunk = self.chunk_size(batch);
        logits.resize(batch * a, 0.0);
        vals.resize(batch * seats, 0.0);
        let chunks =
            obs[..batch * n].chunks(chunk * n).zip(logits.chunks_mut(chunk * a)).zip(vals.chunks_mut(chunk * seats));
        for ((o, l), v) in chunks {
            self.chunk(o, o.len() / n, Policy::Full(l), v);
        }
    }

    /// Whether [`Fast::evaluate_listed`] can answer: a dense policy head.
    pub(crate) fn lists(&self) -> bool {
        self.policy_rows.is_some()
    }

    /// The logits of the listed actions alone (`actions[starts[b]..starts[b + 1]]` for sample
    /// `b`, written in that order) and the values, for a network with a dense policy head;
    /// on the calling thread where `serial`, else chunks side by side in the current pool.
    pub(crate) fn evaluate_listed(
        &self,
        obs: &[f32],
        batch: usize,
        actions: &[u32],
        starts: &[usize],
        serial: bool,
        out: &mut crate::Output,
    ) {
        use rayon::prelude::*;
        let crate::Output { logits, values: vals } = out;
        let (n, seats) = (self.config.input_len(), self.config.seats);
        let chunk = self.chunk_size(batch);
        logits.resize(actions.len(), 0.0);
        vals.resize(batch * seats, 0.0);
        let mut jobs = Vec::with_capacity(batch.div_ceil(chunk));
        let (mut rest_l, mut rest_v) = (&mut logits[..], &mut vals[..]);
        for c in (0..batch).step_by(chunk) {
            let m = chunk.min(batch - c);
            let (l, lr) = std::mem::take(&mut rest_l).split_at_mut(starts[c + m] - starts[c]);
            let (v, vr) = std::mem::take(&mut rest_v).split_at_mut(m * seats);
            (rest_l, rest_v) = (lr, vr);
            jobs.push((c, m, l, v));
        }
        let run = |(c, m, l, v): (usize, usize, &mut [f32], &mut [f32])| {
            let policy = Policy::Listed { actions, starts: &starts[c..=c + m], out: l };
            self.chunk(&obs[c * n..(c + m) * n], m, policy, v);
        };
        if serial {
            jobs.into_iter().for_each(run);
        } else {
            jobs.into_par_iter().for_each(run);
        }
    }

    /// Samples per chunk: a few for a tower; for a dense trunk, enough to fill the kernel but
    /// split so every thread of the pool gets a share.
    fn chunk_size(&self, batch: usize) -> usize {
        match self.config.trunk {
            Trunk::Resnet { .. } => CHUNK,
            Trunk::Mlp { .. } | Trunk::Resmlp { .. } => {
                let threads = rayon::current_num_threads().max(1);
                batch.div_ceil(threads).clamp(CHUNK, DENSE_CHUNK)
            }
        }
    }

    fn chunk(&self, obs: &[f32], batch: usize, policy: Policy<'_>, vals: &mut [f32]) {
        // The scratch is taken out of the thread's slot for the whole chunk, not borrowed: a wide
        // product runs on the rayon pool, and a thread waiting in it may start another chunk of
        // its own (work stealing), which then finds the slot empty and uses fresh buffers
        // instead of finding it borrowed.
        let mut scratch = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
        let s = &mut scratch;
        let (logits, listed): (&mut [f32], _) = match policy {
            Policy::Full(l) => (l, None),
            Policy::Listed { actions, starts, out } => (&mut [], Some((actions, starts, out))),
        };
        match self.config.trunk {
            Trunk::Resnet { .. } => self.tower(obs, batch, s, logits),
            Trunk::Mlp { .. } => self.mlp(obs, batch, s),
            Trunk::Resmlp { .. } => self.resmlp(obs, batch, s),
        }
        match (&self.policy_fc, listed) {
            (Some(fc), None) => {
                fc.product(&s.policy_in, batch, logits);
                add_bias(logits, &fc.bias, false);
            }
            (Some(fc), Some((actions, starts, out))) => {
                let rows = self.policy_rows.as_ref().expect("rows beside a dense head");
                let k = fc.inputs;
                for b in 0..batch {
                    let x = &s.policy_in[b * k..(b + 1) * k];
                    for j in starts[b]..starts[b + 1] {
                        let a = actions[j] as usize;
                        out[j - starts[0]] = fc.bias[a] + dot(x, &rows[a * k..(a + 1) * k]);
                    }
                }
            }
            (None, Some(_)) => unreachable!("listed logits need a dense head"),
            (None, None) => {}
        }
        let hidden = sized(&mut s.hidden, batch * self.value_fc.outputs);
        self.value_fc.product(&s.value_in, batch, hidden);
        add_bias(hidden, &self.value_fc.bias, true);
        self.value_out.product(hidden, batch, vals);
        add_bias(vals, &self.value_out.bias, false);
        for v in vals.iter_mut() {
            *v = 1.0 / (1.0 + (-*v).exp());
        }
        SCRATCH.with(|s| *s.borrow_mut() = scratch);
    }

    fn mlp(&self, obs: &[f32], batch: usize, s: &mut Scratch) {
        let [mut cur, mut next] = std::mem::take(&mut s.pad);
        cur.clear();
        cur.extend_from_slice(obs);
        for layer in &self.trunk {
            let out = sized(&mut next, batch * layer.outputs);
            layer.product(&cur, batch, out);
            add_bias(out, &layer.bias, true);
            next.truncate(batch * layer.outputs);
            std::mem::swap(&mut cur, &mut next);
        }
        s.policy_in.clear();
        s.policy_in.extend_from_slice(&cur);
        s.value_in.clear();
        s.value_in.extend_from_slice(&cur);
        s.pad = [cur, next];
    }

    /// The residual MLP: the first layer, then blocks whose input is added back before the
    /// last ReLU.
    fn resmlp(&self, obs: &[f32], batch: usize, s: &mut Scratch) {
        let [mut cur, mut mid] = std::mem::take(&mut s.pad);
        let first = &self.trunk[0];
        let width = first.outputs;
        let x = sized(&mut cur, batch * width);
        first.product(obs, batch, x);
        add_bias(x, &first.bias, true);
        cur.truncate(batch * width);
        let mut out = std::mem::take(&mut s.policy_in);
        for pair in self.trunk[1..].chunks_exact(2) {
            let a = sized(&mut mid, batch * width);
            pair[0].product(&cur, batch, a);
            add_bias(a, &pair[0].bias, true);
            let y = sized(&mut out, batch * width);
            pair[1].product(&mid[..batch * width], batch, y);
            for (row, skip) in y.chunks_mut(width).zip(cur.chunks(width)) {
                for ((v, b), x) in row.iter_mut().zip(&pair[1].bias).zip(skip) {
                    *v = (*v + b + x).max(0.0);
                }
            }
            std::mem::swap(&mut cur, &mut out);
            cur.truncate(batch * width);
        }
        s.value_in.clear();
        s.value_in.extend_from_slice(&cur);
        out.clear();
        out.extend_from_slice(&cur);
        s.policy_in = out;
        s.pad = [cur, mid];
    }

    /// The tower and its heads: the value head's input into `s.value_in`, and the dense
    /// policy head's input into `s.policy_in` or the plane head's logits into `logits`.
    fn tower(&self, obs: &[f32], batch: usize, s: &mut Scratch, logits: &mut [f32]) {
        let [planes, rows, cols] = [self.config.input[0], self.config.input[1], self.config.input[2]];
        let (pr, pc) = (rows + 2, cols + 2);
        let cells = rows * cols;
        let m = batch * cells;
        let channels = self.trunk[0].outputs;
        let heads = self.heads.as_ref().expect("tower heads");
        let widest = channels.max(planes);
        let out_width = widest.max(heads.outputs).max(self.policy_planes.as_ref().map_or(0, |p| p.outputs));
        let Scratch { pad, cols: patches, starts, out, policy_in, value_in, .. } = s;
        let [pa, pb] = pad;
        // Zero-bordered NHWC buffers; borders are never written, so zero them once per call.
        let pad_len = batch * pr * pc * widest;
        let pa = sized(pa, pad_len);
        pa.fill(0.0);
        let pb = sized(pb, pad_len);
        pb.fill(0.0);
        // The observation, planes-first, into the bordered cells-first layout.
        for b in 0..batch {
            for p in 0..planes {
                for y in 0..rows {
                    for x in 0..cols {
                        pa[((b * pr + y + 1) * pc + x + 1) * planes + p] =
                            obs[((b * planes + p) * rows + y) * cols + x];
                    }
                }
            }
        }
        let patches = sized(patches, m * 9 * widest);
        let out = sized(out, m * out_width);
        // Stem into pb, then each block reads pb and writes back into pb via pa.
        let mut conv = |layer: &Dense, src: &[f32], cin: usize, patches: &mut [f32], out: &mut [f32]| {
            let k = 9 * cin;
            let n = layer.outputs;
            if conv::fits(n) {
                // Read in place: each patch row is three runs of the bordered buffer.
                conv::window_starts(batch, (rows, cols), 3, cin, starts);
                let a = conv::Rows { data: src, starts, segs: 3, stride: pc * cin, len: 3 * cin };
                conv::nn(a, &layer.weight, n, &mut out[..m * n], false);
                return;
            }
            for b in 0..batch {
                for y in 0..rows {
                    for x in 0..cols {
                        let row = &mut patches[((b * rows + y) * cols + x) * k..][..k];
                        for dy in 0..3 {
                            let from = ((b * pr + y + dy) * pc + x) * cin;
                            row[dy * 3 * cin..(dy + 1) * 3 * cin].copy_from_slice(&src[from..from + 3 * cin]);
                        }
                    }
                }
            }
            layer.product(&patches[..m * k], m, &mut out[..m * layer.outputs]);
        };
        // Writes relu(out + bias [+ skip]) into the interior of `dst`.
        // `out` holds `stride` values a cell, of which the first `bias.len()` are stored.
        let store = |bias: &[f32], stride: usize, out: &[f32], dst: &mut [f32], skip: bool| {
            let c = bias.len();
            for b in 0..batch {
                for y in 0..rows {
                    for x in 0..cols {
                        let o = &out[((b * rows + y) * cols + x) * stride..][..c];
                        let d = &mut dst[((b * pr + y + 1) * pc + x + 1) * c..][..c];
                        for i in 0..c {
                            let v = o[i] + bias[i] + if skip { d[i] } else { 0.0 };
                            d[i] = v.max(0.0);
                        }
                    }
                }
            }
        };
        conv(&self.trunk[0], pa, planes, patches, out);
        if planes != channels {
            // pa held the input at `planes` per cell; the tower runs at `channels` per cell.
            pa.fill(0.0);
        }
        store(&self.trunk[0].bias, channels, out, pb, false);
        for pair in self.trunk[1..].chunks(2) {
            conv(&pair[0], pb, channels, patches, out);
            store(&pair[0].bias, channels, out, pa, false);
            conv(&pair[1], pa, channels, patches, out);
            store(&pair[1].bias, channels, out, pb, true);
        }
        // Heads: one 1x1 product for the policy's planes and the value's.
        for b in 0..batch {
            for y in 0..rows {
                for x in 0..cols {
                    let from = ((b * pr + y + 1) * pc + x + 1) * channels;
                    patches[((b * rows + y) * cols + x) * channels..][..channels]
                        .copy_from_slice(&pb[from..from + channels]);
                }
            }
        }
        let h = heads.outputs;
        heads.product(&patches[..m * channels], m, &mut out[..m * h]);
        // burn flattens [batch, planes, rows, cols]: plane-major per sample.
        let (vf, pf) = (self.config.value_filters, h - self.config.value_filters);
        value_in.resize(batch * vf * cells, 0.0);
        for b in 0..batch {
            for v in 0..vf {
                for cell in 0..cells {
                    value_in[(b * vf + v) * cells + cell] =
                        (out[(b * cells + cell) * h + pf + v] + heads.bias[pf + v]).max(0.0);
                }
            }
        }
        match (&self.policy_planes, &self.config.head) {
            (Some(last), Head::Planes { planes: np, index }) => {
                // The 1x1 block's output into pa's interior (all of it rewritten; the border
                // stays zero), then the 3x3 convolution to the action planes, and each action's
                // cell picked out.
                store(&heads.bias[..channels], h, out, pa, false);
                conv(last, pa, channels, patches, out);
                let (np, a) = (*np, self.config.actions);
                for b in 0..batch {
                    let o = &out[b * cells * np..][..cells * np];
                    for (l, &i) in logits[b * a..(b + 1) * a].iter_mut().zip(index) {
                        let (plane, cell) = (i as usize / cells, i as usize % cells);
                        *l = o[cell * np + plane] + last.bias[plane];
                    }
                }
            }
            _ => {
                policy_in.resize(batch * pf * cells, 0.0);
                for b in 0..batch {
                    for cell in 0..cells {
                        let o = &out[(b * cells + cell) * h..][..pf];
                        for c in 0..pf {
                            policy_in[(b * pf + c) * cells + cell] = (o[c] + heads.bias[c]).max(0.0);
                        }
                    }
                }
            }
        }
    }
}

/// Where [`Fast::chunk`] puts the policy: every action's logit, or the listed actions' alone.
enum Policy<'a> {
    Full(&'a mut [f32]),
    /// Sample `b`'s actions are `actions[starts[b]..starts[b + 1]]` (`starts` of this chunk,
    /// offsets into the whole batch's list); their logits go to `out` from `starts[0]` on.
    Listed {
        actions: &'a [u32],
        starts: &'a [usize],
        out: &'a mut [f32],
    },
}

/// A dot product in eight running sums, which the compiler keeps in vector registers (one
/// running sum would be a chain of dependent additions).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

fn add_bias(out: &mut [f32], bias: &[f32], relu: bool) {
    for row in out.chunks_mut(bias.len()) {
        for (v, b) in row.iter_mut().zip(bias) {
            *v += b;
            if relu {
                *v = v.max(0.0);
            }
        }
    }
}
