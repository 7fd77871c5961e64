//! The backward pass after the fused one ([`super::fused`]): its gradient, written for a loss
//! gradient of 1, times the loss gradient each row gets, in place. A row whose loss gradient is
//! exactly 1 (`loss.backward()` on a mean or a sum) is neither read nor written, so in the common
//! case the launch costs a load per row; a row whose target is ignored keeps its 0 (as PyTorch's,
//! whatever the loss gradient).

use super::walk::map_row;
use super::{CrossEntropyScale, THREADS};
use ptxkit::device::{GlobalSlice, GlobalSliceMut, block_idx, thread_idx};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};

kernel! {
    /// Block r: row r of the gradient times its loss gradient, unless that is 1.
    pub unsafe fn cross_entropy_scale(targets: GlobalSlice<i64>, grad_loss: GlobalSlice<f32>, grad: GlobalSliceMut<f32>, _rows: u32, cols: u32, ignore_index: i64) {
        let row = block_idx().x;
        let at = if grad_loss.len() == 1 { 0 } else { row };
        // SAFETY: grad_loss holds 1 or rows elements; a block per row: row < rows.
        let (factor, target) = unsafe { (grad_loss.get_unchecked(at), targets.get_unchecked(row)) };
        if factor == 1.0 || target == ignore_index {
            return;
        }
        let dst = grad.tail(row as usize * cols as usize).head(cols);
        // SAFETY: the row is inside the gradient, read and written in place; t < THREADS.
        unsafe { map_row::<THREADS>(dst.as_const(), dst, cols, thread_idx().x, |_, g| g * factor) };
    }
}

/// A block of [`THREADS`] threads per row.
pub const KERNEL: Kernel<CrossEntropyScale> = Kernel {
    code: cross_entropy_scale,
    block: Dim3::x(THREADS),
    shared: SharedMemory::NONE,
    grid: |p, _| Dim3::x(p.rows),
};
