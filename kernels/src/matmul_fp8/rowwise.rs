//! The FP8 products with row-wise scales, as `torch._scaled_mm` takes an (m, 1) `scale_a` and a
//! (1, n) `scale_b`: C's element (i, j) is `scale_a[i] · scale_b[j] · (A·B)[i][j]`, the factors
//! applied to the f32 sums on their way to C ([`RowScales`]). The same rungs as the per-tensor
//! products ([`super::tiled`], [`super::scaled`]) but the clustered one: only the factor differs.

use super::scaled::{launched_as, scaled_tiles};
use super::{MatmulFp8, RowScales, TensorMaps, tiled};
use crate::matmul_bf16::specialized;
use ptxkit::device::fp8::E4M3;
use ptxkit::device::mma::Bf16;
use ptxkit::{Family, Kernel, kernel};

kernel! {
    /// `C[i][j] = scale_a[i] · scale_b[j] · (A·B)[i][j]` (e4m3 A and Bᵀ, f32 sums, C rounded to
    /// bf16) with 32×32 shared-memory tiles.
    pub unsafe fn matmul_fp8_rowwise_tiled(a: *const E4M3, bt: *const E4M3, c: *mut Bf16, m: u32, n: u32, k: u32, maps: *const TensorMaps, arrivals: *mut u32, partials: *mut f32, scale_a: *const f32, scale_b: *const f32) {
        // Plain loads, k in one run: no maps, counters or partials.
        let _ = (maps, arrivals, partials);
        // SAFETY: the kernel's contract (scale_a holds m factors, scale_b n).
        unsafe { tiled::run(a, bt, c, (m, n, k), RowScales::new(scale_a, scale_b, (m, n, k))) }
    }
}

scaled_tiles!(
    /// As [`super::scaled::matmul_fp8_persistent`], with row-wise scales.
    matmul_fp8_rowwise_persistent, specialized::BN, 1, specialized::BM, RowScales::new
);
scaled_tiles!(
    /// As [`super::scaled::matmul_fp8_persistent_128x128`], with row-wise scales.
    matmul_fp8_rowwise_persistent_128x128, specialized::BN_NARROW, 1, specialized::BM, RowScales::new
);
scaled_tiles!(
    /// As [`super::scaled::matmul_fp8_persistent_128x64`], with row-wise scales.
    matmul_fp8_rowwise_persistent_128x64, specialized::BN_NARROWEST, 1, specialized::BM, RowScales::new
);
/// [`tiled::KERNEL`]'s launch.
pub const TILED: Kernel<MatmulFp8> = Kernel {
    code: matmul_fp8_rowwise_tiled,
    ..tiled::KERNEL
};

/// [`specialized::KERNEL_PERSISTENT`]'s launch.
pub const PERSISTENT: Kernel<MatmulFp8> = launched_as!(matmul_fp8_rowwise_persistent, specialized::KERNEL_PERSISTENT);

/// [`specialized::KERNEL_PERSISTENT_128X128`]'s launch.
pub const PERSISTENT_128X128: Kernel<MatmulFp8> = launched_as!(
    matmul_fp8_rowwise_persistent_128x128,
    specialized::KERNEL_PERSISTENT_128X128
);

/// [`specialized::KERNEL_PERSISTENT_128X64`]'s launch.
pub const PERSISTENT_128X64: Kernel<MatmulFp8> = launched_as!(
    matmul_fp8_rowwise_persistent_128x64,
    specialized::KERNEL_PERSISTENT_128X64
);

/// The row-wise FP8 matmul kernels, in ladder order: the per-tensor family's rungs but the
/// clustered tile (whose consumers, holding the scales' addresses too, spill).
pub const FAMILY: Family<MatmulFp8> = Family::new(
    "matmul_fp8_rowwise",
    &[TILED, PERSISTENT, PERSISTENT_128X128, PERSISTENT_128X64],
);
