//! The f32 scans: NaN and infinities from where `torch.cumsum` has them.

use crate::prelude::*;

/// What `torch.cumsum` gives at each position of `values` where the order of the additions cannot
/// change it: NaN from the first NaN or the first point both infinities are in, the infinity from
/// the first one on; `None` before any special value (checked against f64 elsewhere).
fn torch_cumsum_specials(values: &[f32], exclusive: bool) -> Vec<Option<f32>> {
    let (mut nan, mut plus, mut minus) = (false, false, false);
    let mut out = Vec::with_capacity(values.len());
    for &v in values {
        let before = (nan, plus, minus);
        nan |= v.is_nan();
        plus |= v == f32::INFINITY;
        minus |= v == f32::NEG_INFINITY;
        let (nan, plus, minus) = if exclusive { before } else { (nan, plus, minus) };
        out.push(match (nan || (plus && minus), plus, minus) {
            (true, _, _) => Some(f32::NAN),
            (false, true, _) => Some(f32::INFINITY),
            (false, _, true) => Some(f32::NEG_INFINITY),
            _ => None,
        });
    }
    out
}

/// Every f32 scan kernel, inclusive and exclusive, on inputs with infinities and NaN at random
/// places (across tiles, so that they reach other tiles through the totals or the look-back):
/// PyTorch's NaN and infinities from where they start.
pub(crate) fn scans_meet_special_values(backend: &Backend) {
    use kernels::scan::{FAMILY, Scan};
    use kernels_host::families::scan;
    let stream = rng_stream();
    let mut failures = Vec::new();
    let specials = [f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::from_bits(0xffc0_0001)];
    for n in [1, 33, 1000, 4099, 70_001] {
        for (case, exclusive) in [(0, false), (1, true), (2, false)] {
            let mut rng = StdRng::seed_from_u64(stream ^ (n * 4 + case) as u64);
            let mut input: Vec<f32> = (0..n).map(|_| rng.random_range(-30.0f32..30.0)).collect();
            // One special value late in the array, or a few anywhere.
            match case {
                0 => input[n - 1 - rng.random_range(0..n.min(40))] = specials[rng.random_range(0..4)],
                _ => mix_in(&mut rng, &mut input, n.div_ceil(3), &specials),
            }
            let wanted = torch_cumsum_specials(&input, exclusive);
            let problem = Scan::new(n, exclusive).unwrap();
            let source = Buffer::upload(backend, &input).unwrap();
            let mut levels: Vec<Buffer<f32>> = scan::levels_for(n as u32)
                .into_iter()
                .map(|len| Buffer::upload(backend, &vec![0.0f32; len]).unwrap())
                .collect();
            for kernel in FAMILY.kernels {
                let mut output = Buffer::upload(backend, &vec![f32::from_bits(0x7fbad000); n]).unwrap();
                let label = format!("{} over {n} (exclusive {exclusive})", kernel.entry());
                if let Err(e) = scan::scan(
                    backend,
                    kernel,
                    Source::Rust,
                    &problem,
                    &source,
                    &mut output,
                    &mut levels[..],
                ) {
                    failures.push(format!("{label}: {e}"));
                    continue;
                }
                let got = output.read(backend).unwrap();
                let wrong = wanted.iter().zip(&got).position(|(want, &got)| match want {
                    Some(want) => !same(got, *want),
                    None => !got.is_finite(),
                });
                if let Some(i) = wrong {
                    failures.push(format!("{label}: prefix {i} is {}, PyTorch {:?}", got[i], wanted[i]));
                }
            }
        }
    }
    assert!(failures.is_empty(), "random stream {stream}:\n{}", failures.join("\n"));
}
