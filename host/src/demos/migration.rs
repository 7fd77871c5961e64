//! `managed migration`: how fast pages move between the host and the GPU, measured (issue 12,
//! item 1). For sizes from 2 MiB up, doubling: pinned and pageable `cudaMemcpy` each way, and
//! managed memory moved by `cuMemPrefetchAsync` each way, rated against the pinned copy of the same
//! size and direction. At one size (1 GiB, or the largest): a kernel reading pages that sit on the
//! host (each first touch a GPU page fault and a migration) against the same kernel on prefetched
//! pages, and the cost per page that difference gives; and first touch, on the GPU (pages created
//! where they are used) against on the CPU. Every time is CUDA events on the GPU's stream, except
//! the CPU's own writes (wall clock).

use super::Settings;
use super::report::{Ceiling, Row};
use cudarc::driver::{CudaSlice, PinnedHostSlice};
use kernels::elementwise::Elementwise;
use kernels::{Source, vec_add};
use kernels_host::families::{Bound, Work, elementwise};
use ptxkit_runtime::Backend;
use ptxkit_runtime::{Doing, Error, Result};
use ptxkit_runtime::{Gpu, ManagedBuffer, MemoryLocation, Timing, time_once};
use std::time::Instant;

/// The smallest size: one 2 MiB page of the GPU's large pages.
const MIN_BYTES: u64 = 2 << 20;
/// The largest size measured unless `--max-mib` says otherwise: 16 GiB.
pub const DEFAULT_MAX_MIB: u64 = 16 << 10;
/// The size of the page-fault and first-touch measurements, at most.
const FAULT_BYTES: u64 = 1 << 30;
/// From this size on, at most three timed runs: a pageable copy of 16 GiB takes seconds.
const LARGE_BYTES: u64 = 1 << 30;
/// The CPU's page size, by which the fault cost is counted.
const HOST_PAGE: u64 = 4 << 10;

/// Why the migration scenario needs a GPU.
pub const NEEDS_GPU: &str = "page migration is between the host and a GPU; the emulator has none";

/// The largest `--max-mib` taken: 1 TiB, beyond any GPU's memory (what is measured is capped by
/// the GPU's and the host's free memory in any case).
pub const MAX_MIB: u64 = 1 << 20;

/// `--max-mib`'s range, checked before any device is opened.
pub fn check_flag(max_mib: u64) -> Result<()> {
    if !(MIN_BYTES >> 20..=MAX_MIB).contains(&max_mib) {
        return Err(Error::InvalidInput {
            what: format!("--max-mib {max_mib}"),
            reason: format!(
                "give a size from {} MiB (the smallest measured) to {MAX_MIB} MiB (1 TiB)",
                MIN_BYTES >> 20
            ),
        });
    }
    Ok(())
}

/// The largest size to measure for `--max-mib max_mib` on this backend: the largest 2 MiB · 2^k
/// within `max_mib`, a third of the GPU's free memory (a device buffer and the managed buffer
/// prefetched beside it) and half the host's available memory. Checked before anything is
/// allocated.
pub fn check(backend: &Backend, max_mib: u64) -> Result<u64> {
    check_flag(max_mib)?;
    let Backend::Gpu(gpu) = backend else {
        return Err(Error::NeedsGpu {
            what: "managed migration".into(),
            why: NEEDS_GPU,
        });
    };
    let limit = (max_mib << 20)
        .min(gpu.info().memory_free as u64 / 3)
        .min(kernels_host::families::available_host_memory() / 2);
    if limit < MIN_BYTES {
        return Err(Error::TooLarge {
            what: "managed migration".into(),
            memory: "GPU or host memory",
            needed_mib: 3 * (MIN_BYTES >> 20),
            available_mib: limit >> 20,
        });
    }
    let mut largest = MIN_BYTES;
    while largest * 2 <= limit {
        largest *= 2;
    }
    if largest < max_mib << 20 {
        eprintln!(
            "note: managed migration stops at {} MiB (a third of the GPU's free memory, half the host's available memory)",
            largest >> 20
        );
    }
    Ok(largest)
}

pub fn run(backend: &Backend, settings: &Settings, max_mib: u64) -> Result<Vec<Row>> {
    let largest = check(backend, max_mib)?;
    let gpu = backend.gpu().ok_or_else(|| Error::NeedsGpu {
        what: "managed migration".into(),
        why: NEEDS_GPU,
    })?;
    let mut rows = Vec::new();
    let mut bytes = MIN_BYTES;
    while bytes <= largest {
        let measured = transfers(backend, gpu, settings, bytes)?;
        // Progress, and the figures so far should a long run be cut short: each row's rate.
        let rates: Vec<String> = measured
            .iter()
            .map(|row| format!("{} {:.1}", row.variant, row.rate.unwrap_or(f64::NAN)))
            .collect();
        eprintln!("managed migration: {} (GB/s): {}", size_label(bytes), rates.join(", "));
        rows.extend(measured);
        bytes *= 2;
    }
    let at = largest.min(FAULT_BYTES);
    rows.extend(faults(backend, gpu, settings, at)?);
    rows.extend(first_touch(backend, gpu, at)?);
    Ok(rows)
}

fn size_label(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{} GiB", bytes >> 30)
    } else {
        format!("{} MiB", bytes >> 20)
    }
}

fn runs_for(settings: &Settings, bytes: u64) -> usize {
    let runs = settings.runs.max(1) as usize;
    if bytes >= LARGE_BYTES { runs.min(3) } else { runs }
}

fn bytes_moved(bytes: u64) -> Work {
    Work {
        bytes: bytes as f64,
        flops: 0.0,
        bound: Bound::Memory,
    }
}

/// `work` once untimed, then `runs` times between events.
fn timed(gpu: &Gpu, runs: usize, mut work: impl FnMut() -> Result<()>) -> Result<Timing> {
    time_once(gpu, &mut work)?;
    let samples = (0..runs)
        .map(|_| time_once(gpu, &mut work))
        .collect::<Result<Vec<f64>>>()?;
    Ok(Timing::from_samples(samples))
}

/// Every element equal to `value`: what a round trip of the filled buffer must give.
fn all_equal(what: &str, values: &[f32], value: f32) -> std::result::Result<String, String> {
    match values.iter().position(|&v| v != value) {
        None => Ok(format!("{} after the round trips: every element intact", what)),
        Some(i) => Err(format!(
            "{what}: element {i} is {} after the round trips, not {value}",
            values[i]
        )),
    }
}

/// Pieces the split prefetch to the host moves at once, each on a stream of its own.
const HOST_PIECES: usize = 8;

/// Pinned and pageable copies and managed prefetches of `bytes`, each way.
fn transfers(backend: &Backend, gpu: &Gpu, settings: &Settings, bytes: u64) -> Result<Vec<Row>> {
    let n = (bytes / 4) as usize;
    let runs = runs_for(settings, bytes);
    let size = size_label(bytes);
    let stream = gpu.stream();
    let row =
        |variant: &str, timing: Timing| Row::measured("managed", variant, &size, backend, timing, &bytes_moved(bytes));
    let mut device: CudaSlice<f32> = gpu.zeros(n)?;

    // SAFETY: filled right away; flags 0 = ordinary (cached) pinned memory.
    let mut pinned: PinnedHostSlice<f32> = unsafe { gpu.context().alloc_pinned_with_flags::<f32>(n, 0) }
        .doing(|| format!("allocating {size} of pinned memory"))?;
    pinned
        .as_mut_slice()
        .doing(|| "mapping pinned memory".into())?
        .fill(1.0);
    let pinned_up = timed(gpu, runs, || {
        stream
            .memcpy_htod(&pinned, &mut device)
            .doing(|| "copying pinned memory to the GPU".into())
    })?;
    let pinned_down = timed(gpu, runs, || {
        stream
            .memcpy_dtoh(&device, &mut pinned)
            .doing(|| "copying to pinned memory".into())
    })?;
    gpu.synchronize()?;
    let pinned_check = all_equal(
        "pinned",
        pinned.as_slice().doing(|| "reading pinned memory".into())?,
        1.0,
    );
    drop(pinned);

    let mut pageable = vec![2.0f32; n];
    let pageable_up = timed(gpu, runs, || {
        stream
            .memcpy_htod(&pageable, &mut device)
            .doing(|| "copying pageable memory to the GPU".into())
    })?;
    let pageable_down = timed(gpu, runs, || {
        stream
            .memcpy_dtoh(&device, &mut pageable)
            .doing(|| "copying to pageable memory".into())
    })?;
    gpu.synchronize()?;
    let pageable_check = all_equal("pageable", &pageable, 2.0);
    drop(pageable);
    drop(device);

    // The CPU writes the buffer, so its pages start on the host; each run moves them up and back.
    let managed = ManagedBuffer::new(gpu, n, 3.0f32)?;
    let mut up = Vec::with_capacity(runs);
    let mut down = Vec::with_capacity(runs);
    for run in 0..=runs {
        let (to_device, to_host) = (
            time_once(gpu, || managed.prefetch_to_device(gpu))?,
            time_once(gpu, || managed.prefetch_to_host(gpu))?,
        );
        // The first round trip is the warm-up.
        if run > 0 {
            up.push(to_device);
            down.push(to_host);
        }
    }
    // The same move to the host in pieces on several streams at once: whether the driver's work per
    // page (not the link) is what limits it, and whether it runs in parallel.
    let streams = (0..HOST_PIECES)
        .map(|_| gpu.context().new_stream().doing(|| "creating a stream".into()))
        .collect::<Result<Vec<_>>>()?;
    let piece = n.div_ceil(HOST_PIECES);
    let mut down_pieces = Vec::with_capacity(runs);
    for run in 0..=runs {
        managed.prefetch_to_device(gpu)?;
        gpu.synchronize()?;
        let ms = time_once(gpu, || {
            for (i, side) in streams.iter().enumerate() {
                let range = (i * piece).min(n)..((i + 1) * piece).min(n);
                if range.is_empty() {
                    continue;
                }
                side.join(gpu.stream())
                    .doing(|| "starting a piece after the start event".into())?;
                managed.prefetch_range_on(gpu, side, range, MemoryLocation::Host)?;
            }
            Ok(())
        })?;
        if run > 0 {
            down_pieces.push(ms);
        }
    }
    let managed_check = all_equal("managed", managed.read()?, 3.0);
    let ceiling = |timing: &Timing, direction: &str| Ceiling {
        name: format!("pinned copy {direction}, {size}"),
        rate: bytes as f64 / (timing.median_ms * 1e-3) / 1e9,
    };
    let (up_ceiling, down_ceiling) = (ceiling(&pinned_up, "to the GPU"), ceiling(&pinned_down, "to the host"));
    Ok(vec![
        row("pinned copy, to the GPU", pinned_up).with_check(pinned_check.clone()),
        row("pinned copy, to the host", pinned_down).with_check(pinned_check),
        row("pageable copy, to the GPU", pageable_up).with_check(pageable_check.clone()),
        row("pageable copy, to the host", pageable_down).with_check(pageable_check),
        row("prefetch, to the GPU", Timing::from_samples(up))
            .with_check(managed_check.clone())
            .with_ceiling(Some(&up_ceiling)),
        row("prefetch, to the host", Timing::from_samples(down))
            .with_check(managed_check.clone())
            .with_ceiling(Some(&down_ceiling)),
        row(
            &format!("prefetch, to the host, {HOST_PIECES} pieces on {HOST_PIECES} streams"),
            Timing::from_samples(down_pieces),
        )
        .with_check(managed_check)
        .with_ceiling(Some(&down_ceiling)),
    ])
}

/// vec_add reading `bytes` of managed memory twice (A and B are the same buffer) into device
/// memory: with the pages on the host, every first touch of a page faults and migrates it; with
/// them prefetched, none does. The difference per 4 KiB page is the fault's cost.
fn faults(backend: &Backend, gpu: &Gpu, settings: &Settings, bytes: u64) -> Result<Vec<Row>> {
    let n = (bytes / 4) as usize;
    let runs = runs_for(settings, bytes);
    let size = size_label(bytes);
    let problem = Elementwise::new(n)?;
    let input = ManagedBuffer::new(gpu, n, 1.5f32)?;
    let mut out: CudaSlice<f32> = gpu.zeros(n)?;
    let mut add = || {
        elementwise::launch(
            backend,
            &vec_add::KERNEL,
            Source::Rust,
            &problem,
            &input,
            &input,
            &mut out,
        )
    };
    let (mut on_host, mut prefetched) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for run in 0..=runs {
        input.prefetch_to_host(gpu)?;
        gpu.synchronize()?;
        let faulting = time_once(gpu, &mut add)?;
        input.prefetch_to_device(gpu)?;
        gpu.synchronize()?;
        let resident = time_once(gpu, &mut add)?;
        // The first round is the warm-up.
        if run > 0 {
            on_host.push(faulting);
            prefetched.push(resident);
        }
    }
    let sums = gpu.download(&out)?;
    let check = match sums.iter().position(|&v| v != 3.0) {
        None => Ok(format!("every one of {n} sums is 1.5 + 1.5")),
        Some(i) => Err(format!("sum {i} is {}, not 3", sums[i])),
    };
    let (on_host, prefetched) = (Timing::from_samples(on_host), Timing::from_samples(prefetched));
    let pages = bytes / HOST_PAGE;
    let per_page_us = (on_host.median_ms - prefetched.median_ms) * 1e3 / pages as f64;
    let work = bytes_moved(bytes);
    let check_with = |note: String| check.clone().map(|detail| format!("{detail}; {note}"));
    Ok(vec![
        Row::measured("managed", "kernel on pages on the host", &size, backend, on_host, &work).with_check(check_with(
            format!(
                "{per_page_us:.3} µs more per 4 KiB page than prefetched ({:.1} µs per 64 KiB)",
                per_page_us * 16.0
            ),
        )),
        Row::measured(
            "managed",
            "kernel on prefetched pages",
            &size,
            backend,
            prefetched,
            &work,
        )
        .with_check(check_with("the same kernel, its pages on the GPU first".into())),
    ])
}

/// First touch: the GPU zeroing fresh managed memory (its pages created in GPU memory) against
/// the CPU writing it (created on the host; the GPU's use then migrates them), with a memset of
/// device memory for reference.
fn first_touch(backend: &Backend, gpu: &Gpu, bytes: u64) -> Result<Vec<Row>> {
    let n = (bytes / 4) as usize;
    let size = size_label(bytes);
    let work = bytes_moved(bytes);
    let mut on_gpu = None;
    let gpu_ms = time_once(gpu, || {
        on_gpu = Some(ManagedBuffer::<f32>::zeroed_on_gpu(gpu, n)?);
        Ok(())
    })?;
    let on_gpu = on_gpu.expect("the timed closure ran");
    let gpu_check = all_equal("zeroed on the GPU", on_gpu.read()?, 0.0);
    drop(on_gpu);
    let start = Instant::now();
    let on_cpu = ManagedBuffer::new(gpu, n, 0.0f32)?;
    let cpu_ms = start.elapsed().as_secs_f64() * 1e3;
    let cpu_check = all_equal("written by the CPU", on_cpu.read()?, 0.0);
    drop(on_cpu);
    let mut device: CudaSlice<f32> = gpu.zeros(n)?;
    let device_ms = time_once(gpu, || {
        gpu.stream()
            .memset_zeros(&mut device)
            .doing(|| "zeroing device memory".into())
    })?;
    let one = |ms: f64| Timing::from_samples(vec![ms]);
    Ok(vec![
        Row::measured(
            "managed",
            "first touch on the GPU (memset)",
            &size,
            backend,
            one(gpu_ms),
            &work,
        )
        .with_check(gpu_check),
        Row::measured(
            "managed",
            "first touch on the CPU (writes)",
            &size,
            backend,
            one(cpu_ms),
            &work,
        )
        .with_check(cpu_check.map(|detail| format!("{detail}; wall clock of the CPU's writes"))),
        Row::measured(
            "managed",
            "memset of device memory",
            &size,
            backend,
            one(device_ms),
            &work,
        )
        .with_check(Ok("reference: cudaMemset on cudaMalloc'd memory".into())),
    ])
}
