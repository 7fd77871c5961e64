//! The FP8 products with row-wise scales and f32 totals every 128 of k, as PyTorch's
//! `torch._scaled_mm` without `use_fast_accum`: the row-wise products ([`super::rowwise`]) on the
//! block-scaled tiles' path ([`super::blockwise`]), each block of k's sums added into f32 totals
//! ([`Promoted`]) before the row's and column's factors multiply them. Tiles of at most 128
//! columns (sums and totals in 128 registers).

use super::RowScales;
use super::scaled::tma_rung;
use super::swapped::swapped_rung;
use super::tiled::tiled_rung;
use crate::matmul::scale::Promoted;
use crate::matmul_bf16::specialized;
use ptxkit::Family;

/// Row-wise factors over f32 totals of each block of k.
///
/// # Safety
/// As for [`RowScales::new`].
#[inline(always)]
pub unsafe fn promoted_rows(a: *const f32, b: *const f32, sizes: (u32, u32, u32)) -> Promoted<RowScales> {
    // SAFETY: forwarded.
    Promoted(unsafe { RowScales::new(a, b, sizes) })
}

tiled_rung!(
    /// `C[i][j] = scale_a[i] · scale_b[j] · (A·B)[i][j]` (e4m3 A and Bᵀ, f32 totals of each
    /// block of k, C rounded to bf16) with 32×32 shared-memory tiles.
    TILED = matmul_fp8_rowwise_promoted_tiled(promoted_rows)
);
tma_rung!(
    /// As [`super::rowwise::matmul_fp8_rowwise_persistent_128x128`], with f32 totals of each
    /// block of k.
    PERSISTENT_128X128 = matmul_fp8_rowwise_promoted_128x128(promoted_rows) as specialized::KERNEL_PERSISTENT_128X128,
    specialized::BN_NARROW, 1, specialized::BM
);
tma_rung!(
    /// As [`super::rowwise::matmul_fp8_rowwise_persistent_128x64`], with f32 totals of each block
    /// of k.
    PERSISTENT_128X64 = matmul_fp8_rowwise_promoted_128x64(promoted_rows) as specialized::KERNEL_PERSISTENT_128X64,
    specialized::BN_NARROWEST, 1, specialized::BM
);
swapped_rung!(
    /// As [`super::swapped::matmul_fp8_swapped`], with row-wise scales over f32 totals of each
    /// block of k.
    SWAPPED = matmul_fp8_rowwise_promoted_swapped(promoted_rows)
);

/// The row-wise FP8 matmul kernels with f32 totals of each block of k, in ladder order.
pub const FAMILY: Family<super::MatmulFp8> = Family::new(
    "matmul_fp8_rowwise_promoted",
    &[TILED, PERSISTENT_128X128, PERSISTENT_128X64, SWAPPED],
);
