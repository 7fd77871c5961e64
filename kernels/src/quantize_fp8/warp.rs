//! Rung 1: a warp per group, eight groups per block. Lane l reads elements l, l + 32, ... of its
//! group (a warp's loads consecutive), the group's largest magnitude meets by five butterfly
//! shuffles (every lane ends with it), then each lane writes its elements' codes and lane 0 the
//! scale. No shared memory and no barrier: for the short groups of blockwise quantisation (128).

use super::{QuantizeFp8, code_of, factor_of, larger_magnitude, scale_of};
use ptxkit::device::{GlobalSlice, GlobalSliceMut, WARP_SIZE, block_idx, lane_id, max_nan, shfl_xor, thread_idx};
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory, kernel};

/// Groups (warps) per block.
pub const WARPS: u32 = 8;

kernel! {
    /// FP8 codes and a scale per group of `group` elements of each row: warp w of block b takes
    /// group 8b + w.
    pub unsafe fn quantize_fp8_warp(input: GlobalSlice<f32>, codes: GlobalSliceMut<u8>, scales: GlobalSliceMut<f32>, rows: u32, cols: u32, group: u32) {
        let problem = QuantizeFp8 { rows, cols, group };
        let g = block_idx().x * WARPS + thread_idx().x / WARP_SIZE;
        // The whole warp leaves together: g is the warp's.
        if g >= problem.groups() {
            return;
        }
        let lane = lane_id();
        let (row, first, end) = problem.group_span(g);
        let at = |i: u32| row * cols + i;
        let mut amax = 0.0f32;
        for i in (first + lane..end).step_by(WARP_SIZE as usize) {
            // SAFETY: i < end ≤ cols, row < rows: inside the input (rows × cols, the contract).
            amax = larger_magnitude(amax, unsafe { input.get_unchecked(at(i)) });
        }
        for shift in [16, 8, 4, 2, 1] {
            amax = max_nan(amax, shfl_xor(amax, shift));
        }
        let factor = factor_of(amax);
        for i in (first + lane..end).step_by(WARP_SIZE as usize) {
            // SAFETY: as above; the codes are as many as the input's elements.
            unsafe { codes.set_unchecked(at(i), code_of(input.get_unchecked(at(i)), factor)) };
        }
        if lane == 0 {
            scales.set(g, scale_of(amax));
        }
    }
}

/// A block per eight groups.
const fn grid(p: &QuantizeFp8, _: Occupancy) -> Dim3 {
    Dim3::x(p.groups().div_ceil(WARPS))
}

/// [`WARPS`] warps per block, no shared memory.
pub const KERNEL: Kernel<QuantizeFp8> = Kernel {
    code: quantize_fp8_warp,
    block: Dim3::x(WARPS * WARP_SIZE),
    shared: SharedMemory::NONE,
    grid,
};
