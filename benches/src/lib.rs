//! Shared pieces of the kernel benchmarks: GPU time per iteration from CUDA events inside criterion,
//! input sets rotated past the L2, and the results file `cargo xtask bench-report` reads.

use criterion::{Criterion, SamplingMode};
use ptxkit_runtime::{Gpu, time_once};
use std::cell::RefCell;
use std::time::Duration;

/// Input sets for data of `set_bytes`, enough that one pass over them is four times the L2: each
/// iteration then reads memory, not cache. At most 32.
pub fn input_sets(gpu: &Gpu, set_bytes: f64) -> usize {
    let l2 = gpu.info().l2_bytes as f64;
    ((4.0 * l2 / set_bytes).ceil() as usize).clamp(1, 32)
}

/// Runs `launch(iteration)` under criterion as benchmark `group/id`, timing each sample's iterations
/// with CUDA events, and returns the median time of one iteration over all samples, in ms.
/// Flat sampling: every sample has the same iteration count, so a 200 ms case takes 10 iterations,
/// not the 55 of criterion's linear mode.
pub fn time_case(
    criterion: &mut Criterion,
    gpu: &Gpu,
    id: (&str, &str),
    mut launch: impl FnMut(usize) -> ptxkit_runtime::Result<()>,
) -> ptxkit_runtime::Result<f64> {
    measure_case(criterion, id, |iterations| {
        let ms = time_iterations(gpu, iterations as usize, &mut launch)?;
        Ok((ms, vec![ms / iterations as f64]))
    })
}

/// As [`time_case`] for work timed on the host (end-to-end cases): `run` returns its own ms.
pub fn time_host_case(
    criterion: &mut Criterion,
    id: (&str, &str),
    mut run: impl FnMut() -> ptxkit_runtime::Result<f64>,
) -> ptxkit_runtime::Result<f64> {
    measure_case(criterion, id, |iterations| {
        let times = (0..iterations)
            .map(|_| run())
            .collect::<ptxkit_runtime::Result<Vec<f64>>>()?;
        Ok((times.iter().sum(), times))
    })
}

/// Criterion's loop around `sample(iterations)`, which returns the sample's total ms and the
/// per-iteration ms it measured; the median of all of those, or the first error.
fn measure_case(
    criterion: &mut Criterion,
    (group, id): (&str, &str),
    mut sample: impl FnMut(u64) -> ptxkit_runtime::Result<(f64, Vec<f64>)>,
) -> ptxkit_runtime::Result<f64> {
    let per_iteration = RefCell::new(Vec::new());
    let failure = RefCell::new(None);
    let mut group = criterion.benchmark_group(group);
    group.sampling_mode(SamplingMode::Flat);
    group.bench_function(id, |bencher| {
        bencher.iter_custom(|iterations| {
            // After a failure, criterion still asks for samples: answer at once.
            if failure.borrow().is_some() {
                return Duration::from_nanos(1);
            }
            match sample(iterations) {
                Ok((total_ms, times)) => {
                    per_iteration.borrow_mut().extend(times);
                    Duration::from_secs_f64(total_ms / 1e3)
                }
                Err(error) => {
                    *failure.borrow_mut() = Some(error);
                    Duration::from_nanos(1)
                }
            }
        })
    });
    group.finish();
    if let Some(error) = failure.into_inner() {
        return Err(error);
    }
    Ok(median(per_iteration.into_inner()))
}

fn time_iterations(
    gpu: &Gpu,
    iterations: usize,
    launch: &mut impl FnMut(usize) -> ptxkit_runtime::Result<()>,
) -> ptxkit_runtime::Result<f64> {
    time_once(gpu, || (0..iterations).try_for_each(&mut *launch))
}

pub fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_no_values() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(Vec::new()).is_nan());
    }
}
