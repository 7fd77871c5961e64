//! Rung 1: a block per row, the row read from global memory three times: its sum (the mean), the
//! sum of its squared deviations (the variance), then each output. Every thread walks a strided
//! share; the block combines the shares ([`crate::softmax::block_sum`]). Also the
//! [`super::registers`] rung's path for rows longer than it holds.

use super::{Affine, RowNorm, THREADS, WARPS, write_statistics};
use crate::softmax::block_sum;
use ptxkit::device::{GlobalSlice, GlobalSliceMut, SharedSlice, block_idx, thread_idx};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

shared_memory! {
    /// One partial sum per warp.
    pub struct Sums {
        pub sums: SharedSlice<f32> = WARPS,
    }
}

/// Normalises row `row` of `input` into `output` (the block's threads together), its statistics
/// into `statistics` (see [`super`]).
///
/// # Safety
/// The row is inside both matrices (rows × `cols`); the block has [`THREADS`] threads, all calling
/// (the barriers); the affine's views hold `cols` elements or none; the statistics' `row`.
#[inline(always)]
pub(super) unsafe fn block_row<const CENTERED: bool>(
    sums: SharedSlice<f32>,
    (input, output): (GlobalSlice<f32>, GlobalSliceMut<f32>),
    affine: Affine,
    statistics: (GlobalSliceMut<f32>, GlobalSliceMut<f32>),
    row: u32,
    cols: u32,
) {
    let base = row as usize * cols as usize;
    let (src, dst) = (input.tail(base), output.tail(base));
    let t = thread_idx().x;
    let mean = if CENTERED {
        let mut sum = 0.0f32;
        let mut c = t;
        while c < cols {
            // SAFETY: c < cols: inside the row.
            sum += unsafe { src.get_unchecked(c) };
            c += THREADS;
        }
        // SAFETY: every thread of the block calls it (the caller's promise).
        (unsafe { block_sum::<WARPS>(sums, sum) }) / cols as f32
    } else {
        0.0
    };
    let mut squares = 0.0f32;
    let mut c = t;
    while c < cols {
        // SAFETY: as above.
        let d = unsafe { src.get_unchecked(c) } - mean;
        squares += d * d;
        c += THREADS;
    }
    // SAFETY: as above.
    let variance = (unsafe { block_sum::<WARPS>(sums, squares) }) / cols as f32;
    let rstd = affine.rstd::<CENTERED>(variance);
    let mut c = t;
    while c < cols {
        // SAFETY: as above; the affine's views hold a row's elements or none.
        unsafe { dst.set_unchecked(c, affine.apply(src.get_unchecked(c), (mean, rstd), c as usize)) };
        c += THREADS;
    }
    if t == 0 {
        // SAFETY: the caller's promise.
        unsafe { write_statistics::<CENTERED>(statistics, row, (mean, rstd)) };
    }
}

kernel! {
    /// Block b: layer norm of row b.
    pub unsafe fn layer_norm_three_pass(input: GlobalSlice<f32>, weight: GlobalSlice<f32>, bias: GlobalSlice<f32>, output: GlobalSliceMut<f32>, mean: GlobalSliceMut<f32>, rstd: GlobalSliceMut<f32>, _rows: u32, cols: u32, eps: f32) {
        let Sums { sums } = Sums::carve();
        // SAFETY: the kernel's contract; one block of THREADS threads per row.
        unsafe { block_row::<true>(sums, (input, output), Affine { weight, bias, eps }, (mean, rstd), block_idx().x, cols) }
    }
}

kernel! {
    /// Block b: RMS norm of row b.
    pub unsafe fn rms_norm_three_pass(input: GlobalSlice<f32>, weight: GlobalSlice<f32>, bias: GlobalSlice<f32>, output: GlobalSliceMut<f32>, mean: GlobalSliceMut<f32>, rstd: GlobalSliceMut<f32>, _rows: u32, cols: u32, eps: f32) {
        let Sums { sums } = Sums::carve();
        // SAFETY: as above.
        unsafe { block_row::<false>(sums, (input, output), Affine { weight, bias, eps }, (mean, rstd), block_idx().x, cols) }
    }
}

/// One block of [`THREADS`] threads per row.
pub const LAYER_KERNEL: Kernel<RowNorm> = Kernel {
    code: layer_norm_three_pass,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Sums::BYTES),
    grid: |p, _| Dim3::x(p.rows),
};

/// As [`LAYER_KERNEL`], for RMS norm.
pub const RMS_KERNEL: Kernel<RowNorm> = Kernel {
    code: rms_norm_three_pass,
    ..LAYER_KERNEL
};
