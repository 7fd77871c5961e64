//! Rung 1: 32×32 tiles of C, a thread per element, on the CUDA cores. Each step stages a 32×32
//! tile of A and one of Bᵀ in shared memory, each FP8 widened to f32 once as it is staged
//! (exact: every e4m3 is an f32), then each thread takes its dot-product slice. Bᵀ's tile is
//! padded by a column: a warp reads down its columns. Elements outside A or Bᵀ stage as zeros.
//! With block scales each block of 128 of k (four steps) is summed on its own and added, times its
//! factor, into an f32 total.

use super::{MatmulFp8, TensorMaps, per_tensor};
use crate::matmul::output::Out;
use crate::matmul::scale::{SCALE_BLOCK_K, Scale, per_block};
use ptxkit::device::fp8::E4M3;
use ptxkit::device::mma::Bf16;
use ptxkit::device::{MatrixLayout, SharedMatrix, block_idx, fma, sync_threads, thread_idx, unrolled};
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory, kernel, shared_memory};

/// Tile side: a block is TILE×TILE threads.
pub const TILE: u32 = 32;

shared_memory! {
    /// A 32×32 tile of A (rows of C by k) and one of Bᵀ (columns of C by k), as f32.
    pub struct Tiles {
        pub a: SharedMatrix<f32> = MatrixLayout::dense(TILE, TILE),
        pub bt: SharedMatrix<f32> = MatrixLayout::padded(TILE, TILE),
    }
}

/// Element `(row, col)` of a row-major FP8 matrix `cols` wide widened to f32, or zero outside
/// `rows × cols`.
///
/// # Safety
/// `matrix` holds `rows × cols` elements.
#[inline(always)]
unsafe fn widened(matrix: *const E4M3, (rows, cols): (u32, u32), (row, col): (u32, u32)) -> f32 {
    if row < rows && col < cols {
        // SAFETY: inside the matrix, by the caller's promise.
        unsafe { (*matrix.add((row * cols + col) as usize)).to_f32() }
    } else {
        0.0
    }
}

/// The rung's body: C's tile of this block, each sum multiplied by `scale`'s factor for its
/// place (or, per block of k, each block's sum by its factor, into an f32 total).
///
/// # Safety
/// The kernel's contract: A holds m×k, Bᵀ n×k and C m×n elements; launched as [`KERNEL`].
#[inline(always)]
pub unsafe fn run(a: *const E4M3, bt: *const E4M3, c: *mut Bf16, (m, n, k): (u32, u32, u32), scale: impl Scale) {
    let Tiles { a: a_tile, bt: bt_tile } = Tiles::carve();
    let (tx, ty) = (thread_idx().x, thread_idx().y);
    let (row0, col0) = (block_idx().y * TILE, block_idx().x * TILE);
    let (row, col) = (row0 + ty, col0 + tx);
    // The sum of this block of k (per-block factors), or of all of k.
    let (mut sum, mut total) = (0.0f32, 0.0f32);
    let steps = k.div_ceil(TILE);
    for step in 0..steps {
        let kk = step * TILE + tx;
        // SAFETY (loads): A holds m×k and Bᵀ n×k, by the caller's promise; (tiles) tx, ty and i
        // are below TILE, the tiles' sides.
        unsafe {
            a_tile.set_unchecked(ty, tx, widened(a, (m, k), (row0 + ty, kk)));
            bt_tile.set_unchecked(ty, tx, widened(bt, (n, k), (col0 + ty, kk)));
        }
        // The tiles are complete before anyone reads them...
        sync_threads();
        unrolled::<TILE>(|i| {
            sum = fma(
                unsafe { a_tile.get_unchecked(ty, i) },
                unsafe { bt_tile.get_unchecked(tx, i) },
                sum,
            )
        });
        // ...and everyone has read them before the next step overwrites them.
        sync_threads();
        let block = step * TILE / SCALE_BLOCK_K;
        if per_block(&scale) && (step + 1 == steps || (step + 1) * TILE / SCALE_BLOCK_K != block) {
            total = fma(sum, scale.at_block(block, row, col), total);
            sum = 0.0;
        }
    }
    if per_block(&scale) {
        sum = total;
    }
    if row < m && col < n {
        // SAFETY: C holds m×n, by the caller's promise.
        unsafe { Bf16::put(c.add((row * n + col) as usize), scale.at(row, col) * sum, false) };
    }
}

kernel! {
    /// `C = scale_a · scale_b · (A·B)` (e4m3 A and Bᵀ, f32 sums, C rounded to bf16) with 32×32
    /// shared-memory tiles.
    pub unsafe fn matmul_fp8_tiled(a: *const E4M3, bt: *const E4M3, c: *mut Bf16, m: u32, n: u32, k: u32, maps: *const TensorMaps, arrivals: *mut u32, partials: *mut f32, scale_a: *const f32, scale_b: *const f32) {
        // Plain loads, k in one run: no maps, counters or partials.
        let _ = (maps, arrivals, partials);
        // SAFETY: the kernel's contract (the scales one f32 each).
        unsafe { run(a, bt, c, (m, n, k), per_tensor(scale_a, scale_b, (m, n, k))) }
    }
}

/// Defines `$code`, this rung's kernel with each sum times `$scales(scale_a, scale_b, (m, n, k))`'s
/// factor (an unsafe constructor of a [`Scale`] whose promise is the kernel's contract), and
/// `$constant`, its launch as [`KERNEL`]'s.
macro_rules! tiled_rung {
    ($(#[$meta:meta])* $constant:ident = $code:ident($scales:path)) => {
        ptxkit::kernel! {
            $(#[$meta])*
            pub unsafe fn $code(a: *const ptxkit::device::fp8::E4M3, bt: *const ptxkit::device::fp8::E4M3, c: *mut ptxkit::device::mma::Bf16, m: u32, n: u32, k: u32, maps: *const $crate::matmul_bf16::TensorMaps, arrivals: *mut u32, partials: *mut f32, scale_a: *const f32, scale_b: *const f32) {
                // Plain loads, k in one run: no maps, counters or partials.
                let _ = (maps, arrivals, partials);
                // SAFETY: the kernel's contract (the scales hold the factors `$scales` reads).
                unsafe { $crate::matmul_fp8::tiled::run(a, bt, c, (m, n, k), $scales(scale_a, scale_b, (m, n, k))) }
            }
        }

        #[doc = concat!("`", stringify!($code), "`, launched as the tiled rung's `KERNEL` is.")]
        pub const $constant: ptxkit::Kernel<$crate::matmul_fp8::MatmulFp8> =
            ptxkit::Kernel { code: $code, ..$crate::matmul_fp8::tiled::KERNEL };
    };
}
pub(crate) use tiled_rung;

/// One block per 32×32 tile of C.
const fn grid(p: &MatmulFp8, _: Occupancy) -> Dim3 {
    Dim3::xy(p.n.div_ceil(TILE), p.m.div_ceil(TILE))
}

/// TILE×TILE threads, one per element of a C tile; the two tiles in shared memory.
pub const KERNEL: Kernel<MatmulFp8> = Kernel {
    code: matmul_fp8_tiled,
    block: Dim3::xy(TILE, TILE),
    shared: SharedMemory::of(Tiles::BYTES),
    grid,
};
