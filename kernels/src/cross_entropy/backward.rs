//! The logits' gradient, a block per row: `(e^(x − lse) − [c = target]) · s` from the forward
//! pass's lse, one read of the row and one write (16 bytes at a time where the rows allow). A row
//! whose target is ignored is written 0 without being read.

use super::walk::{fill_row, map_row};
use super::{CrossEntropyBackward, THREADS, in_range};
use ptxkit::device::{GlobalSlice, GlobalSliceMut, block_idx, exp, thread_idx};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};

/// The gradient reaching row `row`'s loss: the loss's gradient (one for every row, or the row's
/// own), divided by the mean's count where given; NaN for a target out of range.
///
/// # Safety
/// `grad_loss` holds 1 or more than `row` elements; `count` 1 or none.
#[inline(always)]
unsafe fn row_scale(grad_loss: GlobalSlice<f32>, count: GlobalSlice<f32>, row: u32, in_range: bool) -> f32 {
    let at = if grad_loss.len() == 1 { 0 } else { row };
    // SAFETY: the caller's promise.
    let mut scale = unsafe { grad_loss.get_unchecked(at) };
    if !count.is_empty() {
        // SAFETY: as above.
        scale /= unsafe { count.get_unchecked(0u32) };
    }
    if in_range { scale } else { f32::NAN }
}

kernel! {
    /// Block r: the gradient of row r's logits.
    pub unsafe fn cross_entropy_backward(logits: GlobalSlice<f32>, targets: GlobalSlice<i64>, lse: GlobalSlice<f32>, grad_loss: GlobalSlice<f32>, count: GlobalSlice<f32>, grad_logits: GlobalSliceMut<f32>, _rows: u32, cols: u32, ignore_index: i64) {
        let row = block_idx().x;
        let t = thread_idx().x;
        let base = row as usize * cols as usize;
        let dst = grad_logits.tail(base).head(cols);
        // SAFETY: row < rows: the grid is a block per row.
        let target = unsafe { targets.get_unchecked(row) };
        if target == ignore_index {
            // SAFETY: the row is inside the gradient; t < THREADS.
            unsafe { fill_row::<THREADS>(dst, cols, t, 0.0) };
            return;
        }
        let valid = in_range(target, cols);
        // SAFETY: the kernel's contract on grad_loss and count.
        let scale = unsafe { row_scale(grad_loss, count, row, valid) };
        // SAFETY: lse holds rows elements.
        let row_lse = unsafe { lse.get_unchecked(row) };
        let hit = if valid { target as u32 } else { cols };
        let src = logits.tail(base).head(cols);
        // SAFETY: both rows hold cols elements; t < THREADS.
        unsafe {
            map_row::<THREADS>(src, dst, cols, t, |c, x| {
                let p = exp(x - row_lse);
                (if c == hit { p - 1.0 } else { p }) * scale
            })
        };
    }
}

/// One block of [`THREADS`] threads per row.
pub const KERNEL: Kernel<CrossEntropyBackward> = Kernel {
    code: cross_entropy_backward,
    block: Dim3::x(THREADS),
    shared: SharedMemory::NONE,
    grid: |p, _| Dim3::x(p.rows),
};
