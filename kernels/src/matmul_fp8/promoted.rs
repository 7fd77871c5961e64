//! The FP8 products with row-wise scales and f32 totals every 128 of k, as PyTorch's
//! `torch._scaled_mm` without `use_fast_accum`: the row-wise products ([`super::rowwise`]) on the
//! block-scaled tiles' path ([`super::blockwise`]), each block of k's sums added into f32 totals
//! ([`Promoted`]) before the row's and column's factors multiply them. Tiles of at most 128
//! columns (sums and totals in 128 registers).

use super::scaled::{launched_as, scaled_tiles};
use super::{MatmulFp8, RowScales, TensorMaps, tiled};
use crate::matmul::scale::Promoted;
use crate::matmul_bf16::specialized;
use ptxkit::device::fp8::E4M3;
use ptxkit::device::mma::Bf16;
use ptxkit::{Family, Kernel, kernel};

/// Row-wise factors over f32 totals of each block of k.
///
/// # Safety
/// As for [`RowScales::new`].
#[inline(always)]
pub unsafe fn promoted_rows(a: *const f32, b: *const f32, sizes: (u32, u32, u32)) -> Promoted<RowScales> {
    // SAFETY: forwarded.
    Promoted(unsafe { RowScales::new(a, b, sizes) })
}

kernel! {
    /// `C[i][j] = scale_a[i] · scale_b[j] · (A·B)[i][j]` (e4m3 A and Bᵀ, f32 totals of each
    /// block of k, C rounded to bf16) with 32×32 shared-memory tiles.
    pub unsafe fn matmul_fp8_rowwise_promoted_tiled(a: *const E4M3, bt: *const E4M3, c: *mut Bf16, m: u32, n: u32, k: u32, maps: *const TensorMaps, arrivals: *mut u32, partials: *mut f32, scale_a: *const f32, scale_b: *const f32) {
        // Plain loads, k in one run: no maps, counters or partials.
        let _ = (maps, arrivals, partials);
        // SAFETY: the kernel's contract (scale_a holds m factors, scale_b n).
        unsafe { tiled::run(a, bt, c, (m, n, k), promoted_rows(scale_a, scale_b, (m, n, k))) }
    }
}

scaled_tiles!(
    /// As [`super::rowwise::matmul_fp8_rowwise_persistent_128x128`], with f32 totals of each
    /// block of k.
    matmul_fp8_rowwise_promoted_128x128, specialized::BN_NARROW, 1, specialized::BM, promoted_rows
);
scaled_tiles!(
    /// As [`super::rowwise::matmul_fp8_rowwise_persistent_128x64`], with f32 totals of each block
    /// of k.
    matmul_fp8_rowwise_promoted_128x64, specialized::BN_NARROWEST, 1, specialized::BM, promoted_rows
);

/// [`tiled::KERNEL`]'s launch.
pub const TILED: Kernel<MatmulFp8> = Kernel {
    code: matmul_fp8_rowwise_promoted_tiled,
    ..tiled::KERNEL
};

/// [`specialized::KERNEL_PERSISTENT_128X128`]'s launch.
pub const PERSISTENT_128X128: Kernel<MatmulFp8> = launched_as!(
    matmul_fp8_rowwise_promoted_128x128,
    specialized::KERNEL_PERSISTENT_128X128
);

/// [`specialized::KERNEL_PERSISTENT_128X64`]'s launch.
pub const PERSISTENT_128X64: Kernel<MatmulFp8> = launched_as!(
    matmul_fp8_rowwise_promoted_128x64,
    specialized::KERNEL_PERSISTENT_128X64
);

/// The row-wise FP8 matmul kernels with f32 totals of each block of k, in ladder order.
pub const FAMILY: Family<MatmulFp8> = Family::new(
    "matmul_fp8_rowwise_promoted",
    &[TILED, PERSISTENT_128X128, PERSISTENT_128X64],
);
