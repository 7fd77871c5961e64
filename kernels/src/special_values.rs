//! The values a float operator meets besides ordinary numbers, and inputs that mix them into random
//! ones at random positions: what every family's special-value tests feed its kernels. Host-only.

use rand::Rng;
use rand::rngs::StdRng;

/// Infinities, NaN (quiet, a payload, negative), signed zeros, subnormals, the normal range's
/// ends and magnitudes near the float limits.
pub const SPECIAL_VALUES: [f32; 16] = [
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    // A quiet NaN with a payload, and a negative one: a move must keep their bits.
    f32::from_bits(0x7fc0_1234),
    f32::from_bits(0xffc0_0001),
    0.0,
    -0.0,
    // The smallest subnormal, a mid-range one, and the largest.
    f32::from_bits(1),
    -1.0e-40,
    f32::from_bits(0x007f_ffff),
    f32::MIN_POSITIVE,
    -f32::MIN_POSITIVE,
    f32::MAX,
    f32::MIN,
    3.0e38,
    -1.0e38,
];

/// `values` with about one in `every` elements replaced by a special value drawn from `allowed`
/// (a subset of [`SPECIAL_VALUES`], or all of them), at positions drawn from `rng`.
pub fn mix_in(rng: &mut StdRng, values: &mut [f32], every: usize, allowed: &[f32]) {
    for value in values.iter_mut() {
        if rng.random_range(0..every.max(1)) == 0 {
            *value = allowed[rng.random_range(0..allowed.len())];
        }
    }
}
