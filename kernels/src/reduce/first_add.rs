//! Rung 4: the folded tree, with each thread adding two elements (256 apart) as it loads them:
//! 512 elements per block, half the blocks, and no thread idle at the first step.

use super::{Reduce, THREADS, fold};
use ptxkit::device::{GlobalSlice, GlobalSliceMut, SharedSlice, block_idx, sync_threads, thread_idx};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

shared_memory! {
    /// One partial sum per thread.
    pub struct Partials {
        pub sums: SharedSlice<f32> = THREADS,
    }
}

/// The element at `i`, or 0 past the end.
///
/// # Safety
/// `input` holds n elements.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(crate) unsafe fn element_or_zero(input: GlobalSlice<f32>, i: u32, n: u32) -> f32 {
    // SAFETY: read only below n.
    if i < n { unsafe { input.get_unchecked(i) } } else { 0.0 }
}

kernel! {
    /// `output[b]` = the sum of elements b·512 .. b·512 + 512 (those below n).
    pub unsafe fn reduce_first_add(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, _ticket: GlobalSliceMut<u32>, n: u32) {
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
        unsafe { fold(sums, 0) };
        if t == 0 {
            // SAFETY: the caller gives one output per block.
            unsafe { output.set_unchecked(block_idx().x, sums.get_unchecked(0)) };
        }
    }
}

/// One block per 512 elements.
pub const KERNEL: Kernel<Reduce> = Kernel {
    code: reduce_first_add,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Partials::BYTES),
    grid: |p, _| Dim3::x(p.n.div_ceil(2 * THREADS)),
};
