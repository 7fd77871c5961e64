//! Rung 4: the per-warp bins of the vectorised rung, with the lanes of a warp that hold the same
//! byte counting together: `match_any` finds them, the lowest of them adds their number with one
//! shared atomic, the others add nothing. On data with one frequent value most of a warp holds it,
//! and its 16 or so colliding atomics (serialised on one word) become one.

use super::vectorized::{VECTOR, WARPS, WarpBins};
use super::{BINS, Histogram, THREADS, grid};
use ptxkit::device::{
    GlobalSlice, GlobalSliceMut, WARP_SIZE, block_idx, grid_dim, is_aligned4, lane_id, match_any, sync_threads,
    thread_idx, unrolled,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};

kernel! {
    /// `bins[input[i]] += 1` for every i < n: per warp in shared memory, one atomic per distinct
    /// byte of each warp step, 16 bytes per load.
    pub unsafe fn histogram_aggregated(input: GlobalSlice<u8>, bins: GlobalSliceMut<u32>, n: u32) {
        let WarpBins { counts } = WarpBins::carve();
        let t = thread_idx().x;
        let (mine, lane) = (t / WARP_SIZE * BINS, lane_id());
        unrolled::<WARPS>(|w| counts.set(w * THREADS + t, 0));
        // Every bin is zero before any thread counts into it.
        sync_threads();
        let threads = grid_dim().x * THREADS;
        let g = block_idx().x * THREADS + t;
        // Lanes with no byte this step offer a value no byte has, and count nothing.
        let count = |byte: u32| {
            let peers = match_any(byte);
            if byte < BINS && peers.trailing_zeros() == lane {
                counts.atomic_add(mine + byte, peers.count_ones());
            }
        };
        let vectors = if is_aligned4(input.as_ptr()) { n / VECTOR } else { 0 };
        // Every lane of a warp takes the same number of steps (the loop bound is the warp's
        // largest), so that all 32 reach each match.
        let warp_first = g - lane;
        let mut v = warp_first;
        while v < vectors {
            let mine_v = v + lane;
            let loaded = if mine_v < vectors {
                // SAFETY: mine_v < n / 16: sixteen bytes inside the input, 16-byte aligned.
                Some(unsafe { input.get16_unchecked(VECTOR * mine_v) })
            } else {
                None
            };
            unrolled::<4>(|word| {
                let bits = loaded.map_or(0, |l| l.0[word as usize].to_bits());
                unrolled::<4>(|k| count(if loaded.is_some() { (bits >> (8 * k)) & 0xff } else { BINS }));
            });
            v += threads;
        }
        // The bytes after the last whole 16 (or all of them, unaligned), one per thread per step.
        let start = VECTOR * vectors;
        let mut i = start + warp_first;
        while i < n {
            let byte = if i + lane < n {
                // SAFETY: i + lane < n.
                (unsafe { input.get_unchecked(i + lane) }) as u32
            } else {
                BINS
            };
            count(byte);
            i += threads;
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

/// As the vectorised rung: at most the resident blocks, of 256 threads; 8 KiB of bins each.
pub const KERNEL: Kernel<Histogram> = Kernel {
    code: histogram_aggregated,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(WarpBins::BYTES),
    grid: |p, _| grid(p, VECTOR * THREADS),
};
