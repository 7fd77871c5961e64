//! GPU time from CUDA events: warm-up, then the median of repeated runs.

use crate::error::{Doing, Result};
use crate::gpu::Gpu;
use cudarc::driver::CudaEvent;
use cudarc::driver::sys::CUevent_flags;

/// Milliseconds per run over the timed repetitions.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Timing {
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub runs: usize,
}

impl Timing {
    /// From individual run times (at least one).
    pub fn from_samples(mut samples: Vec<f64>) -> Timing {
        assert!(!samples.is_empty(), "timing needs at least one run");
        samples.sort_by(f64::total_cmp);
        let mid = samples.len() / 2;
        let median_ms = if samples.len() % 2 == 1 {
            samples[mid]
        } else {
            (samples[mid - 1] + samples[mid]) / 2.0
        };
        Timing {
            median_ms,
            min_ms: samples[0],
            max_ms: samples[samples.len() - 1],
            runs: samples.len(),
        }
    }
}

/// GPU time a warm-up spends at least, whatever the run count asked for: long enough for the
/// clocks to settle after the host-bound work (uploads, poisoning) that comes before a measurement.
/// Measured on the H200: with 3 warm-up runs of a 0.25 ms kernel, the first kernel timed in a
/// process ran 6 % slow; with 50 ms of warm-up, within 0.5 % of later ones (perf log).
pub const MIN_WARMUP_MS: f64 = 50.0;

/// Runs `work` `warmup` times (and on until [`MIN_WARMUP_MS`] of GPU time; none at all when
/// `warmup` is 0), then `runs` times between two events each, on the GPU's stream.
pub fn time_gpu(gpu: &Gpu, warmup: usize, runs: usize, mut work: impl FnMut() -> Result<()>) -> Result<Timing> {
    let mut timings = time_gpu_interleaved(gpu, warmup, runs, 1, |_| work())?;
    Ok(timings.remove(0))
}

/// Times `variants` pieces of work against each other: warms all of them up as [`time_gpu`] does,
/// then runs them round-robin (`work(0)`, `work(1)`, …, `runs` times over), each between two events,
/// so that a drift of the clocks during the measurement touches every variant alike.
pub fn time_gpu_interleaved(
    gpu: &Gpu,
    warmup: usize,
    runs: usize,
    variants: usize,
    mut work: impl FnMut(usize) -> Result<()>,
) -> Result<Vec<Timing>> {
    if warmup > 0 {
        let mut round = |count: usize| {
            time_once(gpu, || {
                (0..count).try_for_each(|_| (0..variants).try_for_each(&mut work))
            })
        };
        let mut warm_ms = round(warmup)?;
        let mut rounds = warmup;
        // Rounds until the minimum warm-up time, in batches sized from the time per round so far.
        while warm_ms < MIN_WARMUP_MS && rounds < MAX_WARMUP_ROUNDS {
            let per_round = (warm_ms / rounds as f64).max(1e-3);
            let batch = (((MIN_WARMUP_MS - warm_ms) / per_round).ceil() as usize).clamp(1, MAX_WARMUP_ROUNDS - rounds);
            warm_ms += round(batch)?;
            rounds += batch;
        }
    }
    gpu.synchronize()?;
    let mut pairs: Vec<Vec<(CudaEvent, CudaEvent)>> = (0..variants).map(|_| Vec::with_capacity(runs)).collect();
    for _ in 0..runs.max(1) {
        for (variant, events) in pairs.iter_mut().enumerate() {
            events.push(record_around(gpu, &mut || work(variant))?);
        }
    }
    gpu.synchronize()?;
    pairs
        .iter()
        .map(|events| {
            let samples = events
                .iter()
                .map(|(start, end)| elapsed_ms(start, end))
                .collect::<Result<Vec<f64>>>()?;
            Ok(Timing::from_samples(samples))
        })
        .collect()
}

/// Warm-up rounds at most, however short the work: a bound on the time a tiny kernel warms up.
const MAX_WARMUP_ROUNDS: usize = 100_000;

/// GPU time of the work `work` puts on the stream, in ms; waits for it.
pub fn time_once(gpu: &Gpu, mut work: impl FnMut() -> Result<()>) -> Result<f64> {
    let (start, end) = record_around(gpu, &mut work)?;
    elapsed_ms(&start, &end)
}

/// Events recorded on the GPU's stream before and after the work `work` enqueues.
fn record_around(gpu: &Gpu, work: &mut impl FnMut() -> Result<()>) -> Result<(CudaEvent, CudaEvent)> {
    let event = || {
        gpu.context()
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .doing(|| "creating an event".into())
    };
    let (start, end) = (event()?, event()?);
    start.record(gpu.stream()).doing(|| "recording an event".into())?;
    work()?;
    end.record(gpu.stream()).doing(|| "recording an event".into())?;
    Ok((start, end))
}

fn elapsed_ms(start: &CudaEvent, end: &CudaEvent) -> Result<f64> {
    start
        .elapsed_ms(end)
        .map(f64::from)
        .doing(|| "reading event times".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_sample_counts() {
        let odd = Timing::from_samples(vec![3.0, 1.0, 2.0]);
        assert_eq!((odd.median_ms, odd.min_ms, odd.max_ms, odd.runs), (2.0, 1.0, 3.0, 3));
        assert_eq!(Timing::from_samples(vec![4.0, 1.0, 2.0, 3.0]).median_ms, 2.5);
    }
}
