//! Rung 3: the tree folded in halves: at step s (128, 64, …, 1) thread t < s adds the sum at
//! t + s. A warp's lanes touch 32 consecutive words (no bank conflicts) and whole warps drop out
//! together, but half the threads do nothing from the first step on.

use super::{Reduce, THREADS, fold};
use ptxkit::device::{GlobalSlice, GlobalSliceMut, SharedSlice, block_dim, block_idx, sync_threads, thread_idx};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

shared_memory! {
    /// One partial sum per thread.
    pub struct Partials {
        pub sums: SharedSlice<f32> = THREADS,
    }
}

kernel! {
    /// `output[b]` = the sum of elements b·256 .. b·256 + 256 (those below n).
    pub unsafe fn reduce_sequential(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, _ticket: GlobalSliceMut<u32>, n: u32) {
        let Partials { sums } = Partials::carve();
        let t = thread_idx().x;
        let i = block_idx().x * block_dim().x + t;
        // SAFETY: read only below n, which the input holds; t < THREADS.
        unsafe { sums.set_unchecked(t, if i < n { input.get_unchecked(i) } else { 0.0 }) };
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

/// One block per 256 elements.
pub const KERNEL: Kernel<Reduce> = Kernel {
    code: reduce_sequential,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Partials::BYTES),
    grid: |p, _| Dim3::x(p.n.div_ceil(THREADS)),
};
