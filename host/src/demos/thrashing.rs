//! `managed thrashing`: the GPU updates an array, then the CPU reads it, over and over (issue 12,
//! item 2). With plain managed memory every GPU write of a page pulls it to the GPU and every CPU
//! read pulls it back: each phase change pays the page faults and migrations of the whole array
//! (or of the pages read). The cures: prefetch at each phase change (one bulk migration instead of
//! faults); the GPU as preferred location with the CPU's access advised; read-mostly (the CPU
//! only reads); and no managed memory at all (device memory and explicit copies into pinned host
//! memory, whole, or in chunks that the CPU reads as they land, also with two arrays on each side
//! so that one round's kernel and copies run while the CPU reads the last); and two managed arrays attached
//! to two streams, the CPU reading the last round's while the GPU writes this round's. Each
//! variant runs with the CPU reading a few elements (16, spread over the array) and
//! all of them. The time per iteration is wall clock: the launch of vec_add writing the array,
//! the moves, and the CPU's read.

use super::Settings;
use super::report::Row;
use crate::array::Array;
use crate::backend::Backend;
use crate::error::{Doing, HostError, Result};
use crate::families::{Bound, Work, elementwise};
use crate::gpu::{Gpu, ManagedBuffer, MemoryLocation, Timing};
use cudarc::driver::sys;
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream};
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
    /// The same, the copy in chunks that the CPU reads as they land.
    PinnedOverlapped,
    /// The same with two arrays on each side: round i's kernel and copies run while the CPU reads
    /// round i−1's, the copies on a stream of their own.
    PinnedPipelined,
    /// Two managed arrays, each attached to a stream of its own (`cuStreamAttachMemAsync`): the
    /// GPU writes round i's while the CPU reads round i−1's.
    StreamAttached,
}

impl Cure {
    const ALL: [Cure; 8] = [
        Cure::None,
        Cure::Prefetch,
        Cure::PreferGpu,
        Cure::ReadMostly,
        Cure::PinnedCopies,
        Cure::PinnedOverlapped,
        Cure::PinnedPipelined,
        Cure::StreamAttached,
    ];

    fn name(self) -> &'static str {
        match self {
            Cure::None => "managed",
            Cure::Prefetch => "managed, prefetch each phase",
            Cure::PreferGpu => "managed, preferred GPU + accessed by CPU",
            Cure::ReadMostly => "managed, read-mostly",
            Cure::PinnedCopies => "device memory + pinned copies",
            Cure::PinnedOverlapped => "device memory + pinned copies, read as they land",
            Cure::PinnedPipelined => "device memory + pinned copies, read as they land, rounds overlapped",
            Cure::StreamAttached => "managed, two arrays on two streams, read while the other is written",
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
            if few && matches!(cure, Cure::PinnedOverlapped | Cure::PinnedPipelined) {
                // Sixteen single elements are copied one by one either way.
                continue;
            }
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
/// CPU's cores as a program that reads a whole array would. Checks that each value is 1 + 2.
fn read(values: &[f32], at: &[usize]) -> std::result::Result<(), String> {
    if !at.is_empty() {
        return match at.iter().find(|&&i| values[i] != 3.0) {
            None => Ok(()),
            Some(&i) => Err(wrong(i, values[i])),
        };
    }
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let part = values.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = values
            .chunks(part)
            .enumerate()
            .map(|(k, slice)| scope.spawn(move || check_all(slice, k * part)))
            .collect();
        joined(workers)
    })
}

/// Every reader's verdict: the first error, after all have finished.
fn joined(
    workers: Vec<std::thread::ScopedJoinHandle<'_, std::result::Result<(), String>>>,
) -> std::result::Result<(), String> {
    let verdicts: Vec<_> = workers
        .into_iter()
        .map(|w| w.join().unwrap_or_else(|_| Err("a reading thread panicked".into())))
        .collect();
    verdicts.into_iter().collect()
}

fn wrong(i: usize, value: f32) -> String {
    format!("element {i} is {value}, not 1 + 2")
}

/// Every element of `slice` (element `offset` of the array first) equal to 1 + 2. Counts the
/// others in a loop the compiler vectorises, so that the read runs at the memory's speed (a
/// running f64 sum, one add's latency per element, held a core to 0.7 G elements/s, run af).
fn check_all(slice: &[f32], offset: usize) -> std::result::Result<(), String> {
    let others = slice.iter().fold(0usize, |count, &v| count + usize::from(v != 3.0));
    match std::hint::black_box(others) {
        0 => Ok(()),
        _ => {
            let i = slice.iter().position(|&v| v != 3.0).unwrap_or(0);
            Err(wrong(offset + i, slice[i]))
        }
    }
}

/// Chunks the overlapped cure copies the array in: the CPU reads each as soon as it has landed,
/// while later ones are still on their way.
const OVERLAP_CHUNKS: usize = 16;

/// The pinned array's address, for the reading threads: they form slices of a chunk only after the
/// chunk's copy has finished, and the round's copies are all done before the next round starts.
#[derive(Clone, Copy)]
struct Landed(*const f32);
// SAFETY: only read, and only where a finished copy wrote (see `read_as_landed`).
unsafe impl Send for Landed {}
unsafe impl Sync for Landed {}

impl Landed {
    /// Element `i`'s address (a method, so that closures take the whole `Landed`, not its field).
    fn at(self, i: usize) -> *const f32 {
        self.0.wrapping_add(i)
    }
}

/// All `n` elements at `host`, each chunk read by every core's share as soon as its event (the end
/// of its copy) has completed.
///
/// # Safety
/// `host` holds `n` floats that the copies ending at `landed[k]` write chunk by chunk (chunk k:
/// elements `chunk_range(n, k)`), and nothing else writes them until this returns.
unsafe fn read_as_landed(host: *const f32, n: usize, landed: &[CudaEvent]) -> std::result::Result<(), String> {
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let host = Landed(host);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    for (k, event) in landed.iter().enumerate() {
                        event.synchronize().map_err(|e| format!("waiting for chunk {k}: {e}"))?;
                        let chunk = chunk_range(n, k);
                        let part = chunk.len().div_ceil(threads);
                        let start = (chunk.start + t * part).min(chunk.end);
                        let end = (start + part).min(chunk.end);
                        // SAFETY: inside the array, and chunk k's copy has finished (the event).
                        let slice = unsafe { std::slice::from_raw_parts(host.at(start), end - start) };
                        check_all(slice, start)?;
                    }
                    Ok(())
                })
            })
            .collect();
        joined(workers)
    })
}

/// Queues on `stream` the copy of device array `source` (n floats) into pinned `target`, chunk k
/// of [`OVERLAP_CHUNKS`] recording `landed[k]` once it has landed.
///
/// # Safety
/// `source` and `target` hold n floats and outlive the copies; nothing writes `source` or touches
/// `target` until the chunks' events have completed.
unsafe fn queue_chunk_copies(
    source: u64,
    target: *mut f32,
    n: usize,
    landed: &[CudaEvent],
    stream: &CudaStream,
) -> Result<()> {
    for (k, event) in landed.iter().enumerate() {
        let chunk = chunk_range(n, k);
        // SAFETY: the chunk lies inside both arrays (the caller's contract).
        unsafe {
            sys::cuMemcpyDtoHAsync_v2(
                target.add(chunk.start).cast(),
                source + (chunk.start * size_of::<f32>()) as u64,
                chunk.len() * size_of::<f32>(),
                stream.cu_stream(),
            )
        }
        .result()
        .doing(|| format!("copying chunk {k} to the host"))?;
        event.record(stream).doing(|| "recording an event".into())?;
    }
    Ok(())
}

/// Elements of chunk `k` of [`OVERLAP_CHUNKS`] over `n`.
fn chunk_range(n: usize, k: usize) -> std::ops::Range<usize> {
    let size = n.div_ceil(OVERLAP_CHUNKS);
    (k * size).min(n)..((k + 1) * size).min(n)
}

/// [`Cure::PinnedPipelined`]: ITERATIONS + 2 rounds, each time the interval between the ends of two
/// successive rounds' reads (the first two untimed). Round i writes device array i mod 2 on the
/// GPU's stream (after round i−2's copies out of it), and a second stream copies it chunk by chunk
/// into pinned array i mod 2 (after the kernel), while the CPU reads round i−1's chunks as they
/// land; round i+1 is queued before round i is read, and round i+2 only after it, so no copy
/// overwrites pinned memory the CPU is reading.
fn pipelined_rounds(
    backend: &Backend,
    gpu: &Gpu,
    problem: &Elementwise,
    (a, b): (&CudaSlice<f32>, &CudaSlice<f32>),
    samples: &mut Vec<f64>,
) -> Result<std::result::Result<(), String>> {
    let n = problem.n as usize;
    let copies = gpu.context().new_stream().doing(|| "creating a stream".into())?;
    let event = || gpu.context().new_event(None).doing(|| "creating an event".into());
    let mut outs: Vec<CudaSlice<f32>> = vec![gpu.zeros(n)?, gpu.zeros(n)?];
    // SAFETY: written by the copies before the CPU reads them; flags 0 = ordinary pinned memory.
    let mut hosts = [
        unsafe { gpu.context().alloc_pinned_with_flags::<f32>(n, 0) }.doing(|| "allocating pinned memory".into())?,
        unsafe { gpu.context().alloc_pinned_with_flags::<f32>(n, 0) }.doing(|| "allocating pinned memory".into())?,
    ];
    // Raw pointers only: no reference to the pinned memory exists while copies run.
    let targets = [
        hosts[0].as_mut_ptr().doing(|| "mapping pinned memory".into())?,
        hosts[1].as_mut_ptr().doing(|| "mapping pinned memory".into())?,
    ];
    let landed = [
        (0..OVERLAP_CHUNKS).map(|_| event()).collect::<Result<Vec<_>>>()?,
        (0..OVERLAP_CHUNKS).map(|_| event()).collect::<Result<Vec<_>>>()?,
    ];
    let (written, copied) = ([event()?, event()?], [event()?, event()?]);
    let rounds = ITERATIONS + 2;
    let queue = |round: usize, outs: &mut Vec<CudaSlice<f32>>| -> Result<()> {
        let side = round % 2;
        // The kernel may overwrite device array `side` once round − 2's copies out of it are done.
        gpu.stream()
            .wait(&copied[side])
            .doing(|| "ordering a kernel after the copies".into())?;
        elementwise::launch(backend, &vec_add::KERNEL, Source::Rust, problem, a, b, &mut outs[side])?;
        written[side]
            .record(gpu.stream())
            .doing(|| "recording an event".into())?;
        copies
            .wait(&written[side])
            .doing(|| "ordering copies after a kernel".into())?;
        // SAFETY: both arrays hold n floats and outlive the copies (all are waited for before
        // this function returns); the kernel that writes the device array finished first (the
        // event); the CPU reads a pinned chunk only after its event, and no copy into this pinned
        // array is queued before the CPU has read it.
        unsafe { queue_chunk_copies(outs[side].address(backend)?, targets[side], n, &landed[side], &copies)? };
        copied[side].record(&copies).doing(|| "recording an event".into())
    };
    let mut outcome = Ok(());
    queue(0, &mut outs)?;
    let mut last = Instant::now();
    for round in 0..rounds {
        if round + 1 < rounds {
            queue(round + 1, &mut outs)?;
        }
        let side = round % 2;
        // SAFETY: round `round`'s copies write every chunk of pinned array `side`; the next copies
        // into it are queued only after this read returns.
        let result = unsafe { read_as_landed(targets[side], n, &landed[side]) };
        let now = Instant::now();
        if round >= 2 {
            samples.push((now - last).as_secs_f64() * 1e3);
        }
        last = now;
        if outcome.is_ok() {
            outcome = result;
        }
    }
    copies.synchronize().doing(|| "waiting for the copies".into())?;
    gpu.synchronize()?;
    Ok(outcome)
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
    let mut outcome = Ok(());
    if cure == Cure::StreamAttached {
        // A second handle on the same device: a stream of its own, the same context.
        let other = Backend::Gpu(Box::new(Gpu::open(Some(gpu.info().ordinal))?));
        let backends = [backend, &other];
        let mut outs = [ManagedBuffer::new(gpu, n, 0.0f32)?, ManagedBuffer::new(gpu, n, 0.0f32)?];
        for (out, side) in outs.iter_mut().zip(backends) {
            let side = side.gpu().expect("both are GPUs");
            out.share_with(side)?;
            out.attach_to_stream(side)?;
        }
        // The inputs were uploaded on the first stream; the second reads them too.
        gpu.synchronize()?;
        for round in 0..=ITERATIONS + 1 {
            let start = Instant::now();
            let (writing, reading) = outs.split_at_mut(1);
            let (now, before) = if round % 2 == 0 {
                (&mut writing[0], &reading[0])
            } else {
                (&mut reading[0], &writing[0])
            };
            elementwise::launch(backends[round % 2], &vec_add::KERNEL, Source::Rust, problem, a, b, now)?;
            // Round 0 has no earlier result to read; the other array is idle (its last write done).
            let result = if round == 0 { Ok(()) } else { read(before.read()?, &at) };
            now.wait()?;
            if round > 1 {
                samples.push(start.elapsed().as_secs_f64() * 1e3);
            }
            if outcome.is_ok() {
                outcome = result;
            }
        }
    } else if cure == Cure::PinnedPipelined {
        outcome = pipelined_rounds(backend, gpu, problem, (a, b), &mut samples)?;
    } else if cure == Cure::PinnedOverlapped {
        let mut out: CudaSlice<f32> = gpu.zeros(n)?;
        // SAFETY: written by the copies before it is read; flags 0 = ordinary pinned memory.
        let mut host = unsafe { gpu.context().alloc_pinned_with_flags::<f32>(n, 0) }
            .doing(|| "allocating pinned memory".into())?;
        // Raw pointers only: no reference to the pinned memory exists while copies run.
        let target = host.as_mut_ptr().doing(|| "mapping pinned memory".into())?;
        let landed = (0..OVERLAP_CHUNKS)
            .map(|_| gpu.context().new_event(None).doing(|| "creating an event".into()))
            .collect::<Result<Vec<_>>>()?;
        for round in 0..=ITERATIONS {
            let start = Instant::now();
            elementwise::launch(backend, &vec_add::KERNEL, Source::Rust, problem, a, b, &mut out)?;
            // SAFETY: both arrays hold n floats and outlive the copies (waited for below, before
            // the next round or the end); the CPU reads a chunk only after its event.
            unsafe { queue_chunk_copies(out.address(backend)?, target, n, &landed, gpu.stream())? };
            // SAFETY: the copies just queued write every chunk; nothing else writes the array.
            let result = unsafe { read_as_landed(target, n, &landed) };
            gpu.synchronize()?;
            if round > 0 {
                samples.push(start.elapsed().as_secs_f64() * 1e3);
            }
            if outcome.is_ok() {
                outcome = result;
            }
        }
    } else if cure == Cure::PinnedCopies {
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
