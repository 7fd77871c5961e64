//! Rung 1: each element one atomic add on its bin in global memory. Uniform data spreads the adds
//! over 256 addresses; data with one frequent value sends most of them to one address, where the
//! L2 performs them one after another.

use super::{Histogram, THREADS, grid};
use ptxkit::device::{GlobalSlice, GlobalSliceMut, block_idx, grid_dim, thread_idx};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};

kernel! {
    /// `bins[input[i]] += 1` for every i < n, by a grid-stride walk.
    pub unsafe fn histogram_global(input: GlobalSlice<u8>, bins: GlobalSliceMut<u32>, n: u32) {
        let threads = grid_dim().x * THREADS;
        let mut i = block_idx().x * THREADS + thread_idx().x;
        while i < n {
            // SAFETY: i < n; a byte indexes one of the 256 bins.
            unsafe { bins.at_unchecked(input.get_unchecked(i) as u32) }.red_add(1u32);
            i += threads;
        }
    }
}

/// At most the resident blocks, of 256 threads.
pub const KERNEL: Kernel<Histogram> = Kernel {
    code: histogram_global,
    block: Dim3::x(THREADS),
    shared: SharedMemory::NONE,
    grid: |p, _| grid(p, THREADS),
};
