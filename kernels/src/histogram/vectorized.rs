//! Rung 3: the bins privatised per warp (eight copies per block: warps no longer contend with each
//! other, only a warp's own lanes on equal bytes), and the input read 16 bytes per load, sixteen
//! counts per load. The copies are summed per bin at the end and added to the global bins.

use super::{BINS, Histogram, THREADS, grid};
use ptxkit::device::{
    GlobalSlice, GlobalSliceMut, SharedSlice, WARP_SIZE, block_idx, grid_dim, is_aligned4, sync_threads, thread_idx,
    unrolled,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

/// Warps per block, each with its own bins.
pub const WARPS: u32 = THREADS / WARP_SIZE;
/// Bytes per 16-byte load.
pub const VECTOR: u32 = 16;

shared_memory! {
    /// One set of bins per warp: warp w's bin b at w·256 + b.
    pub struct WarpBins {
        pub counts: SharedSlice<u32> = WARPS * BINS,
    }
}

kernel! {
    /// `bins[input[i]] += 1` for every i < n: per warp in shared memory, 16 bytes per load.
    pub unsafe fn histogram_vectorized(input: GlobalSlice<u8>, bins: GlobalSliceMut<u32>, n: u32) {
        let WarpBins { counts } = WarpBins::carve();
        let t = thread_idx().x;
        let mine = t / WARP_SIZE * BINS;
        unrolled::<WARPS>(|w| counts.set(w * THREADS + t, 0));
        // Every bin is zero before any thread counts into it.
        sync_threads();
        let threads = grid_dim().x * THREADS;
        let g = block_idx().x * THREADS + t;
        let count = |byte: u32| {
            counts.atomic_add(mine + byte, 1);
        };
        if is_aligned4(input.as_ptr()) {
            let vectors = n / VECTOR;
            let mut v = g;
            while v < vectors {
                // SAFETY: v < n / 16: sixteen bytes inside the input, 16-byte aligned.
                let loaded = unsafe { input.get16_unchecked(VECTOR * v) };
                unrolled::<4>(|word| {
                    let bits = loaded.0[word as usize].to_bits();
                    unrolled::<4>(|k| count((bits >> (8 * k)) & 0xff));
                });
                v += threads;
            }
            let tail = VECTOR * vectors + g;
            if tail < n {
                // SAFETY: tail < n.
                count(unsafe { input.get_unchecked(tail) } as u32);
            }
        } else {
            let mut i = g;
            while i < n {
                // SAFETY: i < n.
                count(unsafe { input.get_unchecked(i) } as u32);
                i += threads;
            }
        }
        // Every count is in before the copies are summed.
        sync_threads();
        let mut total = 0;
        unrolled::<WARPS>(|w| total += counts.get(w * BINS + t));
        if total != 0 {
            // SAFETY: t < 256: a bin.
            unsafe { bins.at_unchecked(t) }.red_add(total);
        }
    }
}

/// At most the resident blocks, of 256 threads; 8 KiB of bins each.
pub const KERNEL: Kernel<Histogram> = Kernel {
    code: histogram_vectorized,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(WarpBins::BYTES),
    grid: |p, _| grid(p, VECTOR * THREADS),
};
