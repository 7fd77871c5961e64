//! Ceilings measured in the same run as the kernels they bound.

use super::report::Ceiling;
use ptxkit_runtime::{Doing, Result};
use ptxkit_runtime::{Gpu, time_gpu};

/// Bytes copied for the bandwidth ceiling: large against the 60 MB L2 of an H200.
const COPY_BYTES: usize = 1 << 30;

/// Device-to-device copy bandwidth, counting bytes read plus bytes written. Measured once per
/// process (one GPU per process) and shared by every demo of the run.
pub fn copy_bandwidth(gpu: &Gpu, warmup: usize, runs: usize) -> Result<Ceiling> {
    static MEASURED: std::sync::OnceLock<Ceiling> = std::sync::OnceLock::new();
    if let Some(ceiling) = MEASURED.get() {
        return Ok(ceiling.clone());
    }
    let ceiling = measure_copy(gpu, warmup, runs)?;
    Ok(MEASURED.get_or_init(|| ceiling).clone())
}

fn measure_copy(gpu: &Gpu, warmup: usize, runs: usize) -> Result<Ceiling> {
    let source = gpu.zeros::<u8>(COPY_BYTES)?;
    let mut destination = gpu.zeros::<u8>(COPY_BYTES)?;
    let timing = time_gpu(gpu, warmup, runs, || {
        gpu.stream()
            .memcpy_dtod(&source, &mut destination)
            .doing(|| "copying device to device".into())
    })?;
    Ok(Ceiling {
        name: "device-to-device copy (read + write), GB/s".into(),
        rate: 2.0 * COPY_BYTES as f64 / (timing.median_ms * 1e-3) / 1e9,
    })
}
