//! Rung 5: long rows in the registers of one large block per row: 32 elements per thread, one read
//! and one write of each element. [`KERNEL`] (1024 threads, rows up to [`WIDE_COLS`] = 32768) fills
//! an SM with one block (64 registers per thread), so a row's 128 KiB of loads are all in flight at
//! once; what the SM does not overlap is the reduction between the loads and the stores.
//! [`KERNEL_512`] (512 threads, rows up to 16384) keeps the same 32 elements per thread, so two
//! rows share an SM and one's loads overlap the other's reductions: at 16384 columns the 1024-thread
//! block held only 16 elements per thread and one row per SM (docs/perf-log.md, change 27). Longer
//! rows are read twice, as in the online rung. The register rung's body
//! ([`super::registers::row_in_registers`]) with 8 vectors per thread. (512 threads with 16
//! vectors each spilled at their 128 registers.)

use super::online::online_row;
use super::registers::row_in_registers;
use super::{Softmax, block_max, block_sum, grid, row_views};
use ptxkit::device::{GlobalSlice, GlobalSliceMut, SharedSlice, WARP_SIZE, block_idx, thread_idx};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

/// Threads per block of [`KERNEL`].
pub const THREADS: u32 = 1024;
/// Threads per block of [`KERNEL_512`].
pub const THREADS_512: u32 = 512;
/// Warps of the largest block: the reductions' slots.
const MAX_WARPS: u32 = THREADS / WARP_SIZE;
/// 16-byte vectors each thread holds.
pub const VECTORS: u32 = 8;
/// The longest row [`KERNEL`] holds in registers.
pub const WIDE_COLS: u32 = THREADS * 4 * VECTORS;
/// The longest row [`KERNEL_512`] holds in registers.
pub const WIDE_512_COLS: u32 = THREADS_512 * 4 * VECTORS;

shared_memory! {
    /// One maximum and one sum per warp.
    pub struct WidePairs {
        pub maxes: SharedSlice<f32> = MAX_WARPS,
        pub sums: SharedSlice<f32> = MAX_WARPS,
    }
}

/// Block r: the softmax of row r, by a block of `THREADS` threads (`WARPS` warps).
///
/// # Safety
/// The kernels' contract (`input`, `output` hold rows·cols elements, the grid a block per row);
/// the block has `THREADS` threads and [`WidePairs::BYTES`] of dynamic shared memory.
#[inline(always)]
unsafe fn wide_row<const THREADS: u32, const WARPS: u32>(
    input: GlobalSlice<f32>,
    output: GlobalSliceMut<f32>,
    cols: u32,
) {
    const { assert!(WARPS * WARP_SIZE == THREADS && WARPS <= MAX_WARPS) };
    let WidePairs { maxes, sums } = WidePairs::carve();
    let row = block_idx().x;
    if cols > THREADS * 4 * VECTORS {
        // SAFETY: forwarded from the caller.
        unsafe { online_row::<THREADS, WARPS>((maxes, sums), input, output, row, cols) };
        return;
    }
    let base = row as usize * cols as usize;
    // SAFETY: the row is inside the matrix; the block has THREADS threads, all calling both
    // reductions.
    unsafe {
        row_in_registers::<VECTORS>(
            row_views((input, output), base, cols),
            cols,
            (thread_idx().x, THREADS),
            |m| block_max::<WARPS>(maxes, m),
            |s| block_sum::<WARPS>(sums, s),
        )
    };
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 1)]
    /// Block r: the softmax of row r, 1024 threads.
    pub unsafe fn softmax_wide(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, _rows: u32, cols: u32) {
        // SAFETY: forwarded from the kernel's contract; KERNEL launches THREADS threads.
        unsafe { wide_row::<THREADS, { THREADS / WARP_SIZE }>(input, output, cols) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS_512), 2)]
    /// Block r: the softmax of row r, 512 threads.
    pub unsafe fn softmax_wide_512(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, _rows: u32, cols: u32) {
        // SAFETY: forwarded from the kernel's contract; KERNEL_512 launches THREADS_512 threads.
        unsafe { wide_row::<THREADS_512, { THREADS_512 / WARP_SIZE }>(input, output, cols) }
    }
}

/// One block of 1024 threads per row, alone on its SM (at most 64 registers).
pub const KERNEL: Kernel<Softmax> = Kernel {
    code: softmax_wide,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(WidePairs::BYTES),
    grid,
};

/// One block of 512 threads per row, two per SM (at most 64 registers).
pub const KERNEL_512: Kernel<Softmax> = Kernel {
    code: softmax_wide_512,
    block: Dim3::x(THREADS_512),
    shared: SharedMemory::of(WidePairs::BYTES),
    grid,
};
