//! GPU time from CUDA events: warm-up, then the median of repeated runs.

use super::Gpu;
use crate::error::{Doing, Result};
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

/// Runs `work` `warmup` times, then `runs` times between two events each, on the GPU's stream.
pub fn time_gpu(gpu: &Gpu, warmup: usize, runs: usize, mut work: impl FnMut() -> Result<()>) -> Result<Timing> {
    for _ in 0..warmup {
        work()?;
    }
    gpu.synchronize()?;
    let mut pairs = Vec::with_capacity(runs.max(1));
    for _ in 0..runs.max(1) {
        pairs.push(record_around(gpu, &mut work)?);
    }
    gpu.synchronize()?;
    let samples = pairs
        .iter()
        .map(|(start, end)| elapsed_ms(start, end))
        .collect::<Result<Vec<f64>>>()?;
    Ok(Timing::from_samples(samples))
}

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
