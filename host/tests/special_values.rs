//! Special values through the operators, against what PyTorch gives: infinities, NaN, signed
//! zeros, subnormals and magnitudes near the float limits, alone in a row and mixed into random
//! inputs at random positions. On the emulator here; the GPU runs the same checks (ignored without
//! one).

mod turn;

use kernels::Source;
use kernels::softmax::{FAMILY, Softmax};
use kernels::special_values::{SPECIAL_VALUES, mix_in};
use kernels::testing::{RNG_ENV, rng_stream};
use kernels_host::families::{runs_here, softmax};
use ptxkit_runtime::Backend;
use ptxkit_runtime::array::Buffer;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

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

/// Every softmax kernel that runs on `backend`, at widths across its paths (a warp's registers, a
/// block's, the staged rows, the wide blocks, past all of them), on [`special_rows`].
fn softmax_meets_special_values(backend: &Backend) {
    let stream = rng_stream();
    let mut failures = Vec::new();
    for cols in [1, 2, 31, 33, 257, 1000, 1025, 4097, 8193, 16_385, 32_769, 65_537] {
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
    assert!(
        failures.is_empty(),
        "{} failures (random stream {stream}; rerun with {RNG_ENV}={stream}):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

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

/// Both NaN, or equal (`-0.0 == 0.0`: PyTorch leaves a zero's sign to the order).
fn same(got: f32, want: f32) -> bool {
    (got.is_nan() && want.is_nan()) || got == want
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
fn reductions_meet_special_values(backend: &Backend) {
    use kernels::reduce::{FAMILY as REDUCE, MAX_FAMILY as REDUCE_MAX, Reduce};
    use kernels::rows::{MAX_FAMILY as ROW_MAX, RowReduce, SUM_FAMILY as ROW_SUM};
    use kernels_host::families::{reduce, rows};
    let stream = rng_stream();
    let mut failures = Vec::new();
    for cols in [1, 2, 31, 33, 257, 1000, 4099] {
        let mut rng = StdRng::seed_from_u64(stream ^ cols as u64);
        let lines = special_lines(&mut rng, cols);
        let wanted: Vec<(f32, Option<f32>)> = lines.iter().map(|l| torch_max_and_sum(l)).collect();
        let input = lines.concat();
        let problem = RowReduce::new(lines.len(), cols).unwrap();
        let source = Buffer::upload(backend, &input).unwrap();
        for (family, is_max) in [(&ROW_MAX, true), (&ROW_SUM, false)] {
            for kernel in family.kernels {
                let mut output = Buffer::upload(backend, &vec![f32::NAN; lines.len()]).unwrap();
                let label = format!("{} at {}x{cols}", kernel.entry(), lines.len());
                if let Err(e) = rows::launch(backend, kernel, Source::Rust, &problem, &source, &mut output) {
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
    assert!(
        failures.is_empty(),
        "{} failures (random stream {stream}; rerun with {RNG_ENV}={stream}):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn reductions_give_pytorchs_answer_on_special_values_on_the_emulator() {
    reductions_meet_special_values(&Backend::Emu);
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn reductions_give_pytorchs_answer_on_special_values_on_the_gpu() {
    reductions_meet_special_values(&turn::open());
}

#[test]
fn softmax_gives_pytorchs_answer_on_special_values_on_the_emulator() {
    softmax_meets_special_values(&Backend::Emu);
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn softmax_gives_pytorchs_answer_on_special_values_on_the_gpu() {
    softmax_meets_special_values(&turn::open());
}
