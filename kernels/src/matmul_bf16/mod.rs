//! `C = A·B` with bf16 operands on the tensor cores and f32 sums and output: the precision that
//! production matmuls run in. Row-major A (m×k) and B (k×n) of bf16, C (m×n) of f32, any m, n,
//! k ≥ 1. Each product of two bf16 is exact in f32, so the check is the f32 ladder's: the f64
//! product of the operands as given, within f32 accumulation's bound.
//!
//! * [`pipelined`]: `mma.sync` m16n8k16 fed by `ldmatrix` from padded shared tiles that `cp.async`
//!   fills four steps ahead.
//! * [`wgmma`]: Hopper's warpgroup multiply reading both operands from 128-byte-swizzled shared
//!   tiles (sm_90a, GPU only).
//! * [`specialized`]: a producer warpgroup copying and two consumer warpgroups multiplying
//!   128×256 tiles, handing slots over by `mbarrier`s, one `wgmma` group always in flight; and the
//!   same with the producer's copies made by TMA, and that on a persistent grid, on 128×256,
//!   128×128 or 128×64 tiles (sm_90a).
//! * [`small_m`]: for A of a few rows (decoding), B streamed once on the CUDA cores (the f32
//!   ladder's [`crate::matmul::small_m`] reading bf16).
//! * [`small_m16`]: for A of up to 16 rows, B streamed once into `mma.sync` m16n8k16 with A's
//!   rows as its 16, 16 bytes a load.
//! * [`swapped`]: for A of up to 16 rows on `wgmma` (sm_90a), the roles swapped (Cᵀ = Bᵀ·Aᵀ): B's
//!   columns the instruction's 64 rows, A's rows its N of 16, B streamed once by TMA.
//!
//! [`rounded`] is a family of its own: the same rungs with C rounded to bf16.
//!
//! A new rung is a file here and its line in [`FAMILY`].

pub mod pipelined;
pub mod rounded;
pub mod small_m;
pub mod small_m16;
pub mod specialized;
pub(crate) mod store;
pub mod swapped;
mod swizzled;
pub mod wgmma;

use ptxkit::device::mma::Bf16;
use ptxkit::{Family, Problem};

/// The sizes of one product: A is m×k, B k×n, C m×n.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatmulBf16 {
    pub m: u32,
    pub n: u32,
    pub k: u32,
}

impl Problem for MatmulBf16 {
    /// `(a, b, c, m, n, k, maps, arrivals)`: `maps` the tensor maps of A and B for the TMA rung
    /// (null where there are none; the other rungs ignore it); `arrivals` the zeroed counters of
    /// the rungs that split k ([`arrivals_needed`]; null elsewhere).
    type Args = (
        *const Bf16,
        *const Bf16,
        *mut f32,
        u32,
        u32,
        u32,
        *const TensorMaps,
        *mut u32,
    );
}

/// The tensor maps of A and of B that [`specialized`]'s TMA kernels and [`swapped`] copy tiles
/// by: 128 opaque bytes each, made by the host (`cuTensorMapEncodeTiled`, the 128-byte swizzle,
/// boxes [`specialized::A_BOX`] and [`specialized::B_BOX`], or [`swapped::A_BOX`] and
/// [`swapped::B_BOX`]) and kept in global memory.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(128))]
pub struct TensorMaps {
    pub a: [u64; 16],
    pub b: [u64; 16],
}

/// The bf16 matmul kernels, in ladder order: the registry's list.
pub const FAMILY: Family<MatmulBf16> = Family::new(
    "matmul_bf16",
    &[
        pipelined::KERNEL,
        wgmma::KERNEL,
        specialized::KERNEL,
        specialized::KERNEL_TMA,
        specialized::KERNEL_PERSISTENT,
        specialized::KERNEL_PERSISTENT_128X128,
        specialized::KERNEL_PERSISTENT_128X64,
        specialized::KERNEL_CLUSTERED,
        specialized::KERNEL_CLUSTERED_128X128,
        small_m::KERNEL_M1,
        small_m::KERNEL_M4,
        small_m::KERNEL_M8,
        small_m16::KERNEL,
        swapped::KERNEL,
    ],
);

/// The zeroed counters `arrivals` must hold for a launch of `kernel` on `grid` for `problem`: the
/// small-m rungs split k across the grid's depth ([`crate::matmul::k_runs::counters`]), the
/// persistent rung across its items where C has few tiles ([`specialized::counters`]).
#[cfg(not(target_arch = "nvptx64"))]
pub fn arrivals_needed(kernel: &ptxkit::Kernel<MatmulBf16>, problem: &MatmulBf16, grid: ptxkit::Dim3) -> usize {
    match specialized::clustered_width(kernel.entry()) {
        Some(specialized::BN) => return specialized::clustered_counters::<{ specialized::BN }>(problem, grid),
        Some(_) => return specialized::clustered_counters::<{ specialized::BN_NARROW }>(problem, grid),
        None => {}
    }
    match specialized::persistent_width(kernel.entry()) {
        Some(specialized::BN) => return specialized::counters::<{ specialized::BN }>(problem, grid),
        Some(specialized::BN_NARROW) => return specialized::counters::<{ specialized::BN_NARROW }>(problem, grid),
        Some(_) => return specialized::counters::<{ specialized::BN_NARROWEST }>(problem, grid),
        None => {}
    }
    if kernel.entry() == small_m16::KERNEL.entry() {
        return crate::matmul::k_runs::warp_counters(grid, small_m16::WARPS);
    }
    if kernel.entry() == swapped::KERNEL.entry() {
        return crate::matmul::k_runs::warp_counters(grid, swapped::WARPS);
    }
    crate::matmul::k_runs::counters(&small_m::KERNELS, kernel, grid)
}

#[cfg(not(target_arch = "nvptx64"))]
impl MatmulBf16 {
    /// m, n, k at least 1, and each matrix within the kernels' 32-bit index range (the f32
    /// ladder's rule).
    pub fn new(m: usize, n: usize, k: usize) -> Result<Self, ptxkit::InvalidSize> {
        let sizes = crate::matmul::Matmul::new(m, n, k).map_err(|e| ptxkit::InvalidSize {
            problem: "matmul_bf16",
            ..e
        })?;
        Ok(MatmulBf16 {
            m: sizes.m,
            n: sizes.n,
            k: sizes.k,
        })
    }

    /// Elements of A, B and C.
    pub fn lengths(&self) -> (usize, usize, usize) {
        let (m, n, k) = (self.m as usize, self.n as usize, self.k as usize);
        (m * k, k * n, m * n)
    }

    /// Floating-point operations of the product: one multiply and one add per term.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }
}
