//! Matrix products over flat buffers, chunks of rows side by side on the thread pool, and the
//! column sums the gradients need.

use super::*;

/// Rows per chunk of a product: enough chunks for the pool, each a product the kernel runs at
/// speed.
pub(super) fn chunk_rows(m: usize) -> usize {
    let chunks = (rayon::current_num_threads() * 4).max(1);
    m.div_ceil(chunks).max(64).min(m.max(1))
}

/// `out[m, n] = a[m, k] . b` (`b` a `[k, n]` matrix or a transposed view), chunks of rows side
/// by side.
pub(crate) fn product(a: &[f32], m: usize, k: usize, b: MatRef<'_, f32>, out: &mut [f32]) {
    product_into(a, m, k, b, out, false);
}

/// `out[m, n] = a[m, k] . b`, or `out += a . b` where `add`, as [`product`].
pub(super) fn product_into(a: &[f32], m: usize, k: usize, b: MatRef<'_, f32>, out: &mut [f32], add: bool) {
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
pub(super) const SUM_BLOCK: usize = 64;

/// `sums[c] += Σ_rows a[row, c]` and `products[c] += Σ_rows a[row, c] * b[row, c]`, in one
/// pass, in `f32` blocks of [`SUM_BLOCK`] rows; where `mask` is given, `a` is first zeroed
/// where the mask is not positive (a ReLU's backward step, in the same pass).
pub(super) fn column_sums_and_products_f64(
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
