//! Cross-entropy for training in one read of the logits: the rows a mean counts
//! (`cross_entropy_count`), then loss, statistics, total and gradient in one launch
//! (`cross_entropy_fused`), and the gradient times a loss gradient other than 1 in place
//! (`cross_entropy_scale`). Safe launches, and the checks against the f64 references of
//! [`super::cross_entropy`].

use super::cross_entropy::{
    RowLoss, Total, Walk, check_backward_of, check_forward, inputs, inputs_of, plan, reference_row_by,
    reference_total_by, sizes, total_views,
};
use super::element::HostElement;
use super::{Case, Cli, FamilyDemo, GUARD, Outputs, Plan, Size, Sizes, check_guard, check_len, substream};
use kernels::Source;
use kernels::cross_entropy::{
    COUNT_FAMILY, CrossEntropyCount, CrossEntropyFused, CrossEntropyScale, FUSED_BF16_FAMILY, FUSED_FAMILY,
    IGNORE_INDEX, Reduction, SCALE_BF16_FAMILY, SCALE_FAMILY, fused,
};
use ptxkit::device::mma::Bf16;
use ptxkit::{AnyFamily, Family, Kernel};
use ptxkit_runtime::array::{Array, Buffer, Tracked};
use ptxkit_runtime::{Backend, Error, Result};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The rows of `targets` (`problem.rows`) whose target is not `ignore_index`, into `count` (1
/// element, as f32: exact below 2^24).
pub fn launch_count<I: Array<i64>, A: Array<f32>>(
    backend: &Backend,
    kernel: &Kernel<CrossEntropyCount>,
    source: Source,
    problem: &CrossEntropyCount,
    ignore_index: i64,
    (targets, count): (&I, &mut A),
) -> Result<()> {
    let rows = problem.rows as usize;
    check_len("targets", targets.len(), rows)?;
    check_len("count", count.len(), 1)?;
    let args = (
        targets.view(backend)?.head(rows),
        count.view_mut(backend)?.head(1usize),
        problem.rows,
        ignore_index,
    );
    // SAFETY: each view is its array's on this backend, borrowed for the launch: the rows'
    // targets and the count's one element.
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &[targets, &*count]) }
}

/// The arrays of one fused launch: the forward pass's ([`super::cross_entropy::ForwardArrays`]),
/// `count` (the rows counted, as [`launch_count`] writes it: needed for a mean) and the logits'
/// gradient (rows × cols, written).
pub struct FusedArrays<'a, L, A, I, U> {
    pub logits: &'a L,
    pub targets: &'a I,
    pub count: Option<&'a A>,
    pub losses: &'a mut A,
    pub stats: &'a mut A,
    pub total: Option<Total<'a, A, U>>,
    pub grad_logits: &'a mut L,
}

/// Loss, statistics, total (where wanted) and gradient for a loss gradient of 1, by `kernel` on
/// `arrays` (the logits and their gradient of `E`, as its bits). A mean needs its count. Checks
/// every array's length where `backend` can reach it.
pub fn launch_fused<E: HostElement, L: Array<E::Bits>, A: Array<f32>, I: Array<i64>, U: Array<u32>>(
    backend: &Backend,
    kernel: &Kernel<CrossEntropyFused<E>>,
    source: Source,
    problem: &CrossEntropyFused<E>,
    ignore_index: i64,
    arrays: FusedArrays<'_, L, A, I, U>,
) -> Result<()> {
    let FusedArrays {
        logits,
        targets,
        count,
        losses,
        stats,
        total,
        grad_logits,
    } = arrays;
    let (rows, len) = (problem.rows as usize, problem.len());
    check_len("logits", logits.len(), len)?;
    check_len("targets", targets.len(), rows)?;
    check_len("losses", losses.len(), rows)?;
    check_len("stats", stats.len(), 2 * rows)?;
    check_len("grad_logits", grad_logits.len(), len)?;
    let mean = total.as_ref().is_some_and(|t| t.reduction == Reduction::Mean);
    let count_view = match count {
        Some(count) => {
            check_len("count", count.len(), 1)?;
            count.view(backend)?.head(1usize)
        }
        None if mean => {
            return Err(Error::InvalidInput {
                what: "count".into(),
                reason: "a mean's gradient is divided by the rows it counts: give the count (launch_count)".into(),
            });
        }
        None => stats.view(backend)?.head(0usize),
    };
    let (total_view, ticket_view, flag, total) = total_views(backend, total, losses)?;
    let args = (
        E::elements(logits.view(backend)?.head(len)),
        targets.view(backend)?.head(rows),
        count_view,
        losses.view_mut(backend)?.head(rows),
        stats.view_mut(backend)?.head(2 * rows),
        total_view,
        ticket_view,
        E::elements_mut(grad_logits.view_mut(backend)?.head(len)),
        problem.rows,
        problem.cols,
        ignore_index,
        flag,
    );
    let mut used: Vec<&dyn Tracked> = vec![logits, targets, &*losses, &*stats, &*grad_logits];
    used.extend(count.map(|c| c as &dyn Tracked));
    if let Some((total, ticket)) = &total {
        used.push(&**total);
        used.push(&**ticket);
    }
    // SAFETY: each view is its array's on this backend, borrowed for the launch: the logits' and
    // their gradient's rows × cols, the rows' targets and losses, their 2 · rows statistics, the
    // count's one element (or none), the total's 2 and the ticket's one word (or none).
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &used) }
}

/// The fused pass's gradient (rows × cols) times `grad_loss` (1 element for every row, or
/// `rows`) in place, rows whose loss gradient is 1 or whose target is `ignore_index` untouched.
pub fn launch_scale<E: HostElement, G: Array<E::Bits>, A: Array<f32>, I: Array<i64>>(
    backend: &Backend,
    kernel: &Kernel<CrossEntropyScale<E>>,
    source: Source,
    problem: &CrossEntropyScale<E>,
    ignore_index: i64,
    (targets, grad_loss, grad_logits): (&I, &A, &mut G),
) -> Result<()> {
    let (rows, len) = (problem.rows as usize, problem.len());
    check_len("targets", targets.len(), rows)?;
    check_len("grad_logits", grad_logits.len(), len)?;
    let grad_loss_len = if grad_loss.len() == 1 { 1 } else { rows };
    check_len("grad_loss", grad_loss.len(), grad_loss_len)?;
    let args = (
        targets.view(backend)?.head(rows),
        grad_loss.view(backend)?.head(grad_loss_len),
        E::elements_mut(grad_logits.view_mut(backend)?.head(len)),
        problem.rows,
        problem.cols,
        ignore_index,
    );
    // SAFETY: each view is its array's on this backend, borrowed for the launch: the rows'
    // targets, the loss gradient's 1 or rows, the gradient's rows × cols.
    unsafe {
        backend.launch_from(
            source.module(),
            kernel,
            problem,
            args,
            &[targets, grad_loss, &*grad_logits],
        )
    }
}

/// The fused pass's host side over logits (and gradient) of `E` (a mean, its count from the host).
pub struct CrossEntropyFusedDemo<E: HostElement> {
    family: &'static Family<CrossEntropyFused<E>>,
}

/// f32 logits and gradient.
pub const CROSS_ENTROPY_FUSED: CrossEntropyFusedDemo<f32> = CrossEntropyFusedDemo { family: &FUSED_FAMILY };
/// bf16 logits and gradient.
pub const CROSS_ENTROPY_FUSED_BF16: CrossEntropyFusedDemo<Bf16> = CrossEntropyFusedDemo {
    family: &FUSED_BF16_FAMILY,
};

impl<E: HostElement> FamilyDemo for CrossEntropyFusedDemo<E> {
    fn family(&self) -> &'static dyn AnyFamily {
        self.family
    }

    fn extents(&self) -> &'static [&'static str] {
        &["rows", "cols"]
    }

    fn label(&self, size: Size) -> String {
        let [rows, cols, _] = size.0;
        format!("{rows} rows of {cols} classes")
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let [rows, cols, _] = size.0;
        // The logits and their gradient; the targets (two words each), losses and statistics.
        plan::<E, _>(
            &self.family.kernels[0],
            &CrossEntropyFused::<E>::new(rows, cols)?,
            (rows, cols),
            (2, 5),
        )
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let [rows, cols, _] = size.0;
        let problem = CrossEntropyFused::<E>::new(rows, cols)?;
        let (mut bits, logits, targets) = inputs_of::<E>(substream(rng, 59), rows, cols);
        bits.resize(problem.len() + GUARD, E::NAN);
        let count = targets.iter().filter(|&&t| t != IGNORE_INDEX).count() as f32;
        let sets = sets.max(1);
        Ok(Box::new(FusedCase::<E> {
            backend,
            family: self.family,
            problem,
            logits_buffer: Buffer::upload(backend, &bits)?,
            targets_buffer: Buffer::upload(backend, &targets)?,
            count_buffer: Buffer::upload(backend, &[count])?,
            logits,
            targets,
            count,
            losses: Outputs::new(backend, rows, GUARD, f32::NAN, sets)?,
            stats: Outputs::new(backend, 2 * rows, GUARD, f32::NAN, sets)?,
            totals: Outputs::new(backend, 2, GUARD, f32::NAN, sets)?,
            tickets: Outputs::from_template(backend, vec![0u32], sets)?,
            grads: Outputs::new(backend, problem.len(), GUARD, E::NAN, sets)?,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: if E::LANES == 4 {
                "softmax cross-entropy's mean and its gradient with respect to rows × cols f32 logits in one launch (training's forward): a block of 1024 per row, the row held in registers and shared memory between its statistics and its gradient (past 65536 classes the rest read twice); pipelined: the GPU's resident blocks taking rows a grid apart, each row's loads issued while the one before is written (past 65536 classes the whole row read twice)"
            } else {
                "softmax cross-entropy's mean and its gradient with respect to rows × cols bf16 logits in one launch (training's forward; f32 arithmetic, the gradient in bf16): a block of 1024 per row, the row held in registers and shared memory between its statistics and its gradient (past 114688 classes the rest read twice); pipelined: the GPU's resident blocks taking rows a grid apart, each row's loads issued while the one before is written (past 114688 classes the whole row read twice)"
            },
            default: Size([8192, 50_257, 1]),
            emulator_cap: Size([16, 131_072, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        let mut sizes = sizes();
        // Rows that hold less than a block's registers, that fill shared memory, and past it (for
        // f32; bf16's hold twice as many in shared memory, and past 114688 in all); more rows than
        // the emulator's blocks, so that blocks take several rows, each loaded while the one before
        // is written (and, past the chip, one after another).
        sizes.edge.extend(
            [
                [2, 24_581],
                [2, 65_539],
                [3, 70_001],
                [2, 114_697],
                [2, 128_256],
                [41, 1029],
                [27, 8195],
                [11, 65_541],
            ]
            .map(|[r, c]| Size([r, c, 1])),
        );
        sizes
    }
}

struct FusedCase<'a, E: HostElement> {
    backend: &'a Backend,
    family: &'static Family<CrossEntropyFused<E>>,
    problem: CrossEntropyFused<E>,
    logits_buffer: Buffer<E::Bits>,
    targets_buffer: Buffer<i64>,
    count_buffer: Buffer<f32>,
    /// The logits' values, targets and count on the host, for the reference.
    logits: Vec<f32>,
    targets: Vec<i64>,
    count: f32,
    losses: Outputs<f32>,
    stats: Outputs<f32>,
    totals: Outputs<f32>,
    tickets: Outputs<u32>,
    grads: Outputs<E::Bits>,
}

impl<E: HostElement> Case for FusedCase<'_, E> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        let arrays = FusedArrays {
            logits: &self.logits_buffer,
            targets: &self.targets_buffer,
            count: Some(&self.count_buffer),
            losses: self.losses.get_mut(set),
            stats: self.stats.get_mut(set),
            total: Some(Total {
                total: self.totals.get_mut(set),
                ticket: self.tickets.get_mut(set),
                reduction: Reduction::Mean,
            }),
            grad_logits: self.grads.get_mut(set),
        };
        launch_fused(
            self.backend,
            &self.family.kernels[kernel],
            source,
            &self.problem,
            IGNORE_INDEX,
            arrays,
        )
    }

    fn poison(&mut self) -> Result<()> {
        self.losses.poison(self.backend)?;
        self.stats.poison(self.backend)?;
        self.totals.poison(self.backend)?;
        self.tickets.poison(self.backend)?;
        self.grads.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let (rows, cols, len) = (
            self.problem.rows as usize,
            self.problem.cols as usize,
            self.problem.len(),
        );
        let losses = self.losses.read(self.backend, set)?;
        let stats = self.stats.read(self.backend, set)?;
        let total = self.totals.read(self.backend, set)?;
        let ticket = self.tickets.read(self.backend, set)?[0];
        let grad = self.grads.read(self.backend, set)?;
        let logits = &self.logits[..len];
        let references: Vec<RowLoss> = logits
            .chunks(cols)
            .zip(&self.targets)
            .map(|(row, &target)| reference_row_by(row, target, IGNORE_INDEX, Walk::fused::<E>()))
            .collect();
        let forward = check_forward(&references, (&losses[..rows], &stats[..2 * rows]))?;
        let (want, tolerance, count) = reference_total_by(
            &references,
            &self.targets,
            IGNORE_INDEX,
            Reduction::Mean,
            fused::THREADS as usize,
        );
        if !super::norm::within(total[0], want, tolerance) || total[1] as f64 != count {
            return Err(format!(
                "the mean: {} over {} rows, expected {want} (within {tolerance:.3e}) over {count}",
                total[0], total[1]
            ));
        }
        if ticket != 0 {
            return Err(format!(
                "the ticket is {ticket} after the launch: it must be left at 0 for the next"
            ));
        }
        // The gradient from the statistics the kernel wrote (checked above), for a loss gradient
        // of 1 over the rows counted.
        let scales = vec![1.0 / self.count as f64; rows];
        let backward = check_backward_of::<E>(
            (logits, &self.targets, &stats[..2 * rows]),
            &scales,
            (&grad[..len], 1),
            cols,
        )
        .map_err(|e| format!("the gradient: {e}"))?;
        check_guard(&losses, rows)?;
        check_guard(&stats, 2 * rows)?;
        check_guard(&total, 2)?;
        let grad: Vec<f32> = grad.iter().map(|&b| E::value(b)).collect();
        check_guard(&grad, len)?;
        Ok(format!("loss {forward}; gradient {backward}"))
    }
}

/// The count's host side.
pub struct CrossEntropyCountDemo;

impl FamilyDemo for CrossEntropyCountDemo {
    fn family(&self) -> &'static dyn AnyFamily {
        &COUNT_FAMILY
    }

    fn extents(&self) -> &'static [&'static str] {
        &["rows"]
    }

    fn label(&self, size: Size) -> String {
        format!("{} targets", size.0[0])
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let rows = size.0[0];
        // The targets (two words each) and the count.
        plan::<f32, _>(
            &COUNT_FAMILY.kernels[0],
            &CrossEntropyCount::new(rows)?,
            (rows, 1),
            (0, 2),
        )
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let rows = size.0[0];
        let problem = CrossEntropyCount::new(rows)?;
        // Any share ignored, from none to all (a share of its own per stream).
        let mut random = StdRng::seed_from_u64(substream(rng, 61));
        let ignored = random.random_range(0.0..1.0f64);
        let targets: Vec<i64> = (0..rows)
            .map(|_| {
                if random.random_bool(ignored) {
                    IGNORE_INDEX
                } else {
                    random.random_range(-3..1000)
                }
            })
            .collect();
        Ok(Box::new(CountCase {
            backend,
            problem,
            targets_buffer: Buffer::upload(backend, &targets)?,
            want: targets.iter().filter(|&&t| t != IGNORE_INDEX).count(),
            counts: Outputs::new(backend, 1, GUARD, f32::NAN, sets.max(1))?,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: "the targets that are not ignore_index, counted by one block: what a mean's gradient is divided by before the fused cross-entropy pass",
            default: Size([8192, 1, 1]),
            emulator_cap: Size([1 << 20, 1, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            edge: [1, 2, 31, 1023, 1024, 1025, 4095, 4097, 10_007]
                .iter()
                .map(|&rows| Size([rows, 1, 1]))
                .collect(),
            large: vec![Size([1 << 22, 1, 1])],
            bench: vec![Size([8192, 1, 1]), Size([1 << 20, 1, 1])],
            smoke: Size([1000, 1, 1]),
        }
    }
}

struct CountCase<'a> {
    backend: &'a Backend,
    problem: CrossEntropyCount,
    targets_buffer: Buffer<i64>,
    want: usize,
    counts: Outputs<f32>,
}

impl Case for CountCase<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        launch_count(
            self.backend,
            &COUNT_FAMILY.kernels[kernel],
            source,
            &self.problem,
            IGNORE_INDEX,
            (&self.targets_buffer, self.counts.get_mut(set)),
        )
    }

    fn poison(&mut self) -> Result<()> {
        self.counts.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let count = self.counts.read(self.backend, set)?;
        if count[0] as f64 != self.want as f64 {
            return Err(format!("counted {}, expected {}", count[0], self.want));
        }
        check_guard(&count, 1)?;
        Ok(format!("{} of {} rows, exact", self.want, self.problem.rows))
    }
}

/// The scale's host side: a gradient of `E` scaled by one loss gradient per row (a quarter of
/// them exactly 1, some rows ignored).
pub struct CrossEntropyScaleDemo<E: HostElement> {
    family: &'static Family<CrossEntropyScale<E>>,
}

/// An f32 gradient.
pub const CROSS_ENTROPY_SCALE: CrossEntropyScaleDemo<f32> = CrossEntropyScaleDemo { family: &SCALE_FAMILY };
/// A bf16 gradient.
pub const CROSS_ENTROPY_SCALE_BF16: CrossEntropyScaleDemo<Bf16> = CrossEntropyScaleDemo {
    family: &SCALE_BF16_FAMILY,
};

impl<E: HostElement> FamilyDemo for CrossEntropyScaleDemo<E> {
    fn family(&self) -> &'static dyn AnyFamily {
        self.family
    }

    fn extents(&self) -> &'static [&'static str] {
        &["rows", "cols"]
    }

    fn label(&self, size: Size) -> String {
        let [rows, cols, _] = size.0;
        format!("{rows} rows of {cols} classes")
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let [rows, cols, _] = size.0;
        // The gradient read and written; the targets (two words each) and loss gradients.
        plan::<E, _>(
            &self.family.kernels[0],
            &CrossEntropyScale::<E>::new(rows, cols)?,
            (rows, cols),
            (2, 3),
        )
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let [rows, cols, _] = size.0;
        let problem = CrossEntropyScale::<E>::new(rows, cols)?;
        let (grad, targets) = inputs(substream(rng, 67), rows, cols);
        let mut grad: Vec<E::Bits> = grad.iter().map(|&g| E::bits(g)).collect();
        let mut random = StdRng::seed_from_u64(substream(rng, 71));
        let factors: Vec<f32> = (0..rows)
            .map(|_| {
                if random.random_range(0..4) == 0 {
                    1.0
                } else {
                    random.random_range(-2.0..2.0)
                }
            })
            .collect();
        let want: Vec<E::Bits> = grad
            .chunks(cols)
            .zip(factors.iter().zip(&targets))
            .flat_map(|(row, (&f, &target))| {
                row.iter().map(move |&g| {
                    if f == 1.0 || target == IGNORE_INDEX {
                        g
                    } else {
                        E::bits(E::value(g) * f)
                    }
                })
            })
            .collect();
        grad.resize(problem.len() + GUARD, E::NAN);
        Ok(Box::new(ScaleCase::<E> {
            backend,
            family: self.family,
            problem,
            targets_buffer: Buffer::upload(backend, &targets)?,
            factors_buffer: Buffer::upload(backend, &factors)?,
            want,
            // Each launch scales its set in place: poisoning puts the unscaled gradient back.
            grads: Outputs::from_template(backend, grad, sets.max(1))?,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: if E::LANES == 4 {
                "the fused cross-entropy pass's f32 gradient times each row's loss gradient, in place; rows whose loss gradient is 1 are not touched (a block per row)"
            } else {
                "the fused cross-entropy pass's bf16 gradient times each row's loss gradient (f32 product, rounded to bf16), in place; rows whose loss gradient is 1 are not touched (a block per row)"
            },
            default: Size([8192, 50_257, 1]),
            emulator_cap: Size([64, 50_257, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        sizes()
    }
}

struct ScaleCase<'a, E: HostElement> {
    backend: &'a Backend,
    family: &'static Family<CrossEntropyScale<E>>,
    problem: CrossEntropyScale<E>,
    targets_buffer: Buffer<i64>,
    factors_buffer: Buffer<f32>,
    /// The gradient each set must hold after one launch.
    want: Vec<E::Bits>,
    grads: Outputs<E::Bits>,
}

impl<E: HostElement> Case for ScaleCase<'_, E> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        launch_scale(
            self.backend,
            &self.family.kernels[kernel],
            source,
            &self.problem,
            IGNORE_INDEX,
            (&self.targets_buffer, &self.factors_buffer, self.grads.get_mut(set)),
        )
    }

    fn poison(&mut self) -> Result<()> {
        self.grads.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let len = self.problem.len();
        let got: Vec<f32> = self
            .grads
            .read(self.backend, set)?
            .iter()
            .map(|&b| E::value(b))
            .collect();
        let cols = self.problem.cols as usize;
        // One rounded product each, as on the host: bit for bit.
        if let Some(i) = (0..len).find(|&i| got[i].to_bits() != E::value(self.want[i]).to_bits()) {
            return Err(format!(
                "row {}, column {}: {}, expected {}",
                i / cols,
                i % cols,
                got[i],
                E::value(self.want[i])
            ));
        }
        check_guard(&got, len)?;
        Ok("bit for bit".into())
    }
}
