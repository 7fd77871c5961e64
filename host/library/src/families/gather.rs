//! The gather family's host side: its safe launch, random indices (with some past the source, which
//! must give NaN), and the exact check (a gather copies bits).

use super::elementwise::check_shape;
use super::{
    Bound, Case, Cli, FamilyDemo, GUARD, Outputs, Plan, Size, Sizes, Work, check_len, guarded_inputs, substream,
};
use kernels::Source;
use kernels::gather::{FAMILY, Gather};
use ptxkit::{AnyFamily, Kernel};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::array::{Array, Buffer};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// `output[i] = source[index[i]]` with `kernel`: checks that the arrays hold what the problem
/// needs, then launches. Any index is safe: the kernels give NaN past the source.
pub fn launch(
    backend: &Backend,
    kernel: &Kernel<Gather>,
    source: Source,
    problem: &Gather,
    (values, index): (&impl Array<f32>, &impl Array<u32>),
    output: &mut impl Array<f32>,
) -> Result<()> {
    check_len("source", values.len(), problem.len as usize)?;
    check_len("index", index.len(), problem.n as usize)?;
    check_len("output", output.len(), problem.n as usize)?;
    let args = (
        values.view(backend)?.head(problem.len),
        index.view(backend)?.head(problem.n),
        output.view_mut(backend)?.head(problem.n),
        problem.n,
        problem.len,
    );
    // SAFETY: each view is its array's on this backend, borrowed for the launch, holding what the
    // gather kernels read or write for this problem (indices past the source are not read).
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &[values, index, &*output]) }
}

/// The host side of the gather family.
pub struct GatherDemo;

/// What the outputs start as: no source value (those are in [-1, 1)) and not NaN (what an index
/// past the source gives), so an output the kernel did not write shows.
const POISON: f32 = 1.0e30;
/// One index in this many points past the source.
const PAST_THE_END: u32 = 97;

/// `n` indices from stream `rng`: uniform over the source, every 97th past its end.
fn indices(rng: u64, n: usize, len: u32) -> Vec<u32> {
    let mut rng = StdRng::seed_from_u64(rng);
    (0..n as u32)
        .map(|i| {
            if i % PAST_THE_END == PAST_THE_END - 1 {
                len.saturating_add(i)
            } else {
                rng.random_range(0..len)
            }
        })
        .collect()
}

/// Single elements, warp and block edges, sources shorter and longer than the outputs, primes.
const EDGE_SIZES: [[usize; 2]; 9] = [
    [1, 1],
    [1, 1000],
    [97, 1],
    [31, 33],
    [255, 257],
    [256, 100_003],
    [1000, 7],
    [100_003, 4096],
    [1_000_003, 1_000_003],
];

impl FamilyDemo for GatherDemo {
    fn family(&self) -> &'static dyn AnyFamily {
        &FAMILY
    }

    fn extents(&self) -> &'static [&'static str] {
        &["n", "len"]
    }

    fn label(&self, size: Size) -> String {
        let [n, len, _] = size.0;
        format!("n={n}, len={len}")
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let [n, len, _] = size.0;
        let problem = Gather::new(n, len)?;
        for kernel in FAMILY.kernels {
            check_shape(kernel, &problem)?;
        }
        let (n, len) = (n as u64, len as u64);
        Ok(Plan {
            // An index read, a source element read, an output written.
            work: Work {
                bytes: 12.0 * n as f64,
                flops: 0.0,
                bound: Bound::Memory,
            },
            x: n as f64,
            // The source (guard included), the indices, a read-back output and its poison.
            host_bytes: 4 * (len + GUARD as u64) + 4 * n + 8 * (n + GUARD as u64),
            device_bytes: 4 * (len + GUARD as u64) + 4 * n + 4 * (n + GUARD as u64),
        })
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let [n, len, _] = size.0;
        let problem = Gather::new(n, len)?;
        let source = guarded_inputs(substream(rng, 11), len);
        let index = indices(substream(rng, 12), n, problem.len);
        let inputs = (0..sets.max(1))
            .map(|_| Ok((Buffer::upload(backend, &source)?, Buffer::upload(backend, &index)?)))
            .collect::<Result<Vec<_>>>()?;
        let outputs = Outputs::new(backend, n, GUARD, POISON, sets)?;
        Ok(Box::new(GatherCase {
            backend,
            problem,
            source,
            index,
            inputs,
            outputs,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: "output[i] = source[index[i]] for n random indices into len floats (an embedding lookup, index_select)",
            default: Size([1 << 26, 1 << 26, 1]),
            emulator_cap: Size([1 << 20, 1 << 22, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            edge: EDGE_SIZES.iter().map(|&[n, len]| Size([n, len, 1])).collect(),
            large: vec![Size([1 << 26, 1 << 28, 1])],
            bench: vec![Size([1 << 24, 1 << 24, 1]), Size([1 << 26, 1 << 26, 1])],
            smoke: Size([10_007, 4099, 1]),
        }
    }
}

struct GatherCase<'a> {
    backend: &'a Backend,
    problem: Gather,
    /// The source (guard included) and the indices on the host, for the check.
    source: Vec<f32>,
    index: Vec<u32>,
    inputs: Vec<(Buffer<f32>, Buffer<u32>)>,
    outputs: Outputs<f32>,
}

impl Case for GatherCase<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        let (values, index) = &self.inputs[set];
        launch(
            self.backend,
            &FAMILY.kernels[kernel],
            source,
            &self.problem,
            (values, index),
            self.outputs.get_mut(set),
        )
    }

    fn poison(&mut self) -> Result<()> {
        self.outputs.poison(self.backend)
    }

    /// Every output bit for bit (NaN where the index is past the source), and the guard untouched.
    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let n = self.problem.n as usize;
        let out = self.outputs.read(self.backend, set)?;
        let source = &self.source[..self.problem.len as usize];
        for (i, (&got, &at)) in out[..n].iter().zip(&self.index).enumerate() {
            let expected = Gather::expected(source, at);
            if got.to_bits() != expected.to_bits() && !(got.is_nan() && expected.is_nan()) {
                return Err(format!("output {i} (index {at}) is {got}, expected {expected}"));
            }
        }
        if let Some(i) = out[n..].iter().position(|&v| v != POISON) {
            return Err(format!("wrote past the end of the output, at index {}", n + i));
        }
        let past = self.index.iter().filter(|&&at| at >= self.problem.len).count();
        Ok(format!("{n} outputs exact ({past} indices past the source gave NaN)"))
    }
}
