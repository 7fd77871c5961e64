//! One warp per row, eight rows per block: lane l combines elements l, l + 32, …, then the warp's
//! butterfly of shuffles. No shared memory, no barrier; rows past the last leave their warp idle.

use super::RowReduce;
use crate::reduce::{Combine, Max, Sum, THREADS, WARPS, warp_combine};
use ptxkit::device::{GlobalSlice, GlobalSliceMut, WARP_SIZE, block_idx, lane_id, thread_idx};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};

/// `output[r]` = row r (warp r % 8 of block r / 8) combined by `O`.
///
/// # Safety
/// `input` holds rows × cols elements, `output` rows; the block has THREADS threads.
#[inline(always)]
unsafe fn row_body<O: Combine>(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, rows: u32, cols: u32) {
    let row = block_idx().x * WARPS + thread_idx().x / WARP_SIZE;
    // The whole warp takes the same branch: the shuffles below see all 32 lanes.
    if row >= rows {
        return;
    }
    let base = row as usize * cols as usize;
    let mut mine = O::IDENTITY;
    let mut c = lane_id();
    while c < cols {
        // SAFETY: c < cols: inside row `row`.
        mine = O::combine(mine, unsafe { input.get_unchecked(base + c as usize) });
        c += WARP_SIZE;
    }
    let total = warp_combine::<O>(mine);
    if lane_id() == 0 {
        // SAFETY: row < rows: one output per row.
        unsafe { output.set_unchecked(row, total) };
    }
}

kernel! {
    /// `output[r]` = the sum of row r.
    pub unsafe fn row_sum_warp(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, _partials: GlobalSliceMut<f32>, _tickets: GlobalSliceMut<u32>, rows: u32, cols: u32) {
        // SAFETY: forwarded from the kernel's contract; SUM_KERNEL launches THREADS threads.
        unsafe { row_body::<Sum>(input, output, rows, cols) }
    }
}

kernel! {
    /// `output[r]` = the maximum of row r.
    pub unsafe fn row_max_warp(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, _partials: GlobalSliceMut<f32>, _tickets: GlobalSliceMut<u32>, rows: u32, cols: u32) {
        // SAFETY: forwarded from the kernel's contract; MAX_KERNEL launches THREADS threads.
        unsafe { row_body::<Max>(input, output, rows, cols) }
    }
}

/// Blocks of 256 threads, one warp per row.
pub const SUM_KERNEL: Kernel<RowReduce> = Kernel {
    code: row_sum_warp,
    block: Dim3::x(THREADS),
    shared: SharedMemory::NONE,
    grid: |p, _| Dim3::x(p.rows.div_ceil(WARPS)),
};

/// As [`SUM_KERNEL`], for the maximum.
pub const MAX_KERNEL: Kernel<RowReduce> = Kernel {
    code: row_max_warp,
    ..SUM_KERNEL
};
