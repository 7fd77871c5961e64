//! Rung 1: each block scans a 256-element tile in shared memory, Hillis–Steele: at step d (1, 2,
//! …, 128) every element adds the one d to its left, reading one buffer and writing the other so
//! that no thread overwrites a value another still has to read. log2(256) = 8 steps of 256
//! additions: n·log n work where n would do.

use super::{ADD_PREFIXES, Scan, THREADS};
use ptxkit::device::{GlobalSlice, GlobalSliceMut, MatrixLayout, SharedMatrix, block_idx, sync_threads, thread_idx};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

shared_memory! {
    /// Two copies of the tile: step s reads row s % 2 and writes the other.
    pub struct Buffers {
        pub rows: SharedMatrix<f32> = MatrixLayout::dense(2, THREADS),
    }
}

kernel! {
    /// Phase 0: `output` = each 256-element tile's scan, `scratch[tile]` = its total. Phase 1:
    /// `output[i] += scratch[tile of i]`.
    pub unsafe fn scan_hillis_steele(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, scratch: GlobalSliceMut<f32>, n: u32, exclusive: u32, phase: u32) {
        let t = thread_idx().x;
        let tile = block_idx().x;
        let i = tile * THREADS + t;
        if phase == ADD_PREFIXES {
            if i < n {
                // SAFETY: i < n; one prefix per tile.
                unsafe { output.at_unchecked(i).set(scratch.get_unchecked(tile) + output.get_unchecked(i)) };
            }
            return;
        }
        let Buffers { rows } = Buffers::carve();
        // SAFETY: read only below n.
        let value = if i < n { unsafe { input.get_unchecked(i) } } else { 0.0 };
        // SAFETY (shared accesses below): row < 2 and t, t - d < THREADS.
        unsafe { rows.set_unchecked(0, t, value) };
        let mut from = 0;
        let mut d = 1;
        while d < THREADS {
            // Step d reads what the step before wrote.
            sync_threads();
            let sum = unsafe {
                if t >= d {
                    rows.get_unchecked(from, t - d) + rows.get_unchecked(from, t)
                } else {
                    rows.get_unchecked(from, t)
                }
            };
            unsafe { rows.set_unchecked(1 - from, t, sum) };
            from = 1 - from;
            d *= 2;
        }
        // The last step is complete before threads read their neighbours' sums.
        sync_threads();
        let result = if exclusive == 0 {
            unsafe { rows.get_unchecked(from, t) }
        } else if t == 0 {
            0.0
        } else {
            unsafe { rows.get_unchecked(from, t - 1) }
        };
        if i < n {
            // SAFETY: i < n.
            unsafe { output.set_unchecked(i, result) };
        }
        if t == THREADS - 1 {
            // SAFETY: the caller gives one scratch word per tile.
            unsafe { scratch.at_unchecked(tile).set(rows.get_unchecked(from, t)) };
        }
    }
}

/// One block per 256 elements.
pub const KERNEL: Kernel<Scan> = Kernel {
    code: scan_hillis_steele,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Buffers::BYTES),
    grid: |p, _| Dim3::x(p.n.div_ceil(THREADS)),
};
