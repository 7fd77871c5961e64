//! The norms with a fused residual add, host side, in f32 and bf16: the safe launch (bf16 arrays
//! are their `u16` bits), the sum `x + residual` checked bit for bit against the same rounding on
//! the host, and the outputs against the f64 norm of that sum, with bf16's rounding of each output
//! added to the f32 tolerance.

use super::element::HostElement;
use super::norm::{EPS, Statistics, inputs, plan, reference_row, sizes as norm_sizes, within};
use super::{Case, Cli, FamilyDemo, GUARD, Outputs, Plan, Size, Sizes, check_guard, check_len, substream};
use kernels::Source;
use kernels::norm::residual::{LAYER_BF16_FAMILY, LAYER_FAMILY, RMS_BF16_FAMILY, RMS_FAMILY, ResidualNorm};
use ptxkit::device::mma::Bf16;
use ptxkit::device::{GlobalSlice, GlobalSliceMut};
use ptxkit::{AnyFamily, Family, Kernel};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::array::{Array, Buffer, Tracked};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The arrays of one launch (bits of the element type): the input; where given the residual and
/// the sum it makes (written); the weight and bias (`cols` each, either may be absent); the output;
/// each row's mean (layer norm) and rstd (f32) where wanted.
pub struct Arrays<'a, A, F> {
    pub input: &'a A,
    pub residual: Option<(&'a A, &'a mut A)>,
    pub weight: Option<&'a A>,
    pub bias: Option<&'a A>,
    pub output: &'a mut A,
    pub mean: Option<&'a mut F>,
    pub rstd: Option<&'a mut F>,
}

/// The norm of each row of `input` (+ `residual`) by `kernel` with `eps`. Checks every array's
/// length where `backend` can reach it.
pub fn launch<E: HostElement, A: Array<E::Bits>, F: Array<f32>>(
    backend: &Backend,
    kernel: &Kernel<ResidualNorm<E>>,
    source: Source,
    problem: &ResidualNorm<E>,
    eps: f32,
    arrays: Arrays<'_, A, F>,
) -> Result<()> {
    let Arrays {
        input,
        residual,
        weight,
        bias,
        output,
        mut mean,
        mut rstd,
    } = arrays;
    let (rows, cols, len) = (problem.rows as usize, problem.cols as usize, problem.len());
    check_len("input", input.len(), len)?;
    check_len("output", output.len(), len)?;
    let empty = E::elements(input.view(backend)?.head(0usize));
    let optional = |what: &str, array: Option<&A>, len: usize| -> Result<GlobalSlice<E>> {
        Ok(match array {
            Some(array) => {
                check_len(what, array.len(), len)?;
                E::elements(array.view(backend)?.head(len))
            }
            None => empty,
        })
    };
    let (weight_view, bias_view) = (optional("weight", weight, cols)?, optional("bias", bias, cols)?);
    let empty_mut = E::elements_mut(output.view_mut(backend)?.head(0usize));
    let (residual_view, sum_view, residual) = match residual {
        Some((residual, sum)) => {
            check_len("residual", residual.len(), len)?;
            check_len("sum", sum.len(), len)?;
            let views = (
                E::elements(residual.view(backend)?.head(len)),
                E::elements_mut(sum.view_mut(backend)?.head(len)),
            );
            (views.0, views.1, Some((residual, sum)))
        }
        None => (empty, empty_mut, None),
    };
    // SAFETY: no elements: nothing is read or written through it.
    let empty_f32 = unsafe { GlobalSliceMut::from_raw_parts(std::ptr::NonNull::<f32>::dangling().as_ptr(), 0) };
    let statistic = |what: &str, array: &mut Option<&mut F>| -> Result<GlobalSliceMut<f32>> {
        Ok(match array {
            Some(array) => {
                check_len(what, array.len(), rows)?;
                array.view_mut(backend)?.head(rows)
            }
            None => empty_f32,
        })
    };
    let (mean_view, rstd_view) = (statistic("mean", &mut mean)?, statistic("rstd", &mut rstd)?);
    let args = (
        E::elements(input.view(backend)?.head(len)),
        residual_view,
        sum_view,
        weight_view,
        bias_view,
        E::elements_mut(output.view_mut(backend)?.head(len)),
        mean_view,
        rstd_view,
        problem.rows,
        problem.cols,
        eps,
    );
    let mut used: Vec<&dyn Tracked> = vec![input, &*output];
    if let Some((residual, sum)) = &residual {
        used.push(*residual);
        used.push(&**sum);
    }
    used.extend(weight.map(|w| w as &dyn Tracked));
    used.extend(bias.map(|b| b as &dyn Tracked));
    used.extend(mean.as_deref().map(|m| m as &dyn Tracked));
    used.extend(rstd.as_deref().map(|r| r as &dyn Tracked));
    // SAFETY: each view is its array's on this backend, borrowed for the launch: the rows × cols
    // elements of the input, residual, sum and output, the weight's and bias's cols, the statistics'
    // rows; empty views where an array is absent, which the kernels do not touch.
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &used) }
}

/// Each row's sum `x + residual` as the kernels round it (in f32, then to the element type).
pub fn reference_sum<E: HostElement>(x: &[E::Bits], residual: &[E::Bits]) -> Vec<E::Bits> {
    x.iter()
        .zip(residual)
        .map(|(&x, &r)| E::bits(E::value(x) + E::value(r)))
        .collect()
}

/// Checks `out` (and the statistics) against the f64 norm of each row of `h` (values), the
/// rounding of each output to the element type (relative, and half its smallest subnormal) added
/// to [`reference_row`]'s tolerance, doubled.
pub fn check_outputs<E: HostElement>(
    (h, weight, bias): (&[f32], &[f32], &[f32]),
    (out, statistics): (&[E::Bits], Statistics<'_>),
    (cols, eps, centered): (usize, f32, bool),
) -> std::result::Result<String, String> {
    let mut worst = 0.0f64;
    for (r, row) in h.chunks(cols).enumerate() {
        let reference = reference_row(row, weight, bias, eps, centered);
        for (c, (&want, &tolerance)) in reference.outputs.iter().zip(&reference.tolerances).enumerate() {
            let tolerance = tolerance + 2.0 * (E::ROUNDING * want.abs() + E::SMALLEST / 2.0);
            let got = E::value(out[r * cols + c]);
            if !within(got, want, tolerance) {
                return Err(format!(
                    "row {r}, column {c}: {got}, expected {want} (within {tolerance:.3e})"
                ));
            }
            if want.is_finite() && tolerance > 0.0 {
                worst = worst.max((got as f64 - want).abs() / tolerance);
            }
        }
        if centered && !within(statistics.means[r], reference.mean, reference.mean_tolerance) {
            return Err(format!(
                "row {r}: mean {}, expected {}",
                statistics.means[r], reference.mean
            ));
        }
        let rstd_tolerance = reference.rstd_tolerance * reference.rstd.abs();
        if !within(statistics.rstds[r], reference.rstd, rstd_tolerance) {
            return Err(format!(
                "row {r}: rstd {}, expected {}",
                statistics.rstds[r], reference.rstd
            ));
        }
    }
    Ok(format!("as the f64 reference, at most {worst:.2} of the tolerance"))
}

/// The sums bit for bit (NaN for NaN).
pub fn check_sum<E: HostElement>(got: &[E::Bits], want: &[E::Bits]) -> std::result::Result<(), String> {
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let (g, w) = (E::value(g), E::value(w));
        if !(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan())) {
            return Err(format!("sum element {i}: {g}, expected {w}"));
        }
    }
    Ok(())
}

/// The host side of a norm with the residual add over one element type.
pub struct ResidualNormDemo<E: HostElement> {
    family: &'static Family<ResidualNorm<E>>,
    centered: bool,
}

/// Layer norm of x + residual, f32.
pub const LAYER_NORM_RESIDUAL: ResidualNormDemo<f32> = ResidualNormDemo {
    family: &LAYER_FAMILY,
    centered: true,
};
/// RMS norm of x + residual, f32.
pub const RMS_NORM_RESIDUAL: ResidualNormDemo<f32> = ResidualNormDemo {
    family: &RMS_FAMILY,
    centered: false,
};
/// Layer norm of x + residual, bf16.
pub const LAYER_NORM_RESIDUAL_BF16: ResidualNormDemo<Bf16> = ResidualNormDemo {
    family: &LAYER_BF16_FAMILY,
    centered: true,
};
/// RMS norm of x + residual, bf16.
pub const RMS_NORM_RESIDUAL_BF16: ResidualNormDemo<Bf16> = ResidualNormDemo {
    family: &RMS_BF16_FAMILY,
    centered: false,
};

/// The norms' edge shapes, with rows whose bf16 vectors fit (cols a multiple of 8) in a warp, in a
/// block, and past a block's registers.
fn sizes() -> Sizes {
    let mut sizes = norm_sizes();
    sizes
        .edge
        .extend([[5, 64], [4, 2048], [3, 16_384]].map(|[r, c]| Size([r, c, 1])));
    sizes
}

impl<E: HostElement> FamilyDemo for ResidualNormDemo<E> {
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
        let bytes = size_of::<E::Bits>() as u64;
        // x, the residual, the sum and the output (in f32 units of this element's size); weight and
        // bias; mean and rstd.
        let matrices = (4 * bytes).div_ceil(4);
        plan(
            self.family.kernels,
            &ResidualNorm::<E>::new(rows, cols)?,
            (rows, cols),
            [matrices, 2, 2],
            9.0,
        )
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let [rows, cols, _] = size.0;
        let problem = ResidualNorm::<E>::new(rows, cols)?;
        let (x, weight, bias) = inputs(substream(rng, 59), rows, cols);
        let mut random = StdRng::seed_from_u64(substream(rng, 61));
        let residual: Vec<f32> = (0..problem.len()).map(|_| random.random_range(-4.0..4.0)).collect();
        let to_bits = |values: &[f32]| values.iter().map(|&v| E::bits(v)).collect::<Vec<_>>();
        let (mut x, residual, weight, bias) = (to_bits(&x), to_bits(&residual), to_bits(&weight), to_bits(&bias));
        x.resize(problem.len() + GUARD, E::NAN);
        let sets = sets.max(1);
        let inputs = (0..sets)
            .map(|_| Buffer::upload(backend, &x))
            .collect::<Result<Vec<_>>>()?;
        Ok(Box::new(ResidualNormCase::<E> {
            backend,
            family: self.family,
            centered: self.centered,
            problem,
            others: [
                Buffer::upload(backend, &residual)?,
                Buffer::upload(backend, &weight)?,
                Buffer::upload(backend, &bias)?,
            ],
            inputs,
            x,
            residual,
            weight,
            bias,
            outputs: Outputs::new(backend, problem.len(), GUARD, E::NAN, sets)?,
            sums: Outputs::new(backend, problem.len(), GUARD, E::NAN, sets)?,
            means: Outputs::new(backend, rows, GUARD, f32::NAN, sets)?,
            rstds: Outputs::new(backend, rows, GUARD, f32::NAN, sets)?,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: match (self.centered, E::LANES) {
                (true, 4) => {
                    "layer norm of x + residual for each row of rows × cols f32 matrices (weight, bias, eps 1e-5), the sum written out too: the row in registers (a warp or a block per row), three reads beyond"
                }
                (false, 4) => {
                    "RMS norm of x + residual for each row of rows × cols f32 matrices (weight, eps 1e-5), the sum written out too: the row in registers (a warp or a block per row), three reads beyond"
                }
                (true, _) => {
                    "layer norm of x + residual for each row of rows × cols bf16 matrices (weight, bias, eps 1e-5; f32 statistics, bf16 out), the sum written out too: the row in registers, three reads beyond"
                }
                (false, _) => {
                    "RMS norm of x + residual for each row of rows × cols bf16 matrices (weight, eps 1e-5; f32 statistics, bf16 out), the sum written out too: the row in registers, three reads beyond"
                }
            },
            default: Size([65_536, 4096, 1]),
            emulator_cap: Size([256, 16_384, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        sizes()
    }
}

struct ResidualNormCase<'a, E: HostElement> {
    backend: &'a Backend,
    family: &'static Family<ResidualNorm<E>>,
    centered: bool,
    problem: ResidualNorm<E>,
    /// The residual, weight and bias on the backend.
    others: [Buffer<E::Bits>; 3],
    /// x on the backend, one copy per input set.
    inputs: Vec<Buffer<E::Bits>>,
    /// The same on the host (x with its guard), for the reference.
    x: Vec<E::Bits>,
    residual: Vec<E::Bits>,
    weight: Vec<E::Bits>,
    bias: Vec<E::Bits>,
    outputs: Outputs<E::Bits>,
    sums: Outputs<E::Bits>,
    means: Outputs<f32>,
    rstds: Outputs<f32>,
}

impl<E: HostElement> Case for ResidualNormCase<'_, E> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        let [residual, weight, bias] = &self.others;
        // RMS norm without a bias, as PyTorch's `rms_norm`.
        let arrays = Arrays {
            input: &self.inputs[set],
            residual: Some((residual, self.sums.get_mut(set))),
            weight: Some(weight),
            bias: self.centered.then_some(bias),
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
        self.sums.poison(self.backend)?;
        self.means.poison(self.backend)?;
        self.rstds.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let (len, rows, cols) = (
            self.problem.len(),
            self.problem.rows as usize,
            self.problem.cols as usize,
        );
        let out = self.outputs.read(self.backend, set)?;
        let sums = self.sums.read(self.backend, set)?;
        let (means, rstds) = (self.means.read(self.backend, set)?, self.rstds.read(self.backend, set)?);
        let want_sum = reference_sum::<E>(&self.x[..len], &self.residual);
        check_sum::<E>(&sums[..len], &want_sum)?;
        let values = |bits: &[E::Bits]| bits.iter().map(|&b| E::value(b)).collect::<Vec<f32>>();
        let bias = if self.centered { values(&self.bias) } else { Vec::new() };
        let summary = check_outputs::<E>(
            (&values(&want_sum), &values(&self.weight), &bias),
            (
                &out[..len],
                Statistics {
                    means: &means[..rows],
                    rstds: &rstds[..rows],
                },
            ),
            (cols, EPS, self.centered),
        )?;
        check_guard(&values(&out), len)?;
        check_guard(&values(&sums), len)?;
        check_guard(&rstds, rows)?;
        check_guard(&means, if self.centered { rows } else { 0 })?;
        Ok(summary)
    }
}
