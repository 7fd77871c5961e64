//! The norms' gradients: an infinity, a NaN, signed zeros and subnormals in the output's gradient
//! (dy) reach every element of the row's input gradient, and the weight's and bias's column sums,
//! as IEEE arithmetic carries them; by the separate kernels and by the fused path (one read of x
//! and dy, then the partial sums added).

use crate::prelude::*;
use kernels::norm::backward_fused::{self, NormBackwardFused};
use kernels::norm::{LAYER_NORM_BACKWARD_FAMILY, RMS_NORM_BACKWARD_FAMILY, RowNormBackward};
use kernels_host::families::norm::{forward_statistics, within};
use kernels_host::families::norm_backward::{self, BackwardArrays, reference_backward_row, reference_weight_grad_by};
use kernels_host::families::norm_backward_fused::{self as fused, FusedArrays, fused_depth};

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

/// Rows of random x, each with one [`MODERATE`] value somewhere in dy, and a row of dy all −0.0;
/// a random weight: (x, dy, weight, rows).
fn inputs(cols: usize, rng: &mut StdRng) -> (Vec<f32>, Vec<f32>, Vec<f32>, usize) {
    let random = |rng: &mut StdRng, range: std::ops::Range<f32>| -> Vec<f32> {
        (0..cols).map(|_| rng.random_range(range.clone())).collect()
    };
    let mut dy = Vec::new();
    for special in MODERATE {
        let mut row = random(rng, -1.0..1.0);
        row[rng.random_range(0..cols)] = special;
        dy.extend(row);
    }
    dy.extend(vec![-0.0; cols]);
    let rows = dy.len() / cols;
    let x: Vec<f32> = (0..rows).flat_map(|_| random(rng, -3.0..3.0)).collect();
    let weight = random(rng, -2.0..2.0);
    (x, dy, weight, rows)
}

/// Each row of `got` (dx) against [`reference_backward_row`]: the first element outside its
/// tolerance of each row into `failures`.
fn check_rows(
    label: &str,
    (x, dy, weight): (&[f32], &[f32], &[f32]),
    (means, rstds): (&[f32], &[f32]),
    centered: bool,
    (got, cols): (&[f32], usize),
    failures: &mut Vec<String>,
) {
    'rows: for r in 0..x.len() / cols {
        let span = r * cols..(r + 1) * cols;
        let (want, tolerances) = reference_backward_row(
            (&x[span.clone()], &dy[span.clone()], weight),
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

/// The backward arrays of `[x, dy, weight, mean, rstd]` on the backend (the mean only for layer
/// norm), dx into `grad_input`.
fn arrays_of<'a>(
    [input, grad_output, weight, mean, rstd]: [&'a Buffer<f32>; 5],
    centered: bool,
    grad_input: &'a mut Buffer<f32>,
) -> BackwardArrays<'a, Buffer<f32>> {
    BackwardArrays {
        input,
        grad_output,
        weight: Some(weight),
        mean: centered.then_some(mean),
        rstd,
        grad_input,
    }
}

/// Every backward kernel that runs on `backend`, separate and fused, over [`inputs`].
pub(crate) fn norm_gradients_meet_special_values(backend: &Backend) {
    let stream = rng_stream();
    let mut failures = Vec::new();
    for cols in [1, 2, 33, 257, 1000, 4097] {
        let mut rng = StdRng::seed_from_u64(stream ^ cols as u64);
        let (x, dy, weight, rows) = inputs(cols, &mut rng);
        let problem = RowNormBackward::new(rows, cols).unwrap();
        let fused_problem = NormBackwardFused::new(rows, cols).unwrap();
        let separate = [(&LAYER_NORM_BACKWARD_FAMILY, true), (&RMS_NORM_BACKWARD_FAMILY, false)];
        let fused_families = [
            (&backward_fused::LAYER_FAMILY, true),
            (&backward_fused::RMS_FAMILY, false),
        ];
        for ((family, centered), (fused_family, _)) in separate.into_iter().zip(fused_families) {
            let (means, rstds) = forward_statistics(&x, cols, centered);
            let upload = |values: &[f32]| Buffer::upload(backend, values).unwrap();
            let (input, grad_output, weights, mean, rstd) =
                (upload(&x), upload(&dy), upload(&weight), upload(&means), upload(&rstds));
            let inputs = (&x[..], &dy[..], &weight[..]);
            let statistics = (&means[..], &rstds[..]);
            for kernel in family.kernels {
                if !runs_here(backend, &kernel.info(family.name), Source::Rust) {
                    continue;
                }
                let mut grad_input = upload(&vec![f32::NAN; x.len()]);
                let label = format!("{} at {rows}x{cols}", kernel.entry());
                let arrays = arrays_of(
                    [&input, &grad_output, &weights, &mean, &rstd],
                    centered,
                    &mut grad_input,
                );
                if let Err(e) = norm_backward::launch_backward(backend, kernel, Source::Rust, &problem, arrays) {
                    failures.push(format!("{label}: {e}"));
                    continue;
                }
                let got = grad_input.read(backend).unwrap();
                check_rows(&label, inputs, statistics, centered, (&got, cols), &mut failures);
            }
            for kernel in fused_family.kernels {
                if !runs_here(backend, &kernel.info(fused_family.name), Source::Rust) {
                    continue;
                }
                let label = format!("{} at {rows}x{cols}", kernel.entry());
                let mut grad_input = upload(&vec![f32::NAN; x.len()]);
                let mut partials = upload(&vec![f32::NAN; fused_problem.partials_len()]);
                let (mut dweight, mut dbias) = (upload(&vec![f32::NAN; cols]), upload(&vec![f32::NAN; cols]));
                let arrays = FusedArrays {
                    gradient: arrays_of(
                        [&input, &grad_output, &weights, &mean, &rstd],
                        centered,
                        &mut grad_input,
                    ),
                    partials: &mut partials,
                };
                let sums = (&mut dweight, centered.then_some(&mut dbias));
                if let Err(e) = fused::launch_gradients(backend, kernel, Source::Rust, &fused_problem, arrays, sums) {
                    failures.push(format!("{label}: {e}"));
                    continue;
                }
                let got = grad_input.read(backend).unwrap();
                check_rows(&label, inputs, statistics, centered, (&got, cols), &mut failures);
                let means_given: &[f32] = if centered { &means } else { &[] };
                let [want_weight, want_bias] =
                    reference_weight_grad_by((&x, &dy), (means_given, &rstds), cols, fused_depth(rows as u32));
                let mut sums = vec![("dweight", dweight.read(backend).unwrap(), want_weight)];
                if centered {
                    sums.push(("dbias", dbias.read(backend).unwrap(), want_bias));
                }
                for (name, got, (want, tolerances)) in sums {
                    if let Some(c) = (0..cols).find(|&c| !within(got[c], want[c], tolerances[c])) {
                        failures.push(format!(
                            "{label}: {name}[{c}] = {}, expected {} (within {:.3e})",
                            got[c], want[c], tolerances[c]
                        ));
                    }
                }
            }
        }
    }
    assert_none_failed(&failures, stream);
}
