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
    pub fn from_f32(x: f32) -> Bf16 {
        let bits = x.to_bits();
        if x.is_nan() {
            return Bf16(((bits >> 16) | 0x40) as u16);
        }
        let rounding = 0x7fff + ((bits >> 16) & 1);
        Bf16((bits.wrapping_add(rounding) >> 16) as u16)
    }

    /// The value, exactly.
    pub fn to_f32(self) -> f32 {
        f32::from_bits((self.0 as u32) << 16)
    }
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
