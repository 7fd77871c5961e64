//! Tensor cores: `mma.sync`, one warp multiplying a 16×k tile of A by a k×8 tile of B into a 16×8
//! tile of f32 accumulators, each lane holding a few elements of each in registers (its
//! *fragments*). Which elements a lane holds is fixed by the PTX ISA ("Matrix Fragments for
//! mma.m16n8k16" and "mma.m16n8k8"); the position functions here are that table, in one place:
//! kernels use them to load and store fragments, the emulator to compute the product, the tests to
//! check both. With `group = lane / 4` and `member = lane % 4`:
//!
//! * bf16, m16n8k16: A (16×16, row-major) in four 32-bit registers of two bf16 each, register r
//!   holding row `group + 8·(r % 2)`, columns `2·member + 8·(r / 2)` and the next; B (16×8) in two
//!   registers, register r holding rows `2·member + 8·r` and the next of column `group`.
//! * tf32, m16n8k8: A (16×8) in four registers of one element each, register r at row
//!   `group + 8·(r % 2)`, column `member + 4·(r / 2)`; B (8×8) in two, register r at row
//!   `member + 4·r` of column `group`.
//! * The f32 accumulators C and D (16×8) in four registers, register r at row `group + 8·(r / 2)`,
//!   column `2·member + r % 2`.
//!
//! In a register of two bf16 the lower-numbered element is in the low 16 bits.

/// A bfloat16: the upper half of an f32 (8 exponent bits, 7 mantissa bits), kept as its bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(transparent)]
pub struct Bf16(pub u16);

impl Bf16 {
    /// `x` rounded to the nearest bf16, ties to even (NaN stays NaN).
    #[inline]
    pub fn from_f32(x: f32) -> Bf16 {
        let bits = x.to_bits();
        if x.is_nan() {
            return Bf16(((bits >> 16) | 0x40) as u16);
        }
        let rounding = 0x7fff + ((bits >> 16) & 1);
        Bf16((bits.wrapping_add(rounding) >> 16) as u16)
    }

    /// The value, exactly.
    #[inline]
    pub fn to_f32(self) -> f32 {
        f32::from_bits((self.0 as u32) << 16)
    }
}

/// An IEEE half (binary16: 5 exponent bits, 10 mantissa bits), kept as its bits. Its fragments
/// are bf16's: `mma.sync` m16n8k16 takes either in the same registers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(transparent)]
pub struct F16(pub u16);

impl F16 {
    /// `x` rounded to the nearest half, ties to even: past 65504 (by half a unit) to infinity,
    /// below 2^-14 to the subnormals, NaN stays NaN.
    #[inline]
    pub fn from_f32(x: f32) -> F16 {
        let bits = x.to_bits();
        let sign = ((bits >> 16) & 0x8000) as u16;
        let exponent = (bits >> 23) & 0xff;
        let mantissa = bits & 0x7f_ffff;
        if exponent == 0xff {
            return F16(sign | 0x7c00 | if mantissa != 0 { 0x200 } else { 0 });
        }
        // Below 2^-25 every value rounds to zero (2^-25 itself, a tie, to the even zero).
        if exponent < 102 {
            return F16(sign);
        }
        let half = if exponent < 113 {
            // A subnormal half: the value in units of 2^-24.
            round_shift(mantissa | 0x80_0000, 126 - exponent)
        } else {
            // Exponent and mantissa together, so that a carry out of the mantissa moves the
            // exponent (and past the largest finite half, to infinity's bits).
            round_shift(((exponent - 112) << 23) | mantissa, 13).min(0x7c00)
        };
        F16(sign | half as u16)
    }

    /// The value, exactly.
    #[inline]
    pub fn to_f32(self) -> f32 {
        let sign = ((self.0 & 0x8000) as u32) << 16;
        let (exponent, mantissa) = (((self.0 >> 10) & 0x1f) as u32, (self.0 & 0x3ff) as u32);
        let magnitude = match exponent {
            0 => mantissa as f32 * f32::from_bits(0x3380_0000), // mantissa · 2^-24
            0x1f => f32::from_bits(0x7f80_0000 | (mantissa << 13)),
            _ => f32::from_bits(((exponent + 112) << 23) | (mantissa << 13)),
        };
        f32::from_bits(sign | magnitude.to_bits())
    }
}

/// `value / 2^shift` rounded to the nearest integer, ties to even (`0 < shift < 32`).
#[inline]
pub(super) const fn round_shift(value: u32, shift: u32) -> u32 {
    let (kept, rest, half) = (value >> shift, value & ((1 << shift) - 1), 1 << (shift - 1));
    kept + (rest > half || (rest == half && kept & 1 == 1)) as u32
}

/// Two bf16 in one register, `low` (the lower-numbered element) in the low half.
#[inline(always)]
pub fn pack_bf16x2(low: Bf16, high: Bf16) -> u32 {
    (low.0 as u32) | ((high.0 as u32) << 16)
}

/// `low` and `high` rounded to bf16 (nearest, ties to even) and packed as [`pack_bf16x2`] packs
/// them: one `cvt.rn.bf16x2.f32` on the GPU.
#[inline(always)]
pub fn round_pack_bf16x2(low: f32, high: f32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let packed: u32;
        // SAFETY: arithmetic on registers; the instruction puts its first source in the upper half.
        unsafe {
            core::arch::asm!(
                "cvt.rn.bf16x2.f32 {}, {}, {};",
                out(reg32) packed, in(reg32) high, in(reg32) low,
                options(pure, nomem, nostack),
            )
        };
        packed
    }
    #[cfg(not(target_arch = "nvptx64"))]
    pack_bf16x2(Bf16::from_f32(low), Bf16::from_f32(high))
}

/// `x` as the tensor cores read a tf32 operand: its sign, exponent and upper 10 mantissa bits
/// (the lower 13 bits are not used).
#[inline(always)]
pub fn tf32_value(bits: u32) -> f32 {
    f32::from_bits(bits & !0x1fff)
}

/// Row and column of element `e` (0 or 1) of A-register `r` (0..4) of `lane`, bf16 m16n8k16.
#[inline(always)]
pub const fn bf16_a_position(lane: u32, r: u32, e: u32) -> (u32, u32) {
    (lane / 4 + 8 * (r % 2), 2 * (lane % 4) + 8 * (r / 2) + e)
}

/// Row (k) and column of element `e` of B-register `r` (0..2) of `lane`, bf16 m16n8k16.
#[inline(always)]
pub const fn bf16_b_position(lane: u32, r: u32, e: u32) -> (u32, u32) {
    (2 * (lane % 4) + 8 * r + e, lane / 4)
}

/// Row and column of A-register `r` (0..4) of `lane`, tf32 m16n8k8.
#[inline(always)]
pub const fn tf32_a_position(lane: u32, r: u32) -> (u32, u32) {
    (lane / 4 + 8 * (r % 2), lane % 4 + 4 * (r / 2))
}

/// Row (k) and column of B-register `r` (0..2) of `lane`, tf32 m16n8k8.
#[inline(always)]
pub const fn tf32_b_position(lane: u32, r: u32) -> (u32, u32) {
    (lane % 4 + 4 * r, lane / 4)
}

/// Row and column of accumulator register `r` (0..4) of `lane`, both shapes.
#[inline(always)]
pub const fn accumulator_position(lane: u32, r: u32) -> (u32, u32) {
    (lane / 4 + 8 * (r / 2), 2 * (lane % 4) + r % 2)
}

/// `D = A·B + C` for the warp's 16×16 bf16 A, 16×8 bf16 B and 16×8 f32 C, each lane giving its
/// fragments and getting its four elements of D (`mma.sync.aligned.m16n8k16.row.col.f32.bf16.
/// bf16.f32`, sm_80 and later). Every lane of the warp must call it together.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn mma_bf16_m16n8k16(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    super::backend::mma_bf16_m16n8k16(a, b, c)
}

/// As [`mma_bf16_m16n8k16`] on halves (`mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32`): the
/// same fragments, each holding two [`F16`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn mma_f16_m16n8k16(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    super::backend::mma_f16_m16n8k16(a, b, c)
}

/// `D = A·B + C` for the warp's 16×8 tf32 A, 8×8 tf32 B and 16×8 f32 C (`mma.sync.aligned.
/// m16n8k8.row.col.f32.tf32.tf32.f32`, sm_80 and later). Every lane of the warp must call it
/// together.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn mma_tf32_m16n8k8(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    super::backend::mma_tf32_m16n8k8(a, b, c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_rounds_to_nearest_even_and_keeps_exact_values() {
        assert_eq!(Bf16::from_f32(1.0).to_f32(), 1.0);
        assert_eq!(Bf16::from_f32(-2.5).to_f32(), -2.5);
        // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: to the even one, 1.
        assert_eq!(Bf16::from_f32(1.0 + 2f32.powi(-8)).to_f32(), 1.0);
        // Just above halfway: up.
        assert_eq!(
            Bf16::from_f32(1.0 + 2f32.powi(-8) + 2f32.powi(-20)).to_f32(),
            1.0 + 2f32.powi(-7)
        );
        assert!(Bf16::from_f32(f32::NAN).to_f32().is_nan());
        // Halves: exact values, ties to even, the largest finite, overflow, subnormals, zero.
        let half = |x: f32| F16::from_f32(x).0;
        assert_eq!(half(1.0), 0x3c00);
        assert_eq!(half(-2.0), 0xc000);
        assert_eq!(half(1.0 + 2f32.powi(-11)), 0x3c00);
        assert_eq!(half(1.0 + 3.0 * 2f32.powi(-11)), 0x3c02);
        assert_eq!(half(65504.0), 0x7bff);
        assert_eq!(half(65519.0), 0x7bff);
        assert_eq!(half(65520.0), 0x7c00);
        assert_eq!(half(f32::INFINITY), 0x7c00);
        assert_eq!(half(2f32.powi(-14)), 0x0400);
        assert_eq!(half(2f32.powi(-24)), 0x0001);
        assert_eq!(half(2f32.powi(-25)), 0x0000);
        assert_eq!(half(1.5 * 2f32.powi(-25)), 0x0001);
        assert_eq!(half(3.0 * 2f32.powi(-25)), 0x0002);
        assert_eq!(half(-0.0), 0x8000);
        assert!(F16::from_f32(f32::NAN).to_f32().is_nan());
        // Every half survives the trip through f32.
        for bits in 0..=u16::MAX {
            let x = F16(bits);
            if !x.to_f32().is_nan() {
                assert_eq!(F16::from_f32(x.to_f32()), x, "{bits:#06x}");
            }
        }
        assert_eq!(F16(0x0001).to_f32(), 2f32.powi(-24));
        assert_eq!(F16(0x7bff).to_f32(), 65504.0);
        assert_eq!(pack_bf16x2(Bf16(0x1234), Bf16(0xabcd)), 0xabcd_1234);
    }

    #[test]
    fn the_fragments_cover_each_matrix_once() {
        let mut a = [[0; 16]; 16];
        let mut b = [[0; 8]; 16];
        let mut ta = [[0; 8]; 16];
        let mut tb = [[0; 8]; 8];
        let mut acc = [[0; 8]; 16];
        for lane in 0..32 {
            for r in 0..4 {
                for e in 0..2 {
                    let (row, col) = bf16_a_position(lane, r, e);
                    a[row as usize][col as usize] += 1;
                }
                let (row, col) = tf32_a_position(lane, r);
                ta[row as usize][col as usize] += 1;
                let (row, col) = accumulator_position(lane, r);
                acc[row as usize][col as usize] += 1;
            }
            for r in 0..2 {
                for e in 0..2 {
                    let (row, col) = bf16_b_position(lane, r, e);
                    b[row as usize][col as usize] += 1;
                }
                let (row, col) = tf32_b_position(lane, r);
                tb[row as usize][col as usize] += 1;
            }
        }
        let once = |m: &[[u32; 8]]| m.iter().flatten().all(|&n| n == 1);
        assert!(a.iter().flatten().all(|&n| n == 1));
        assert!(once(&b) && once(&ta) && once(&tb) && once(&acc));
    }
}
