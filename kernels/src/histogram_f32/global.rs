//! Rung 1: every sample in range an atomic add (`red.global.add`) on its bin in global memory.

use super::{HistogramF32, THREADS, bin, grid, scale};
use ptxkit::device::{GlobalSlice, GlobalSliceMut, block_idx, grid_dim, thread_idx};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};

kernel! {
    /// `bins[bin(input[i])] += 1` for every i < n in range, by a grid-stride walk.
    pub unsafe fn histogram_f32_global(input: GlobalSlice<f32>, bins: GlobalSliceMut<u32>, n: u32, lo: f32, hi: f32) {
        let s = scale(lo, hi);
        let threads = grid_dim().x * THREADS;
        let mut i = block_idx().x * THREADS + thread_idx().x;
        while i < n {
            // SAFETY: i < n; a bin is below 256.
            unsafe {
                if let Some(b) = bin(input.get_unchecked(i), lo, hi, s) {
                    bins.at_unchecked(b).red_add(1u32);
                }
            }
            i += threads;
        }
    }
}

/// At most the resident blocks, of 256 threads.
pub const KERNEL: Kernel<HistogramF32> = Kernel {
    code: histogram_f32_global,
    block: Dim3::x(THREADS),
    shared: SharedMemory::NONE,
    grid: |p, _| grid(p, THREADS),
};
