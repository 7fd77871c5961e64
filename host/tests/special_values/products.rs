//! Products and convolutions: NaN and infinities where IEEE arithmetic has them.

use crate::prelude::*;

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
pub(crate) fn products_meet_special_values(backend: &Backend) {
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
pub(crate) fn convolutions_meet_special_values(backend: &Backend) {
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
