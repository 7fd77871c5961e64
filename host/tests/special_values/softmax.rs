//! Softmax: masked entries, fully masked rows, +∞ and NaN, tiny and huge magnitudes.

use crate::prelude::*;
use kernels::softmax::{FAMILY, Softmax};
use kernels_host::families::softmax;

/// Rows of `cols` entries, each showing one special case: masked entries (−∞ at random places), a
/// fully masked row, a +∞, a NaN, signed zeros and subnormals, magnitudes near f32's limits, and
/// random rows with every special value mixed in.
fn special_rows(rng: &mut StdRng, cols: usize) -> Vec<f32> {
    let random = |rng: &mut StdRng| -> Vec<f32> { (0..cols).map(|_| rng.random_range(-30.0f32..30.0)).collect() };
    let mut rows = Vec::new();
    let mut masked = random(rng);
    mix_in(rng, &mut masked, 3, &[f32::NEG_INFINITY]);
    // At least one entry left unmasked.
    masked[rng.random_range(0..cols)] = 1.5;
    rows.push(masked);
    rows.push(vec![f32::NEG_INFINITY; cols]);
    for special in [f32::INFINITY, f32::NAN, f32::from_bits(0xffc0_0001)] {
        let mut row = random(rng);
        row[rng.random_range(0..cols)] = special;
        rows.push(row);
    }
    let mut tiny = random(rng);
    mix_in(
        rng,
        &mut tiny,
        2,
        &[0.0, -0.0, f32::from_bits(1), -1.0e-40, f32::MIN_POSITIVE],
    );
    rows.push(tiny);
    let mut huge = random(rng);
    mix_in(rng, &mut huge, 4, &[f32::MAX, f32::MIN, 3.0e38, -1.0e38]);
    rows.push(huge);
    for _ in 0..3 {
        let mut mixed = random(rng);
        mix_in(rng, &mut mixed, 16, &SPECIAL_VALUES);
        rows.push(mixed);
    }
    rows.concat()
}

/// Every softmax kernel that runs on `backend`, at widths across its paths (groups of lanes, by
/// elements and by vectors, a warp's registers, a block's, the staged rows, the wide blocks, registers and shared memory (16-byte and scalar), past
/// all of them), on [`special_rows`].
pub(crate) fn softmax_meets_special_values(backend: &Backend) {
    let stream = rng_stream();
    let mut failures = Vec::new();
    for cols in [
        1, 2, 31, 32, 33, 128, 257, 1000, 1025, 4097, 8193, 16_385, 24_577, 32_769, 50_257, 65_536, 65_537, 70_001,
    ] {
        let mut rng = StdRng::seed_from_u64(stream ^ cols as u64);
        let input = special_rows(&mut rng, cols);
        let rows = input.len() / cols;
        let problem = Softmax::new(rows, cols).unwrap();
        let source = Buffer::upload(backend, &input).unwrap();
        for kernel in FAMILY.kernels {
            let info = kernel.info(FAMILY.name);
            if !runs_here(backend, &info, Source::Rust) {
                continue;
            }
            let mut output = Buffer::upload(backend, &vec![f32::NAN; input.len()]).unwrap();
            let label = format!("{} at {rows}x{cols}", kernel.entry());
            if let Err(e) = softmax::launch(backend, kernel, Source::Rust, &problem, &source, &mut output) {
                failures.push(format!("{label}: {e}"));
                continue;
            }
            let out = output.read(backend).unwrap();
            if let Err(e) = softmax::check_rows(&out, &input, cols) {
                failures.push(format!("{label}: {e}"));
            }
        }
    }
    assert_none_failed(&failures, stream);
}
