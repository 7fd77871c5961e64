//! What moves values or adds them once: transposes and gather bit for bit, element-wise sums as
//! IEEE gives them.

use crate::prelude::*;

/// Every transpose kernel on matrices of special values (every one, NaN payloads and signs
/// included) mixed into random ones, at shapes across the tiles and the 16-byte path: the output is
/// the input's transpose bit for bit.
pub(crate) fn transposes_meet_special_values(backend: &Backend) {
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

/// An element-wise family and what element i of its output is.
type Expected<'a> = (
    &'a ptxkit::Family<kernels::elementwise::Elementwise>,
    &'a dyn Fn(usize) -> f32,
);

/// Every element-wise kernel (vec_add's, shared_mem_add's) on inputs with every special value
/// mixed in: each output is `a + b` as IEEE arithmetic gives it (bit for bit, or NaN where that is),
/// and gather moves every value bit for bit, NaN payloads included. Lengths off the vectors and
/// blocks.
pub(crate) fn moves_and_adds_meet_special_values(backend: &Backend) {
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
