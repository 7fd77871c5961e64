//! `managed thrashing`: the GPU updates an array, then the CPU reads it, over and over (issue 12,
//! item 2). With plain managed memory every GPU write of a page pulls it to the GPU and every CPU
//! read pulls it back: each phase change pays the page faults and migrations of the whole array
//! (or of the pages read). The cures: prefetch at each phase change (one bulk migration instead of
//! faults); the GPU as preferred location with the CPU's access advised; read-mostly (the CPU
//! only reads); and no managed memory at all (device memory and explicit copies into pinned host
//! memory). Each variant runs with the CPU reading a few elements (16, spread over the array) and
//! all of them. The time per iteration is wall clock: the launch of vec_add writing the array,
//! the moves, and the CPU's read.

use super::Settings;
use super::report::Row;
use crate::backend::Backend;
use crate::error::{Doing, HostError, Result};
use crate::families::{Bound, Work, elementwise};
use crate::gpu::{Gpu, ManagedBuffer, MemoryLocation, Timing};
use cudarc::driver::CudaSlice;
use kernels::elementwise::Elementwise;
use kernels::{Source, vec_add};
use std::time::Instant;

/// Elements the CPU reads in the "few" case, spread evenly (16 pages).
const FEW: usize = 16;
/// Iterations timed, after one untimed.
const ITERATIONS: usize = 10;

/// Why the scenario needs a GPU.
pub const NEEDS_GPU: &str = "thrashing is pages moving between the host and a GPU; the emulator has none";

/// How the array moves between the phases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cure {
    /// Plain managed memory: faults both ways.
    None,
    /// Prefetch to the GPU before the kernel, to the host after it.
    Prefetch,
    /// Preferred location the GPU, accessed by the CPU.
    PreferGpu,
    /// Read-mostly advice.
    ReadMostly,
    /// Device memory, and explicit copies into pinned host memory.
    PinnedCopies,
}

impl Cure {
    const ALL: [Cure; 5] = [
        Cure::None,
        Cure::Prefetch,
        Cure::PreferGpu,
        Cure::ReadMostly,
        Cure::PinnedCopies,
    ];

    fn name(self) -> &'static str {
        match self {
            Cure::None => "managed",
            Cure::Prefetch => "managed, prefetch each phase",
            Cure::PreferGpu => "managed, preferred GPU + accessed by CPU",
            Cure::ReadMostly => "managed, read-mostly",
            Cure::PinnedCopies => "device memory + pinned copies",
        }
    }
}

/// Checks `n` before anything is allocated: a valid vec_add size whose arrays fit on the GPU.
pub fn check(backend: &Backend, n: usize) -> Result<Elementwise> {
    let problem = Elementwise::new(n)?;
    let Backend::Gpu(gpu) = backend else {
        return Err(HostError::NeedsGpu {
            what: "managed thrashing".into(),
            why: NEEDS_GPU,
        });
    };
    // Two device inputs, the managed (or device) output; on the host the pinned copy.
    super::managed::check_memory(gpu, &format!("managed thrashing at n={n}"), 16 * n as u64, 8 * n as u64)?;
    Ok(problem)
}

pub fn run(backend: &Backend, _settings: &Settings, n: usize) -> Result<Vec<Row>> {
    let problem = check(backend, n)?;
    let gpu = backend.gpu().ok_or_else(|| HostError::NeedsGpu {
        what: "managed thrashing".into(),
        why: NEEDS_GPU,
    })?;
    let a = gpu.upload(&vec![1.0f32; n])?;
    let b = gpu.upload(&vec![2.0f32; n])?;
    let mut rows = Vec::new();
    for cure in Cure::ALL {
        for few in [true, false] {
            let (timing, check) = iterate(backend, gpu, &problem, (&a, &b), cure, few)?;
            let read = if few {
                format!("CPU reads {FEW}")
            } else {
                "CPU reads all".into()
            };
            let work = Work {
                bytes: 0.0,
                flops: 0.0,
                bound: Bound::Check,
            };
            let mut row = Row::measured(
                "managed",
                &format!("thrashing: {}", cure.name()),
                &format!("n={n}, {read}"),
                backend,
                timing,
                &work,
            )
            .with_check(check);
            row.end_to_end_ms = row.timing.as_ref().map(|t| t.median_ms);
            rows.push(row);
        }
    }
    Ok(rows)
}

/// The elements the CPU reads in the "few" case: 16 spread over the array.
fn indices(n: usize, few: bool) -> Vec<usize> {
    if few {
        (0..FEW).map(|i| i * n / FEW).collect()
    } else {
        Vec::new()
    }
}

/// What the CPU reads: the elements `at`, or (when `at` is empty) all of them, split over the
/// CPU's cores as a program that reads a whole array would (one core reads about 10 GB/s; the
/// pages' moves, not the reading, are what the scenario measures). Sums what it reads, so that
/// the reads happen, and checks each value is 1 + 2.
fn read(values: &[f32], at: &[usize]) -> std::result::Result<f64, String> {
    let check = |i: usize, v: f32| {
        if v == 3.0 {
            Ok(v as f64)
        } else {
            Err(format!("element {i} is {v}, not 1 + 2"))
        }
    };
    if !at.is_empty() {
        return at
            .iter()
            .map(|&i| check(i, values[i]))
            .sum::<std::result::Result<f64, String>>();
    }
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let chunk = values.len().div_ceil(threads).max(1);
    let sums: Vec<std::result::Result<f64, String>> = std::thread::scope(|scope| {
        let workers: Vec<_> = values
            .chunks(chunk)
            .enumerate()
            .map(|(part, slice)| {
                scope.spawn(move || {
                    slice
                        .iter()
                        .enumerate()
                        .map(|(j, &v)| check(part * chunk + j, v))
                        .sum::<std::result::Result<f64, String>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|_| Err("a reading thread panicked".into())))
            .collect()
    });
    sums.into_iter()
        .sum::<std::result::Result<f64, String>>()
        .map(std::hint::black_box)
}

/// ITERATIONS + 1 rounds of the GPU writing the array and the CPU reading it, the first untimed.
fn iterate(
    backend: &Backend,
    gpu: &Gpu,
    problem: &Elementwise,
    (a, b): (&CudaSlice<f32>, &CudaSlice<f32>),
    cure: Cure,
    few: bool,
) -> Result<(Timing, std::result::Result<String, String>)> {
    let n = problem.n as usize;
    let at = indices(n, few);
    let mut samples = Vec::with_capacity(ITERATIONS);
    let mut outcome = Ok(0.0);
    if cure == Cure::PinnedCopies {
        let mut out: CudaSlice<f32> = gpu.zeros(n)?;
        // SAFETY: written by the copies before it is read; flags 0 = ordinary pinned memory.
        let mut host = unsafe { gpu.context().alloc_pinned_with_flags::<f32>(n, 0) }
            .doing(|| "allocating pinned memory".into())?;
        host.as_mut_slice().doing(|| "mapping pinned memory".into())?.fill(0.0);
        for round in 0..=ITERATIONS {
            let start = Instant::now();
            elementwise::launch(backend, &vec_add::KERNEL, Source::Rust, problem, a, b, &mut out)?;
            if few {
                let values = host.as_mut_slice().doing(|| "mapping pinned memory".into())?;
                for &i in &at {
                    gpu.stream()
                        .memcpy_dtoh(&out.slice(i..i + 1), &mut values[i..i + 1])
                        .doing(|| "copying an element to the host".into())?;
                }
            } else {
                gpu.stream()
                    .memcpy_dtoh(&out, &mut host)
                    .doing(|| "copying the array to the host".into())?;
            }
            gpu.synchronize()?;
            let result = read(host.as_slice().doing(|| "reading pinned memory".into())?, &at);
            if round > 0 {
                samples.push(start.elapsed().as_secs_f64() * 1e3);
            }
            if outcome.is_ok() {
                outcome = result;
            }
        }
    } else {
        let mut out = ManagedBuffer::new(gpu, n, 0.0f32)?;
        match cure {
            Cure::PreferGpu => {
                out.advise_preferred_location(MemoryLocation::Device)?;
                out.advise_accessed_by(MemoryLocation::Host)?;
            }
            Cure::ReadMostly => out.advise_read_mostly()?,
            _ => {}
        }
        for round in 0..=ITERATIONS {
            let start = Instant::now();
            if cure == Cure::Prefetch {
                out.prefetch_to_device(gpu)?;
            }
            elementwise::launch(backend, &vec_add::KERNEL, Source::Rust, problem, a, b, &mut out)?;
            if cure == Cure::Prefetch {
                out.prefetch_to_host(gpu)?;
            }
            let result = read(out.read()?, &at);
            if round > 0 {
                samples.push(start.elapsed().as_secs_f64() * 1e3);
            }
            if outcome.is_ok() {
                outcome = result;
            }
        }
    }
    let check = outcome.map(|_| {
        format!(
            "every element read was 1 + 2 in each of {} rounds; time per round: the kernel writing {} floats, the moves, the CPU's reads",
            ITERATIONS + 1,
            n
        )
    });
    Ok((Timing::from_samples(samples), check))
}
