//! The f32 histogram family's host side: its safe launch, samples over and around the demo's
//! range (some uniform, some one frequent value), CUB's `DeviceHistogram::HistogramEven` on float
//! samples as the baseline, and the exact check (counts are integers: every bin must match).

use super::auto::{Rung, Target};
use super::elementwise::check_shape;
use super::histogram::{GUARD_WORDS, POISON, check_bins};
use super::{
    Bound, Case, Cli, FamilyDemo, KernelChoice, Outputs, Plan, Size, Sizes, Work, check_len, resident_blocks, substream,
};
use crate::cub::Cub;
use kernels::Source;
use kernels::histogram_f32::{BINS, FAMILY, HistogramF32, THREADS, bin, scale};
use ptxkit::{AnyFamily, Kernel};
use ptxkit_runtime::Backend;
use ptxkit_runtime::array::{Array, Buffer};
use ptxkit_runtime::{Error, Result};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The baseline: `cub::DeviceHistogram::HistogramEven` over [`RANGE`].
const CUB: &str = "cub_histogram_f32";

/// The range the demo counts over (CUB's wrapper in `benches/reference/cub/anchors.cu` is built
/// for the same one). Its width is a power of two, so that every sample's bin is exact whichever
/// way a library orders the arithmetic.
pub const RANGE: (f32, f32) = (-1.0, 1.0);

/// The value that the skewed inputs repeat (in bin 166).
pub const FREQUENT: f32 = 0.3;

/// `bins += histogram(input[..n])` over [lo, hi) with `kernel`, any f32 histogram kernel: checks
/// the range, that the input holds n samples and the bins 256 counts where `backend` can reach them,
/// then launches. The bins must be zero for a fresh histogram.
pub fn launch(
    backend: &Backend,
    kernel: &Kernel<HistogramF32>,
    source: Source,
    problem: &HistogramF32,
    (input, (lo, hi)): (&impl Array<f32>, (f32, f32)),
    bins: &mut impl Array<u32>,
) -> Result<()> {
    if !(lo.is_finite() && hi.is_finite() && lo < hi && (hi - lo).is_finite()) {
        return Err(Error::InvalidInput {
            what: "histogram range".into(),
            reason: format!(
                "[{lo}, {hi}) is not a range: give finite bounds with lo < hi and a width hi − lo that f32 holds"
            ),
        });
    }
    check_len("input", input.len(), problem.n as usize)?;
    check_len("bins", bins.len(), BINS as usize)?;
    let args = (
        input.view(backend)?.head(problem.n),
        bins.view_mut(backend)?.head(BINS),
        problem.n,
        lo,
        hi,
    );
    // SAFETY: each view is its array's on this backend, borrowed for the launch: the n samples
    // the kernels read and the 256 counts they add to.
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &[input, &*bins]) }
}

/// `n` samples from stream `rng`: `skew` percent of them [`FREQUENT`], the rest uniform over
/// [−1.25, 1.25) (a fifth outside [`RANGE`]), each a multiple of 2^-10 so that x − lo is exact.
pub fn samples(rng: u64, n: usize, skew: usize) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(rng);
    (0..n)
        .map(|_| {
            if rng.random_range(0..100) < skew {
                FREQUENT
            } else {
                rng.random_range(-1280i32..1280) as f32 / 1024.0
            }
        })
        .collect()
}

/// The counts of each bin over [lo, hi), by the kernels' own [`bin`].
pub fn reference(samples: &[f32], (lo, hi): (f32, f32)) -> Vec<u32> {
    let s = scale(lo, hi);
    let mut bins = vec![0u32; BINS as usize];
    for b in samples.iter().filter_map(|&x| bin(x, lo, hi, s)) {
        bins[b as usize] += 1;
    }
    bins
}

/// The host side of the f32 histogram family. Sizes are (n, skew): n samples, skew percent of them
/// one value.
pub struct HistogramF32Demo;

/// One sample, the warp, block and 16-byte edges, primes, uniform and skewed.
const EDGE_SIZES: [[usize; 2]; 11] = [
    [1, 0],
    [3, 0],
    [5, 50],
    [31, 0],
    [33, 50],
    [1023, 0],
    [1025, 100],
    [4097, 50],
    [65_537, 0],
    [100_003, 50],
    [1_000_003, 90],
];

impl FamilyDemo for HistogramF32Demo {
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
        super::histogram::check_skew(skew)?;
        let problem = HistogramF32::new(n, 1)?;
        for kernel in FAMILY.kernels {
            check_shape(kernel, &problem)?;
        }
        let bins = 4 * (BINS as u64 + GUARD_WORDS as u64);
        Ok(Plan {
            work: Work {
                bytes: 4.0 * n as f64,
                flops: 0.0,
                bound: Bound::Memory,
            },
            x: n as f64,
            host_bytes: 4 * n as u64 + 3 * bins,
            device_bytes: 4 * n as u64 + bins,
        })
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let [n, skew, _] = size.0;
        let problem = HistogramF32::new(n, resident_blocks(backend, THREADS))?;
        let values = samples(substream(rng, 17), n, skew);
        let expected = reference(&values, RANGE);
        let inputs = (0..sets.max(1))
            .map(|_| Buffer::upload(backend, &values))
            .collect::<Result<Vec<_>>>()?;
        let mut template = vec![0u32; BINS as usize];
        template.resize(BINS as usize + GUARD_WORDS, POISON);
        let outputs = Outputs::from_template(backend, template, sets)?;
        let cub = match backend {
            Backend::Gpu(gpu) => Cub::load(gpu, n)?,
            Backend::Emu => None,
        };
        Ok(Box::new(HistogramF32Case {
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
            about: "256-bin histogram of n f32 over [-1, 1), with --skew percent of them one value: global atomics, bins per block, bins per warp; against CUB's DeviceHistogram",
            default: Size([1 << 26, 50, 1]),
            emulator_cap: Size([1 << 20, 100, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            edge: EDGE_SIZES.iter().map(|&[n, skew]| Size([n, skew, 1])).collect(),
            large: vec![Size([(1 << 28) + 3, 0, 1]), Size([1 << 26, 50, 1])],
            bench: [22, 24, 26, 28]
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

impl KernelChoice for HistogramF32Demo {
    fn fastest_rung(&self, _target: Target, _size: Size) -> Option<Rung> {
        Some(Rung {
            entry: "histogram_f32_warp_bins",
            why: "bins per warp, 16-byte loads: the f32 ladder's fastest (issue 10's runs)",
        })
    }
}

struct HistogramF32Case<'a> {
    backend: &'a Backend,
    problem: HistogramF32,
    expected: Vec<u32>,
    inputs: Vec<Buffer<f32>>,
    outputs: Outputs<u32>,
    cub: Option<Cub>,
}

impl Case for HistogramF32Case<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        launch(
            self.backend,
            &FAMILY.kernels[kernel],
            source,
            &self.problem,
            (&self.inputs[set], RANGE),
            self.outputs.get_mut(set),
        )
    }

    fn baseline(&self) -> Option<&'static str> {
        self.cub.as_ref().map(|_| CUB)
    }

    fn launch_baseline(&mut self, set: usize) -> Result<()> {
        let cub = Cub::loaded(&self.cub)?;
        let n = self.problem.n as usize;
        cub.histogram_f32(self.backend, &self.inputs[set], self.outputs.get_mut(set), n)
    }

    /// The bins back to zero (a histogram adds to them), the guard to poison.
    fn poison(&mut self) -> Result<()> {
        self.outputs.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let out = self.outputs.read(self.backend, set)?;
        check_bins(&out, &self.expected, self.problem.n, "samples")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_fall_in_and_around_the_range_and_skew_fills_one_bin() {
        let values = samples(5, 100_000, 50);
        let counted: u32 = reference(&values, RANGE).iter().sum();
        // Half frequent (in range), four fifths of the uniform half.
        let share = counted as f64 / 100_000.0;
        assert!((share - 0.9).abs() < 0.01, "{share}");
        let frequent_bin = bin(FREQUENT, RANGE.0, RANGE.1, scale(RANGE.0, RANGE.1)).unwrap();
        assert_eq!(reference(&samples(5, 1000, 100), RANGE)[frequent_bin as usize], 1000);
    }
}
