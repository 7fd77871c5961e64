//! Normalisation of each row of a rows × cols f32 matrix over its last dimension, as PyTorch's
//! `layer_norm` and `rms_norm` compute it in f32:
//!
//! * layer norm: `y = (x − mean) · rstd · weight + bias`, `rstd = 1 / √(var + eps)`, with the
//!   row's mean and its biased variance (the mean of (x − mean)²);
//! * RMS norm: `y = x · rstd · weight`, `rstd = 1 / √(mean(x²) + eps)`: the same walk with the mean
//!   taken as 0 (`x − 0` is `x`, bit for bit), so one body serves both (`CENTERED`).
//!
//! `weight` and `bias` are optional (an empty view: 1 and 0), as PyTorch's `elementwise_affine`
//! and `bias` arguments. Each row's `mean` (layer norm) and `rstd` go out too where those views are
//! not empty: what the backward pass reads. The variance is taken from the deviations after the
//! mean (two passes over the row, not E[x²] − E[x]², which cancels where the mean is large beside
//! the spread); the square root correctly rounded, so the GPU and the emulator agree bit for bit.
//!
//! * [`three_pass`]: a block per row reading it from global memory three times (mean, variance,
//!   output): the simple form, and the rung for rows too long to hold;
//! * [`registers`]: the row held in registers, read once: a warp per row up to
//!   [`registers::WARP_COLS`] columns (eight rows per block, no barrier), a block per row up to
//!   [`registers::BLOCK_COLS`], the three passes beyond.
//!
//! The backward pass: [`backward`] the input's gradient (a block per row), [`weight_grad`] the
//! weight's and bias's (sums down the columns, a block per strip of 32); or all three from one
//! read of x and dy ([`backward_fused`], rows up to 8192 columns).
//!
//! [`residual`]: the norm of `x + residual` with the sum written out as well (a transformer
//! block's residual stream), in f32 or bf16 ([`crate::element`]).

pub mod backward;
pub mod backward_fused;
pub mod registers;
pub mod residual;
pub mod three_pass;
pub mod weight_grad;

use ptxkit::device::{GlobalSlice, GlobalSliceMut};
use ptxkit::{Family, Problem};

/// Threads and warps per block: softmax's, whose row-in-registers geometry the norms share.
pub use crate::softmax::{THREADS, WARPS};

/// A normalisation of each row of a `rows × cols` row-major matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowNorm {
    pub rows: u32,
    pub cols: u32,
}

impl Problem for RowNorm {
    /// `(input, weight, bias, output, mean, rstd, rows, cols, eps)`: views of the rows × cols input
    /// and output; `weight` and `bias` of `cols` elements or empty (none); `mean` and `rstd` of
    /// `rows` elements or empty (not wanted); `eps` added to the variance (or mean square).
    type Args = (
        GlobalSlice<f32>,
        GlobalSlice<f32>,
        GlobalSlice<f32>,
        GlobalSliceMut<f32>,
        GlobalSliceMut<f32>,
        GlobalSliceMut<f32>,
        u32,
        u32,
        f32,
    );
}

/// The input gradient of a normalisation of each row of a `rows × cols` matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowNormBackward {
    pub rows: u32,
    pub cols: u32,
}

impl Problem for RowNormBackward {
    /// `(input, grad_output, weight, mean, rstd, grad_input, rows, cols)`: views of the forward
    /// pass's rows × cols input, the output's gradient and the input's (written); `weight` of
    /// `cols` elements or empty; the forward pass's `mean` (layer norm; empty for RMS norm) and
    /// `rstd` of `rows` elements.
    type Args = (
        GlobalSlice<f32>,
        GlobalSlice<f32>,
        GlobalSlice<f32>,
        GlobalSlice<f32>,
        GlobalSlice<f32>,
        GlobalSliceMut<f32>,
        u32,
        u32,
    );
}

/// Layer norm's input gradient: the registry's list.
pub const LAYER_NORM_BACKWARD_FAMILY: Family<RowNormBackward> =
    Family::new("layer_norm_backward", &[backward::LAYER_KERNEL]);

/// RMS norm's input gradient: the registry's list.
pub const RMS_NORM_BACKWARD_FAMILY: Family<RowNormBackward> = Family::new("rms_norm_backward", &[backward::RMS_KERNEL]);

/// The gradients of a normalisation's weight and bias over a `rows × cols` matrix: sums down its
/// columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NormWeightGrad {
    pub rows: u32,
    pub cols: u32,
}

impl Problem for NormWeightGrad {
    /// `(input, grad_output, mean, rstd, dweight, dbias, rows, cols)`: views of the forward pass's
    /// rows × cols input and the output's gradient; the forward pass's `mean` (layer norm; empty for
    /// RMS norm) and `rstd` of `rows` elements; the weight's gradient (`cols`, written) and the
    /// bias's (`cols`, or empty: not wanted).
    type Args = (
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

/// Layer norm's weight and bias gradients: the registry's list.
pub const LAYER_NORM_WEIGHT_GRAD_FAMILY: Family<NormWeightGrad> =
    Family::new("layer_norm_weight_grad", &[weight_grad::LAYER_KERNEL]);

/// RMS norm's weight (and bias) gradients: the registry's list.
pub const RMS_NORM_WEIGHT_GRAD_FAMILY: Family<NormWeightGrad> =
    Family::new("rms_norm_weight_grad", &[weight_grad::RMS_KERNEL]);

/// Layer norm's kernels, in ladder order: the registry's list.
pub const LAYER_NORM_FAMILY: Family<RowNorm> =
    Family::new("layer_norm", &[three_pass::LAYER_KERNEL, registers::LAYER_KERNEL]);

/// RMS norm's kernels, in ladder order: the registry's list.
pub const RMS_NORM_FAMILY: Family<RowNorm> = Family::new("rms_norm", &[three_pass::RMS_KERNEL, registers::RMS_KERNEL]);

/// What one row's normalisation reads besides the row, and where its statistics go.
#[derive(Clone, Copy)]
pub(crate) struct Affine {
    pub weight: GlobalSlice<f32>,
    pub bias: GlobalSlice<f32>,
    pub eps: f32,
}

impl Affine {
    /// `(x − mean) · rstd`, times the weight and plus the bias of column `c` where given.
    ///
    /// # Safety
    /// `c` is below the row's length (the weight and bias, where not empty, hold a row's).
    #[inline(always)]
    pub unsafe fn apply(&self, x: f32, (mean, rstd): (f32, f32), c: usize) -> f32 {
        let mut y = (x - mean) * rstd;
        if !self.weight.is_empty() {
            // SAFETY: the caller's promise.
            y *= unsafe { self.weight.get_unchecked(c) };
        }
        if !self.bias.is_empty() {
            // SAFETY: as above.
            y += unsafe { self.bias.get_unchecked(c) };
        }
        y
    }

    /// [`rstd`] with this row's eps.
    #[inline(always)]
    pub fn rstd<const CENTERED: bool>(&self, variance: f32) -> f32 {
        rstd::<CENTERED>(variance, self.eps)
    }
}

/// `1 / √(variance + eps)`, both roundings correct: the emulator's bits. RMS norm's mean square
/// (not `CENTERED`) that is infinite (a ±∞ in the row, or squares past f32's range) gives NaN, so
/// the whole row comes out NaN, as PyTorch's does; layer norm's infinite variance of finite values
/// gives 0, as PyTorch's does (and a ±∞ there makes the mean and every deviation NaN already).
#[inline(always)]
pub(crate) fn rstd<const CENTERED: bool>(variance: f32, eps: f32) -> f32 {
    let rstd = 1.0 / ptxkit::device::sqrt(variance + eps);
    // variance − variance: 0, or NaN for ±∞ (and NaN).
    #[allow(clippy::eq_op)]
    if CENTERED { rstd } else { rstd + (variance - variance) }
}

/// Writes row `row`'s statistics where their views are not empty: the mean where `CENTERED`.
///
/// # Safety
/// `row` is below the views' rows where they are not empty.
#[inline(always)]
pub(crate) unsafe fn write_statistics<const CENTERED: bool>(
    (means, rstds): (GlobalSliceMut<f32>, GlobalSliceMut<f32>),
    row: u32,
    (mean, rstd): (f32, f32),
) {
    if CENTERED && !means.is_empty() {
        // SAFETY: the caller's promise.
        unsafe { means.set_unchecked(row, mean) };
    }
    if !rstds.is_empty() {
        // SAFETY: as above.
        unsafe { rstds.set_unchecked(row, rstd) };
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl RowNorm {
    /// At least one row and column; elements within 32-bit indices.
    pub fn new(rows: usize, cols: usize) -> Result<Self, ptxkit::InvalidSize> {
        let (rows, cols) = crate::size::rows_and_cols("row normalisation", rows, cols)?;
        Ok(RowNorm { rows, cols })
    }

    pub fn len(&self) -> usize {
        self.rows as usize * self.cols as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl RowNormBackward {
    /// As [`RowNorm::new`].
    pub fn new(rows: usize, cols: usize) -> Result<Self, ptxkit::InvalidSize> {
        let RowNorm { rows, cols } = RowNorm::new(rows, cols)?;
        Ok(RowNormBackward { rows, cols })
    }

    pub fn len(&self) -> usize {
        self.rows as usize * self.cols as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl NormWeightGrad {
    /// As [`RowNorm::new`].
    pub fn new(rows: usize, cols: usize) -> Result<Self, ptxkit::InvalidSize> {
        let RowNorm { rows, cols } = RowNorm::new(rows, cols)?;
        Ok(NormWeightGrad { rows, cols })
    }

    pub fn len(&self) -> usize {
        self.rows as usize * self.cols as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
