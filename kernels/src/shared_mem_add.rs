//! The seed's shared-memory example: each thread stages `a[i] + b[i]` in shared memory, the block
//! meets at a barrier, then each thread adds its left neighbour's staged value to its own.

use crate::elementwise::Elementwise;
use ptxkit::device::{GlobalSlice, GlobalSliceMut, SharedSlice, block_dim, block_idx, sync_threads, thread_idx};
use ptxkit::{Dim3, Family, Kernel, SharedMemory, kernel, shared_memory};

/// Threads per block; the neighbour sum restarts at each block.
pub const BLOCK: u32 = 256;

shared_memory! {
    /// One staged sum per thread of the block.
    pub struct Staged {
        pub sums: SharedSlice<f32> = BLOCK,
    }
}

kernel! {
    /// With `s[t] = a[i] + b[i]` for thread `t` of the block: `out[i] = s[0]` for `t = 0`, else
    /// `s[t] + s[t - 1]`. Thread `t` of block `b` handles element `i = b·BLOCK + t`; the neighbour
    /// is always in the same block.
    pub unsafe fn shared_mem_add(a: GlobalSlice<f32>, b: GlobalSlice<f32>, out: GlobalSliceMut<f32>, n: u32) {
        let Staged { sums } = Staged::carve();
        let t = thread_idx().x;
        let i = block_idx().x * block_dim().x + t;
        // Threads past the end stage a value too, so that every thread reaches the barrier.
        // SAFETY: read only for i < n.
        let sum = if i < n { unsafe { a.get_unchecked(i) + b.get_unchecked(i) } } else { 0.0 };
        // SAFETY: t < BLOCK, the block size the registry launches with.
        unsafe { sums.set_unchecked(t, sum) };
        // Every thread's sum is staged before any thread reads its neighbour's.
        sync_threads();
        if i < n {
            // SAFETY: t and t - 1 are below BLOCK.
            let value = unsafe { if t == 0 { sums.get_unchecked(0) } else { sums.get_unchecked(t) + sums.get_unchecked(t - 1) } };
            // SAFETY: i < n.
            unsafe { out.at_unchecked(i).set(value) };
        }
    }
}

/// One thread per element, [`BLOCK`] threads per block, one f32 of shared memory per thread.
pub const KERNEL: Kernel<Elementwise> = Kernel {
    code: shared_mem_add,
    block: Dim3::x(BLOCK),
    shared: SharedMemory::of(Staged::BYTES),
    grid: |p, _| Dim3::x(p.n.div_ceil(BLOCK)),
};

/// The seed's neighbour sum: the registry's list of its kernels.
pub const FAMILY: Family<Elementwise> = Family::new("shared_mem_add", &[KERNEL]);
