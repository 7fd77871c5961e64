//! The backward pass after the fused one ([`super::fused`]): its gradient, written for a loss
//! gradient of 1, times the loss gradient each row gets, in place. A row whose loss gradient is
//! exactly 1 (`loss.backward()` on a mean or a sum) is neither read nor written, so in the common
//! case the launch costs a load per row; a row whose target is ignored keeps its 0 (as PyTorch's,
//! whatever the loss gradient).

use super::walk::map_row;
use super::{CrossEntropyScale, THREADS};
use crate::element::RowElement;
use ptxkit::device::mma::Bf16;
use ptxkit::device::{GlobalSlice, GlobalSliceMut, block_idx, thread_idx};
use ptxkit::{Dim3, Kernel, Problem, SharedMemory, kernel};

/// Block r: row r of the gradient times its loss gradient, unless that is 1.
///
/// # Safety
/// The kernel's contract; a block of [`THREADS`] threads per row.
#[inline(always)]
unsafe fn scale<E: RowElement>(args: <CrossEntropyScale<E> as Problem>::Args) {
    let (targets, grad_loss, grad, _rows, cols, ignore_index) = args;
    let row = block_idx().x;
    let at = if grad_loss.len() == 1 { 0 } else { row };
    // SAFETY: grad_loss holds 1 or rows elements; a block per row: row < rows.
    let (factor, target) = unsafe { (grad_loss.get_unchecked(at), targets.get_unchecked(row)) };
    if factor == 1.0 || target == ignore_index {
        return;
    }
    let dst = grad.tail(row as usize * cols as usize).head(cols);
    // SAFETY: the row is inside the gradient, read and written in place; t < THREADS.
    unsafe { map_row::<_, THREADS>(dst.as_const(), dst, cols, thread_idx().x, |_, g| g * factor) };
}

kernel! {
    /// An f32 gradient, as [`scale`].
    pub unsafe fn cross_entropy_scale(targets: GlobalSlice<i64>, grad_loss: GlobalSlice<f32>, grad: GlobalSliceMut<f32>, rows: u32, cols: u32, ignore_index: i64) {
        // SAFETY: the kernel's contract.
        unsafe { scale::<f32>((targets, grad_loss, grad, rows, cols, ignore_index)) }
    }
}

kernel! {
    /// A bf16 gradient (each product rounded to bf16 again), as [`scale`].
    pub unsafe fn cross_entropy_scale_bf16(targets: GlobalSlice<i64>, grad_loss: GlobalSlice<f32>, grad: GlobalSliceMut<Bf16>, rows: u32, cols: u32, ignore_index: i64) {
        // SAFETY: the kernel's contract.
        unsafe { scale::<Bf16>((targets, grad_loss, grad, rows, cols, ignore_index)) }
    }
}

/// A block of [`THREADS`] threads per row.
const fn kernel_of<E: RowElement>(
    code: ptxkit::KernelFn<<CrossEntropyScale<E> as Problem>::Args>,
) -> Kernel<CrossEntropyScale<E>> {
    Kernel {
        code,
        block: Dim3::x(THREADS),
        shared: SharedMemory::NONE,
        grid: |p, _| Dim3::x(p.rows),
    }
}

/// The f32 kernel.
pub const KERNEL: Kernel<CrossEntropyScale> = kernel_of(cross_entropy_scale);
/// The bf16 kernel.
pub const KERNEL_BF16: Kernel<CrossEntropyScale<Bf16>> = kernel_of(cross_entropy_scale_bf16);
