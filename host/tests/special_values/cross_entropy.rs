//! Softmax cross-entropy, forward and backward (f32 and bf16 logits), on the rows models hand it
//! besides random ones:
//! every special value alone in a row (as the target's logit and beside it), masked classes (−∞),
//! a row of −∞ alone, the largest value several times with huge ones beside it, a row far from 0,
//! ignored rows holding NaN, targets out of range, and the three reductions.

use crate::prelude::*;
use kernels::cross_entropy::{
    BACKWARD_BF16_FAMILY, BACKWARD_FAMILY, BF16_FAMILY, CrossEntropy, CrossEntropyBackward, FAMILY, IGNORE_INDEX,
    Reduction,
};
use kernels_host::families::cross_entropy::{
    self, BackwardArrays, ForwardArrays, RowLoss, Total, check_backward_of, check_forward, reference_row,
    reference_total,
};
use kernels_host::families::element::HostElement;
use kernels_host::families::norm::within;
use ptxkit::Family;
use ptxkit::device::mma::Bf16;

/// The rows of one width: logits and targets.
fn rows_of(rng: &mut StdRng, cols: usize) -> (Vec<f32>, Vec<i64>) {
    let random = |rng: &mut StdRng| -> Vec<f32> { (0..cols).map(|_| rng.random_range(-8.0f32..8.0)).collect() };
    let (mut logits, mut targets) = (Vec::new(), Vec::new());
    let mut push = |row: Vec<f32>, target: usize| {
        logits.extend(row);
        targets.push(target as i64);
    };
    for special in SPECIAL_VALUES {
        let at = rng.random_range(0..cols);
        let mut row = random(rng);
        row[at] = special;
        // The special value as the target's logit, and (where there is another class) beside it.
        push(row.clone(), at);
        push(row, (at + 1) % cols);
    }
    // Half the classes masked: the target among the others, then a masked one (an infinite loss).
    let mut row = random(rng);
    let masked: Vec<usize> = (0..cols).filter(|c| c % 2 == 1).collect();
    masked.iter().for_each(|&c| row[c] = f32::NEG_INFINITY);
    push(row.clone(), 0);
    if let Some(&c) = masked.first() {
        push(row, c);
    }
    // Every class masked: NaN, as PyTorch's.
    push(vec![f32::NEG_INFINITY; cols], cols / 2);
    // Huge magnitudes of both signs mixed in.
    let mut row = random(rng);
    mix_in(rng, &mut row, 3, &[f32::MAX, f32::MIN, 3.0e38, -1.0e38]);
    push(row, rng.random_range(0..cols));
    // The largest value held by several classes, the target one of them: a loss of ln(count) that
    // max + ln Σ would round away (so would the gradient's e^(x − that)); then a row far from 0.
    let mut row = random(rng);
    mix_in(rng, &mut row, 2, &[f32::MIN, 3.0e38, -1.0e38]);
    (0..cols).step_by(3).for_each(|c| row[c] = f32::MAX);
    push(row, (cols - 1) / 3 * 3);
    let offset = rng.random_range(1.0e6f32..1.0e7);
    push(
        random(rng).iter().map(|x| offset + x).collect(),
        rng.random_range(0..cols),
    );
    // An ignored row holding a NaN, and targets outside 0..cols that are not ignored (one that would
    // be class 1 if cut to 32 bits).
    let mut row = random(rng);
    row[cols - 1] = f32::NAN;
    logits.extend(row);
    targets.push(IGNORE_INDEX);
    for target in [cols as i64, -1, (1 << 32) + 1] {
        logits.extend(random(rng));
        targets.push(target);
    }
    (logits, targets)
}

/// Every forward and backward kernel that runs on `backend`, on [`rows_of`] each width, over f32
/// logits and over the same rounded to bf16; the forward pass with the mean, the sum and no total;
/// the backward pass with one loss gradient (and the mean's count) and with one per row.
pub(crate) fn cross_entropy_meets_special_values(backend: &Backend) {
    let stream = rng_stream();
    let mut failures = Vec::new();
    for cols in [1, 2, 33, 257, 1000, 4099] {
        check_width::<f32>(backend, (stream, cols), (&FAMILY, &BACKWARD_FAMILY), &mut failures);
        check_width::<Bf16>(
            backend,
            (stream, cols),
            (&BF16_FAMILY, &BACKWARD_BF16_FAMILY),
            &mut failures,
        );
    }
    assert_none_failed(&failures, stream);
}

/// [`cross_entropy_meets_special_values`] at one width over logits of `E`.
fn check_width<E: HostElement>(
    backend: &Backend,
    (stream, cols): (u64, usize),
    (forward, backward): (&Family<CrossEntropy<E>>, &Family<CrossEntropyBackward<E>>),
    failures: &mut Vec<String>,
) {
    let mut rng = StdRng::seed_from_u64(stream ^ cols as u64);
    let (logits, targets) = rows_of(&mut rng, cols);
    // The logits as E holds them: their bits for the kernels, their values for the references.
    let bits: Vec<E::Bits> = logits.iter().map(|&x| E::bits(x)).collect();
    let logits: Vec<f32> = bits.iter().map(|&b| E::value(b)).collect();
    let rows = targets.len();
    let references: Vec<RowLoss> = logits
        .chunks(cols)
        .zip(&targets)
        .map(|(row, &t)| reference_row(row, t, IGNORE_INDEX))
        .collect();
    let upload = |values: &[f32]| Buffer::upload(backend, values).unwrap();
    let (logits_buffer, targets_buffer) = (
        Buffer::upload(backend, &bits).unwrap(),
        Buffer::upload(backend, &targets).unwrap(),
    );
    let problem = CrossEntropy::<E>::new(rows, cols).unwrap();
    for kernel in forward.kernels {
        if !runs_here(backend, &kernel.info(forward.name), Source::Rust) {
            continue;
        }
        for reduction in [Some(Reduction::Mean), Some(Reduction::Sum), None] {
            let label = format!("{} at {rows}x{cols}, {reduction:?}", kernel.entry());
            let (mut losses, mut stats, mut total) = (
                upload(&vec![f32::NAN; rows]),
                upload(&vec![f32::NAN; 2 * rows]),
                upload(&[f32::NAN; 2]),
            );
            let mut ticket = Buffer::upload(backend, &[0u32]).unwrap();
            let arrays = ForwardArrays {
                logits: &logits_buffer,
                targets: &targets_buffer,
                losses: &mut losses,
                stats: &mut stats,
                total: reduction.map(|reduction| Total {
                    total: &mut total,
                    ticket: &mut ticket,
                    reduction,
                }),
            };
            if let Err(e) = cross_entropy::launch_forward(backend, kernel, Source::Rust, &problem, IGNORE_INDEX, arrays)
            {
                failures.push(format!("{label}: {e}"));
                continue;
            }
            let (losses, stats, total) = (
                losses.read(backend).unwrap(),
                stats.read(backend).unwrap(),
                total.read(backend).unwrap(),
            );
            if let Err(e) = check_forward(&references, (&losses, &stats)) {
                failures.push(format!("{label}: {e}"));
            }
            match reduction {
                Some(reduction) => {
                    let (want, tolerance, count) = reference_total(&references, &targets, IGNORE_INDEX, reduction);
                    if !within(total[0], want, tolerance) || total[1] as f64 != count {
                        failures.push(format!("{label}: total {total:?}, expected {want} over {count}"));
                    }
                }
                None if !total.iter().all(|t| t.is_nan()) => {
                    failures.push(format!("{label}: wrote a total {total:?} that was not asked for"));
                }
                None => {}
            }
        }
    }
    // The backward pass from the statistics as f32 holds them.
    let stats: Vec<f32> = references.iter().flat_map(RowLoss::stats).collect();
    let count = targets.iter().filter(|&&t| t != IGNORE_INDEX).count() as f32;
    let per_row: Vec<f32> = (0..rows).map(|_| rng.random_range(-2.0f32..2.0)).collect();
    let problem = CrossEntropyBackward::<E>::new(rows, cols).unwrap();
    for kernel in backward.kernels {
        if !runs_here(backend, &kernel.info(backward.name), Source::Rust) {
            continue;
        }
        for (grad_loss, counted) in [(vec![1.5f32], true), (per_row.clone(), false)] {
            let label = format!(
                "{} at {rows}x{cols}, {} loss gradients",
                kernel.entry(),
                grad_loss.len()
            );
            let scales: Vec<f64> = (0..rows)
                .map(|r| {
                    let g = grad_loss[if grad_loss.len() == 1 { 0 } else { r }] as f64;
                    if counted { g / count as f64 } else { g }
                })
                .collect();
            let (stats_buffer, grad_loss_buffer, count_buffer) = (upload(&stats), upload(&grad_loss), upload(&[count]));
            let mut grad = Buffer::upload(backend, &vec![E::NAN; logits.len()]).unwrap();
            let arrays = BackwardArrays {
                logits: &logits_buffer,
                targets: &targets_buffer,
                stats: &stats_buffer,
                grad_loss: &grad_loss_buffer,
                count: counted.then_some(&count_buffer),
                grad_logits: &mut grad,
            };
            if let Err(e) =
                cross_entropy::launch_backward(backend, kernel, Source::Rust, &problem, IGNORE_INDEX, arrays)
            {
                failures.push(format!("{label}: {e}"));
                continue;
            }
            let got = grad.read(backend).unwrap();
            if let Err(e) = check_backward_of::<E>((&logits, &targets, &stats), &scales, (&got, 1), cols) {
                failures.push(format!("{label}: {e}"));
            }
        }
    }
}

/// The training path on [`rows_of`] each width, past the rows a block holds on chip too: the
/// count, then the fused pass with the mean, the sum and no total (its loss and statistics as
/// the forward pass's, its gradient from the statistics it wrote, for a loss gradient of 1), then
/// the gradient scaled in place by one loss gradient and by one per row.
pub(crate) fn cross_entropy_fused_meets_special_values(backend: &Backend) {
    use kernels::cross_entropy::{FUSED_BF16_FAMILY, FUSED_FAMILY, SCALE_BF16_FAMILY, SCALE_FAMILY};
    if !runs_here(backend, &FUSED_FAMILY.kernels[0].info(FUSED_FAMILY.name), Source::Rust) {
        return;
    }
    let stream = rng_stream();
    let mut failures = Vec::new();
    for cols in [1, 33, 4099, 24_581, 65_539, 114_697] {
        check_fused_width::<f32>(backend, (stream, cols), (&FUSED_FAMILY, &SCALE_FAMILY), &mut failures);
        check_fused_width::<Bf16>(
            backend,
            (stream, cols),
            (&FUSED_BF16_FAMILY, &SCALE_BF16_FAMILY),
            &mut failures,
        );
    }
    assert_none_failed(&failures, stream);
}

/// [`cross_entropy_fused_meets_special_values`] at one width over logits (and gradient) of `E`.
fn check_fused_width<E: HostElement>(
    backend: &Backend,
    (stream, cols): (u64, usize),
    (fused_family, scale_family): (
        &Family<kernels::cross_entropy::CrossEntropyFused<E>>,
        &Family<kernels::cross_entropy::CrossEntropyScale<E>>,
    ),
    failures: &mut Vec<String>,
) {
    use kernels::cross_entropy::{COUNT_FAMILY, CrossEntropyCount, CrossEntropyFused, CrossEntropyScale, fused};
    use kernels_host::families::cross_entropy::{Walk, reference_row_by, reference_total_by};
    use kernels_host::families::cross_entropy_fused::{FusedArrays, launch_count, launch_fused, launch_scale};
    let mut rng = StdRng::seed_from_u64(stream ^ cols as u64 ^ 0xf0);
    let (logits, targets) = rows_of(&mut rng, cols);
    let bits: Vec<E::Bits> = logits.iter().map(|&x| E::bits(x)).collect();
    let logits: Vec<f32> = bits.iter().map(|&b| E::value(b)).collect();
    let rows = targets.len();
    let references: Vec<RowLoss> = logits
        .chunks(cols)
        .zip(&targets)
        .map(|(row, &t)| reference_row_by(row, t, IGNORE_INDEX, Walk::fused::<E>()))
        .collect();
    let upload = |values: &[f32]| Buffer::upload(backend, values).unwrap();
    let (logits_buffer, targets_buffer) = (
        Buffer::upload(backend, &bits).unwrap(),
        Buffer::upload(backend, &targets).unwrap(),
    );
    let mut count_buffer = upload(&[f32::NAN]);
    let counted = launch_count(
        backend,
        &COUNT_FAMILY.kernels[0],
        Source::Rust,
        &CrossEntropyCount::new(rows).unwrap(),
        IGNORE_INDEX,
        (&targets_buffer, &mut count_buffer),
    );
    let count = targets.iter().filter(|&&t| t != IGNORE_INDEX).count() as f32;
    match counted.map(|()| count_buffer.read(backend).unwrap()[0]) {
        Ok(got) if got == count => {}
        outcome => failures.push(format!("cross_entropy_count at {rows}: {outcome:?}, expected {count}")),
    }
    let problem = CrossEntropyFused::<E>::new(rows, cols).unwrap();
    // Every kernel of the family: they differ in how blocks take rows, not in what they write.
    for kernel in fused_family.kernels {
        for reduction in [Some(Reduction::Mean), Some(Reduction::Sum), None] {
            let label = format!("{} at {rows}x{cols}, {reduction:?}", kernel.entry());
            let (mut losses, mut stats, mut total) = (
                upload(&vec![f32::NAN; rows]),
                upload(&vec![f32::NAN; 2 * rows]),
                upload(&[f32::NAN; 2]),
            );
            let mut grad = Buffer::upload(backend, &vec![E::NAN; logits.len()]).unwrap();
            let mut ticket = Buffer::upload(backend, &[0u32]).unwrap();
            let arrays = FusedArrays {
                logits: &logits_buffer,
                targets: &targets_buffer,
                count: Some(&count_buffer),
                losses: &mut losses,
                stats: &mut stats,
                total: reduction.map(|reduction| Total {
                    total: &mut total,
                    ticket: &mut ticket,
                    reduction,
                }),
                grad_logits: &mut grad,
            };
            if let Err(e) = launch_fused(backend, kernel, Source::Rust, &problem, IGNORE_INDEX, arrays) {
                failures.push(format!("{label}: {e}"));
                continue;
            }
            let (losses, stats, total) = (
                losses.read(backend).unwrap(),
                stats.read(backend).unwrap(),
                total.read(backend).unwrap(),
            );
            if let Err(e) = check_forward(&references, (&losses, &stats)) {
                failures.push(format!("{label}: {e}"));
            }
            if let Some(reduction) = reduction {
                let threads = fused::THREADS as usize;
                let (want, tolerance, count) =
                    reference_total_by(&references, &targets, IGNORE_INDEX, reduction, threads);
                if !within(total[0], want, tolerance) || total[1] as f64 != count {
                    failures.push(format!("{label}: total {total:?}, expected {want} over {count}"));
                }
            }
            let unit = if reduction == Some(Reduction::Mean) {
                1.0 / count as f64
            } else {
                1.0
            };
            if let Err(e) = check_backward_of::<E>(
                (&logits, &targets, &stats),
                &vec![unit; rows],
                (&grad.read(backend).unwrap(), 1),
                cols,
            ) {
                failures.push(format!("{label}, the gradient: {e}"));
            }
            if reduction != Some(Reduction::Mean) {
                continue;
            }
            // The mean's gradient times a loss gradient of its own, then one per row (some 1): in bf16
            // each product rounded again.
            let per_row: Vec<f32> = (0..rows)
                .map(|r| {
                    if r % 3 == 0 {
                        1.0
                    } else {
                        rng.random_range(-2.0f32..2.0)
                    }
                })
                .collect();
            let scale_problem = CrossEntropyScale::<E>::new(rows, cols).unwrap();
            let scale_kernel = &scale_family.kernels[0];
            let mut factors = vec![unit; rows];
            for (scalings, grad_loss) in [(1, vec![1.5f32]), (2, per_row)] {
                let scaled = launch_scale(
                    backend,
                    scale_kernel,
                    Source::Rust,
                    &scale_problem,
                    IGNORE_INDEX,
                    (&targets_buffer, &upload(&grad_loss), &mut grad),
                );
                if let Err(e) = scaled {
                    failures.push(format!("{} at {rows}x{cols}: {e}", scale_kernel.entry()));
                    break;
                }
                for (r, factor) in factors.iter_mut().enumerate() {
                    *factor *= grad_loss[if grad_loss.len() == 1 { 0 } else { r }] as f64;
                }
                let got = grad.read(backend).unwrap();
                if let Err(e) =
                    check_backward_of::<E>((&logits, &targets, &stats), &factors, (&got, 1 + scalings), cols)
                {
                    failures.push(format!(
                        "{} at {rows}x{cols}, {} loss gradients: {e}",
                        scale_kernel.entry(),
                        grad_loss.len()
                    ));
                }
            }
        }
    }
}
