//! What the emulator tests and the GPU tests share: seeded random inputs, poisoned outputs and
//! guards, edge shapes, and checks that name the seed. Host-only.

use crate::reference::{Expected, check};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Seed of every test's inputs; `KERNELS_TEST_SEED=<n>` replays or varies a run.
pub fn seed() -> u64 {
    std::env::var("KERNELS_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_2026)
}

pub fn rng() -> StdRng {
    StdRng::seed_from_u64(seed())
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

/// Extra poisoned elements past the end of each output, which a kernel must leave alone.
pub const GUARD: usize = 64;

/// Checks `out[..len]` against `expected` and that the guard after it is untouched.
pub fn assert_matches(what: &str, out: &[f32], expected: &Expected) {
    let len = expected.values.len();
    if let Err(mismatch) = check(&out[..len], expected) {
        panic!(
            "{what}: {mismatch} (seed {}; rerun with KERNELS_TEST_SEED={})",
            seed(),
            seed()
        );
    }
    if let Some(i) = out[len..].iter().position(|v| !v.is_nan()) {
        panic!(
            "{what}: wrote past the end of the output, at index {} (seed {})",
            len + i,
            seed()
        );
    }
}

/// Matmul shapes (m, n, k) every test suite runs: single elements, one below, at and above the
/// 32-wide tile, K = 1, long and thin in each dimension, and rectangular shapes.
pub const MATMUL_EDGE_SHAPES: &[(usize, usize, usize)] = &[
    (1, 1, 1),
    (31, 31, 31),
    (32, 32, 32),
    (33, 33, 33),
    (33, 31, 1),
    (1000, 33, 31),
    (31, 1000, 3),
    (2, 3, 1000),
    (64, 96, 48),
    (17, 65, 130),
];

/// Element-wise lengths every test suite runs: around the warp and the 256-thread block, and one
/// spanning many blocks.
pub const ELEMENTWISE_EDGE_LENGTHS: &[usize] = &[1, 2, 31, 32, 33, 255, 256, 257, 1000, 100_003];
