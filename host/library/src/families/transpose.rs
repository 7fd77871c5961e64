//! The transpose family's host side: its safe launch, and the exact check (a transpose moves bits,
//! it computes nothing).

use super::auto::{Rung, Target};
use super::elementwise::check_shape;
use super::{
    Bound, Case, Cli, FamilyDemo, GUARD, KernelChoice, Outputs, Plan, Size, Sizes, Work, check_guard, check_len,
    guarded_inputs, substream,
};
use kernels::Source;
use kernels::transpose::{FAMILY, Transpose};
use ptxkit::{AnyFamily, Kernel, Occupancy};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::array::{Array, Buffer};

/// `output = inputᵀ` with `kernel`, any transpose kernel: checks that both arrays hold rows × cols
/// elements and live where `backend` can reach them, then launches.
pub fn launch(
    backend: &Backend,
    kernel: &Kernel<Transpose>,
    source: Source,
    problem: &Transpose,
    input: &impl Array<f32>,
    output: &mut impl Array<f32>,
) -> Result<()> {
    check_len("input", input.len(), problem.len())?;
    check_len("output", output.len(), problem.len())?;
    let len = problem.len();
    let args = (
        input.view(backend)?.head(len),
        output.view_mut(backend)?.head(len),
        problem.rows,
        problem.cols,
    );
    // SAFETY: each view is its array's on this backend, borrowed for the launch: the rows × cols
    // elements every transpose kernel reads or writes.
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &[input, &*output]) }
}

/// The host side of the transpose family.
pub struct TransposeDemo;

/// Single rows and columns, the warp and tile edges, primes, multiples of 4 (the 16-byte path)
/// and not, and a grid of hundreds of tiles.
const EDGE_SHAPES: [[usize; 2]; 14] = [
    [1, 1],
    [1, 37],
    [37, 1],
    [31, 33],
    [33, 31],
    [32, 32],
    [64, 64],
    [61, 127],
    [100, 100],
    [96, 132],
    [4, 1000],
    [1000, 3],
    [257, 509],
    [1024, 520],
];

impl FamilyDemo for TransposeDemo {
    fn family(&self) -> &'static dyn AnyFamily {
        &FAMILY
    }

    fn extents(&self) -> &'static [&'static str] {
        &["rows", "cols"]
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let [rows, cols, _] = size.0;
        let problem = Transpose::new(rows, cols)?;
        for kernel in FAMILY.kernels {
            check_shape(kernel, &problem)?;
        }
        let elements = problem.len() as u64;
        let array = 4 * (elements + GUARD as u64);
        Ok(Plan {
            work: Work {
                bytes: 8.0 * elements as f64,
                flops: 0.0,
                bound: Bound::Memory,
            },
            x: elements as f64,
            // The input, the read-back output and its poison.
            host_bytes: 3 * array,
            device_bytes: 2 * array,
        })
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let [rows, cols, _] = size.0;
        let problem = Transpose::new(rows, cols)?;
        let input = guarded_inputs(substream(rng, 8), problem.len());
        let inputs = (0..sets.max(1))
            .map(|_| Buffer::upload(backend, &input))
            .collect::<Result<Vec<_>>>()?;
        let outputs = Outputs::new(backend, problem.len(), GUARD, f32::NAN, sets)?;
        Ok(Box::new(TransposeCase {
            backend,
            problem,
            input,
            inputs,
            outputs,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: "out-of-place transpose of a rows × cols f32 matrix: naive, shared tiles dense, padded and swizzled, vectorised, peeled and skewed for rows that are not whole 16-byte chunks",
            default: Size([8192, 8192, 1]),
            emulator_cap: Size([1024, 1024, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            edge: EDGE_SHAPES.iter().map(|&[r, c]| Size([r, c, 1])).collect(),
            large: vec![Size([8192, 8192, 1]), Size([8191, 4097, 1]), Size([16384, 16384, 1])],
            bench: vec![
                Size([4096, 4096, 1]),
                Size([8192, 8192, 1]),
                Size([16384, 16384, 1]),
                Size([8191, 4097, 1]),
            ],
            smoke: Size([67, 45, 1]),
        }
    }

    fn choice(&self) -> &dyn KernelChoice {
        self
    }
}

impl KernelChoice for TransposeDemo {
    /// Where rows or cols is not a multiple of 4 the tiled kernels' 16-byte path does not apply,
    /// and the skewed kernel is the fastest; elsewhere the device chooses a tile.
    fn fastest_rung(&self, _target: Target, size: Size) -> Option<Rung> {
        let [rows, cols, _] = size.0;
        (!rows.is_multiple_of(4) || !cols.is_multiple_of(4)).then_some(Rung {
            entry: kernels::transpose::skewed::KERNEL.entry(),
            why: "rows or cols not a multiple of 4, where the tiles move one float at a time: the skewed kernel's whole 16-byte chunks ran faster than theirs",
        })
    }

    fn configurations(&self) -> &'static [&'static str] {
        const TILES: [&str; 2] = [
            kernels::transpose::vectorized::KERNEL_32.entry(),
            kernels::transpose::vectorized::KERNEL_64.entry(),
        ];
        &TILES
    }

    fn launch_blocks(&self, size: Size, kernel: usize) -> Result<u64> {
        let problem = Transpose::new(size.0[0], size.0[1])?;
        // The transposes' grids do not depend on the device.
        Ok(FAMILY.kernels[kernel]
            .launch_shape(&problem, Occupancy::UNLIMITED)
            .grid
            .volume())
    }
}

struct TransposeCase<'a> {
    backend: &'a Backend,
    problem: Transpose,
    /// The input on the host, guard included, for the reference.
    input: Vec<f32>,
    inputs: Vec<Buffer<f32>>,
    outputs: Outputs<f32>,
}

impl Case for TransposeCase<'_> {
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

    fn poison(&mut self) -> Result<()> {
        self.outputs.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let (rows, cols, len) = (
            self.problem.rows as usize,
            self.problem.cols as usize,
            self.problem.len(),
        );
        let out = self.outputs.read(self.backend, set)?;
        let input = &self.input[..len];
        kernels::reference::check_each(&out[..len], |i| kernels::reference::transpose_at(input, rows, cols, i))
            .map_err(|m| m.to_string())?;
        check_guard(&out, len)?;
        Ok(format!("{len} elements equal to the input's transpose"))
    }
}
