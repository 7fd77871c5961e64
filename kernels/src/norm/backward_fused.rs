//! The norms' three gradients from one read of x and dy: each block takes a run of rows, writes
//! each row's dx as [`super::backward`] does, and keeps, for the columns each thread walks, the
//! run's sums of dy·x̂ and dy in shared memory; each block then writes its sums as a row of
//! `partials`, and [`PARTIALS_KERNEL`] adds those rows, in block order, into dweight and dbias.
//! The separate path ([`super::backward`], then [`super::weight_grad`]) reads x and dy once more.
//!
//! Each thread holds its columns of the row (x and dy) in registers from the loads to the outputs,
//! every load of a row issued before any is used; a block's column sums stay in shared memory,
//! each thread's own columns, so that registers hold only the row and two blocks of
//! [`BLOCK_THREADS`] stay resident per SM (the row's loads of one overlap the other's barrier and
//! stores).
//!
//! The runs: [`rows_per_block`] rows each, at most [`MAX_BLOCKS`] blocks, fixed by the row count
//! alone (so the sums' order, and their bits, do not depend on the device). Rows up to
//! [`FUSED_COLS`] columns.

use ptxkit::device::{
    GlobalSlice, GlobalSliceMut, SharedSlice, WARP_SIZE, block_idx, shfl_xor, sync_threads, thread_idx, unrolled,
    unrolled_to,
};
use ptxkit::{Dim3, Family, Kernel, Problem, SharedMemory, kernel, shared_memory};

/// Threads per block of the fused kernels.
pub const BLOCK_THREADS: u32 = 512;
/// Warps per block of the fused kernels.
const BLOCK_WARPS: u32 = BLOCK_THREADS / WARP_SIZE;
/// Columns each thread holds: column t + BLOCK_THREADS · j for slot j.
pub const SLOTS: u32 = 16;
/// The widest row the fused kernels take.
pub const FUSED_COLS: u32 = BLOCK_THREADS * SLOTS;
/// The most slots whose x is held in registers from the loads to the outputs (with dy): wider
/// rows read x again after the row's sums (64 registers a thread, for two blocks per SM).
const HELD_SLOTS: u32 = 12;
/// The most blocks (rows of partial sums).
pub const MAX_BLOCKS: u32 = 256;
/// Threads per block of the partial sums' kernel.
const PARTIALS_THREADS: u32 = 256;

/// Rows each block takes for `rows` rows.
pub const fn rows_per_block(rows: u32) -> u32 {
    rows.div_ceil(MAX_BLOCKS)
}

/// Blocks (rows of partial sums) for `rows` rows.
pub const fn blocks(rows: u32) -> u32 {
    rows.div_ceil(rows_per_block(rows))
}

/// All three gradients of a norm over a `rows × cols` matrix, the weight's and bias's as partial
/// sums per block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NormBackwardFused {
    pub rows: u32,
    pub cols: u32,
}

impl Problem for NormBackwardFused {
    /// `(input, grad_output, weight, mean, rstd, grad_input, partials, rows, cols)`: as
    /// [`super::RowNormBackward`]'s, and `partials`: 2 · [`blocks`]`(rows)` · cols f32, each block's
    /// sums of dy·x̂ (the first blocks × cols) and of dy (the next), written.
    type Args = (
        GlobalSlice<f32>,
        GlobalSlice<f32>,
        GlobalSlice<f32>,
        GlobalSlice<f32>,
        GlobalSlice<f32>,
        GlobalSliceMut<f32>,
        GlobalSliceMut<f32>,
        u32,
        u32,
    );
}

/// The sum of a `blocks × cols` matrix of partial sums down its columns (twice: the weight's and
/// the bias's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartialSums {
    pub blocks: u32,
    pub cols: u32,
}

impl Problem for PartialSums {
    /// `(partials, dweight, dbias, blocks, cols)`: the 2 · blocks · cols partial sums; dweight
    /// (cols, written) and dbias (cols, written; or empty, not wanted).
    type Args = (GlobalSlice<f32>, GlobalSliceMut<f32>, GlobalSliceMut<f32>, u32, u32);
}

shared_memory! {
    /// Two rows' pairs of warp sums (alternate rows use alternate halves), the weight staged, and the block's column sums of dy·x̂ (the first FUSED_COLS) and of dy.
    pub struct Scratch {
        pub warp_sums: SharedSlice<f32> = 4 * BLOCK_WARPS,
        pub weights: SharedSlice<f32> = FUSED_COLS,
        pub column_sums: SharedSlice<f32> = 2 * FUSED_COLS,
    }
}

/// The sums of `a` and of `b` over the block, in every thread, through `half` (0 or 1) of
/// `warp_sums`. One barrier: the next call, which must take the other half, writes nothing this
/// call's reads need, and the call after it (this half again) starts after every thread has passed
/// the next call's barrier, so after this call's reads.
///
/// # Safety
/// Every thread of the block calls it, with the same `half`, alternating between calls.
#[inline(always)]
unsafe fn block_sum_pair(warp_sums: SharedSlice<f32>, half: u32, (a, b): (f32, f32)) -> (f32, f32) {
    let (mut a, mut b) = (a, b);
    let mut mask = WARP_SIZE / 2;
    while mask > 0 {
        a += shfl_xor(a, mask);
        b += shfl_xor(b, mask);
        mask /= 2;
    }
    let t = thread_idx().x;
    let at = 2 * BLOCK_WARPS * half;
    if t.is_multiple_of(WARP_SIZE) {
        let warp = t / WARP_SIZE;
        // SAFETY: at + BLOCK_WARPS + warp < 4 · BLOCK_WARPS.
        unsafe {
            warp_sums.set_unchecked(at + warp, a);
            warp_sums.set_unchecked(at + BLOCK_WARPS + warp, b);
        }
    }
    // Every warp's sums are staged before any thread reads them.
    sync_threads();
    let (mut all_a, mut all_b) = (0.0f32, 0.0f32);
    unrolled::<BLOCK_WARPS>(|w| {
        // SAFETY: as above.
        unsafe {
            all_a += warp_sums.get_unchecked(at + w);
            all_b += warp_sums.get_unchecked(at + BLOCK_WARPS + w);
        }
    });
    (all_a, all_b)
}

/// Block b's run of rows: dx of each, and the run's sums for this thread's columns into row b of
/// the partials.
///
/// # Safety
/// The kernel's contract; cols ≤ [`FUSED_COLS`]; the block has [`BLOCK_THREADS`] threads, all
/// calling.
#[inline(always)]
unsafe fn run<const CENTERED: bool>(args: <NormBackwardFused as Problem>::Args) {
    let (weight, cols) = (args.2, args.8);
    let scratch = Scratch::carve();
    // The weight read once per block rather than once per row; its presence decided once, not at
    // every slot.
    if weight.is_empty() {
        // SAFETY: forwarded; no weight.
        unsafe { run_with::<CENTERED, false>(args, scratch) }
    } else {
        let mut c = thread_idx().x;
        while c < cols {
            // SAFETY: c < cols: the weight holds cols elements.
            scratch.weights.set(c, unsafe { weight.get_unchecked(c) });
            c += BLOCK_THREADS;
        }
        // The staged weight is whole before any thread reads it.
        sync_threads();
        // SAFETY: forwarded; the weight staged.
        unsafe { run_with::<CENTERED, true>(args, scratch) }
    }
}

/// [`run`] with the weight staged in `scratch.weights` (`WEIGHTED`) or none: [`run_slots`] for
/// the row's slots per thread.
///
/// # Safety
/// As [`run`]'s; where `WEIGHTED`, `scratch.weights` holds the weight.
#[inline(always)]
unsafe fn run_with<const CENTERED: bool, const WEIGHTED: bool>(
    args: <NormBackwardFused as Problem>::Args,
    scratch: Scratch,
) {
    // The slots' count a constant in each body, so that no slot but the last needs a test (a test
    // per slot, hoisted out of the row loop, held a register each).
    macro_rules! by_slots {
        ($($s:literal)*) => {
            match args.8.div_ceil(BLOCK_THREADS) {
                // SAFETY: forwarded; cols ≤ s · BLOCK_THREADS.
                $($s => unsafe { run_slots::<CENTERED, WEIGHTED, $s>(args, scratch) },)*
                _ => {}
            }
        };
    }
    by_slots!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16);
}

/// [`run_with`] for rows of `S` slots per thread: more than (S − 1) · [`BLOCK_THREADS`] columns and
/// at most S · [`BLOCK_THREADS`], so that every slot but the last is inside the row in every
/// thread.
///
/// # Safety
/// As [`run_with`]'s; cols within the bounds above; S ≤ [`SLOTS`].
#[inline(always)]
unsafe fn run_slots<const CENTERED: bool, const WEIGHTED: bool, const S: u32>(
    args: <NormBackwardFused as Problem>::Args,
    scratch: Scratch,
) {
    let (input, grad_output, _, means, rstds, grad_input, partials, rows, cols) = args;
    let Scratch {
        warp_sums,
        weights,
        column_sums,
    } = scratch;
    let t = thread_idx().x;
    let per_block = rows_per_block(rows);
    let first = block_idx().x * per_block;
    let last = if first + per_block < rows {
        first + per_block
    } else {
        rows
    };
    let n = cols as f32;
    let column = |j: u32| t + BLOCK_THREADS * j;
    // Slot j is inside the row: every slot but the last, the last in the first threads.
    let last_inside = column(S - 1) < cols;
    let inside = |j: u32| j + 1 < S || last_inside;
    // Only this thread touches its columns' sums: no barrier.
    unrolled_to(S, |j| {
        // SAFETY: column(j) < S · BLOCK_THREADS ≤ FUSED_COLS: inside both halves.
        unsafe {
            column_sums.set_unchecked(column(j), 0.0);
            column_sums.set_unchecked(FUSED_COLS + column(j), 0.0);
        }
    });
    let mut half = 0;
    let mut row = first;
    while row < last {
        let base = row as usize * cols as usize;
        let (x, dy, dx) = (input.tail(base), grad_output.tail(base), grad_input.tail(base));
        // SAFETY: row < rows; the statistics hold the rows'.
        let statistics = || unsafe {
            (
                if CENTERED { means.get_unchecked(row) } else { 0.0 },
                rstds.get_unchecked(row),
            )
        };
        let (mean, rstd) = statistics();
        // Every load of the row first, then the sums: a load beside its use would wait before the
        // next load could start.
        let (mut xs, mut dys) = ([0.0f32; SLOTS as usize], [0.0f32; SLOTS as usize]);
        unrolled_to(S, |j| {
            if inside(j) {
                // SAFETY: inside the row.
                unsafe {
                    xs[j as usize] = x.get_unchecked(column(j));
                    dys[j as usize] = dy.get_unchecked(column(j));
                }
            }
        });
        // x̂ and g = dy·weight of slot j from its x and dy, for the row's (mean, rstd).
        let terms = |j: u32, (xj, dyj): (f32, f32), (mean, rstd): (f32, f32)| {
            let xh = (xj - mean) * rstd;
            // SAFETY: called for columns inside the row, which the staged weight holds.
            let g = if WEIGHTED {
                dyj * unsafe { weights.get_unchecked(column(j)) }
            } else {
                dyj
            };
            (xh, g)
        };
        let (mut row_g, mut row_gx) = (0.0f32, 0.0f32);
        unrolled_to(S, |j| {
            if inside(j) {
                let (xh, g) = terms(j, (xs[j as usize], dys[j as usize]), (mean, rstd));
                row_g += g;
                row_gx += g * xh;
            }
        });
        // SAFETY: every thread of the block calls it, halves alternating.
        let (sum_g, sum_gx) = unsafe { block_sum_pair(warp_sums, half, (row_g, row_gx)) };
        let mean_g = if CENTERED { sum_g / n } else { 0.0 };
        let mean_gx = sum_gx / n;
        // The statistics (and in `terms` the weight) read again past the barrier, so that x̂ and g
        // are computed again from x and dy rather than held across it beside them: registers
        // enough for two blocks per SM.
        let again = statistics();
        // Past HELD_SLOTS, x is read again (from L1 or L2) rather than held across the barrier.
        if S > HELD_SLOTS {
            unrolled_to(S, |j| {
                if inside(j) {
                    // SAFETY: inside the row.
                    xs[j as usize] = unsafe { x.get_unchecked(column(j)) };
                }
            });
        }
        unrolled_to(S, |j| {
            if inside(j) {
                let (c, (xh, g)) = (column(j), terms(j, (xs[j as usize], dys[j as usize]), again));
                let dyc = dys[j as usize];
                // SAFETY: c < cols ≤ FUSED_COLS: inside the row and both halves of the sums.
                unsafe {
                    dx.set_unchecked(c, again.1 * (g - mean_g - xh * mean_gx));
                    column_sums.set_unchecked(c, column_sums.get_unchecked(c) + dyc * xh);
                    column_sums.set_unchecked(FUSED_COLS + c, column_sums.get_unchecked(FUSED_COLS + c) + dyc);
                }
            }
        });
        half ^= 1;
        row += 1;
    }
    let blocks = blocks(rows) as usize;
    let at = block_idx().x as usize * cols as usize;
    unrolled_to(S, |j| {
        let c = column(j);
        if inside(j) {
            // SAFETY: block < blocks, c < cols: inside both halves of the partials.
            unsafe {
                partials.set_unchecked(at + c as usize, column_sums.get_unchecked(c));
                partials.set_unchecked(
                    blocks * cols as usize + at + c as usize,
                    column_sums.get_unchecked(FUSED_COLS + c),
                );
            }
        }
    });
}

kernel! {
    #[launch_bounds(Dim3::x(BLOCK_THREADS), 2)]
    /// Block b: dx of layer norm's rows b·R … (R = rows_per_block), and their weight and bias
    /// sums into row b of the partials.
    pub unsafe fn layer_norm_backward_fused(input: GlobalSlice<f32>, grad_output: GlobalSlice<f32>, weight: GlobalSlice<f32>, mean: GlobalSlice<f32>, rstd: GlobalSlice<f32>, grad_input: GlobalSliceMut<f32>, partials: GlobalSliceMut<f32>, rows: u32, cols: u32) {
        // SAFETY: the kernel's contract; the launch's shape (a block of BLOCK_THREADS per run).
        unsafe { run::<true>((input, grad_output, weight, mean, rstd, grad_input, partials, rows, cols)) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(BLOCK_THREADS), 2)]
    /// As [`layer_norm_backward_fused`], for RMS norm.
    pub unsafe fn rms_norm_backward_fused(input: GlobalSlice<f32>, grad_output: GlobalSlice<f32>, weight: GlobalSlice<f32>, mean: GlobalSlice<f32>, rstd: GlobalSlice<f32>, grad_input: GlobalSliceMut<f32>, partials: GlobalSliceMut<f32>, rows: u32, cols: u32) {
        // SAFETY: as above.
        unsafe { run::<false>((input, grad_output, weight, mean, rstd, grad_input, partials, rows, cols)) }
    }
}

kernel! {
    /// Thread c: column c of both halves of the partials added in block order into dweight[c]
    /// and (where wanted) dbias[c].
    pub unsafe fn norm_partials_sum(partials: GlobalSlice<f32>, dweight: GlobalSliceMut<f32>, dbias: GlobalSliceMut<f32>, blocks: u32, cols: u32) {
        let c = block_idx().x * PARTIALS_THREADS + thread_idx().x;
        if c >= cols {
            return;
        }
        let half = blocks as usize * cols as usize;
        let (mut w, mut b) = (0.0f32, 0.0f32);
        let mut k = 0;
        while k < blocks {
            let at = k as usize * cols as usize + c as usize;
            // SAFETY: k < blocks, c < cols: inside both halves.
            unsafe {
                w += partials.get_unchecked(at);
                b += partials.get_unchecked(half + at);
            }
            k += 1;
        }
        // SAFETY: c < cols.
        unsafe {
            dweight.set_unchecked(c, w);
            if !dbias.is_empty() {
                dbias.set_unchecked(c, b);
            }
        }
    }
}

/// A block of [`BLOCK_THREADS`] per run of rows; two resident per SM (64 registers a thread), so
/// that the [`MAX_BLOCKS`] runs are one wave.
pub const LAYER_KERNEL: Kernel<NormBackwardFused> = Kernel {
    code: layer_norm_backward_fused,
    block: Dim3::x(BLOCK_THREADS),
    shared: SharedMemory::opt_in(Scratch::BYTES),
    grid: |p, _| Dim3::x(blocks(p.rows)),
};

/// As [`LAYER_KERNEL`], for RMS norm.
pub const RMS_KERNEL: Kernel<NormBackwardFused> = Kernel {
    code: rms_norm_backward_fused,
    ..LAYER_KERNEL
};

/// A thread per column.
pub const PARTIALS_KERNEL: Kernel<PartialSums> = Kernel {
    code: norm_partials_sum,
    block: Dim3::x(PARTIALS_THREADS),
    shared: SharedMemory::NONE,
    grid: |p, _| Dim3::x(p.cols.div_ceil(PARTIALS_THREADS)),
};

/// Layer norm's fused gradients: the registry's list.
pub const LAYER_FAMILY: Family<NormBackwardFused> = Family::new("layer_norm_backward_fused", &[LAYER_KERNEL]);
/// RMS norm's fused gradients: the registry's list.
pub const RMS_FAMILY: Family<NormBackwardFused> = Family::new("rms_norm_backward_fused", &[RMS_KERNEL]);
/// The partial sums' column sums: the registry's list.
pub const PARTIALS_FAMILY: Family<PartialSums> = Family::new("norm_partials_sum", &[PARTIALS_KERNEL]);

#[cfg(not(target_arch = "nvptx64"))]
impl NormBackwardFused {
    /// At least one row and column, at most [`FUSED_COLS`] columns; elements within 32-bit
    /// indices.
    pub fn new(rows: usize, cols: usize) -> Result<Self, ptxkit::InvalidSize> {
        let (rows, cols) = crate::size::rows_and_cols("fused norm gradients", rows, cols)?;
        if cols > FUSED_COLS {
            return Err(ptxkit::InvalidSize {
                problem: "fused norm gradients",
                reason: format!(
                    "rows of at most {FUSED_COLS} columns ({cols} given): wider rows take the separate kernels (norm::backward, norm::weight_grad)"
                ),
            });
        }
        Ok(NormBackwardFused { rows, cols })
    }

    pub fn len(&self) -> usize {
        self.rows as usize * self.cols as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Elements of the partials: 2 · blocks · cols.
    pub fn partials_len(&self) -> usize {
        2 * blocks(self.rows) as usize * self.cols as usize
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl PartialSums {
    /// At least one block and column, within 32-bit indices.
    pub fn new(blocks: usize, cols: usize) -> Result<Self, ptxkit::InvalidSize> {
        let (blocks, cols) = crate::size::rows_and_cols("norm partial sums", 2 * blocks, cols)?;
        Ok(PartialSums {
            blocks: blocks / 2,
            cols,
        })
    }
}
