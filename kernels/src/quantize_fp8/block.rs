//! Rung 2: a block of 256 threads per group, for long groups (a scale per row of thousands). Each
//! thread folds a strided share of the group's magnitudes, each warp's meet by shuffles, the eight
//! warps' through shared memory (every thread reads all eight: no second barrier), then each thread
//! writes its share's codes and thread 0 the scale.

use super::{QuantizeFp8, code_of, factor_of, larger_magnitude, scale_of};
use ptxkit::device::{
    GlobalSlice, GlobalSliceMut, SharedSlice, WARP_SIZE, block_idx, lane_id, max_nan, shfl_xor, sync_threads,
    thread_idx,
};
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory, kernel, shared_memory};

/// Threads per block.
pub const THREADS: u32 = 256;

shared_memory! {
    /// Each warp's largest magnitude.
    pub struct Warps {
        pub amax: SharedSlice<f32> = THREADS / WARP_SIZE,
    }
}

kernel! {
    /// FP8 codes and a scale per group of `group` elements of each row: block b takes group b.
    pub unsafe fn quantize_fp8_block(input: GlobalSlice<f32>, codes: GlobalSliceMut<u8>, scales: GlobalSliceMut<f32>, rows: u32, cols: u32, group: u32) {
        let problem = QuantizeFp8 { rows, cols, group };
        let g = block_idx().x;
        let tid = thread_idx().x;
        let (row, first, end) = problem.group_span(g);
        let at = |i: u32| row * cols + i;
        let mut amax = 0.0f32;
        for i in (first + tid..end).step_by(THREADS as usize) {
            // SAFETY: i < end ≤ cols, row < rows (the grid is the groups): inside the input.
            amax = larger_magnitude(amax, unsafe { input.get_unchecked(at(i)) });
        }
        for shift in [16, 8, 4, 2, 1] {
            amax = max_nan(amax, shfl_xor(amax, shift));
        }
        let Warps { amax: warps } = Warps::carve();
        if lane_id() == 0 {
            warps.set(tid / WARP_SIZE, amax);
        }
        sync_threads();
        let mut amax = warps.get(0);
        for w in 1..THREADS / WARP_SIZE {
            amax = max_nan(amax, warps.get(w));
        }
        let factor = factor_of(amax);
        for i in (first + tid..end).step_by(THREADS as usize) {
            // SAFETY: as above; the codes are as many as the input's elements.
            unsafe { codes.set_unchecked(at(i), code_of(input.get_unchecked(at(i)), factor)) };
        }
        if tid == 0 {
            scales.set(g, scale_of(amax));
        }
    }
}

/// A block per group.
const fn grid(p: &QuantizeFp8, _: Occupancy) -> Dim3 {
    Dim3::x(p.groups())
}

/// [`THREADS`] threads per block, the warps' eight magnitudes in shared memory.
pub const KERNEL: Kernel<QuantizeFp8> = Kernel {
    code: quantize_fp8_block,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Warps::BYTES),
    grid,
};
