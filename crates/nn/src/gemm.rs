//! Matrix products on row-major slices, written in place, through faer's safe API.
//!
//! burn's product needs both operands as tensors (a copy of each) and returns a fresh one (a
//! third copy), and those copies were a tenth of a training step; gemm's own API is unsafe,
//! which meeple forbids. The figures before and after are in docs/learning.md, "Network speed".

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
