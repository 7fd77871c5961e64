//! `managed`: the seed's comparison of ways to get data to the GPU and back, on vec_add of n floats.
//! Each repetition starts with the inputs freshly written by the CPU and ends with the CPU reading
//! the whole result once: end-to-end time covers the transfers (explicit or by page migration), the
//! kernel and that read-back; kernel time is CUDA events around the launch alone. The check against
//! the f64 reference comes after the clock stops.

use super::report::Row;
use super::{Backend, Rate, Settings, check_against, random_inputs};
use crate::error::{Doing, HostError, Result};
use crate::gpu::{self, Gpu, ManagedBuffer, Timing, time_once};
use kernels::reference::{self, Expected};
use std::time::Instant;

pub const DEFAULT_N: usize = 1 << 26;

/// Repetitions of each scenario (each moves every page at least twice).
const REPETITIONS: usize = 5;

/// How the data gets to the GPU and back.
#[derive(Clone, Copy, Debug)]
pub enum Scenario {
    PageableCopies,
    PinnedCopies,
    ManagedOnDemand,
    ManagedPrefetched,
    ManagedReadMostly,
}

impl Scenario {
    pub const ALL: [Scenario; 5] = [
        Scenario::PageableCopies,
        Scenario::PinnedCopies,
        Scenario::ManagedOnDemand,
        Scenario::ManagedPrefetched,
        Scenario::ManagedReadMostly,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::PageableCopies => "pageable copies",
            Scenario::PinnedCopies => "pinned copies",
            Scenario::ManagedOnDemand => "managed, no prefetch",
            Scenario::ManagedPrefetched => "managed, prefetch",
            Scenario::ManagedReadMostly => "managed, read-mostly",
        }
    }
}

/// One repetition: end to end and kernel alone, in ms.
pub struct Sample {
    pub end_to_end_ms: f64,
    pub kernel_ms: f64,
}

pub fn run(backend: &Backend, settings: &Settings, n: usize) -> Result<Vec<Row>> {
    let Backend::Gpu(gpu) = backend else {
        eprintln!("note: managed: unified memory needs a GPU; skipped on the emulator");
        return Ok(Vec::new());
    };
    let a = random_inputs(settings.seed + 6, n);
    let b = random_inputs(settings.seed + 7, n);
    let expected = reference::vec_add(&a, &b);
    let mut rows = Vec::new();
    for scenario in Scenario::ALL {
        let mut samples = Vec::with_capacity(REPETITIONS);
        let mut check = Ok(String::new());
        // The first repetition is the warm-up (module load, pool growth, first-touch mappings).
        for repetition in 0..=REPETITIONS {
            let (sample, outcome) = run_once(gpu, scenario, &a, &b, &expected)?;
            if repetition > 0 {
                samples.push(sample);
            }
            // The first failure is kept; otherwise the last success.
            if check.is_ok() {
                check = outcome;
            }
        }
        let end_to_end = Timing::from_samples(samples.iter().map(|s| s.end_to_end_ms).collect());
        let kernel = Timing::from_samples(samples.iter().map(|s| s.kernel_ms).collect());
        let mut row = Row::new(
            "managed",
            scenario.name(),
            format!("n={n}"),
            "gpu",
            end_to_end,
            Rate::Bytes(12.0 * n as f64),
        )
        .with_check(check.map(|detail| format!("CPU read-back: {detail}")));
        row.kernel_ms = Some(kernel.median_ms);
        row.end_to_end_ms = Some(end_to_end.median_ms);
        rows.push(row);
    }
    Ok(rows)
}

/// One repetition of `scenario` on vec_add of `a` and `b`: the sample, and the check of what the CPU
/// read back against `expected`.
pub fn run_once(
    gpu: &Gpu,
    scenario: Scenario,
    a: &[f32],
    b: &[f32],
    expected: &Expected,
) -> Result<(Sample, std::result::Result<String, String>)> {
    match scenario {
        Scenario::PageableCopies => explicit_copies(gpu, a.to_vec(), b.to_vec(), vec![f32::NAN; a.len()], expected),
        Scenario::PinnedCopies => {
            let pinned = |values: &[f32]| -> Result<cudarc::driver::PinnedHostSlice<f32>> {
                // SAFETY: filled right away; flags 0 = ordinary (cached) pinned memory.
                let mut slice = unsafe { gpu.context().alloc_pinned_with_flags::<f32>(values.len(), 0) }
                    .doing(|| format!("allocating {} pinned floats", values.len()))?;
                slice
                    .as_mut_slice()
                    .doing(|| "mapping pinned memory".into())?
                    .copy_from_slice(values);
                Ok(slice)
            };
            explicit_copies(gpu, pinned(a)?, pinned(b)?, pinned(&vec![f32::NAN; a.len()])?, expected)
        }
        Scenario::ManagedOnDemand | Scenario::ManagedPrefetched | Scenario::ManagedReadMostly => {
            managed(gpu, scenario, a, b, expected)
        }
    }
}

/// Host memory of either kind that the explicit-copy scenarios copy from and to.
trait HostArray {
    fn slice(&self) -> Result<&[f32]>;
}

impl HostArray for Vec<f32> {
    fn slice(&self) -> Result<&[f32]> {
        Ok(self)
    }
}

impl HostArray for cudarc::driver::PinnedHostSlice<f32> {
    fn slice(&self) -> Result<&[f32]> {
        self.as_slice().doing(|| "reading pinned memory".into())
    }
}

fn explicit_copies<H>(
    gpu: &Gpu,
    a: H,
    b: H,
    mut out: H,
    expected: &Expected,
) -> Result<(Sample, std::result::Result<String, String>)>
where
    H: HostArray + cudarc::driver::HostSlice<f32>,
{
    let n = expected.values.len();
    let stream = gpu.stream();
    let (mut a_dev, mut b_dev, mut out_dev) = (gpu.zeros::<f32>(n)?, gpu.zeros::<f32>(n)?, gpu.zeros::<f32>(n)?);
    gpu.synchronize()?;
    let start = Instant::now();
    stream
        .memcpy_htod(&a, &mut a_dev)
        .doing(|| "copying A to the GPU".into())?;
    stream
        .memcpy_htod(&b, &mut b_dev)
        .doing(|| "copying B to the GPU".into())?;
    let kernel_ms = time_once(gpu, || gpu::vec_add(gpu, &a_dev, &b_dev, &mut out_dev, n))?;
    stream
        .memcpy_dtoh(&out_dev, &mut out)
        .doing(|| "copying the result to the host".into())?;
    gpu.synchronize()?;
    read_back(out.slice()?);
    let end_to_end_ms = start.elapsed().as_secs_f64() * 1e3;
    let check = check_against(out.slice()?, expected);
    Ok((
        Sample {
            end_to_end_ms,
            kernel_ms,
        },
        check,
    ))
}

fn managed(
    gpu: &Gpu,
    scenario: Scenario,
    a: &[f32],
    b: &[f32],
    expected: &Expected,
) -> Result<(Sample, std::result::Result<String, String>)> {
    let n = a.len();
    let mut a_managed = ManagedBuffer::new(gpu, n, 0.0f32)?;
    let mut b_managed = ManagedBuffer::new(gpu, n, 0.0f32)?;
    let mut out = ManagedBuffer::new(gpu, n, f32::NAN)?;
    // The CPU writes the inputs: their pages start on the host, as in a real producer.
    a_managed.write()?.copy_from_slice(a);
    b_managed.write()?.copy_from_slice(b);
    if matches!(scenario, Scenario::ManagedReadMostly) {
        a_managed.advise_read_mostly()?;
        b_managed.advise_read_mostly()?;
    }
    let prefetch = !matches!(scenario, Scenario::ManagedOnDemand);
    let start = Instant::now();
    if prefetch {
        for buffer in [&a_managed, &b_managed, &out] {
            buffer.prefetch_to_device(gpu)?;
        }
    }
    let kernel_ms = time_once(gpu, || gpu::vec_add(gpu, &a_managed, &b_managed, &mut out, n))?;
    if prefetch {
        out.prefetch_to_host(gpu)?;
    }
    read_back(out.read()?);
    let end_to_end_ms = start.elapsed().as_secs_f64() * 1e3;
    let check = check_against(out.as_slice()?, expected);
    if out.is_busy() {
        return Err(HostError::ManagedBusy);
    }
    Ok((
        Sample {
            end_to_end_ms,
            kernel_ms,
        },
        check,
    ))
}

/// The CPU consuming the result: one pass over every element, as a reader of the output would make.
/// For managed memory this is where pages fault back to the host unless they were prefetched.
fn read_back(values: &[f32]) -> f32 {
    std::hint::black_box(values.iter().sum())
}
