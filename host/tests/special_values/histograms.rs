//! The f32 histograms: NaN, infinities and out-of-range samples left out.

use crate::prelude::*;

/// Every f32 histogram kernel on samples with every special value mixed in: NaN, the infinities
/// and whatever lies outside [lo, hi) are left out, as CUB's even histogram leaves them; the rest
/// counted in their bins (subnormals and zeros in the middle one).
pub(crate) fn histograms_meet_special_values(backend: &Backend) {
    use kernels::histogram_f32::{BINS, FAMILY, HistogramF32};
    use kernels_host::families::histogram_f32::{self as histogram, RANGE};
    let stream = rng_stream();
    let mut failures = Vec::new();
    for n in [1, 31, 1025, 65_537] {
        let mut rng = StdRng::seed_from_u64(stream ^ n as u64);
        let mut input: Vec<f32> = (0..n)
            .map(|_| rng.random_range(-1280i32..1280) as f32 / 1024.0)
            .collect();
        mix_in(&mut rng, &mut input, 3, &SPECIAL_VALUES);
        let mut wanted = vec![0u32; BINS as usize];
        let scale = BINS as f32 / (RANGE.1 - RANGE.0);
        for &x in input.iter().filter(|x| (RANGE.0..RANGE.1).contains(*x)) {
            wanted[(((x - RANGE.0) * scale) as usize).min(BINS as usize - 1)] += 1;
        }
        let problem = HistogramF32::new(n, 8).unwrap();
        let source = Buffer::upload(backend, &input).unwrap();
        for kernel in FAMILY.kernels {
            let mut bins = Buffer::upload(backend, &vec![0u32; BINS as usize]).unwrap();
            let label = format!("{} over {n}", kernel.entry());
            if let Err(e) = histogram::launch(backend, kernel, Source::Rust, &problem, (&source, RANGE), &mut bins) {
                failures.push(format!("{label}: {e}"));
                continue;
            }
            let got = bins.read(backend).unwrap();
            if let Some(b) = (0..BINS as usize).find(|&b| got[b] != wanted[b]) {
                failures.push(format!("{label}: bin {b} counts {}, expected {}", got[b], wanted[b]));
            }
        }
    }
    assert!(failures.is_empty(), "random stream {stream}:\n{}", failures.join("\n"));
}
