//! Layer norm and RMS norm: a row with an infinity or a NaN, signed zeros and subnormals, a
//! magnitude whose square is past f32 (the variance overflows, as PyTorch's f32 does), rows of one
//! value (variance 0: eps alone), with and without the weight and bias.

use crate::prelude::*;
use kernels::norm::{LAYER_NORM_FAMILY, RMS_NORM_FAMILY, RowNorm};
use kernels_host::families::norm::{self, Arrays, EPS, Statistics};

/// Rows of `cols` values: each special value alone at a random place in a random row, a row of
/// −0.0, one of a single repeated value, and random rows mixed with the values whose every order of
/// addition gives one answer (NaN, the infinities, zeros, subnormals; one huge value per row at
/// most, so that no order of the sum overflows where another does not).
pub(crate) fn special_rows(rng: &mut StdRng, cols: usize) -> Vec<f32> {
    let random = |rng: &mut StdRng| -> Vec<f32> { (0..cols).map(|_| rng.random_range(-30.0f32..30.0)).collect() };
    let mut rows = Vec::new();
    for special in SPECIAL_VALUES {
        let mut row = random(rng);
        row[rng.random_range(0..cols)] = special;
        rows.push(row);
    }
    rows.push(vec![-0.0; cols]);
    rows.push(vec![7.25; cols]);
    let orderless = [
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        0.0,
        -0.0,
        f32::from_bits(1),
        -1.0e-40,
        f32::MIN_POSITIVE,
    ];
    for every in [2, 16] {
        let mut mixed = random(rng);
        mix_in(rng, &mut mixed, every, &orderless);
        rows.push(mixed);
    }
    rows.concat()
}

/// Every norm kernel that runs on `backend`, at widths across its paths (a warp's registers, a
/// block's, the three passes), on [`special_rows`], with the weight and bias and without.
pub(crate) fn norms_meet_special_values(backend: &Backend) {
    let stream = rng_stream();
    let mut failures = Vec::new();
    for cols in [1, 2, 31, 33, 257, 1000, 1025, 4097, 8193, 9000] {
        let mut rng = StdRng::seed_from_u64(stream ^ cols as u64);
        let input = special_rows(&mut rng, cols);
        let rows = input.len() / cols;
        let problem = RowNorm::new(rows, cols).unwrap();
        let weight: Vec<f32> = (0..cols).map(|_| rng.random_range(-2.0..2.0)).collect();
        let bias: Vec<f32> = (0..cols).map(|_| rng.random_range(-1.0..1.0)).collect();
        let source = Buffer::upload(backend, &input).unwrap();
        let (weight_buffer, bias_buffer) = (
            Buffer::upload(backend, &weight).unwrap(),
            Buffer::upload(backend, &bias).unwrap(),
        );
        for (family, centered) in [(&LAYER_NORM_FAMILY, true), (&RMS_NORM_FAMILY, false)] {
            for kernel in family.kernels {
                let info = kernel.info(family.name);
                if !runs_here(backend, &info, Source::Rust) {
                    continue;
                }
                for affine in [true, false] {
                    let mut output = Buffer::upload(backend, &vec![f32::NAN; input.len()]).unwrap();
                    let mut means = Buffer::upload(backend, &vec![f32::NAN; rows]).unwrap();
                    let mut rstds = Buffer::upload(backend, &vec![f32::NAN; rows]).unwrap();
                    let label = format!("{} at {rows}x{cols}, weight and bias {affine}", kernel.entry());
                    let arrays = Arrays {
                        input: &source,
                        weight: affine.then_some(&weight_buffer),
                        bias: affine.then_some(&bias_buffer),
                        output: &mut output,
                        mean: Some(&mut means),
                        rstd: Some(&mut rstds),
                    };
                    if let Err(e) = norm::launch(backend, kernel, Source::Rust, &problem, EPS, arrays) {
                        failures.push(format!("{label}: {e}"));
                        continue;
                    }
                    let (out, means, rstds) = (
                        output.read(backend).unwrap(),
                        means.read(backend).unwrap(),
                        rstds.read(backend).unwrap(),
                    );
                    let (w, b): (&[f32], &[f32]) = if affine { (&weight, &bias) } else { (&[], &[]) };
                    let statistics = Statistics {
                        means: &means,
                        rstds: &rstds,
                    };
                    if let Err(e) = norm::check_rows((&input, w, b), (&out, Some(statistics)), (cols, EPS, centered)) {
                        failures.push(format!("{label}: {e}"));
                    }
                }
            }
        }
    }
    assert_none_failed(&failures, stream);
}
