//! FP8 quantisation: a rows × cols f32 matrix into e4m3 codes, each group of `group` consecutive
//! elements of a row with a scale of its own (a row's last group may be shorter): `group` = 128 is
//! the 1×128 activation blocks of DeepSeek-V3-style FP8 products, `group` = cols one scale per row.
//! The arithmetic ([`scale_of`], [`code_of`]) is one f32 division for the group and one product per
//! element, the same on the GPU and on the host, so the host's reference is exact.
//!
//! * [`warp`]: a warp per group, eight per block: the group's largest magnitude by shuffles;
//! * [`block`]: a block of 256 per group, through shared memory: for long groups (a row each).
//!
//! A new rung is a file here and its line in [`FAMILY`].

pub mod block;
pub mod warp;

use ptxkit::device::fp8::E4M3;
use ptxkit::device::{GlobalSlice, GlobalSliceMut, max_nan};
use ptxkit::{Family, Problem};

/// One quantisation: a `rows × cols` matrix in groups of `group` along each row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuantizeFp8 {
    pub rows: u32,
    pub cols: u32,
    pub group: u32,
}

impl Problem for QuantizeFp8 {
    /// `(input, codes, scales, rows, cols, group)`: views of the rows × cols input, of as many e4m3
    /// codes (their bits), and of [`QuantizeFp8::scales_len`] scales (row by row, a row's groups in
    /// order).
    type Args = (GlobalSlice<f32>, GlobalSliceMut<u8>, GlobalSliceMut<f32>, u32, u32, u32);
}

/// The smallest largest magnitude a scale is made from: a group of zeros gets codes of zero and
/// this over 448 as its scale, not a division by zero (as torchao's and DeepGEMM's recipes clamp).
pub const AMAX_FLOOR: f32 = 1e-12;

/// e4m3's largest finite value.
pub const LARGEST: f32 = 448.0;

/// A group's scale from its largest magnitude `amax` (NaN where an element is): `amax / 448`, `amax`
/// at least [`AMAX_FLOOR`]; the group's values are its codes' values times it. NaN stays NaN; an
/// infinity gives an infinite scale.
#[inline(always)]
pub fn scale_of(amax: f32) -> f32 {
    max_nan(amax, AMAX_FLOOR) / LARGEST
}

/// What a group of largest magnitude `amax` multiplies its values by before rounding them:
/// `448 / amax`, `amax` at least [`AMAX_FLOOR`] (NaN where `amax` is; 0 where it is infinite).
#[inline(always)]
pub fn factor_of(amax: f32) -> f32 {
    LARGEST / max_nan(amax, AMAX_FLOOR)
}

/// `x`'s code in a group whose [`factor_of`] is `factor`: `x · factor` to the nearest e4m3,
/// clamped to ±448 ([`E4M3::from_f32_saturating`]); NaN is e4m3's one NaN code, 0x7f, whatever the
/// NaN's sign. A NaN in the group makes every code NaN (the
/// factor is NaN); an infinity, NaN for itself and 0 for the finite values (the factor is 0).
#[inline(always)]
pub fn code_of(x: f32, factor: f32) -> u8 {
    let scaled = x * factor;
    // One NaN code whatever the NaN's sign: the GPU's `inf · 0` is +NaN, x86's -NaN.
    if scaled.is_nan() {
        E4M3::NAN.0
    } else {
        E4M3::from_f32_saturating(scaled).0
    }
}

/// The larger magnitude, NaN where either is: the groups' reduction (any order gives the same).
#[inline(always)]
pub fn larger_magnitude(a: f32, b: f32) -> f32 {
    max_nan(a, abs(b))
}

/// `|x|` by clearing the sign bit (core's `f32::abs` is not in `no_std` without a library call).
#[inline(always)]
fn abs(x: f32) -> f32 {
    f32::from_bits(x.to_bits() & 0x7fff_ffff)
}

/// The quantisation kernels, in ladder order: the registry's list.
pub const FAMILY: Family<QuantizeFp8> = Family::new("quantize_fp8", &[warp::KERNEL, block::KERNEL]);

impl QuantizeFp8 {
    /// Groups in each row.
    pub const fn groups_per_row(&self) -> u32 {
        self.cols.div_ceil(self.group)
    }

    /// Groups in the matrix: one scale each.
    pub const fn groups(&self) -> u32 {
        self.rows * self.groups_per_row()
    }

    /// Group `g`'s row and its elements' first and end index within the row.
    #[inline(always)]
    pub const fn group_span(&self, g: u32) -> (u32, u32, u32) {
        let per_row = self.groups_per_row();
        let (row, first) = (g / per_row, (g % per_row) * self.group);
        let end = if first + self.group < self.cols {
            first + self.group
        } else {
            self.cols
        };
        (row, first, end)
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl QuantizeFp8 {
    /// rows, cols and group at least 1, the matrix and its scales within 32-bit indices.
    pub fn new(rows: usize, cols: usize, group: usize) -> Result<Self, ptxkit::InvalidSize> {
        let invalid = |reason: String| ptxkit::InvalidSize {
            problem: "quantize_fp8",
            reason,
        };
        if rows == 0 || cols == 0 || group == 0 {
            return Err(invalid(format!(
                "rows {rows}, cols {cols}, group {group}: each must be at least 1"
            )));
        }
        let elements = rows.checked_mul(cols).filter(|&e| e < 1 << 32);
        if elements.is_none() {
            return Err(invalid(format!(
                "{rows} × {cols} elements: the kernels index fewer than 2^32"
            )));
        }
        let (rows, cols, group) = (rows as u32, cols as u32, group.min(cols) as u32);
        Ok(QuantizeFp8 { rows, cols, group })
    }

    /// Elements of the input and of the codes.
    pub const fn elements(&self) -> usize {
        self.rows as usize * self.cols as usize
    }

    /// Scales written: one per group.
    pub const fn scales_len(&self) -> usize {
        self.groups() as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A group's codes times its scale give back its values to e4m3's precision, the largest
    /// magnitude exactly 448 codes' worth; zeros, NaN and infinities as the functions say.
    #[test]
    fn codes_times_the_scale_give_back_the_values() {
        let values = [0.3f32, -2.5, 1e-3, 7.0, -7.0, 0.0];
        assert_eq!(E4M3::MAX.to_f32(), LARGEST);
        let amax = values.iter().fold(0.0, |m, &x| larger_magnitude(m, x));
        assert_eq!(amax, 7.0);
        let (scale, factor) = (scale_of(amax), factor_of(amax));
        for x in values {
            let back = E4M3(code_of(x, factor)).to_f32() * scale;
            assert!(
                (back - x).abs() <= x.abs() / 16.0 + scale * 2f32.powi(-9),
                "{x} -> {back}"
            );
        }
        assert_eq!(E4M3(code_of(-7.0, factor)).to_f32(), -448.0);
        assert_eq!(code_of(0.0, factor_of(0.0)), 0);
        assert_eq!(scale_of(0.0), AMAX_FLOOR / 448.0);
        assert!(scale_of(f32::NAN).is_nan() && E4M3(code_of(1.0, factor_of(f32::NAN))).is_nan());
        assert!(larger_magnitude(1.0, f32::NAN).is_nan() && larger_magnitude(f32::NAN, 1.0).is_nan());
        assert_eq!(scale_of(f32::INFINITY), f32::INFINITY);
        assert!(E4M3(code_of(f32::NEG_INFINITY, factor_of(f32::INFINITY))).is_nan());
        assert_eq!(E4M3(code_of(-3.0, factor_of(f32::INFINITY))).to_f32(), 0.0);
    }

    /// Groups cover each row once, the last one short where `group` does not divide cols.
    #[test]
    fn groups_cover_each_row_once() {
        let p = QuantizeFp8::new(3, 300, 128).unwrap();
        assert_eq!(p.groups_per_row(), 3);
        let spans: Vec<_> = (0..p.groups()).map(|g| p.group_span(g)).collect();
        assert_eq!(spans[0], (0, 0, 128));
        assert_eq!(spans[2], (0, 256, 300));
        assert_eq!(spans[5], (1, 256, 300));
        assert_eq!(QuantizeFp8::new(2, 50, 128).unwrap().group, 50);
        assert!(QuantizeFp8::new(0, 5, 1).is_err() && QuantizeFp8::new(1, 5, 0).is_err());
    }
}
