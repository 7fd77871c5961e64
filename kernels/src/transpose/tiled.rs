//! Tiled transpose: the block stages a 32×32 tile of the input in shared memory with coalesced
//! reads, meets at a barrier, and writes the tile's columns as coalesced output rows. Reading a
//! column of a dense 32-float-wide tile puts all 32 threads of a warp on one bank.

use super::{ROWS_PER_PASS, TILE, Transpose, grid};
use ptxkit::device::{GlobalSlice, GlobalSliceMut, MatrixLayout, SharedMatrix, block_idx, sync_threads, thread_idx};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

shared_memory! {
    /// One 32×32 tile of the input, rows back to back.
    pub struct Tile {
        pub tile: SharedMatrix<f32> = MatrixLayout::dense(TILE, TILE),
    }
}

/// The tiled algorithm over a tile stored as `layout` (dense, or padded in `padded`), with the
/// stored column of element (row, col) given by `column` (the identity, or an XOR in `swizzled`).
///
/// Thread (x, y) reads input element (by·32 + y + 8j, bx·32 + x) into tile (y + 8j, x), then, after
/// the barrier, writes output element (bx·32 + y + 8j, by·32 + x) from tile (x, y + 8j): both global
/// accesses are 32 consecutive floats per warp. Tile elements outside the matrix are never written
/// nor read.
///
/// # Safety
/// `input` and `output` hold rows × cols elements; the block is 32×8 threads; `tile` is 32×32 and
/// `column(r, c)` is a permutation of 0..32 for each r.
#[inline(always)]
pub(super) unsafe fn tiled_body(
    tile: SharedMatrix<f32>,
    column: impl Fn(u32, u32) -> u32,
    input: GlobalSlice<f32>,
    output: GlobalSliceMut<f32>,
    rows: u32,
    cols: u32,
) {
    let (x, y) = (thread_idx().x, thread_idx().y);
    let (tile_row, tile_col) = (block_idx().y * TILE, block_idx().x * TILE);
    for pass in 0..TILE / ROWS_PER_PASS {
        let (r, c) = (y + pass * ROWS_PER_PASS, x);
        let (row, col) = (tile_row + r, tile_col + c);
        if row < rows && col < cols {
            // SAFETY: inside the input; r, column(r, c) < 32, the tile's sides.
            unsafe { tile.set_unchecked(r, column(r, c), input.get_unchecked(row * cols + col)) };
        }
    }
    // The whole tile is staged before any thread reads another thread's element.
    sync_threads();
    for pass in 0..TILE / ROWS_PER_PASS {
        // Output row `col` (an input column), output column `row` (an input row).
        let (r, c) = (x, y + pass * ROWS_PER_PASS);
        let (row, col) = (tile_row + r, tile_col + c);
        if row < rows && col < cols {
            // SAFETY: as above; output element (col, row) of the cols × rows output.
            unsafe { output.set_unchecked(col * rows + row, tile.get_unchecked(r, column(r, c))) };
        }
    }
}

kernel! {
    /// The tiled transpose over a dense tile.
    pub unsafe fn transpose_tiled(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, rows: u32, cols: u32) {
        let Tile { tile } = Tile::carve();
        // SAFETY: forwarded from the kernel's contract; KERNEL launches 32×8 threads.
        unsafe { tiled_body(tile, |_, c| c, input, output, rows, cols) }
    }
}

/// 32×8 threads, one 32×32 tile per block.
pub const KERNEL: Kernel<Transpose> = Kernel {
    code: transpose_tiled,
    block: Dim3::xy(TILE, ROWS_PER_PASS),
    shared: SharedMemory::of(Tile::BYTES),
    grid: |p, _| grid(p, TILE),
};
