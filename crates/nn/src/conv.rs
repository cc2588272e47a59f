//! A convolution's products read straight from a zero-bordered copy of its input, with no patch
//! matrix built ("implicit GEMM"), through register-blocked kernels on pulp's safe SIMD types.
//!
//! Why: a 3x3 convolution's patch matrix is nine copies of its input, and building it was a
//! tenth of a training step. Each patch row is three runs of adjacent values in a
//! bordered copy of the board (one per kernel row), so a kernel that reads those runs in place
//! needs one copy of the input, not nine. The kernels keep a block of output rows times two
//! vectors of columns in registers (12 x 32 values with AVX-512) and add one rank-1 update per
//! input value, which on the networks' thin products (`[500 x 288] . [288 x 32]`) runs as fast
//! as faer's kernel and on the weight gradient's transposed shape faster (both measured in
//! docs/experiments/general.md, "Network speed"). Where no vector unit of 8 or more lanes divides the
//! output's columns, callers keep the patch matrix and faer's product (`fits`).

use pulp::{Simd, WithSimd};

/// The rows of a matrix that is never built: row `i` is `segs` runs of `len` values, the `s`-th
/// at `data[starts[i] + s * stride..][..len]`. A patch matrix over a bordered board: one run per
/// kernel row, `stride` the bordered board's row.
#[derive(Clone, Copy)]
pub(crate) struct Rows<'a> {
    pub(crate) data: &'a [f32],
    pub(crate) starts: &'a [usize],
    pub(crate) segs: usize,
    pub(crate) stride: usize,
    pub(crate) len: usize,
}

impl Rows<'_> {
    fn width(&self) -> usize {
        self.segs * self.len
    }
}

/// Into `starts`, the offset of each cell's k x k window (its top left corner) in boards of
/// `rows` x `cols` cells of `c` values bordered by `k / 2` cells on every side, one board after
/// another: the [`Rows::starts`] of their patch matrix.
pub(crate) fn window_starts(boards: usize, (rows, cols): (usize, usize), k: usize, c: usize, starts: &mut Vec<usize>) {
    let (brows, bcols) = (rows + 2 * (k / 2), cols + 2 * (k / 2));
    starts.clear();
    for b in 0..boards {
        for y in 0..rows {
            let first = (b * brows + y) * bcols;
            starts.extend((0..cols).map(|x| (first + x) * c));
        }
    }
}

/// Whether the kernels here take products with `n` output columns on this machine: a vector
/// unit of at least 8 lanes that divides `n`.
pub(crate) fn fits(n: usize) -> bool {
    struct Fits(usize);
    impl WithSimd for Fits {
        type Output = bool;
        #[inline(always)]
        fn with_simd<S: Simd>(self, _: S) -> bool {
            S::F32_LANES >= 8 && self.0 > 0 && self.0.is_multiple_of(S::F32_LANES)
        }
    }
    pulp::Arch::new().dispatch(Fits(n))
}

/// `out[m, n] = a . b`, or `out += a . b` where `add` (`m` = `a`'s rows, `b` `[a's width, n]`,
/// all row-major). Needs `fits(n)`.
pub(crate) fn nn(a: Rows<'_>, b: &[f32], n: usize, out: &mut [f32], add: bool) {
    debug_assert!(fits(n));
    pulp::Arch::new().dispatch(Nn { a, b, n, out, add });
}

/// `out[a's width, n] += a^T . d` (`d` `[m, n]`, `m` = `a`'s rows). Needs `fits(n)`.
pub(crate) fn tn(a: Rows<'_>, d: &[f32], n: usize, out: &mut [f32]) {
    debug_assert!(fits(n));
    pulp::Arch::new().dispatch(Tn { a, d, n, out });
}

struct Nn<'a> {
    a: Rows<'a>,
    b: &'a [f32],
    n: usize,
    out: &'a mut [f32],
    add: bool,
}

struct Tn<'a> {
    a: Rows<'a>,
    d: &'a [f32],
    n: usize,
    out: &'a mut [f32],
}

/// Output rows per register block: with 32 vector registers (AVX-512) 12 rows of two vectors
/// are 24 accumulators; with 16 (AVX2), 6 rows are 12.
const fn block_rows(lanes: usize) -> usize {
    if lanes >= 16 { 12 } else { 6 }
}

impl WithSimd for Nn<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, s: S) {
        if block_rows(S::F32_LANES) == 12 { nn_all::<S, 12>(s, self) } else { nn_all::<S, 6>(s, self) }
    }
}

impl WithSimd for Tn<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, s: S) {
        if block_rows(S::F32_LANES) == 12 { tn_all::<S, 12>(s, self) } else { tn_all::<S, 6>(s, self) }
    }
}

#[inline(always)]
fn nn_all<S: Simd, const MR: usize>(s: S, p: Nn<'_>) {
    let (m, n) = (p.a.starts.len(), p.n);
    let nvec = n / S::F32_LANES;
    let (bv, _) = S::as_simd_f32s(&p.b[..p.a.width() * n]);
    let (ov, _) = S::as_mut_simd_f32s(&mut p.out[..m * n]);
    let mut i = 0;
    while i + MR <= m {
        nn_rows::<S, MR>(s, &p.a, i, i + MR, bv, ov, nvec, p.add);
        i += MR;
    }
    while i + 4 <= m {
        nn_rows::<S, 4>(s, &p.a, i, i + 4, bv, ov, nvec, p.add);
        i += 4;
    }
    if i < m {
        // The last one to three rows as a block of four (the last row's values read again,
        // only the real rows stored): one row alone keeps too few sums in flight to hide the
        // multiply-add's latency, and single boards (batch 1) end this way.
        nn_rows::<S, 4>(s, &p.a, i, m, bv, ov, nvec, p.add);
    }
}

/// Output rows `i..end` (at most `MR`: a block of `MR` whose rows past `end` repeat the last
/// and are not stored), every column, in panels of two vectors (one for an odd last).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn nn_rows<S: Simd, const MR: usize>(
    s: S,
    a: &Rows<'_>,
    i: usize,
    end: usize,
    bv: &[S::f32s],
    ov: &mut [S::f32s],
    nvec: usize,
    add: bool,
) {
    let mut j = 0;
    while j + 2 <= nvec {
        nn_block::<S, MR, 2>(s, a, i, end, j, bv, ov, nvec, add);
        j += 2;
    }
    if j < nvec {
        nn_block::<S, MR, 1>(s, a, i, end, j, bv, ov, nvec, add);
    }
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn nn_block<S: Simd, const MR: usize, const NV: usize>(
    s: S,
    a: &Rows<'_>,
    i: usize,
    end: usize,
    j: usize,
    bv: &[S::f32s],
    ov: &mut [S::f32s],
    nvec: usize,
    add: bool,
) {
    let starts: [usize; MR] = std::array::from_fn(|r| a.starts[(i + r).min(end - 1)]);
    let mut acc = [[s.splat_f32s(0.0); NV]; MR];
    for seg in 0..a.segs {
        let rows: [&[f32]; MR] = std::array::from_fn(|r| &a.data[starts[r] + seg * a.stride..][..a.len]);
        let bseg = &bv[seg * a.len * nvec..][..a.len * nvec];
        for (kk, brow) in bseg.chunks_exact(nvec).enumerate() {
            let bj: &[S::f32s; NV] = brow[j..j + NV].try_into().expect("NV vectors");
            for (acc, row) in acc.iter_mut().zip(&rows) {
                let x = s.splat_f32s(row[kk]);
                for (acc, b) in acc.iter_mut().zip(bj) {
                    *acc = s.mul_add_f32s(x, *b, *acc);
                }
            }
        }
    }
    for (r, acc) in acc.iter().enumerate().take(end - i) {
        let o: &mut [S::f32s; NV] = (&mut ov[(i + r) * nvec + j..][..NV]).try_into().expect("NV vectors");
        for (o, acc) in o.iter_mut().zip(acc) {
            *o = if add { s.add_f32s(*o, *acc) } else { *acc };
        }
    }
}

#[inline(always)]
fn tn_all<S: Simd, const MR: usize>(s: S, p: Tn<'_>) {
    let (m, n) = (p.a.starts.len(), p.n);
    let nvec = n / S::F32_LANES;
    let (dv, _) = S::as_simd_f32s(&p.d[..m * n]);
    let (ov, _) = S::as_mut_simd_f32s(&mut p.out[..p.a.width() * n]);
    // Blocks of output rows stay within one run, so each row of `a` gives a block's values as
    // one slice.
    for seg in 0..p.a.segs {
        let mut o = 0;
        while o + MR <= p.a.len {
            tn_cols::<S, MR>(s, &p.a, seg, o, dv, ov, nvec);
            o += MR;
        }
        while o + 4 <= p.a.len {
            tn_cols::<S, 4>(s, &p.a, seg, o, dv, ov, nvec);
            o += 4;
        }
        while o < p.a.len {
            tn_cols::<S, 1>(s, &p.a, seg, o, dv, ov, nvec);
            o += 1;
        }
    }
}

#[inline(always)]
fn tn_cols<S: Simd, const MR: usize>(
    s: S,
    a: &Rows<'_>,
    seg: usize,
    o: usize,
    dv: &[S::f32s],
    ov: &mut [S::f32s],
    nvec: usize,
) {
    let mut j = 0;
    while j + 2 <= nvec {
        tn_block::<S, MR, 2>(s, a, seg, o, j, dv, ov, nvec);
        j += 2;
    }
    if j < nvec {
        tn_block::<S, MR, 1>(s, a, seg, o, j, dv, ov, nvec);
    }
}

/// Output rows `seg * len + o..` (`MR` of them), vector columns `j..j + NV`: a sum over every
/// row of `a` and `d`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn tn_block<S: Simd, const MR: usize, const NV: usize>(
    s: S,
    a: &Rows<'_>,
    seg: usize,
    o: usize,
    j: usize,
    dv: &[S::f32s],
    ov: &mut [S::f32s],
    nvec: usize,
) {
    let off = seg * a.stride + o;
    let mut acc = [[s.splat_f32s(0.0); NV]; MR];
    for (start, drow) in a.starts.iter().zip(dv.chunks_exact(nvec)) {
        let av: &[f32; MR] = a.data[start + off..][..MR].try_into().expect("MR values");
        let dj: &[S::f32s; NV] = drow[j..j + NV].try_into().expect("NV vectors");
        for (acc, x) in acc.iter_mut().zip(av) {
            let x = s.splat_f32s(*x);
            for (acc, d) in acc.iter_mut().zip(dj) {
                *acc = s.mul_add_f32s(x, *d, *acc);
            }
        }
    }
    let row0 = seg * a.len + o;
    for (q, acc) in acc.iter().enumerate() {
        let out: &mut [S::f32s; NV] = (&mut ov[(row0 + q) * nvec + j..][..NV]).try_into().expect("NV vectors");
        for (out, acc) in out.iter_mut().zip(acc) {
            *out = s.add_f32s(*out, *acc);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Row `i` of `a` written out.
    fn row(a: &Rows<'_>, i: usize) -> Vec<f32> {
        (0..a.segs).flat_map(|s| a.data[a.starts[i] + s * a.stride..][..a.len].to_vec()).collect()
    }

    fn value(i: usize) -> f32 {
        ((i * 7919 % 23) as f32 - 11.0) / 8.0
    }

    /// Every shape of block: full blocks and both tails of rows, runs whose length leaves a
    /// tail, an odd count of column vectors.
    #[test]
    fn products_of_runs_equal_the_definition() {
        let lanes = [8usize, 16].into_iter().find(|&l| fits(3 * l) && !fits(l / 2));
        let Some(lanes) = lanes else {
            eprintln!("no vector unit of 8 or 16 lanes here: nothing to test");
            return;
        };
        let data: Vec<f32> = (0..4000).map(value).collect();
        for (m, segs, len, stride) in
            [(29usize, 3usize, 7usize, 40usize), (12, 1, 24, 0), (17, 2, 13, 100), (4, 3, 1, 5), (2, 2, 5, 9)]
        {
            let starts: Vec<usize> = (0..m).map(|i| (i * 37) % 1500).collect();
            let a = Rows { data: &data, starts: &starts, segs, stride, len };
            let width = a.width();
            for n in [lanes, 2 * lanes, 3 * lanes] {
                let b: Vec<f32> = (0..width * n).map(|i| value(i + 5)).collect();
                let want: Vec<f32> = (0..m)
                    .flat_map(|i| {
                        let r = row(&a, i);
                        (0..n)
                            .map(move |c| (0..width).map(|t| r[t] * value(t * n + c + 5)).sum::<f32>())
                            .collect::<Vec<_>>()
                    })
                    .collect();
                let close = |got: &[f32], want: &[f32]| {
                    got.iter().zip(want).all(|(g, w)| (g - w).abs() <= 1e-4 * (1.0 + w.abs()))
                };
                let mut out = vec![f32::NAN; m * n];
                nn(a, &b, n, &mut out, false);
                assert!(close(&out, &want), "nn m={m} segs={segs} len={len} n={n}");
                nn(a, &b, n, &mut out, true);
                let twice: Vec<f32> = want.iter().map(|w| 2.0 * w).collect();
                assert!(close(&out, &twice), "nn add m={m} segs={segs} len={len} n={n}");
                // a^T . d, added to what the output holds.
                let d: Vec<f32> = (0..m * n).map(|i| value(i + 11)).collect();
                let rows: Vec<Vec<f32>> = (0..m).map(|i| row(&a, i)).collect();
                let want: Vec<f32> = (0..width)
                    .flat_map(|t| {
                        let (rows, d) = (&rows, &d);
                        (0..n).map(move |c| 1.0 + (0..m).map(|i| rows[i][t] * d[i * n + c]).sum::<f32>())
                    })
                    .collect();
                let mut g = vec![1.0; width * n];
                tn(a, &d, n, &mut g);
                assert!(close(&g, &want), "tn m={m} segs={segs} len={len} n={n}");
            }
        }
    }
}
