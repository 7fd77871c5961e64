//! One block of 256 threads per row: thread t combines elements t, t + 256, …, then the block
//! combines the threads' results.

use super::RowReduce;
use crate::reduce::{Combine, Max, Sum, THREADS, WARPS, block_combine};
use ptxkit::device::{GlobalSlice, GlobalSliceMut, SharedSlice, block_idx, thread_idx};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

shared_memory! {
    /// One result per warp.
    pub struct WarpResults {
        pub partials: SharedSlice<f32> = WARPS,
    }
}

/// `output[r]` = row r (block r) combined by `O`.
///
/// # Safety
/// `input` holds rows × cols elements, `output` rows; the block has THREADS threads.
#[inline(always)]
unsafe fn row_body<O: Combine>(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, cols: u32) {
    let WarpResults { partials } = WarpResults::carve();
    let row = block_idx().x;
    let base = row as usize * cols as usize;
    let mut mine = O::IDENTITY;
    let mut c = thread_idx().x;
    while c < cols {
        // SAFETY: c < cols: inside row `row`.
        mine = O::combine(mine, unsafe { input.get_unchecked(base + c as usize) });
        c += THREADS;
    }
    // SAFETY: the block has THREADS threads.
    let total = unsafe { block_combine::<O>(partials, mine) };
    if thread_idx().x == 0 {
        // SAFETY: one output per row.
        unsafe { output.set_unchecked(row, total) };
    }
}

kernel! {
    /// `output[r]` = the sum of row r.
    pub unsafe fn row_sum_block(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, _partials: GlobalSliceMut<f32>, _tickets: GlobalSliceMut<u32>, _rows: u32, cols: u32) {
        // SAFETY: forwarded from the kernel's contract; SUM_KERNEL launches THREADS threads.
        unsafe { row_body::<Sum>(input, output, cols) }
    }
}

kernel! {
    /// `output[r]` = the maximum of row r.
    pub unsafe fn row_max_block(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, _partials: GlobalSliceMut<f32>, _tickets: GlobalSliceMut<u32>, _rows: u32, cols: u32) {
        // SAFETY: forwarded from the kernel's contract; MAX_KERNEL launches THREADS threads.
        unsafe { row_body::<Max>(input, output, cols) }
    }
}

/// One block of 256 threads per row.
pub const SUM_KERNEL: Kernel<RowReduce> = Kernel {
    code: row_sum_block,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(WarpResults::BYTES),
    grid: |p, _| Dim3::x(p.rows),
};

/// As [`SUM_KERNEL`], for the maximum.
pub const MAX_KERNEL: Kernel<RowReduce> = Kernel {
    code: row_max_block,
    ..SUM_KERNEL
};
