//! The norms with a fused residual add, f32 and bf16: the norms' special rows as x, a residual
//! with special values of its own (an infinity meeting the other infinity, a NaN), with and
//! without the residual, the weight and the bias. The sum must be x + residual rounded to the
//! element type, bit for bit; the outputs the f64 norm of that sum.

use crate::norms::special_rows;
use crate::prelude::*;
use kernels::norm::residual::{LAYER_BF16_FAMILY, LAYER_FAMILY, RMS_BF16_FAMILY, RMS_FAMILY, ResidualNorm};
use kernels_host::families::element::HostElement;
use kernels_host::families::norm::{EPS, Statistics};
use kernels_host::families::norm_residual::{self, Arrays, check_outputs, check_sum, reference_sum};
use ptxkit::Family;
use ptxkit::device::mma::Bf16;

/// Every kernel of `families` (layer norm, then RMS norm) over element `E` on `backend`.
fn check_element<E: HostElement>(
    backend: &Backend,
    families: [(&'static Family<ResidualNorm<E>>, bool); 2],
    failures: &mut Vec<String>,
) {
    let stream = rng_stream();
    for cols in [1, 2, 31, 33, 64, 257, 1000, 1025, 2048, 8193, 16_384] {
        let mut rng = StdRng::seed_from_u64(stream ^ cols as u64);
        let x = special_rows(&mut rng, cols);
        let rows = x.len() / cols;
        let mut residual: Vec<f32> = (0..x.len()).map(|_| rng.random_range(-4.0f32..4.0)).collect();
        mix_in(
            &mut rng,
            &mut residual,
            16,
            &[f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -0.0, 1.0e-40],
        );
        let bits = |values: &[f32]| values.iter().map(|&v| E::bits(v)).collect::<Vec<_>>();
        let weight = bits(&(0..cols).map(|_| rng.random_range(-2.0f32..2.0)).collect::<Vec<_>>());
        let bias = bits(&(0..cols).map(|_| rng.random_range(-1.0f32..1.0)).collect::<Vec<_>>());
        let (x, residual) = (bits(&x), bits(&residual));
        let upload = |values: &[E::Bits]| Buffer::upload(backend, values).unwrap();
        let (x_buffer, residual_buffer, weight_buffer, bias_buffer) =
            (upload(&x), upload(&residual), upload(&weight), upload(&bias));
        let problem = ResidualNorm::<E>::new(rows, cols).unwrap();
        let values = |b: &[E::Bits]| b.iter().map(|&b| E::value(b)).collect::<Vec<f32>>();
        for (family, centered) in families {
            for kernel in family.kernels {
                if !runs_here(backend, &kernel.info(family.name), Source::Rust) {
                    continue;
                }
                for (with_residual, affine) in [(true, true), (true, false), (false, true)] {
                    let label = format!(
                        "{} at {rows}x{cols}, residual {with_residual}, weight and bias {affine}",
                        kernel.entry()
                    );
                    let mut output = upload(&vec![E::NAN; x.len()]);
                    let mut sum = upload(&vec![E::NAN; x.len()]);
                    let mut means = Buffer::upload(backend, &vec![f32::NAN; rows]).unwrap();
                    let mut rstds = Buffer::upload(backend, &vec![f32::NAN; rows]).unwrap();
                    let arrays = Arrays {
                        input: &x_buffer,
                        residual: with_residual.then_some((&residual_buffer, &mut sum)),
                        weight: affine.then_some(&weight_buffer),
                        bias: (affine && centered).then_some(&bias_buffer),
                        output: &mut output,
                        mean: Some(&mut means),
                        rstd: Some(&mut rstds),
                    };
                    if let Err(e) = norm_residual::launch(backend, kernel, Source::Rust, &problem, EPS, arrays) {
                        failures.push(format!("{label}: {e}"));
                        continue;
                    }
                    let h = if with_residual {
                        reference_sum::<E>(&x, &residual)
                    } else {
                        x.clone()
                    };
                    if let (true, Err(e)) = (with_residual, check_sum::<E>(&sum.read(backend).unwrap(), &h)) {
                        failures.push(format!("{label}: {e}"));
                    }
                    let (w, b) = match (affine, centered) {
                        (false, _) => (Vec::new(), Vec::new()),
                        (true, true) => (values(&weight), values(&bias)),
                        (true, false) => (values(&weight), Vec::new()),
                    };
                    let (means, rstds) = (means.read(backend).unwrap(), rstds.read(backend).unwrap());
                    let statistics = Statistics {
                        means: &means,
                        rstds: &rstds,
                    };
                    let out = output.read(backend).unwrap();
                    if let Err(e) = check_outputs::<E>((&values(&h), &w, &b), (&out, statistics), (cols, EPS, centered))
                    {
                        failures.push(format!("{label}: {e}"));
                    }
                }
            }
        }
    }
}

/// Both element types, both norms.
pub(crate) fn residual_norms_meet_special_values(backend: &Backend) {
    let mut failures = Vec::new();
    check_element::<f32>(backend, [(&LAYER_FAMILY, true), (&RMS_FAMILY, false)], &mut failures);
    check_element::<Bf16>(
        backend,
        [(&LAYER_BF16_FAMILY, true), (&RMS_BF16_FAMILY, false)],
        &mut failures,
    );
    let stream = rng_stream();
    assert_none_failed(&failures, stream);
}
