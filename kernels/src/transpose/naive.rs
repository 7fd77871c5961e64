//! Naive transpose: no shared memory. A warp reads 32 consecutive elements of an input row (one
//! 128-byte line) and writes them down an output column, 32 lines for 128 bytes.

use super::{ROWS_PER_PASS, TILE, Transpose, grid};
use ptxkit::device::{GlobalSlice, GlobalSliceMut, block_idx, thread_idx};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};

kernel! {
    /// `output[c][r] = input[r][c]`: thread (x, y) of block (bx, by) moves column `bx·32 + x` of
    /// input rows `by·32 + y + 8j`, j = 0..4.
    pub unsafe fn transpose_naive(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, rows: u32, cols: u32) {
        let col = block_idx().x * TILE + thread_idx().x;
        let first_row = block_idx().y * TILE + thread_idx().y;
        if col < cols {
            for pass in 0..TILE / ROWS_PER_PASS {
                let row = first_row + pass * ROWS_PER_PASS;
                if row < rows {
                    // SAFETY: row < rows and col < cols: inside both rows × cols arrays.
                    unsafe { output.set_unchecked(col * rows + row, input.get_unchecked(row * cols + col)) };
                }
            }
        }
    }
}

/// 32×8 threads, one 32×32 tile of the input per block.
pub const KERNEL: Kernel<Transpose> = Kernel {
    code: transpose_naive,
    block: Dim3::xy(TILE, ROWS_PER_PASS),
    shared: SharedMemory::NONE,
    grid: |p, _| grid(p, TILE),
};
