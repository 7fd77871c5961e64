//! The histogram family's host side: its safe launch, byte inputs uniform or with one frequent
//! value, CUB's `DeviceHistogram::HistogramEven` as the baseline, and the exact check (counts are
//! integers: every bin must match).

use super::auto::{Rung, Target};
use super::elementwise::check_shape;
use super::{
    Bound, Case, Cli, FamilyDemo, KernelChoice, Outputs, Plan, Size, Sizes, Work, check_len, resident_blocks, substream,
};
use crate::cub::Cub;
use kernels::Source;
use kernels::histogram::{BINS, FAMILY, Histogram, THREADS};
use ptxkit::{AnyFamily, Kernel};
use ptxkit_runtime::Backend;
use ptxkit_runtime::array::{Array, Buffer};
use ptxkit_runtime::{Error, Result};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The baseline: `cub::DeviceHistogram::HistogramEven` over 256 byte values.
const CUB: &str = "cub_histogram_u8";

/// The value that the skewed inputs repeat.
pub const FREQUENT: u8 = 200;

/// Words past the bins that no kernel may touch, and what they hold.
pub(super) const GUARD_WORDS: usize = 64;
pub(super) const POISON: u32 = u32::MAX;

/// `bins += histogram(input[..n])` with `kernel`, any histogram kernel: checks that the input holds
/// n bytes and the bins 256 counts where `backend` can reach them, then launches. The bins must be
/// zero for a fresh histogram.
pub fn launch(
    backend: &Backend,
    kernel: &Kernel<Histogram>,
    source: Source,
    problem: &Histogram,
    input: &impl Array<u8>,
    bins: &mut impl Array<u32>,
) -> Result<()> {
    check_len("input", input.len(), problem.n as usize)?;
    check_len("bins", bins.len(), BINS as usize)?;
    let args = (
        input.view(backend)?.head(problem.n),
        bins.view_mut(backend)?.head(BINS),
        problem.n,
    );
    // SAFETY: each view is its array's on this backend, borrowed for the launch: the n bytes the
    // kernels read and the 256 counts they add to.
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &[input, &*bins]) }
}

/// `n` random bytes from stream `rng`: `skew` percent of them [`FREQUENT`], the rest uniform.
pub fn skewed_bytes(rng: u64, n: usize, skew: usize) -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(rng);
    (0..n)
        .map(|_| {
            if rng.random_range(0..100) < skew {
                FREQUENT
            } else {
                rng.random()
            }
        })
        .collect()
}

/// The counts of each byte value.
pub fn reference(bytes: &[u8]) -> Vec<u32> {
    let mut bins = vec![0u32; BINS as usize];
    for &b in bytes {
        bins[b as usize] += 1;
    }
    bins
}

/// The host side of the histogram family. Sizes are (n, skew): n bytes, skew percent of them one
/// value.
pub struct HistogramDemo;

/// One byte, the warp, block and 16-byte edges, primes, uniform and half in one bin.
const EDGE_SIZES: [[usize; 2]; 12] = [
    [1, 0],
    [15, 0],
    [17, 50],
    [31, 0],
    [33, 50],
    [255, 0],
    [257, 100],
    [4095, 0],
    [4097, 50],
    [65_537, 0],
    [100_003, 50],
    [1_000_003, 90],
];

impl FamilyDemo for HistogramDemo {
    fn family(&self) -> &'static dyn AnyFamily {
        &FAMILY
    }

    fn extents(&self) -> &'static [&'static str] {
        &["n", "skew"]
    }

    fn baseline(&self) -> Option<&'static str> {
        Some(CUB)
    }

    fn label(&self, size: Size) -> String {
        let [n, skew, _] = size.0;
        format!("n={n}, {skew}% one value")
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let [n, skew, _] = size.0;
        check_skew(skew)?;
        let problem = Histogram::new(n, 1)?;
        for kernel in FAMILY.kernels {
            check_shape(kernel, &problem)?;
        }
        let bins = 4 * (BINS as u64 + GUARD_WORDS as u64);
        Ok(Plan {
            work: Work {
                bytes: n as f64,
                flops: 0.0,
                bound: Bound::Memory,
            },
            x: n as f64,
            host_bytes: n as u64 + 3 * bins,
            device_bytes: n as u64 + bins,
        })
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let [n, skew, _] = size.0;
        let problem = Histogram::new(n, resident_blocks(backend, THREADS))?;
        let bytes = skewed_bytes(substream(rng, 13), n, skew);
        let expected = reference(&bytes);
        let inputs = (0..sets.max(1))
            .map(|_| Buffer::upload(backend, &bytes))
            .collect::<Result<Vec<_>>>()?;
        let mut template = vec![0u32; BINS as usize];
        template.resize(BINS as usize + GUARD_WORDS, POISON);
        let outputs = Outputs::from_template(backend, template, sets)?;
        let cub = match backend {
            Backend::Gpu(gpu) => Cub::load(gpu, n)?,
            Backend::Emu => None,
        };
        Ok(Box::new(HistogramCase {
            backend,
            problem,
            expected,
            inputs,
            outputs,
            cub,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: "256-bin histogram of n bytes, uniform or with --skew percent of them one value: global atomics, bins per block, bins per warp; against CUB's DeviceHistogram",
            default: Size([1 << 28, 50, 1]),
            emulator_cap: Size([1 << 20, 100, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            edge: EDGE_SIZES.iter().map(|&[n, skew]| Size([n, skew, 1])).collect(),
            large: vec![Size([(1 << 30) + 5, 0, 1]), Size([1 << 28, 50, 1])],
            bench: [24, 26, 28, 30]
                .iter()
                .flat_map(|&k| [Size([1 << k, 0, 1]), Size([1 << k, 50, 1])])
                .collect(),
            smoke: Size([70_001, 50, 1]),
        }
    }

    fn choice(&self) -> &dyn KernelChoice {
        self
    }
}

impl KernelChoice for HistogramDemo {
    fn fastest_rung(&self, _target: Target, _size: Size) -> Option<Rung> {
        Some(Rung {
            entry: "histogram_vectorized",
            why: "eight copies of the bins per block: ahead of CUB on bytes half of one value",
        })
    }
}

struct HistogramCase<'a> {
    backend: &'a Backend,
    problem: Histogram,
    expected: Vec<u32>,
    inputs: Vec<Buffer<u8>>,
    outputs: Outputs<u32>,
    cub: Option<Cub>,
}

impl Case for HistogramCase<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        launch(
            self.backend,
            &FAMILY.kernels[kernel],
            source,
            &self.problem,
            &self.inputs[set],
            self.outputs.get_mut(set),
        )
    }

    fn baseline(&self) -> Option<&'static str> {
        self.cub.as_ref().map(|_| CUB)
    }

    fn launch_baseline(&mut self, set: usize) -> Result<()> {
        let cub = Cub::loaded(&self.cub)?;
        let n = self.problem.n as usize;
        cub.histogram_u8(self.backend, &self.inputs[set], self.outputs.get_mut(set), n)
    }

    /// The bins back to zero (a histogram adds to them), the guard to poison.
    fn poison(&mut self) -> Result<()> {
        self.outputs.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let out = self.outputs.read(self.backend, set)?;
        check_bins(&out, &self.expected, self.problem.n, "bytes")
    }
}

/// `--skew` is a percentage.
pub(super) fn check_skew(skew: usize) -> Result<()> {
    if skew > 100 {
        return Err(Error::InvalidInput {
            what: "--skew".into(),
            reason: format!("{skew} is not a percentage: give 0 (uniform values) to 100 (every value one value)"),
        });
    }
    Ok(())
}

/// `out` (the 256 bins and the guard words after them) against the exact counts of `n` `what`.
pub(super) fn check_bins(out: &[u32], expected: &[u32], n: u32, what: &str) -> std::result::Result<String, String> {
    if let Some(b) = (0..BINS as usize).find(|&b| out[b] != expected[b]) {
        return Err(format!(
            "bin {b}: {} counted, {} expected ({n} {what})",
            out[b], expected[b]
        ));
    }
    if let Some(i) = out[BINS as usize..].iter().position(|&w| w != POISON) {
        return Err(format!("wrote past the 256 bins, at word {}", BINS as usize + i));
    }
    Ok(format!("256 bins exact over {n} {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skew_puts_that_share_of_the_bytes_in_one_bin() {
        let bytes = skewed_bytes(5, 100_000, 50);
        let share = reference(&bytes)[FREQUENT as usize] as f64 / 100_000.0;
        // Half by the skew, plus the uniform half's 1/256.
        assert!((share - (0.5 + 0.5 / 256.0)).abs() < 0.01, "{share}");
        assert_eq!(reference(&skewed_bytes(5, 1000, 100))[FREQUENT as usize], 1000);
    }
}
