//! Tiled matmul: each block computes a TILE×TILE tile of C. For each step along k, the block stages a
//! TILE×TILE tile of A and one of B in shared memory, meets at a barrier, and every thread takes its
//! dot-product slice from shared memory: each global element is read once per block, not TILE times.

use crate::device::{DynamicShared, MatrixLayout, block_idx, fma, sync_threads, thread_idx, unrolled};
use crate::kernel;
use crate::launch::{Dim3, KernelInfo, LaunchShape};

/// Tile side: one thread per element of a tile, so a block is TILE×TILE = 1024 threads.
pub const TILE: u32 = 32;

pub const TILE_LAYOUT: MatrixLayout = MatrixLayout::dense(TILE, TILE);

/// One tile of A and one of B.
pub const SHARED_BYTES: u32 = 2 * TILE_LAYOUT.bytes::<f32>();

pub const INFO: KernelInfo = KernelInfo {
    entry: "matmul_tiled",
    block: Dim3::xy(TILE, TILE),
    shared_bytes: SHARED_BYTES,
};

/// One block per TILE×TILE tile of the m×n output; the same shape serves the padded variant.
pub const fn launch_shape(m: u32, n: u32) -> LaunchShape {
    INFO.over(grid(m, n))
}

pub(super) const fn grid(m: u32, n: u32) -> Dim3 {
    Dim3::xy(n.div_ceil(TILE), m.div_ceil(TILE))
}

/// The tiled algorithm over tiles stored as `layout` says (dense here, padded in `padded`).
/// Elements outside A or B are staged as zeros, so edge tiles need no special case in the inner loop.
///
/// # Safety
/// `a`, `b` and `c` hold m·k, k·n and m·n elements; the block is TILE×TILE threads and has
/// `2 * layout.bytes::<f32>()` bytes of dynamic shared memory.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn tiled_body(
    layout: MatrixLayout,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    m: u32,
    n: u32,
    k: u32,
) {
    let mut shared = DynamicShared::new();
    let a_tile = shared.matrix::<f32>(layout);
    let b_tile = shared.matrix::<f32>(layout);
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
        a_tile.set(ty, tx, a_value);
        b_tile.set(ty, tx, b_value);
        // The tiles are complete before anyone reads them...
        sync_threads();
        unrolled::<TILE>(|i| sum = fma(a_tile.get(ty, i), b_tile.get(i, tx), sum));
        // ...and everyone has read them before the next step overwrites them.
        sync_threads();
    }
    if row < m && col < n {
        // SAFETY: row < m, col < n.
        unsafe { *c.add((row * n + col) as usize) = sum };
    }
}

kernel! {
    /// `C = A·B` with dense 32×32 shared-memory tiles.
    pub unsafe fn matmul_tiled(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        // SAFETY: forwarded from the kernel's contract; INFO launches TILE×TILE threads with
        // SHARED_BYTES of shared memory.
        unsafe { tiled_body(TILE_LAYOUT, a, b, c, m, n, k) }
    }
}
