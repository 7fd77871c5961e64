//! The FP8 rung for A of few rows: the bf16 ladder's roles-swapped body
//! ([`crate::matmul_bf16::swapped`]: Cᵀ = Bᵀ·Aᵀ, so that Bᵀ's rows are the instruction's 64-row
//! side and A's 16 rows its narrow N, on `wgmma.m64n16k32.f32.e4m3.e4m3`). A 128-row tile would
//! copy and multiply eight times the rows there are; here Bᵀ streams through once, in strips of
//! 128 columns and runs of k, both operands K-major in the same slots as the bf16 rung's (a step
//! is 128 of k). Each kind of scales has it: the factors multiply the sums on their way to C, or,
//! per block of k, each step's sums into f32 totals. GPU-only (sm_90a); the host gives tensor
//! maps of A and Bᵀ in [`A_BOX`] and [`B_BOX`].

use super::E4m3Tiles;
use crate::matmul_bf16::{specialized::TileFormat, swapped};

/// The TMA boxes (columns, rows): a step's 128 of k by A's 16 rows, and by 64 of Bᵀ's rows (an
/// atom's columns of C): the bf16 rung's bytes.
pub const A_BOX: (u32, u32) = (E4m3Tiles::STEP_K, swapped::ROWS);
pub const B_BOX: (u32, u32) = (E4m3Tiles::STEP_K, 64);

/// Defines `$code`, the swapped body on e4m3 with each sum times the factor for its place of
/// `$scales(scale_a, scale_b, (m, n, k))` (an unsafe constructor of a
/// [`crate::matmul::scale::Scale`] whose promise is the kernel's contract), and `$constant`, its
/// launch as the bf16 rung's for the bf16 product of the same steps.
macro_rules! swapped_rung {
    ($(#[$meta:meta])* $constant:ident = $code:ident($scales:path)) => {
        ptxkit::kernel_sm90a! {
            #[launch_bounds(ptxkit::Dim3::x($crate::matmul_bf16::swapped::THREADS), 2)]
            $(#[$meta])*
            pub unsafe fn $code(a: *const ptxkit::device::fp8::E4M3, bt: *const ptxkit::device::fp8::E4M3, c: *mut ptxkit::device::mma::Bf16, m: u32, n: u32, k: u32, maps: *const $crate::matmul_bf16::TensorMaps, arrivals: *mut u32, partials: *mut f32, scale_a: *const f32, scale_b: *const f32) {
                // The operands are read through the maps.
                let _ = (a, bt);
                // SAFETY: the kernel's contract: the scales hold the factors `$scales` reads, the
                // maps describe A and Bᵀ, the counters and partial sums are the launch's.
                unsafe {
                    $crate::matmul_bf16::swapped::body::run::<$crate::matmul_fp8::E4m3Tiles, ptxkit::device::mma::Bf16>(
                        c, (m, n, k), maps, (arrivals, partials), $scales(scale_a, scale_b, (m, n, k)),
                    )
                }
            }
        }

        #[doc = concat!("`", stringify!($code), "`, launched as `matmul_bf16_swapped` is.")]
        pub const $constant: ptxkit::Kernel<$crate::matmul_fp8::MatmulFp8> =
            $crate::matmul_fp8::scaled::launched_as!($code, $crate::matmul_bf16::swapped::KERNEL);
    };
}
pub(crate) use swapped_rung;

swapped_rung!(
    /// `C = scale_a · scale_b · (A·B)` for A of few rows (16 a block) as Cᵀ = Bᵀ·Aᵀ on FP8
    /// `wgmma` (e4m3, f32 sums, C rounded to bf16).
    SWAPPED = matmul_fp8_swapped(super::per_tensor)
);
