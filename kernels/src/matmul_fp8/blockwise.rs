//! The FP8 products with block scales (DeepSeek-V3's): a factor per row of A and block of 128 of
//! k (1×128), and per block of 128 of k and of 128 columns of B (128×128) ([`BlockScales`]). Each
//! block of k is one step of the tiles: its sums land in registers of their own, and go, times
//! their factors, into f32 totals (the promotion the public FP8 kernels make to keep accuracy).
//! The tiled rung ([`super::tiled`]) and the TMA tiles of 128×128 and 128×64 ([`super::scaled`];
//! 128×256 would need 256 registers for its sums and totals).

use super::scaled::{launched_as, scaled_tiles};
use super::{BlockScales, MatmulFp8, TensorMaps, tiled};
use crate::matmul_bf16::specialized;
use ptxkit::device::fp8::E4M3;
use ptxkit::device::mma::Bf16;
use ptxkit::{Family, Kernel, kernel};

kernel! {
    /// `C = Σ_blocks (a[block][i] · b[j / 128][block]) · (A·B over the block)` (e4m3 A and Bᵀ,
    /// f32 sums and totals, C rounded to bf16) with 32×32 shared-memory tiles.
    pub unsafe fn matmul_fp8_blockwise_tiled(a: *const E4M3, bt: *const E4M3, c: *mut Bf16, m: u32, n: u32, k: u32, maps: *const TensorMaps, arrivals: *mut u32, partials: *mut f32, scale_a: *const f32, scale_b: *const f32) {
        // Plain loads, k in one run: no maps, counters or partials.
        let _ = (maps, arrivals, partials);
        // SAFETY: the kernel's contract (the scales hold the factors of `BlockScales::new`).
        unsafe { tiled::run(a, bt, c, (m, n, k), BlockScales::new(scale_a, scale_b, (m, n, k))) }
    }
}

scaled_tiles!(
    /// As [`super::scaled::matmul_fp8_persistent_128x128`], with block scales.
    matmul_fp8_blockwise_persistent_128x128, specialized::BN_NARROW, 1, specialized::BM, BlockScales::new
);
scaled_tiles!(
    /// As [`super::scaled::matmul_fp8_persistent_128x64`], with block scales.
    matmul_fp8_blockwise_persistent_128x64, specialized::BN_NARROWEST, 1, specialized::BM, BlockScales::new
);

/// [`tiled::KERNEL`]'s launch.
pub const TILED: Kernel<MatmulFp8> = Kernel {
    code: matmul_fp8_blockwise_tiled,
    ..tiled::KERNEL
};

/// [`specialized::KERNEL_PERSISTENT_128X128`]'s launch.
pub const PERSISTENT_128X128: Kernel<MatmulFp8> = launched_as!(
    matmul_fp8_blockwise_persistent_128x128,
    specialized::KERNEL_PERSISTENT_128X128
);

/// [`specialized::KERNEL_PERSISTENT_128X64`]'s launch.
pub const PERSISTENT_128X64: Kernel<MatmulFp8> = launched_as!(
    matmul_fp8_blockwise_persistent_128x64,
    specialized::KERNEL_PERSISTENT_128X64
);

/// The block-scaled FP8 matmul kernels, in ladder order.
pub const FAMILY: Family<MatmulFp8> =
    Family::new("matmul_fp8_blockwise", &[TILED, PERSISTENT_128X128, PERSISTENT_128X64]);
