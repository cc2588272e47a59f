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

/// Reads parameters out of burn's modules into the flat vectors.
struct Reader {
    theta: Vec<f32>,
    running: Vec<f32>,
    tensors: Vec<Span>,
}

impl Reader {
    fn push(&mut self, values: Vec<f32>) -> Span {
        let span = Span { at: self.theta.len(), len: values.len() };
        self.theta.extend(values);
        self.tensors.push(span);
        span
    }

    fn conv(&mut self, conv: &Conv2d, norm: Option<&BatchNorm>) -> Conv {
        let [cout, cin, k, _] = conv.weight.dims();
        let w = values(conv.weight.val());
        let mut mine = vec![0.0; w.len()];
        for o in 0..cout {
            for i in 0..cin {
                for y in 0..k {
                    for x in 0..k {
                        mine[((y * k + x) * cin + i) * cout + o] = w[((o * cin + i) * k + y) * k + x];
                    }
                }
            }
        }
        let w = self.push(mine);
        let bias = conv.bias.as_ref().map(|b| self.push(values(b.val())));
        let norm = norm.map(|n| {
            let gamma = self.push(values(n.gamma.val()));
            let beta = self.push(values(n.beta.val()));
            let stats = self.running.len();
            self.running.extend(values(n.running_mean.value_sync()));
            self.running.extend(values(n.running_var.value_sync()));
            Norm { gamma, beta, stats, epsilon: n.epsilon as f32, momentum: n.momentum as f32 }
        });
        Conv { k, cin, cout, w, norm, bias }
    }

    fn conv_bn(&mut self, c: &ConvBn) -> Conv {
        self.conv(&c.conv, Some(&c.norm))
    }

    fn dense(&mut self, l: &Linear) -> Dense {
        let [inputs, outputs] = l.weight.dims();
        let w = self.push(values(l.weight.val()));
        let b = self.push(l.bias.as_ref().map(|b| values(b.val())).unwrap_or_else(|| vec![0.0; outputs]));
        Dense { inputs, outputs, w, b }
    }
}

/// Copies a network into one for a related game of the same trunk: every layer as it is,
/// except that the first takes more inputs (dense inputs, or a tower's planes; those the
/// narrow network lacks start at weight zero, so they change nothing until trained) and the
/// policy's last layer has a row per action of the new game, copied from the old action
/// `policy_rows[a]` names, zero where it names none. A plane head, an ownership or a score head
/// is copied where both networks have it with the same shape, and left as built otherwise.
pub(crate) fn transplant(
    narrow: &PolicyValueNet,
    into: &mut PolicyValueNet,
    policy_rows: &[Option<usize>],
    device: &Device,
) {
    // A dense layer with the first of its inputs and outputs copied (zeros elsewhere).
    let copy = |from: &Linear, to: &mut Linear| {
        let [fi, fo] = from.weight.dims();
        let [ti, tout] = to.weight.dims();
        let w = values(from.weight.val());
        let mut wide = vec![0.0; ti * tout];
        for i in 0..fi.min(ti) {
            let n = fo.min(tout);
            wide[i * tout..i * tout + n].copy_from_slice(&w[i * fo..i * fo + n]);
        }
        to.weight = Param::from_tensor(Tensor::from_data(TensorData::new(wide, [ti, tout]), device));
        let mut bias = vec![0.0; tout];
        if let Some(b) = &from.bias {
            let b = values(b.val());
            let n = b.len().min(tout);
            bias[..n].copy_from_slice(&b[..n]);
        }
        to.bias = Some(Param::from_tensor(tensor1(&bias, device)));
    };
    if let (Some(from), Some(to)) = (&narrow.stem, into.stem.as_mut()) {
        // [out, in, k, k]: each output's kernels for the old planes, zeros for the new.
        let [out, fi, k1, k2] = from.conv.weight.dims();
        let [_, ti, _, _] = to.conv.weight.dims();
        let (w, k) = (values(from.conv.weight.val()), k1 * k2);
        let mut wide = vec![0.0; out * ti * k];
        for o in 0..out {
            for c in 0..fi.min(ti) {
                wide[(o * ti + c) * k..(o * ti + c + 1) * k]
                    .copy_from_slice(&w[(o * fi + c) * k..(o * fi + c + 1) * k]);
            }
        }
        to.conv.weight = Param::from_tensor(Tensor::from_data(TensorData::new(wide, [out, ti, k1, k2]), device));
        to.conv.bias = from.conv.bias.clone();
        to.norm = from.norm.clone();
    }
    into.blocks = narrow.blocks.clone();
    for (from, to) in narrow.mlp.iter().zip(into.mlp.iter_mut()) {
        copy(from, to);
    }
    if let (Some(from), Some(to)) = (&narrow.policy_conv, into.policy_conv.as_mut()) {
        *to = from.clone();
    }
    if let (Some(from), Some(to)) = (&narrow.value_conv, into.value_conv.as_mut()) {
        *to = from.clone();
    }
    if let (Some(from), Some(to)) = (&narrow.policy_fc, into.policy_fc.as_mut()) {
        let [fi, fo] = from.weight.dims();
        let [ti, tout] = to.weight.dims();
        let (w, b) = (values(from.weight.val()), from.bias.as_ref().map(|b| values(b.val())));
        let (mut rows, mut bias) = (vec![0.0; ti * tout], vec![0.0; tout]);
        for (a, old) in policy_rows.iter().enumerate().take(tout) {
            let Some(old) = old.filter(|&o| o < fo) else { continue };
            for i in 0..fi.min(ti) {
                rows[i * tout + a] = w[i * fo + old];
            }
            bias[a] = b.as_ref().map_or(0.0, |b| b[old]);
        }
        to.weight = Param::from_tensor(Tensor::from_data(TensorData::new(rows, [ti, tout]), device));
        to.bias = Some(Param::from_tensor(tensor1(&bias, device)));
    }
    if let (Some(from), Some(to)) = (&narrow.policy_planes, into.policy_planes.as_mut())
        && from.weight.dims() == to.weight.dims()
    {
        *to = from.clone();
    }
    copy(&narrow.value_fc, &mut into.value_fc);
    copy(&narrow.value_out, &mut into.value_out);
    if let (Some(from), Some(to)) = (&narrow.ownership, into.ownership.as_mut()) {
        *to = from.clone();
    }
    if let (Some(from), Some(to)) = (&narrow.score, into.score.as_mut()) {
        copy(from, to);
    }
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

/// Rows per chunk of a product: enough chunks for the pool, each a product the kernel runs at
/// speed.
fn chunk_rows(m: usize) -> usize {
    let chunks = (rayon::current_num_threads() * 4).max(1);
    m.div_ceil(chunks).max(64).min(m.max(1))
}

/// `out[m, n] = a[m, k] . b` (`b` a `[k, n]` matrix or a transposed view), chunks of rows side
/// by side.
pub(crate) fn product(a: &[f32], m: usize, k: usize, b: MatRef<'_, f32>, out: &mut [f32]) {
    product_into(a, m, k, b, out, false);
}

/// `out[m, n] = a[m, k] . b`, or `out += a . b` where `add`, as [`product`].
fn product_into(a: &[f32], m: usize, k: usize, b: MatRef<'_, f32>, out: &mut [f32], add: bool) {
    let n = b.ncols();
    if m == 0 {
        return;
    }
    let rows = chunk_rows(m);
    out[..m * n].par_chunks_mut(rows * n).zip(a[..m * k].par_chunks(rows * k)).for_each(|(o, a)| {
        let r = a.len() / k;
        mul(mat_mut(o, r, n), add, mat(a, r, k), b);
    });
}

/// `g[k, n] += a[m, k]^T . d[m, n]`: the partial products of row chunks, added in order.
pub(crate) fn product_tn(a: &[f32], d: &[f32], m: usize, k: usize, n: usize, g: &mut [f32]) {
    if m == 0 {
        return;
    }
    let rows = m.div_ceil(rayon::current_num_threads().max(1)).max(1);
    if rows >= m {
        mul(mat_mut(g, k, n), true, mat(a, m, k).transpose(), mat(d, m, n));
        return;
    }
    let partial: Vec<Vec<f32>> = a[..m * k]
        .par_chunks(rows * k)
        .zip(d[..m * n].par_chunks(rows * n))
        .map(|(a, d)| {
            let r = a.len() / k;
            let mut p = vec![0.0; k * n];
            mul(mat_mut(&mut p, k, n), false, mat(a, r, k).transpose(), mat(d, r, n));
            p
        })
        .collect();
    for p in partial {
        for (g, p) in g.iter_mut().zip(p) {
            *g += p;
        }
    }
}

/// Sums of `d[m, n]`'s columns added to `g`.
pub(crate) fn column_sums(d: &[f32], n: usize, g: &mut [f32]) {
    for row in d.chunks_exact(n) {
        for (g, v) in g.iter_mut().zip(row) {
            *g += v;
        }
    }
}

/// Rows summed in `f32` before each addition to the `f64` totals: `f32` sums vectorise, and a
/// block this short keeps their rounding far below the `f32` result's.
const SUM_BLOCK: usize = 64;

/// `sums[c] += Σ_rows a[row, c]` and `products[c] += Σ_rows a[row, c] * b[row, c]`, in one
/// pass, in `f32` blocks of [`SUM_BLOCK`] rows; where `mask` is given, `a` is first zeroed
/// where the mask is not positive (a ReLU's backward step, in the same pass).
fn column_sums_and_products_f64(
    a: &mut [f32],
    mask: Option<&[f32]>,
    b: &[f32],
    n: usize,
    sums: &mut [f64],
    products: &mut [f64],
) {
    let (mut bs, mut bp) = (vec![0.0f32; n], vec![0.0f32; n]);
    let len = a.len();
    for (i, (ra, rb)) in a.chunks_mut(SUM_BLOCK * n).zip(b[..len].chunks(SUM_BLOCK * n)).enumerate() {
        if let Some(mask) = mask {
            relu_mask(ra, &mask[i * SUM_BLOCK * n..][..ra.len()]);
        }
        bs.fill(0.0);
        bp.fill(0.0);
        for (x, y) in ra.chunks_exact(n).zip(rb.chunks_exact(n)) {
            for (((s, p), x), y) in bs.iter_mut().zip(bp.iter_mut()).zip(x).zip(y) {
                *s += x;
                *p += x * y;
            }
        }
        for ((s, p), (a, b)) in sums.iter_mut().zip(products.iter_mut()).zip(bs.iter().zip(&bp)) {
            *s += *a as f64;
            *p += *b as f64;
        }
    }
}

/// A board's geometry and the batch size.
#[derive(Clone, Copy)]
struct Board {
    batch: usize,
    rows: usize,
    cols: usize,
}

impl Board {
    fn cells(self) -> usize {
        self.rows * self.cols
    }
    fn m(self) -> usize {
        self.batch * self.cells()
    }
}

/// Rows (cells) per chunk of a convolution's products, about: a chunk is whole boards.
const CHUNK_ROWS: usize = 512;

/// Boards per chunk of a convolution's products: products of a few hundred rows run near the
/// kernel's best speed and keep every buffer small; at least two chunks per thread.
fn boards_per_chunk(board: Board) -> usize {
    let by_rows = (CHUNK_ROWS / board.cells()).max(1);
    let by_threads = board.batch.div_ceil(2 * rayon::current_num_threads()).max(1);
    by_rows.min(by_threads)
}

/// Writes the patch matrix of the boards in `act` (`[boards * cells, c]`, rows: board, row,
/// column) over the whole of `out`: one row per cell, `k * k * c` values ordered
/// `(dy, dx, channel)`, zero beyond the board.
fn patches(act: &[f32], board: Board, c: usize, k: usize, out: &mut [f32]) {
    let (rows, cols, cells, r) = (board.rows, board.cols, board.cells(), k / 2);
    let width = k * k * c;
    debug_assert_eq!(out.len(), act.len() / c * width);
    let mut rows_out = out.chunks_exact_mut(width);
    for act in act.chunks_exact(cells * c) {
        for y in 0..rows {
            for x in 0..cols {
                let row = rows_out.next().expect("one patch row per cell");
                for (dy, seg) in row.chunks_exact_mut(k * c).enumerate() {
                    let yy = (y + dy).wrapping_sub(r);
                    if yy >= rows {
                        seg.fill(0.0);
                        continue;
                    }
                    // The kernel row's cells on the board are adjacent in `act`: one copy, with
                    // zeros for the columns beyond either edge.
                    let first = x.saturating_sub(r);
                    let end = (x + k - r).min(cols);
                    let before = (first + r - x) * c;
                    let len = (end - first) * c;
                    seg[..before].fill(0.0);
                    copy(&mut seg[before..before + len], &act[(yy * cols + first) * c..(yy * cols + end) * c]);
                    seg[before + len..].fill(0.0);
                }
            }
        }
    }
}

/// `dst.copy_from_slice(src)` as a loop of vector adds of zero: the copies here are a few
/// hundred bytes each, and the call to `memcpy` that a plain copy loop compiles to cost more
/// than the copy (a tenth of a training step). Adding zero turns -0 into 0, which no
/// product notices.
fn copy(dst: &mut [f32], src: &[f32]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = *s + 0.0;
    }
}

thread_local! {
    /// A patch matrix's memory, kept from product to product on each thread: a new one per
    /// product is a fresh mapping of pages from the OS each time (page faults took a quarter of
    /// a training step).
    static PATCHES: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `f` applied to the patch matrix of `act` (`[cells of act, k * k * c]`, in this thread's
/// patch memory).
fn with_patches<R>(act: &[f32], board: Board, c: usize, k: usize, f: impl FnOnce(MatRef<'_, f32>) -> R) -> R {
    PATCHES.with(|p| {
        let mut v = p.borrow_mut();
        let (rows, width) = (act.len() / c, k * k * c);
        // Every value is written by `patches`: only growth is zeroed first.
        if v.len() < rows * width {
            v.resize(rows * width, 0.0);
        }
        patches(act, board, c, k, &mut v[..rows * width]);
        f(mat(&v, rows, width))
    })
}

thread_local! {
    /// The cells' window starts in a bordered copy (`with_bordered`), kept like `PATCHES`.
    static STARTS: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Writes the boards in `act` (`[boards * cells, c]`) over `out` bordered by `k / 2` zero cells
/// on every side (`[boards, rows + 2r, cols + 2r, c]`), and into `starts` the offset of each
/// cell's k x k window (its top left corner in the bordered board).
fn bordered(act: &[f32], board: Board, c: usize, k: usize, out: &mut Vec<f32>, starts: &mut Vec<usize>) {
    let (rows, cols, r) = (board.rows, board.cols, k / 2);
    let (brows, bcols) = (rows + 2 * r, cols + 2 * r);
    let boards = act.len() / (board.cells() * c);
    let len = boards * brows * bcols * c;
    if out.len() < len {
        out.resize(len, 0.0);
    }
    let line = bcols * c;
    for (act, out) in act.chunks_exact(board.cells() * c).zip(out[..len].chunks_exact_mut(brows * line)) {
        out[..r * line].fill(0.0);
        out[(r + rows) * line..].fill(0.0);
        for (src, dst) in act.chunks_exact(cols * c).zip(out[r * line..].chunks_exact_mut(line)) {
            dst[..r * c].fill(0.0);
            copy(&mut dst[r * c..(r + cols) * c], src);
            dst[(r + cols) * c..].fill(0.0);
        }
    }
    conv::window_starts(boards, (rows, cols), k, c, starts);
}

/// `f` applied to the patch matrix of `act` as [`conv::Rows`] over a bordered copy (in this
/// thread's patch memory): one run of `k * c` values per kernel row.
fn with_bordered<R>(act: &[f32], board: Board, c: usize, k: usize, f: impl FnOnce(conv::Rows<'_>) -> R) -> R {
    PATCHES.with(|p| {
        STARTS.with(|s| {
            let (mut data, mut starts) = (p.borrow_mut(), s.borrow_mut());
            bordered(act, board, c, k, &mut data, &mut starts);
            let stride = (board.cols + 2 * (k / 2)) * c;
            f(conv::Rows { data: &data, starts: &starts, segs: k, stride, len: k * c })
        })
    })
}

/// A convolution's output `z[m, cout]` over the batch (a k x k convolution through patch
/// matrices, a 1x1 as a plain product), board chunks side by side, with `after` applied to each
/// chunk of `z` while it is still in cache; its results in chunk order.
#[allow(clippy::too_many_arguments)]
fn conv_product<T: Send>(
    input: &[f32],
    board: Board,
    cin: usize,
    k: usize,
    (weights, cout): (&[f32], usize),
    z: &mut [f32],
    after: impl Fn(&mut [f32]) -> T + Sync,
) -> Vec<T> {
    let cells = board.cells();
    let per = boards_per_chunk(board);
    let w = mat(weights, k * k * cin, cout);
    let w_rows = conv::fits(cout).then_some(weights);
    z[..board.m() * cout]
        .par_chunks_mut(per * cells * cout)
        .zip(input[..board.m() * cin].par_chunks(per * cells * cin))
        .map(|(z, x)| {
            if k == 1 {
                mul(mat_mut(z, x.len() / cin, cout), false, mat(x, x.len() / cin, cin), w);
            } else if let Some(w) = w_rows {
                with_bordered(x, board, cin, k, |rows| conv::nn(rows, w, cout, z, false));
            } else {
                with_patches(x, board, cin, k, |p| mul(mat_mut(z, p.nrows(), cout), false, p, w));
            }
            after(z)
        })
        .collect()
}

/// A block of rows' per-column count, mean and sum of squared deviations from the mean.
struct Moments {
    count: f64,
    mean: Vec<f64>,
    m2: Vec<f64>,
}

/// The [`Moments`] of `z[rows, n]` in one pass, meant for a block still in cache: sums of the
/// values and their squares taken from the block's first row (a value near the mean, so the
/// squares do not swamp the spread), in `f32` blocks of [`SUM_BLOCK`] rows.
fn moments(z: &[f32], n: usize) -> Moments {
    let rows = z.len() / n;
    let shift: Vec<f32> = z[..n.min(z.len())].to_vec();
    let (mut s1, mut s2) = (vec![0.0f64; n], vec![0.0f64; n]);
    let (mut b1, mut b2) = (vec![0.0f32; n], vec![0.0f32; n]);
    for block in z.chunks(SUM_BLOCK * n) {
        b1.fill(0.0);
        b2.fill(0.0);
        for row in block.chunks_exact(n) {
            for (((b1, b2), v), s) in b1.iter_mut().zip(b2.iter_mut()).zip(row).zip(&shift) {
                let d = v - s;
                *b1 += d;
                *b2 += d * d;
            }
        }
        for ((s1, s2), (b1, b2)) in s1.iter_mut().zip(s2.iter_mut()).zip(b1.iter().zip(&b2)) {
            *s1 += *b1 as f64;
            *s2 += *b2 as f64;
        }
    }
    let count = rows as f64;
    let c = count.max(1.0);
    let mean = s1.iter().zip(&shift).map(|(s1, s)| *s as f64 + s1 / c).collect();
    let m2 = s1.iter().zip(&s2).map(|(s1, s2)| (s2 - s1 * s1 / c).max(0.0)).collect();
    Moments { count, mean, m2 }
}

/// The mean and (biased) variance of the rows of all the blocks together, from the blocks'
/// moments (Chan, Golub and LeVeque's pairwise update, exact up to rounding).
fn combined(parts: &[Moments], n: usize) -> (Vec<f64>, Vec<f64>) {
    let total: f64 = parts.iter().map(|p| p.count).sum::<f64>().max(1.0);
    let mut mean = vec![0.0f64; n];
    for p in parts {
        for (m, pm) in mean.iter_mut().zip(&p.mean) {
            *m += pm * p.count;
        }
    }
    mean.iter_mut().for_each(|m| *m /= total);
    let mut var = vec![0.0f64; n];
    for p in parts {
        for ((v, (pm2, pm)), m) in var.iter_mut().zip(p.m2.iter().zip(&p.mean)).zip(&mean) {
            *v += pm2 + p.count * (pm - m) * (pm - m);
        }
    }
    var.iter_mut().for_each(|v| *v /= total);
    (mean, var)
}

/// Where a backward pass puts an input's gradient: added to what `buf` holds, or written over
/// it (the first of several contributions, or the only one: no zeroing first).
struct InputGrad<'a> {
    buf: &'a mut [f32],
    add: bool,
}

/// BatchNorm's backward step over rows of `d` (the gradient at the norm's output, turned into
/// the gradient at its input in place), given the rows' normalised inputs `xhat` and, per
/// channel, γ / σ, the mean of `d` and the mean of `d * xhat`.
struct NormBackward<'a> {
    scale: &'a [f32],
    mean_d: &'a [f32],
    mean_dx: &'a [f32],
}

impl NormBackward<'_> {
    fn apply(&self, d: &mut [f32], xhat: &[f32]) {
        let n = self.scale.len();
        for (d, x) in d.chunks_exact_mut(n).zip(xhat.chunks_exact(n)) {
            // One slice per constant, zipped: the loop vectorises without shuffles.
            for ((d, x), ((sc, md), mdx)) in
                d.iter_mut().zip(x).zip(self.scale.iter().zip(self.mean_d).zip(self.mean_dx))
            {
                *d = sc * (*d - md - x * mdx);
            }
        }
    }
}

/// The backward products of a k x k convolution over board chunks: the weight gradient (the
/// chunks' partial products added in order) into `dw`, and where `dinput` is given the input's
/// gradient added to it. The input's gradient is itself a convolution, of the output's
/// gradient by the kernel turned half a turn with its channels swapped (`flipped`,
/// `[(dy, dx, out), in]`), so it too is one patch product per chunk. Where `norm` is given
/// (with the normalised outputs), each chunk of `dy` first goes back through the BatchNorm,
/// while it is in cache.
#[allow(clippy::too_many_arguments)]
fn conv_product_backward(
    input: &[f32],
    dy: &mut [f32],
    board: Board,
    cin: usize,
    k: usize,
    cout: usize,
    dw: &mut [f32],
    dinput: Option<(InputGrad<'_>, Vec<f32>)>,
    norm: Option<(&NormBackward<'_>, &[f32])>,
) {
    let cells = board.cells();
    let per = boards_per_chunk(board);
    let (rows_in, rows_out) = (per * cells * cin, per * cells * cout);
    let m = board.m();
    let (di, flipped) = match dinput {
        Some((di, f)) => (Some(di), Some(f)),
        None => (None, None),
    };
    let flipped_rows: &[f32] = flipped.as_deref().unwrap_or(&[]);
    // The implicit products take both shapes here (`cin` columns for the input's gradient and
    // the weights' from `dy`, `cout` for the stem's from `x`).
    let fits = if flipped.is_some() { conv::fits(cin) } else { conv::fits(cout) };
    let flipped = flipped.as_ref().map(|f| mat(f, k * k * cout, cin));
    let xs: Vec<&[f32]> = input[..m * cin].chunks(rows_in).collect();
    let ds: Vec<&mut [f32]> = dy[..m * cout].chunks_mut(rows_out).collect();
    let chunks = ds.len();
    let add = di.as_ref().is_some_and(|d| d.add);
    let dis: Vec<Option<&mut [f32]>> = match di {
        Some(di) => di.buf[..m * cin].chunks_mut(rows_in).map(Some).collect(),
        None => (0..chunks).map(|_| None).collect(),
    };
    let xhats: Vec<Option<&[f32]>> = match norm {
        Some((_, xhat)) => xhat[..m * cout].chunks(rows_out).map(Some).collect(),
        None => vec![None; chunks],
    };
    let from_dy = flipped.is_some();
    let len = k * k * cin * cout;
    // The chunks in one fixed, contiguous group per thread, each group's weight gradients added
    // into one buffer by the products themselves (not a zeroed buffer per chunk summed later),
    // the groups then summed in order: the same sums in the same order on every run with the
    // same thread count, whatever the pool's scheduling.
    let mut items: Vec<_> = xs.into_iter().zip(ds).zip(dis).zip(xhats).collect();
    let group = chunks.div_ceil(rayon::current_num_threads()).max(1);
    let groups: Vec<Vec<f32>> = items
        .par_chunks_mut(group)
        .map(|items| {
            let mut g = vec![0.0f32; len];
            for (((x, d), di), xhat) in items.iter_mut() {
                if let (Some((nb, _)), Some(xhat)) = (norm, xhat) {
                    nb.apply(d, xhat);
                }
                let xm = mat(x, x.len() / cin, cin);
                match (di, flipped) {
                    // Both products read `dy`'s bordered copy in place.
                    (Some(di), Some(_)) if fits => with_bordered(d, board, cout, k, |rows| {
                        conv::nn(rows, flipped_rows, cin, di, add);
                        conv::tn(rows, x, cin, &mut g);
                    }),
                    (None, _) if fits => {
                        with_bordered(x, board, cin, k, |rows| conv::tn(rows, d, cout, &mut g));
                    }
                    // One patch matrix of `dy` serves both products: the input's gradient, and
                    // the weights' as `patches(dy)^T . x` (see below), so `x` needs none of its
                    // own.
                    (Some(di), Some(flipped)) => with_patches(d, board, cout, k, |p| {
                        mul(mat_mut(di, p.nrows(), cin), add, p, flipped);
                        mul(mat_mut(&mut g, k * k * cout, cin), true, p.transpose(), xm);
                    }),
                    _ => {
                        let d = mat(d, d.len() / cout, cout);
                        with_patches(x, board, cin, k, |p| {
                            mul(mat_mut(&mut g, k * k * cin, cout), true, p.transpose(), d)
                        });
                    }
                }
            }
            g
        })
        .collect();
    let mut total = vec![0.0f32; len];
    for g in groups {
        for (t, v) in total.iter_mut().zip(&g) {
            *t += v;
        }
    }
    if from_dy {
        // `patches(dy)^T . x` is `[(ey, ex, out), in]`, and the weight of offset (dy, dx) meets
        // the gradient of the cell at the opposite offset: ey = k - 1 - dy, ex = k - 1 - dx.
        for (dy, dx) in (0..k).flat_map(|dy| (0..k).map(move |dx| (dy, dx))) {
            let from = ((k - 1 - dy) * k + (k - 1 - dx)) * cout * cin;
            let to = (dy * k + dx) * cin * cout;
            for co in 0..cout {
                for (ci, v) in total[from + co * cin..][..cin].iter().enumerate() {
                    dw[to + ci * cout + co] += v;
                }
            }
        }
    } else {
        for (g, v) in dw.iter_mut().zip(&total) {
            *g += v;
        }
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

/// AdamW's state: the moments of every parameter and the step count.
pub(crate) struct AdamW {
    m: Vec<f32>,
    v: Vec<f32>,
    t: i32,
}

/// AdamW's constants, burn's defaults.
const BETA1: f32 = 0.9;
const BETA2: f32 = 0.999;
const EPSILON: f32 = 1e-5;

/// The first bytes of a saved optimiser state.
const ADAMW_MAGIC: &[u8; 12] = b"meeple-adamw";

impl AdamW {
    pub(crate) fn new(len: usize) -> Self {
        AdamW { m: vec![0.0; len], v: vec![0.0; len], t: 0 }
    }

    /// The state as bytes: a magic, the trainer's `step` (checked against the weights' on
    /// resume), AdamW's step count and length, then both moments, little-endian.
    pub(crate) fn to_bytes(&self, step: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(32 + 8 * self.m.len());
        out.extend_from_slice(ADAMW_MAGIC);
        out.extend_from_slice(&step.to_le_bytes());
        out.extend_from_slice(&(self.t as u32).to_le_bytes());
        out.extend_from_slice(&(self.m.len() as u64).to_le_bytes());
        for x in self.m.iter().chain(&self.v) {
            out.extend_from_slice(&x.to_le_bytes());
        }
        out
    }

    /// Reads [`AdamW::to_bytes`] for `len` parameters and the trainer's `step`; why not where
    /// it does not fit.
    pub(crate) fn from_bytes(bytes: &[u8], len: usize, step: u64) -> Result<Self, String> {
        let header = 12 + 8 + 4 + 8;
        if bytes.len() < header || &bytes[..12] != ADAMW_MAGIC {
            return Err("not a meeple optimiser state".into());
        }
        let saved_step = u64::from_le_bytes(bytes[12..20].try_into().expect("8 bytes"));
        if saved_step != step {
            return Err(format!("an optimiser state from step {saved_step}, beside weights from step {step}"));
        }
        let t = u32::from_le_bytes(bytes[20..24].try_into().expect("4 bytes"));
        let stored = u64::from_le_bytes(bytes[24..32].try_into().expect("8 bytes"));
        if stored != len as u64 || bytes.len() != header + 8 * len {
            return Err(format!("an optimiser state for {stored} parameters, not this network's {len}"));
        }
        let floats: Vec<f32> =
            bytes[header..].chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes"))).collect();
        if floats.iter().any(|x| !x.is_finite()) || t > i32::MAX as u32 {
            return Err("an optimiser state with values that are not finite".into());
        }
        let (m, v) = floats.split_at(len);
        Ok(AdamW { m: m.to_vec(), v: v.to_vec(), t: t as i32 })
    }

    /// One step: the gradient scaled down to norm `clip` if above it (each parameter tensor's
    /// own, or with `global` all of them as one vector), the moments updated, decoupled weight
    /// decay, the bias-corrected update.
    pub(crate) fn step(
        &mut self,
        theta: &mut [f32],
        grad: &mut [f32],
        tensors: &[usize],
        lr: f32,
        decay: f32,
        (clip, global): (f32, bool),
    ) {
        let scale = |g: &mut [f32]| {
            let norm = g.iter().map(|v| (*v as f64) * (*v as f64)).sum::<f64>().sqrt() as f32;
            let coef = (clip / (norm + f32::MIN_POSITIVE)).min(1.0);
            if coef < 1.0 {
                g.iter_mut().for_each(|v| *v *= coef);
            }
        };
        if global {
            scale(grad);
        } else {
            let mut at = 0;
            for &len in tensors {
                scale(&mut grad[at..at + len]);
                at += len;
            }
        }
        self.t += 1;
        let (c1, c2) = (1.0 - BETA1.powi(self.t), 1.0 - BETA2.powi(self.t));
        let shrink = 1.0 - lr * decay;
        for (((p, g), m), v) in theta.iter_mut().zip(grad.iter()).zip(self.m.iter_mut()).zip(self.v.iter_mut()) {
            *m = BETA1 * *m + (1.0 - BETA1) * g;
            *v = BETA2 * *v + (1.0 - BETA2) * g * g;
            let update = (*m / c1) / ((*v / c2).sqrt() + EPSILON);
            *p = *p * shrink - lr * update;
        }
    }
}

#[cfg(test)]
mod tests;
