//! Rung 2: each block counts into its own 256 bins in shared memory, then adds each non-zero bin to
//! the global bins: 256 global atomics per block instead of one per sample.

use super::{BINS, HistogramF32, THREADS, bin, grid, scale};
use ptxkit::device::{GlobalSlice, GlobalSliceMut, SharedSlice, block_idx, grid_dim, sync_threads, thread_idx};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

shared_memory! {
    /// The block's bins.
    pub struct BlockBins {
        pub counts: SharedSlice<u32> = BINS,
    }
}

kernel! {
    /// `bins[bin(input[i])] += 1` for every i < n in range: per block in shared memory, then merged.
    pub unsafe fn histogram_f32_shared(input: GlobalSlice<f32>, bins: GlobalSliceMut<u32>, n: u32, lo: f32, hi: f32) {
        let BlockBins { counts } = BlockBins::carve();
        let t = thread_idx().x;
        // One bin per thread (THREADS == BINS).
        counts.set(t, 0);
        // Every bin is zero before any thread counts into it.
        sync_threads();
        let s = scale(lo, hi);
        let threads = grid_dim().x * THREADS;
        let mut i = block_idx().x * THREADS + t;
        while i < n {
            // SAFETY: i < n.
            if let Some(b) = bin(unsafe { input.get_unchecked(i) }, lo, hi, s) {
                counts.atomic_add(b, 1);
            }
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
pub const KERNEL: Kernel<HistogramF32> = Kernel {
    code: histogram_f32_shared,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(BlockBins::BYTES),
    grid: |p, _| grid(p, THREADS),
};
