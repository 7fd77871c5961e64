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

/// Every transpose kernel on matrices of special values (every one, NaN payloads and signs
/// included) mixed into random ones, at shapes across the tiles and the 16-byte path: the output is
/// the input's transpose bit for bit.
fn transposes_meet_special_values(backend: &Backend) {
    use kernels::transpose::{FAMILY, Transpose};
    use kernels_host::families::transpose;
    let stream = rng_stream();
    let mut failures = Vec::new();
    for (rows, cols) in [
        (1, 1),
        (1, 37),
        (33, 1),
        (31, 33),
        (64, 64),
        (67, 129),
        (128, 260),
        (257, 255),
    ] {
        let mut rng = StdRng::seed_from_u64(stream ^ (rows * 1000 + cols) as u64);
        let mut input: Vec<f32> = (0..rows * cols).map(|_| rng.random_range(-30.0f32..30.0)).collect();
        mix_in(&mut rng, &mut input, 3, &SPECIAL_VALUES);
        let problem = Transpose::new(rows, cols).unwrap();
        let source = Buffer::upload(backend, &input).unwrap();
        for kernel in FAMILY.kernels {
            let mut output = Buffer::upload(backend, &vec![f32::from_bits(0x7fbad000); input.len()]).unwrap();
            let label = format!("{} at {rows}x{cols}", kernel.entry());
            if let Err(e) = transpose::launch(backend, kernel, Source::Rust, &problem, &source, &mut output) {
                failures.push(format!("{label}: {e}"));
                continue;
            }
            let got = output.read(backend).unwrap();
            let wrong = (0..rows * cols).find(|&i| {
                let (r, c) = (i / cols, i % cols);
                got[c * rows + r].to_bits() != input[i].to_bits()
            });
            if let Some(i) = wrong {
                let (r, c) = (i / cols, i % cols);
                failures.push(format!(
                    "{label}: input[{r}][{c}] = {:#010x} came out as {:#010x}",
                    input[i].to_bits(),
                    got[c * rows + r].to_bits()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "random stream {stream}:\n{}", failures.join("\n"));
}

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
fn scans_meet_special_values(backend: &Backend) {
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

/// Every f32 histogram kernel on samples with every special value mixed in: NaN, the infinities
/// and whatever lies outside [lo, hi) are left out, as CUB's even histogram leaves them; the rest
/// counted in their bins (subnormals and zeros in the middle one).
fn histograms_meet_special_values(backend: &Backend) {
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

/// What each entry of C = A·B is as IEEE arithmetic has it, in f64 (the inputs hold no magnitude
/// that a finite sum could overflow): NaN, an infinity, or finite.
fn product_classes(a: &[f32], b: &[f32], (m, n, k): (usize, usize, usize)) -> Vec<f64> {
    let mut c = vec![0.0f64; m * n];
    for i in 0..m {
        for p in 0..k {
            let x = a[i * k + p] as f64;
            for j in 0..n {
                c[i * n + j] += x * b[p * n + j] as f64;
            }
        }
    }
    c
}

/// Whether `got` is what `want` (f64) is: NaN for NaN, the same infinity, else finite.
fn same_class(got: f32, want: f64) -> bool {
    if want.is_nan() {
        got.is_nan()
    } else if want.is_infinite() {
        got as f64 == want
    } else {
        got.is_finite()
    }
}

/// Every matmul kernel that runs on `backend` (f32, TF32 and bf16 ladders) on A and B holding ±inf,
/// NaN and ±0 among random values: each entry of C is NaN, an infinity or finite as PyTorch's
/// product (IEEE arithmetic: inf·0 and inf − inf NaN) has it. Shapes off every tile.
fn products_meet_special_values(backend: &Backend) {
    use kernels::matmul::{FAMILY as F32, Matmul};
    use kernels::matmul_bf16::{FAMILY as BF16, MatmulBf16};
    use kernels::matmul_tc::{FAMILY as TF32, MatmulTc};
    use kernels_host::families::{matmul, matmul_bf16, matmul_tc};
    let stream = rng_stream();
    let mut failures = Vec::new();
    let specials = [f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 0.0, -0.0];
    let check = |label: String, got: Vec<f32>, want: &[f64], n: usize| -> Option<String> {
        let e = (0..want.len()).find(|&e| !same_class(got[e], want[e]))?;
        Some(format!(
            "{label}: C[{}][{}] is {}, PyTorch {}",
            e / n,
            e % n,
            got[e],
            want[e]
        ))
    };
    for (m, n, k) in [(1, 1, 1), (33, 17, 9), (64, 64, 64), (67, 130, 72), (128, 136, 80)] {
        let mut rng = StdRng::seed_from_u64(stream ^ (m * 1_000_000 + n * 1000 + k) as u64);
        let mut a: Vec<f32> = (0..m * k).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        let mut b: Vec<f32> = (0..k * n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        mix_in(&mut rng, &mut a, 97, &specials);
        mix_in(&mut rng, &mut b, 89, &specials);
        // At least one infinity in A and a zero in B, so that inf·0 appears.
        a[rng.random_range(0..m * k)] = f32::INFINITY;
        b[rng.random_range(0..k * n)] = 0.0;
        let poison = vec![f32::from_bits(0x7fbad000); m * n];
        let want = product_classes(&a, &b, (m, n, k));
        // inf·0 at least: the product meets a NaN to give.
        assert!(want.iter().any(|w| w.is_nan()), "no NaN to check at {m}x{n}x{k}");
        let (a_gpu, b_gpu) = (
            Buffer::upload(backend, &a).unwrap(),
            Buffer::upload(backend, &b).unwrap(),
        );
        let problem = Matmul::new(m, n, k).unwrap();
        for kernel in F32.kernels {
            let label = format!("{} at {m}x{n}x{k}", kernel.entry());
            let mut c = Buffer::upload(backend, &poison).unwrap();
            match matmul::launch(backend, kernel, Source::Rust, &problem, &a_gpu, &b_gpu, &mut c) {
                Ok(()) => failures.extend(check(label, c.read(backend).unwrap(), &want, n)),
                Err(e) => failures.push(format!("{label}: {e}")),
            }
        }
        let tc = MatmulTc::new(m, n, k).unwrap();
        for kernel in TF32.kernels {
            if !runs_here(backend, &kernel.info(TF32.name), Source::Rust) {
                continue;
            }
            let label = format!("{} at {m}x{n}x{k}", kernel.entry());
            let mut c = Buffer::upload(backend, &poison).unwrap();
            match matmul_tc::launch(backend, kernel, Source::Rust, &tc, &a_gpu, &b_gpu, &mut c) {
                Ok(()) => failures.extend(check(label, c.read(backend).unwrap(), &want, n)),
                Err(e) => failures.push(format!("{label}: {e}")),
            }
        }
        // bf16 holds every special value and rounds the rest: the classes stay.
        let bits = |x: &[f32]| -> Vec<u16> { x.iter().map(|&v| ptxkit::device::mma::Bf16::from_f32(v).0).collect() };
        let (a16, b16) = (
            Buffer::upload(backend, &bits(&a)).unwrap(),
            Buffer::upload(backend, &bits(&b)).unwrap(),
        );
        let bf16 = MatmulBf16::new(m, n, k).unwrap();
        for kernel in BF16.kernels {
            if !runs_here(backend, &kernel.info(BF16.name), Source::Rust) {
                continue;
            }
            let label = format!("{} at {m}x{n}x{k}", kernel.entry());
            let mut c = Buffer::upload(backend, &poison).unwrap();
            match matmul_bf16::launch(backend, kernel, Source::Rust, &bf16, &a16, &b16, &mut c) {
                Ok(()) => failures.extend(check(label, c.read(backend).unwrap(), &want, n)),
                Err(e) => failures.push(format!("{label}: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "random stream {stream}:\n{}", failures.join("\n"));
}

/// Every conv2d kernel (each radius) on images holding ±inf, NaN, ±0 and subnormals among random
/// values, with a finite filter: each output is NaN, an infinity or finite as IEEE arithmetic over
/// the image's own entries has it (the zero padding adds nothing). Shapes off every tile.
fn convolutions_meet_special_values(backend: &Backend) {
    use kernels::conv2d::{Conv2d, FAMILY};
    use kernels::reference::conv2d_at;
    use kernels_host::families::conv2d;
    let stream = rng_stream();
    let mut failures = Vec::new();
    let specials = [
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        0.0,
        -0.0,
        f32::from_bits(1),
        -1.0e-40,
    ];
    for (height, width, radius) in [(1, 1, 1), (17, 33, 1), (64, 67, 2), (130, 61, 3)] {
        let mut rng = StdRng::seed_from_u64(stream ^ (height * 1000 + width * 10 + radius) as u64);
        let mut image: Vec<f32> = (0..height * width).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        mix_in(&mut rng, &mut image, 40, &specials);
        image[rng.random_range(0..height * width)] = f32::NAN;
        let side = 2 * radius + 1;
        let filter: Vec<f32> = (0..side * side).map(|_| rng.random_range(0.1f32..1.0)).collect();
        let problem = Conv2d::new(height, width, side).unwrap();
        let (image_gpu, filter_gpu) = (
            Buffer::upload(backend, &image).unwrap(),
            Buffer::upload(backend, &filter).unwrap(),
        );
        let want: Vec<f64> = (0..height * width)
            .map(|i| conv2d_at(&image, &filter, (height, width, radius), i).0)
            .collect();
        for kernel in FAMILY.kernels {
            let label = format!("{} at {height}x{width}, {side}x{side}", kernel.entry());
            let mut output = Buffer::upload(backend, &vec![f32::from_bits(0x7fbad000); height * width]).unwrap();
            if let Err(e) = conv2d::launch(
                backend,
                kernel,
                Source::Rust,
                &problem,
                (&image_gpu, &filter_gpu),
                &mut output,
            ) {
                failures.push(format!("{label}: {e}"));
                continue;
            }
            let got = output.read(backend).unwrap();
            if let Some(i) = (0..want.len()).find(|&i| !same_class(got[i], want[i])) {
                failures.push(format!(
                    "{label}: out[{}][{}] is {}, PyTorch {}",
                    i / width,
                    i % width,
                    got[i],
                    want[i]
                ));
            }
        }
    }
    assert!(failures.is_empty(), "random stream {stream}:\n{}", failures.join("\n"));
}

/// An element-wise family and what element i of its output is.
type Expected<'a> = (
    &'a ptxkit::Family<kernels::elementwise::Elementwise>,
    &'a dyn Fn(usize) -> f32,
);

/// Every element-wise kernel (vec_add's, shared_mem_add's) on inputs with every special value
/// mixed in: each output is `a + b` as IEEE arithmetic gives it (bit for bit, or NaN where that is),
/// and gather moves every value bit for bit, NaN payloads included. Lengths off the vectors and
/// blocks.
fn moves_and_adds_meet_special_values(backend: &Backend) {
    use kernels::elementwise::Elementwise;
    use kernels::gather::{FAMILY as GATHER, Gather};
    use kernels::{shared_mem_add, vec_add};
    use kernels_host::families::{elementwise, gather};
    let stream = rng_stream();
    let mut failures = Vec::new();
    for n in [1, 3, 31, 257, 4099] {
        let mut rng = StdRng::seed_from_u64(stream ^ n as u64);
        let values = |rng: &mut StdRng| -> Vec<f32> {
            let mut v: Vec<f32> = (0..n).map(|_| rng.random_range(-30.0f32..30.0)).collect();
            mix_in(rng, &mut v, 3, &SPECIAL_VALUES);
            v
        };
        let (a, b) = (values(&mut rng), values(&mut rng));
        let (a_gpu, b_gpu) = (
            Buffer::upload(backend, &a).unwrap(),
            Buffer::upload(backend, &b).unwrap(),
        );
        let problem = Elementwise::new(n).unwrap();
        let sum = |i: usize| a[i] + b[i];
        // shared_mem_add adds each element's left neighbour in its block to it.
        let neighbours = |i: usize| match i % shared_mem_add::BLOCK as usize {
            0 => sum(i),
            _ => sum(i) + sum(i - 1),
        };
        let cases: [Expected; 2] = [(&vec_add::FAMILY, &sum), (&shared_mem_add::FAMILY, &neighbours)];
        for (family, expected) in cases {
            for kernel in family.kernels {
                let label = format!("{} over {n}", kernel.entry());
                let mut out = Buffer::upload(backend, &vec![f32::from_bits(0x7fbad000); n]).unwrap();
                if let Err(e) = elementwise::launch(backend, kernel, Source::Rust, &problem, &a_gpu, &b_gpu, &mut out) {
                    failures.push(format!("{label}: {e}"));
                    continue;
                }
                let got = out.read(backend).unwrap();
                let wrong = (0..n).find(|&i| {
                    let want = expected(i);
                    if want.is_nan() {
                        !got[i].is_nan()
                    } else {
                        got[i].to_bits() != want.to_bits()
                    }
                });
                if let Some(i) = wrong {
                    failures.push(format!("{label}: element {i} gave {}, IEEE {}", got[i], expected(i)));
                }
            }
        }
        // Indices across the source, a few past its end (NaN there, by the family's definition).
        let index: Vec<u32> = (0..n).map(|_| rng.random_range(0..n as u32 + 2)).collect();
        let problem = Gather::new(n, n).unwrap();
        let index_gpu = Buffer::upload(backend, &index).unwrap();
        for kernel in GATHER.kernels {
            let label = format!("{} over {n}", kernel.entry());
            let mut out = Buffer::upload(backend, &vec![0.0f32; n]).unwrap();
            if let Err(e) = gather::launch(backend, kernel, Source::Rust, &problem, (&a_gpu, &index_gpu), &mut out) {
                failures.push(format!("{label}: {e}"));
                continue;
            }
            let got = out.read(backend).unwrap();
            let wrong = (0..n).find(|&i| match a.get(index[i] as usize) {
                Some(want) => got[i].to_bits() != want.to_bits(),
                None => !got[i].is_nan(),
            });
            if let Some(i) = wrong {
                failures.push(format!("{label}: index {} gave {:#010x}", index[i], got[i].to_bits()));
            }
        }
    }
    assert!(failures.is_empty(), "random stream {stream}:\n{}", failures.join("\n"));
}

/// Each check as two tests: on the emulator (CI), and on the GPU, ignored without one (the runner
/// runs it with --include-ignored).
macro_rules! on_both_backends {
    ($($emulator:ident, $gpu:ident: $check:ident;)*) => {$(
        #[test]
        fn $emulator() {
            $check(&Backend::Emu);
        }

        #[test]
        #[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
        fn $gpu() {
            $check(&turn::open());
        }
    )*};
}

on_both_backends! {
    moves_and_adds_keep_special_values_on_the_emulator, moves_and_adds_keep_special_values_on_the_gpu: moves_and_adds_meet_special_values;
    reductions_give_pytorchs_answer_on_special_values_on_the_emulator, reductions_give_pytorchs_answer_on_special_values_on_the_gpu: reductions_meet_special_values;
    products_give_pytorchs_infinities_and_nan_on_the_emulator, products_give_pytorchs_infinities_and_nan_on_the_gpu: products_meet_special_values;
    convolutions_give_pytorchs_infinities_and_nan_on_the_emulator, convolutions_give_pytorchs_infinities_and_nan_on_the_gpu: convolutions_meet_special_values;
    transposes_move_special_values_bit_for_bit_on_the_emulator, transposes_move_special_values_bit_for_bit_on_the_gpu: transposes_meet_special_values;
    scans_give_pytorchs_answer_on_special_values_on_the_emulator, scans_give_pytorchs_answer_on_special_values_on_the_gpu: scans_meet_special_values;
    histograms_leave_out_special_values_as_cub_does_on_the_emulator, histograms_leave_out_special_values_as_cub_does_on_the_gpu: histograms_meet_special_values;
    softmax_gives_pytorchs_answer_on_special_values_on_the_emulator, softmax_gives_pytorchs_answer_on_special_values_on_the_gpu: softmax_meets_special_values;
}
