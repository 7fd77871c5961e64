//! The row reductions' host side, for both families (sum and maximum per row): the safe launch, and
//! the check: the maximum exactly, each row's sum exactly where that is certain and within the
//! bound of its order beyond (as the sums of `families::reduce`, on the same inputs).

use super::auto::{Rung, Target};
use super::elementwise::check_shape;
use super::reduce::{check_total, grid_inputs};
use super::resident_blocks;
use super::{
    Bound, Case, Cli, FamilyDemo, GUARD, KernelChoice, Outputs, Plan, Size, Sizes, Work, check_guard, check_len,
    substream,
};
use kernels::Source;
use kernels::reduce::THREADS;
use kernels::rows::{MAX_FAMILY, MIN_PIECE, RowReduce, SUM_FAMILY};
use ptxkit::{AnyFamily, Family, Kernel};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::array::{Array, Buffer};

/// The split kernel's working arrays: a result per piece ([`RowReduce::partials_len`] floats) and
/// a ticket per row ([`RowReduce::tickets_len`] u32, zero, and left at zero by every launch).
pub struct Scratch<P, T> {
    pub partials: P,
    pub tickets: T,
}

impl Scratch<Buffer<f32>, Buffer<u32>> {
    /// Fresh arrays for `problem` on `backend`: the tickets zero, the partials poisoned.
    pub fn new(backend: &Backend, problem: &RowReduce) -> Result<Self> {
        Ok(Scratch {
            partials: Buffer::upload(backend, &vec![f32::NAN; problem.partials_len()])?,
            tickets: Buffer::upload(backend, &vec![0u32; problem.tickets_len()])?,
        })
    }
}

/// `output[r]` = row r of `input` reduced by `kernel`, any row-reduction kernel: checks that the
/// input holds rows × cols elements, the output rows and the scratch what `problem` needs, where
/// `backend` can reach them.
pub fn launch(
    backend: &Backend,
    kernel: &Kernel<RowReduce>,
    source: Source,
    problem: &RowReduce,
    input: &impl Array<f32>,
    output: &mut impl Array<f32>,
    scratch: &mut Scratch<impl Array<f32>, impl Array<u32>>,
) -> Result<()> {
    check_len("input", input.len(), problem.len())?;
    check_len("output", output.len(), problem.rows as usize)?;
    check_len("partials", scratch.partials.len(), problem.partials_len())?;
    check_len("tickets", scratch.tickets.len(), problem.tickets_len())?;
    let args = (
        input.view(backend)?.head(problem.len()),
        output.view_mut(backend)?.head(problem.rows),
        scratch.partials.view_mut(backend)?.head(problem.partials_len()),
        scratch.tickets.view_mut(backend)?.head(problem.tickets_len()),
        problem.rows,
        problem.cols,
    );
    // SAFETY: each view is its array's on this backend, borrowed for the launch: the rows × cols
    // elements the kernels read, the rows results they write, the pieces' results and the
    // tickets (zero, as the kernels leave them) the split kernel uses.
    unsafe {
        backend.launch_from(
            source.module(),
            kernel,
            problem,
            args,
            &[input, &*output, &scratch.partials, &scratch.tickets],
        )
    }
}

/// What a family computes per row.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reduction {
    Sum,
    Max,
}

/// The host side of a row-reduction family.
pub struct RowDemo {
    family: &'static Family<RowReduce>,
    reduction: Reduction,
}

/// The sum of each row.
pub const ROW_SUM: RowDemo = RowDemo {
    family: &SUM_FAMILY,
    reduction: Reduction::Sum,
};

/// The maximum of each row.
pub const ROW_MAX: RowDemo = RowDemo {
    family: &MAX_FAMILY,
    reduction: Reduction::Max,
};

/// Narrow rows at each group size (1, 2, 3, 5, 8, 9, 16 and 17 columns), with rows that leave a
/// batch's last groups empty and enough rows that the emulator's warps go round again; single rows
/// and columns, warp and block edges, more rows than a block's eight warps; rows cut into pieces (on the emulator's 8 resident blocks: 2 to 8 pieces, rows that start off a 16-byte
/// boundary, a last piece shorter than the others).
const EDGE_SHAPES: [[usize; 2]; 21] = [
    [9000, 1],
    [333, 2],
    [101, 3],
    [2100, 5],
    [64, 8],
    [700, 9],
    [45, 16],
    [29, 17],
    [1, 1],
    [1, 31],
    [9, 33],
    [17, 255],
    [3, 257],
    [8, 1000],
    [33, 7],
    [2, 4097],
    [1, 100_003],
    [257, 129],
    [1, 4096],
    [3, 8195],
    [5, 20_011],
];

impl FamilyDemo for RowDemo {
    fn family(&self) -> &'static dyn AnyFamily {
        self.family
    }

    fn extents(&self) -> &'static [&'static str] {
        &["rows", "cols"]
    }

    fn label(&self, size: Size) -> String {
        let [rows, cols, _] = size.0;
        format!("{rows} rows of {cols}")
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let [rows, cols, _] = size.0;
        let problem = RowReduce::new(rows, cols, 1)?;
        for kernel in self.family.kernels {
            check_shape(kernel, &problem)?;
        }
        let elements = problem.len() as u64;
        // The split kernel's scratch on the largest device the problem admits.
        let widest = RowReduce::new(rows, cols, u32::MAX)?;
        let scratch = 4 * (widest.partials_len() + widest.tickets_len()) as u64;
        let bytes = 4 * (elements + GUARD as u64) + 4 * (rows as u64 + GUARD as u64) + scratch;
        Ok(Plan {
            work: Work {
                bytes: 4.0 * (elements + rows as u64) as f64,
                flops: elements as f64,
                bound: Bound::Memory,
            },
            x: cols as f64,
            host_bytes: bytes + 8 * rows as u64,
            device_bytes: bytes,
        })
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let [rows, cols, _] = size.0;
        let problem = RowReduce::new(rows, cols, resident_blocks(backend, THREADS))?;
        let input = grid_inputs(substream(rng, 29), problem.len());
        let inputs = (0..sets.max(1))
            .map(|_| Buffer::upload(backend, &input))
            .collect::<Result<Vec<_>>>()?;
        let outputs = Outputs::new(backend, rows, GUARD, f32::NAN, sets)?;
        let scratch = (0..sets.max(1))
            .map(|_| Scratch::new(backend, &problem))
            .collect::<Result<Vec<_>>>()?;
        Ok(Box::new(RowCase {
            backend,
            family: self.family,
            reduction: self.reduction,
            problem,
            input,
            inputs,
            outputs,
            scratch,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: match self.reduction {
                Reduction::Sum => {
                    "sum of each row of a rows × cols f32 matrix: a block per row, a warp per row, a block per piece of a row"
                }
                Reduction::Max => {
                    "maximum of each row of a rows × cols f32 matrix: a block per row, a warp per row, a block per piece of a row"
                }
            },
            default: Size([65_536, 1024, 1]),
            emulator_cap: Size([1024, 4096, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            edge: EDGE_SHAPES.iter().map(|&[r, c]| Size([r, c, 1])).collect(),
            large: vec![Size([1 << 20, 64, 1]), Size([1024, 65_537, 1]), Size([7, 3_000_017, 1])],
            // 2^26 elements in rows of 32 to 32768 columns, then in 64 and in 4 rows.
            bench: [32, 256, 1024, 8192, 32_768]
                .iter()
                .map(|&cols| Size([(1 << 26) / cols, cols, 1]))
                .chain([Size([64, 1 << 20, 1]), Size([4, 1 << 24, 1])])
                .collect(),
            smoke: Size([19, 300, 1]),
        }
    }

    fn choice(&self) -> &dyn KernelChoice {
        self
    }
}

impl KernelChoice for RowDemo {
    /// A warp per row ahead of a block per row up to 1024 columns, the longest measured
    /// (docs/perf-log.md, change 14); a block per row for long rows, which are few and need the
    /// threads; pieces of rows where the rows are fewer than [`FEW_ROWS`] and long enough to cut
    /// (a block per row would leave SMs idle).
    fn fastest_rung(&self, _target: Target, size: Size) -> Option<Rung> {
        let [rows, cols, _] = size.0;
        let shape = if cols <= 4096 {
            Shape::Warp
        } else if rows < FEW_ROWS && cols >= 2 * MIN_PIECE as usize {
            Shape::Split
        } else {
            Shape::Block
        };
        let why = match shape {
            Shape::Warp => "a warp per row: ahead of a block per row up to 1024 columns",
            Shape::Block => "a block per row: long rows are few and need the threads",
            Shape::Split => "a block per piece of a row: too few rows to fill the SMs a block per row",
        };
        let entry = match (self.reduction, shape) {
            (Reduction::Sum, Shape::Warp) => "row_sum_warp",
            (Reduction::Sum, Shape::Block) => "row_sum_block",
            (Reduction::Sum, Shape::Split) => "row_sum_split",
            (Reduction::Max, Shape::Warp) => "row_max_warp",
            (Reduction::Max, Shape::Block) => "row_max_block",
            (Reduction::Max, Shape::Split) => "row_max_split",
        };
        Some(Rung { entry, why })
    }
}

/// Rows below which `auto` cuts long rows into pieces: about the blocks of 256 threads a large GPU
/// keeps resident (1056 on an H200), doubled (from there to 2048 rows the split kernel runs a
/// block per row, with 16-byte loads).
const FEW_ROWS: usize = 2048;

/// The three shapes of the walk.
#[derive(Clone, Copy)]
enum Shape {
    Warp,
    Block,
    Split,
}

struct RowCase<'a> {
    backend: &'a Backend,
    family: &'static Family<RowReduce>,
    reduction: Reduction,
    problem: RowReduce,
    input: Vec<f32>,
    inputs: Vec<Buffer<f32>>,
    outputs: Outputs<f32>,
    scratch: Vec<Scratch<Buffer<f32>, Buffer<u32>>>,
}

impl Case for RowCase<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        launch(
            self.backend,
            &self.family.kernels[kernel],
            source,
            &self.problem,
            &self.inputs[set],
            self.outputs.get_mut(set),
            &mut self.scratch[set],
        )
    }

    fn poison(&mut self) -> Result<()> {
        self.outputs.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let (rows, cols) = (self.problem.rows as usize, self.problem.cols as usize);
        let out = self.outputs.read(self.backend, set)?;
        let tickets = self.scratch[set]
            .tickets
            .read(self.backend)
            .map_err(|e| e.to_string())?;
        if let Some(row) = tickets.iter().position(|&t| t != 0) {
            return Err(format!(
                "row {row}'s ticket is {} after the launch: the split kernel must leave it at 0 for the next",
                tickets[row]
            ));
        }
        // A block's 256 threads (or a warp's 32) each walk at most cols / 32 elements, then at
        // most 10 levels combine them.
        let depth = cols.div_ceil(32) as u64 + 10;
        for (r, row) in self.input[..rows * cols].chunks(cols).enumerate() {
            let got = out[r];
            let result = match self.reduction {
                Reduction::Max => {
                    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    if got.to_bits() == max.to_bits() {
                        Ok(String::new())
                    } else {
                        Err(format!("maximum {got}, expected {max}"))
                    }
                }
                Reduction::Sum => {
                    let (sum, abs) = row
                        .iter()
                        .fold((0.0f64, 0.0f64), |(s, a), &x| (s + x as f64, a + (x as f64).abs()));
                    check_total(got, sum, abs, depth)
                }
            };
            result.map_err(|why| format!("row {r}: {why}"))?;
        }
        check_guard(&out, rows)?;
        Ok(format!("{rows} rows as the reference"))
    }
}
