//! The i32 scan family's host side: its safe launch and phases (the f32 family's, generic), inputs over the
//! whole i32 range (so that the sums wrap, as they must, exactly), CUB's `DeviceScan` as the
//! baseline, and an exact check.

use super::auto::{Rung, Target};
use super::elementwise::check_shape;
use super::scan::{levels_of, scan, sizes};
use super::{Bound, Case, Cli, FamilyDemo, GUARD, KernelChoice, Outputs, Plan, Size, Sizes, Work, substream};
use crate::cub::Cub;
use kernels::Source;
use kernels::scan::Scan;
use kernels::scan::integer::FAMILY;
use ptxkit::AnyFamily;
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::array::Buffer;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The baselines: `cub::DeviceScan::InclusiveSum` and `ExclusiveSum` on i32 (as u32: the same bits,
/// and wrapping is defined).
const CUB_INCLUSIVE: &str = "cub_inclusive_sum_i32";
const CUB_EXCLUSIVE: &str = "cub_exclusive_sum_i32";

/// What the outputs and the guard after them hold before each launch.
const POISON: i32 = 0x7fc0_dead;

/// `n` i32 from stream `rng`, over the whole range.
pub fn inputs(rng: u64, n: usize) -> Vec<i32> {
    let mut rng = StdRng::seed_from_u64(rng);
    (0..n).map(|_| rng.random()).collect()
}

/// The prefix sums of `input`, wrapping: inclusive or exclusive.
pub fn reference(input: &[i32], exclusive: bool) -> Vec<i32> {
    let mut sum = 0i32;
    input
        .iter()
        .map(|&x| {
            let before = sum;
            sum = sum.wrapping_add(x);
            if exclusive { before } else { sum }
        })
        .collect()
}

/// The host side of the i32 scan family. Sizes are (n, exclusive): 0 inclusive, 1 exclusive.
pub struct ScanI32Demo;

impl FamilyDemo for ScanI32Demo {
    fn family(&self) -> &'static dyn AnyFamily {
        &FAMILY
    }

    fn extents(&self) -> &'static [&'static str] {
        &["n", "exclusive"]
    }

    fn baseline(&self) -> Option<&'static str> {
        Some(CUB_INCLUSIVE)
    }

    fn label(&self, size: Size) -> String {
        sizes::label(size)
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let n = size.0[0];
        let problem = Scan::<i32>::new(n, sizes::exclusive(size)?)?;
        for kernel in FAMILY.kernels {
            check_shape(kernel, &problem)?;
        }
        let array = 4 * (n as u64 + GUARD as u64);
        let scratch: u64 = levels_of(&FAMILY, problem.n).iter().map(|&l| 4 * l as u64).sum();
        Ok(Plan {
            work: Work {
                bytes: 8.0 * n as f64,
                flops: n as f64,
                bound: Bound::Memory,
            },
            x: n as f64,
            // The input, its reference, the read-back output and its poison.
            host_bytes: 4 * array,
            device_bytes: 2 * array + scratch,
        })
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let n = size.0[0];
        let problem = Scan::<i32>::new(n, sizes::exclusive(size)?)?;
        let input = inputs(substream(rng, 19), n);
        let expected = reference(&input, problem.exclusive);
        let sets = sets.max(1);
        let inputs = (0..sets)
            .map(|_| Buffer::upload(backend, &input))
            .collect::<Result<Vec<_>>>()?;
        let outputs = Outputs::new(backend, n, GUARD, POISON, sets)?;
        let levels = (0..sets)
            .map(|_| {
                levels_of(&FAMILY, problem.n)
                    .into_iter()
                    .map(|len| Buffer::upload(backend, &vec![POISON; len]))
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<Vec<_>>>()?;
        let cub = match backend {
            Backend::Gpu(gpu) => Cub::load(gpu, n)?,
            Backend::Emu => None,
        };
        Ok(Box::new(ScanI32Case {
            backend,
            problem,
            expected,
            inputs,
            outputs,
            levels,
            cub,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: "prefix sums of n i32, exact (wrapping), --exclusive 1 for exclusive: warp shuffles (three phases), single-pass decoupled look-back by a thread, by a warp, by resident blocks copying their next tile ahead, or with the tile staged in shared memory; against CUB's DeviceScan",
            default: Size([1 << 28, 0, 1]),
            emulator_cap: Size([1 << 20, 1, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            edge: sizes::edge(),
            large: sizes::large(),
            bench: sizes::bench(),
            smoke: Size([70_001, 1, 1]),
        }
    }

    fn choice(&self) -> &dyn KernelChoice {
        self
    }
}

impl KernelChoice for ScanI32Demo {
    fn fastest_rung(&self, _target: Target, _size: Size) -> Option<Rung> {
        Some(Rung {
            entry: "scan_look_back_staged_i32",
            why: "the f32 family's fastest rung on i32: the look-back scan with its tile staged in shared memory",
        })
    }
}

struct ScanI32Case<'a> {
    backend: &'a Backend,
    problem: Scan<i32>,
    expected: Vec<i32>,
    inputs: Vec<Buffer<i32>>,
    outputs: Outputs<i32>,
    /// Per set: the scratch arrays of each level of tile totals (see `scan::levels_of`).
    levels: Vec<Vec<Buffer<i32>>>,
    cub: Option<Cub>,
}

impl Case for ScanI32Case<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        scan(
            self.backend,
            &FAMILY.kernels[kernel],
            source,
            &self.problem,
            &self.inputs[set],
            self.outputs.get_mut(set),
            &mut self.levels[set],
        )
    }

    fn baseline(&self) -> Option<&'static str> {
        self.cub.as_ref().map(|_| {
            if self.problem.exclusive {
                CUB_EXCLUSIVE
            } else {
                CUB_INCLUSIVE
            }
        })
    }

    fn launch_baseline(&mut self, set: usize) -> Result<()> {
        let cub = Cub::loaded(&self.cub)?;
        let n = self.problem.n as usize;
        cub.scan_i32(
            self.backend,
            &self.inputs[set],
            self.outputs.get_mut(set),
            n,
            self.problem.exclusive,
        )
    }

    fn poison(&mut self) -> Result<()> {
        self.outputs.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let n = self.problem.n as usize;
        let out = self.outputs.read(self.backend, set)?;
        if let Some(i) = (0..n).find(|&i| out[i] != self.expected[i]) {
            return Err(format!(
                "element {i} is {}, the exact (wrapping) prefix is {}",
                out[i], self.expected[i]
            ));
        }
        if let Some(i) = out[n..].iter().position(|&w| w != POISON) {
            return Err(format!("wrote past the end of the output, at index {}", n + i));
        }
        Ok(format!("{n} prefixes exact"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_wraps_and_shifts_for_exclusive() {
        let input = [i32::MAX, 1, -5];
        assert_eq!(reference(&input, false), [i32::MAX, i32::MIN, i32::MIN.wrapping_sub(5)]);
        assert_eq!(reference(&input, true), [0, i32::MAX, i32::MIN]);
    }
}
