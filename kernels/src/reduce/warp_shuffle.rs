//! Rung 5: the first add and the folded tree down to 64 sums; then warp 0 adds the last 64 with
//! shuffles, lane to lane in registers, with no shared memory and no barrier: five barriers fewer
//! per block, and no thread waiting on them.

use super::first_add::element_or_zero;
use super::{Reduce, THREADS, fold, warp_sum};
use ptxkit::device::{GlobalSlice, GlobalSliceMut, SharedSlice, WARP_SIZE, block_idx, sync_threads, thread_idx};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

shared_memory! {
    /// One partial sum per thread.
    pub struct Partials {
        pub sums: SharedSlice<f32> = THREADS,
    }
}

kernel! {
    /// `output[b]` = the sum of elements b·512 .. b·512 + 512 (those below n).
    pub unsafe fn reduce_warp_shuffle(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, _ticket: GlobalSliceMut<u32>, n: u32) {
        let Partials { sums } = Partials::carve();
        let t = thread_idx().x;
        let i = block_idx().x * 2 * THREADS + t;
        // SAFETY: the input holds n elements; t < THREADS.
        unsafe {
            let pair = element_or_zero(input, i, n) + element_or_zero(input, i.saturating_add(THREADS), n);
            sums.set_unchecked(t, pair);
        }
        // Every partial sum is staged before the first step reads them.
        sync_threads();
        // SAFETY: the block has THREADS threads.
        unsafe { fold(sums, WARP_SIZE) };
        if t < WARP_SIZE {
            // SAFETY: t + 32 < 64 ≤ THREADS.
            let sum = warp_sum(unsafe { sums.get_unchecked(t) + sums.get_unchecked(t + WARP_SIZE) });
            if t == 0 {
                // SAFETY: the caller gives one output per block.
                unsafe { output.set_unchecked(block_idx().x, sum) };
            }
        }
    }
}

/// One block per 512 elements.
pub const KERNEL: Kernel<Reduce> = Kernel {
    code: reduce_warp_shuffle,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Partials::BYTES),
    grid: |p, _| Dim3::x(p.n.div_ceil(2 * THREADS)),
};
