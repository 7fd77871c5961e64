//! `managed thrashing`: the GPU updates an array, then the CPU reads it, over and over (issue 12,
//! item 2). With plain managed memory every GPU write of a page pulls it to the GPU and every CPU
//! read pulls it back: each phase change pays the page faults and migrations of the whole array
//! (or of the pages read). The cures: prefetch at each phase change (one bulk migration instead of
//! faults); the GPU as preferred location with the CPU's access advised; read-mostly (the CPU
//! only reads); and no managed memory at all (device memory and explicit copies into pinned host
//! memory, whole, or in chunks that the CPU reads as they land, also with two arrays on each side
//! so that one round's kernel and copies run while the CPU reads the last); pinned host memory
//! mapped into the GPU's address space, which the kernel writes in place chunk by chunk (no copy)
//! while the CPU reads the chunks already written; and two managed arrays attached
//! to two streams, the CPU reading the last round's while the GPU writes this round's. Each
//! variant runs with the CPU reading a few elements (16, spread over the array) and
//! all of them. The time per iteration is wall clock: the launch of vec_add writing the array,
//! the moves, and the CPU's read.

use super::Settings;
use super::report::Row;
use cudarc::driver::sys;
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, PinnedHostSlice};
use kernels::elementwise::Elementwise;
use kernels::{Source, vec_add};
use kernels_host::families::{Bound, Work, elementwise};
use ptxkit_runtime::Backend;
use ptxkit_runtime::array::{Array, Tracked};
use ptxkit_runtime::{Doing, Error, Result};
use ptxkit_runtime::{Gpu, ManagedBuffer, MemoryLocation, Timing};
use std::sync::Arc;
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
    /// No copy: pinned host memory mapped into the GPU's address space (`CU_MEMHOSTALLOC_DEVICEMAP`),
    /// written by vec_add itself, launched once per chunk of [`MAPPED_CHUNKS`] (a and b in device
    /// memory), each launch followed by an event; the CPU reads each chunk as soon as its event has
    /// completed, as [`Cure::PinnedOverlapped`] does. Expected faster than that at n = 2^26 (no
    /// kernel before a copy); measured level with the copies read as they land (docs/perf-log.md,
    /// changes 80 and 82).
    PinnedMapped,
}

impl Cure {
    const ALL: [Cure; 9] = [
        Cure::None,
        Cure::Prefetch,
        Cure::PreferGpu,
        Cure::ReadMostly,
        Cure::PinnedCopies,
        Cure::PinnedOverlapped,
        Cure::PinnedPipelined,
        Cure::StreamAttached,
        Cure::PinnedMapped,
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
            Cure::PinnedMapped => "pinned mapped memory written by the kernel, read as it lands",
        }
    }

    /// Whether the CPU reads the array chunk by chunk as it lands: these ways have no "CPU reads
    /// 16" case (sixteen single elements are copied, or written, one by one either way).
    fn reads_chunks(self) -> bool {
        matches!(
            self,
            Cure::PinnedOverlapped | Cure::PinnedPipelined | Cure::PinnedMapped
        )
    }
}

/// Checks `n` before anything is allocated: a valid vec_add size whose arrays fit on the GPU.
pub fn check(backend: &Backend, n: usize) -> Result<Elementwise> {
    let problem = Elementwise::new(n)?;
    let Backend::Gpu(gpu) = backend else {
        return Err(Error::NeedsGpu {
            what: "managed thrashing".into(),
            why: NEEDS_GPU,
        });
    };
    // Two device inputs, the managed (or device) output; on the host the pinned copy (or the
    // mapped output).
    super::managed::check_memory(gpu, &format!("managed thrashing at n={n}"), 16 * n as u64, 8 * n as u64)?;
    Ok(problem)
}

pub fn run(backend: &Backend, _settings: &Settings, n: usize) -> Result<Vec<Row>> {
    let problem = check(backend, n)?;
    let gpu = backend.gpu().ok_or_else(|| Error::NeedsGpu {
        what: "managed thrashing".into(),
        why: NEEDS_GPU,
    })?;
    let a = gpu.upload(&vec![1.0f32; n])?;
    let b = gpu.upload(&vec![2.0f32; n])?;
    let mut rows = Vec::new();
    for cure in Cure::ALL {
        for few in [true, false] {
            if few && cure.reads_chunks() {
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
/// running f64 sum, one add's latency per element, held a core far below it: docs/perf-log.md,
/// change 48).
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

/// All `n` elements at `host`, in as many chunks as there are events, each chunk read by every
/// core's share as soon as its event (the end of the copy or kernel that writes it) has completed.
///
/// # Safety
/// `host` holds `n` floats that the work ending at `landed[k]` writes chunk by chunk (chunk k:
/// elements `chunk_range(n, landed.len(), k)`), each event's last record before this call follows
/// that work, and nothing else writes the floats until this returns.
unsafe fn read_as_landed(host: *const f32, n: usize, landed: &[CudaEvent]) -> std::result::Result<(), String> {
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let host = Landed(host);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    for (k, event) in landed.iter().enumerate() {
                        event.synchronize().map_err(|e| format!("waiting for chunk {k}: {e}"))?;
                        let chunk = chunk_range(n, landed.len(), k);
                        let part = chunk.len().div_ceil(threads);
                        let start = (chunk.start + t * part).min(chunk.end);
                        let end = (start + part).min(chunk.end);
                        // SAFETY: inside the array, and the work writing chunk k has finished (the
                        // event).
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

/// Queues on `stream` the copy of device array `source` (n floats) into pinned `target` in as many
/// chunks as there are events ([`OVERLAP_CHUNKS`]), chunk k recording `landed[k]` once it has
/// landed.
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
        let chunk = chunk_range(n, landed.len(), k);
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

/// One event per chunk, for the chunked ways' "chunk k has landed".
fn chunk_events(gpu: &Gpu, chunks: usize) -> Result<Vec<CudaEvent>> {
    (0..chunks)
        .map(|_| gpu.context().new_event(None).doing(|| "creating an event".into()))
        .collect()
}

/// Elements of chunk `k` of `chunks` over `n` (empty past the end where n < chunks).
fn chunk_range(n: usize, chunks: usize, k: usize) -> std::ops::Range<usize> {
    let size = n.div_ceil(chunks);
    (k * size).min(n)..((k + 1) * size).min(n)
}

/// Chunks the mapped cure writes the array in, one vec_add launch each. More than the copies' 16
/// because the read of the last chunk is the one part of the CPU's work not hidden under the GPU's:
/// reading all 2^26 floats takes what the whole-array pinned copies' round leaves after the kernel
/// and the copy, and each chunk more shortens the read of the last. Each further chunk costs a gap
/// between one kernel's last store and the next kernel's first (a few µs, an estimate). The sum of
/// the two is least near chunks = √(whole read / one gap), about 30 (the figures: docs/perf-log.md,
/// "Figures moved from code comments").
const MAPPED_CHUNKS: usize = 32;

/// Pinned host memory mapped into the GPU's address space (`CU_MEMHOSTALLOC_DEVICEMAP`): kernels
/// on the GPU's own stream store into it in place, each store crossing PCIe, with no copy. Not
/// write-combined: the CPU reads it, and write-combined memory bypasses the CPU's caches (slow
/// reads). As CUDA asks of mapped memory, the CPU and the GPU take turns through events: a host
/// thread that has seen an event complete sees every store of the kernels before it on its
/// stream. Dropping it waits for that stream, so no kernel still writing it outlives the memory.
struct Mapped {
    host: PinnedHostSlice<f32>,
    /// Element 0 as the CPU addresses it: only raw pointers, so no reference to the memory exists
    /// while kernels write it (the reading threads form slices of chunks that have landed).
    target: *mut f32,
    /// Element 0 as a kernel addresses it.
    device: u64,
    /// The GPU's own stream: the only one whose kernels write it (`MappedChunk::address`).
    stream: Arc<CudaStream>,
}

impl Mapped {
    /// `n` floats, zero: a chunk that no kernel wrote fails the check.
    fn new(gpu: &Gpu, n: usize) -> Result<Mapped> {
        // SAFETY: zeroed below through a raw pointer before anything reads it.
        let mut host = unsafe {
            gpu.context()
                .alloc_pinned_with_flags::<f32>(n, sys::CU_MEMHOSTALLOC_DEVICEMAP)
        }
        .doing(|| "allocating mapped pinned memory".into())?;
        let target = host.as_mut_ptr().doing(|| "mapping pinned memory".into())?;
        // SAFETY: `target` starts an allocation of n floats that nothing else uses yet.
        unsafe { target.write_bytes(0, n) };
        let mut device: sys::CUdeviceptr = 0;
        // SAFETY: `target` is the start of a live cuMemHostAlloc allocation made with DEVICEMAP in
        // this context (the allocation bound it to this thread), and `device` a local the driver
        // writes the address to; the flags must be 0.
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, target.cast(), 0) }
            .result()
            .doing(|| "finding the GPU's address of mapped pinned memory".into())?;
        Ok(Mapped {
            host,
            target,
            device,
            stream: gpu.stream().clone(),
        })
    }

    fn len(&self) -> usize {
        self.host.len()
    }

    /// Elements `range` as a kernel's output, for launches on the GPU's own stream.
    ///
    /// # Safety
    /// The CPU neither reads nor writes these elements until every launch given the chunk has
    /// finished (an event recorded after them has completed).
    unsafe fn chunk(&self, range: std::ops::Range<usize>) -> Result<MappedChunk<'_>> {
        if range.is_empty() || range.end > self.len() {
            return Err(Error::InvalidInput {
                what: "a chunk of mapped pinned memory".into(),
                reason: format!(
                    "elements {}..{} are not a non-empty range inside its {}",
                    range.start,
                    range.end,
                    self.len()
                ),
            });
        }
        Ok(MappedChunk {
            address: self.device + (range.start * size_of::<f32>()) as u64,
            len: range.len(),
            context: self.host.context().cu_ctx(),
            stream: self.stream.cu_stream(),
            _memory: std::marker::PhantomData,
        })
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // Kernels still storing into the memory finish before `host` frees it (after this).
        let _ = self.stream.synchronize();
    }
}

/// A range of a [`Mapped`] array: the output of launches on the GPU's own stream.
struct MappedChunk<'a> {
    address: u64,
    len: usize,
    context: sys::CUcontext,
    stream: sys::CUstream,
    _memory: std::marker::PhantomData<&'a Mapped>,
}

impl Tracked for MappedChunk<'_> {}

// SAFETY: `len` floats of pinned host memory from `address` as the GPUs of `context` address it
// (the driver's mapping, range checked in `Mapped::chunk`), allocated while the chunk borrows the
// `Mapped`, and after that until the launches on `stream` have finished (its drop waits for the
// stream); refused on any other context or stream. Nothing the launch could race with: the CPU
// leaves the chunk alone until the launch has finished (`Mapped::chunk`'s contract), and the
// stream orders the launches on it.
unsafe impl Array<f32> for MappedChunk<'_> {
    fn len(&self) -> usize {
        self.len
    }

    fn address(&self, backend: &Backend) -> Result<u64> {
        match backend {
            Backend::Gpu(gpu)
                if gpu.external_stream().is_none()
                    && gpu.context().cu_ctx() == self.context
                    && gpu.stream().cu_stream() == self.stream =>
            {
                Ok(self.address)
            }
            _ => Err(Error::WrongMemory {
                reason: "mapped pinned memory is written only by kernels on the own stream of the GPU that mapped it"
                    .into(),
            }),
        }
    }
}

/// Queues vec_add on each chunk (as many as there are events): a's and b's elements of the chunk
/// in device memory, the sums stored straight into `mapped`, chunk k recording `landed[k]` after
/// its kernel.
///
/// # Safety
/// The CPU touches no element of `mapped` until its chunk's event has completed.
unsafe fn queue_mapped_chunks(
    backend: &Backend,
    gpu: &Gpu,
    mapped: &Mapped,
    (a, b): (&CudaSlice<f32>, &CudaSlice<f32>),
    landed: &[CudaEvent],
) -> Result<()> {
    let n = mapped.len();
    for (k, event) in landed.iter().enumerate() {
        let chunk = chunk_range(n, landed.len(), k);
        if !chunk.is_empty() {
            let problem = Elementwise::new(chunk.len())?;
            // SAFETY: the CPU waits for this chunk's event, recorded after the launch (the
            // caller's contract).
            let mut out = unsafe { mapped.chunk(chunk.clone()) }?;
            let (a, b) = (a.slice(chunk.clone()), b.slice(chunk));
            elementwise::launch(backend, &vec_add::KERNEL, Source::Rust, &problem, &a, &b, &mut out)?;
        }
        event.record(gpu.stream()).doing(|| "recording an event".into())?;
    }
    Ok(())
}

/// [`Cure::PinnedMapped`]: ITERATIONS + 1 rounds, the first untimed. Each round queues the chunks'
/// kernels and events, the CPU reads the chunks as they land, and the round ends with the GPU's
/// stream idle, so that the next round's kernels write nothing the CPU is still reading.
fn mapped_rounds(
    backend: &Backend,
    gpu: &Gpu,
    n: usize,
    inputs: (&CudaSlice<f32>, &CudaSlice<f32>),
    samples: &mut Vec<f64>,
) -> Result<std::result::Result<(), String>> {
    let mapped = Mapped::new(gpu, n)?;
    let landed = chunk_events(gpu, MAPPED_CHUNKS)?;
    let mut outcome = Ok(());
    for round in 0..=ITERATIONS {
        let start = Instant::now();
        // SAFETY: the CPU reads a chunk only after its event (`read_as_landed`), and the last
        // round's reads have all returned.
        unsafe { queue_mapped_chunks(backend, gpu, &mapped, inputs, &landed)? };
        // SAFETY: the kernels just queued write every chunk, each before its event's record (the
        // last one); the CPU writes none of it, and the next round's kernels are queued only after
        // this returns.
        let result = unsafe { read_as_landed(mapped.target, n, &landed) };
        gpu.synchronize()?;
        if round > 0 {
            samples.push(start.elapsed().as_secs_f64() * 1e3);
        }
        if outcome.is_ok() {
            outcome = result;
        }
    }
    Ok(outcome)
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
    let landed = [chunk_events(gpu, OVERLAP_CHUNKS)?, chunk_events(gpu, OVERLAP_CHUNKS)?];
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
        let other = Backend::Gpu(Box::new(kernels_host::open_gpu(Some(gpu.info().ordinal))?));
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
    } else if cure == Cure::PinnedMapped {
        outcome = mapped_rounds(backend, gpu, n, (a, b), &mut samples)?;
    } else if cure == Cure::PinnedOverlapped {
        let mut out: CudaSlice<f32> = gpu.zeros(n)?;
        // SAFETY: written by the copies before it is read; flags 0 = ordinary pinned memory.
        let mut host = unsafe { gpu.context().alloc_pinned_with_flags::<f32>(n, 0) }
            .doing(|| "allocating pinned memory".into())?;
        // Raw pointers only: no reference to the pinned memory exists while copies run.
        let target = host.as_mut_ptr().doing(|| "mapping pinned memory".into())?;
        let landed = chunk_events(gpu, OVERLAP_CHUNKS)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_the_array_once_in_order_for_each_chunk_count() {
        for n in [1, 15, 16, 17, 31, 33, 1000, 1 << 20] {
            for chunks in [OVERLAP_CHUNKS, MAPPED_CHUNKS] {
                let mut next = 0;
                for k in 0..chunks {
                    let chunk = chunk_range(n, chunks, k);
                    assert_eq!(
                        chunk.start, next,
                        "n={n}, {chunks} chunks: chunk {k} starts at {}",
                        chunk.start
                    );
                    assert!(
                        chunk.start <= chunk.end,
                        "n={n}, {chunks} chunks: chunk {k} is {chunk:?}"
                    );
                    next = chunk.end;
                }
                assert_eq!(next, n, "n={n}, {chunks} chunks end at {next}");
            }
        }
    }
}
