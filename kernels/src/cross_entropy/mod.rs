//! Softmax cross-entropy over each row of a rows × cols f32 or bf16 matrix of logits, as PyTorch's
//! `cross_entropy(logits, targets, ignore_index=…, reduction=…)` computes it, without ever writing
//! the softmax out:
//!
//! * loss of row r: `(m_r − x[r][t_r]) + l_r`, with m_r the row's maximum, `l_r = ln Σ_c
//!   e^(x[r][c] − m_r)` and t_r the row's target class;
//! * gradient of the logits: `(e^((x[r][c] − m_r) − l_r) − [c = t_r]) · s_r`, with s_r the
//!   gradient reaching row r's loss: the mean's 1 / (rows counted), the sum's 1, or row r's own.
//!
//! The row's statistics pass from forward to backward as the pair (m_r, l_r), never as their sum
//! `lse_r = m_r + l_r`: where |m_r| is large, lse_r rounds l_r away (at m_r = 3·10^38 it is m_r
//! itself), and the loss and the probabilities with it. PyTorch's log-softmax subtracts in this
//! order too.
//!
//! A row whose target is `ignore_index` is not read: its loss and gradient are 0, and the mean
//! does not count it (all rows ignored: 0 / 0, NaN, as PyTorch's). PyTorch stops with a device
//! assert on a target outside `0..cols` that is not `ignore_index`; here that row's loss and
//! gradient are NaN, so the mean and the sum are too.
//!
//! * [`forward`]: one read of each row (running maximum and sum), the loss and the row's (m, l) out; the block
//!   that finishes last adds the losses in row order (the total's bits do not depend on which
//!   block ran when) and counts the rows, in the same launch;
//! * [`backward`]: one read and one write of each row, from the forward pass's (m, l).
//!
//! Both take a row by a warp up to [`WARP_COLS`] classes (eight rows per block), by a block beyond.
//!
//! Training reads the logits once instead of twice: [`count`] counts the rows a mean divides by,
//! [`fused`] writes the loss, (m, l), the total and the gradient for a loss gradient of 1 in one
//! pass (rows past [`fused::ON_CHIP_COLS`] read twice), and [`scale`] multiplies it by the loss
//! gradient in place where that is not 1. [`pipelined`] is [`fused`] with each block taking rows a
//! grid apart, a row's loads issued while the one before is written.
//!
//! Both walk a row by 16-byte vectors where it allows ([`walk`]).

pub mod backward;
pub mod count;
pub mod forward;
pub mod fused;
pub mod pipelined;
pub mod scale;
pub mod walk;

use crate::element::RowElement;
use core::marker::PhantomData;
use ptxkit::device::mma::Bf16;
use ptxkit::device::{GlobalSlice, GlobalSliceMut};
use ptxkit::{Family, Problem};

/// Threads per block (one block per row).
pub const THREADS: u32 = 256;
/// Warps per block.
pub const WARPS: u32 = THREADS / ptxkit::device::WARP_SIZE;

/// The most classes a warp takes a row of (eight rows per block); longer rows take a block.
pub const WARP_COLS: u32 = 1024;

/// Whether rows of `cols` classes go one to a warp.
#[inline(always)]
pub const fn by_warp(cols: u32) -> bool {
    cols <= WARP_COLS
}

/// The grid for `rows` rows of `cols` classes: a warp per row up to [`WARP_COLS`] classes (eight
/// rows per block), a block per row beyond.
pub(crate) const fn blocks(rows: u32, cols: u32) -> ptxkit::Dim3 {
    ptxkit::Dim3::x(if by_warp(cols) { rows.div_ceil(WARPS) } else { rows })
}

/// PyTorch's default `ignore_index`. Targets are i64, as PyTorch's class indices are.
pub const IGNORE_INDEX: i64 = -100;

/// How the rows' losses are combined in the forward pass's total.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// The sum over the rows not ignored, divided by how many there are.
    Mean,
    /// The sum over every row (ignored rows add 0).
    Sum,
}

impl Reduction {
    /// The kernel's `mean` argument.
    pub const fn flag(self) -> u32 {
        match self {
            Reduction::Mean => 1,
            Reduction::Sum => 0,
        }
    }
}

/// Softmax cross-entropy over each row of a `rows × cols` row-major matrix of logits of `E` (f32 or
/// bf16).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrossEntropy<E = f32> {
    pub rows: u32,
    pub cols: u32,
    pub element: PhantomData<E>,
}

impl<E: RowElement> Problem for CrossEntropy<E> {
    /// `(logits, targets, losses, stats, total, ticket, rows, cols, ignore_index, mean)`: views of
    /// the rows × cols logits and the `rows` targets; each row's loss (`rows`, written) and its
    /// (m, l) pair (`2 · rows`, written: m at 2r, l at 2r + 1; 0 and 0 for an ignored row);
    /// `total` (2 elements: the reduced loss and the rows counted, written by the last block; or
    /// empty for no reduction), `ticket` (one u32 that is zero, or empty with `total`); `mean` 1
    /// for the mean of the rows counted, 0 for the sum.
    type Args = (
        GlobalSlice<E>,
        GlobalSlice<i64>,
        GlobalSliceMut<f32>,
        GlobalSliceMut<f32>,
        GlobalSliceMut<f32>,
        GlobalSliceMut<u32>,
        u32,
        u32,
        i64,
        u32,
    );
}

/// The gradient of softmax cross-entropy with respect to logits of `E`, in `E`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrossEntropyBackward<E = f32> {
    pub rows: u32,
    pub cols: u32,
    pub element: PhantomData<E>,
}

impl<E: RowElement> Problem for CrossEntropyBackward<E> {
    /// `(logits, targets, stats, grad_loss, count, grad_logits, rows, cols, ignore_index)`: views of
    /// the rows × cols logits, the `rows` targets and the forward pass's `2 · rows` (m, l) pairs; the loss's
    /// gradient (1 element, every row's, for a mean or a sum; or `rows`, each row's own); `count`
    /// (1 element: the rows the mean counted, which divide the gradient; or empty); the logits'
    /// gradient (rows × cols, written).
    type Args = (
        GlobalSlice<E>,
        GlobalSlice<i64>,
        GlobalSlice<f32>,
        GlobalSlice<f32>,
        GlobalSlice<f32>,
        GlobalSliceMut<E>,
        u32,
        u32,
        i64,
    );
}

/// Forward and gradient in one launch: each row's loss, statistics and gradient (for a loss
/// gradient of 1), and the total.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrossEntropyFused<E = f32> {
    pub rows: u32,
    pub cols: u32,
    pub element: PhantomData<E>,
}

impl<E: RowElement> Problem for CrossEntropyFused<E> {
    /// `(logits, targets, count, losses, stats, total, ticket, grad_logits, rows, cols,
    /// ignore_index, mean)`: as [`CrossEntropy`]'s, with `count` (1 element: the rows not ignored,
    /// as [`CrossEntropyCount`] writes it, for `mean`; or empty) and the logits' gradient (rows ×
    /// cols, written: each row's divided by the count for `mean`).
    type Args = (
        GlobalSlice<E>,
        GlobalSlice<i64>,
        GlobalSlice<f32>,
        GlobalSliceMut<f32>,
        GlobalSliceMut<f32>,
        GlobalSliceMut<f32>,
        GlobalSliceMut<u32>,
        GlobalSliceMut<E>,
        u32,
        u32,
        i64,
        u32,
    );
}

/// The rows a mean counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrossEntropyCount {
    pub rows: u32,
}

impl Problem for CrossEntropyCount {
    /// `(targets, count, rows, ignore_index)`: the `rows` targets; `count` (1 element, written).
    type Args = (GlobalSlice<i64>, GlobalSliceMut<f32>, u32, i64);
}

/// The fused pass's gradient (of `E`) times the loss gradient, in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrossEntropyScale<E = f32> {
    pub rows: u32,
    pub cols: u32,
    pub element: PhantomData<E>,
}

impl<E: RowElement> Problem for CrossEntropyScale<E> {
    /// `(targets, grad_loss, grad_logits, rows, cols, ignore_index)`: the `rows` targets; the
    /// loss's gradient (1 element, every row's, or `rows`); the logits' gradient (rows × cols,
    /// read and written).
    type Args = (GlobalSlice<i64>, GlobalSlice<f32>, GlobalSliceMut<E>, u32, u32, i64);
}

/// The forward pass: the registry's list.
pub const FAMILY: Family<CrossEntropy> = Family::new("cross_entropy", &[forward::KERNEL]);

/// The forward pass over bf16 logits: the registry's list.
pub const BF16_FAMILY: Family<CrossEntropy<Bf16>> = Family::new("cross_entropy_bf16", &[forward::KERNEL_BF16]);

/// The logits' gradient: the registry's list.
pub const BACKWARD_FAMILY: Family<CrossEntropyBackward> = Family::new("cross_entropy_backward", &[backward::KERNEL]);

/// The gradient of bf16 logits, in bf16: the registry's list.
pub const BACKWARD_BF16_FAMILY: Family<CrossEntropyBackward<Bf16>> =
    Family::new("cross_entropy_backward_bf16", &[backward::KERNEL_BF16]);

/// Forward and gradient in one launch: the registry's list.
pub const FUSED_FAMILY: Family<CrossEntropyFused> =
    Family::new("cross_entropy_fused", &[fused::KERNEL, pipelined::KERNEL]);

/// The same over bf16 logits and gradient: the registry's list.
pub const FUSED_BF16_FAMILY: Family<CrossEntropyFused<Bf16>> = Family::new(
    "cross_entropy_fused_bf16",
    &[fused::KERNEL_BF16, pipelined::KERNEL_BF16],
);

/// The rows a mean counts: the registry's list.
pub const COUNT_FAMILY: Family<CrossEntropyCount> = Family::new("cross_entropy_count", &[count::KERNEL]);

/// The fused pass's gradient scaled: the registry's list.
pub const SCALE_FAMILY: Family<CrossEntropyScale> = Family::new("cross_entropy_scale", &[scale::KERNEL]);

/// The same for a bf16 gradient: the registry's list.
pub const SCALE_BF16_FAMILY: Family<CrossEntropyScale<Bf16>> =
    Family::new("cross_entropy_scale_bf16", &[scale::KERNEL_BF16]);

/// Whether `target` is a class of a row of `cols` (not ignored, not out of range): compared as
/// 64-bit numbers, so that 2^32 + 1 is out of range, not class 1.
#[inline(always)]
pub(crate) fn in_range(target: i64, cols: u32) -> bool {
    target >= 0 && target < cols as i64
}

/// The rows and columns of a cross-entropy launch: at least one row and column (class), elements
/// within 32-bit indices, and the rows' statistics too (two a row: 2 · rows within them).
#[cfg(not(target_arch = "nvptx64"))]
fn shape(rows: usize, cols: usize) -> Result<(u32, u32), ptxkit::InvalidSize> {
    let (rows, cols) = crate::size::rows_and_cols("cross-entropy", rows, cols)?;
    if rows > u32::MAX / 2 {
        return Err(ptxkit::InvalidSize {
            problem: "cross-entropy",
            reason: format!(
                "{rows} rows: each row's (max, ln sum) pair is indexed with 32 bits, so at most {} rows",
                u32::MAX / 2
            ),
        });
    }
    Ok((rows, cols))
}

#[cfg(not(target_arch = "nvptx64"))]
impl<E> CrossEntropy<E> {
    /// At least one row and column (class), elements within 32-bit indices.
    pub fn new(rows: usize, cols: usize) -> Result<Self, ptxkit::InvalidSize> {
        let (rows, cols) = shape(rows, cols)?;
        Ok(CrossEntropy {
            rows,
            cols,
            element: PhantomData,
        })
    }

    pub fn len(&self) -> usize {
        self.rows as usize * self.cols as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl<E> CrossEntropyFused<E> {
    /// As [`CrossEntropy::new`].
    pub fn new(rows: usize, cols: usize) -> Result<Self, ptxkit::InvalidSize> {
        let (rows, cols) = shape(rows, cols)?;
        Ok(CrossEntropyFused {
            rows,
            cols,
            element: PhantomData,
        })
    }

    pub fn len(&self) -> usize {
        self.rows as usize * self.cols as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl<E> CrossEntropyScale<E> {
    /// As [`CrossEntropy::new`].
    pub fn new(rows: usize, cols: usize) -> Result<Self, ptxkit::InvalidSize> {
        let (rows, cols) = shape(rows, cols)?;
        Ok(CrossEntropyScale {
            rows,
            cols,
            element: PhantomData,
        })
    }

    pub fn len(&self) -> usize {
        self.rows as usize * self.cols as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl CrossEntropyCount {
    /// At least one row.
    pub fn new(rows: usize) -> Result<Self, ptxkit::InvalidSize> {
        let (rows, _) = shape(rows, 1)?;
        Ok(CrossEntropyCount { rows })
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl<E> CrossEntropyBackward<E> {
    /// As [`CrossEntropy::new`].
    pub fn new(rows: usize, cols: usize) -> Result<Self, ptxkit::InvalidSize> {
        let (rows, cols) = shape(rows, cols)?;
        Ok(CrossEntropyBackward {
            rows,
            cols,
            element: PhantomData,
        })
    }

    pub fn len(&self) -> usize {
        self.rows as usize * self.cols as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::{CrossEntropy, CrossEntropyFused};

    #[test]
    fn cross_entropy_refuses_rows_whose_statistics_pass_32_bit_indices() {
        let most = (u32::MAX / 2) as usize;
        assert!(CrossEntropyFused::<f32>::new(most, 1).is_ok());
        let refused = CrossEntropy::<f32>::new(most + 1, 1).unwrap_err().reason;
        assert!(
            refused.contains(&format!("{} rows", most + 1)) && refused.contains("at most"),
            "{refused}"
        );
    }
}
