//! `managed pipeline`: an array processed chunk by chunk, its moves to the GPU and back hidden under
//! the kernels (issue 12, item 4). The CPU writes G GiB of f32, so every page starts on the host; a
//! kernel doubles each chunk in place (vec_add with the chunk as both inputs and as the output),
//! and every run ends with the results on the host. Four ways:
//!
//! 1. **on demand**: the kernels touch pages that sit on the host, each first touch a GPU page fault
//!    and a migration; then one prefetch of the whole array back;
//! 2. **prefetch all first**: the whole array to the GPU, the kernels, the whole array back, on one
//!    stream: nothing overlaps;
//! 3. **the prefetch pipeline**: three streams. While the kernel doubles chunk i on the GPU's stream,
//!    chunk i+1 is prefetched to the GPU on a second stream and chunk i−1 back to the host on a third
//!    (the two directions have copy engines of their own). Events order them: the kernel on chunk i
//!    after its prefetch, the prefetch back of chunk i after its kernel, and the prefetch of chunk i+1
//!    after the kernel on chunk i−1, so that at most four chunks are on the GPU at once (i−2 may still
//!    be on its way back): a pipeline needs memory for its depth, not for the array. Each prefetch
//!    also orders the GPU's stream after its own (`ManagedBuffer::prefetch_range_on`: what keeps the
//!    CPU's access checks sound), so each is queued after the kernel it should overlap. A prefetch
//!    to the host may hold the calling CPU thread until its pages have moved (the driver rewrites
//!    the CPU's page tables), so each step queues the kernel and the prefetch up before the prefetch
//!    back, and each row says how long the CPU spent in those calls;
//! 4. **the pinned pipeline**: the same with explicit copies between pinned host memory and three
//!    device chunk buffers, one each for the copy up of chunk i+1, the kernel on chunk i and the
//!    copy down of chunk i−1 (with two, the copy down of chunk i−1 would have to finish before chunk
//!    i+1 could land in its buffer, and the two directions could not overlap).
//!
//! Times are CUDA events: end to end from an event on the GPU's stream before the first move to one
//! recorded there after the other streams were joined back into it; the median of three runs after
//! one warm-up (on demand: two runs, after the others have warmed the range up). Rates are the
//! array's bytes moved to the GPU over that time, against a pinned copy of the whole array to the
//! GPU measured in the same run; the target is 80 % of it, with the kernels hidden under the
//! transfers. Each move and kernel is also between two events on its own stream: each row says
//! which share of the kernel time ran under a transfer and how busy each stream was, and
//! `--timeline FILE` draws both pipelines' streams (the run nearest the median). Every element is
//! checked exactly after each way: the pattern is small integers, and doubling is exact in f32.

use super::Settings;
use super::report::{Ceiling, Row};
use super::timeline::{self, Lane, Span, Timeline};
use cudarc::driver::sys::{self, CUevent_flags};
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, PinnedHostSlice};
use kernels::elementwise::Elementwise;
use kernels::vec_add;
use kernels_host::families::{Bound, Work, check_len};
use ptxkit_runtime::Backend;
use ptxkit_runtime::array::Array;
use ptxkit_runtime::{Doing, Error, Result};
use ptxkit_runtime::{Gpu, ManagedBuffer, MemoryLocation, Timing, time_once};
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The array's size unless `--gib` says otherwise.
pub const DEFAULT_GIB: u64 = 8;
/// The chunk unless `--chunk-mib` says otherwise: 64 chunks of the default 8 GiB. A pipeline
/// fills with one chunk's move before the first kernel and drains with one after the last, about
/// 2 of N + 2 chunk times (3 % at 64 chunks, 6 % at 32 of 256 MiB); a move of 128 MiB at the
/// runner's pinned-copy rate (docs/perf-log.md, change 40) is long against the fixed cost of a
/// prefetch call and of the events around it (tens of µs); and 64 bars per lane still read on the
/// timeline.
pub const DEFAULT_CHUNK_MIB: u64 = 128;
/// Chunks are whole 2 MiB pages: the GPU's large page, the unit prefetches move.
const PAGE_BYTES: u64 = 2 << 20;
const MIB: u64 = 1 << 20;
/// Device chunk buffers of the pinned pipeline: the copy up, the kernel and the copy down each hold one.
const DEVICE_BUFFERS: usize = 3;
/// Timed runs at most (each moves the whole array both ways: 8 GiB is about 0.3 s a run).
const MAX_RUNS: u32 = 3;
/// Timed runs of the on-demand way at most: faults move far slower than copies, seconds for 8 GiB
/// (docs/perf-log.md, change 42).
const MAX_FAULT_RUNS: u32 = 2;

/// Why the scenario needs a GPU.
pub const NEEDS_GPU: &str = "a prefetch pipeline moves pages between the host and a GPU; the emulator has none";

/// The array and its chunks, checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    bytes: u64,
    chunk_bytes: u64,
}

fn invalid(reason: String) -> Error {
    Error::InvalidInput {
        what: "managed pipeline".into(),
        reason,
    }
}

/// "8 GiB", "64 MiB", or bytes as MiB with decimals.
fn size_label(bytes: u64) -> String {
    if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) {
        format!("{} GiB", bytes >> 30)
    } else {
        format!("{} MiB", mib_text(bytes))
    }
}

/// Bytes in MiB: whole where they are, else with decimals.
fn mib_text(bytes: u64) -> String {
    if bytes.is_multiple_of(MIB) {
        (bytes / MIB).to_string()
    } else {
        format!("{:.3}", bytes as f64 / MIB as f64)
    }
}

impl Plan {
    /// `--gib` and `--chunk-mib`, the messages naming the flags.
    pub fn from_flags(gib: u64, chunk_mib: u64) -> Result<Plan> {
        if gib == 0 {
            return Err(invalid("--gib 0: give an array of at least 1 GiB".into()));
        }
        let bytes = gib
            .checked_mul(1 << 30)
            .ok_or_else(|| invalid(format!("--gib {gib} is more memory than any machine has")))?;
        let chunk_bytes = chunk_mib
            .checked_mul(MIB)
            .ok_or_else(|| invalid(format!("--chunk-mib {chunk_mib} is larger than the array ({gib} GiB)")))?;
        Plan::new(bytes, chunk_bytes)
    }

    /// An array of `bytes` in chunks of `chunk_bytes` (the last one shorter where they do not
    /// divide): both whole 2 MiB pages, the chunk no larger than the array and within one launch's
    /// 2^32 − 1 elements.
    pub fn new(bytes: u64, chunk_bytes: u64) -> Result<Plan> {
        if bytes == 0 || !bytes.is_multiple_of(PAGE_BYTES) {
            return Err(invalid(format!(
                "an array of {bytes} bytes: give a positive multiple of 2 MiB"
            )));
        }
        if chunk_bytes == 0 || !chunk_bytes.is_multiple_of(PAGE_BYTES) {
            return Err(invalid(format!(
                "--chunk-mib {}: give a multiple of 2 MiB (the GPU's large page, the unit prefetches move), from 2 up",
                mib_text(chunk_bytes)
            )));
        }
        let chunk_mib = chunk_bytes / MIB;
        if chunk_bytes > bytes {
            return Err(invalid(format!(
                "--chunk-mib {chunk_mib} is larger than the array ({} MiB): give at most {}",
                bytes / MIB,
                bytes / MIB
            )));
        }
        if chunk_bytes / 4 > u32::MAX as u64 {
            return Err(invalid(format!(
                "--chunk-mib {chunk_mib}: a chunk is one launch of at most 2^32 − 1 floats; give at most {}",
                (u32::MAX as u64 * 4) / PAGE_BYTES * 2
            )));
        }
        Ok(Plan { bytes, chunk_bytes })
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Elements of the array.
    pub fn len(&self) -> usize {
        (self.bytes / 4) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// Elements of a whole chunk.
    pub fn chunk_len(&self) -> usize {
        (self.chunk_bytes / 4) as usize
    }

    pub fn chunks(&self) -> usize {
        self.bytes.div_ceil(self.chunk_bytes) as usize
    }

    /// The elements of chunk `i`.
    pub fn chunk(&self, i: usize) -> Range<usize> {
        let start = i * self.chunk_len();
        start..(start + self.chunk_len()).min(self.len())
    }

    /// "8 GiB, 64 chunks of 128 MiB".
    pub fn label(&self) -> String {
        format!(
            "{}, {} chunks of {}",
            size_label(self.bytes),
            self.chunks(),
            size_label(self.chunk_bytes)
        )
    }

    /// GPU memory at the peak (the whole managed array prefetched, or the device copy the ceiling
    /// is measured with), and host memory: the managed array, later the pinned one, never both,
    /// doubled so that half of the host's available memory stays free.
    fn memory(&self) -> (u64, u64) {
        (self.bytes.max(DEVICE_BUFFERS as u64 * self.chunk_bytes), 2 * self.bytes)
    }
}

/// The GPU, if the plan fits its free memory and half the host's available memory; checked before
/// anything is allocated.
pub fn check<'b>(backend: &'b Backend, plan: &Plan) -> Result<&'b Gpu> {
    let Backend::Gpu(gpu) = backend else {
        return Err(Error::NeedsGpu {
            what: "managed pipeline".into(),
            why: NEEDS_GPU,
        });
    };
    let (gpu_bytes, host_bytes) = plan.memory();
    super::managed::check_memory(
        gpu,
        &format!(
            "managed pipeline of {} (half the host's memory left free)",
            size_label(plan.bytes)
        ),
        gpu_bytes,
        host_bytes,
    )?;
    Ok(gpu)
}

pub fn run(backend: &Backend, settings: &Settings, plan: &Plan, timeline_file: Option<&Path>) -> Result<Vec<Row>> {
    let gpu = check(backend, plan)?;
    let runs = settings.runs.clamp(1, MAX_RUNS) as usize;
    let fault_runs = settings.runs.clamp(1, MAX_FAULT_RUNS) as usize;
    let warmup = settings.warmup.min(1) as usize;
    let new_stream = || gpu.context().new_stream().doing(|| "creating a stream".into());
    // The second and third streams: moves to the GPU, moves to the host.
    let streams = [new_stream()?, new_stream()?];
    let size = plan.label();
    let progress = |what: &str| eprintln!("managed pipeline, {size}: {what}");

    progress("writing the managed array on the CPU");
    let mut managed = ManagedBuffer::new(gpu, plan.len(), 0.0f32)?;
    fill(managed.write()?);
    // Every run doubles every element once: `passes` is the power of 2 the check expects.
    let mut passes = 0;
    progress("prefetch all first");
    let prefetched = measure(warmup, runs, || prefetch_all(backend, gpu, plan, &mut managed))?;
    passes += warmup + runs;
    let prefetched_check = check_doubled(managed.read()?, passes);
    progress("the prefetch pipeline");
    let pipelined = measure(warmup, runs, || {
        managed_pipeline(backend, gpu, plan, &mut managed, &streams, Results::BackOnHost)
    })?;
    passes += warmup + runs;
    let pipelined_check = check_doubled(managed.read()?, passes);
    progress("the prefetch pipeline to the GPU only");
    let one_way = measure(warmup, runs, || {
        managed_pipeline(backend, gpu, plan, &mut managed, &streams, Results::OnGpu)
    })?;
    passes += warmup + runs;
    let one_way_check = check_doubled(managed.read()?, passes);
    progress("on demand (page faults)");
    let on_demand = measure(0, fault_runs, || on_demand(backend, gpu, plan, &mut managed))?;
    passes += fault_runs;
    let on_demand_check = check_doubled(managed.read()?, passes);
    drop(managed);

    progress("pinned copies");
    // SAFETY: every element is written right away; flags 0 = ordinary (cached) pinned memory, which
    // the CPU's check reads at full speed.
    let mut pinned = unsafe { gpu.context().alloc_pinned_with_flags::<f32>(plan.len(), 0) }
        .doing(|| format!("allocating {} of pinned memory", size_label(plan.bytes)))?;
    fill(pinned.as_mut_slice().doing(|| "mapping pinned memory".into())?);
    let (copy_up, copy_down) = whole_copies(gpu, warmup, runs, &mut pinned)?;
    let copies_check = check_doubled(pinned.as_slice().doing(|| "reading pinned memory".into())?, 0);
    let mut device = (0..DEVICE_BUFFERS)
        .map(|_| gpu.zeros::<f32>(plan.chunk_len()))
        .collect::<Result<Vec<_>>>()?;
    let copied = measure(warmup, runs, || {
        pinned_pipeline(backend, gpu, plan, &mut pinned, &mut device, &streams)
    })?;
    let copied_check = check_doubled(
        pinned.as_slice().doing(|| "reading pinned memory".into())?,
        warmup + runs,
    );
    drop(device);
    drop(pinned);

    let work = Work {
        bytes: plan.bytes as f64,
        flops: 0.0,
        bound: Bound::Memory,
    };
    let ceiling = Ceiling {
        name: format!("pinned copy to the GPU, {}", size_label(plan.bytes)),
        rate: plan.bytes as f64 / (copy_up.median_ms * 1e-3) / 1e9,
    };
    let copy_row = |variant: &str, timing: Timing| {
        Row::measured("managed", variant, &size, backend, timing, &work).with_check(
            copies_check
                .clone()
                .map(|detail| format!("{detail} after the round trips; one copy of the whole array")),
        )
    };
    let row = |variant: &str, measured: &Measured, check: std::result::Result<String, String>, note: String| {
        let mut row = Row::measured("managed", variant, &size, backend, measured.timing, &work)
            .with_ceiling(Some(&ceiling))
            .with_check(check.map(|detail| format!("{detail}; {note}")));
        row.end_to_end_ms = Some(measured.timing.median_ms);
        row.kernel_ms = Some(timeline::lane_ms(&measured.median.spans, Lane::Kernel));
        row
    };
    let rows = vec![
        copy_row("pipeline: pinned copy to the GPU", copy_up).with_ceiling(Some(&ceiling)),
        copy_row("pipeline: pinned copy to the host", copy_down),
        row(
            "pipeline: managed, on demand",
            &on_demand,
            on_demand_check,
            "the kernels fault the pages in (kernel time includes the faults), then one prefetch back".into(),
        ),
        row(
            "pipeline: managed, prefetch all first",
            &prefetched,
            prefetched_check,
            prefetched.summary(),
        ),
        row(
            "pipeline: managed, prefetch pipeline",
            &pipelined,
            pipelined_check,
            pipelined.summary(),
        ),
        row(
            "pipeline: managed, prefetch pipeline, to the GPU only",
            &one_way,
            one_way_check,
            format!(
                "{}; the results stay on the GPU (brought back untimed for the check)",
                one_way.summary()
            ),
        ),
        row(
            "pipeline: pinned copies, pipeline",
            &copied,
            copied_check,
            copied.summary(),
        ),
    ];
    if let Some(path) = timeline_file {
        draw_timelines(path, plan, &ceiling, &pipelined, &copied)?;
    }
    Ok(rows)
}

/// Both pipelines' runs nearest their medians, one lane per stream, into `path`.
fn draw_timelines(path: &Path, plan: &Plan, ceiling: &Ceiling, pipelined: &Measured, copied: &Measured) -> Result<()> {
    let size = plan.label();
    let timeline = |what: &str, moves: &str, measured: &Measured| {
        let run = &measured.median;
        let rate = plan.bytes as f64 / (run.total_ms * 1e-3) / 1e9;
        Timeline {
            title: format!(
                "{what}, {size}: {:.1} ms end to end ({:.0} % of the pinned copy to the GPU), kernels {:.0} % under transfers",
                run.total_ms,
                100.0 * rate / ceiling.rate,
                100.0 * timeline::hidden_fraction(&run.spans).unwrap_or(0.0)
            ),
            lanes: [
                format!("{moves} to the GPU (stream 2)"),
                "kernel (the GPU's stream)".to_string(),
                format!("{moves} to the host (stream 3)"),
            ],
            spans: run.spans.clone(),
            total_ms: run.total_ms,
        }
    };
    let timelines = [
        timeline("managed memory, prefetch pipeline", "prefetch", pipelined),
        timeline("pinned memory, copy pipeline (3 device buffers)", "copy", copied),
    ];
    timeline::write(path, &timelines)?;
    eprintln!("managed pipeline: timeline written to {}", path.display());
    Ok(())
}

/// The value at element `i` before any doubling: small integers, exact in f32 however often they
/// are doubled here.
fn pattern(i: usize) -> f32 {
    (i % 8191 + 1) as f32
}

/// Elements each CPU thread fills or checks.
fn per_thread(len: usize) -> usize {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    len.div_ceil(threads).max(1)
}

/// Writes the pattern, on every core (gigabytes).
fn fill(values: &mut [f32]) {
    let per = per_thread(values.len());
    std::thread::scope(|scope| {
        for (part, values) in values.chunks_mut(per).enumerate() {
            scope.spawn(move || {
                for (j, value) in values.iter_mut().enumerate() {
                    *value = pattern(part * per + j);
                }
            });
        }
    });
}

/// Every element is the pattern doubled `passes` times, checked on every core.
fn check_doubled(values: &[f32], passes: usize) -> std::result::Result<String, String> {
    let factor = 2f32.powi(passes as i32);
    let per = per_thread(values.len());
    let first_wrong = std::thread::scope(|scope| {
        let parts: Vec<_> = values
            .chunks(per)
            .enumerate()
            .map(|(part, values)| {
                scope.spawn(move || {
                    values
                        .iter()
                        .enumerate()
                        .position(|(j, &v)| v != pattern(part * per + j) * factor)
                        .map(|j| part * per + j)
                })
            })
            .collect();
        parts
            .into_iter()
            .filter_map(|part| part.join().expect("a check thread panicked"))
            .min()
    });
    match first_wrong {
        None => Ok(format!(
            "all {} elements exactly the pattern × 2^{passes}",
            values.len()
        )),
        Some(i) => Err(format!(
            "element {i} is {}, not {} × 2^{passes} = {}",
            values[i],
            pattern(i),
            pattern(i) * factor
        )),
    }
}

/// Doubles the first `n` elements of `values` in place: vec_add with the array as both inputs and
/// as the output.
fn double_in_place(backend: &Backend, values: &mut impl Array<f32>, n: usize) -> Result<()> {
    check_len("the chunk", values.len(), n)?;
    let problem = Elementwise::new(n)?;
    let out = values.view_mut(backend)?.head(n);
    let args = (out.as_const(), out.as_const(), out, problem.n);
    // SAFETY: the view is the array's, for writing, on this backend, of the n elements vec_add
    // touches; its thread i reads element i of a and of b and then writes element i of out and
    // touches no other element, so the three may be one array.
    unsafe { backend.launch(&vec_add::KERNEL, &problem, args, &[&*values]) }
}

/// One run: end to end, each move and kernel between its events, and the time the CPU spent inside
/// the calls that queue moves (a move that blocks the CPU delays everything queued after it).
struct Recorded {
    total_ms: f64,
    spans: Vec<Span>,
    host_blocked: Duration,
}

/// The timing of the runs, and the run nearest their median.
struct Measured {
    timing: Timing,
    median: Recorded,
}

impl Measured {
    /// The row's note: kernel time under transfers, each stream's share, the CPU blocked queueing.
    fn summary(&self) -> String {
        format!(
            "{}; the CPU spent {:.1} ms queueing the moves",
            timeline::summary(&self.median.spans, self.median.total_ms),
            self.median.host_blocked.as_secs_f64() * 1e3
        )
    }
}

/// `warmup` runs, then `runs` timed.
fn measure(warmup: usize, runs: usize, mut once: impl FnMut() -> Result<Recorded>) -> Result<Measured> {
    for _ in 0..warmup {
        once()?;
    }
    let recorded = (0..runs.max(1)).map(|_| once()).collect::<Result<Vec<_>>>()?;
    let timing = Timing::from_samples(recorded.iter().map(|r| r.total_ms).collect());
    let off = |r: &Recorded| (r.total_ms - timing.median_ms).abs();
    let median = recorded
        .into_iter()
        .min_by(|a, b| off(a).total_cmp(&off(b)))
        .expect("at least one run");
    Ok(Measured { timing, median })
}

fn timing_event(gpu: &Gpu) -> Result<CudaEvent> {
    gpu.context()
        .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .doing(|| "creating an event".into())
}

fn elapsed_ms(start: &CudaEvent, end: &CudaEvent) -> Result<f64> {
    start
        .elapsed_ms(end)
        .map(f64::from)
        .doing(|| "reading event times".into())
}

/// Records one run's work: an event on the GPU's stream at the start, which the other streams
/// wait for; two events around each piece of work on its stream; and at the end, the other streams
/// joined back into the GPU's stream and a last event there. If the run stops early (an error), it
/// waits for every stream before the memory the work uses can be freed.
struct Recorder<'s> {
    gpu: &'s Gpu,
    others: &'s [Arc<CudaStream>],
    start: CudaEvent,
    /// Each piece of work: its lane, its chunk, the events before and after it.
    work: Vec<(Lane, usize, CudaEvent, CudaEvent)>,
    host_blocked: Duration,
    finished: bool,
}

impl<'s> Recorder<'s> {
    fn start(gpu: &'s Gpu, others: &'s [Arc<CudaStream>]) -> Result<Self> {
        let start = timing_event(gpu)?;
        start.record(gpu.stream()).doing(|| "recording an event".into())?;
        let recorder = Recorder {
            gpu,
            others,
            start,
            work: Vec::new(),
            host_blocked: Duration::ZERO,
            finished: false,
        };
        for stream in others {
            stream
                .wait(&recorder.start)
                .doing(|| "ordering a stream after the start".into())?;
        }
        Ok(recorder)
    }

    /// Queues `work` on `stream` between two events; the index to wait for it with.
    fn record(
        &mut self,
        lane: Lane,
        chunk: usize,
        stream: &CudaStream,
        work: impl FnOnce() -> Result<()>,
    ) -> Result<usize> {
        let (before, after) = (timing_event(self.gpu)?, timing_event(self.gpu)?);
        before.record(stream).doing(|| "recording an event".into())?;
        let queued = Instant::now();
        work()?;
        if lane != Lane::Kernel {
            self.host_blocked += queued.elapsed();
        }
        after.record(stream).doing(|| "recording an event".into())?;
        self.work.push((lane, chunk, before, after));
        Ok(self.work.len() - 1)
    }

    /// Makes `stream` wait until work `index` has finished.
    fn wait(&self, stream: &CudaStream, index: usize) -> Result<()> {
        stream
            .wait(&self.work[index].3)
            .doing(|| "ordering a stream after an event".into())
    }

    /// Joins the other streams into the GPU's, waits for the last event, reads every event's time.
    fn finish(mut self) -> Result<Recorded> {
        for stream in self.others {
            self.gpu
                .stream()
                .join(stream)
                .doing(|| "joining a stream into the GPU's".into())?;
        }
        let end = timing_event(self.gpu)?;
        end.record(self.gpu.stream()).doing(|| "recording an event".into())?;
        let total_ms = elapsed_ms(&self.start, &end)?;
        // Every stream's work has finished: the last event followed all of it.
        self.finished = true;
        let spans = self
            .work
            .iter()
            .map(|(lane, chunk, before, after)| {
                Ok(Span::new(
                    *lane,
                    *chunk,
                    elapsed_ms(&self.start, before)?,
                    elapsed_ms(&self.start, after)?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Recorded {
            total_ms,
            spans,
            host_blocked: self.host_blocked,
        })
    }
}

impl Drop for Recorder<'_> {
    fn drop(&mut self) {
        if !self.finished {
            // Errors cannot propagate from drop; the one that stopped the run is already on its way.
            let _ = self.gpu.synchronize();
            for stream in self.others {
                let _ = stream.synchronize();
            }
        }
    }
}

/// Way 1: the kernels on pages on the host (faults), then one prefetch back; one stream.
fn on_demand(backend: &Backend, gpu: &Gpu, plan: &Plan, buffer: &mut ManagedBuffer<f32>) -> Result<Recorded> {
    let mut recorder = Recorder::start(gpu, &[])?;
    for i in 0..plan.chunks() {
        let range = plan.chunk(i);
        recorder.record(Lane::Kernel, i, gpu.stream(), || {
            double_in_place(backend, &mut buffer.chunk_mut(range.clone())?, range.len())
        })?;
    }
    recorder.record(Lane::ToHost, 0, gpu.stream(), || buffer.prefetch_to_host(gpu))?;
    recorder.finish()
}

/// Way 2: everything to the GPU, the kernels, everything back; one stream.
fn prefetch_all(backend: &Backend, gpu: &Gpu, plan: &Plan, buffer: &mut ManagedBuffer<f32>) -> Result<Recorded> {
    let mut recorder = Recorder::start(gpu, &[])?;
    recorder.record(Lane::ToGpu, 0, gpu.stream(), || buffer.prefetch_to_device(gpu))?;
    for i in 0..plan.chunks() {
        let range = plan.chunk(i);
        recorder.record(Lane::Kernel, i, gpu.stream(), || {
            double_in_place(backend, &mut buffer.chunk_mut(range.clone())?, range.len())
        })?;
    }
    recorder.record(Lane::ToHost, 0, gpu.stream(), || buffer.prefetch_to_host(gpu))?;
    recorder.finish()
}

/// Prefetches chunk `i` to `location` on `stream`.
fn move_chunk(
    recorder: &mut Recorder,
    gpu: &Gpu,
    plan: &Plan,
    buffer: &ManagedBuffer<f32>,
    (i, stream, location): (usize, &CudaStream, MemoryLocation),
) -> Result<usize> {
    let lane = match location {
        MemoryLocation::Device | MemoryLocation::Gpu(_) => Lane::ToGpu,
        MemoryLocation::Host => Lane::ToHost,
    };
    recorder.record(lane, i, stream, || {
        buffer.prefetch_range_on(gpu, stream, plan.chunk(i), location)
    })
}

/// Where the prefetch pipeline leaves the results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Results {
    /// Chunk i−1 goes back to the host while chunk i+1 comes up.
    BackOnHost,
    /// Left on the GPU (inputs streamed in, results used there or small). Moves to the host share
    /// the driver's migration work with moves to the GPU (both directions at once ran no faster
    /// than one after the other: docs/perf-log.md, change 45); this is the pipeline without them.
    /// Untimed after the run, everything goes back to the host for the next run.
    OnGpu,
}

/// Way 3: the kernel on chunk i on the GPU's stream, chunk i+1 prefetched to the GPU on `streams[0]`
/// and, for [`Results::BackOnHost`], chunk i−1 back to the host on `streams[1]`.
fn managed_pipeline(
    backend: &Backend,
    gpu: &Gpu,
    plan: &Plan,
    buffer: &mut ManagedBuffer<f32>,
    streams: &[Arc<CudaStream>; 2],
    results: Results,
) -> Result<Recorded> {
    let [up, down] = streams;
    let back = results == Results::BackOnHost;
    let chunks = plan.chunks();
    let mut recorder = Recorder::start(gpu, streams)?;
    // Each prefetch also makes the GPU's stream wait for it: the kernel on chunk 0 waits for this.
    move_chunk(&mut recorder, gpu, plan, buffer, (0, up, MemoryLocation::Device))?;
    let mut kernels = Vec::with_capacity(chunks);
    for i in 0..chunks {
        let range = plan.chunk(i);
        // Queued before chunk i+1's prefetch, which the GPU's stream then waits for: the kernel
        // runs under that prefetch (and after chunk i−2's move back).
        kernels.push(recorder.record(Lane::Kernel, i, gpu.stream(), || {
            double_in_place(backend, &mut buffer.chunk_mut(range.clone())?, range.len())
        })?);
        if i + 1 < chunks {
            if back && i >= 1 {
                // A bounded pipeline: chunk i+1 comes up once chunk i−1 is done with.
                recorder.wait(up, kernels[i - 1])?;
            }
            move_chunk(&mut recorder, gpu, plan, buffer, (i + 1, up, MemoryLocation::Device))?;
        }
        if back && i >= 1 {
            recorder.wait(down, kernels[i - 1])?;
            move_chunk(&mut recorder, gpu, plan, buffer, (i - 1, down, MemoryLocation::Host))?;
        }
    }
    if !back {
        let recorded = recorder.finish()?;
        buffer.prefetch_to_host(gpu)?;
        return Ok(recorded);
    }
    recorder.wait(down, kernels[chunks - 1])?;
    move_chunk(
        &mut recorder,
        gpu,
        plan,
        buffer,
        (chunks - 1, down, MemoryLocation::Host),
    )?;
    recorder.finish()
}

/// The ceiling: the whole pinned array copied to a device array and back, `runs` times each after
/// `warmup`.
fn whole_copies(gpu: &Gpu, warmup: usize, runs: usize, pinned: &mut PinnedHostSlice<f32>) -> Result<(Timing, Timing)> {
    let mut device: CudaSlice<f32> = gpu.zeros(pinned.len())?;
    let stream = gpu.stream();
    let timed = |work: &mut dyn FnMut() -> Result<()>| -> Result<Timing> {
        for _ in 0..warmup {
            time_once(gpu, &mut *work)?;
        }
        let samples = (0..runs.max(1))
            .map(|_| time_once(gpu, &mut *work))
            .collect::<Result<Vec<_>>>()?;
        Ok(Timing::from_samples(samples))
    };
    let up = timed(&mut || {
        stream
            .memcpy_htod(&*pinned, &mut device)
            .doing(|| "copying pinned memory to the GPU".into())
    })?;
    let down = timed(&mut || {
        stream
            .memcpy_dtoh(&device, &mut *pinned)
            .doing(|| "copying to pinned memory".into())
    })?;
    gpu.synchronize()?;
    Ok((up, down))
}

/// Way 4: chunk i+1 copied from pinned memory into a device buffer on `streams[0]` while the kernel
/// doubles chunk i in another, and chunk i−1 copied back into pinned memory from the third on
/// `streams[1]`.
fn pinned_pipeline(
    backend: &Backend,
    gpu: &Gpu,
    plan: &Plan,
    pinned: &mut PinnedHostSlice<f32>,
    device: &mut [CudaSlice<f32>],
    streams: &[Arc<CudaStream>; 2],
) -> Result<Recorded> {
    let [up, down] = streams;
    check_len("the pinned array", pinned.len(), plan.len())?;
    for buffer in device.iter() {
        check_len("a device chunk buffer", buffer.len(), plan.chunk_len())?;
    }
    let slots = device.len();
    // Raw pointers only: no reference to the pinned memory exists while the copies run.
    let host = pinned.as_mut_ptr().doing(|| "mapping pinned memory".into())?;
    let mut recorder = Recorder::start(gpu, streams)?;
    let mut copied_down = Vec::with_capacity(plan.chunks());
    for i in 0..plan.chunks() {
        let range = plan.chunk(i);
        let bytes = range.len() * size_of::<f32>();
        let buffer = &mut device[i % slots];
        let address = buffer.address_mut(backend)?;
        // SAFETY: range lies inside the pinned array's len elements (checked above).
        let at = unsafe { host.add(range.start) };
        if i >= slots {
            // The buffer's previous chunk has gone back to the host.
            recorder.wait(up, copied_down[i - slots])?;
        }
        // SAFETY (both copies): `at` is `bytes` of the pinned array, `address` a device buffer of at
        // least `bytes` (a chunk's length at most, checked above); both outlive the copies (the
        // recorder waits for every stream at its finish or drop, before this function returns);
        // and nothing else touches them meanwhile: the buffer's previous copy down has finished
        // (the wait above), the kernel runs between the two copies (the waits below), other chunks
        // are other bytes, and the CPU does not touch the pinned array until the run has ended.
        let uploaded = recorder.record(Lane::ToGpu, i, up, || {
            unsafe { sys::cuMemcpyHtoDAsync_v2(address, at.cast_const().cast(), bytes, up.cu_stream()) }
                .result()
                .doing(|| format!("copying chunk {i} to the GPU"))
        })?;
        recorder.wait(gpu.stream(), uploaded)?;
        let doubled = recorder.record(Lane::Kernel, i, gpu.stream(), || {
            double_in_place(backend, buffer, range.len())
        })?;
        recorder.wait(down, doubled)?;
        copied_down.push(recorder.record(Lane::ToHost, i, down, || {
            unsafe { sys::cuMemcpyDtoHAsync_v2(at.cast(), address, bytes, down.cu_stream()) }
                .result()
                .doing(|| format!("copying chunk {i} to the host"))
        })?);
    }
    recorder.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(result: Result<Plan>) -> String {
        match result {
            Err(Error::InvalidInput { reason, .. }) => reason,
            other => panic!("expected InvalidInput, got {other:?}"),
        }
    }

    #[test]
    fn the_default_plan_is_valid() {
        let plan = Plan::from_flags(DEFAULT_GIB, DEFAULT_CHUNK_MIB).unwrap();
        assert_eq!(plan.chunks(), 64);
        assert_eq!(plan.label(), "8 GiB, 64 chunks of 128 MiB");
    }

    #[test]
    fn bad_sizes_are_refused_naming_the_flag_and_value() {
        assert!(reason(Plan::from_flags(0, 128)).contains("--gib 0"));
        assert!(reason(Plan::from_flags(1, 3)).contains("--chunk-mib 3"));
        assert!(reason(Plan::from_flags(1, 0)).contains("--chunk-mib 0"));
        let too_large = reason(Plan::from_flags(1, 2048));
        assert!(
            too_large.contains("--chunk-mib 2048") && too_large.contains("at most 1024"),
            "{too_large}"
        );
        assert!(reason(Plan::from_flags(u64::MAX, 128)).contains(&format!("--gib {}", u64::MAX)));
        assert!(reason(Plan::from_flags(1, u64::MAX)).contains("--chunk-mib"));
        assert!(reason(Plan::from_flags(64, 16 << 10)).contains("2^32"));
        assert!(Plan::from_flags(64, 16382).is_ok());
        assert!(reason(Plan::new(3 << 20, 2 << 20)).contains("multiple of 2 MiB"));
    }

    #[test]
    fn chunks_cover_the_array_once_the_last_one_shorter() {
        let plan = Plan::new(10 << 20, 4 << 20).unwrap();
        assert_eq!(plan.chunks(), 3);
        let chunks: Vec<_> = (0..plan.chunks()).map(|i| plan.chunk(i)).collect();
        assert_eq!(chunks, vec![0..1 << 20, 1 << 20..2 << 20, 2 << 20..10 << 18]);
        assert_eq!(Plan::new(8 << 20, 8 << 20).unwrap().chunks(), 1);
    }

    #[test]
    fn memory_is_the_array_on_the_gpu_and_twice_it_on_the_host() {
        let plan = Plan::from_flags(8, 128).unwrap();
        assert_eq!(plan.memory(), (8 << 30, 16 << 30));
        // Three device chunk buffers when they are larger than the array (one chunk of it).
        assert_eq!(Plan::new(2 << 20, 2 << 20).unwrap().memory(), (6 << 20, 4 << 20));
    }

    #[test]
    fn the_pattern_stays_exact_when_doubled_and_the_check_finds_a_wrong_element() {
        let mut values = vec![0.0f32; 100_003];
        fill(&mut values);
        assert_eq!(values[8191], 1.0);
        assert!(check_doubled(&values, 0).is_ok());
        for v in &mut values {
            *v *= 2.0f32.powi(12);
        }
        assert!(check_doubled(&values, 12).is_ok());
        values[77_777] = -1.0;
        let error = check_doubled(&values, 12).unwrap_err();
        assert!(error.starts_with("element 77777 "), "{error}");
        assert!(check_doubled(&values, 11).unwrap_err().starts_with("element 0 "));
    }

    #[test]
    fn on_the_emulator_the_pipeline_needs_a_gpu() {
        let plan = Plan::from_flags(1, 128).unwrap();
        assert!(matches!(check(&Backend::Emu, &plan), Err(Error::NeedsGpu { .. })));
    }
}
