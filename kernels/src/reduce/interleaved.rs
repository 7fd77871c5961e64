//! Rung 1: a tree in shared memory with interleaved addressing. At step s (1, 2, 4, …) the threads
//! whose index is a multiple of 2s add the partial sum s to their right; the others idle. The
//! test `t % 2s == 0` is true for scattered threads of each warp: every warp stays busy until the
//! last steps, and diverges (the `%` costs too).

use super::{Reduce, THREADS};
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
    pub unsafe fn reduce_interleaved(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, _ticket: GlobalSliceMut<u32>, n: u32) {
        let Partials { sums } = Partials::carve();
        let t = thread_idx().x;
        let i = block_idx().x * block_dim().x + t;
        // SAFETY: read only below n, which the input holds; t < THREADS.
        unsafe { sums.set_unchecked(t, if i < n { input.get_unchecked(i) } else { 0.0 }) };
        // Every partial sum is staged before the first step reads them.
        sync_threads();
        let mut s = 1;
        while s < THREADS {
            // The modulo is this rung's cost, as in the classic kernel: kept as written.
            #[allow(clippy::manual_is_multiple_of)]
            if t % (2 * s) == 0 {
                // SAFETY: t is a multiple of 2s below THREADS, so t + s < THREADS.
                unsafe { sums.set_unchecked(t, sums.get_unchecked(t) + sums.get_unchecked(t + s)) };
            }
            // Step s is complete before step 2s reads its sums.
            sync_threads();
            s *= 2;
        }
        if t == 0 {
            // SAFETY: the caller gives one output per block.
            unsafe { output.set_unchecked(block_idx().x, sums.get_unchecked(0)) };
        }
    }
}

/// One block per 256 elements.
pub const KERNEL: Kernel<Reduce> = Kernel {
    code: reduce_interleaved,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Partials::BYTES),
    grid: |p, _| Dim3::x(p.n.div_ceil(THREADS)),
};
