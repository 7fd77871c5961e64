//! What a product's sums are multiplied by on their way to C, by their place in C ([`Scale`]):
//! nothing for the plain products (1, which the compiler folds away), one factor for a scaled
//! product with per-tensor scales, a factor per row of A and one per column of B (the FP8
//! products' row-wise scales, [`crate::matmul_fp8::RowScales`]), or a factor per block of k, whose
//! sums are scaled on their own and added into f32 totals (block scales,
//! [`crate::matmul_fp8::BlockScales`]).

/// The factor the sums at `(row, col)` of C are multiplied by: once, on the way to C, or per
/// block of k ([`Scale::PER_BLOCK`]).
pub trait Scale: Copy {
    /// Whether each block of [`SCALE_BLOCK_K`] of k's sums are added into f32 totals on their own,
    /// times their factors ([`Scale::at_block`]); [`Scale::at`] then multiplies the totals.
    const PER_BLOCK: bool = false;

    /// The factor for C's element `(row, col)`. A place past C's last row or column (a tile's
    /// edge, whose sums are never stored) gets some factor read from inside the scales, never
    /// from past them.
    fn at(self, row: u32, col: u32) -> f32;

    /// The factor for the sums of block `block` of k at C's `(row, col)`, where
    /// [`Scale::PER_BLOCK`]; places past C as for [`Scale::at`], and a block past k's last (the
    /// tiles read a step ahead) gets some factor read from inside the scales.
    #[inline(always)]
    fn at_block(self, _block: u32, _row: u32, _col: u32) -> f32 {
        1.0
    }
}

/// The k of one block of block scales: FP8's 1×128 and 128×128 blocks, one step of its tiles.
pub const SCALE_BLOCK_K: u32 = 128;

/// Whether `scale`'s factors are per block of k ([`Scale::PER_BLOCK`]), for code that holds a
/// value of an unnamed type.
#[inline(always)]
pub const fn per_block<S: Scale>(_scale: &S) -> bool {
    S::PER_BLOCK
}

/// `S`'s factors with every block of k's sums added into f32 totals first ([`Scale::PER_BLOCK`],
/// each block's factor 1): the FP8 tensor cores' narrow sums kept to a block of k, as PyTorch's
/// `_scaled_mm` without `use_fast_accum`.
#[derive(Clone, Copy)]
pub struct Promoted<S>(pub S);

impl<S: Scale> Scale for Promoted<S> {
    const PER_BLOCK: bool = true;

    #[inline(always)]
    fn at(self, row: u32, col: u32) -> f32 {
        self.0.at(row, col)
    }
}

/// One factor for every element (per-tensor scales, or 1).
impl Scale for f32 {
    #[inline(always)]
    fn at(self, _row: u32, _col: u32) -> f32 {
        self
    }
}
