//! Tiled matmul: each block computes a TILE×TILE tile of C. For each step along k, the block stages a
//! TILE×TILE tile of A and one of B in shared memory, meets at a barrier, and every thread takes its
//! dot-product slice from shared memory: each global element is read once per block, not TILE times.

use super::Matmul;
use ptxkit::device::{MatrixLayout, SharedMatrix, block_idx, fma, global_store, sync_threads, thread_idx, unrolled};
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory, kernel, shared_memory};

/// Tile side: one thread per element of a tile, so a block is TILE×TILE = 1024 threads.
pub const TILE: u32 = 32;

shared_memory! {
    /// One 32×32 tile of A and one of B, rows back to back.
    pub struct Tiles {
        pub a: SharedMatrix<f32> = MatrixLayout::dense(TILE, TILE),
        pub b: SharedMatrix<f32> = MatrixLayout::dense(TILE, TILE),
    }
}

/// One block per TILE×TILE tile of the m×n output; the same grid serves the padded variant.
pub(super) const fn grid(p: &Matmul, _: Occupancy) -> Dim3 {
    Dim3::xy(p.n.div_ceil(TILE), p.m.div_ceil(TILE))
}

/// The tiled algorithm over two tiles of any layout (dense here, padded in `padded`). Thread
/// (tx, ty) loads A[row][step·TILE + tx] and B[step·TILE + ty][col] and accumulates
/// C[row][col], with row = by·TILE + ty and col = bx·TILE + tx. Elements outside A or B are staged
/// as zeros, so edge tiles need no special case in the inner loop.
///
/// # Safety
/// `a`, `b` and `c` hold m·k, k·n and m·n elements; the block is TILE×TILE threads; both tiles are
/// TILE×TILE.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn tiled_body(
    a_tile: SharedMatrix<f32>,
    b_tile: SharedMatrix<f32>,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    m: u32,
    n: u32,
    k: u32,
) {
    let (tx, ty) = (thread_idx().x, thread_idx().y);
    let row = block_idx().y * TILE + ty;
    let col = block_idx().x * TILE + tx;
    let mut sum = 0.0f32;
    for step in 0..k.div_ceil(TILE) {
        let a_col = step * TILE + tx;
        let b_row = step * TILE + ty;
        // SAFETY: each read is guarded by the bounds of A (m×k) and B (k×n).
        let a_value = if row < m && a_col < k {
            unsafe { *a.add((row * k + a_col) as usize) }
        } else {
            0.0
        };
        let b_value = if b_row < k && col < n {
            unsafe { *b.add((b_row * n + col) as usize) }
        } else {
            0.0
        };
        // SAFETY (every tile access below): tx, ty and i are below TILE, the tiles' sides.
        unsafe {
            a_tile.set_unchecked(ty, tx, a_value);
            b_tile.set_unchecked(ty, tx, b_value);
        }
        // The tiles are complete before anyone reads them...
        sync_threads();
        unrolled::<TILE>(|i| {
            sum = fma(
                unsafe { a_tile.get_unchecked(ty, i) },
                unsafe { b_tile.get_unchecked(i, tx) },
                sum,
            )
        });
        // ...and everyone has read them before the next step overwrites them.
        sync_threads();
    }
    if row < m && col < n {
        // SAFETY: row < m, col < n.
        unsafe { global_store(c.add((row * n + col) as usize), sum) };
    }
}

kernel! {
    /// `C = A·B` with dense 32×32 shared-memory tiles.
    pub unsafe fn matmul_tiled(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, _arrivals: *mut u32) {
        let Tiles { a: a_tile, b: b_tile } = Tiles::carve();
        // SAFETY: forwarded from the kernel's contract; KERNEL launches TILE×TILE threads.
        unsafe { tiled_body(a_tile, b_tile, a, b, c, m, n, k) }
    }
}

/// TILE×TILE threads, one per element of a C tile; two dense tiles of shared memory.
pub const KERNEL: Kernel<Matmul> = Kernel {
    code: matmul_tiled,
    block: Dim3::xy(TILE, TILE),
    shared: SharedMemory::of(Tiles::BYTES),
    grid,
};
