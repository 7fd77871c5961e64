//! The gradients of layer norm and RMS norm (the input's; the weight's and bias's), host side: the safe launch, inputs with the
//! forward pass's statistics as f32 holds them, and the f64 check with a tolerance that follows the
//! arithmetic.

use super::norm::{SMALLEST_SUBNORMAL, forward_statistics, inputs, plan, sizes, within};
use super::{Case, Cli, FamilyDemo, GUARD, Outputs, Plan, Size, Sizes, check_guard, check_len, substream};
use kernels::Source;
use kernels::norm::{
    LAYER_NORM_BACKWARD_FAMILY, LAYER_NORM_WEIGHT_GRAD_FAMILY, NormWeightGrad, RMS_NORM_BACKWARD_FAMILY,
    RMS_NORM_WEIGHT_GRAD_FAMILY, RowNormBackward, weight_grad,
};
use ptxkit::device::{GlobalSlice, GlobalSliceMut};
use ptxkit::{AnyFamily, Family, Kernel};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::array::{Array, Buffer, Tracked};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The arrays of one launch: the forward pass's input, the output's gradient, the weight (`cols`,
/// or absent), the forward pass's `mean` (layer norm; `None` for RMS norm) and `rstd`, and the
/// input's gradient, written.
pub struct BackwardArrays<'a, A> {
    pub input: &'a A,
    pub grad_output: &'a A,
    pub weight: Option<&'a A>,
    pub mean: Option<&'a A>,
    pub rstd: &'a A,
    pub grad_input: &'a mut A,
}

/// The views of a backward launch's arrays for `rows × cols` (input, dy, weight or empty, mean or
/// empty, rstd, dx), each array's length checked where `backend` can reach it; and the arrays the
/// launch uses.
pub(crate) type BackwardViews = (
    GlobalSlice<f32>,
    GlobalSlice<f32>,
    GlobalSlice<f32>,
    GlobalSlice<f32>,
    GlobalSlice<f32>,
    GlobalSliceMut<f32>,
);

pub(crate) fn backward_views<'a, A: Array<f32>>(
    backend: &Backend,
    (rows, cols): (usize, usize),
    arrays: &'a mut BackwardArrays<'_, A>,
) -> Result<(BackwardViews, Vec<&'a dyn Tracked>)> {
    let len = rows * cols;
    check_len("input", arrays.input.len(), len)?;
    check_len("grad_output", arrays.grad_output.len(), len)?;
    check_len("grad_input", arrays.grad_input.len(), len)?;
    check_len("rstd", arrays.rstd.len(), rows)?;
    let input = arrays.input;
    let optional = |what: &str, array: Option<&A>, len: usize| -> Result<_> {
        Ok(match array {
            Some(array) => {
                check_len(what, array.len(), len)?;
                array.view(backend)?.head(len)
            }
            None => input.view(backend)?.head(0usize),
        })
    };
    let views = (
        input.view(backend)?.head(len),
        arrays.grad_output.view(backend)?.head(len),
        optional("weight", arrays.weight, cols)?,
        optional("mean", arrays.mean, rows)?,
        arrays.rstd.view(backend)?.head(rows),
        arrays.grad_input.view_mut(backend)?.head(len),
    );
    let arrays = &*arrays;
    let mut used: Vec<&dyn Tracked> = vec![arrays.input, arrays.grad_output, arrays.rstd, &*arrays.grad_input];
    used.extend(arrays.weight.map(|w| w as &dyn Tracked));
    used.extend(arrays.mean.map(|m| m as &dyn Tracked));
    Ok((views, used))
}

/// The input gradient by `kernel` (any layer-norm or RMS-norm backward kernel) on `arrays`. Checks
/// every array's length where `backend` can reach it.
pub fn launch_backward<A: Array<f32>>(
    backend: &Backend,
    kernel: &Kernel<RowNormBackward>,
    source: Source,
    problem: &RowNormBackward,
    mut arrays: BackwardArrays<'_, A>,
) -> Result<()> {
    let dims = (problem.rows as usize, problem.cols as usize);
    let ((input, grad_output, weight, mean, rstd, grad_input), used) = backward_views(backend, dims, &mut arrays)?;
    let args = (
        input,
        grad_output,
        weight,
        mean,
        rstd,
        grad_input,
        problem.rows,
        problem.cols,
    );
    // SAFETY: each view is its array's on this backend, borrowed for the launch: the rows × cols
    // elements read and written, the weight's cols (or none), the statistics' rows (the mean's
    // none for RMS norm, whose kernels do not read it).
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &used) }
}

/// One row's input gradient in f64 from the statistics the kernel is given (`mean` 0 for RMS
/// norm), and each element's tolerance (u = 2^-24, d the chain of additions as for
/// [`reference_row`]): x̂ and g within 2u and u of themselves; mean(g) within d·u·mean|g|;
/// mean(g·x̂) within (d + 3)·u·mean|g·x̂|; dx within rstd·(2u·|g| + mean(g)'s error + |x̂|·mean(g·x̂)'s
/// error + 3u·|x̂·mean(g·x̂)|) + 2u·|dx|, doubled.
pub fn reference_backward_row(
    (x, dy, weight): (&[f32], &[f32], &[f32]),
    (mean, rstd): (f32, f32),
    centered: bool,
) -> (Vec<f64>, Vec<f64>) {
    let u = (2.0f64).powi(-24);
    let n = x.len() as f64;
    let depth = x.len().div_ceil(32) as f64 + 10.0;
    let (mean, rstd) = (mean as f64, rstd as f64);
    let terms: Vec<(f64, f64)> = (0..x.len())
        .map(|c| {
            let g = dy[c] as f64 * weight.get(c).map_or(1.0, |&w| w as f64);
            ((x[c] as f64 - mean) * rstd, g)
        })
        .collect();
    let mean_g = if centered {
        terms.iter().map(|t| t.1).sum::<f64>() / n
    } else {
        0.0
    };
    let mean_gx = terms.iter().map(|t| t.1 * t.0).sum::<f64>() / n;
    let error_g = depth * u * terms.iter().map(|t| t.1.abs()).sum::<f64>() / n;
    let error_gx = (depth + 3.0) * u * terms.iter().map(|t| (t.1 * t.0).abs()).sum::<f64>() / n;
    terms
        .iter()
        .map(|&(xh, g)| {
            let dx = rstd * (g - mean_g - xh * mean_gx);
            let error = rstd * (2.0 * u * g.abs() + error_g + xh.abs() * error_gx + 3.0 * u * (xh * mean_gx).abs())
                + 2.0 * u * dx.abs()
                + 2.0 * SMALLEST_SUBNORMAL;
            (dx, 2.0 * error)
        })
        .unzip()
}

/// The host side of a normalisation's input gradient.
pub struct NormBackwardDemo {
    family: &'static Family<RowNormBackward>,
    centered: bool,
}

/// Layer norm's input gradient.
pub const LAYER_NORM_BACKWARD: NormBackwardDemo = NormBackwardDemo {
    family: &LAYER_NORM_BACKWARD_FAMILY,
    centered: true,
};

/// RMS norm's input gradient.
pub const RMS_NORM_BACKWARD: NormBackwardDemo = NormBackwardDemo {
    family: &RMS_NORM_BACKWARD_FAMILY,
    centered: false,
};

impl FamilyDemo for NormBackwardDemo {
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
        // x, dy and dx; the weight; mean and rstd.
        plan(
            self.family.kernels,
            &RowNormBackward::new(rows, cols)?,
            (rows, cols),
            [3, 1, 2],
            10.0,
        )
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let [rows, cols, _] = size.0;
        let problem = RowNormBackward::new(rows, cols)?;
        let (input, weight, _) = inputs(substream(rng, 37), rows, cols);
        let mut random = StdRng::seed_from_u64(substream(rng, 41));
        let grad_output: Vec<f32> = (0..problem.len()).map(|_| random.random_range(-1.0..1.0)).collect();
        // The forward pass's statistics as f32 holds them.
        let (means, rstds) = forward_statistics(&input, cols, self.centered);
        let upload = |values: &[f32]| Buffer::upload(backend, values);
        let sets = sets.max(1);
        Ok(Box::new(NormBackwardCase {
            backend,
            family: self.family,
            centered: self.centered,
            problem,
            buffers: [
                upload(&input)?,
                upload(&grad_output)?,
                upload(&weight)?,
                upload(&means)?,
                upload(&rstds)?,
            ],
            input,
            grad_output,
            weight,
            statistics: (means, rstds),
            outputs: Outputs::new(backend, problem.len(), GUARD, f32::NAN, sets)?,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: if self.centered {
                "layer norm's input gradient for each row of a rows × cols f32 matrix, from the forward pass's mean and rstd (weight given): a block per row, two reads"
            } else {
                "RMS norm's input gradient for each row of a rows × cols f32 matrix, from the forward pass's rstd (weight given): a block per row, two reads"
            },
            default: Size([65_536, 4096, 1]),
            emulator_cap: Size([256, 16_384, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        sizes()
    }
}

struct NormBackwardCase<'a> {
    backend: &'a Backend,
    family: &'static Family<RowNormBackward>,
    centered: bool,
    problem: RowNormBackward,
    /// x, dy, the weight, the means and the rstds on the backend.
    buffers: [Buffer<f32>; 5],
    /// The same on the host, for the reference.
    input: Vec<f32>,
    grad_output: Vec<f32>,
    weight: Vec<f32>,
    statistics: (Vec<f32>, Vec<f32>),
    outputs: Outputs<f32>,
}

impl Case for NormBackwardCase<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        let [input, grad_output, weight, mean, rstd] = &self.buffers;
        let arrays = BackwardArrays {
            input,
            grad_output,
            weight: Some(weight),
            mean: self.centered.then_some(mean),
            rstd,
            grad_input: self.outputs.get_mut(set),
        };
        launch_backward(
            self.backend,
            &self.family.kernels[kernel],
            source,
            &self.problem,
            arrays,
        )
    }

    fn poison(&mut self) -> Result<()> {
        self.outputs.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let (len, cols) = (self.problem.len(), self.problem.cols as usize);
        let out = self.outputs.read(self.backend, set)?;
        let statistics = (&self.statistics.0[..], &self.statistics.1[..]);
        let worst = check_grad_input(
            (&self.input, &self.grad_output, &self.weight),
            statistics,
            self.centered,
            (&out, cols),
        )?;
        check_guard(&out, len)?;
        Ok(format!("as the f64 reference, at most {worst:.2} of the tolerance"))
    }
}

/// Checks `out` (rows × cols) against [`reference_backward_row`] of every row: the worst error as a
/// share of its tolerance, or the first element outside it.
pub(crate) fn check_grad_input(
    (input, grad_output, weight): (&[f32], &[f32], &[f32]),
    (means, rstds): (&[f32], &[f32]),
    centered: bool,
    (out, cols): (&[f32], usize),
) -> std::result::Result<f64, String> {
    let mut worst = 0.0f64;
    for (r, (x, dy)) in input.chunks(cols).zip(grad_output.chunks(cols)).enumerate() {
        let (dx, tolerances) = reference_backward_row((x, dy, weight), (means[r], rstds[r]), centered);
        for (c, (&want, &tolerance)) in dx.iter().zip(&tolerances).enumerate() {
            let got = out[r * cols + c];
            if !within(got, want, tolerance) {
                return Err(format!(
                    "dx row {r}, column {c}: {got}, expected {want} (within {tolerance:.3e})"
                ));
            }
            worst = worst.max((got as f64 - want).abs() / tolerance);
        }
    }
    Ok(worst)
}

/// A gradient to check: its name, the values read back (with their guard), and the reference's
/// (values, tolerances).
pub(crate) type GradientCheck<'a> = (&'a str, &'a [f32], &'a (Vec<f64>, Vec<f64>));

/// Checks each named gradient (`got`, cols elements and its guard) against its `(values,
/// tolerances)` from [`reference_weight_grad`]: the worst error as a share of its tolerance, or the
/// first element outside it.
pub(crate) fn check_weight_grads(checks: &[GradientCheck<'_>], cols: usize) -> std::result::Result<f64, String> {
    let mut worst = 0.0f64;
    for &(name, got, (want, tolerances)) in checks {
        for c in 0..cols {
            if !within(got[c], want[c], tolerances[c]) {
                return Err(format!(
                    "{name}[{c}]: {}, expected {} (within {:.3e})",
                    got[c], want[c], tolerances[c]
                ));
            }
            worst = worst.max((got[c] as f64 - want[c]).abs() / tolerances[c]);
        }
        check_guard(got, cols)?;
    }
    Ok(worst)
}

/// The arrays of one launch of a weight-gradient kernel: the forward pass's input, the output's
/// gradient, the forward pass's `mean` (layer norm; `None` for RMS norm) and `rstd`; the weight's
/// gradient and, where wanted, the bias's (written).
pub struct WeightGradArrays<'a, A> {
    pub input: &'a A,
    pub grad_output: &'a A,
    pub mean: Option<&'a A>,
    pub rstd: &'a A,
    pub dweight: &'a mut A,
    pub dbias: Option<&'a mut A>,
}

/// The weight's and bias's gradients by `kernel` (any norm weight-gradient kernel) on `arrays`.
/// Checks every array's length where `backend` can reach it.
pub fn launch_weight_grad<A: Array<f32>>(
    backend: &Backend,
    kernel: &Kernel<NormWeightGrad>,
    source: Source,
    problem: &NormWeightGrad,
    arrays: WeightGradArrays<'_, A>,
) -> Result<()> {
    let WeightGradArrays {
        input,
        grad_output,
        mean,
        rstd,
        dweight,
        dbias,
    } = arrays;
    let (rows, cols, len) = (problem.rows as usize, problem.cols as usize, problem.len());
    check_len("input", input.len(), len)?;
    check_len("grad_output", grad_output.len(), len)?;
    check_len("rstd", rstd.len(), rows)?;
    check_len("dweight", dweight.len(), cols)?;
    let mean_view = match mean {
        Some(mean) => {
            check_len("mean", mean.len(), rows)?;
            mean.view(backend)?.head(rows)
        }
        None => input.view(backend)?.head(0usize),
    };
    let (dbias_view, dbias): (_, Option<&A>) = match dbias {
        Some(dbias) => {
            check_len("dbias", dbias.len(), cols)?;
            (dbias.view_mut(backend)?.head(cols), Some(dbias))
        }
        None => (dweight.view_mut(backend)?.head(0usize), None),
    };
    let args = (
        input.view(backend)?.head(len),
        grad_output.view(backend)?.head(len),
        mean_view,
        rstd.view(backend)?.head(rows),
        dweight.view_mut(backend)?.head(cols),
        dbias_view,
        problem.rows,
        problem.cols,
    );
    let mut used: Vec<&dyn Tracked> = vec![input, grad_output, rstd, &*dweight];
    used.extend(mean.map(|m| m as &dyn Tracked));
    used.extend(dbias.map(|b| b as &dyn Tracked));
    // SAFETY: each view is its array's on this backend, borrowed for the launch: the rows × cols
    // elements read, the statistics' rows (the mean's none for RMS norm, whose kernels do not read
    // it), the gradients' cols written (the bias's none where not wanted).
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &used) }
}

/// The weight's and bias's gradients in f64 from the statistics the kernel is given, and their
/// tolerances: each term dy·x̂ within 3u of itself (x − mean, the product with rstd, with dy), the
/// sums' chains (a warp's share, rows / W, plus the W warps of [`weight_grad::WARPS`]) within that
/// many u of the sums of magnitudes; doubled.
pub fn reference_weight_grad(
    (x, dy): (&[f32], &[f32]),
    (means, rstds): (&[f32], &[f32]),
    cols: usize,
) -> [(Vec<f64>, Vec<f64>); 2] {
    let rows = x.len() / cols;
    let warps = weight_grad::WARPS as usize;
    reference_weight_grad_by((x, dy), (means, rstds), cols, (rows.div_ceil(warps) + warps) as f64)
}

/// [`reference_weight_grad`] for sums added in chains of at most `depth` additions.
pub fn reference_weight_grad_by(
    (x, dy): (&[f32], &[f32]),
    (means, rstds): (&[f32], &[f32]),
    cols: usize,
    depth: f64,
) -> [(Vec<f64>, Vec<f64>); 2] {
    let u = (2.0f64).powi(-24);
    let rows = x.len() / cols;
    let (mut dweight, mut dbias) = (vec![0.0f64; cols], vec![0.0f64; cols]);
    let (mut abs_w, mut abs_b) = (vec![0.0f64; cols], vec![0.0f64; cols]);
    for r in 0..rows {
        let (mean, rstd) = (means.get(r).map_or(0.0, |&m| m as f64), rstds[r] as f64);
        for c in 0..cols {
            let (xv, g) = (x[r * cols + c] as f64, dy[r * cols + c] as f64);
            let term = g * (xv - mean) * rstd;
            dweight[c] += term;
            abs_w[c] += term.abs();
            dbias[c] += g;
            abs_b[c] += g.abs();
        }
    }
    let tolerances = |abs: &[f64], extra: f64| -> Vec<f64> {
        abs.iter()
            .map(|a| 2.0 * ((depth + extra) * u * a + 2.0 * SMALLEST_SUBNORMAL))
            .collect()
    };
    let (tw, tb) = (tolerances(&abs_w, 3.0), tolerances(&abs_b, 0.0));
    [(dweight, tw), (dbias, tb)]
}

/// The host side of a normalisation's weight and bias gradients.
pub struct NormWeightGradDemo {
    family: &'static Family<NormWeightGrad>,
    centered: bool,
}

/// Layer norm's weight and bias gradients.
pub const LAYER_NORM_WEIGHT_GRAD: NormWeightGradDemo = NormWeightGradDemo {
    family: &LAYER_NORM_WEIGHT_GRAD_FAMILY,
    centered: true,
};

/// RMS norm's weight gradient (and a bias's, for an RMS norm given one).
pub const RMS_NORM_WEIGHT_GRAD: NormWeightGradDemo = NormWeightGradDemo {
    family: &RMS_NORM_WEIGHT_GRAD_FAMILY,
    centered: false,
};

impl FamilyDemo for NormWeightGradDemo {
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
        // x and dy; dweight and dbias; mean and rstd.
        plan(
            self.family.kernels,
            &NormWeightGrad::new(rows, cols)?,
            (rows, cols),
            [2, 2, 2],
            5.0,
        )
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let [rows, cols, _] = size.0;
        let problem = NormWeightGrad::new(rows, cols)?;
        let (input, _, _) = inputs(substream(rng, 43), rows, cols);
        let mut random = StdRng::seed_from_u64(substream(rng, 47));
        let grad_output: Vec<f32> = (0..problem.len()).map(|_| random.random_range(-1.0..1.0)).collect();
        let (means, rstds) = forward_statistics(&input, cols, self.centered);
        let upload = |values: &[f32]| Buffer::upload(backend, values);
        let sets = sets.max(1);
        Ok(Box::new(NormWeightGradCase {
            backend,
            family: self.family,
            centered: self.centered,
            problem,
            buffers: [upload(&input)?, upload(&grad_output)?, upload(&means)?, upload(&rstds)?],
            input,
            grad_output,
            statistics: (means, rstds),
            dweights: Outputs::new(backend, cols, GUARD, f32::NAN, sets)?,
            dbiases: Outputs::new(backend, cols, GUARD, f32::NAN, sets)?,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: if self.centered {
                "layer norm's weight and bias gradients over a rows × cols f32 matrix (sums down the columns of dy·x̂ and dy), from the forward pass's mean and rstd: a block per strip of 32 columns"
            } else {
                "RMS norm's weight and bias gradients over a rows × cols f32 matrix (sums down the columns of dy·x̂ and dy), from the forward pass's rstd: a block per strip of 32 columns"
            },
            default: Size([65_536, 4096, 1]),
            emulator_cap: Size([4096, 4096, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        sizes()
    }
}

struct NormWeightGradCase<'a> {
    backend: &'a Backend,
    family: &'static Family<NormWeightGrad>,
    centered: bool,
    problem: NormWeightGrad,
    /// x, dy, the means and the rstds on the backend.
    buffers: [Buffer<f32>; 4],
    /// The same on the host, for the reference.
    input: Vec<f32>,
    grad_output: Vec<f32>,
    statistics: (Vec<f32>, Vec<f32>),
    dweights: Outputs<f32>,
    dbiases: Outputs<f32>,
}

impl Case for NormWeightGradCase<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        let [input, grad_output, mean, rstd] = &self.buffers;
        let arrays = WeightGradArrays {
            input,
            grad_output,
            mean: self.centered.then_some(mean),
            rstd,
            dweight: self.dweights.get_mut(set),
            dbias: Some(self.dbiases.get_mut(set)),
        };
        launch_weight_grad(
            self.backend,
            &self.family.kernels[kernel],
            source,
            &self.problem,
            arrays,
        )
    }

    fn poison(&mut self) -> Result<()> {
        self.dweights.poison(self.backend)?;
        self.dbiases.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let cols = self.problem.cols as usize;
        let means: &[f32] = if self.centered { &self.statistics.0 } else { &[] };
        let [weight, bias] = reference_weight_grad((&self.input, &self.grad_output), (means, &self.statistics.1), cols);
        let (dweight, dbias) = (
            self.dweights.read(self.backend, set)?,
            self.dbiases.read(self.backend, set)?,
        );
        let worst = check_weight_grads(&[("dweight", &dweight, &weight), ("dbias", &dbias, &bias)], cols)?;
        Ok(format!("as the f64 reference, at most {worst:.2} of the tolerance"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::norm::{EPS, reference_row};

    /// The gradient formula against central differences of the forward reference, for both norms,
    /// with a weight.
    #[test]
    fn the_reference_gradient_is_the_forward_pass_differentiated() {
        let x = [0.5f32, -1.25, 2.0, 0.75, -0.5];
        let dy = [0.3f32, -0.7, 0.2, 0.9, -0.4];
        let weight = [1.5f32, -0.5, 0.25, 2.0, 1.0];
        for centered in [true, false] {
            let forward = reference_row(&x, &[], &[], EPS, centered);
            let (dx, _) =
                reference_backward_row((&x, &dy, &weight), (forward.mean as f32, forward.rstd as f32), centered);
            // L(x) = Σ dy·y, in f64 throughout.
            let loss = |x: &[f64]| {
                let n = x.len() as f64;
                let mean = if centered { x.iter().sum::<f64>() / n } else { 0.0 };
                let variance = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
                let rstd = 1.0 / (variance + EPS as f64).sqrt();
                x.iter()
                    .enumerate()
                    .map(|(c, v)| dy[c] as f64 * (v - mean) * rstd * weight[c] as f64)
                    .sum::<f64>()
            };
            let h = 1e-6;
            for i in 0..x.len() {
                let mut plus: Vec<f64> = x.iter().map(|&v| v as f64).collect();
                let mut minus = plus.clone();
                plus[i] += h;
                minus[i] -= h;
                let numeric = (loss(&plus) - loss(&minus)) / (2.0 * h);
                // The statistics went through f32: about 1e-7 relative.
                assert!(
                    (numeric - dx[i]).abs() < 1e-5,
                    "centered {centered}, x[{i}]: {numeric} against {}",
                    dx[i]
                );
            }
        }
    }
}
