//! The logits' gradient: `(e^((x − m) − l) − [c = target]) · s` from the forward pass's (m, l), one read
//! of the row and one write (16 bytes at a time where the rows allow), by a warp per row up to
//! [`WARP_COLS`](super::WARP_COLS) classes, a block beyond. A row whose target is ignored is
//! written 0 without being read.

use super::walk::{fill_row, map_row};
use super::{CrossEntropyBackward, THREADS, WARPS, by_warp, in_range};
use crate::element::RowElement;
use ptxkit::device::mma::Bf16;
use ptxkit::device::{GlobalSlice, GlobalSliceMut, WARP_SIZE, block_idx, exp, thread_idx};
use ptxkit::{Dim3, Kernel, Problem, SharedMemory, kernel};

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

/// Row `row`'s gradient by thread `t` of a group of `T` (a warp or the block).
///
/// # Safety
/// row < rows; the views hold the kernel's contract's elements; `t < T`.
#[inline(always)]
unsafe fn row_gradient<E: RowElement, const T: u32>(
    (logits, targets, stats): (GlobalSlice<E>, GlobalSlice<i64>, GlobalSlice<f32>),
    (grad_loss, count): (GlobalSlice<f32>, GlobalSlice<f32>),
    grad_logits: GlobalSliceMut<E>,
    (row, cols, ignore_index): (u32, u32, i64),
    t: u32,
) {
    let base = row as usize * cols as usize;
    let dst = grad_logits.tail(base).head(cols);
    // SAFETY: row < rows.
    let target = unsafe { targets.get_unchecked(row) };
    if target == ignore_index {
        // SAFETY: the row is inside the gradient; t < T.
        unsafe { fill_row::<_, T>(dst, cols, t, 0.0) };
        return;
    }
    let valid = in_range(target, cols);
    // SAFETY: the kernel's contract on grad_loss and count.
    let scale = unsafe { row_scale(grad_loss, count, row, valid) };
    // SAFETY: stats holds 2 · rows elements.
    let (max, ln_sum) = unsafe { (stats.get_unchecked(2 * row), stats.get_unchecked(2 * row + 1)) };
    let hit = if valid { target as u32 } else { cols };
    let src = logits.tail(base).head(cols);
    // SAFETY: both rows hold cols elements; t < T.
    unsafe {
        map_row::<_, T>(src, dst, cols, t, |c, x| {
            let p = exp((x - max) - ln_sum);
            (if c == hit { p - 1.0 } else { p }) * scale
        })
    };
}

/// Rows ≤ WARP_COLS classes: warp w of block b takes row 8b + w; longer rows: block r row r.
///
/// # Safety
/// The kernel's contract; the launch [`KERNEL`]'s grid and block.
#[inline(always)]
unsafe fn backward<E: RowElement>(args: <CrossEntropyBackward<E> as Problem>::Args) {
    let (logits, targets, stats, grad_loss, count, grad_logits, rows, cols, ignore_index) = args;
    let t = thread_idx().x;
    let inputs = (logits, targets, stats);
    let scale = (grad_loss, count);
    if by_warp(cols) {
        let row = block_idx().x * WARPS + t / WARP_SIZE;
        if row < rows {
            // SAFETY: row < rows; the lane is below 32.
            unsafe {
                row_gradient::<E, WARP_SIZE>(inputs, scale, grad_logits, (row, cols, ignore_index), t % WARP_SIZE)
            };
        }
    } else {
        // SAFETY: a block per row: row < rows; t < THREADS.
        unsafe { row_gradient::<E, THREADS>(inputs, scale, grad_logits, (block_idx().x, cols, ignore_index), t) };
    }
}

kernel! {
    /// f32 logits and gradient, as [`backward`].
    pub unsafe fn cross_entropy_backward(logits: GlobalSlice<f32>, targets: GlobalSlice<i64>, stats: GlobalSlice<f32>, grad_loss: GlobalSlice<f32>, count: GlobalSlice<f32>, grad_logits: GlobalSliceMut<f32>, rows: u32, cols: u32, ignore_index: i64) {
        // SAFETY: the kernel's contract.
        unsafe { backward::<f32>((logits, targets, stats, grad_loss, count, grad_logits, rows, cols, ignore_index)) }
    }
}

kernel! {
    /// bf16 logits and gradient (each element computed in f32, rounded once), as [`backward`].
    pub unsafe fn cross_entropy_backward_bf16(logits: GlobalSlice<Bf16>, targets: GlobalSlice<i64>, stats: GlobalSlice<f32>, grad_loss: GlobalSlice<f32>, count: GlobalSlice<f32>, grad_logits: GlobalSliceMut<Bf16>, rows: u32, cols: u32, ignore_index: i64) {
        // SAFETY: the kernel's contract.
        unsafe { backward::<Bf16>((logits, targets, stats, grad_loss, count, grad_logits, rows, cols, ignore_index)) }
    }
}

/// Blocks of [`THREADS`] threads: eight rows each up to [`WARP_COLS`](super::WARP_COLS) classes,
/// one beyond.
const fn kernel_of<E: RowElement>(
    code: ptxkit::KernelFn<<CrossEntropyBackward<E> as Problem>::Args>,
) -> Kernel<CrossEntropyBackward<E>> {
    Kernel {
        code,
        block: Dim3::x(THREADS),
        shared: SharedMemory::NONE,
        grid: |p, _| super::blocks(p.rows, p.cols),
    }
}

/// The f32 kernel.
pub const KERNEL: Kernel<CrossEntropyBackward> = kernel_of(cross_entropy_backward);
/// The bf16 kernel.
pub const KERNEL_BF16: Kernel<CrossEntropyBackward<Bf16>> = kernel_of(cross_entropy_backward_bf16);
