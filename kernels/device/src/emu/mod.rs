//! The CPU emulator: runs a kernel's body, unchanged, over a grid of blocks on the host, and checks
//! what the GPU does not.
//!
//! **How it runs.** A launch starts one worker per core (at most one per block). Each worker takes
//! blocks in order from a shared counter and runs each block's threads as stackful coroutines on its
//! own OS thread: thread 0 runs until it reaches a barrier, a warp-level call or its end, then thread
//! 1, and so on; when every thread waits, the barrier opens (see `block.rs` for the rules). A barrier
//! costs a switch per thread, not a wake-up of every OS thread.
//!
//! **What it checks**, failing the launch with the kernel, block, thread(s), the shared-memory
//! element and the source lines, where the GPU would hang, corrupt memory or silently compute
//! something else:
//! * races in shared memory: two threads touching a word between barriers, one of them writing
//!   (lanes of one warp separated by a `sync_warp` or a shuffle are ordered);
//! * reads of shared memory no thread of the block has written, whatever the element type;
//! * barriers: threads at different `sync_threads` calls, on different passes (counts), reaching it
//!   through different calls of one helper (call paths, compared at the first 16 barriers of the
//!   launch's first block, in unoptimised builds with line tables: optimised code loses inlined
//!   frames from its line tables, and there the check passes rather than guess),
//!   threads returning while others wait, deadlocks between warp and block barriers;
//! * warps: a lane missing from a shuffle or `sync_warp`, a shuffle from a lane past a partial warp;
//! * shared-memory views indexed out of bounds, more shared memory carved than launched;
//! * two threads of the launch storing to one global element through `global_store` (atomics are
//!   exempt);
//! * 16-byte global loads and stores (`load4`, `store4`) and `cp.async` copies at addresses that
//!   are not 16-byte aligned;
//! * kernels whose locals pass CUDA's 512 KiB of local memory per thread; launch shapes beyond
//!   CUDA's limits;
//! * waits that cannot end: a thread polling a global word (`load_acquire`, `load_relaxed`) that
//!   keeps its value for [`spin_limit`] (a minute) fails the launch instead of hanging it.
//!
//! **What it does not model.** Memory consistency inside a block beyond barriers (it runs one
//! thread of a block at a time, so a kernel that relies on an unsynchronised write becoming visible
//! sees it at once). Between blocks, which run on several OS threads at once, the device layer's
//! atomics, fences and acquire/release accesses are the host's own with the same orderings. Nor
//! timing, warp scheduling (lanes of a warp run one after another between warp-level calls, not in
//! lock-step), and plain `*ptr = value` stores to global memory (not seen by the race check).

pub(crate) mod async_copies;
pub(crate) mod block;
pub(crate) mod context;
pub(crate) mod global;
pub(crate) mod memory;
pub(crate) mod order;
pub(crate) mod schedule;
pub(crate) mod shadow;
pub(crate) mod spin;
mod stack;
mod worker;

use crate::launch::{Dim3, LaunchShape};
pub use schedule::{SCHEDULE_VARIABLE, Schedule, with_schedule};
pub use spin::{set_spin_limit, spin_limit};
use std::sync::Mutex;
use std::sync::atomic::Ordering;

/// Where `printf!` output goes while [`capture_printed`] runs: kept there as well as printed.
static CAPTURE: Mutex<Option<Vec<String>>> = Mutex::new(None);
/// One capture at a time, so that concurrent tests do not see each other's output.
static CAPTURING: Mutex<()> = Mutex::new(());

/// Writes what a kernel's `printf!` made: printed (to the test's captured output in `cargo test`),
/// and kept where a capture runs.
pub(crate) fn printed(lines: String) {
    print!("{lines}");
    if let Some(kept) = CAPTURE.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        kept.extend(lines.lines().map(str::to_string));
    }
}

/// Runs `f` and returns what kernels printed meanwhile (`printf!`), a line each, in the order the
/// emulator ran them: for tests of kernels that print. Captures run one at a time.
pub fn capture_printed<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
    let _one = CAPTURING.lock().unwrap_or_else(|e| e.into_inner());
    *CAPTURE.lock().unwrap_or_else(|e| e.into_inner()) = Some(Vec::new());
    let result = f();
    let lines = CAPTURE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .unwrap_or_default();
    (result, lines)
}

/// Local memory (stack) a kernel thread may use on the emulator: CUDA's per-thread limit.
pub const LOCAL_MEMORY_LIMIT: usize = 512 << 10;

/// Stack of each emulated thread, of which only the pages a kernel touches take memory: locals
/// past [`LOCAL_MEMORY_LIMIT`] fail the launch with an error; locals past this stop the process.
pub const STACK_BYTES: usize = stack::STACK_BYTES;

/// Why an emulated launch did not complete.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    #[error("cannot launch {kernel}: {reason}")]
    InvalidLaunch { kernel: &'static str, reason: String },
    #[error("{kernel} failed in block {block}, thread {thread}: {message}")]
    KernelFailed {
        kernel: &'static str,
        block: Dim3,
        thread: Dim3,
        message: String,
    },
    #[error("cannot start the emulator's workers for {kernel}: {source}")]
    Spawn {
        kernel: &'static str,
        source: std::io::Error,
    },
}

/// What every block of one launch shares on the emulator: the record of global stores through
/// raw pointers, the launch's views and their shadow, and whether the schedule switches blocks at
/// atomics.
pub(crate) struct LaunchState {
    pub global_writes: global::GlobalWrites,
    pub views: Option<memory::Views>,
    pub switches_at_atomics: bool,
}

/// Runs `body` as kernel `kernel` over `shape`: every thread of every block calls it once, with the
/// device layer answering for that thread. The blocks run in the order [`Schedule::current`]
/// gives.
pub fn launch(kernel: &'static str, shape: &LaunchShape, body: impl Fn() + Sync) -> Result<(), EmuError> {
    launch_with_views(kernel, shape, &[], body)
}

/// As [`launch`], for a kernel whose parameters include typed views of global memory: each
/// parameter's name and the memory it views (`kernel!` passes them), whose accesses the launch
/// records and checks.
pub fn launch_with_views(
    kernel: &'static str,
    shape: &LaunchShape,
    params: &[(&'static str, Option<crate::params::GlobalRegion>)],
    body: impl Fn() + Sync,
) -> Result<(), EmuError> {
    shape
        .check()
        .map_err(|reason| EmuError::InvalidLaunch { kernel, reason })?;
    let views = memory::Views::new(params, shape.grid, shape.block)
        .map_err(|reason| EmuError::InvalidLaunch { kernel, reason })?;
    let schedule = Schedule::current().map_err(|reason| EmuError::InvalidLaunch { kernel, reason })?;
    context::install_panic_capture();
    let body: &(dyn Fn() + Sync) = &body;
    // SAFETY: only the lifetime changes. Every coroutine that calls `body` runs to its end (or is
    // unwound) inside a worker, and every worker is joined before this function returns.
    let body: &'static (dyn Fn() + Sync) = unsafe { std::mem::transmute(body) };
    let state = LaunchState {
        global_writes: global::GlobalWrites::default(),
        views,
        switches_at_atomics: schedule.switches_at_atomics(),
    };
    let workers = worker::Workers::new(shape, body, &state, schedule);
    let outcome = std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(workers.workers);
        for index in 0..workers.workers {
            let workers = &workers;
            let spawned = std::thread::Builder::new()
                .name(format!("{kernel}:worker{index}"))
                .spawn_scoped(scope, move || worker::work(workers, index));
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(source) => {
                    workers.stop.store(true, Ordering::Relaxed);
                    return Err(EmuError::Spawn { kernel, source });
                }
            }
        }
        // Workers catch every panic of the kernel body themselves: one that reaches here is the
        // emulator's own.
        let panicked = handles.into_iter().filter_map(|h| h.join().err()).next();
        match panicked {
            Some(payload) => Err(EmuError::InvalidLaunch {
                kernel,
                reason: format!(
                    "the emulator itself failed ({}): please report it",
                    context::panic_text(payload.as_ref())
                ),
            }),
            None => Ok(()),
        }
    });
    outcome?;
    // Several blocks may fail before the others stop: report the first in grid order.
    let failures = workers.failures.into_inner().unwrap_or_else(|e| e.into_inner());
    match failures.into_iter().min_by_key(|(linear, _)| *linear) {
        None => Ok(()),
        Some((_, failure)) => Err(EmuError::KernelFailed {
            kernel,
            block: failure.block,
            thread: failure.thread,
            message: match schedule {
                Schedule::GridOrder => failure.message,
                other => format!(
                    "{} (blocks in the {other} schedule: {}={other} runs it so again)",
                    failure.message,
                    schedule::SCHEDULE_VARIABLE
                ),
            },
        }),
    }
}
