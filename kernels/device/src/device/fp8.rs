//! The two 8-bit floats of Hopper's tensor cores, kept as their bits, and their conversions from
//! and to f32, the same on the GPU and on the host:
//!
//! * [`E4M3`]: 4 exponent bits (bias 7), 3 mantissa bits, no infinities, one NaN per sign
//!   (`S.1111.111`): PyTorch's `float8_e4m3fn`, largest finite 448, smallest subnormal 2^-9;
//! * [`E5M2`]: 5 exponent bits (bias 15), 2 mantissa bits, infinities and NaNs as IEEE's: PyTorch's
//!   `float8_e5m2`, largest finite 57344, smallest subnormal 2^-16.
//!
//! `from_f32` is c10's conversion (`c10::Float8_e4m3fn(float)` and `Float8_e5m2(float)`, what
//! PyTorch's cast does on the CPU): round to nearest, ties to even, and what rounds past the
//! largest finite value is NaN (E4M3, which has no infinity) or infinity (E5M2).
//! `from_f32_saturating` is the PTX conversion's `.satfinite` (CUDA's `__nv_cvt_float_to_fp8` with
//! `__NV_SATFINITE`, which recent PyTorch calls to cast f32 to e4m3 on the GPU), and what
//! quantisation wants: past the largest finite value (infinities included) it clamps to it; NaN
//! stays NaN.

use super::mma::round_shift;

/// An e4m3 float (`float8_e4m3fn`), kept as its bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct E4M3(pub u8);

/// An e5m2 float (`float8_e5m2`), kept as its bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct E5M2(pub u8);

/// One 8-bit format's layout: what the conversions need to know of it.
struct Layout {
    mantissa_bits: u32,
    bias: u32,
    /// The largest finite value's magnitude bits.
    largest: u32,
    /// The magnitude bits of the NaN conversions give.
    nan: u32,
    /// Whether the magnitude bits past the largest finite value's are infinity (the others above
    /// them NaN), or all NaN.
    infinity: bool,
}

const E4M3_LAYOUT: Layout = Layout {
    mantissa_bits: 3,
    bias: 7,
    largest: 0x7e,
    nan: 0x7f,
    infinity: false,
};
const E5M2_LAYOUT: Layout = Layout {
    mantissa_bits: 2,
    bias: 15,
    largest: 0x7b,
    nan: 0x7f,
    infinity: true,
};

impl Layout {
    /// `x`'s bits in this format: the nearest value, ties to even, with `x`'s sign; NaN to
    /// [`Layout::nan`]; an infinity, or what rounds past the largest finite value, to the
    /// magnitude bits `overflow`.
    #[inline]
    fn encode(&self, x: f32, overflow: u32) -> u8 {
        let magnitude = x.to_bits() & 0x7fff_ffff;
        let code = if x.is_nan() {
            self.nan
        } else if magnitude >= 0x7f80_0000 {
            overflow
        } else {
            match self.round_magnitude(magnitude) {
                code if code > self.largest => overflow,
                code => code,
            }
        };
        sign_of(x) | code as u8
    }

    /// The magnitude bits nearest `|x|` (finite), ties to even, as if the format's exponent had no
    /// top: a value past the largest finite one comes out as the next code up (or above).
    #[inline]
    const fn round_magnitude(&self, magnitude_bits: u32) -> u32 {
        let exponent = magnitude_bits >> 23;
        let mantissa = magnitude_bits & 0x7f_ffff;
        // The format's biased exponent of a normal result.
        let biased = exponent as i32 - 127 + self.bias as i32;
        if biased >= 1 {
            // Exponent and mantissa together, so that a carry out of the mantissa moves the
            // exponent.
            round_shift(((biased as u32) << 23) | mantissa, 23 - self.mantissa_bits)
        } else {
            // A subnormal result: the value in units of the smallest subnormal, 2^(1 - bias - m).
            // f32's own subnormals (exponent 0) are far below half of that unit.
            let shift = 23 - self.mantissa_bits + (1 - biased) as u32;
            if exponent == 0 || shift >= 25 {
                0
            } else {
                round_shift(mantissa | 0x80_0000, shift)
            }
        }
    }

    /// Whether `bits` (of this format) are NaN.
    #[inline]
    const fn is_nan(&self, bits: u8) -> bool {
        let code = (bits & 0x7f) as u32;
        code > self.largest && !(self.infinity && code == self.largest + 1)
    }

    /// The value of `bits` (of this format), exactly.
    #[inline]
    fn decode(&self, bits: u8) -> f32 {
        let code = (bits & 0x7f) as u32;
        let magnitude = if code <= self.largest {
            self.magnitude(code)
        } else if self.is_nan(bits) {
            f32::NAN
        } else {
            f32::INFINITY
        };
        f32::from_bits(((bits as u32 & 0x80) << 24) | magnitude.to_bits())
    }

    /// The value of finite magnitude bits `code`, exactly.
    #[inline]
    fn magnitude(&self, code: u32) -> f32 {
        let (exponent, mantissa) = (code >> self.mantissa_bits, code & ((1 << self.mantissa_bits) - 1));
        if exponent == 0 {
            // mantissa · 2^(1 - bias - m): an exact f32.
            mantissa as f32 * f32::from_bits((127 + 1 - self.bias - self.mantissa_bits) << 23)
        } else {
            f32::from_bits(((exponent + 127 - self.bias) << 23) | (mantissa << (23 - self.mantissa_bits)))
        }
    }
}

/// `x`'s sign, as the top bit of an 8-bit float.
#[inline]
const fn sign_of(x: f32) -> u8 {
    (x.to_bits() >> 24) as u8 & 0x80
}

impl E4M3 {
    /// The largest finite value, 448.
    pub const MAX: E4M3 = E4M3(0x7e);
    /// The NaN c10's conversion gives (`0x7f`; with the sign bit, `0xff`, NaN too).
    pub const NAN: E4M3 = E4M3(0x7f);

    /// c10's conversion: `x` to the nearest e4m3, ties to even; NaN, infinities and what rounds
    /// past 448 (from 464 up, 464 itself a tie to 448) to NaN, keeping the sign.
    #[inline]
    pub fn from_f32(x: f32) -> E4M3 {
        E4M3(E4M3_LAYOUT.encode(x, Self::NAN.0 as u32))
    }

    /// As [`E4M3::from_f32`], but what rounds past 448 (infinities included) is ±448; NaN stays
    /// NaN (PTX's `cvt.rn.satfinite.e4m3x2.f32`).
    #[inline]
    pub fn from_f32_saturating(x: f32) -> E4M3 {
        E4M3(E4M3_LAYOUT.encode(x, Self::MAX.0 as u32))
    }

    /// Whether it is NaN (`S.1111.111`).
    #[inline]
    pub const fn is_nan(self) -> bool {
        E4M3_LAYOUT.is_nan(self.0)
    }

    /// The value, exactly.
    #[inline]
    pub fn to_f32(self) -> f32 {
        E4M3_LAYOUT.decode(self.0)
    }
}

impl E5M2 {
    /// The largest finite value, 57344.
    pub const MAX: E5M2 = E5M2(0x7b);
    /// Infinity (`0x7c`; with the sign bit, `0xfc`, minus infinity).
    pub const INFINITY: E5M2 = E5M2(0x7c);
    /// The NaN c10's conversion gives (`0x7f`; `0x7d`–`0x7f` with either sign are NaNs).
    pub const NAN: E5M2 = E5M2(0x7f);

    /// c10's conversion: `x` to the nearest e5m2, ties to even; what rounds past 57344 (from 61440
    /// up, a tie that goes to the even infinity) and the infinities to infinity; NaN to
    /// [`E5M2::NAN`]; the sign kept.
    #[inline]
    pub fn from_f32(x: f32) -> E5M2 {
        E5M2(E5M2_LAYOUT.encode(x, Self::INFINITY.0 as u32))
    }

    /// As [`E5M2::from_f32`], but what rounds past 57344 (infinities included) is ±57344; NaN
    /// stays NaN (PTX's `cvt.rn.satfinite.e5m2x2.f32`).
    #[inline]
    pub fn from_f32_saturating(x: f32) -> E5M2 {
        E5M2(E5M2_LAYOUT.encode(x, Self::MAX.0 as u32))
    }

    /// Whether it is NaN (exponent all ones, mantissa not zero).
    #[inline]
    pub const fn is_nan(self) -> bool {
        E5M2_LAYOUT.is_nan(self.0)
    }

    /// The value, exactly.
    #[inline]
    pub fn to_f32(self) -> f32 {
        E5M2_LAYOUT.decode(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every finite value of a format as f64 from its definition, by magnitude code (`0..=top`),
    /// `top` one past the largest finite code: the value the rounding crosses into NaN or infinity.
    fn values(mantissa_bits: u32, bias: i32, top: u32) -> Vec<f64> {
        (0..=top)
            .map(|code| {
                let (exponent, mantissa) = ((code >> mantissa_bits) as i32, code & ((1 << mantissa_bits) - 1));
                let fraction = mantissa as f64 / (1u32 << mantissa_bits) as f64;
                if exponent == 0 {
                    fraction * 2f64.powi(1 - bias)
                } else {
                    (1.0 + fraction) * 2f64.powi(exponent - bias)
                }
            })
            .collect()
    }

    /// The magnitude code nearest `x` (finite, ≥ 0) among `values` (increasing), ties to the even
    /// code: the definition `round_magnitude` must meet, by search instead of bit arithmetic.
    fn nearest(values: &[f64], x: f64) -> u32 {
        let above = values.partition_point(|&v| v < x);
        if above == values.len() {
            return (values.len() - 1) as u32;
        }
        if above == 0 || values[above] == x {
            return above as u32;
        }
        let (low, high) = (values[above - 1], values[above]);
        let below = (above - 1) as u32;
        match (x - low).total_cmp(&(high - x)) {
            core::cmp::Ordering::Less => below,
            core::cmp::Ordering::Greater => below + 1,
            core::cmp::Ordering::Equal => below + (below & 1),
        }
    }

    /// f32s to check a format on: every value and the midpoints between neighbours, each with its
    /// f32 neighbours; powers of two across f32's range; a stride through every bit pattern.
    fn probes(values: &[f64]) -> Vec<f32> {
        let mut probes = Vec::new();
        let around = |x: f32, probes: &mut Vec<f32>| {
            probes.extend([x, x.next_down(), x.next_up()]);
        };
        for pair in values.windows(2) {
            around(pair[0] as f32, &mut probes);
            around(((pair[0] + pair[1]) / 2.0) as f32, &mut probes);
        }
        around(*values.last().unwrap() as f32, &mut probes);
        for exponent in -149..=127 {
            around(2f32.powi(exponent), &mut probes);
        }
        probes.extend([0.0, f32::MIN_POSITIVE, f32::MAX, f32::from_bits(1)]);
        probes.extend(
            (0..u32::MAX / 4099)
                .map(|i| f32::from_bits(i * 4099).abs())
                .filter(|x| x.is_finite()),
        );
        probes
    }

    #[test]
    fn e4m3_decodes_every_code_as_its_definition_and_rounds_it_back_to_itself() {
        let values = values(3, 7, 0x7f);
        for bits in 0..=255u8 {
            let x = E4M3(bits);
            let decoded = x.to_f32();
            if bits & 0x7f == 0x7f {
                assert!(decoded.is_nan() && x.is_nan(), "{bits:#04x}");
                assert_eq!(E4M3::from_f32(decoded), E4M3(0x7f | (bits & 0x80)), "{bits:#04x}");
                continue;
            }
            let want = values[(bits & 0x7f) as usize] * if bits & 0x80 != 0 { -1.0 } else { 1.0 };
            assert_eq!(decoded as f64, want, "{bits:#04x}");
            assert_eq!(
                decoded.is_sign_negative(),
                bits & 0x80 != 0,
                "{bits:#04x}: the sign, -0 too"
            );
            assert!(!x.is_nan());
            assert_eq!(E4M3::from_f32(decoded), x, "{bits:#04x}");
            assert_eq!(E4M3::from_f32_saturating(decoded), x, "{bits:#04x}");
        }
        assert_eq!(E4M3::MAX.to_f32(), 448.0);
        assert_eq!(E4M3(1).to_f32(), 2f32.powi(-9));
    }

    #[test]
    fn e5m2_decodes_every_code_as_its_definition_and_rounds_it_back_to_itself() {
        let values = values(2, 15, 0x7c);
        for bits in 0..=255u8 {
            let x = E5M2(bits);
            let decoded = x.to_f32();
            let negative = bits & 0x80 != 0;
            match bits & 0x7f {
                0x7d..=0x7f => {
                    assert!(decoded.is_nan() && x.is_nan(), "{bits:#04x}");
                    assert_eq!(E5M2::from_f32(decoded), E5M2(0x7f | (bits & 0x80)), "{bits:#04x}");
                }
                0x7c => {
                    assert_eq!(decoded, if negative { f32::NEG_INFINITY } else { f32::INFINITY });
                    assert_eq!(E5M2::from_f32(decoded), x, "{bits:#04x}");
                    assert_eq!(E5M2::from_f32_saturating(decoded), E5M2(0x7b | (bits & 0x80)));
                }
                code => {
                    let want = values[code as usize] * if negative { -1.0 } else { 1.0 };
                    assert_eq!(decoded as f64, want, "{bits:#04x}");
                    assert_eq!(decoded.is_sign_negative(), negative, "{bits:#04x}: the sign, -0 too");
                    assert!(!x.is_nan());
                    assert_eq!(E5M2::from_f32(decoded), x, "{bits:#04x}");
                    assert_eq!(E5M2::from_f32_saturating(decoded), x, "{bits:#04x}");
                }
            }
        }
        assert_eq!(E5M2::MAX.to_f32(), 57344.0);
        assert_eq!(E5M2(1).to_f32(), 2f32.powi(-16));
    }

    /// Against the nearest value found by search (ties to the even code), over every value, every
    /// midpoint and their f32 neighbours, powers of two and a stride of every f32 bit pattern, with
    /// both signs: rounding past the largest finite value gives NaN (c10's conversion) or the
    /// largest finite value (saturating).
    #[test]
    fn e4m3_rounds_to_nearest_even_and_past_448_to_nan_or_448() {
        let values = values(3, 7, 0x7f);
        for magnitude in probes(&values) {
            for x in [magnitude, -magnitude] {
                let code = nearest(&values, magnitude as f64);
                let sign = if x.is_sign_negative() { 0x80 } else { 0 };
                assert_eq!(E4M3::from_f32(x), E4M3(sign | code as u8), "{x:e}");
                assert_eq!(E4M3::from_f32_saturating(x), E4M3(sign | code.min(0x7e) as u8), "{x:e}");
            }
        }
        for (x, want) in [
            (464.0, 0x7e),
            (464.01, 0x7f),
            (480.0, 0x7f),
            (1e30, 0x7f),
            (f32::INFINITY, 0x7f),
        ] {
            assert_eq!(E4M3::from_f32(x), E4M3(want), "{x}");
            assert_eq!(E4M3::from_f32(-x), E4M3(0x80 | want), "{x}");
            assert_eq!(E4M3::from_f32_saturating(-x), E4M3(0xfe), "{x}");
        }
        assert_eq!(E4M3::from_f32(f32::NAN).0 & 0x7f, 0x7f);
        assert!(E4M3::from_f32_saturating(-f32::NAN).is_nan());
        assert_eq!(
            E4M3::from_f32(2f32.powi(-10)),
            E4M3(0),
            "half the smallest subnormal: a tie to 0"
        );
        assert_eq!(E4M3::from_f32(2f32.powi(-10).next_up()), E4M3(1));
    }

    /// As the e4m3 test: past 57344 to infinity (c10's conversion) or 57344 (saturating).
    #[test]
    fn e5m2_rounds_to_nearest_even_and_past_57344_to_infinity_or_57344() {
        let values = values(2, 15, 0x7c);
        for magnitude in probes(&values) {
            for x in [magnitude, -magnitude] {
                let code = nearest(&values, magnitude as f64);
                let sign = if x.is_sign_negative() { 0x80 } else { 0 };
                assert_eq!(E5M2::from_f32(x), E5M2(sign | code as u8), "{x:e}");
                assert_eq!(E5M2::from_f32_saturating(x), E5M2(sign | code.min(0x7b) as u8), "{x:e}");
            }
        }
        for (x, want) in [
            (61440f32.next_down(), 0x7b),
            (61440.0, 0x7c),
            (65536.0, 0x7c),
            (f32::INFINITY, 0x7c),
        ] {
            assert_eq!(E5M2::from_f32(x), E5M2(want), "{x}");
            assert_eq!(E5M2::from_f32(-x), E5M2(0x80 | want), "{x}");
            assert_eq!(E5M2::from_f32_saturating(-x), E5M2(0xfb), "{x}");
        }
        assert_eq!(E5M2::from_f32(f32::NAN), E5M2::NAN);
        assert!(E5M2::from_f32_saturating(-f32::NAN).is_nan());
        assert_eq!(
            E5M2::from_f32(2f32.powi(-17)),
            E5M2(0),
            "half the smallest subnormal: a tie to 0"
        );
        assert_eq!(E5M2::from_f32(2f32.powi(-17).next_up()), E5M2(1));
    }
}
