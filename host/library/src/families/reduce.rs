//! The reduction family's host side: its safe launch, the passes a multi-pass kernel needs, CUB as
//! the baseline, and a check whose tolerance follows the kernels' order of additions.
//!
//! The inputs are random multiples of 2^-7 in [-1, 1): every partial sum is then a multiple of 2^-7,
//! exact in f32 while its magnitude stays below 2^17. Where the absolute values sum to less than
//! that, no partial sum can reach it in any order, so the total must equal the exact sum bit for
//! bit: a lost or doubled element always shows. Above it, the total must lie within γ_d·Σ|x| of the
//! exact sum, where d is the longest chain of additions any element goes through in that kernel's
//! order (its share walked by one thread, then the tree levels, pass after pass).

use super::auto::{Rung, Target};
use super::elementwise::check_shape;
pub use super::resident_blocks;
use super::{Bound, Case, Cli, FamilyDemo, GUARD, KernelChoice, Plan, Size, Sizes, Work, check_len, substream};
use crate::cub::Cub;
use kernels::Source;
use kernels::reduce::{FAMILY, Passes, Reduce, THREADS, passes};
use ptxkit::{AnyFamily, Family, Kernel, Occupancy};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::array::{Array, Buffer};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The baseline: `cub::DeviceReduce::Sum`.
const CUB: &str = "cub_reduce_sum";

/// Inputs are multiples of 2^-GRID_BITS.
const GRID_BITS: i32 = 7;

/// The reductions' grids are a problem's `resident_blocks` (the host's count), never the device's
/// own figure: any [`Occupancy`] gives the same grid.
const DEVICE_FREE: Occupancy = Occupancy::UNLIMITED;

/// Elements `kernel` writes to its output for `problem`: a sum per block, and for a one-pass
/// kernel the total before them.
pub fn output_len(kernel: &Kernel<Reduce>, problem: &Reduce) -> usize {
    let blocks = kernel.launch_shape(problem, DEVICE_FREE).grid.x as usize;
    match passes(kernel.entry()) {
        Passes::UntilOne => blocks,
        Passes::One => 1 + blocks,
    }
}

/// One launch of `kernel` over `problem.n` elements of `input` into `output` ([`output_len`]
/// elements), with `ticket` a u32 that is zero: checks the lengths and that the arrays live where
/// `backend` can reach them, then launches.
pub fn launch(
    backend: &Backend,
    kernel: &Kernel<Reduce>,
    source: Source,
    problem: &Reduce,
    input: &impl Array<f32>,
    output: &mut impl Array<f32>,
    ticket: &mut impl Array<u32>,
) -> Result<()> {
    check_len("input", input.len(), problem.n as usize)?;
    check_len("output", output.len(), output_len(kernel, problem))?;
    check_len("ticket", ticket.len(), 1)?;
    let args = (
        input.view(backend)?.head(problem.n),
        output.view_mut(backend)?.head(output_len(kernel, problem)),
        ticket.view_mut(backend)?.head(1u32),
        problem.n,
    );
    // SAFETY: each view is its array's on this backend, borrowed for the launch: the n elements the
    // kernels read, the sums they write, and the ticket's one word.
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &[input, &*output, &*ticket]) }
}

/// The reduction of `input[..problem.n]` with `kernel` (any kernel of the `reduce` or
/// `reduce_max` family), launched as often as it needs (a multi-pass kernel again over its partial
/// results until one is left), alternating between the two `scratch` arrays: the index of the one
/// whose element 0 holds the result.
pub fn complete(
    backend: &Backend,
    kernel: &Kernel<Reduce>,
    source: Source,
    problem: &Reduce,
    input: &impl Array<f32>,
    scratch: &mut [impl Array<f32>; 2],
    ticket: &mut impl Array<u32>,
) -> Result<usize> {
    launch(backend, kernel, source, problem, input, &mut scratch[0], ticket)?;
    if passes(kernel.entry()) == Passes::One {
        return Ok(0);
    }
    let (mut n, mut from) = (kernel.launch_shape(problem, DEVICE_FREE).grid.x, 0);
    while n > 1 {
        let over = problem.over(n);
        let [first, second] = scratch;
        let (source_sums, target) = if from == 0 {
            (&*first, second)
        } else {
            (&*second, first)
        };
        launch(backend, kernel, source, &over, source_sums, target, ticket)?;
        n = kernel.launch_shape(&over, DEVICE_FREE).grid.x;
        from = 1 - from;
    }
    Ok(from)
}

/// The longest chain of additions an element goes through in `kernel`'s order for `problem`: per
/// pass, the share one thread walks alone (elements over threads, plus its four lanes), then at
/// most 10 pairwise levels (the first add, 8 tree or shuffle levels, the block's warp sums).
pub fn rounding_depth(kernel: &Kernel<Reduce>, problem: &Reduce) -> u64 {
    let per_pass = |p: &Reduce| {
        let threads = kernel.launch_shape(p, DEVICE_FREE).grid.x as u64 * THREADS as u64;
        (p.n as u64).div_ceil(threads) + 4 + 10
    };
    let blocks = kernel.launch_shape(problem, DEVICE_FREE).grid.x;
    let mut depth = per_pass(problem);
    match passes(kernel.entry()) {
        Passes::One => depth += (blocks as u64).div_ceil(THREADS as u64) + 4 + 10,
        Passes::UntilOne => {
            let mut n = blocks;
            while n > 1 {
                let over = problem.over(n);
                depth += per_pass(&over);
                n = kernel.launch_shape(&over, DEVICE_FREE).grid.x;
            }
        }
    }
    depth
}

/// The longest chain of additions in CUB's order, which is its own: per-thread runs over an even
/// share of the input, then trees. Assumed: at least one 256-thread block per SM (CUB launches
/// several), each thread's run at most 64 additions longer than its share, 64 tree levels.
fn cub_rounding_depth(n: u32, sms: u32) -> u64 {
    (n as u64).div_ceil(sms.max(1) as u64 * THREADS as u64) + 64 + 64
}

/// `len` random multiples of 2^-7 in [-1, 1), never all zero, then [`GUARD`] NaNs.
pub fn grid_inputs(rng: u64, len: usize) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(rng);
    let scale = (2.0f32).powi(-GRID_BITS);
    let mut values: Vec<f32> = (0..len)
        .map(|_| rng.random_range(-(1 << GRID_BITS)..(1 << GRID_BITS)) as f32 * scale)
        .collect();
    if values.iter().all(|&v| v == 0.0) {
        values[0] = scale;
    }
    values.resize(len + GUARD, f32::NAN);
    values
}

/// The exact sum and the sum of absolute values of `values` (multiples of 2^-7: f64 adds them
/// exactly up to 2^45 in magnitude).
pub fn exact_sums(values: &[f32]) -> (f64, f64) {
    values
        .iter()
        .fold((0.0, 0.0), |(sum, abs), &v| (sum + v as f64, abs + (v as f64).abs()))
}

/// Whether `got` is the sum of values whose exact sum is `exact` and absolute sum `abs`, added in
/// an order whose longest chain is `depth` additions: a summary, or what is wrong.
pub fn check_total(got: f32, exact: f64, abs: f64, depth: u64) -> std::result::Result<String, String> {
    if got.is_nan() {
        return Err("the total is NaN: never written, or an element past the input's end was read".into());
    }
    let exact_limit = (2.0f64).powi(24 - GRID_BITS);
    if abs < exact_limit {
        if got as f64 != exact {
            return Err(format!(
                "total {got} but the exact sum is {exact}: with Σ|x| = {abs} < 2^{} every order of addition is exact, so an element was lost or added twice",
                24 - GRID_BITS
            ));
        }
        return Ok(format!("total {got}, exactly the sum"));
    }
    let u = (2.0f64).powi(-24);
    if depth as f64 * u >= 0.5 {
        return Err(format!(
            "no error bound for a chain of {depth} additions in f32: the order is too long to judge"
        ));
    }
    let gamma = depth as f64 * u / (1.0 - depth as f64 * u);
    let error = (got as f64 - exact).abs();
    let bound = gamma * abs;
    if error > bound {
        return Err(format!(
            "total {got}, exact sum {exact}: error {error:.3e} above the bound γ_{depth}·Σ|x| = {bound:.3e}"
        ));
    }
    Ok(format!(
        "total {got}, error {error:.2e} within γ_{depth}·Σ|x| = {bound:.2e}"
    ))
}

/// What a reduction case keeps per input set: the input, the two scratch arrays its passes
/// alternate between (poisoned before each run), the ticket, and where the last result landed.
pub(crate) struct ReduceSets {
    inputs: Vec<Buffer<f32>>,
    scratch: Vec<[Buffer<f32>; 2]>,
    tickets: Vec<Buffer<u32>>,
    poison: Vec<f32>,
    /// Per set: which scratch array holds the last result.
    results: Vec<Option<usize>>,
}

impl ReduceSets {
    /// `sets` copies of `input`, with scratch arrays long enough for every kernel of `family`.
    pub fn new(
        backend: &Backend,
        family: &Family<Reduce>,
        problem: &Reduce,
        input: &[f32],
        sets: usize,
    ) -> Result<ReduceSets> {
        let scratch_len = family
            .kernels
            .iter()
            .map(|k| output_len(k, problem))
            .max()
            .unwrap_or(1)
            .max(1);
        let sets = sets.max(1);
        let poison = vec![f32::NAN; scratch_len];
        let inputs = (0..sets)
            .map(|_| Buffer::upload(backend, input))
            .collect::<Result<Vec<_>>>()?;
        let scratch = (0..sets)
            .map(|_| Ok([Buffer::upload(backend, &poison)?, Buffer::upload(backend, &poison)?]))
            .collect::<Result<Vec<_>>>()?;
        let tickets = (0..sets)
            .map(|_| Buffer::upload(backend, &[0u32]))
            .collect::<Result<Vec<_>>>()?;
        Ok(ReduceSets {
            inputs,
            scratch,
            tickets,
            poison,
            results: vec![None; sets],
        })
    }

    /// Runs `kernel` to completion on set `set` ([`complete`]).
    pub fn run(
        &mut self,
        backend: &Backend,
        kernel: &Kernel<Reduce>,
        source: Source,
        problem: &Reduce,
        set: usize,
    ) -> Result<()> {
        let at = complete(
            backend,
            kernel,
            source,
            problem,
            &self.inputs[set],
            &mut self.scratch[set],
            &mut self.tickets[set],
        )?;
        self.results[set] = Some(at);
        Ok(())
    }

    /// Set `set`'s input and the first scratch array, for a library to write its result to.
    pub fn for_library(&mut self, set: usize) -> (&Buffer<f32>, &mut Buffer<f32>) {
        self.results[set] = Some(0);
        let [first, _] = &mut self.scratch[set];
        (&self.inputs[set], first)
    }

    /// Every scratch array back to NaN; no result yet.
    pub fn poison(&mut self, backend: &Backend) -> Result<()> {
        for pair in &mut self.scratch {
            for buffer in pair {
                buffer.write(backend, &self.poison)?;
            }
        }
        self.results.fill(None);
        Ok(())
    }

    /// Set `set`'s last result, read back; an error when nothing ran since the poison or the
    /// ticket was not left at 0.
    pub fn result(&self, backend: &Backend, set: usize) -> std::result::Result<f32, String> {
        let at = self.results[set].ok_or("nothing was launched on this input set since the poison")?;
        let ticket = self.tickets[set].read(backend).map_err(|e| e.to_string())?[0];
        if ticket != 0 {
            return Err(format!(
                "the ticket is {ticket} after the launch: a one-pass kernel must leave it at 0 for the next"
            ));
        }
        Ok(self.scratch[set][at].read(backend).map_err(|e| e.to_string())?[0])
    }
}

/// The host side of the reduction family.
pub struct ReduceDemo;

/// One element, the warp and block edges (31–33, 255–257, 511–513), 2^k ± 1, primes, and sizes
/// where the grid-sized kernels walk several float4s per thread.
const EDGE_SIZES: [usize; 16] = [
    1, 2, 31, 32, 33, 255, 257, 511, 513, 1023, 1025, 4097, 65_535, 65_537, 100_003, 262_147,
];

impl FamilyDemo for ReduceDemo {
    fn family(&self) -> &'static dyn AnyFamily {
        &FAMILY
    }

    fn extents(&self) -> &'static [&'static str] {
        &["n"]
    }

    fn baseline(&self) -> Option<&'static str> {
        Some(CUB)
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let problem = Reduce::new(size.0[0], 1)?;
        for kernel in FAMILY.kernels {
            check_shape(kernel, &problem)?;
        }
        let n = problem.n as u64;
        let input = 4 * (n + GUARD as u64);
        let scratch = 2 * 4 * (n.div_ceil(THREADS as u64) + 2);
        Ok(Plan {
            work: Work {
                bytes: 4.0 * n as f64,
                flops: n as f64,
                bound: Bound::Memory,
            },
            x: n as f64,
            // The input, and the read-back sums.
            host_bytes: input + scratch,
            device_bytes: input + scratch + 4,
        })
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let problem = Reduce::new(size.0[0], resident_blocks(backend, THREADS))?;
        let n = problem.n as usize;
        let input = grid_inputs(substream(rng, 11), n);
        let (exact, abs) = exact_sums(&input[..n]);
        let buffers = ReduceSets::new(backend, &FAMILY, &problem, &input, sets)?;
        let cub = match backend {
            Backend::Gpu(gpu) => Cub::load(gpu, n)?,
            Backend::Emu => None,
        };
        Ok(Box::new(ReduceCase {
            backend,
            problem,
            exact,
            abs,
            buffers,
            depth: None,
            cub,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: "sum of n f32: the reduction ladder from interleaved trees to one pass, against CUB's DeviceReduce::Sum",
            default: Size([1 << 28, 1, 1]),
            emulator_cap: Size([1 << 20, 1, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            edge: EDGE_SIZES.iter().map(|&n| Size([n, 1, 1])).collect(),
            large: vec![Size([(1 << 26) + 3, 1, 1]), Size([1 << 30, 1, 1])],
            bench: [20, 22, 24, 26, 28, 30].iter().map(|&k| Size([1 << k, 1, 1])).collect(),
            smoke: Size([70_001, 1, 1]),
        }
    }

    fn choice(&self) -> &dyn KernelChoice {
        self
    }
}

impl KernelChoice for ReduceDemo {
    fn fastest_rung(&self, _target: Target, _size: Size) -> Option<Rung> {
        Some(Rung {
            entry: "reduce_one_pass",
            why: "one launch, the last block adding the partial sums: level with CUB",
        })
    }
}

struct ReduceCase<'a> {
    backend: &'a Backend,
    problem: Reduce,
    exact: f64,
    abs: f64,
    buffers: ReduceSets,
    /// The depth of the additions of what ran last.
    depth: Option<u64>,
    cub: Option<Cub>,
}

impl Case for ReduceCase<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        let kernel = &FAMILY.kernels[kernel];
        self.buffers.run(self.backend, kernel, source, &self.problem, set)?;
        self.depth = Some(rounding_depth(kernel, &self.problem));
        Ok(())
    }

    fn baseline(&self) -> Option<&'static str> {
        self.cub.as_ref().map(|_| CUB)
    }

    fn launch_baseline(&mut self, set: usize) -> Result<()> {
        let cub = Cub::loaded(&self.cub)?;
        let n = self.problem.n as usize;
        let (input, output) = self.buffers.for_library(set);
        cub.reduce_sum(self.backend, input, output, n)?;
        let sms = self.backend.gpu().map_or(1, |gpu| gpu.info().sm_count);
        self.depth = Some(cub_rounding_depth(self.problem.n, sms));
        Ok(())
    }

    fn poison(&mut self) -> Result<()> {
        self.depth = None;
        self.buffers.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let depth = self.depth.ok_or("nothing was launched since the poison")?;
        let total = self.buffers.result(self.backend, set)?;
        check_total(total, self.exact, self.abs, depth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_inputs_are_multiples_of_the_grid_in_range_then_the_guard() {
        let values = grid_inputs(3, 10_000);
        let scale = (2.0f32).powi(GRID_BITS);
        assert!(
            values[..10_000]
                .iter()
                .all(|&v| (-1.0..1.0).contains(&v) && (v * scale).fract() == 0.0)
        );
        assert!(values[..10_000].iter().any(|&v| v != 0.0));
        assert!(values[10_000..].iter().all(|v| v.is_nan()));
    }

    #[test]
    fn small_sums_must_be_exact_and_large_ones_within_the_bound() {
        // Σ|x| below 2^17: one grid step off fails.
        assert!(check_total(1.5, 1.5, 100.0, 20).is_ok());
        assert!(check_total(1.5 + 1.0 / 128.0, 1.5, 100.0, 20).is_err());
        // Σ|x| = 2^20, depth 20: the bound is about 20 · 2^-24 · 2^20 = 1.25.
        assert!(check_total(1.0, 0.0, (1 << 20) as f64, 20).is_ok());
        assert!(check_total(2.0, 0.0, (1 << 20) as f64, 20).is_err());
        assert!(check_total(f32::NAN, 0.0, 1.0, 1).is_err());
    }

    #[test]
    fn rounding_depth_follows_each_kernels_passes() {
        let problem = Reduce::new(1 << 20, 8).unwrap();
        let depth = |entry: &str| {
            let kernel = FAMILY.kernels.iter().find(|k| k.entry() == entry).unwrap();
            rounding_depth(kernel, &problem)
        };
        // 256 elements per block: 2^20 → 4096 → 16 → 1, three passes of one element per thread.
        assert_eq!(depth("reduce_sequential"), 3 * (1 + 14));
        // 8 blocks of 256 threads walk 2^20 elements: 512 per thread, then the 8 partial sums.
        assert_eq!(depth("reduce_one_pass"), (512 + 14) + (1 + 14));
        assert_eq!(depth("reduce_vectorized"), (512 + 14) + (1 + 14));
    }
}
