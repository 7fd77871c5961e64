//! Softmax cross-entropy's host side, forward (each row's loss and statistics, and their mean or sum) and
//! backward (the logits' gradient): the safe launches, logits whose rows each have their own offset
//! and spread with some rows' targets ignored, and the f64 checks with tolerances that follow the
//! kernels' arithmetic.

use super::element::HostElement;
use super::elementwise::check_shape;
use super::norm::{SMALLEST_SUBNORMAL, as_f32_range, within};
use super::{Bound, Case, Cli, FamilyDemo, GUARD, Outputs, Plan, Size, Sizes, Work, check_guard, check_len, substream};
use kernels::Source;
use kernels::cross_entropy::{
    BACKWARD_BF16_FAMILY, BACKWARD_FAMILY, BF16_FAMILY, CrossEntropy, CrossEntropyBackward, FAMILY, IGNORE_INDEX,
    Reduction, THREADS, by_warp, fused,
};
use kernels::element::RowElement;
use ptxkit::device::GlobalSliceMut;
use ptxkit::device::mma::Bf16;
use ptxkit::{AnyFamily, Family, Kernel};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::array::{Array, Buffer, Tracked};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// u: half of f32's spacing at 1, the relative error of one rounding.
const U: f64 = 1.0 / 16_777_216.0;
/// The relative error of the GPU's `ex2.approx` (and so of `device::exp`, before its argument's
/// rounding), and the absolute error of its `lg2.approx` near 1.
const APPROX: f64 = 1.0 / 2_097_152.0;

/// Where the forward pass's total goes: the reduced loss and the rows counted (2 elements), and a
/// u32 ticket that is zero (1 element).
pub struct Total<'a, A, U> {
    pub total: &'a mut A,
    pub ticket: &'a mut U,
    pub reduction: Reduction,
}

/// The arrays of one forward launch: the rows × cols logits and the `rows` targets; each row's loss
/// (`rows`) and its maximum and ln Σ e^(x − maximum) (`2 · rows`, in pairs: what the backward pass
/// reads), written; and where wanted the total.
pub struct ForwardArrays<'a, L, A, I, U> {
    pub logits: &'a L,
    pub targets: &'a I,
    pub losses: &'a mut A,
    pub stats: &'a mut A,
    pub total: Option<Total<'a, A, U>>,
}

/// The forward pass by `kernel` on `arrays` (logits of `E`, as its bits), rows whose target is
/// `ignore_index` left out. Checks every array's length where `backend` can reach it.
pub fn launch_forward<E: HostElement, L: Array<E::Bits>, A: Array<f32>, I: Array<i64>, U: Array<u32>>(
    backend: &Backend,
    kernel: &Kernel<CrossEntropy<E>>,
    source: Source,
    problem: &CrossEntropy<E>,
    ignore_index: i64,
    arrays: ForwardArrays<'_, L, A, I, U>,
) -> Result<()> {
    let ForwardArrays {
        logits,
        targets,
        losses,
        stats,
        total,
    } = arrays;
    let (rows, len) = (problem.rows as usize, problem.len());
    check_len("logits", logits.len(), len)?;
    check_len("targets", targets.len(), rows)?;
    check_len("losses", losses.len(), rows)?;
    check_len("stats", stats.len(), 2 * rows)?;
    let (total_view, ticket_view, mean, total) = total_views(backend, total, losses)?;
    let args = (
        E::elements(logits.view(backend)?.head(len)),
        targets.view(backend)?.head(rows),
        losses.view_mut(backend)?.head(rows),
        stats.view_mut(backend)?.head(2 * rows),
        total_view,
        ticket_view,
        problem.rows,
        problem.cols,
        ignore_index,
        mean,
    );
    let mut used: Vec<&dyn Tracked> = vec![logits, targets, &*losses, &*stats];
    if let Some((total, ticket)) = &total {
        used.push(&**total);
        used.push(&**ticket);
    }
    // SAFETY: each view is its array's on this backend, borrowed for the launch: the logits' rows ×
    // cols, the rows' targets and losses, their 2 · rows statistics, the total's 2 and the ticket's one word (or none).
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &used) }
}

/// A launch's total and ticket views (empty views of `losses`' storage where no total is wanted),
/// the kernels' `mean` flag, and the two arrays for the launch's borrows; their lengths checked.
#[allow(clippy::type_complexity)]
pub(super) fn total_views<'t, A: Array<f32>, U: Array<u32>>(
    backend: &Backend,
    total: Option<Total<'t, A, U>>,
    losses: &mut A,
) -> Result<(
    GlobalSliceMut<f32>,
    GlobalSliceMut<u32>,
    u32,
    Option<(&'t mut A, &'t mut U)>,
)> {
    Ok(match total {
        Some(Total {
            total,
            ticket,
            reduction,
        }) => {
            check_len("total", total.len(), 2)?;
            check_len("ticket", ticket.len(), 1)?;
            let views = (
                total.view_mut(backend)?.head(2usize),
                ticket.view_mut(backend)?.head(1usize),
            );
            (views.0, views.1, reduction.flag(), Some((total, ticket)))
        }
        None => {
            let none = losses.view_mut(backend)?.head(0usize);
            // SAFETY: an empty view of f32 storage, 4-byte aligned as u32 needs; never read.
            (none, unsafe { none.cast::<u32>() }, 0, None)
        }
    })
}

/// The arrays of one backward launch: the rows × cols logits, the `rows` targets and the forward
/// pass's `2 · rows` statistics; the loss's gradient (1 element for every row, or `rows`); for a mean, the rows it
/// counted (1 element: the forward pass's `total[1]`); the logits' gradient, written.
pub struct BackwardArrays<'a, L, A, I> {
    pub logits: &'a L,
    pub targets: &'a I,
    pub stats: &'a A,
    pub grad_loss: &'a A,
    pub count: Option<&'a A>,
    pub grad_logits: &'a mut L,
}

/// The logits' gradient by `kernel` on `arrays` (the logits and their gradient of `E`, as its
/// bits): rows whose target is `ignore_index` get 0. Checks every array's length where `backend`
/// can reach it.
pub fn launch_backward<E: HostElement, L: Array<E::Bits>, A: Array<f32>, I: Array<i64>>(
    backend: &Backend,
    kernel: &Kernel<CrossEntropyBackward<E>>,
    source: Source,
    problem: &CrossEntropyBackward<E>,
    ignore_index: i64,
    arrays: BackwardArrays<'_, L, A, I>,
) -> Result<()> {
    let BackwardArrays {
        logits,
        targets,
        stats,
        grad_loss,
        count,
        grad_logits,
    } = arrays;
    let (rows, len) = (problem.rows as usize, problem.len());
    check_len("logits", logits.len(), len)?;
    check_len("targets", targets.len(), rows)?;
    check_len("stats", stats.len(), 2 * rows)?;
    check_len("grad_logits", grad_logits.len(), len)?;
    // One gradient for every row, or one per row.
    let grad_loss_len = if grad_loss.len() == 1 { 1 } else { rows };
    check_len("grad_loss", grad_loss.len(), grad_loss_len)?;
    let count_view = match count {
        Some(count) => {
            check_len("count", count.len(), 1)?;
            count.view(backend)?.head(1usize)
        }
        None => stats.view(backend)?.head(0usize),
    };
    let args = (
        E::elements(logits.view(backend)?.head(len)),
        targets.view(backend)?.head(rows),
        stats.view(backend)?.head(2 * rows),
        grad_loss.view(backend)?.head(grad_loss_len),
        count_view,
        E::elements_mut(grad_logits.view_mut(backend)?.head(len)),
        problem.rows,
        problem.cols,
        ignore_index,
    );
    let mut used: Vec<&dyn Tracked> = vec![logits, targets, stats, grad_loss, &*grad_logits];
    used.extend(count.map(|c| c as &dyn Tracked));
    // SAFETY: each view is its array's on this backend, borrowed for the launch: the logits' and
    // their gradient's rows × cols, the rows' targets and statistics, the loss's gradient (1 or rows) and
    // the count (1 or none).
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &used) }
}

/// One row's forward reference: its loss in f64 with f32's overflow, and the statistics the
/// backward pass reads, each with its tolerance.
#[derive(Clone, Copy, Debug)]
pub struct RowLoss {
    pub loss: f64,
    pub loss_tolerance: f64,
    /// The row's maximum, exact; `None` where any value passes (a NaN or +∞ in the row, or only
    /// −∞: every gradient of such a row is NaN whatever the maximum).
    pub max: Option<f32>,
    /// ln Σ e^(x − max).
    pub ln_sum: f64,
    pub ln_sum_tolerance: f64,
}

impl RowLoss {
    /// The statistics as the kernel writes them: (max, ln sum), NaN for a maximum of no account.
    pub fn stats(&self) -> [f32; 2] {
        [self.max.unwrap_or(f32::NAN), self.ln_sum as f32]
    }
}

/// Threads that walk a row of `cols` classes: a warp's, or a block's.
fn walkers(cols: usize) -> usize {
    if by_warp(cols as u32) { 32 } else { THREADS as usize }
}

/// The most times one thread's running maximum grows over `row` (each growth rescales its sum, one
/// more rounding), by the forward kernel's walk: whatever the row's place against 16-byte
/// boundaries (0 to 3 elements before the first), thread t of the walkers takes one of those, then
/// every walkers-th group of four, then one past the last group.
fn most_rescales(row: &[f32]) -> usize {
    let (cols, threads) = (row.len(), walkers(row.len()));
    let mut most = 0;
    for head in 0..=cols.min(3) {
        let vectors = (cols - head) / 4;
        let mut maxes = vec![f32::MIN; threads];
        let mut growths = vec![0usize; threads];
        let mut see = |t: usize, x: f32| {
            if x > maxes[t] {
                maxes[t] = x;
                growths[t] += 1;
            }
        };
        (0..head).for_each(|c| see(c, row[c]));
        for v in 0..vectors {
            (0..4).for_each(|k| see(v % threads, row[head + 4 * v + k]));
        }
        (head + 4 * vectors..cols).for_each(|c| see(c - head - 4 * vectors, row[c]));
        most = most.max(growths.into_iter().max().unwrap_or(0));
    }
    most
}

/// Row `row`'s loss and statistics in f64 for target `target` (zeros where it is `ignore_index`;
/// NaN where it is out of range). Tolerances (u = 2^-24, a = 2^-21 the approximate e^x's and ln's
/// error): the sum of e^(x − max) within a + 2u·Σp|x − max| (each term's exponent rounded) +
/// R·(a + 2u·(ln cols + 2)) (R rescales of a running sum: the most by any thread's walk, plus 12
/// merges; a rescale by e^−Δ of k terms adds at most 2u·min(Δ, kΔe^−Δ) < 2u·(ln k + 2)) + d·u (d the
/// additions' chain) of itself; ln of it within that plus a·(1 + |log2 sum|)·ln 2 + u·|ln sum|; the
/// loss (max − x[target]) + ln sum within that plus u·|max − x[target]| plus u·|loss|. Doubled.
pub fn reference_row(row: &[f32], target: i64, ignore_index: i64) -> RowLoss {
    reference_row_by(row, target, ignore_index, Walk::Forward)
}

/// How a kernel walks a row: what bounds its sum's rescales and its chain of additions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Walk {
    /// [`kernels::cross_entropy::forward`]'s: a running pair per thread over the whole row.
    Forward,
    /// [`kernels::cross_entropy::fused`]'s: each thread's sum from its own maximum (over the
    /// `per_thread` elements it holds on chip), a running pair over the part past the `on_chip`
    /// columns a row holds, the threads' pairs merged ([`Walk::fused`]).
    Fused { on_chip: usize, per_thread: usize },
}

impl Walk {
    /// The fused kernel's walk over elements of `E`.
    pub fn fused<E: RowElement>() -> Walk {
        let vectors = fused::register_vectors::<E>() + fused::STAGED_VECTORS;
        Walk::Fused {
            on_chip: fused::on_chip_cols::<E>() as usize,
            per_thread: (E::LANES * vectors) as usize,
        }
    }
}

/// [`reference_row`] with the tolerances of `walk`.
pub fn reference_row_by(row: &[f32], target: i64, ignore_index: i64, walk: Walk) -> RowLoss {
    let exact = |loss: f64, max: Option<f32>, ln_sum: f64| RowLoss {
        loss,
        loss_tolerance: 0.0,
        max,
        ln_sum,
        ln_sum_tolerance: 0.0,
    };
    if target == ignore_index {
        return exact(0.0, Some(0.0), 0.0);
    }
    let cols = row.len();
    let picked = usize::try_from(target)
        .ok()
        .and_then(|t| row.get(t))
        .map_or(f64::NAN, |&x| x as f64);
    // A NaN or a +∞ anywhere: NaN throughout (∞ − ∞ in the exponents), as PyTorch's.
    if row.iter().any(|x| x.is_nan() || *x == f32::INFINITY) {
        return exact(f64::NAN, None, f64::NAN);
    }
    let max = row.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
    // Only −∞: a sum of 0, ln sum −∞, the loss (max − −∞) + −∞.
    if max == f32::NEG_INFINITY {
        return exact(f64::NAN, None, f64::NEG_INFINITY);
    }
    let wide = max as f64;
    let terms: Vec<f64> = row.iter().map(|&x| (x as f64 - wide).exp()).collect();
    let sum: f64 = terms.iter().sum();
    let spread = row
        .iter()
        .zip(&terms)
        .filter(|(_, p)| **p > 0.0)
        .map(|(&x, p)| p * (x as f64 - wide).abs())
        .sum::<f64>()
        / sum;
    let (rescales, chain) = match walk {
        Walk::Forward => (most_rescales(row) + 12, cols.div_ceil(walkers(cols)) + 15),
        Walk::Fused { on_chip, per_thread } => {
            // A thread's streamed elements bound its running maximum's growths, then one
            // rescale of that running sum and the merges: five shuffles' and the warps'. Its sum
            // adds its on-chip elements, two edge elements and the running sum, then the same.
            let streamed = cols.saturating_sub(on_chip).div_ceil(fused::THREADS as usize);
            let merges = 5 + (fused::THREADS / 32) as usize;
            (streamed + 1 + merges, per_thread + 3 + merges + streamed)
        }
    };
    let (rescales, chain) = (rescales as f64, chain as f64);
    let sum_error = APPROX + 2.0 * U * spread + rescales * (APPROX + 2.0 * U * ((cols as f64).ln() + 2.0)) + chain * U;
    let ln_sum = sum.ln();
    let ln_error =
        sum_error + APPROX * (1.0 + ln_sum.abs() / std::f64::consts::LN_2) * std::f64::consts::LN_2 + U * ln_sum;
    let gap = as_f32_range(wide - picked);
    let loss = as_f32_range(gap + ln_sum);
    let loss_tolerance = ln_error + U * gap.abs() + U * loss.abs();
    let finite = |t: f64, v: f64| if v.is_finite() { 2.0 * t } else { 0.0 };
    RowLoss {
        loss,
        loss_tolerance: finite(loss_tolerance, loss),
        max: Some(max),
        ln_sum,
        ln_sum_tolerance: finite(ln_error, ln_sum),
    }
}

/// The forward pass's total from the rows' references: the losses' sum (over the count, for the
/// mean) and the rows counted, and the total's tolerance: the rows' own plus a chain of
/// rows / THREADS + 16 additions of u·Σ|loss| (and u of the mean for its division), doubled.
pub fn reference_total(rows: &[RowLoss], targets: &[i64], ignore_index: i64, reduction: Reduction) -> (f64, f64, f64) {
    reference_total_by(rows, targets, ignore_index, reduction, THREADS as usize)
}

/// [`reference_total`] for a last block of `threads` threads (each adds every threads-th loss,
/// then five shuffles and the warps').
pub fn reference_total_by(
    rows: &[RowLoss],
    targets: &[i64],
    ignore_index: i64,
    reduction: Reduction,
    threads: usize,
) -> (f64, f64, f64) {
    let count = targets.iter().filter(|&&t| t != ignore_index).count() as f64;
    let sum: f64 = rows.iter().map(|r| r.loss).sum();
    let sum = as_f32_range(sum);
    let chain = (rows.len().div_ceil(threads) + 8 + threads / 32) as f64;
    let tolerance = rows.iter().map(|r| r.loss_tolerance).sum::<f64>()
        + 2.0 * chain * U * rows.iter().map(|r| r.loss.abs()).sum::<f64>();
    match reduction {
        Reduction::Sum => (sum, if sum.is_finite() { tolerance } else { 0.0 }, count),
        Reduction::Mean => {
            let mean = sum / count;
            let tolerance = tolerance / count + 2.0 * U * mean.abs();
            (mean, if mean.is_finite() { tolerance } else { 0.0 }, count)
        }
    }
}

/// One row's gradient in f64 from the statistics the kernel is given (max, ln sum), with the
/// gradient `scale` reaching the row's loss, and each element's tolerance: p = e^((x − max) − ln
/// sum) within p·(a + 2u·(|x − max| + |exponent|)) (two roundings of the exponent) plus
/// f32's smallest normal (flushed below it), p − [c = target] within u of itself, times the scale
/// (itself within u, a division) within u: all doubled. 0 where the target is ignored; NaN where it
/// is out of range.
pub fn reference_backward_row(
    row: &[f32],
    target: i64,
    ignore_index: i64,
    [max, ln_sum]: [f32; 2],
    scale: f64,
) -> (Vec<f64>, Vec<f64>) {
    let cols = row.len();
    if target == ignore_index {
        return (vec![0.0; cols], vec![0.0; cols]);
    }
    if usize::try_from(target).map_or(true, |t| t >= cols) {
        return (vec![f64::NAN; cols], vec![0.0; cols]);
    }
    let (max, ln_sum) = (max as f64, ln_sum as f64);
    row.iter()
        .enumerate()
        .map(|(c, &x)| {
            let below = x as f64 - max;
            let gap = below - ln_sum;
            let p = gap.exp();
            let hit = if c as i64 == target { 1.0 } else { 0.0 };
            let g = (p - hit) * scale;
            let p_error = if p > 0.0 {
                p * (APPROX + 2.0 * U * (below.abs() + gap.abs()))
            } else {
                0.0
            } + f32::MIN_POSITIVE as f64;
            let error = scale.abs() * (p_error + U * (p - hit).abs()) + 2.0 * U * g.abs() + 2.0 * SMALLEST_SUBNORMAL;
            (g, if error.is_finite() { 2.0 * error } else { 0.0 })
        })
        .unzip()
}

/// Logits with an offset of their own per row (up to ±30) and a spread of their own (0.1 to 30),
/// and each row's target: a random class, or (about one row in eight, never row 0) ignored.
pub fn inputs(rng: u64, rows: usize, cols: usize) -> (Vec<f32>, Vec<i64>) {
    let mut random = StdRng::seed_from_u64(rng);
    let mut logits = Vec::with_capacity(rows * cols);
    let mut targets = Vec::with_capacity(rows);
    for r in 0..rows {
        let offset: f32 = random.random_range(-30.0..30.0);
        let spread: f32 = 10f32.powf(random.random_range(-1.0..1.5));
        logits.extend((0..cols).map(|_| offset + spread * random.random_range(-1.0f32..1.0)));
        let ignored = r > 0 && random.random_range(0..8) == 0;
        targets.push(if ignored {
            IGNORE_INDEX
        } else {
            random.random_range(0..cols) as i64
        });
    }
    (logits, targets)
}

/// Single rows and classes, odd widths (rows off 16-byte boundaries), warp and block edges, and a
/// vocabulary.
const EDGE_SHAPES: [[usize; 2]; 12] = [
    [1, 1],
    [3, 2],
    [5, 3],
    [2, 31],
    [9, 33],
    [17, 255],
    [3, 257],
    [8, 1000],
    [33, 7],
    [2, 1025],
    [3, 4099],
    [2, 50_257],
];

/// The vocabularies of the benches: Llama 2's, GPT-2's, Llama 3's and Qwen 2's.
const VOCABULARIES: [usize; 4] = [32_000, 50_257, 128_256, 151_936];

pub(super) fn sizes() -> Sizes {
    Sizes {
        edge: EDGE_SHAPES.iter().map(|&[r, c]| Size([r, c, 1])).collect(),
        large: vec![Size([8192, 50_257, 1]), Size([65_536, 1000, 1])],
        bench: VOCABULARIES
            .iter()
            .map(|&cols| Size([(1 << 28) / cols, cols, 1]))
            .collect(),
        smoke: Size([5, 1000, 1]),
    }
}

/// The plan of a launch over rows × cols logits: `matrices` arrays of `E` of the logits' size (read
/// or written), `per_row` 4-byte arrays of `rows` elements, each with its guard where the device
/// holds it.
pub(super) fn plan<E: HostElement, P: ptxkit::Problem>(
    kernel: &Kernel<P>,
    problem: &P,
    (rows, cols): (usize, usize),
    (matrices, per_row): (u64, u64),
) -> Result<Plan> {
    check_shape(kernel, problem)?;
    let elements = rows as u64 * cols as u64;
    let element = size_of::<E::Bits>() as u64;
    let bytes = element * matrices * elements + 4 * per_row * rows as u64;
    let device = bytes + (element * matrices + 4 * per_row + 4) * GUARD as u64 + 16;
    Ok(Plan {
        work: Work {
            bytes: bytes as f64,
            // A subtraction, a compare and an e^x (about 4 operations) per element.
            flops: 4.0 * elements as f64,
            bound: Bound::Memory,
        },
        x: cols as f64,
        host_bytes: 2 * device,
        device_bytes: device,
    })
}

/// Every row's forward reference.
fn reference_rows(logits: &[f32], targets: &[i64], cols: usize) -> Vec<RowLoss> {
    logits
        .chunks(cols)
        .zip(targets)
        .map(|(row, &target)| reference_row(row, target, IGNORE_INDEX))
        .collect()
}

/// Logits as [`inputs`] makes them, rounded to `E`: their bits, and their values (exact) for the
/// references.
pub(super) fn inputs_of<E: HostElement>(rng: u64, rows: usize, cols: usize) -> (Vec<E::Bits>, Vec<f32>, Vec<i64>) {
    let (logits, targets) = inputs(rng, rows, cols);
    let bits: Vec<E::Bits> = logits.iter().map(|&x| E::bits(x)).collect();
    let values = bits.iter().map(|&b| E::value(b)).collect();
    (bits, values, targets)
}

/// The forward pass's host side over logits of `E`.
pub struct CrossEntropyDemo<E: HostElement> {
    family: &'static Family<CrossEntropy<E>>,
}

/// f32 logits.
pub const CROSS_ENTROPY: CrossEntropyDemo<f32> = CrossEntropyDemo { family: &FAMILY };
/// bf16 logits.
pub const CROSS_ENTROPY_BF16: CrossEntropyDemo<Bf16> = CrossEntropyDemo { family: &BF16_FAMILY };

impl<E: HostElement> FamilyDemo for CrossEntropyDemo<E> {
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
        // The logits; the targets (two words each), losses and statistics (two each).
        plan::<E, _>(
            &self.family.kernels[0],
            &CrossEntropy::<E>::new(rows, cols)?,
            (rows, cols),
            (1, 5),
        )
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let [rows, cols, _] = size.0;
        let problem = CrossEntropy::<E>::new(rows, cols)?;
        let (mut bits, logits, targets) = inputs_of::<E>(substream(rng, 43), rows, cols);
        bits.resize(problem.len() + GUARD, E::NAN);
        let sets = sets.max(1);
        let inputs = (0..sets)
            .map(|_| Buffer::upload(backend, &bits))
            .collect::<Result<Vec<_>>>()?;
        Ok(Box::new(ForwardCase::<E> {
            backend,
            family: self.family,
            problem,
            targets_buffer: Buffer::upload(backend, &targets)?,
            inputs,
            logits,
            targets,
            losses: Outputs::new(backend, rows, GUARD, f32::NAN, sets)?,
            stats: Outputs::new(backend, 2 * rows, GUARD, f32::NAN, sets)?,
            totals: Outputs::new(backend, 2, GUARD, f32::NAN, sets)?,
            tickets: Outputs::from_template(backend, vec![0u32], sets)?,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: if E::LANES == 4 {
                "softmax cross-entropy of each row of rows × cols f32 logits against a target class per row (about one row in eight ignored), and the mean: a block per row, one read, the mean added by the last block"
            } else {
                "softmax cross-entropy of each row of rows × cols bf16 logits (f32 arithmetic and losses) against a target class per row (about one row in eight ignored), and the mean: a block per row, one read, the mean added by the last block"
            },
            default: Size([8192, 50_257, 1]),
            emulator_cap: Size([64, 50_257, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        sizes()
    }
}

struct ForwardCase<'a, E: HostElement> {
    backend: &'a Backend,
    family: &'static Family<CrossEntropy<E>>,
    problem: CrossEntropy<E>,
    targets_buffer: Buffer<i64>,
    /// The logits on the backend, one copy per input set.
    inputs: Vec<Buffer<E::Bits>>,
    /// The logits' values and the targets on the host, for the reference.
    logits: Vec<f32>,
    targets: Vec<i64>,
    losses: Outputs<f32>,
    stats: Outputs<f32>,
    totals: Outputs<f32>,
    tickets: Outputs<u32>,
}

impl<E: HostElement> Case for ForwardCase<'_, E> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        let arrays = ForwardArrays {
            logits: &self.inputs[set],
            targets: &self.targets_buffer,
            losses: self.losses.get_mut(set),
            stats: self.stats.get_mut(set),
            total: Some(Total {
                total: self.totals.get_mut(set),
                ticket: self.tickets.get_mut(set),
                reduction: Reduction::Mean,
            }),
        };
        launch_forward(
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
        self.tickets.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let (rows, cols) = (self.problem.rows as usize, self.problem.cols as usize);
        let losses = self.losses.read(self.backend, set)?;
        let stats = self.stats.read(self.backend, set)?;
        let total = self.totals.read(self.backend, set)?;
        let ticket = self.tickets.read(self.backend, set)?[0];
        let references = reference_rows(&self.logits, &self.targets, cols);
        let summary = check_forward(&references, (&losses[..rows], &stats[..2 * rows]))?;
        let (want, tolerance, count) = reference_total(&references, &self.targets, IGNORE_INDEX, Reduction::Mean);
        if !within(total[0], want, tolerance) || total[1] as f64 != count {
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
        check_guard(&losses, rows)?;
        check_guard(&stats, 2 * rows)?;
        check_guard(&total, 2)?;
        Ok(summary)
    }
}

/// Checks each row's loss and statistics (`stats`: max and ln sum in pairs) against its
/// reference: a summary, or the first row that differs.
pub fn check_forward(references: &[RowLoss], (losses, stats): (&[f32], &[f32])) -> std::result::Result<String, String> {
    let mut worst = 0.0f64;
    for (r, reference) in references.iter().enumerate() {
        let (max, ln_sum) = (stats[2 * r], stats[2 * r + 1]);
        if let Some(want) = reference.max
            && max != want
        {
            return Err(format!("row {r}: maximum {max}, expected {want}"));
        }
        for (what, got, want, tolerance) in [
            ("loss", losses[r], reference.loss, reference.loss_tolerance),
            ("ln sum", ln_sum, reference.ln_sum, reference.ln_sum_tolerance),
        ] {
            if !within(got, want, tolerance) {
                return Err(format!(
                    "row {r}: {what} {got}, expected {want} (within {tolerance:.3e})"
                ));
            }
            if want.is_finite() && tolerance > 0.0 {
                worst = worst.max((got as f64 - want).abs() / tolerance);
            }
        }
    }
    Ok(format!("as the f64 reference, at most {worst:.2} of the tolerance"))
}

/// The logits' gradient's host side over logits (and gradient) of `E`.
pub struct CrossEntropyBackwardDemo<E: HostElement> {
    family: &'static Family<CrossEntropyBackward<E>>,
}

/// f32 logits and gradient.
pub const CROSS_ENTROPY_BACKWARD: CrossEntropyBackwardDemo<f32> = CrossEntropyBackwardDemo {
    family: &BACKWARD_FAMILY,
};
/// bf16 logits and gradient.
pub const CROSS_ENTROPY_BACKWARD_BF16: CrossEntropyBackwardDemo<Bf16> = CrossEntropyBackwardDemo {
    family: &BACKWARD_BF16_FAMILY,
};

impl<E: HostElement> FamilyDemo for CrossEntropyBackwardDemo<E> {
    fn family(&self) -> &'static dyn AnyFamily {
        self.family
    }

    fn extents(&self) -> &'static [&'static str] {
        &["rows", "cols"]
    }

    fn label(&self, size: Size) -> String {
        CROSS_ENTROPY.label(size)
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let [rows, cols, _] = size.0;
        // The logits and their gradient; the targets (two words each) and statistics (two each).
        plan::<E, _>(
            &self.family.kernels[0],
            &CrossEntropyBackward::<E>::new(rows, cols)?,
            (rows, cols),
            (2, 4),
        )
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let [rows, cols, _] = size.0;
        let problem = CrossEntropyBackward::<E>::new(rows, cols)?;
        let (bits, logits, targets) = inputs_of::<E>(substream(rng, 47), rows, cols);
        // The forward pass's statistics as f32 holds them, and the mean's gradient: a loss gradient
        // over the rows counted.
        let stats: Vec<f32> = reference_rows(&logits, &targets, cols)
            .iter()
            .flat_map(RowLoss::stats)
            .collect();
        let grad_loss = StdRng::seed_from_u64(substream(rng, 53)).random_range(0.5f32..2.0);
        let count = targets.iter().filter(|&&t| t != IGNORE_INDEX).count() as f32;
        let upload = |values: &[f32]| Buffer::upload(backend, values);
        Ok(Box::new(BackwardCase::<E> {
            backend,
            family: self.family,
            problem,
            logits_buffer: Buffer::upload(backend, &bits)?,
            inputs: [upload(&stats)?, upload(&[grad_loss])?, upload(&[count])?],
            targets_buffer: Buffer::upload(backend, &targets)?,
            logits,
            targets,
            stats,
            scale: grad_loss as f64 / count as f64,
            outputs: Outputs::new(backend, problem.len(), GUARD, E::NAN, sets.max(1))?,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: if E::LANES == 4 {
                "the gradient of the mean softmax cross-entropy with respect to rows × cols f32 logits, from the forward pass's row maxima and ln sums: a block per row, one read and one write"
            } else {
                "the gradient of the mean softmax cross-entropy with respect to rows × cols bf16 logits, in bf16 (f32 arithmetic), from the forward pass's row maxima and ln sums: a block per row, one read and one write"
            },
            default: Size([8192, 50_257, 1]),
            emulator_cap: Size([64, 50_257, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        sizes()
    }
}

struct BackwardCase<'a, E: HostElement> {
    backend: &'a Backend,
    family: &'static Family<CrossEntropyBackward<E>>,
    problem: CrossEntropyBackward<E>,
    logits_buffer: Buffer<E::Bits>,
    /// The statistics, loss gradient and count on the backend.
    inputs: [Buffer<f32>; 3],
    targets_buffer: Buffer<i64>,
    /// The logits' values and the rest on the host, for the reference; `scale` the gradient
    /// reaching each counted row.
    logits: Vec<f32>,
    targets: Vec<i64>,
    stats: Vec<f32>,
    scale: f64,
    outputs: Outputs<E::Bits>,
}

impl<E: HostElement> Case for BackwardCase<'_, E> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        let [stats, grad_loss, count] = &self.inputs;
        let arrays = BackwardArrays {
            logits: &self.logits_buffer,
            targets: &self.targets_buffer,
            stats,
            grad_loss,
            count: Some(count),
            grad_logits: self.outputs.get_mut(set),
        };
        launch_backward(
            self.backend,
            &self.family.kernels[kernel],
            source,
            &self.problem,
            IGNORE_INDEX,
            arrays,
        )
    }

    fn poison(&mut self) -> Result<()> {
        self.outputs.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let (len, cols) = (self.problem.len(), self.problem.cols as usize);
        let out = self.outputs.read(self.backend, set)?;
        let summary = check_backward_of::<E>(
            (&self.logits, &self.targets, &self.stats),
            &vec![self.scale; self.targets.len()],
            (&out[..len], 1),
            cols,
        )?;
        let values: Vec<f32> = out.iter().map(|&b| E::value(b)).collect();
        check_guard(&values, len)?;
        Ok(summary)
    }
}

/// Checks the gradient `out` of every row against [`reference_backward_row`], `scales[r]` the
/// gradient reaching row r's loss.
pub fn check_backward(
    inputs: (&[f32], &[i64], &[f32]),
    scales: &[f64],
    out: &[f32],
    cols: usize,
) -> std::result::Result<String, String> {
    check_backward_of::<f32>(inputs, scales, (out, 1), cols)
}

/// [`check_backward`] for a gradient of `E` (its bits) rounded to `E` `roundings` times (once as
/// written, once more for each scaling in place), each rounding added to its tolerance.
pub fn check_backward_of<E: HostElement>(
    (logits, targets, stats): (&[f32], &[i64], &[f32]),
    scales: &[f64],
    (out, roundings): (&[E::Bits], u32),
    cols: usize,
) -> std::result::Result<String, String> {
    let mut worst = 0.0f64;
    for (r, row) in logits.chunks(cols).enumerate() {
        let (want, tolerances) = reference_backward_row(
            row,
            targets[r],
            IGNORE_INDEX,
            [stats[2 * r], stats[2 * r + 1]],
            scales[r],
        );
        for (c, (&want, &tolerance)) in want.iter().zip(&tolerances).enumerate() {
            let got = E::value(out[r * cols + c]);
            let tolerance = if E::ROUNDING > 0.0 && want.is_finite() {
                tolerance + 2.0 * roundings as f64 * (E::ROUNDING * want.abs() + E::SMALLEST / 2.0)
            } else {
                tolerance
            };
            if !within(got, want, tolerance) {
                return Err(format!(
                    "row {r}, column {c}: {got}, expected {want} (within {tolerance:.3e})"
                ));
            }
            if want.is_finite() && tolerance > 0.0 {
                worst = worst.max((got as f64 - want).abs() / tolerance);
            }
        }
    }
    Ok(format!("as the f64 reference, at most {worst:.2} of the tolerance"))
}
