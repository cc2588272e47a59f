//! Matrix products on row-major slices, written in place, through faer's safe API.
//!
//! burn's product needs both operands as tensors (a copy of each) and returns a fresh one (a
//! third copy), and those copies were a tenth of a training step; gemm's own API is unsafe,
//! which meeple forbids. The figures before and after are in docs/experiments/general.md, "Network speed".

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};

/// `v` as a `[rows, cols]` row-major matrix (its first `rows * cols` values).
pub(crate) fn mat(v: &[f32], rows: usize, cols: usize) -> MatRef<'_, f32> {
    MatRef::from_row_major_slice(&v[..rows * cols], rows, cols)
}

/// `v` as a writable `[rows, cols]` row-major matrix.
pub(crate) fn mat_mut(v: &mut [f32], rows: usize, cols: usize) -> MatMut<'_, f32> {
    MatMut::from_row_major_slice_mut(&mut v[..rows * cols], rows, cols)
}

/// `out = a . b`, or `out += a . b` where `add`, on the calling thread (callers split the rows
/// over the pool themselves).
pub(crate) fn mul(out: MatMut<'_, f32>, add: bool, a: MatRef<'_, f32>, b: MatRef<'_, f32>) {
    let accum = if add { Accum::Add } else { Accum::Replace };
    matmul(out, accum, a, b, 1.0f32, Par::Seq);
    pulp::Arch::new().dispatch(ClearUpper);
}

/// faer's x86 kernels return with the upper halves of the vector registers set, and until they
/// are cleared every SSE instruction after them runs slowly (the rest of this crate is SSE
/// code; the loss's softmax ran about 30 times slower after a product). A function compiled for
/// AVX that uses a wide register ends with `vzeroupper`, which clears them.
struct ClearUpper;

impl pulp::WithSimd for ClearUpper {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) {
        std::hint::black_box(simd.splat_f32s(0.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `a[m, k] . b[k, n]` by the definition.
    fn naive(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).map(|t| a[i * k + t] * b[t * n + j]).sum();
            }
        }
        c
    }

    #[test]
    fn products_replace_add_and_read_transposed_views() {
        let (m, k, n) = (37, 19, 23);
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 13) as f32 - 6.0) / 4.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| ((i * 5 % 11) as f32 - 5.0) / 3.0).collect();
        let want = naive(&a, &b, m, k, n);
        let close =
            |got: &[f32], want: &[f32]| got.iter().zip(want).all(|(g, w)| (g - w).abs() <= 1e-4 * (1.0 + w.abs()));
        // Replace ignores what the output held.
        let mut c = vec![f32::NAN; m * n];
        mul(mat_mut(&mut c, m, n), false, mat(&a, m, k), mat(&b, k, n));
        assert!(close(&c, &want));
        // Add accumulates onto it.
        mul(mat_mut(&mut c, m, n), true, mat(&a, m, k), mat(&b, k, n));
        let twice: Vec<f32> = want.iter().map(|w| 2.0 * w).collect();
        assert!(close(&c, &twice));
        // a^T . c through a transposed view equals the product with a transposed copy.
        let mut at = vec![0.0; k * m];
        for i in 0..m {
            for t in 0..k {
                at[t * m + i] = a[i * k + t];
            }
        }
        let mut g = vec![0.0; k * n];
        mul(mat_mut(&mut g, k, n), false, mat(&a, m, k).transpose(), mat(&want, m, n));
        assert!(close(&g, &naive(&at, &want, k, m, n)));
    }
}
