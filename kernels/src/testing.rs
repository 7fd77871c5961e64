//! What the emulator tests and the GPU tests share: random inputs from a numbered stream, poisoned
//! outputs and guards, and checks that name the stream. Host-only.

use crate::reference::{Expected, check};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Environment variable that picks the random stream of the tests' inputs.
pub const RNG_ENV: &str = "KERNELS_TEST_RNG";

/// The random stream every test draws its inputs from: `KERNELS_TEST_RNG=<n>` replays or varies a
/// run (failure messages print it).
pub fn rng_stream() -> u64 {
    std::env::var(RNG_ENV)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x2026_1130)
}

pub fn rng() -> StdRng {
    StdRng::seed_from_u64(rng_stream())
}

/// Uniform in [-1, 1): signs mixed, magnitudes spread, never all zeros.
pub fn random_vec(rng: &mut StdRng, len: usize) -> Vec<f32> {
    (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// `len` random inputs followed by `GUARD` NaNs: a kernel that reads past the end of an input
/// turns its result into NaN, which the check catches.
pub fn guarded_random_vec(rng: &mut StdRng, len: usize) -> Vec<f32> {
    let mut values = random_vec(rng, len);
    values.resize(len + GUARD, f32::NAN);
    values
}

/// NaN everywhere: an element the kernel never writes fails the check.
pub fn poisoned(len: usize) -> Vec<f32> {
    vec![f32::NAN; len]
}

/// `values` in a fresh allocation, starting `offset` floats (0–3) past a 16-byte boundary, and
/// where they lie in it: the arrays for testing a kernel's 16-byte paths at every alignment.
pub fn at_offset(values: &[f32], offset: usize) -> (Vec<f32>, std::ops::Range<usize>) {
    let mut buffer = vec![0.0f32; values.len() + 8];
    // From the allocation's first 16-byte boundary.
    let from = (4 - (buffer.as_ptr() as usize / 4) % 4) % 4 + offset;
    buffer[from..from + values.len()].copy_from_slice(values);
    (buffer, from..from + values.len())
}

/// Extra poisoned elements past the end of each output, which a kernel must leave alone.
pub const GUARD: usize = 64;

/// Checks `out[..len]` against `expected` and that the guard after it is untouched.
pub fn assert_matches(what: &str, out: &[f32], expected: &Expected) {
    let len = expected.values.len();
    if let Err(mismatch) = check(&out[..len], expected) {
        panic!(
            "{what}: {mismatch} (random stream {stream}; rerun with {RNG_ENV}={stream})",
            stream = rng_stream()
        );
    }
    if let Some(i) = out[len..].iter().position(|v| !v.is_nan()) {
        panic!(
            "{what}: wrote past the end of the output, at index {} (random stream {})",
            len + i,
            rng_stream()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::at_offset;

    #[test]
    fn at_offset_puts_the_values_the_asked_floats_past_a_16_byte_boundary() {
        let values = [1.0f32, 2.0, 3.0, 4.0, 5.0];
        for offset in 0..4 {
            let (buffer, at) = at_offset(&values, offset);
            assert_eq!((buffer[at.clone()].as_ptr() as usize) % 16, 4 * offset);
            assert_eq!(&buffer[at], &values);
        }
    }
}
