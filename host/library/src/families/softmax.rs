//! The softmax family's host side: its safe launch, inputs that would overflow e^x without the
//! row's maximum subtracted, and the f64 check with a tolerance that follows the arithmetic.

use super::auto::{Rung, Target};
use super::elementwise::check_shape;
use super::{
    Bound, Case, Cli, FamilyDemo, GUARD, KernelChoice, Outputs, Plan, Size, Sizes, Work, check_guard, check_len,
    substream,
};
use kernels::Source;
use kernels::softmax::registers::WARP_COLS;
use kernels::softmax::{FAMILY, Softmax, THREADS};
use ptxkit::device::WARP_SIZE;
use ptxkit::{AnyFamily, Kernel};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::array::{Array, Buffer};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Inputs are uniform in this range: e^100 is far beyond f32 (whose largest e^x is e^88.7), so a
/// kernel that forgot the maximum fails.
pub const INPUTS: std::ops::Range<f32> = -40.0..100.0;

/// `output` = the softmax of each row of `input` with `kernel`, any softmax kernel: checks that
/// both hold rows × cols elements where `backend` can reach them, then launches.
pub fn launch(
    backend: &Backend,
    kernel: &Kernel<Softmax>,
    source: Source,
    problem: &Softmax,
    input: &impl Array<f32>,
    output: &mut impl Array<f32>,
) -> Result<()> {
    check_len("input", input.len(), problem.len())?;
    check_len("output", output.len(), problem.len())?;
    let args = (
        input.view(backend)?.head(problem.len()),
        output.view_mut(backend)?.head(problem.len()),
        problem.rows,
        problem.cols,
    );
    // SAFETY: each view is its array's on this backend, borrowed for the launch: the rows × cols
    // elements every softmax kernel reads or writes.
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &[input, &*output]) }
}

/// Checks every element of `out` against the f64 softmax of `input`'s rows. Relative tolerance per
/// element, from the arithmetic: each e^x within 2^-21 (`ex2.approx`) plus |x − max|·2u from
/// scaling its argument; the row's sum within (its chain of additions and rescalings)·9u, the chain
/// being one thread's share plus 40 levels of merging (5 in a warp, then up to 32 warps one after
/// another, and a few to spare; a thread's share: a 256th of the row, or up to 32 elements where a
/// register rung gives a warp or a 1024-thread block the row); 10u for the division and the rest.
/// Results below f32's normal range may be 0 (flushed).
///
/// Special values as PyTorch's softmax gives them: a −∞ entry (masked) comes out exactly 0; a row
/// holding a NaN or a +∞ (e^(∞ − ∞)), or only −∞ (0/0), comes out NaN throughout.
pub fn check_rows(out: &[f32], input: &[f32], cols: usize) -> std::result::Result<String, String> {
    let u = (2.0f64).powi(-24);
    let share = cols
        .div_ceil(THREADS as usize)
        .max(cols.min(WARP_COLS as usize).div_ceil(WARP_SIZE as usize));
    let chain = share as f64 + 40.0;
    let mut worst = 0.0f64;
    for (r, (row_out, row_in)) in out.chunks(cols).zip(input.chunks(cols)).enumerate() {
        let max = row_in.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x as f64));
        if row_in.iter().any(|x| x.is_nan()) || max.is_infinite() {
            if let Some(c) = row_out.iter().position(|got| !got.is_nan()) {
                return Err(format!(
                    "row {r}, column {c}: {}, expected NaN (the row holds a NaN or +inf, or only -inf)",
                    row_out[c]
                ));
            }
            continue;
        }
        let sum: f64 = row_in.iter().map(|&x| (x as f64 - max).exp()).sum();
        for (c, (&got, &x)) in row_out.iter().zip(row_in).enumerate() {
            if x == f32::NEG_INFINITY {
                if got != 0.0 {
                    return Err(format!("row {r}, column {c}: {got}, expected 0 (the entry is -inf)"));
                }
                continue;
            }
            let expected = (x as f64 - max).exp() / sum;
            let tolerance =
                expected * (chain * 9.0 * u + (max - x as f64) * 2.0 * u + 10.0 * u) + f32::MIN_POSITIVE as f64;
            let error = (got as f64 - expected).abs();
            if got.is_nan() || error > tolerance {
                return Err(format!(
                    "row {r}, column {c}: {got}, expected {expected:.8e} (tolerance {tolerance:.2e})"
                ));
            }
            worst = worst.max(error / expected.max(f32::MIN_POSITIVE as f64));
        }
    }
    Ok(format!(
        "{} elements within tolerance of the f64 softmax (largest relative error {worst:.1e})",
        out.len()
    ))
}

/// The host side of the softmax family.
pub struct SoftmaxDemo;

/// Narrow rows at each group size's edges (1, 8, 9, 16, 17, 32, 33, 64, 65, 128 columns, rows
/// that leave a warp's last groups empty, and enough rows that the emulator's warps go round
/// again), single rows and columns, the warp and block edges, the staged rung's limit (8192) and past it,
/// the wide blocks' limits (16384, 32768) and past them, long rows (16-byte and scalar), shapes of
/// several rows, and the register-and-shared rung's edges (24576 in registers, 65536 in all) and a
/// vocabulary's width (rows that start off a 16-byte boundary).
const EDGE_SHAPES: [[usize; 2]; 36] = [
    [2500, 1],
    [77, 3],
    [41, 8],
    [1000, 9],
    [35, 16],
    [13, 17],
    [600, 32],
    [9, 33],
    [5, 64],
    [300, 65],
    [3, 100],
    [17, 128],
    [1, 1],
    [1, 31],
    [3, 33],
    [2, 255],
    [5, 257],
    [7, 1000],
    [2, 1023],
    [3, 1025],
    [2, 4097],
    [1, 8191],
    [2, 8192],
    [1, 8193],
    [3, 16_384],
    [1, 16_385],
    [2, 20_001],
    [1, 32_768],
    [1, 32_769],
    [37, 129],
    [2, 24_577],
    [3, 50_257],
    [2, 65_536],
    [1, 65_537],
    [3, 70_001],
    [1, 131_075],
];

impl FamilyDemo for SoftmaxDemo {
    fn family(&self) -> &'static dyn AnyFamily {
        &FAMILY
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
        let problem = Softmax::new(rows, cols)?;
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
            x: cols as f64,
            // The input, the read-back output and its poison.
            host_bytes: 3 * array,
            device_bytes: 2 * array,
        })
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let [rows, cols, _] = size.0;
        let problem = Softmax::new(rows, cols)?;
        let mut random = StdRng::seed_from_u64(substream(rng, 19));
        let mut input: Vec<f32> = (0..problem.len()).map(|_| random.random_range(INPUTS)).collect();
        input.resize(problem.len() + GUARD, f32::NAN);
        let inputs = (0..sets.max(1))
            .map(|_| Buffer::upload(backend, &input))
            .collect::<Result<Vec<_>>>()?;
        let outputs = Outputs::new(backend, problem.len(), GUARD, f32::NAN, sets)?;
        Ok(Box::new(SoftmaxCase {
            backend,
            problem,
            input,
            inputs,
            outputs,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: "softmax of each row of a rows × cols f32 matrix, the row's maximum subtracted: three reads, online maximum and sum, row staged in shared memory, row in registers (a warp, a block, a 1024-thread block per row), row in registers and shared memory",
            default: Size([65_536, 1024, 1]),
            emulator_cap: Size([256, 65_536, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            edge: EDGE_SHAPES.iter().map(|&[r, c]| Size([r, c, 1])).collect(),
            large: vec![
                Size([65_536, 1024, 1]),
                Size([2048, 32_771, 1]),
                Size([1024, 65_535, 1]),
            ],
            bench: [256, 1024, 4096, 8192, 16_384, 32_768, 50_257, 65_536]
                .iter()
                .map(|&cols| Size([(1 << 26) / cols, cols, 1]))
                .collect(),
            smoke: Size([5, 1000, 1]),
        }
    }

    fn choice(&self) -> &dyn KernelChoice {
        self
    }
}

impl KernelChoice for SoftmaxDemo {
    /// Rows in one warp's or one block's registers up to the block's columns, then 512-thread
    /// blocks, then 1024 (measured: docs/perf-log.md, changes 16, 21 and 27).
    fn fastest_rung(&self, _target: Target, size: Size) -> Option<Rung> {
        let cols = size.0[1];
        Some(if cols <= kernels::softmax::registers::BLOCK_COLS as usize {
            Rung {
                entry: "softmax_registers",
                why: "a row in registers, read once: the fastest up to the block's columns",
            }
        } else if cols <= kernels::softmax::wide::WIDE_512_COLS as usize {
            Rung {
                entry: "softmax_wide_512",
                why: "512-thread blocks: the fastest for rows past a block's registers",
            }
        } else if cols <= kernels::softmax::wide::WIDE_COLS as usize {
            Rung {
                entry: "softmax_wide",
                why: "1024-thread blocks: the fastest for rows up to their registers",
            }
        } else {
            Rung {
                entry: "softmax_wide_staged",
                why: "registers and shared memory: rows past the registers read once (past 65536 columns the rest twice)",
            }
        })
    }
}

struct SoftmaxCase<'a> {
    backend: &'a Backend,
    problem: Softmax,
    /// The input on the host, guard included, for the reference.
    input: Vec<f32>,
    inputs: Vec<Buffer<f32>>,
    outputs: Outputs<f32>,
}

impl Case for SoftmaxCase<'_> {
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
        let len = self.problem.len();
        let out = self.outputs.read(self.backend, set)?;
        let summary = check_rows(&out[..len], &self.input[..len], self.problem.cols as usize)?;
        check_guard(&out, len)?;
        Ok(summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_accepts_the_softmax_and_rejects_a_wrong_row() {
        let input = [1.0f32, 2.0, 3.0, 100.0, 0.0, -40.0];
        let softmax = |row: &[f32]| {
            let max = row.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x as f64));
            let sum: f64 = row.iter().map(|&x| (x as f64 - max).exp()).sum();
            row.iter()
                .map(|&x| ((x as f64 - max).exp() / sum) as f32)
                .collect::<Vec<_>>()
        };
        let mut out = softmax(&input[..3]);
        out.extend(softmax(&input[3..]));
        check_rows(&out, &input, 3).unwrap();
        let mut wrong = out.clone();
        wrong[1] *= 1.001;
        assert!(check_rows(&wrong, &input, 3).is_err());
        // Without the maximum subtracted e^100 overflows: inf / inf.
        wrong[3] = f32::NAN;
        assert!(check_rows(&wrong, &input, 3).is_err());
    }

    #[test]
    fn the_check_wants_masked_entries_zero_and_rows_with_nan_or_inf_all_nan() {
        let (inf, nan) = (f32::INFINITY, f32::NAN);
        let masked = [0.0f32, f32::NEG_INFINITY];
        check_rows(&[1.0, 0.0], &masked, 2).unwrap();
        assert!(check_rows(&[1.0, 1e-30], &masked, 2).is_err());
        assert!(check_rows(&[nan, nan], &masked, 2).is_err());
        for row in [[f32::NEG_INFINITY; 2], [1.0, inf], [nan, 1.0]] {
            check_rows(&[nan, nan], &row, 2).unwrap();
            assert!(check_rows(&[nan, 0.0], &row, 2).is_err(), "{row:?}");
        }
    }
}
