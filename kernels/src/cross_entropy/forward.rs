//! The forward pass: one read of each row keeps each thread's running maximum and sum of
//! e^(x − maximum) (as softmax's online rung), the threads' pairs are merged, and one thread writes
//! the row's loss and its (maximum, ln sum). A warp per row up to [`WARP_COLS`](super::WARP_COLS) classes (eight rows per block, the
//! merge by shuffles alone), a block per row beyond. Then each block takes a ticket (a fence after
//! the block's barrier first, releasing its losses); the block that takes the last one adds the losses in row order and counts the
//! rows not ignored, so the mean comes out of the same launch, the same bits whichever block
//! finished when.

use super::walk::read_row;
use super::{CrossEntropy, THREADS, WARPS, by_warp, in_range};
use crate::element::RowElement;
use crate::softmax::{Running, block_running, block_sum, warp_running};
use ptxkit::device::mma::Bf16;
use ptxkit::device::{
    GlobalSlice, GlobalSliceMut, SharedSlice, WARP_SIZE, block_idx, grid_dim, ln, sync_threads, thread_fence,
    thread_idx,
};
use ptxkit::{Dim3, Kernel, Problem, SharedMemory, kernel, shared_memory};

shared_memory! {
    /// One running pair per warp, and whether this block took the last ticket.
    pub struct Scratch {
        pub maxes: SharedSlice<f32> = WARPS,
        pub sums: SharedSlice<f32> = WARPS,
        pub last: SharedSlice<u32> = 1,
    }
}

/// A row's loss, maximum m and l = ln Σ e^(x − m), from its merged running pair: `(m − x[target])
/// + l`, in that order so that a large m does not round l away.
///
/// # Safety
/// `logits` holds the row's `cols` elements.
#[inline(always)]
pub(super) unsafe fn loss_of<E: RowElement>(stats: Running, logits: GlobalSlice<E>, target: i64, cols: u32) -> Loss {
    // A row of −∞ alone: a sum of 0, l = −∞, and the loss (m − −∞) + −∞, NaN, as PyTorch's.
    let ln_sum = ln(stats.sum);
    let picked = if in_range(target, cols) {
        // SAFETY: 0 ≤ target < cols.
        unsafe { logits.get_unchecked(target as u32) }.to_f32()
    } else {
        f32::NAN
    };
    Loss {
        loss: (stats.max - picked) + ln_sum,
        max: stats.max,
        ln_sum,
    }
}

/// A row's loss and the statistics its gradient needs.
#[derive(Clone, Copy)]
pub(super) struct Loss {
    pub(super) loss: f32,
    pub(super) max: f32,
    pub(super) ln_sum: f32,
}

impl Loss {
    /// An ignored row's: zeros.
    pub(super) const IGNORED: Loss = Loss {
        loss: 0.0,
        max: 0.0,
        ln_sum: 0.0,
    };
}

/// Row `row`'s loss and statistics by the whole block.
///
/// # Safety
/// `logits` holds the row's `cols` elements; the block has [`THREADS`] threads, all calling.
#[inline(always)]
unsafe fn block_loss<E: RowElement>(
    (maxes, sums): (SharedSlice<f32>, SharedSlice<f32>),
    logits: GlobalSlice<E>,
    target: i64,
    cols: u32,
) -> Loss {
    let mut running = Running::EMPTY;
    // SAFETY: the row holds cols elements; t < THREADS.
    unsafe { read_row::<_, THREADS>(logits, cols, thread_idx().x, |_, x| running = running.see(x)) };
    // SAFETY: every thread of the block calls it (the caller's promise).
    let stats = unsafe { block_running::<WARPS>(maxes, sums, running) };
    // SAFETY: the caller's promise.
    unsafe { loss_of(stats, logits, target, cols) }
}

/// Row `row`'s loss and statistics by one warp.
///
/// # Safety
/// `logits` holds the row's `cols` elements; every lane of the warp calls it.
#[inline(always)]
unsafe fn warp_loss<E: RowElement>(logits: GlobalSlice<E>, target: i64, cols: u32) -> Loss {
    let mut running = Running::EMPTY;
    // SAFETY: the row holds cols elements; the lane is below 32.
    unsafe {
        read_row::<_, WARP_SIZE>(logits, cols, thread_idx().x % WARP_SIZE, |_, x| {
            running = running.see(x)
        })
    };
    // SAFETY: the caller's promise.
    unsafe { loss_of(warp_running(running), logits, target, cols) }
}

/// The last block's work: the losses' sum in row order (divided by the rows counted where
/// `mean`), and the count, into `total`.
///
/// # Safety
/// `losses` and `targets` hold `rows` elements each, every block's loss written and fenced;
/// `total` holds 2; the block has `T` threads in `W` warps, all calling.
#[inline(always)]
unsafe fn finish<const T: u32, const W: u32>(
    sums: SharedSlice<f32>,
    (losses, targets): (GlobalSliceMut<f32>, GlobalSlice<i64>),
    total: GlobalSliceMut<f32>,
    (rows, ignore_index, mean): (u32, i64, u32),
) {
    let t = thread_idx().x;
    let (mut sum, mut count) = (0.0f32, 0.0f32);
    let mut r = t;
    while r < rows {
        // SAFETY: r < rows; each loss was stored and fenced by its block before its ticket.
        sum += unsafe { losses.at_unchecked(r) }.load_relaxed();
        // SAFETY: r < rows.
        if unsafe { targets.get_unchecked(r) } != ignore_index {
            count += 1.0;
        }
        r += T;
    }
    // SAFETY: the caller's promise; `sums` is free after the barriers of the row's reduction. A
    // count per thread below 2^24 rows each is exact, and so is their sum below 2^24 in all.
    let count = unsafe { block_sum::<W>(sums, count) };
    // Stored before the next sum's barriers: its warps' partials are added here, not held in
    // registers across the next sum's loads (32 warps' of both spilled).
    if t == 0 {
        // SAFETY: total holds 2 (the caller's promise).
        unsafe { total.set_unchecked(1u32, count) };
    }
    // SAFETY: as above.
    let sum = unsafe { block_sum::<W>(sums, sum) };
    if t == 0 {
        // SAFETY: as above.
        unsafe { total.set_unchecked(0u32, if mean != 0 { sum / count } else { sum }) };
    }
}

/// The total by the block that finishes last: every block takes a ticket (thread 0's fence after
/// the barrier first, releasing the block's losses: cumulative through the barrier); the block
/// that takes the last one adds the losses ([`finish`]) and leaves the ticket at zero.
///
/// # Safety
/// As for [`finish`], but only this block's losses need be written yet; `T` is the block's
/// thread count, in `W` warps, every thread calling; `ticket` holds one u32
/// that was zero before the launch.
#[inline(always)]
pub(super) unsafe fn total_by_last_block<const T: u32, const W: u32>(
    (sums, last): (SharedSlice<f32>, SharedSlice<u32>),
    (losses, targets): (GlobalSliceMut<f32>, GlobalSlice<i64>),
    (total, ticket): (GlobalSliceMut<f32>, GlobalSliceMut<u32>),
    (rows, ignore_index, mean): (u32, i64, u32),
) {
    let t = thread_idx().x;
    // Every row of the block is written before the barrier.
    sync_threads();
    if t == 0 {
        // SAFETY: the ticket holds one u32 that is zero before the launch.
        unsafe {
            thread_fence();
            let taken = ticket.at_unchecked(0u32).atomic_add(1);
            last.set(0, (taken == grid_dim().x - 1) as u32);
        }
    }
    // The ticket's verdict is in shared memory before any thread reads it.
    sync_threads();
    if last.get(0) != 0 {
        // Every block fenced its losses before taking its ticket.
        thread_fence();
        // SAFETY: every loss is written; the caller's promise for the rest.
        unsafe { finish::<T, W>(sums, (losses, targets), total, (rows, ignore_index, mean)) };
        if t == 0 {
            // SAFETY: no block uses the ticket any more in this launch.
            unsafe { ticket.at_unchecked(0u32).store_relaxed(0) };
        }
    }
}

/// Row `row`'s loss and (m, l) into `losses` and `stats` by a warp (`by_warp`) or the block,
/// skipped (zeros) where its target is ignored.
///
/// # Safety
/// row < rows; the views hold the kernel's contract's elements; every lane of the warp (or thread
/// of the block) calls it.
#[inline(always)]
unsafe fn row_loss<E: RowElement>(
    (maxes, sums): (SharedSlice<f32>, SharedSlice<f32>),
    (logits, targets): (GlobalSlice<E>, GlobalSlice<i64>),
    (losses, stats): (GlobalSliceMut<f32>, GlobalSliceMut<f32>),
    (row, cols, ignore_index): (u32, u32, i64),
    by_warp: bool,
) {
    // SAFETY: row < rows.
    let target = unsafe { targets.get_unchecked(row) };
    // Uniform over the warp or block: its barriers are reached by all of its threads or none.
    let row_loss = if target == ignore_index {
        Loss::IGNORED
    } else {
        let row_logits = logits.tail(row as usize * cols as usize).head(cols);
        // SAFETY: the row is inside the logits; the whole warp or block is here.
        unsafe {
            if by_warp {
                warp_loss(row_logits, target, cols)
            } else {
                block_loss((maxes, sums), row_logits, target, cols)
            }
        }
    };
    let leader = if by_warp { WARP_SIZE } else { THREADS };
    if thread_idx().x.is_multiple_of(leader) {
        // SAFETY: losses holds rows elements, stats 2 · rows.
        unsafe {
            losses.set_unchecked(row, row_loss.loss);
            stats.set_unchecked(2 * row, row_loss.max);
            stats.set_unchecked(2 * row + 1, row_loss.ln_sum);
        }
    }
}

/// The kernels' body: rows ≤ WARP_COLS classes: warp w of block b takes row 8b + w; longer rows:
/// block r row r. The last block to finish: the total.
///
/// # Safety
/// The kernel's contract; the launch [`KERNEL`]'s grid and block.
#[inline(always)]
unsafe fn forward<E: RowElement>(args: <CrossEntropy<E> as Problem>::Args) {
    let (logits, targets, losses, stats, total, ticket, rows, cols, ignore_index, mean) = args;
    let Scratch { maxes, sums, last } = Scratch::carve();
    let t = thread_idx().x;
    let warp = by_warp(cols);
    let row = if warp {
        block_idx().x * WARPS + t / WARP_SIZE
    } else {
        block_idx().x
    };
    // A warp past the last row has no row, but stays for the block's barrier below.
    if row < rows {
        // SAFETY: row < rows; the grid is a warp or a block per row, as `warp` says.
        unsafe {
            row_loss(
                (maxes, sums),
                (logits, targets),
                (losses, stats),
                (row, cols, ignore_index),
                warp,
            )
        };
    }
    if total.is_empty() {
        return;
    }
    // SAFETY: every row of the block is written (or the block has none); THREADS threads, all
    // here.
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
    /// f32 logits, as [`forward`].
    pub unsafe fn cross_entropy_forward(logits: GlobalSlice<f32>, targets: GlobalSlice<i64>, losses: GlobalSliceMut<f32>, stats: GlobalSliceMut<f32>, total: GlobalSliceMut<f32>, ticket: GlobalSliceMut<u32>, rows: u32, cols: u32, ignore_index: i64, mean: u32) {
        // SAFETY: the kernel's contract.
        unsafe { forward::<f32>((logits, targets, losses, stats, total, ticket, rows, cols, ignore_index, mean)) }
    }
}

kernel! {
    /// bf16 logits (each widened to f32), as [`forward`].
    pub unsafe fn cross_entropy_forward_bf16(logits: GlobalSlice<Bf16>, targets: GlobalSlice<i64>, losses: GlobalSliceMut<f32>, stats: GlobalSliceMut<f32>, total: GlobalSliceMut<f32>, ticket: GlobalSliceMut<u32>, rows: u32, cols: u32, ignore_index: i64, mean: u32) {
        // SAFETY: the kernel's contract.
        unsafe { forward::<Bf16>((logits, targets, losses, stats, total, ticket, rows, cols, ignore_index, mean)) }
    }
}

/// Blocks of [`THREADS`] threads: eight rows each up to [`WARP_COLS`](super::WARP_COLS) classes,
/// one beyond.
const fn kernel_of<E: RowElement>(
    code: ptxkit::KernelFn<<CrossEntropy<E> as Problem>::Args>,
) -> Kernel<CrossEntropy<E>> {
    Kernel {
        code,
        block: Dim3::x(THREADS),
        shared: SharedMemory::of(Scratch::BYTES),
        grid: |p, _| super::blocks(p.rows, p.cols),
    }
}

/// The f32 kernel.
pub const KERNEL: Kernel<CrossEntropy> = kernel_of(cross_entropy_forward);
/// The bf16 kernel.
pub const KERNEL_BF16: Kernel<CrossEntropy<Bf16>> = kernel_of(cross_entropy_forward_bf16);
