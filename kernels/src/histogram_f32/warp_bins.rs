//! Rung 3: the bins privatised per warp (eight copies per block: warps no longer contend with each
//! other, only a warp's own lanes on equal bins), the input read 16 bytes per load, four samples
//! per load. The copies are summed per bin at the end and added to the global bins.

use super::{BINS, HistogramF32, THREADS, bin, grid, scale};
use ptxkit::device::{
    GlobalSlice, GlobalSliceMut, SharedSlice, WARP_SIZE, block_idx, grid_dim, is_aligned4, sync_threads, thread_idx,
    unrolled,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

/// Warps per block, each with its own bins.
pub const WARPS: u32 = THREADS / WARP_SIZE;

// Thread t zeroes and sums bin t of every warp's copy.
const _: () = assert!(THREADS == BINS);

shared_memory! {
    /// One set of bins per warp: warp w's bin b at w·256 + b.
    pub struct WarpBins {
        pub counts: SharedSlice<u32> = WARPS * BINS,
    }
}

kernel! {
    /// `bins[bin(input[i])] += 1` for every i < n in range: per warp in shared memory, four
    /// samples per load.
    pub unsafe fn histogram_f32_warp_bins(input: GlobalSlice<f32>, bins: GlobalSliceMut<u32>, n: u32, lo: f32, hi: f32) {
        let WarpBins { counts } = WarpBins::carve();
        let t = thread_idx().x;
        let mine = t / WARP_SIZE * BINS;
        // SAFETY: w < WARPS and t < BINS: inside the WARPS · BINS counts.
        unrolled::<WARPS>(|w| unsafe { counts.set_unchecked(w * BINS + t, 0) });
        // Every bin is zero before any thread counts into it.
        sync_threads();
        let s = scale(lo, hi);
        // A sample's bin is worked out in its atomic's branch (LLVM moves it there even when the
        // four of a vector are worked out first, as in the CUDA C twin); level with the twin
        // either way (docs/perf-log.md, "Figures moved from code comments").
        let count = |x: f32| {
            if let Some(b) = bin(x, lo, hi, s) {
                // SAFETY: mine = warp · BINS and b < BINS: inside the counts.
                unsafe { counts.atomic_add_unchecked(mine + b, 1) };
            }
        };
        let threads = grid_dim().x * THREADS;
        let g = block_idx().x * THREADS + t;
        // Unaligned inputs are walked one sample at a time (no vectors, all as the tail).
        let vectors = if is_aligned4(input.as_ptr()) { n / 4 } else { 0 };
        let mut v = g;
        while v < vectors {
            // SAFETY: v < n / 4: four samples inside the input, 16-byte aligned.
            let four = unsafe { input.get4_unchecked(4 * v as usize) };
            unrolled::<4>(|k| count(four.0[k as usize]));
            v += threads;
        }
        let mut i = 4 * vectors + g;
        while i < n {
            // SAFETY: i < n.
            count(unsafe { input.get_unchecked(i) });
            i += threads;
        }
        // Every count is in before the copies are summed.
        sync_threads();
        let mut total = 0;
        // SAFETY: as for the zeroing.
        unrolled::<WARPS>(|w| total += unsafe { counts.get_unchecked(w * BINS + t) });
        if total != 0 {
            // SAFETY: t < 256: a bin.
            unsafe { bins.at_unchecked(t) }.red_add(total);
        }
    }
}

/// At most the resident blocks, of 256 threads; 8 KiB of bins each.
pub const KERNEL: Kernel<HistogramF32> = Kernel {
    code: histogram_f32_warp_bins,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(WarpBins::BYTES),
    grid: |p, _| grid(p, 4 * THREADS),
};
