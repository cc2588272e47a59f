//! Convolutions on boards: a chunk's patches (or its zero-bordered copy for the in-place
//! kernels), the patch products forwards and backwards, and BatchNorm's moments and backward.

use super::*;

/// A board's geometry and the batch size.
#[derive(Clone, Copy)]
pub(super) struct Board {
    pub(super) batch: usize,
    pub(super) rows: usize,
    pub(super) cols: usize,
}

impl Board {
    pub(super) fn cells(self) -> usize {
        self.rows * self.cols
    }
    pub(super) fn m(self) -> usize {
        self.batch * self.cells()
    }
}

/// Rows (cells) per chunk of a convolution's products, about: a chunk is whole boards.
pub(super) const CHUNK_ROWS: usize = 512;

/// Boards per chunk of a convolution's products: products of a few hundred rows run near the
/// kernel's best speed and keep every buffer small; at least two chunks per thread.
pub(super) fn boards_per_chunk(board: Board) -> usize {
    let by_rows = (CHUNK_ROWS / board.cells()).max(1);
    let by_threads = board.batch.div_ceil(2 * rayon::current_num_threads()).max(1);
    by_rows.min(by_threads)
}

/// Writes the patch matrix of the boards in `act` (`[boards * cells, c]`, rows: board, row,
/// column) over the whole of `out`: one row per cell, `k * k * c` values ordered
/// `(dy, dx, channel)`, zero beyond the board.
pub(super) fn patches(act: &[f32], board: Board, c: usize, k: usize, out: &mut [f32]) {
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
pub(super) fn copy(dst: &mut [f32], src: &[f32]) {
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
pub(super) fn with_patches<R>(
    act: &[f32],
    board: Board,
    c: usize,
    k: usize,
    f: impl FnOnce(MatRef<'_, f32>) -> R,
) -> R {
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
pub(super) fn bordered(act: &[f32], board: Board, c: usize, k: usize, out: &mut Vec<f32>, starts: &mut Vec<usize>) {
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
pub(super) fn with_bordered<R>(
    act: &[f32],
    board: Board,
    c: usize,
    k: usize,
    f: impl FnOnce(conv::Rows<'_>) -> R,
) -> R {
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
pub(super) fn conv_product<T: Send>(
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
pub(super) struct Moments {
    pub(super) count: f64,
    pub(super) mean: Vec<f64>,
    pub(super) m2: Vec<f64>,
}

/// The [`Moments`] of `z[rows, n]` in one pass, meant for a block still in cache: sums of the
/// values and their squares taken from the block's first row (a value near the mean, so the
/// squares do not swamp the spread), in `f32` blocks of [`SUM_BLOCK`] rows.
pub(super) fn moments(z: &[f32], n: usize) -> Moments {
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
pub(super) fn combined(parts: &[Moments], n: usize) -> (Vec<f64>, Vec<f64>) {
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
pub(super) struct InputGrad<'a> {
    pub(super) buf: &'a mut [f32],
    pub(super) add: bool,
}

/// BatchNorm's backward step over rows of `d` (the gradient at the norm's output, turned into
/// the gradient at its input in place), given the rows' normalised inputs `xhat` and, per
/// channel, γ / σ, the mean of `d` and the mean of `d * xhat`.
pub(super) struct NormBackward<'a> {
    pub(super) scale: &'a [f32],
    pub(super) mean_d: &'a [f32],
    pub(super) mean_dx: &'a [f32],
}

impl NormBackward<'_> {
    pub(super) fn apply(&self, d: &mut [f32], xhat: &[f32]) {
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
pub(super) fn conv_product_backward(
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
