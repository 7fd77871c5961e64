//! `C = A·B` for row-major `A` (m×k), `B` (k×n) and `C` (m×n), any m, n, k ≥ 1: one idea per file.
//!
//! * [`naive`]: one thread per output element, every operand read from global memory;
//! * [`tiled`]: 32×32 tiles of A and B staged in shared memory and reused by the whole block;
//! * [`padded`]: the same with each tile row padded by one element against bank conflicts;
//! * [`register_1d`]: a 64×64 tile per block, a column of 8 outputs per thread in registers;
//! * [`register_2d`]: a 128×128 tile per block, an 8×8 block of outputs per thread in registers,
//!   outer products of 8-element columns of A and rows of B read from shared memory;
//! * [`vectorized`]: the same with 16-byte global loads and stores and 16-byte shared reads;
//! * [`double_buffered`]: the slices of the next step copied with `cp.async` while the current one
//!   is multiplied;
//! * [`warp_tiled`]: 64×32 warp tiles, each lane's outputs spread as 2×2 blocks of 4×4 (shared
//!   reads without bank conflicts), the next step prefetched into registers; at 128×128, 128×64
//!   and 64×64 tiles per block, among which the host chooses for the device and the shape;
//! * [`multistage`]: warp tiles (128×128 and 128×256 wide, 128×64) fed through a three-stage
//!   `cp.async` pipeline, each k's fragments read before the previous k's products (the form of
//!   cuBLAS's SIMT SGEMM);
//! * [`split_k`]: the warp tiles (64×64, 128×64, 64×128) with k split across the grid's third
//!   dimension, each block's products added into C, for products with too few tiles to fill the GPU;
//! * [`small_m`]: for A of 1–8 rows (decoding), B streamed once by blocks that each take a strip
//!   of its columns and a run of k, at the copy ceiling's pace rather than a tile's;
//! * [`small_m16`]: the same for 9–16 rows, A's rows staged in shared memory.
//!
//! [`small_m_mma`] is [`small_m`] on the tensor cores for up to 16 rows, the TF32 and bf16 ladders'
//! rung (no f32 kernel: the tensor cores do not multiply f32 exactly).
//!
//! [`k_runs`], [`tile_order`] and [`scale`] are shared with the tensor-core ladders: how runs of
//! k meet in C, the order a persistent grid takes the tiles in, and what the sums are multiplied
//! by on their way to C.
//!
//! A new variant is a file here, its line in [`FAMILY`], and its CUDA C twin in `benches/reference/cuda_c/`.

pub mod double_buffered;
pub mod k_runs;
pub mod multistage;
pub mod naive;
pub mod output;
pub mod pad_rows;
pub mod padded;
pub mod register_1d;
pub mod register_2d;
pub mod scale;
pub mod small_m;
pub mod small_m16;
pub mod small_m_mma;
pub mod split_k;
pub mod tile_order;
pub mod tiled;
pub mod vectorized;
pub mod warp_tiled;

use ptxkit::{Family, Problem};

/// The sizes of one product: A is m×k, B k×n, C m×n.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Matmul {
    pub m: u32,
    pub n: u32,
    pub k: u32,
}

impl Problem for Matmul {
    /// `(a, b, c, m, n, k, arrivals)`. `arrivals` is for the kernels that split k ([`k_runs`]): a
    /// zeroed counter per tile of C where a launch splits it ([`arrivals_needed`]); the other kernels
    /// ignore it (null will do).
    type Args = (*const f32, *const f32, *mut f32, u32, u32, u32, *mut u32);
}

/// Every matmul kernel, in ladder order: the registry's list.
pub const FAMILY: Family<Matmul> = Family::new(
    "matmul",
    &[
        naive::KERNEL,
        tiled::KERNEL,
        padded::KERNEL,
        register_1d::KERNEL,
        register_2d::KERNEL,
        vectorized::KERNEL,
        double_buffered::KERNEL,
        warp_tiled::KERNEL,
        warp_tiled::KERNEL_128X64,
        warp_tiled::KERNEL_64X64,
        warp_tiled::KERNEL_128X128_WIDE,
        warp_tiled::KERNEL_128X256_WIDE,
        multistage::KERNEL,
        multistage::KERNEL_128X256,
        multistage::KERNEL_128X64,
        split_k::KERNEL,
        split_k::KERNEL_128X64,
        split_k::KERNEL_64X128,
        split_k::KERNEL_MULTISTAGE,
        split_k::KERNEL_MULTISTAGE_128X64,
        small_m::KERNEL_M1,
        small_m::KERNEL_M4,
        small_m::KERNEL_M8,
        small_m16::KERNEL,
    ],
);

/// The zeroed counters `arrivals` must hold for a launch of `kernel` on `grid` ([`k_runs::counters`]:
/// split-k's and the small-m kernels split k).
#[cfg(not(target_arch = "nvptx64"))]
pub fn arrivals_needed(kernel: &ptxkit::Kernel<Matmul>, grid: ptxkit::Dim3) -> usize {
    k_runs::counters(
        split_k::KERNELS
            .iter()
            .chain(&small_m::KERNELS)
            .chain([&small_m16::KERNEL]),
        kernel,
        grid,
    )
}

#[cfg(not(target_arch = "nvptx64"))]
impl Matmul {
    /// m, n, k at least 1, and each matrix within the kernels' 32-bit index range.
    pub fn new(m: usize, n: usize, k: usize) -> Result<Self, ptxkit::InvalidSize> {
        let invalid = |reason: String| ptxkit::InvalidSize {
            problem: "matmul",
            reason,
        };
        if m == 0 || n == 0 || k == 0 {
            return Err(invalid(format!(
                "m, n and k must be at least 1 (got m = {m}, n = {n}, k = {k})"
            )));
        }
        for (what, rows, cols) in [("A", m, k), ("B", k, n), ("C", m, n)] {
            if !crate::size::fits_u32_index(rows, cols) {
                return Err(invalid(format!(
                    "{what} would be {rows}×{cols} elements, beyond the kernels' 32-bit index range (at most {} elements)",
                    u32::MAX
                )));
            }
        }
        // Each fits in u32: its products with 1 ≤ the other dimension fit.
        Ok(Matmul {
            m: m as u32,
            n: n as u32,
            k: k as u32,
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
