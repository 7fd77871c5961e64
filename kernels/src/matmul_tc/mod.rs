//! Matmul on the tensor cores with f32 operands: the same `C = A·B` as [`crate::matmul`], its
//! operands read as the tensor cores read them. A ladder of its own, because its precision is
//! not the f32 ladder's: TF32 keeps 10 of f32's 23 mantissa bits of each operand (products then
//! exact, sums in f32), so results are checked against the product of the operands as read
//! (`reference::Operands::Tf32`).
//!
//! * [`mma_tf32`]: `mma.sync` m16n8k8, a 64×64 tile per block of four warps (sm_80+, emulated).
//! * [`specialized`]: Hopper's `wgmma` with the operands' roles swapped (TF32 must be K-major in
//!   shared memory, which row-major B is not), a TMA producer warp and two consumer warpgroups on
//!   a persistent grid (sm_90a, GPU only); 256×128 tiles, or 128×128 where C has at most 128 rows.
//! * [`small_m`]: for A of a few rows (decoding), B streamed once on the CUDA cores with each
//!   operand cut to TF32 (the f32 ladder's [`crate::matmul::small_m`]).
//! * [`small_m16`]: for A of up to 16 rows, B streamed once into `mma.sync` m16n8k8 with A's
//!   rows as its 16 ([`crate::matmul::small_m_mma`]).
//!
//! A new rung is a file here and its line in [`FAMILY`].

pub mod mma_tf32;
pub mod small_m;
pub mod small_m16;
pub mod specialized;

use crate::matmul::Matmul;
pub use crate::matmul_bf16::TensorMaps;
use ptxkit::Family;
use ptxkit::Problem;

/// The sizes of one product (A m×k, B k×n, C m×n).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatmulTc {
    pub m: u32,
    pub n: u32,
    pub k: u32,
}

impl Problem for MatmulTc {
    /// `(a, b, c, m, n, k, maps, arrivals)`: `maps` the tensor maps of A and B for the TMA
    /// producer (null where there are none: that rung then copies by `cp.async`, and the others
    /// ignore it); `arrivals` the zeroed counters of the rungs that split k ([`arrivals_needed`];
    /// null elsewhere).
    type Args = (
        *const f32,
        *const f32,
        *mut f32,
        u32,
        u32,
        u32,
        *const TensorMaps,
        *mut u32,
    );
}

/// The tensor-core matmul kernels on f32, in ladder order: the registry's list.
pub const FAMILY: Family<MatmulTc> = Family::new(
    "matmul_tc",
    &[
        mma_tf32::KERNEL,
        specialized::KERNEL,
        small_m::KERNEL_M1,
        small_m::KERNEL_M4,
        small_m::KERNEL_M8,
        small_m16::KERNEL,
        specialized::KERNEL_128X128,
    ],
);

/// The zeroed counters `arrivals` must hold for a launch of `kernel` on `grid` for `problem`: the
/// small-m rungs split k across the grid's depth ([`crate::matmul::k_runs::counters`]), the
/// `wgmma` rung across its items where C has few tiles ([`specialized::counters`]).
#[cfg(not(target_arch = "nvptx64"))]
pub fn arrivals_needed(kernel: &ptxkit::Kernel<MatmulTc>, problem: &MatmulTc, grid: ptxkit::Dim3) -> usize {
    if specialized::tile_rows(kernel).is_some() {
        return specialized::counters(kernel, problem, grid);
    }
    crate::matmul::k_runs::counters(small_m::KERNELS.iter().chain([&small_m16::KERNEL]), kernel, grid)
}

#[cfg(not(target_arch = "nvptx64"))]
impl MatmulTc {
    /// m, n, k at least 1, and each matrix within the kernels' 32-bit index range (the f32
    /// ladder's rule).
    pub fn new(m: usize, n: usize, k: usize) -> Result<Self, ptxkit::InvalidSize> {
        let sizes = Matmul::new(m, n, k).map_err(|e| ptxkit::InvalidSize {
            problem: "matmul_tc",
            ..e
        })?;
        Ok(MatmulTc {
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
