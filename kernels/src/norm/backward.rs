//! The gradient of the input of layer norm and RMS norm, a block per row, from the forward pass's
//! mean and rstd. With x̂ = (x − mean)·rstd and g = dy·weight:
//!
//! `dx = rstd · (g − mean(g) − x̂ · mean(g·x̂))`
//!
//! (RMS norm: the mean is 0 and the `mean(g)` term is absent, as the mean is not subtracted.) Two
//! reads of x and dy: the two sums, then the outputs. The weight's and bias's gradients (sums down
//! the columns) are another kernel's.

use super::{RowNormBackward, THREADS, WARPS};
use crate::norm::three_pass::Sums;
use crate::softmax::block_sum;
use ptxkit::device::{GlobalSlice, GlobalSliceMut, SharedSlice, block_idx, thread_idx};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};

/// The row's x̂ and g at column `c`.
///
/// # Safety
/// `c` is inside the row; the weight holds a row's elements or none.
#[inline(always)]
unsafe fn terms(
    (x, dy, weight): (GlobalSlice<f32>, GlobalSlice<f32>, GlobalSlice<f32>),
    (mean, rstd): (f32, f32),
    c: u32,
) -> (f32, f32) {
    // SAFETY: the caller's promise.
    let (xc, dyc) = unsafe { (x.get_unchecked(c), dy.get_unchecked(c)) };
    let g = if weight.is_empty() {
        dyc
    } else {
        // SAFETY: as above.
        dyc * unsafe { weight.get_unchecked(c) }
    };
    ((xc - mean) * rstd, g)
}

/// dx of row `row` (the block's threads together).
///
/// # Safety
/// The row is inside the matrices (rows × `cols`); `means` holds the rows' means where
/// `CENTERED`, `rstds` their rstds; the weight `cols` elements or none; the block has [`THREADS`]
/// threads, all calling.
#[inline(always)]
unsafe fn block_row<const CENTERED: bool>(
    sums: SharedSlice<f32>,
    (input, grad_output, weight): (GlobalSlice<f32>, GlobalSlice<f32>, GlobalSlice<f32>),
    (means, rstds): (GlobalSlice<f32>, GlobalSlice<f32>),
    grad_input: GlobalSliceMut<f32>,
    row: u32,
    cols: u32,
) {
    let base = row as usize * cols as usize;
    let rows = (input.tail(base), grad_output.tail(base), weight);
    let dx = grad_input.tail(base);
    // SAFETY: the caller's promise.
    let mean = if CENTERED {
        unsafe { means.get_unchecked(row) }
    } else {
        0.0
    };
    // SAFETY: as above.
    let rstd = unsafe { rstds.get_unchecked(row) };
    let t = thread_idx().x;
    let (mut sum_g, mut sum_gx) = (0.0f32, 0.0f32);
    let mut c = t;
    while c < cols {
        // SAFETY: c < cols: inside the row.
        let (xh, g) = unsafe { terms(rows, (mean, rstd), c) };
        sum_g += g;
        sum_gx += g * xh;
        c += THREADS;
    }
    let n = cols as f32;
    // SAFETY: every thread of the block calls both (the caller's promise).
    let mean_g = if CENTERED {
        (unsafe { block_sum::<WARPS>(sums, sum_g) }) / n
    } else {
        0.0
    };
    // SAFETY: as above.
    let mean_gx = (unsafe { block_sum::<WARPS>(sums, sum_gx) }) / n;
    let mut c = t;
    while c < cols {
        // SAFETY: as above.
        let (xh, g) = unsafe { terms(rows, (mean, rstd), c) };
        // SAFETY: as above.
        unsafe { dx.set_unchecked(c, rstd * (g - mean_g - xh * mean_gx)) };
        c += THREADS;
    }
}

kernel! {
    /// Block b: the input gradient of layer norm's row b.
    pub unsafe fn layer_norm_backward(input: GlobalSlice<f32>, grad_output: GlobalSlice<f32>, weight: GlobalSlice<f32>, mean: GlobalSlice<f32>, rstd: GlobalSlice<f32>, grad_input: GlobalSliceMut<f32>, _rows: u32, cols: u32) {
        let Sums { sums } = Sums::carve();
        // SAFETY: the kernel's contract; one block of THREADS threads per row.
        unsafe { block_row::<true>(sums, (input, grad_output, weight), (mean, rstd), grad_input, block_idx().x, cols) }
    }
}

kernel! {
    /// Block b: the input gradient of RMS norm's row b.
    pub unsafe fn rms_norm_backward(input: GlobalSlice<f32>, grad_output: GlobalSlice<f32>, weight: GlobalSlice<f32>, mean: GlobalSlice<f32>, rstd: GlobalSlice<f32>, grad_input: GlobalSliceMut<f32>, _rows: u32, cols: u32) {
        let Sums { sums } = Sums::carve();
        // SAFETY: as above.
        unsafe { block_row::<false>(sums, (input, grad_output, weight), (mean, rstd), grad_input, block_idx().x, cols) }
    }
}

/// One block of [`THREADS`] threads per row.
pub const LAYER_KERNEL: Kernel<RowNormBackward> = Kernel {
    code: layer_norm_backward,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Sums::BYTES),
    grid: |p, _| Dim3::x(p.rows),
};

/// As [`LAYER_KERNEL`], for RMS norm.
pub const RMS_KERNEL: Kernel<RowNormBackward> = Kernel {
    code: rms_norm_backward,
    ..LAYER_KERNEL
};
