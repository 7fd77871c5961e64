//! The element-wise problem's host side: its safe launch, and the demo its two families share
//! (`vec_add` and `shared_mem_add`, which differ only in what they compute per element).

use super::{
    Bound, Case, Cli, FamilyDemo, GUARD, Outputs, Plan, Size, Sizes, Work, check_guard, check_len, guarded_inputs,
    substream,
};
use kernels::Source;
use kernels::elementwise::Elementwise;
use ptxkit::{AnyFamily, Family, Kernel};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::array::{Array, Buffer};

/// `out` from `a` and `b` with `kernel`, any kernel of an element-wise family: checks that each
/// array holds the problem's n elements and lives where `backend` can reach it, then launches.
pub fn launch(
    backend: &Backend,
    kernel: &Kernel<Elementwise>,
    source: Source,
    problem: &Elementwise,
    a: &impl Array<f32>,
    b: &impl Array<f32>,
    out: &mut impl Array<f32>,
) -> Result<()> {
    let n = problem.len();
    check_len("input a", a.len(), n)?;
    check_len("input b", b.len(), n)?;
    check_len("output", out.len(), n)?;
    let args = (
        a.view(backend)?.head(n),
        b.view(backend)?.head(n),
        out.view_mut(backend)?.head(n),
        problem.n,
    );
    // SAFETY: each view is its array's on this backend, borrowed for the launch: the n elements
    // that every element-wise kernel reads or writes for this problem.
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &[a, b, &*out]) }
}

/// Element `i` of a family's result from the inputs: `(value, tolerance)`, the f64 reference.
pub type ElementReference = fn(&[f32], &[f32], usize) -> (f64, f64);

/// The host side of an element-wise family.
pub struct ElementwiseDemo {
    pub family: &'static Family<Elementwise>,
    pub about: &'static str,
    pub reference: ElementReference,
}

/// `out = a + b`.
pub static VEC_ADD: ElementwiseDemo = ElementwiseDemo {
    family: &kernels::vec_add::FAMILY,
    about: "out = a + b: the memory-bound baseline, against the device-to-device copy",
    reference: kernels::reference::vec_add_at,
};

/// The seed's shared-memory example.
pub static SHARED_MEM_ADD: ElementwiseDemo = ElementwiseDemo {
    family: &kernels::shared_mem_add::FAMILY,
    about: "the seed's shared-memory example: stage a + b, barrier, add the left neighbour",
    reference: |a, b, i| kernels::reference::shared_mem_add_at(a, b, kernels::shared_mem_add::BLOCK as usize, i),
};

/// Lengths around the warp and the 256-thread block, primes, and grids of hundreds and thousands
/// of blocks.
const EDGE_LENGTHS: [usize; 11] = [1, 2, 31, 32, 33, 255, 256, 257, 1000, 100_003, 1_000_003];

impl FamilyDemo for ElementwiseDemo {
    fn family(&self) -> &'static dyn AnyFamily {
        self.family
    }

    fn extents(&self) -> &'static [&'static str] {
        &["n"]
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let problem = Elementwise::new(size.0[0])?;
        for kernel in self.family.kernels {
            check_shape(kernel, &problem)?;
        }
        let n = problem.len() as u64;
        let array = 4 * (n + GUARD as u64);
        Ok(Plan {
            work: Work {
                bytes: 12.0 * n as f64,
                flops: n as f64,
                bound: Bound::Memory,
            },
            x: n as f64,
            // The inputs, a read-back output and the poison to reset it.
            host_bytes: 4 * array,
            device_bytes: 3 * array,
        })
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let problem = Elementwise::new(size.0[0])?;
        let n = problem.len();
        let a = guarded_inputs(substream(rng, 1), n);
        let b = guarded_inputs(substream(rng, 2), n);
        let inputs = (0..sets.max(1))
            .map(|_| Ok((Buffer::upload(backend, &a)?, Buffer::upload(backend, &b)?)))
            .collect::<Result<Vec<_>>>()?;
        let outputs = Outputs::new(backend, n, GUARD, f32::NAN, sets)?;
        Ok(Box::new(ElementwiseCase {
            backend,
            family: self.family,
            reference: self.reference,
            problem,
            a,
            b,
            inputs,
            outputs,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: self.about,
            default: Size([1 << 26, 1, 1]),
            emulator_cap: Size([1 << 20, 1, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            edge: EDGE_LENGTHS.iter().map(|&n| Size([n, 1, 1])).collect(),
            large: vec![Size([1 << 26, 1, 1])],
            bench: [20, 22, 24, 26, 28].iter().map(|&p| Size([1 << p, 1, 1])).collect(),
            smoke: Size([1000, 1, 1]),
        }
    }
}

/// CUDA's limits on `kernel`'s launch for `problem`, as an error naming the kernel: checked before a
/// device is known, so a grid that depends on the device is checked at its smallest (the launch
/// checks the grid it runs).
pub(crate) fn check_shape<P: ptxkit::Problem>(kernel: &Kernel<P>, problem: &P) -> Result<()> {
    kernel
        .launch_shape(problem, ptxkit::Occupancy::ONE)
        .check()
        .map_err(|reason| ptxkit_runtime::Error::InvalidInput {
            what: kernel.entry().to_string(),
            reason,
        })
}

struct ElementwiseCase<'a> {
    backend: &'a Backend,
    family: &'static Family<Elementwise>,
    reference: ElementReference,
    problem: Elementwise,
    /// The inputs on the host, guards included, for the reference.
    a: Vec<f32>,
    b: Vec<f32>,
    inputs: Vec<(Buffer<f32>, Buffer<f32>)>,
    outputs: Outputs<f32>,
}

impl Case for ElementwiseCase<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        let (a, b) = &self.inputs[set];
        launch(
            self.backend,
            &self.family.kernels[kernel],
            source,
            &self.problem,
            a,
            b,
            self.outputs.get_mut(set),
        )
    }

    fn poison(&mut self) -> Result<()> {
        self.outputs.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let n = self.problem.len();
        let out = self.outputs.read(self.backend, set)?;
        let (a, b) = (&self.a[..n], &self.b[..n]);
        kernels::reference::check_each(&out[..n], |i| (self.reference)(a, b, i)).map_err(|m| m.to_string())?;
        check_guard(&out, n)?;
        Ok(format!("{n} elements within tolerance of the f64 reference"))
    }
}
