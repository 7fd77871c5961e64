//! [`super::fused`]'s training pass with each block's rows overlapped: a block of [`THREADS`]
//! takes rows a grid apart (a grid of the blocks the GPU holds at once) and issues the next row's
//! loads as soon as this row's gradient is written, so that they travel while the block waits at
//! its barriers and while the GPU drains its stores. A block per row, alone on its SM, left DRAM
//! idle from its last loads to the next block's first.
//!
//! Rows past [`on_chip_cols`] are read twice, once for their statistics and once for their
//! gradient (`super::fused` reads only their part past the chip twice, but its path beside the
//! pipelined loop made the kernel spill).
//!
//! Each element of a counted row's gradient is written as if it were not the target's (no column
//! test per element: it cost registers and instructions), and the target's put right after a
//! barrier by thread 0.

use super::forward::{Loss, loss_of, total_by_last_block};
use super::walk::{fill_row, map_row, read_row};
use super::{CrossEntropyFused, in_range};
use crate::element::RowElement;
use crate::softmax::on_chip::{Held, Staging, THREADS, WARPS, load, on_chip_cols, statistics, write};
use crate::softmax::{Running, block_running};
use ptxkit::device::mma::Bf16;
use ptxkit::device::{GlobalSlice, GlobalSliceMut, block_idx, exp, grid_dim, sync_threads, thread_idx};
use ptxkit::{Dim3, Kernel, Problem, SharedMemory, kernel};

/// The gradient's factor for a counted row: the mean's 1 / (rows counted), else 1; NaN for a
/// target outside the classes (the row's loss is NaN too).
///
/// # Safety
/// With `mean`, `count` holds the rows counted.
#[inline(always)]
unsafe fn scale_of(target: i64, cols: u32, count: GlobalSlice<f32>, mean: u32) -> f32 {
    if !in_range(target, cols) {
        f32::NAN
    } else if mean != 0 {
        // The backward pass's division, so that a loss gradient of 1 gives its bits.
        // SAFETY: the caller's promise.
        1.0 / unsafe { count.get_unchecked(0u32) }
    } else {
        1.0
    }
}

/// The gradient of a row's loss at a column that is not the target's: `e^((x − m) − l) · scale`.
#[inline(always)]
fn gradient_off_target(loss: Loss, scale: f32) -> impl Fn(u32, f32) -> f32 {
    let (max, ln_sum) = (loss.max, loss.ln_sum);
    #[inline(always)]
    move |_: u32, x: f32| exp((x - max) - ln_sum) * scale
}

/// Row `row`'s loss and (m, l), by thread 0.
///
/// # Safety
/// row < rows; `losses` holds rows elements, `stats` 2 · rows.
#[inline(always)]
unsafe fn put_loss(losses: GlobalSliceMut<f32>, stats: GlobalSliceMut<f32>, row: u32, loss: Loss) {
    if thread_idx().x == 0 {
        // SAFETY: the caller's promise.
        unsafe {
            losses.set_unchecked(row, loss.loss);
            stats.set_unchecked(2 * row, loss.max);
            stats.set_unchecked(2 * row + 1, loss.ln_sum);
        }
    }
}

/// An ignored row's outputs: a loss and statistics of zeros, a gradient of zeros.
///
/// # Safety
/// row < rows; `losses` holds rows elements, `stats` 2 · rows, `dst` the row's `cols`; the block
/// has [`THREADS`] threads.
#[inline(always)]
unsafe fn put_ignored<E: RowElement>(
    (losses, stats): (GlobalSliceMut<f32>, GlobalSliceMut<f32>),
    dst: GlobalSliceMut<E>,
    row: u32,
    cols: u32,
) {
    // SAFETY: the caller's promise; t < THREADS.
    unsafe {
        put_loss(losses, stats, row, Loss::IGNORED);
        fill_row::<_, THREADS>(dst, cols, thread_idx().x, 0.0);
    }
}

/// The target's element of a counted row's gradient, written by [`write`] as if it were not the
/// target's, put right: after a barrier (every thread's stores of the row first), thread 0 writes
/// it again with the one taken off, from the statistics [`put_loss`] wrote (the same expression as
/// [`super::fused`]'s, so the same bits).
///
/// # Safety
/// `src` and `dst` hold the row's `cols` elements; `stats` holds row `row`'s statistics, written
/// by this block's thread 0; with `mean`, `count` holds the rows counted; every thread calls (the
/// target is the block's).
#[inline(always)]
unsafe fn put_target_gradient<E: RowElement>(
    (src, dst): (GlobalSlice<E>, GlobalSliceMut<E>),
    cols: u32,
    target: i64,
    (count, mean): (GlobalSlice<f32>, u32),
    stats: GlobalSliceMut<f32>,
    row: u32,
) {
    if !in_range(target, cols) {
        return;
    }
    sync_threads();
    if thread_idx().x == 0 {
        // SAFETY: the caller's promises; the target is inside the row.
        unsafe {
            let (max, ln_sum) = (stats.get_unchecked(2 * row), stats.get_unchecked(2 * row + 1));
            let c = target as u32;
            let p = exp((src.get_unchecked(c).to_f32() - max) - ln_sum);
            dst.set_unchecked(c, E::from_f32((p - 1.0) * scale_of(target, cols, count, mean)));
        }
    }
}

/// The block's rows (`block`, then a grid apart): loss, statistics and gradient; then the last
/// block adds the losses.
///
/// # Safety
/// The kernel's contract; a block of [`THREADS`].
#[inline(always)]
unsafe fn pipelined<E: RowElement>(args: <CrossEntropyFused<E> as Problem>::Args) {
    let (logits, targets, count, losses, stats, total, ticket, grad, rows, cols, ignore_index, mean) = args;
    let Staging {
        staged,
        maxes,
        sums,
        last,
    } = Staging::carve();
    let views = |row: u32| {
        let base = row as usize * cols as usize;
        (logits.tail(base).head(cols), grad.tail(base).head(cols))
    };
    // Read where used (from cache) rather than held in registers across a row.
    // SAFETY: row < rows wherever a target is read.
    let target_of = |row: u32| unsafe { targets.get_unchecked(row) };
    let mut row = block_idx().x;
    if cols > on_chip_cols::<E>() {
        // Rows past the chip read twice, for the statistics and for the gradient: register-light,
        // so as not to take registers from the pipelined loop below (the on-chip path of
        // `super::fused` here spilled).
        while row < rows {
            let (src, dst) = views(row);
            let target = target_of(row);
            // Uniform over the block: its barriers are reached by all of its threads or none.
            if target == ignore_index {
                // SAFETY: row < rows; the row is inside the gradient.
                unsafe { put_ignored((losses, stats), dst, row, cols) };
            } else {
                let mut running = Running::EMPTY;
                // SAFETY: row < rows: the row is inside both matrices; t < THREADS, every thread
                // calls; the kernel's contract for `count`.
                unsafe {
                    read_row::<_, THREADS>(src, cols, thread_idx().x, |_, x| running = running.see(x));
                    let loss = loss_of(block_running::<WARPS>(maxes, sums, running), src, target, cols);
                    put_loss(losses, stats, row, loss);
                    let scale = scale_of(target, cols, count, mean);
                    map_row::<_, THREADS>(src, dst, cols, thread_idx().x, gradient_off_target(loss, scale));
                    put_target_gradient((src, dst), cols, target, (count, mean), stats, row);
                }
            }
            row += grid_dim().x;
        }
    } else {
        let counted = |row: u32| row < rows && target_of(row) != ignore_index;
        let mut held = if counted(row) {
            // SAFETY: the row is inside the logits.
            unsafe { load::<E>(staged, views(row).0, cols) }
        } else {
            Held::none::<E>()
        };
        while row < rows {
            let (src, dst) = views(row);
            let target = target_of(row);
            // Uniform over the block: its barriers are reached by all of its threads or none.
            if target == ignore_index {
                // SAFETY: row < rows; the row is inside the gradient.
                unsafe { put_ignored((losses, stats), dst, row, cols) };
            } else {
                // SAFETY: `held` is this row's, its staged copies this thread's latest; every
                // thread calls; row < rows; the kernel's contract for `count`.
                unsafe {
                    let row_stats = statistics::<E>((staged, maxes, sums), &held, Running::EMPTY);
                    let loss = loss_of(row_stats, src, target, cols);
                    put_loss(losses, stats, row, loss);
                    let scale = scale_of(target, cols, count, mean);
                    write::<E, false>(staged, (src, dst), cols, &held, gradient_off_target(loss, scale));
                }
            }
            let next = row + grid_dim().x;
            if counted(next) {
                // SAFETY: the row is inside the logits; this thread has read its staged slots of
                // this row (above), which the new copies overwrite.
                held = unsafe { load::<E>(staged, views(next).0, cols) };
            }
            // The target read again rather than held across the row's stores.
            let target = target_of(row);
            if target != ignore_index {
                // SAFETY: the row is inside both matrices; every thread calls; its statistics
                // are written above by thread 0.
                unsafe { put_target_gradient((src, dst), cols, target, (count, mean), stats, row) };
            }
            row = next;
        }
    }
    if total.is_empty() {
        return;
    }
    // SAFETY: this block's rows are written; THREADS threads, all here; the ticket's contract.
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
    /// f32 logits and gradient, as [`pipelined`].
    pub unsafe fn cross_entropy_fused_pipelined(logits: GlobalSlice<f32>, targets: GlobalSlice<i64>, count: GlobalSlice<f32>, losses: GlobalSliceMut<f32>, stats: GlobalSliceMut<f32>, total: GlobalSliceMut<f32>, ticket: GlobalSliceMut<u32>, grad: GlobalSliceMut<f32>, rows: u32, cols: u32, ignore_index: i64, mean: u32) {
        // SAFETY: the kernel's contract.
        unsafe { pipelined::<f32>((logits, targets, count, losses, stats, total, ticket, grad, rows, cols, ignore_index, mean)) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 1)]
    /// bf16 logits and gradient (f32 arithmetic, each gradient element rounded once), as
    /// [`pipelined`].
    pub unsafe fn cross_entropy_fused_pipelined_bf16(logits: GlobalSlice<Bf16>, targets: GlobalSlice<i64>, count: GlobalSlice<f32>, losses: GlobalSliceMut<f32>, stats: GlobalSliceMut<f32>, total: GlobalSliceMut<f32>, ticket: GlobalSliceMut<u32>, grad: GlobalSliceMut<Bf16>, rows: u32, cols: u32, ignore_index: i64, mean: u32) {
        // SAFETY: the kernel's contract.
        unsafe { pipelined::<Bf16>((logits, targets, count, losses, stats, total, ticket, grad, rows, cols, ignore_index, mean)) }
    }
}

/// Blocks of 1024 threads, each alone on its SM (at most 64 registers), with 160 KiB of shared
/// memory, up to the blocks the GPU holds at once, each taking rows a grid apart.
const fn kernel_of<E: RowElement>(
    code: ptxkit::KernelFn<<CrossEntropyFused<E> as Problem>::Args>,
) -> Kernel<CrossEntropyFused<E>> {
    Kernel {
        code,
        block: Dim3::x(THREADS),
        shared: SharedMemory::opt_in(Staging::BYTES),
        grid: |p, device| Dim3::x(device.at_most_resident(p.rows)),
    }
}

/// The f32 kernel.
pub const KERNEL: Kernel<CrossEntropyFused> = kernel_of(cross_entropy_fused_pipelined);
/// The bf16 kernel.
pub const KERNEL_BF16: Kernel<CrossEntropyFused<Bf16>> = kernel_of(cross_entropy_fused_pipelined_bf16);
