//! The norms' input gradients: an infinity, a NaN, signed zeros and subnormals in the output's
//! gradient (dy) reach every element of the row's gradient as IEEE arithmetic carries them.

use crate::prelude::*;
use kernels::norm::{LAYER_NORM_BACKWARD_FAMILY, RMS_NORM_BACKWARD_FAMILY, RowNormBackward};
use kernels_host::families::norm::{forward_statistics, within};
use kernels_host::families::norm_backward::{self, BackwardArrays, reference_backward_row};

/// The special values whose products with a weight below 2 in magnitude stay what f32 makes them
/// (the largest magnitudes would overflow in f32 and not in the f64 reference).
const MODERATE: [f32; 10] = [
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    0.0,
    -0.0,
    f32::from_bits(1),
    -1.0e-40,
    f32::from_bits(0x007f_ffff),
    f32::MIN_POSITIVE,
    -f32::MIN_POSITIVE,
];

/// Every backward kernel that runs on `backend`, rows of random x with each [`MODERATE`] value
/// alone somewhere in dy, and a row of dy all −0.0.
pub(crate) fn norm_gradients_meet_special_values(backend: &Backend) {
    let stream = rng_stream();
    let mut failures = Vec::new();
    for cols in [1, 2, 33, 257, 1000, 4097] {
        let mut rng = StdRng::seed_from_u64(stream ^ cols as u64);
        let random = |rng: &mut StdRng, range: std::ops::Range<f32>| -> Vec<f32> {
            (0..cols).map(|_| rng.random_range(range.clone())).collect()
        };
        let mut dy = Vec::new();
        for special in MODERATE {
            let mut row = random(&mut rng, -1.0..1.0);
            row[rng.random_range(0..cols)] = special;
            dy.extend(row);
        }
        dy.extend(vec![-0.0; cols]);
        let rows = dy.len() / cols;
        let x: Vec<f32> = (0..rows).flat_map(|_| random(&mut rng, -3.0..3.0)).collect();
        let weight = random(&mut rng, -2.0..2.0);
        let problem = RowNormBackward::new(rows, cols).unwrap();
        for (family, centered) in [(&LAYER_NORM_BACKWARD_FAMILY, true), (&RMS_NORM_BACKWARD_FAMILY, false)] {
            let (means, rstds) = forward_statistics(&x, cols, centered);
            let upload = |values: &[f32]| Buffer::upload(backend, values).unwrap();
            let (input, grad_output, weights, mean, rstd) =
                (upload(&x), upload(&dy), upload(&weight), upload(&means), upload(&rstds));
            for kernel in family.kernels {
                if !runs_here(backend, &kernel.info(family.name), Source::Rust) {
                    continue;
                }
                let mut grad_input = upload(&vec![f32::NAN; x.len()]);
                let label = format!("{} at {rows}x{cols}", kernel.entry());
                let arrays = BackwardArrays {
                    input: &input,
                    grad_output: &grad_output,
                    weight: Some(&weights),
                    mean: centered.then_some(&mean),
                    rstd: &rstd,
                    grad_input: &mut grad_input,
                };
                if let Err(e) = norm_backward::launch_backward(backend, kernel, Source::Rust, &problem, arrays) {
                    failures.push(format!("{label}: {e}"));
                    continue;
                }
                let got = grad_input.read(backend).unwrap();
                'rows: for r in 0..rows {
                    let span = r * cols..(r + 1) * cols;
                    let (want, tolerances) = reference_backward_row(
                        (&x[span.clone()], &dy[span.clone()], &weight),
                        (means[r], rstds[r]),
                        centered,
                    );
                    for c in 0..cols {
                        if !within(got[r * cols + c], want[c], tolerances[c]) {
                            failures.push(format!(
                                "{label}: row {r}, column {c}: {}, expected {} (within {:.3e})",
                                got[r * cols + c],
                                want[c],
                                tolerances[c]
                            ));
                            continue 'rows;
                        }
                    }
                }
            }
        }
    }
    assert_none_failed(&failures, stream);
}
