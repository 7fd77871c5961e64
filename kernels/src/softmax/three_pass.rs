//! Rung 1: three reads of the row: its maximum, then the sum of e^(x − max), then the outputs.
//! The second and third reads mostly come from the L2, but every element still passes through the
//! SM three times.

use super::{Softmax, THREADS, WARPS, block_max, block_sum, grid};
use ptxkit::device::{GlobalSlice, GlobalSliceMut, SharedSlice, block_idx, exp, thread_idx};
use ptxkit::{Kernel, SharedMemory, kernel, shared_memory};

shared_memory! {
    /// One value per warp for the block's reductions.
    pub struct Reductions {
        pub maxes: SharedSlice<f32> = WARPS,
        pub sums: SharedSlice<f32> = WARPS,
    }
}

kernel! {
    /// Block r: the softmax of row r.
    pub unsafe fn softmax_three_pass(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, _rows: u32, cols: u32) {
        let Reductions { maxes, sums } = Reductions::carve();
        let t = thread_idx().x;
        let base = block_idx().x as usize * cols as usize;
        let at = |c: u32| base + c as usize;
        let mut m = f32::NEG_INFINITY;
        let mut c = t;
        while c < cols {
            // SAFETY (reads and writes below): c < cols, inside row r.
            let x = unsafe { input.get_unchecked(at(c)) };
            m = if x > m { x } else { m };
            c += THREADS;
        }
        // SAFETY: the block has THREADS threads.
        let max = unsafe { block_max::<WARPS>(maxes, m) };
        let mut s = 0.0;
        let mut c = t;
        while c < cols {
            s += exp(unsafe { input.get_unchecked(at(c)) } - max);
            c += THREADS;
        }
        let sum = unsafe { block_sum::<WARPS>(sums, s) };
        let mut c = t;
        while c < cols {
            unsafe { output.at_unchecked(at(c)).set(exp(input.get_unchecked(at(c)) - max) / sum) };
            c += THREADS;
        }
    }
}

/// One block of 256 threads per row.
pub const KERNEL: Kernel<Softmax> = Kernel {
    code: softmax_three_pass,
    block: ptxkit::Dim3::x(THREADS),
    shared: SharedMemory::of(Reductions::BYTES),
    grid,
};
