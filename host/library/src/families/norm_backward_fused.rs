//! The norms' three gradients from one read of x and dy, host side: the fused kernel's launch and
//! the partial sums' launch after it ([`launch_gradients`] does both), checked against the same f64
//! references as the separate kernels, with the sums' chains of the fused path.

use super::norm::{forward_statistics, inputs, plan, sizes as norm_sizes, within};
use super::norm_backward::{
    BackwardArrays, GradientCheck, backward_views, check_grad_input, check_weight_grads, reference_weight_grad_by,
};
use super::{Case, Cli, FamilyDemo, GUARD, Outputs, Plan, Size, Sizes, check_guard, check_len, substream};
use kernels::Source;
use kernels::norm::backward_fused::{
    FUSED_COLS, LAYER_FAMILY, NormBackwardFused, PARTIALS_FAMILY, PARTIALS_KERNEL, PartialSums, RMS_FAMILY, blocks,
    rows_per_block,
};
use ptxkit::{AnyFamily, Family, Kernel};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::array::{Array, Buffer, Tracked};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The arrays of one fused launch: the input gradient's ([`BackwardArrays`]), and the partial
/// sums ([`NormBackwardFused::partials_len`] elements), written.
pub struct FusedArrays<'a, A> {
    pub gradient: BackwardArrays<'a, A>,
    pub partials: &'a mut A,
}

/// dx and the partial sums by `kernel` on `arrays`. Checks every array's length where `backend`
/// can reach it.
pub fn launch_fused<A: Array<f32>>(
    backend: &Backend,
    kernel: &Kernel<NormBackwardFused>,
    source: Source,
    problem: &NormBackwardFused,
    arrays: FusedArrays<'_, A>,
) -> Result<()> {
    let FusedArrays { mut gradient, partials } = arrays;
    check_len("partials", partials.len(), problem.partials_len())?;
    let dims = (problem.rows as usize, problem.cols as usize);
    let ((input, grad_output, weight, mean, rstd, grad_input), mut used) =
        backward_views(backend, dims, &mut gradient)?;
    let partials_view = partials.view_mut(backend)?.head(problem.partials_len());
    used.push(&*partials);
    let args = (
        input,
        grad_output,
        weight,
        mean,
        rstd,
        grad_input,
        partials_view,
        problem.rows,
        problem.cols,
    );
    // SAFETY: each view is its array's on this backend, borrowed for the launch: the rows × cols
    // elements read and written, the weight's cols (or none), the statistics' rows (the mean's none
    // for RMS norm, whose kernel does not read it), the partials' 2 · blocks · cols written.
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &used) }
}

/// dweight (and dbias where given) as the column sums of `partials` by `kernel`. Checks every
/// array's length where `backend` can reach it.
pub fn launch_partials_sum<A: Array<f32>>(
    backend: &Backend,
    kernel: &Kernel<PartialSums>,
    source: Source,
    problem: &PartialSums,
    partials: &A,
    dweight: &mut A,
    dbias: Option<&mut A>,
) -> Result<()> {
    let (cols, len) = (
        problem.cols as usize,
        2 * problem.blocks as usize * problem.cols as usize,
    );
    check_len("partials", partials.len(), len)?;
    check_len("dweight", dweight.len(), cols)?;
    let (dbias_view, dbias): (_, Option<&A>) = match dbias {
        Some(dbias) => {
            check_len("dbias", dbias.len(), cols)?;
            (dbias.view_mut(backend)?.head(cols), Some(dbias))
        }
        None => (dweight.view_mut(backend)?.head(0usize), None),
    };
    let args = (
        partials.view(backend)?.head(len),
        dweight.view_mut(backend)?.head(cols),
        dbias_view,
        problem.blocks,
        problem.cols,
    );
    let mut used: Vec<&dyn Tracked> = vec![partials, &*dweight];
    used.extend(dbias.map(|b| b as &dyn Tracked));
    // SAFETY: each view is its array's on this backend, borrowed for the launch: the partials read,
    // the gradients' cols written (the bias's none where not wanted).
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &used) }
}

/// All three gradients: `kernel` (a fused kernel) into dx and `partials`, then the partials' sums
/// into dweight and dbias (where given).
pub fn launch_gradients<A: Array<f32>>(
    backend: &Backend,
    kernel: &Kernel<NormBackwardFused>,
    source: Source,
    problem: &NormBackwardFused,
    arrays: FusedArrays<'_, A>,
    (dweight, dbias): (&mut A, Option<&mut A>),
) -> Result<()> {
    let FusedArrays { gradient, partials } = arrays;
    let fused = FusedArrays {
        gradient,
        partials: &mut *partials,
    };
    launch_fused(backend, kernel, source, problem, fused)?;
    let sums = PartialSums {
        blocks: blocks(problem.rows),
        cols: problem.cols,
    };
    launch_partials_sum(backend, &PARTIALS_KERNEL, source, &sums, &*partials, dweight, dbias)
}

/// The tolerances' chain of additions in a weight gradient by the fused path for `rows`: a block's
/// run of rows, then the blocks' partials, plus a few.
pub fn fused_depth(rows: u32) -> f64 {
    (rows_per_block(rows) + blocks(rows) + 3) as f64
}

/// The host side of a norm's fused gradients.
pub struct FusedDemo {
    family: &'static Family<NormBackwardFused>,
    centered: bool,
}

/// Layer norm's three gradients in one read.
pub const LAYER_NORM_BACKWARD_FUSED: FusedDemo = FusedDemo {
    family: &LAYER_FAMILY,
    centered: true,
};

/// RMS norm's two gradients in one read.
pub const RMS_NORM_BACKWARD_FUSED: FusedDemo = FusedDemo {
    family: &RMS_FAMILY,
    centered: false,
};

/// The norms' sizes that the fused path takes (rows up to [`FUSED_COLS`]), rows enough for runs
/// of several rows per block, and rows at the kernels' slot boundaries.
fn sizes() -> Sizes {
    let mut sizes = norm_sizes();
    sizes.edge.retain(|s| s.0[1] <= FUSED_COLS as usize);
    // Rows of whole slots (512 and 4096 columns), and rows past the slots whose x stays in
    // registers (x read again: 6657 columns, the last slot partial, and the widest row).
    sizes.edge.extend([
        Size([600, 33, 1]),
        Size([1031, 64, 1]),
        Size([7, 512, 1]),
        Size([4, 4096, 1]),
        Size([5, 6657, 1]),
        Size([3, FUSED_COLS as usize, 1]),
    ]);
    sizes.large.retain(|s| s.0[1] <= FUSED_COLS as usize);
    sizes.bench.retain(|s| s.0[1] <= FUSED_COLS as usize);
    sizes
}

impl FamilyDemo for FusedDemo {
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
        let problem = NormBackwardFused::new(rows, cols)?;
        // x, dy and dx; the weight, dweight and dbias; mean and rstd (the partials are small
        // beside them, counted as two more column-sized arrays per block in the device's memory).
        let mut plan = plan(self.family.kernels, &problem, (rows, cols), [3, 3, 2], 14.0)?;
        plan.device_bytes += 4 * problem.partials_len() as u64;
        Ok(plan)
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let [rows, cols, _] = size.0;
        let problem = NormBackwardFused::new(rows, cols)?;
        let (input, mut weight, _) = inputs(substream(rng, 67), rows, cols);
        // Without a weight at odd row counts: the kernels take a path of their own for it.
        if rows % 2 == 1 {
            weight.clear();
        }
        let mut random = StdRng::seed_from_u64(substream(rng, 71));
        let grad_output: Vec<f32> = (0..problem.len()).map(|_| random.random_range(-1.0..1.0)).collect();
        let (means, rstds) = forward_statistics(&input, cols, self.centered);
        let upload = |values: &[f32]| Buffer::upload(backend, values);
        let sets = sets.max(1);
        Ok(Box::new(FusedCase {
            backend,
            family: self.family,
            centered: self.centered,
            problem,
            buffers: [
                upload(&input)?,
                upload(&grad_output)?,
                upload(if weight.is_empty() { &[0.0] } else { &weight })?,
                upload(&means)?,
                upload(&rstds)?,
            ],
            input,
            grad_output,
            weight,
            statistics: (means, rstds),
            grad_inputs: Outputs::new(backend, problem.len(), GUARD, f32::NAN, sets)?,
            partials: Outputs::new(backend, problem.partials_len(), GUARD, f32::NAN, sets)?,
            dweights: Outputs::new(backend, cols, GUARD, f32::NAN, sets)?,
            dbiases: Outputs::new(backend, cols, GUARD, f32::NAN, sets)?,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: if self.centered {
                "layer norm's three gradients (input, weight, bias) from one read of x and dy: a block per run of rows writes dx and its weight and bias sums, then the sums are added in block order"
            } else {
                "RMS norm's gradients (input, weight) from one read of x and dy: a block per run of rows writes dx and its weight sums, then the sums are added in block order"
            },
            default: Size([65_536, 4096, 1]),
            emulator_cap: Size([256, 8192, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        sizes()
    }
}

struct FusedCase<'a> {
    backend: &'a Backend,
    family: &'static Family<NormBackwardFused>,
    centered: bool,
    problem: NormBackwardFused,
    /// x, dy, the weight, the means and the rstds on the backend.
    buffers: [Buffer<f32>; 5],
    input: Vec<f32>,
    grad_output: Vec<f32>,
    weight: Vec<f32>,
    statistics: (Vec<f32>, Vec<f32>),
    grad_inputs: Outputs<f32>,
    partials: Outputs<f32>,
    dweights: Outputs<f32>,
    dbiases: Outputs<f32>,
}

impl Case for FusedCase<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        let [input, grad_output, weight, mean, rstd] = &self.buffers;
        let arrays = FusedArrays {
            gradient: BackwardArrays {
                input,
                grad_output,
                weight: (!self.weight.is_empty()).then_some(weight),
                mean: self.centered.then_some(mean),
                rstd,
                grad_input: self.grad_inputs.get_mut(set),
            },
            partials: self.partials.get_mut(set),
        };
        // RMS norm has no bias: its poison stays.
        let dbias = if self.centered {
            Some(self.dbiases.get_mut(set))
        } else {
            None
        };
        let dweight = self.dweights.get_mut(set);
        launch_gradients(
            self.backend,
            &self.family.kernels[kernel],
            source,
            &self.problem,
            arrays,
            (dweight, dbias),
        )
    }

    fn poison(&mut self) -> Result<()> {
        self.grad_inputs.poison(self.backend)?;
        self.partials.poison(self.backend)?;
        self.dweights.poison(self.backend)?;
        self.dbiases.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let (len, cols) = (self.problem.len(), self.problem.cols as usize);
        let dx = self.grad_inputs.read(self.backend, set)?;
        let statistics = (&self.statistics.0[..], &self.statistics.1[..]);
        let worst_dx = check_grad_input(
            (&self.input, &self.grad_output, &self.weight),
            statistics,
            self.centered,
            (&dx, cols),
        )?;
        check_guard(&dx, len)?;
        let means: &[f32] = if self.centered { &self.statistics.0 } else { &[] };
        let [weight, bias] = reference_weight_grad_by(
            (&self.input, &self.grad_output),
            (means, &self.statistics.1),
            cols,
            fused_depth(self.problem.rows),
        );
        let (dweight, dbias) = (
            self.dweights.read(self.backend, set)?,
            self.dbiases.read(self.backend, set)?,
        );
        // RMS norm has no bias: its output keeps its poison (the guard check of an empty span).
        let checks: &[GradientCheck<'_>] = if self.centered {
            &[("dweight", &dweight, &weight), ("dbias", &dbias, &bias)]
        } else {
            &[("dweight", &dweight, &weight)]
        };
        let worst = check_weight_grads(checks, cols)?.max(worst_dx);
        check_guard(&dbias, if self.centered { cols } else { 0 })?;
        check_guard(&self.partials.read(self.backend, set)?, self.problem.partials_len())?;
        Ok(format!("as the f64 references, at most {worst:.2} of the tolerance"))
    }
}

/// The partial sums' host side: random partials, their column sums in f64.
pub struct PartialSumsDemo;

impl FamilyDemo for PartialSumsDemo {
    fn family(&self) -> &'static dyn AnyFamily {
        &PARTIALS_FAMILY
    }

    fn extents(&self) -> &'static [&'static str] {
        &["blocks", "cols"]
    }

    fn label(&self, size: Size) -> String {
        let [blocks, cols, _] = size.0;
        format!("{blocks} blocks of {cols} partial sums, twice")
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let [blocks, cols, _] = size.0;
        let problem = PartialSums::new(blocks, cols)?;
        plan(PARTIALS_FAMILY.kernels, &problem, (2 * blocks, cols), [1, 2, 0], 1.0)
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let [blocks, cols, _] = size.0;
        let problem = PartialSums::new(blocks, cols)?;
        let mut random = StdRng::seed_from_u64(substream(rng, 73));
        let partials: Vec<f32> = (0..2 * blocks * cols)
            .map(|_| random.random_range(-50.0..50.0))
            .collect();
        let sets = sets.max(1);
        Ok(Box::new(PartialSumsCase {
            backend,
            problem,
            buffer: Buffer::upload(backend, &partials)?,
            partials,
            dweights: Outputs::new(backend, cols, GUARD, f32::NAN, sets)?,
            dbiases: Outputs::new(backend, cols, GUARD, f32::NAN, sets)?,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: "the column sums of two blocks × cols matrices of f32 partial sums, a thread per column adding in block order: the last step of the norms' fused gradients",
            default: Size([256, 4096, 1]),
            emulator_cap: Size([256, 8192, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            edge: [[1, 1], [1, 257], [3, 33], [256, 4096], [7, 1000]]
                .iter()
                .map(|&[b, c]| Size([b, c, 1]))
                .collect(),
            large: vec![Size([256, 8192, 1])],
            bench: vec![Size([256, 8192, 1])],
            smoke: Size([5, 300, 1]),
        }
    }
}

struct PartialSumsCase<'a> {
    backend: &'a Backend,
    problem: PartialSums,
    buffer: Buffer<f32>,
    partials: Vec<f32>,
    dweights: Outputs<f32>,
    dbiases: Outputs<f32>,
}

impl Case for PartialSumsCase<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        let dweight = self.dweights.get_mut(set);
        launch_partials_sum(
            self.backend,
            &PARTIALS_FAMILY.kernels[kernel],
            source,
            &self.problem,
            &self.buffer,
            dweight,
            Some(self.dbiases.get_mut(set)),
        )
    }

    fn poison(&mut self) -> Result<()> {
        self.dweights.poison(self.backend)?;
        self.dbiases.poison(self.backend)
    }

    /// Each column's sum in f64, within blocks · u of the sum of magnitudes (a chain of `blocks`
    /// additions), doubled.
    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let (blocks, cols) = (self.problem.blocks as usize, self.problem.cols as usize);
        let u = (2.0f64).powi(-24);
        for (half, out) in [(0, &self.dweights), (1, &self.dbiases)] {
            let got = out.read(self.backend, set)?;
            for (c, &value) in got[..cols].iter().enumerate() {
                let column = (0..blocks).map(|b| self.partials[(half * blocks + b) * cols + c] as f64);
                let (want, magnitude) = column.fold((0.0, 0.0), |(s, m), v| (s + v, m + v.abs()));
                let tolerance = 2.0 * blocks as f64 * u * magnitude;
                if !within(value, want, tolerance) {
                    return Err(format!("half {half}, column {c}: {value}, expected {want}"));
                }
            }
            check_guard(&got, cols)?;
        }
        Ok("as the f64 sums".into())
    }
}
