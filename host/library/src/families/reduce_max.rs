//! The maximum's host side: the reduce family's launch and passes, CUB's `DeviceReduce::Max` as
//! the baseline, and an exact check. The inputs are uniform in [-1, 1) with one larger value
//! planted at a random place, so that a kernel which skips any part of the input misses it.

use super::elementwise::check_shape;
use super::reduce::ReduceSets;
use super::{Bound, Case, Cli, FamilyDemo, GUARD, Plan, Size, Sizes, Work, resident_blocks, substream};
use crate::cub::Cub;
use kernels::Source;
use kernels::reduce::{MAX_FAMILY, Reduce, THREADS};
use ptxkit::AnyFamily;
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The baseline: `cub::DeviceReduce::Max`.
const CUB: &str = "cub_reduce_max";

/// `n` values uniform in [-1, 1) and one in [2, 3) at a random index, then [`GUARD`] NaNs; the
/// planted value.
pub fn planted_inputs(rng: u64, n: usize) -> (Vec<f32>, f32) {
    let mut rng = StdRng::seed_from_u64(rng);
    let mut values: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    let planted = rng.random_range(2.0..3.0);
    let at = rng.random_range(0..n);
    values[at] = planted;
    values.resize(n + GUARD, f32::NAN);
    (values, planted)
}

/// The host side of the maximum.
pub struct ReduceMaxDemo;

impl FamilyDemo for ReduceMaxDemo {
    fn family(&self) -> &'static dyn AnyFamily {
        &MAX_FAMILY
    }

    fn extents(&self) -> &'static [&'static str] {
        &["n"]
    }

    fn baseline(&self) -> Option<&'static str> {
        Some(CUB)
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let problem = Reduce::new(size.0[0], 1)?;
        for kernel in MAX_FAMILY.kernels {
            check_shape(kernel, &problem)?;
        }
        let n = problem.n as u64;
        let input = 4 * (n + GUARD as u64);
        let scratch = 2 * 4 * (n.div_ceil(THREADS as u64) + 2);
        Ok(Plan {
            work: Work {
                bytes: 4.0 * n as f64,
                flops: 0.0,
                bound: Bound::Memory,
            },
            x: n as f64,
            host_bytes: input + scratch,
            device_bytes: input + scratch + 4,
        })
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let problem = Reduce::new(size.0[0], resident_blocks(backend, THREADS))?;
        let n = problem.n as usize;
        let (input, planted) = planted_inputs(substream(rng, 23), n);
        let buffers = ReduceSets::new(backend, &MAX_FAMILY, &problem, &input, sets)?;
        let cub = match backend {
            Backend::Gpu(gpu) => Cub::load(gpu, n)?,
            Backend::Emu => None,
        };
        Ok(Box::new(MaxCase {
            backend,
            problem,
            planted,
            buffers,
            cub,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: "maximum of n f32 in one pass (the sums' one-pass kernel, combining by the larger value), against CUB's DeviceReduce::Max",
            default: Size([1 << 28, 1, 1]),
            emulator_cap: Size([1 << 20, 1, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            edge: [1, 2, 31, 33, 1023, 1025, 4097, 65_537, 262_147]
                .iter()
                .map(|&n| Size([n, 1, 1]))
                .collect(),
            large: vec![Size([(1 << 30) + 7, 1, 1])],
            bench: [24, 26, 28, 30].iter().map(|&k| Size([1 << k, 1, 1])).collect(),
            smoke: Size([70_001, 1, 1]),
        }
    }
}

struct MaxCase<'a> {
    backend: &'a Backend,
    problem: Reduce,
    planted: f32,
    buffers: ReduceSets,
    cub: Option<Cub>,
}

impl Case for MaxCase<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        let kernel = &MAX_FAMILY.kernels[kernel];
        self.buffers.run(self.backend, kernel, source, &self.problem, set)
    }

    fn baseline(&self) -> Option<&'static str> {
        self.cub.as_ref().map(|_| CUB)
    }

    fn launch_baseline(&mut self, set: usize) -> Result<()> {
        let cub = Cub::loaded(&self.cub)?;
        let n = self.problem.n as usize;
        let (input, output) = self.buffers.for_library(set);
        cub.reduce_max(self.backend, input, output, n)
    }

    fn poison(&mut self) -> Result<()> {
        self.buffers.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let got = self.buffers.result(self.backend, set)?;
        if got.to_bits() != self.planted.to_bits() {
            return Err(format!("maximum {got}, but {} is in the input", self.planted));
        }
        Ok(format!("maximum {got}, exactly the planted one"))
    }
}
