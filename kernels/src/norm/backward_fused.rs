//! The norms' three gradients from one read of x and dy: each block takes a run of rows, writes
//! each row's dx as [`super::backward`] does, and keeps, for the columns each thread walks, the
//! run's sums of dy·x̂ and dy in registers; each block then writes its sums as a row of `partials`,
//! and [`PARTIALS_KERNEL`] adds those rows, in block order, into dweight and dbias. The separate
//! path ([`super::backward`], then [`super::weight_grad`]) reads x and dy once more.
//!
//! The runs: [`rows_per_block`] rows each, at most [`MAX_BLOCKS`] blocks, fixed by the row count
//! alone (so the sums' order, and their bits, do not depend on the device). Rows up to
//! [`FUSED_COLS`] columns (each thread's sums in registers).

use super::THREADS;
use super::WARPS;
use crate::softmax::block_sum;
use ptxkit::device::{GlobalSlice, GlobalSliceMut, SharedSlice, block_idx, sync_threads, thread_idx, unrolled};
use ptxkit::{Dim3, Family, Kernel, Problem, SharedMemory, kernel, shared_memory};

/// Columns each thread keeps sums for.
pub const SLOTS: u32 = 32;
/// The widest row the fused kernels take.
pub const FUSED_COLS: u32 = THREADS * SLOTS;
/// The most blocks (rows of partial sums).
pub const MAX_BLOCKS: u32 = 256;

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
    /// One partial sum per warp, and the weight staged (zeros past the row, as far as a group of
    /// slots reads).
    pub struct Scratch {
        pub sums: SharedSlice<f32> = WARPS,
        pub weights: SharedSlice<f32> = STAGED_WEIGHTS,
    }
}

/// Slots read together: their loads in flight at once.
const GROUP: u32 = 4;

/// The staged weight's length: the widest row and a group's reach past it.
const STAGED_WEIGHTS: u32 = FUSED_COLS + GROUP * THREADS;

/// Calls `body(group)` for each group of [`GROUP`] slots (slots GROUP·group …) but those that
/// start past the row for thread `t`; the body sees slots past the row too, up to GROUP · THREADS
/// columns past it.
#[inline(always)]
fn in_groups(t: u32, cols: u32, mut body: impl FnMut(u32)) {
    unrolled::<{ SLOTS / GROUP }>(|group| {
        if t + THREADS * GROUP * group < cols {
            body(group);
        }
    });
}

/// Block b's run of rows: dx of each, and the run's sums for this thread's columns into row b of
/// the partials.
///
/// # Safety
/// The kernel's contract; cols ≤ [`FUSED_COLS`]; the block has [`THREADS`] threads, all calling.
#[inline(always)]
unsafe fn run<const CENTERED: bool>(args: <NormBackwardFused as Problem>::Args) {
    let (weight, cols) = (args.2, args.8);
    let Scratch { sums, weights } = Scratch::carve();
    // The weight read once per block rather than once per row; its presence decided once, not at
    // every slot (a branch per slot).
    if weight.is_empty() {
        // SAFETY: forwarded; no weight.
        unsafe { run_with::<CENTERED, false>(args, (sums, weights)) }
    } else {
        let mut c = thread_idx().x;
        while c < cols + GROUP * THREADS {
            // SAFETY: c < cols: the weight holds cols elements.
            weights.set(
                c,
                if c < cols {
                    unsafe { weight.get_unchecked(c) }
                } else {
                    0.0
                },
            );
            c += THREADS;
        }
        // The staged weight is whole before any thread reads it.
        sync_threads();
        // SAFETY: forwarded; the weight staged.
        unsafe { run_with::<CENTERED, true>(args, (sums, weights)) }
    }
}

/// [`run`] with the weight staged in `weights` (`WEIGHTED`) or none.
///
/// # Safety
/// As [`run`]'s; where `WEIGHTED`, `weights` holds the weight and zeros past it.
#[inline(always)]
unsafe fn run_with<const CENTERED: bool, const WEIGHTED: bool>(
    args: <NormBackwardFused as Problem>::Args,
    (sums, weights): (SharedSlice<f32>, SharedSlice<f32>),
) {
    let (input, grad_output, _, means, rstds, grad_input, partials, rows, cols) = args;
    let t = thread_idx().x;
    let per_block = rows_per_block(rows);
    let first = block_idx().x * per_block;
    let last = if first + per_block < rows {
        first + per_block
    } else {
        rows
    };
    let n = cols as f32;
    let (mut sum_w, mut sum_b) = ([0.0f32; SLOTS as usize], [0.0f32; SLOTS as usize]);
    let mut row = first;
    while row < last {
        let base = row as usize * cols as usize;
        let (x, dy, dx) = (input.tail(base), grad_output.tail(base), grad_input.tail(base));
        // SAFETY: row < rows; the statistics hold the rows'.
        let (mean, rstd) = unsafe {
            (
                if CENTERED { means.get_unchecked(row) } else { 0.0 },
                rstds.get_unchecked(row),
            )
        };
        // x̂ and g = dy·weight at column c, and dy.
        let terms = |c: u32| {
            // SAFETY: c is inside the matrix past the row's start and below the staged weight's
            // length (the callers' promise).
            let (xc, dyc) = unsafe { (x.get_unchecked(c), dy.get_unchecked(c)) };
            // SAFETY: as above.
            let g = if WEIGHTED {
                dyc * unsafe { weights.get_unchecked(c) }
            } else {
                dyc
            };
            ((xc - mean) * rstd, g, dyc)
        };
        // Where a group's reach past the row stays inside the matrix (every row but the last few),
        // each group's slots are read together, those past the row (the next row's) dropped by a
        // select: loads under a branch each would wait for each other, one slot's latency after
        // another's. The last rows read each slot under its own branch.
        let grouped = base + (cols + GROUP * THREADS) as usize <= input.len();
        let (mut row_g, mut row_gx) = (0.0f32, 0.0f32);
        if grouped {
            in_groups(t, cols, |group| {
                unrolled::<GROUP>(|k| {
                    let c = t + THREADS * (GROUP * group + k);
                    let inside = c < cols;
                    let (xh, g, _) = terms(c);
                    row_g += if inside { g } else { 0.0 };
                    row_gx += if inside { g * xh } else { 0.0 };
                })
            });
        } else {
            unrolled::<SLOTS>(|j| {
                let c = t + THREADS * j;
                if c < cols {
                    let (xh, g, _) = terms(c);
                    row_g += g;
                    row_gx += g * xh;
                }
            });
        }
        // SAFETY: every thread of the block calls both (the caller's promise).
        let mean_g = if CENTERED {
            (unsafe { block_sum::<{ super::WARPS }>(sums, row_g) }) / n
        } else {
            0.0
        };
        // SAFETY: as above.
        let mean_gx = (unsafe { block_sum::<{ super::WARPS }>(sums, row_gx) }) / n;
        let mut finish = |j: u32, (xh, g, dyc): (f32, f32, f32)| {
            let c = t + THREADS * j;
            let inside = c < cols;
            if inside {
                // SAFETY: c < cols.
                unsafe { dx.set_unchecked(c, rstd * (g - mean_g - xh * mean_gx)) };
            }
            // A slot past the row sums the next row's values, and is never written out.
            sum_w[j as usize] += dyc * xh;
            sum_b[j as usize] += dyc;
        };
        if grouped {
            in_groups(t, cols, |group| {
                // The group's loads first, then its stores: a store between them would wait for
                // its own slot's loads before the next slot's could start.
                let mut read = [(0.0f32, 0.0f32, 0.0f32); GROUP as usize];
                unrolled::<GROUP>(|k| read[k as usize] = terms(t + THREADS * (GROUP * group + k)));
                unrolled::<GROUP>(|k| finish(GROUP * group + k, read[k as usize]));
            });
        } else {
            unrolled::<SLOTS>(|j| {
                let c = t + THREADS * j;
                if c < cols {
                    finish(j, terms(c));
                }
            });
        }
        row += 1;
    }
    let blocks = blocks(rows) as usize;
    let at = block_idx().x as usize * cols as usize;
    unrolled::<SLOTS>(|j| {
        let c = t + THREADS * j;
        if c < cols {
            // SAFETY: block < blocks, c < cols: inside both halves of the partials.
            unsafe {
                partials.set_unchecked(at + c as usize, sum_w[j as usize]);
                partials.set_unchecked(blocks * cols as usize + at + c as usize, sum_b[j as usize]);
            }
        }
    });
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 2)]
    /// Block b: dx of layer norm's rows b·R … (R = rows_per_block), and their weight and bias
    /// sums into row b of the partials.
    pub unsafe fn layer_norm_backward_fused(input: GlobalSlice<f32>, grad_output: GlobalSlice<f32>, weight: GlobalSlice<f32>, mean: GlobalSlice<f32>, rstd: GlobalSlice<f32>, grad_input: GlobalSliceMut<f32>, partials: GlobalSliceMut<f32>, rows: u32, cols: u32) {
        // SAFETY: the kernel's contract; the launch's shape (a block of THREADS per run).
        unsafe { run::<true>((input, grad_output, weight, mean, rstd, grad_input, partials, rows, cols)) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 2)]
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
        let c = block_idx().x * THREADS + thread_idx().x;
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

/// A block of [`THREADS`] per run of rows; two resident per SM (128 registers a thread), so that
/// the [`MAX_BLOCKS`] runs are one wave.
pub const LAYER_KERNEL: Kernel<NormBackwardFused> = Kernel {
    code: layer_norm_backward_fused,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Scratch::BYTES),
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
    block: Dim3::x(THREADS),
    shared: SharedMemory::NONE,
    grid: |p, _| Dim3::x(p.cols.div_ceil(THREADS)),
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
