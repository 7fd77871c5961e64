//! Rung 5: long rows in the registers of a 1024-thread block: 32 elements per thread hold rows of
//! up to [`WIDE_COLS`] = 32768 columns, one read and one write of each element. One block fills an
//! SM (64 registers per thread), so a row's 128 KiB of loads are all in flight at once; what the SM
//! does not overlap is the reduction between the loads and the stores. Longer rows are read twice,
//! as in the online rung. The register rung's body ([`super::registers::row_in_registers`]) with a
//! group of 1024 and 8 vectors per thread. (512 threads with 16 vectors each spilled at their 128
//! registers.)

use super::online::online_row;
use super::registers::row_in_registers;
use super::{Softmax, block_max, block_sum, grid};
use crate::device::{SharedSlice, WARP_SIZE, block_idx, thread_idx};
use crate::{Dim3, Kernel, LaunchBounds, SharedMemory, kernel, shared_memory};

/// Threads per block.
pub const THREADS: u32 = 1024;
/// Warps per block.
pub const WARPS: u32 = THREADS / WARP_SIZE;
/// 16-byte vectors each thread holds.
pub const VECTORS: u32 = 8;
/// The longest row held in registers.
pub const WIDE_COLS: u32 = THREADS * 4 * VECTORS;

shared_memory! {
    /// One maximum and one sum per warp.
    pub struct WidePairs {
        pub maxes: SharedSlice<f32> = WARPS,
        pub sums: SharedSlice<f32> = WARPS,
    }
}

kernel! {
    /// Block r: the softmax of row r.
    pub unsafe fn softmax_wide(input: *const f32, output: *mut f32, _rows: u32, cols: u32) {
        let WidePairs { maxes, sums } = WidePairs::carve();
        let row = block_idx().x;
        if cols > WIDE_COLS {
            // SAFETY: forwarded from the kernel's contract; KERNEL launches THREADS threads.
            unsafe { online_row::<THREADS, WARPS>((maxes, sums), input, output, row, cols) };
            return;
        }
        let base = row as usize * cols as usize;
        // SAFETY: the row is inside the matrix; the block has THREADS threads, all calling both
        // reductions.
        unsafe {
            row_in_registers::<VECTORS>(
                (input.wrapping_add(base), output.wrapping_add(base)),
                cols,
                (thread_idx().x, THREADS),
                |m| block_max::<WARPS>(maxes, m),
                |s| block_sum::<WARPS>(sums, s),
            )
        };
    }
}

/// One block of 1024 threads per row, alone on its SM (at most 64 registers).
pub const KERNEL: Kernel<Softmax> = Kernel {
    code: softmax_wide,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(WidePairs::BYTES),
    grid,
    bounds: LaunchBounds::min_blocks_per_sm(1),
};
