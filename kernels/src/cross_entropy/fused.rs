//! Forward and gradient in one launch, for training: each row's loss and (m, l) as [`super::forward`]
//! writes them, and the logits' gradient `(e^((x − m) − l) − [c = target]) · s` with s the mean's
//! 1 / (rows counted) or the sum's (and no reduction's) 1, the gradient of a loss whose own
//! gradient is 1. The backward pass then has nothing to read unless the loss's gradient is not 1
//! ([`super::scale`]). The logits (f32 or bf16) are read once and their gradient written once
//! (past [`on_chip_cols`] classes the rest read twice), where the forward and backward launches
//! read them twice: a block of [`THREADS`] per row holds it on chip ([`crate::softmax::on_chip`]).

use super::forward::{Loss, loss_of, total_by_last_block};
use super::walk::fill_row;
use super::{CrossEntropyFused, in_range};
use crate::element::RowElement;
use crate::softmax::on_chip::{Staging, WARPS, row_on_chip};
use ptxkit::device::mma::Bf16;
use ptxkit::device::{GlobalSlice, GlobalSliceMut, SharedMatrix, SharedSlice, block_idx, exp, thread_idx};
use ptxkit::{Dim3, Kernel, Problem, SharedMemory, kernel};

pub use crate::softmax::on_chip::{ON_CHIP_COLS, STAGED_VECTORS, THREADS, VECTORS, on_chip_cols, register_vectors};

/// A row's loss and statistics, and its gradient into `dst`.
///
/// # Safety
/// `src` and `dst` hold `cols` elements; the block has [`THREADS`] threads, all calling.
#[inline(always)]
unsafe fn fused_row<E: RowElement>(
    staging: (SharedMatrix<f32>, SharedSlice<f32>, SharedSlice<f32>),
    (src, dst): (GlobalSlice<E>, GlobalSliceMut<E>),
    cols: u32,
    target: i64,
    scale: f32,
) -> Loss {
    let mut loss = Loss::IGNORED;
    let hit = if in_range(target, cols) { target as u32 } else { cols };
    // SAFETY: forwarded from the caller; the closure runs in every thread, where the row holds
    // cols elements for `loss_of`.
    unsafe {
        row_on_chip(staging, (src, dst), cols, |row| {
            loss = loss_of(row, src, target, cols);
            let (max, ln_sum) = (row.max, loss.ln_sum);
            #[inline(always)]
            move |c: u32, x: f32| {
                let p = exp((x - max) - ln_sum);
                (if c == hit { p - 1.0 } else { p }) * scale
            }
        })
    };
    loss
}

/// Block r: row r's loss, statistics and gradient; the last block to finish: the total.
///
/// # Safety
/// The kernel's contract; a block of [`THREADS`] per row.
#[inline(always)]
unsafe fn fused<E: RowElement>(args: <CrossEntropyFused<E> as Problem>::Args) {
    let (logits, targets, count, losses, stats, total, ticket, grad, rows, cols, ignore_index, mean) = args;
    let Staging {
        staged,
        maxes,
        sums,
        last,
    } = Staging::carve();
    let (row, t) = (block_idx().x, thread_idx().x);
    let base = row as usize * cols as usize;
    let (src, dst) = (logits.tail(base).head(cols), grad.tail(base).head(cols));
    // SAFETY: a block per row: row < rows.
    let target = unsafe { targets.get_unchecked(row) };
    // Uniform over the block: its barriers are reached by all of its threads or none.
    let row_loss = if target == ignore_index {
        // SAFETY: the row is inside the gradient; t < THREADS.
        unsafe { fill_row::<_, THREADS>(dst, cols, t, 0.0) };
        Loss::IGNORED
    } else {
        let scale = if !in_range(target, cols) {
            f32::NAN
        } else if mean != 0 {
            // The backward pass's division, so that a loss gradient of 1 gives its bits.
            // SAFETY: with `mean`, count holds the rows counted (the kernel's contract).
            1.0 / unsafe { count.get_unchecked(0u32) }
        } else {
            1.0
        };
        // SAFETY: the row is inside both matrices; THREADS threads, all here.
        unsafe { fused_row((staged, maxes, sums), (src, dst), cols, target, scale) }
    };
    if t == 0 {
        // SAFETY: losses holds rows elements, stats 2 · rows.
        unsafe {
            losses.set_unchecked(row, row_loss.loss);
            stats.set_unchecked(2 * row, row_loss.max);
            stats.set_unchecked(2 * row + 1, row_loss.ln_sum);
        }
    }
    if total.is_empty() {
        return;
    }
    // SAFETY: this block's row is written; THREADS threads, all here; the ticket's contract.
    unsafe {
        total_by_last_block::<THREADS, WARPS>(
            (sums, last),
            (losses, targets),
            (total, ticket),
            (rows, ignore_index, mean),
        )
    };
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 1)]
    /// f32 logits and gradient, as [`fused`].
    pub unsafe fn cross_entropy_fused(logits: GlobalSlice<f32>, targets: GlobalSlice<i64>, count: GlobalSlice<f32>, losses: GlobalSliceMut<f32>, stats: GlobalSliceMut<f32>, total: GlobalSliceMut<f32>, ticket: GlobalSliceMut<u32>, grad: GlobalSliceMut<f32>, rows: u32, cols: u32, ignore_index: i64, mean: u32) {
        // SAFETY: the kernel's contract.
        unsafe { fused::<f32>((logits, targets, count, losses, stats, total, ticket, grad, rows, cols, ignore_index, mean)) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 1)]
    /// bf16 logits and gradient (f32 arithmetic, each gradient element rounded once), as [`fused`]:
    /// rows up to twice as long held on chip (Llama 3's 128256 read once).
    pub unsafe fn cross_entropy_fused_bf16(logits: GlobalSlice<Bf16>, targets: GlobalSlice<i64>, count: GlobalSlice<f32>, losses: GlobalSliceMut<f32>, stats: GlobalSliceMut<f32>, total: GlobalSliceMut<f32>, ticket: GlobalSliceMut<u32>, grad: GlobalSliceMut<Bf16>, rows: u32, cols: u32, ignore_index: i64, mean: u32) {
        // SAFETY: the kernel's contract.
        unsafe { fused::<Bf16>((logits, targets, count, losses, stats, total, ticket, grad, rows, cols, ignore_index, mean)) }
    }
}

/// One block of 1024 threads per row, alone on its SM (at most 64 registers), with 160 KiB of
/// shared memory.
const fn kernel_of<E: RowElement>(
    code: ptxkit::KernelFn<<CrossEntropyFused<E> as Problem>::Args>,
) -> Kernel<CrossEntropyFused<E>> {
    Kernel {
        code,
        block: Dim3::x(THREADS),
        shared: SharedMemory::opt_in(Staging::BYTES),
        grid: |p, _| Dim3::x(p.rows),
    }
}

/// The f32 kernel.
pub const KERNEL: Kernel<CrossEntropyFused> = kernel_of(cross_entropy_fused);
/// The bf16 kernel.
pub const KERNEL_BF16: Kernel<CrossEntropyFused<Bf16>> = kernel_of(cross_entropy_fused_bf16);
