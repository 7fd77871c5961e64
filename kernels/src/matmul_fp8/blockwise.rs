//! The FP8 products with block scales (DeepSeek-V3's): a factor per row of A and block of 128 of
//! k (1×128), and per block of 128 of k and of 128 columns of B (128×128) ([`BlockScales`]). Each
//! block of k is one step of the tiles: its sums land in registers of their own, and go, times
//! their factors, into f32 totals (the promotion the public FP8 kernels make to keep accuracy).
//! The tiled rung ([`super::tiled`]) and the TMA tiles of 128×128 and 128×64 ([`super::scaled`];
//! 128×256 would need 256 registers for its sums and totals).

use super::BlockScales;
use super::scaled::tma_rung;
use super::swapped::swapped_rung;
use super::tiled::tiled_rung;
use crate::matmul_bf16::specialized;
use ptxkit::Family;

tiled_rung!(
    /// `C = Σ_blocks (a[block][i] · b[j / 128][block]) · (A·B over the block)` (e4m3 A and Bᵀ,
    /// f32 sums and totals, C rounded to bf16) with 32×32 shared-memory tiles.
    TILED = matmul_fp8_blockwise_tiled(BlockScales::new)
);
tma_rung!(
    /// As [`super::scaled::matmul_fp8_persistent_128x128`], with block scales.
    PERSISTENT_128X128 = matmul_fp8_blockwise_persistent_128x128(BlockScales::new) as specialized::KERNEL_PERSISTENT_128X128,
    specialized::BN_NARROW, 1, specialized::BM
);
tma_rung!(
    /// As [`super::scaled::matmul_fp8_persistent_128x64`], with block scales.
    PERSISTENT_128X64 = matmul_fp8_blockwise_persistent_128x64(BlockScales::new) as specialized::KERNEL_PERSISTENT_128X64,
    specialized::BN_NARROWEST, 1, specialized::BM
);
swapped_rung!(
    /// As [`super::swapped::matmul_fp8_swapped`], with block scales: each step's sums into f32
    /// totals (a strip's 128 columns lie in one block of B's).
    SWAPPED = matmul_fp8_blockwise_swapped(BlockScales::new)
);

/// The block-scaled FP8 matmul kernels, in ladder order.
pub const FAMILY: Family<super::MatmulFp8> = Family::new(
    "matmul_fp8_blockwise",
    &[TILED, PERSISTENT_128X128, PERSISTENT_128X64, SWAPPED],
);
