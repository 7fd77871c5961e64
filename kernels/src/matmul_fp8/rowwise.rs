//! The FP8 products with row-wise scales, as `torch._scaled_mm` takes an (m, 1) `scale_a` and a
//! (1, n) `scale_b`: C's element (i, j) is `scale_a[i] · scale_b[j] · (A·B)[i][j]`, the factors
//! applied to the f32 sums on their way to C ([`RowScales`]). The same rungs as the per-tensor
//! products ([`super::tiled`], [`super::scaled`]) but the clustered one: only the factor differs.

use super::RowScales;
use super::scaled::tma_rung;
use super::swapped::swapped_rung;
use super::tiled::tiled_rung;
use crate::matmul_bf16::specialized;
use ptxkit::Family;

tiled_rung!(
    /// `C[i][j] = scale_a[i] · scale_b[j] · (A·B)[i][j]` (e4m3 A and Bᵀ, f32 sums, C rounded to
    /// bf16) with 32×32 shared-memory tiles.
    TILED = matmul_fp8_rowwise_tiled(RowScales::new)
);
tma_rung!(
    /// As [`super::scaled::matmul_fp8_persistent`], with row-wise scales.
    PERSISTENT = matmul_fp8_rowwise_persistent(RowScales::new) as specialized::KERNEL_PERSISTENT,
    specialized::BN, 1, specialized::BM
);
tma_rung!(
    /// As [`super::scaled::matmul_fp8_persistent_128x128`], with row-wise scales.
    PERSISTENT_128X128 = matmul_fp8_rowwise_persistent_128x128(RowScales::new) as specialized::KERNEL_PERSISTENT_128X128,
    specialized::BN_NARROW, 1, specialized::BM
);
tma_rung!(
    /// As [`super::scaled::matmul_fp8_persistent_128x64`], with row-wise scales.
    PERSISTENT_128X64 = matmul_fp8_rowwise_persistent_128x64(RowScales::new) as specialized::KERNEL_PERSISTENT_128X64,
    specialized::BN_NARROWEST, 1, specialized::BM
);
swapped_rung!(
    /// As [`super::swapped::matmul_fp8_swapped`], with row-wise scales.
    SWAPPED = matmul_fp8_rowwise_swapped(RowScales::new)
);

/// The row-wise FP8 matmul kernels, in ladder order: the per-tensor family's rungs but the
/// clustered tile (whose consumers, holding the scales' addresses too, spill).
pub const FAMILY: Family<super::MatmulFp8> = Family::new(
    "matmul_fp8_rowwise",
    &[TILED, PERSISTENT, PERSISTENT_128X128, PERSISTENT_128X64, SWAPPED],
);
