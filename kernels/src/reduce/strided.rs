//! Rung 2: the same tree, with the working threads packed at the front: at step s thread t adds
//! at index 2st. No divergence inside a warp until fewer than 32 threads work, but the 32 lanes of
//! a warp touch words 2s apart: at s = 16 every lane hits the same bank (16-way conflicts).

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
    pub unsafe fn reduce_strided(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, _ticket: GlobalSliceMut<u32>, n: u32) {
        let Partials { sums } = Partials::carve();
        let t = thread_idx().x;
        let i = block_idx().x * block_dim().x + t;
        // SAFETY: read only below n, which the input holds; t < THREADS.
        unsafe { sums.set_unchecked(t, if i < n { input.get_unchecked(i) } else { 0.0 }) };
        // Every partial sum is staged before the first step reads them.
        sync_threads();
        let mut s = 1;
        while s < THREADS {
            let at = 2 * s * t;
            if at < THREADS {
                // SAFETY: at is a multiple of 2s below THREADS, so at + s < THREADS.
                unsafe { sums.set_unchecked(at, sums.get_unchecked(at) + sums.get_unchecked(at + s)) };
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
    code: reduce_strided,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Partials::BYTES),
    grid: |p, _| Dim3::x(p.n.div_ceil(THREADS)),
};
