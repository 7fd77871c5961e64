//! The row normalisations' host side, layer norm and RMS norm: the safe launch, inputs whose rows
//! each have their own offset and spread (so that a kernel that forgot the mean fails), and the f64
//! check with a tolerance that follows the arithmetic, overflow included.

use super::auto::{Rung, Target};
use super::elementwise::check_shape;
use super::{
    Bound, Case, Cli, FamilyDemo, GUARD, KernelChoice, Outputs, Plan, Size, Sizes, Work, check_guard, check_len,
    substream,
};
use kernels::Source;
use kernels::norm::registers::BLOCK_COLS;
use kernels::norm::{LAYER_NORM_FAMILY, RMS_NORM_FAMILY, RowNorm};
use ptxkit::{AnyFamily, Family, Kernel};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::array::{Array, Buffer, Tracked};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// PyTorch's default `eps` for both norms.
pub const EPS: f32 = 1e-5;

/// The arrays of one launch: the input, the weight and bias (`cols` each, either may be absent),
/// the output, and where wanted each row's mean (written by layer norm only) and rstd.
pub struct Arrays<'a, A> {
    pub input: &'a A,
    pub weight: Option<&'a A>,
    pub bias: Option<&'a A>,
    pub output: &'a mut A,
    pub mean: Option<&'a mut A>,
    pub rstd: Option<&'a mut A>,
}

/// Each row of `arrays.input` normalised by `kernel` (any layer-norm or RMS-norm kernel) with
/// `eps`, into `arrays.output` and the statistics. Checks every array's length where `backend`
/// can reach it.
pub fn launch<A: Array<f32>>(
    backend: &Backend,
    kernel: &Kernel<RowNorm>,
    source: Source,
    problem: &RowNorm,
    eps: f32,
    arrays: Arrays<'_, A>,
) -> Result<()> {
    let Arrays {
        input,
        weight,
        bias,
        output,
        mean,
        rstd,
    } = arrays;
    let (rows, cols) = (problem.rows as usize, problem.cols as usize);
    check_len("input", input.len(), problem.len())?;
    check_len("output", output.len(), problem.len())?;
    let optional = |what: &str, array: Option<&A>, len: usize| -> Result<_> {
        Ok(match array {
            Some(array) => {
                check_len(what, array.len(), len)?;
                array.view(backend)?.head(len)
            }
            None => input.view(backend)?.head(0usize),
        })
    };
    let (weight_view, bias_view) = (optional("weight", weight, cols)?, optional("bias", bias, cols)?);
    let empty = output.view_mut(backend)?.head(0usize);
    let statistic = |what: &str, array: &mut Option<&mut A>| -> Result<_> {
        Ok(match array {
            Some(array) => {
                check_len(what, array.len(), rows)?;
                array.view_mut(backend)?.head(rows)
            }
            None => empty,
        })
    };
    let (mut mean, mut rstd) = (mean, rstd);
    let (mean_view, rstd_view) = (statistic("mean", &mut mean)?, statistic("rstd", &mut rstd)?);
    let args = (
        input.view(backend)?.head(problem.len()),
        weight_view,
        bias_view,
        output.view_mut(backend)?.head(problem.len()),
        mean_view,
        rstd_view,
        problem.rows,
        problem.cols,
        eps,
    );
    let mut used: Vec<&dyn Tracked> = vec![input, &*output];
    used.extend(weight.map(|w| w as &dyn Tracked));
    used.extend(bias.map(|b| b as &dyn Tracked));
    used.extend(mean.as_deref().map(|m| m as &dyn Tracked));
    used.extend(rstd.as_deref().map(|r| r as &dyn Tracked));
    // SAFETY: each view is its array's on this backend, borrowed for the launch: the rows × cols
    // elements read and written, the weight's and bias's cols (or none), the statistics' rows (or
    // none: empty views the kernels do not touch).
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &used) }
}

/// One row's reference: the outputs, the mean (0 for RMS norm) and the rstd, in f64 with f32's
/// overflow (a sum, difference or square at or past f32's largest finite value's rounding edge is
/// infinite, as the kernels' f32 arithmetic gives it), and the tolerance of each output.
pub struct RowReference {
    pub outputs: Vec<f64>,
    pub tolerances: Vec<f64>,
    pub mean: f64,
    pub mean_tolerance: f64,
    pub rstd: f64,
    /// Relative.
    pub rstd_tolerance: f64,
}

/// f32's smallest subnormal, 2^-149.
pub(crate) const SMALLEST_SUBNORMAL: f64 = 1.401298464324817e-45;

/// Where f32 rounds to infinity: its largest finite value plus half a unit in its last place.
const F32_OVERFLOW: f64 = 340282356779733661637539395458142568448.0;

/// `x` as f32 arithmetic would have it: infinite at or past the overflow edge.
pub(crate) fn as_f32_range(x: f64) -> f64 {
    if x.abs() >= F32_OVERFLOW {
        f64::INFINITY.copysign(x)
    } else {
        x
    }
}

/// The reference of layer norm (`centered`) or RMS norm of `row`, weight `weight` and bias `bias`
/// (empty: 1 and 0). Tolerances (u = 2^-24, d = the longest chain of additions: a thread's share,
/// at most cols / 32, plus 10 levels of combining): the mean within d·u·mean|x| + u·|mean|; the
/// squares' sum within 2·(d + 3)·u of itself, plus what the mean's error adds (its square, and
/// twice it times the deviations' sum); rstd within half the variance's relative error plus 2u;
/// each output within |w|·rstd·(|x − mean|·(rstd's error + 3u) + the mean's error) + u·(|y| + |b|),
/// plus two of f32's smallest subnormal (results below the normal range round to its multiples).
/// All doubled.
pub fn reference_row(row: &[f32], weight: &[f32], bias: &[f32], eps: f32, centered: bool) -> RowReference {
    let u = (2.0f64).powi(-24);
    let n = row.len() as f64;
    let depth = row.len().div_ceil(32) as f64 + 10.0;
    let sum: f64 = row.iter().map(|&x| x as f64).sum();
    let abs_mean = row.iter().map(|&x| (x as f64).abs()).sum::<f64>() / n;
    let (mean, mean_error) = if centered {
        let mean = as_f32_range(sum) / n;
        // Where the row holds an infinity or a NaN, every output is NaN: no error to bound.
        let error = depth * u * abs_mean + u * mean.abs();
        (mean, if error.is_finite() { error } else { 0.0 })
    } else {
        (0.0, 0.0)
    };
    let deviations: Vec<f64> = row.iter().map(|&x| as_f32_range(x as f64 - mean)).collect();
    let squares: f64 = deviations.iter().map(|&d| as_f32_range(d * d)).sum();
    let variance = as_f32_range(squares) / n;
    let abs_deviation = deviations.iter().map(|d| d.abs()).sum::<f64>() / n;
    let variance_error =
        2.0 * (depth + 3.0) * u * variance + mean_error * mean_error + 2.0 * mean_error * abs_deviation;
    // An infinite mean square makes RMS norm's row NaN throughout, as PyTorch's (the kernels'
    // `rstd`); layer norm's infinite variance gives rstd 0 exactly (its outputs the bias, or NaN).
    let rstd = if !centered && variance.is_infinite() {
        f64::NAN
    } else {
        1.0 / (variance + eps as f64).sqrt()
    };
    let rstd_tolerance = if variance.is_finite() {
        2.0 * (0.5 * variance_error / (variance + eps as f64) + 2.0 * u)
    } else {
        0.0
    };
    let mut outputs = Vec::with_capacity(row.len());
    let mut tolerances = Vec::with_capacity(row.len());
    for (c, &d) in deviations.iter().enumerate() {
        let w = weight.get(c).map_or(1.0, |&w| w as f64);
        let b = bias.get(c).map_or(0.0, |&b| b as f64);
        let y = d * rstd * w + b;
        outputs.push(y);
        // The last term: f32's spacing below its normal range, where a product or sum rounds to
        // a multiple of the smallest subnormal (each of the four roundings half of one).
        let error = w.abs() * rstd * (d.abs() * (rstd_tolerance / 2.0 + 3.0 * u) + mean_error)
            + u * (y.abs() + b.abs())
            + 2.0 * SMALLEST_SUBNORMAL;
        // 0 · ∞ where rstd is 0 and a deviation infinite: that output is NaN, its bound moot.
        tolerances.push(if error.is_nan() { 0.0 } else { 2.0 * error });
    }
    RowReference {
        outputs,
        tolerances,
        mean,
        mean_tolerance: 2.0 * mean_error,
        rstd,
        rstd_tolerance,
    }
}

/// Whether `got` is `want` within `tolerance`: NaN for NaN, the same infinity for an infinity.
pub fn within(got: f32, want: f64, tolerance: f64) -> bool {
    if want.is_nan() || want.is_infinite() {
        return (want.is_nan() && got.is_nan()) || got as f64 == want;
    }
    (got as f64 - want).abs() <= tolerance
}

/// Each row's mean and rstd as a kernel wrote them.
#[derive(Clone, Copy)]
pub struct Statistics<'a> {
    pub means: &'a [f32],
    pub rstds: &'a [f32],
}

/// Checks `out` (rows × cols) and, where given, the statistics against [`reference_row`] of every
/// row of `input`.
pub fn check_rows(
    (input, weight, bias): (&[f32], &[f32], &[f32]),
    (out, statistics): (&[f32], Option<Statistics<'_>>),
    (cols, eps, centered): (usize, f32, bool),
) -> std::result::Result<String, String> {
    let mut worst = 0.0f64;
    for (r, row) in input.chunks(cols).enumerate() {
        let reference = reference_row(row, weight, bias, eps, centered);
        for (c, (&want, &tolerance)) in reference.outputs.iter().zip(&reference.tolerances).enumerate() {
            let got = out[r * cols + c];
            if !within(got, want, tolerance) {
                return Err(format!(
                    "row {r}, column {c}: {got}, expected {want} (within {tolerance:.3e})"
                ));
            }
            if want.is_finite() && tolerance > 0.0 {
                worst = worst.max((got as f64 - want).abs() / tolerance);
            }
        }
        if let Some(Statistics { means, rstds }) = statistics {
            if centered && !within(means[r], reference.mean, reference.mean_tolerance) {
                return Err(format!("row {r}: mean {}, expected {}", means[r], reference.mean));
            }
            let rstd_tolerance = reference.rstd_tolerance * reference.rstd.abs();
            if !within(rstds[r], reference.rstd, rstd_tolerance) {
                return Err(format!("row {r}: rstd {}, expected {}", rstds[r], reference.rstd));
            }
        }
    }
    Ok(format!("as the f64 reference, at most {worst:.2} of the tolerance"))
}

/// The host side of a normalisation family.
pub struct NormDemo {
    family: &'static Family<RowNorm>,
    centered: bool,
}

/// Layer norm.
pub const LAYER_NORM: NormDemo = NormDemo {
    family: &LAYER_NORM_FAMILY,
    centered: true,
};

/// RMS norm.
pub const RMS_NORM: NormDemo = NormDemo {
    family: &RMS_NORM_FAMILY,
    centered: false,
};

/// Single rows and columns, warp and block edges, rows past a block's registers.
const EDGE_SHAPES: [[usize; 2]; 11] = [
    [1, 1],
    [1, 31],
    [9, 33],
    [17, 255],
    [3, 257],
    [8, 1000],
    [33, 7],
    [2, 1025],
    [2, 4097],
    [3, 8193],
    [257, 129],
];

/// The sizes every norm family (forward and gradients) runs at: [`EDGE_SHAPES`], two that fill the
/// GPU, the widths models use for the benches.
pub(crate) fn sizes() -> Sizes {
    Sizes {
        edge: EDGE_SHAPES.iter().map(|&[r, c]| Size([r, c, 1])).collect(),
        large: vec![Size([65_536, 4096, 1]), Size([2048, 32_771, 1])],
        bench: [768, 1024, 4096, 8192, 16_384]
            .iter()
            .map(|&cols| Size([(1 << 26) / cols, cols, 1]))
            .collect(),
        smoke: Size([5, 1000, 1]),
    }
}

/// The plan of a norm family's launch over rows × cols, its kernels' launch shapes checked first:
/// `arrays` f32 arrays the size of the matrix, of a row and of a column (each with its guard
/// where the device holds it), `flops` per element.
pub(crate) fn plan<P: ptxkit::Problem>(
    kernels: &[Kernel<P>],
    problem: &P,
    (rows, cols): (usize, usize),
    arrays: [u64; 3],
    flops: f64,
) -> Result<Plan> {
    for kernel in kernels {
        check_shape(kernel, problem)?;
    }
    let elements = rows as u64 * cols as u64;
    let bytes = 4 * (arrays[0] * elements + arrays[1] * cols as u64 + arrays[2] * rows as u64);
    let device = bytes + 4 * (arrays.iter().sum::<u64>()) * GUARD as u64;
    Ok(Plan {
        work: Work {
            bytes: bytes as f64,
            flops: flops * elements as f64,
            bound: Bound::Memory,
        },
        x: cols as f64,
        host_bytes: 2 * device,
        device_bytes: device,
    })
}

/// Each row's mean (0 for RMS norm) and rstd as the forward pass writes them (f32), from the f64
/// reference: the statistics the gradients' kernels are given.
pub fn forward_statistics(input: &[f32], cols: usize, centered: bool) -> (Vec<f32>, Vec<f32>) {
    input
        .chunks(cols)
        .map(|row| {
            let reference = reference_row(row, &[], &[], EPS, centered);
            (reference.mean as f32, reference.rstd as f32)
        })
        .unzip()
}

/// Rows with an offset of their own (up to ±8) and a spread of their own (0.01 to 10), a weight in
/// [−2, 2) and a bias in [−1, 1).
pub fn inputs(rng: u64, rows: usize, cols: usize) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut random = StdRng::seed_from_u64(rng);
    let mut input = Vec::with_capacity(rows * cols);
    for _ in 0..rows {
        let offset: f32 = random.random_range(-8.0..8.0);
        let spread: f32 = 10f32.powf(random.random_range(-2.0..1.0));
        input.extend((0..cols).map(|_| offset + spread * random.random_range(-1.0f32..1.0)));
    }
    let weight = (0..cols).map(|_| random.random_range(-2.0..2.0)).collect();
    let bias = (0..cols).map(|_| random.random_range(-1.0..1.0)).collect();
    (input, weight, bias)
}

impl FamilyDemo for NormDemo {
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
        // Input and output; weight and bias; mean and rstd.
        plan(
            self.family.kernels,
            &RowNorm::new(rows, cols)?,
            (rows, cols),
            [2, 2, 2],
            8.0,
        )
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let [rows, cols, _] = size.0;
        let problem = RowNorm::new(rows, cols)?;
        let (mut input, weight, bias) = inputs(substream(rng, 31), rows, cols);
        input.resize(problem.len() + GUARD, f32::NAN);
        let inputs = (0..sets.max(1))
            .map(|_| Buffer::upload(backend, &input))
            .collect::<Result<Vec<_>>>()?;
        let sets = sets.max(1);
        Ok(Box::new(NormCase {
            backend,
            family: self.family,
            centered: self.centered,
            problem,
            weights: (Buffer::upload(backend, &weight)?, Buffer::upload(backend, &bias)?),
            input,
            weight,
            bias,
            inputs,
            outputs: Outputs::new(backend, problem.len(), GUARD, f32::NAN, sets)?,
            means: Outputs::new(backend, rows, GUARD, f32::NAN, sets)?,
            rstds: Outputs::new(backend, rows, GUARD, f32::NAN, sets)?,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: if self.centered {
                "layer norm of each row of a rows × cols f32 matrix (weight, bias, eps 1e-5; mean and rstd out): three reads, the row in registers (a warp or a block per row)"
            } else {
                "RMS norm of each row of a rows × cols f32 matrix (weight, eps 1e-5; rstd out): three reads, the row in registers (a warp or a block per row)"
            },
            default: Size([65_536, 4096, 1]),
            emulator_cap: Size([256, 16_384, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        sizes()
    }

    fn choice(&self) -> &dyn KernelChoice {
        self
    }
}

impl KernelChoice for NormDemo {
    /// The row in registers up to a block's columns (read once), else the three passes, which the
    /// registers rung takes itself there. Not yet measured on the GPU.
    fn fastest_rung(&self, _target: Target, size: Size) -> Option<Rung> {
        let held = size.0[1] <= BLOCK_COLS as usize;
        let entry = match (self.centered, held) {
            (true, true) => "layer_norm_registers",
            (true, false) => "layer_norm_three_pass",
            (false, true) => "rms_norm_registers",
            (false, false) => "rms_norm_three_pass",
        };
        let why = if held {
            "the row in registers: each element read once"
        } else {
            "three reads of a row too long for a block's registers"
        };
        Some(Rung { entry, why })
    }
}

struct NormCase<'a> {
    backend: &'a Backend,
    family: &'static Family<RowNorm>,
    centered: bool,
    problem: RowNorm,
    /// The weight and bias on the backend.
    weights: (Buffer<f32>, Buffer<f32>),
    /// The input (guard included), weight and bias on the host, for the reference.
    input: Vec<f32>,
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: Vec<Buffer<f32>>,
    outputs: Outputs<f32>,
    means: Outputs<f32>,
    rstds: Outputs<f32>,
}

impl Case for NormCase<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        // RMS norm without a bias, as PyTorch's `rms_norm`.
        let bias = self.centered.then_some(&self.weights.1);
        let arrays = Arrays {
            input: &self.inputs[set],
            weight: Some(&self.weights.0),
            bias,
            output: self.outputs.get_mut(set),
            mean: Some(self.means.get_mut(set)),
            rstd: Some(self.rstds.get_mut(set)),
        };
        launch(
            self.backend,
            &self.family.kernels[kernel],
            source,
            &self.problem,
            EPS,
            arrays,
        )
    }

    fn poison(&mut self) -> Result<()> {
        self.outputs.poison(self.backend)?;
        self.means.poison(self.backend)?;
        self.rstds.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let (len, rows) = (self.problem.len(), self.problem.rows as usize);
        let out = self.outputs.read(self.backend, set)?;
        let (means, rstds) = (self.means.read(self.backend, set)?, self.rstds.read(self.backend, set)?);
        let bias: &[f32] = if self.centered { &self.bias } else { &[] };
        let summary = check_rows(
            (&self.input[..len], &self.weight, bias),
            (
                &out[..len],
                Some(Statistics {
                    means: &means[..rows],
                    rstds: &rstds[..rows],
                }),
            ),
            (self.problem.cols as usize, EPS, self.centered),
        )?;
        check_guard(&out, len)?;
        check_guard(&rstds, rows)?;
        // RMS norm has no mean to write: its poison stays.
        check_guard(&means, if self.centered { rows } else { 0 })?;
        Ok(summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_normalises_and_the_check_rejects_a_kernel_that_forgot_the_mean() {
        let row = [1.0f32, 2.0, 3.0, 6.0];
        let layer = reference_row(&row, &[], &[], 0.0, true);
        assert_eq!(layer.mean, 3.0);
        // Variance (4 + 1 + 0 + 9) / 4 = 3.5.
        assert!((layer.rstd - 1.0 / 3.5f64.sqrt()).abs() < 1e-15);
        assert!((layer.outputs[3] - 3.0 / 3.5f64.sqrt()).abs() < 1e-15);
        let rms = reference_row(&row, &[], &[], 0.0, false);
        assert!((rms.rstd - 1.0 / 12.5f64.sqrt()).abs() < 1e-15);
        let good: Vec<f32> = layer.outputs.iter().map(|&y| y as f32).collect();
        check_rows((&row, &[], &[]), (&good, None), (4, 0.0, true)).unwrap();
        let forgot: Vec<f32> = rms.outputs.iter().map(|&y| y as f32).collect();
        assert!(check_rows((&row, &[], &[]), (&forgot, None), (4, 0.0, true)).is_err());
        let mut off = good.clone();
        off[1] *= 1.0001;
        assert!(check_rows((&row, &[], &[]), (&off, None), (4, 0.0, true)).is_err());
    }

    #[test]
    fn the_reference_overflows_where_f32_does() {
        // 3e38² is past f32: the variance is infinite, rstd 0, each output 0 · w + b; the huge
        // element's own deviation stays finite.
        let row = [3.0e38f32, 1.0, -1.0];
        let reference = reference_row(&row, &[2.0, 2.0, 2.0], &[0.5, 0.5, 0.5], 1e-5, true);
        assert_eq!(reference.rstd, 0.0);
        assert_eq!(reference.outputs, vec![0.5, 0.5, 0.5]);
        // An infinity makes the mean infinite and every deviation ∞ − ∞ or ∞: NaN throughout.
        let reference = reference_row(&[f32::INFINITY, 1.0], &[], &[], 1e-5, true);
        assert!(reference.outputs.iter().all(|y| y.is_nan()));
        // RMS norm: an infinite mean square makes the whole row NaN, as PyTorch's; so do squares
        // past f32's range.
        let reference = reference_row(&[f32::INFINITY, 1.0], &[], &[], 1e-5, false);
        assert!(reference.rstd.is_nan() && reference.outputs.iter().all(|y| y.is_nan()));
        let reference = reference_row(&row, &[], &[], 1e-5, false);
        assert!(reference.rstd.is_nan() && reference.outputs.iter().all(|y| y.is_nan()));
    }
}
