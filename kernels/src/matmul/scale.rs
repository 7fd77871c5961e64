//! What a product's sums are multiplied by on their way to C, by their place in C ([`Scale`]):
//! nothing for the plain products (1, which the compiler folds away), one factor for a scaled
//! product with per-tensor scales, or a factor per row of A and one per column of B (the FP8
//! products' row-wise scales, [`crate::matmul_fp8::RowScales`]).

/// The factor the sum at `(row, col)` of C is multiplied by.
pub trait Scale: Copy {
    /// The factor for C's element `(row, col)`. A place past C's last row or column (a tile's
    /// edge, whose sums are never stored) gets some factor read from inside the scales, never
    /// from past them.
    fn at(self, row: u32, col: u32) -> f32;
}

/// One factor for every element (per-tensor scales, or 1).
impl Scale for f32 {
    #[inline(always)]
    fn at(self, _row: u32, _col: u32) -> f32 {
        self
    }
}
