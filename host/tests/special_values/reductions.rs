//! The row and whole-array reductions: maxima that propagate NaN, sums where the order cannot
//! change the answer.

use crate::prelude::*;

/// What `torch.amax` and `torch.sum` give for `values`, where it does not depend on the order of
/// the additions: the maximum, NaN when any value is; the sum, NaN with a NaN or both infinities,
/// the infinity when there is one, `None` (order-dependent: checked elsewhere) otherwise.
fn torch_max_and_sum(values: &[f32]) -> (f32, Option<f32>) {
    let nan = values.iter().any(|v| v.is_nan());
    let max = if nan {
        f32::NAN
    } else {
        values.iter().copied().fold(f32::NEG_INFINITY, f32::max)
    };
    let (plus, minus) = (values.contains(&f32::INFINITY), values.contains(&f32::NEG_INFINITY));
    let sum = match (nan || (plus && minus), plus, minus) {
        (true, _, _) => Some(f32::NAN),
        (false, true, _) => Some(f32::INFINITY),
        (false, _, true) => Some(f32::NEG_INFINITY),
        _ => None,
    };
    (max, sum)
}

/// Lines of `cols` values, each with one special case placed at a random position (first, last or
/// inside: a reduction meets it at every point of its order) and random lines with every special
/// value mixed in.
fn special_lines(rng: &mut StdRng, cols: usize) -> Vec<Vec<f32>> {
    let random = |rng: &mut StdRng| -> Vec<f32> { (0..cols).map(|_| rng.random_range(-30.0f32..30.0)).collect() };
    let mut lines = Vec::new();
    for special in SPECIAL_VALUES {
        for at in [0, cols - 1, rng.random_range(0..cols)] {
            let mut line = random(rng);
            line[at] = special;
            lines.push(line);
        }
    }
    let mut both = random(rng);
    both[0] = f32::INFINITY;
    both[cols - 1] = f32::NEG_INFINITY;
    lines.push(both);
    lines.push(vec![f32::NEG_INFINITY; cols]);
    lines.push(vec![-0.0; cols]);
    for _ in 0..4 {
        let mut mixed = random(rng);
        mix_in(rng, &mut mixed, 8, &SPECIAL_VALUES);
        lines.push(mixed);
    }
    lines
}

/// Every row-maximum and row-sum kernel, and every reduce_max and reduce kernel over each line
/// alone, on [`special_lines`]: PyTorch's maximum (NaN propagating) and, where the order cannot
/// change it, PyTorch's sum.
pub(crate) fn reductions_meet_special_values(backend: &Backend) {
    use kernels::reduce::{FAMILY as REDUCE, MAX_FAMILY as REDUCE_MAX, Reduce};
    use kernels::rows::{MAX_FAMILY as ROW_MAX, RowReduce, SUM_FAMILY as ROW_SUM};
    use kernels_host::families::{reduce, rows};
    let stream = rng_stream();
    let mut failures = Vec::new();
    for cols in [1, 2, 5, 16, 31, 33, 257, 1000, 4099, 10_007] {
        let mut rng = StdRng::seed_from_u64(stream ^ cols as u64);
        let lines = special_lines(&mut rng, cols);
        let wanted: Vec<(f32, Option<f32>)> = lines.iter().map(|l| torch_max_and_sum(l)).collect();
        let input = lines.concat();
        // As many resident blocks as a large GPU's: the split kernels cut the widest rows.
        let problem = RowReduce::new(lines.len(), cols, 4096).unwrap();
        let source = Buffer::upload(backend, &input).unwrap();
        for (family, is_max) in [(&ROW_MAX, true), (&ROW_SUM, false)] {
            for kernel in family.kernels {
                let mut output = Buffer::upload(backend, &vec![f32::NAN; lines.len()]).unwrap();
                let mut scratch = rows::Scratch::new(backend, &problem).unwrap();
                let label = format!("{} at {}x{cols}", kernel.entry(), lines.len());
                if let Err(e) = rows::launch(
                    backend,
                    kernel,
                    Source::Rust,
                    &problem,
                    &source,
                    &mut output,
                    &mut scratch,
                ) {
                    failures.push(format!("{label}: {e}"));
                    continue;
                }
                let got = output.read(backend).unwrap();
                for (row, (&got, &(max, sum))) in got.iter().zip(&wanted).enumerate() {
                    let want = if is_max { Some(max) } else { sum };
                    if let Some(want) = want.filter(|&want| !same(got, want)) {
                        failures.push(format!(
                            "{label}: row {row} {:?}: {got}, PyTorch {want}",
                            &lines[row][..cols.min(8)]
                        ));
                    }
                }
            }
        }
        // The whole-array reductions over a few of the lines, each alone.
        for (line, &(max, sum)) in lines.iter().zip(&wanted).step_by(5) {
            let problem = Reduce::new(cols, 8).unwrap();
            let source = Buffer::upload(backend, line).unwrap();
            for (family, want) in [(&REDUCE_MAX, Some(max)), (&REDUCE, sum)] {
                let Some(want) = want else { continue };
                for kernel in family.kernels {
                    let len = reduce::output_len(kernel, &problem);
                    let mut scratch = [0, 1].map(|_| Buffer::upload(backend, &vec![f32::NAN; len]).unwrap());
                    let mut ticket = Buffer::upload(backend, &[0u32]).unwrap();
                    let label = format!("{} over {cols} {:?}", kernel.entry(), &line[..cols.min(8)]);
                    match reduce::complete(
                        backend,
                        kernel,
                        Source::Rust,
                        &problem,
                        &source,
                        &mut scratch,
                        &mut ticket,
                    ) {
                        Ok(at) => {
                            let got = scratch[at].read(backend).unwrap()[0];
                            if !same(got, want) {
                                failures.push(format!("{label}: {got}, PyTorch {want}"));
                            }
                        }
                        Err(e) => failures.push(format!("{label}: {e}")),
                    }
                }
            }
        }
    }
    assert_none_failed(&failures, stream);
}
