//! Rung 2: each block counts into its own 256 bins in shared memory (atomics on chip, contended
//! only by the block's own threads), then adds each non-zero bin to the global bins: 256 global
//! atomics per block instead of one per element.

use super::{BINS, Histogram, THREADS, grid};
use ptxkit::device::{GlobalSlice, GlobalSliceMut, SharedSlice, block_idx, grid_dim, sync_threads, thread_idx};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

shared_memory! {
    /// The block's bins.
    pub struct BlockBins {
        pub counts: SharedSlice<u32> = BINS,
    }
}

kernel! {
    /// `bins[input[i]] += 1` for every i < n: per block in shared memory, then merged.
    pub unsafe fn histogram_shared(input: GlobalSlice<u8>, bins: GlobalSliceMut<u32>, n: u32) {
        let BlockBins { counts } = BlockBins::carve();
        let t = thread_idx().x;
        // One bin per thread (THREADS == BINS).
        counts.set(t, 0);
        // Every bin is zero before any thread counts into it.
        sync_threads();
        let threads = grid_dim().x * THREADS;
        let mut i = block_idx().x * THREADS + t;
        while i < n {
            // SAFETY: i < n.
            counts.atomic_add(unsafe { input.get_unchecked(i) } as u32, 1);
            i += threads;
        }
        // Every count is in before the bins are read.
        sync_threads();
        let count = counts.get(t);
        if count != 0 {
            // SAFETY: t < 256: a bin.
            unsafe { bins.at_unchecked(t) }.red_add(count);
        }
    }
}

/// At most the resident blocks, of 256 threads; 1 KiB of bins each.
pub const KERNEL: Kernel<Histogram> = Kernel {
    code: histogram_shared,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(BlockBins::BYTES),
    grid: |p, _| grid(p, THREADS),
};
