//! Rung 2: the bf16 ladder's warp-specialised tiles ([`crate::matmul_bf16::specialized`]: a TMA
//! producer warpgroup, two `wgmma` consumers, a ring of slots handed over by `mbarrier`s, a
//! persistent grid) on FP8's `wgmma.m64nNk32.f32.e4m3.e4m3`. A slot holds the same bytes as the
//! bf16 tiles' (a step is 128 of k instead of 64); Bᵀ's rows lie k-major beside A's, and the sums
//! are multiplied by `scale_a · scale_b` on their way to C. 128×256, 128×128 and 128×64 tiles, and
//! 128×256 in clusters of two that copy Bᵀ's part of each step once for both. GPU-only (sm_90a).

use crate::matmul_bf16::specialized::{self, CLUSTER};

/// Defines `$name`, the TMA tile body on tiles `$bn` wide in clusters of `$ctas` (items of
/// `$unit` rows), each sum multiplied by the factor for its place of `$scales(scale_a, scale_b,
/// (m, n, k))` (an unsafe constructor of a [`crate::matmul::scale::Scale`] whose promise is the
/// kernel's contract).
macro_rules! scaled_tiles {
    ($(#[$meta:meta])* $name:ident, $bn:expr, $ctas:expr, $unit:expr, $scales:path) => {
        ptxkit::kernel_sm90a! {
            #[launch_bounds(ptxkit::Dim3::x($crate::matmul_bf16::specialized::THREADS), 1, cluster = $ctas)]
            $(#[$meta])*
            pub unsafe fn $name(a: *const ptxkit::device::fp8::E4M3, bt: *const ptxkit::device::fp8::E4M3, c: *mut ptxkit::device::mma::Bf16, m: u32, n: u32, k: u32, maps: *const $crate::matmul_bf16::TensorMaps, arrivals: *mut u32, partials: *mut f32, scale_a: *const f32, scale_b: *const f32) {
                // SAFETY: the kernel's contract: the scales hold the factors `$scales` reads, the
                // maps describe A and Bᵀ, the counters and partial sums are the launch's.
                unsafe {
                    $crate::matmul_bf16::specialized::body::run_in::<$crate::matmul_fp8::E4m3Tiles, true, { $bn }, ptxkit::device::mma::Bf16, { $ctas }, { $unit }>(
                        (a, bt, $scales(scale_a, scale_b, (m, n, k))), c, (m, n, k), maps, (arrivals, partials),
                    )
                }
            }
        }
    };
}
pub(crate) use scaled_tiles;

/// `$code` launched as the bf16 kernel `$same` is for the bf16 product of the same steps: the
/// same block, shared memory and grid.
macro_rules! launched_as {
    ($code:ident, $same:expr) => {
        ptxkit::Kernel {
            code: $code,
            block: $same.block,
            shared: $same.shared,
            grid: |p: &$crate::matmul_fp8::MatmulFp8, device| ($same.grid)(&p.same_steps(), device),
        }
    };
}
pub(crate) use launched_as;

/// Defines the TMA rung `$code` ([`scaled_tiles`]: tiles `$bn` wide in clusters of `$ctas`, items
/// of `$unit` rows, each sum times `$scales`'s factor) and `$constant`, its launch as the bf16
/// kernel `$same`'s ([`launched_as`]).
macro_rules! tma_rung {
    ($(#[$meta:meta])* $constant:ident = $code:ident($scales:path) as $same:path, $bn:expr, $ctas:expr, $unit:expr) => {
        $crate::matmul_fp8::scaled::scaled_tiles!($(#[$meta])* $code, $bn, $ctas, $unit, $scales);

        #[doc = concat!("`", stringify!($code), "`, launched as `", stringify!($same), "` is.")]
        pub const $constant: ptxkit::Kernel<$crate::matmul_fp8::MatmulFp8> =
            $crate::matmul_fp8::scaled::launched_as!($code, $same);
    };
}
pub(crate) use tma_rung;

tma_rung!(
    /// `C = scale_a · scale_b · (A·B)` by warp-specialised FP8 `wgmma` (e4m3, f32 sums, C rounded
    /// to bf16) on a persistent grid, 128×256 per tile.
    PERSISTENT = matmul_fp8_persistent(super::per_tensor) as specialized::KERNEL_PERSISTENT,
    specialized::BN, 1, specialized::BM
);
tma_rung!(
    /// As [`matmul_fp8_persistent`] on 128×128 tiles, six slots in the ring.
    PERSISTENT_128X128 = matmul_fp8_persistent_128x128(super::per_tensor) as specialized::KERNEL_PERSISTENT_128X128,
    specialized::BN_NARROW, 1, specialized::BM
);
tma_rung!(
    /// As [`matmul_fp8_persistent`] on 128×64 tiles, eight slots in the ring.
    PERSISTENT_128X64 = matmul_fp8_persistent_128x64(super::per_tensor) as specialized::KERNEL_PERSISTENT_128X64,
    specialized::BN_NARROWEST, 1, specialized::BM
);
tma_rung!(
    /// As [`matmul_fp8_persistent`], the blocks in pairs (clusters of two) that take two tiles
    /// one above the other and copy Bᵀ's part of each step once for both.
    CLUSTERED = matmul_fp8_clustered(super::per_tensor) as specialized::KERNEL_CLUSTERED,
    specialized::BN, CLUSTER, specialized::CLUSTER_ROWS
);
