//! One block on the emulator: its threads as coroutines on one OS thread, its shared memory and
//! shadow, its barriers and warps, and the bookkeeping that turns a would-be hang or a silent race
//! into an error.
//!
//! The scheduler resumes every runnable thread in order (thread 0, 1, …); each runs until it reaches
//! a barrier, a warp-level call or the end of the kernel, then yields. When no thread can run:
//! a warp whose lanes all wait at one warp-level call goes on; else, if every thread that has not
//! returned waits at one `sync_threads` (the same call site, the same count of barriers, and in the
//! launch's first block the same call path), the block goes on; else the block is stuck, and the
//! launch fails with what each thread waits for.

use super::context::{Current, set_current, stack_address, take_panic_message};
use super::shadow::{self, Kind, Ordering, SharedMemory, Site, View};
use super::stack::{Stacks, ThreadStack};
use crate::launch::WARP_SIZE;
use crate::launch::{Dim3, LaunchShape};
use corosensei::{Coroutine, CoroutineResult};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};

/// What a suspended thread waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// `sync_threads`.
    Barrier,
    /// `sync_warp`, or the exchange of a shuffle.
    Warp,
}

/// What the scheduler tells a thread it resumes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resume {
    Go,
    /// Another thread failed: unwind out of the kernel.
    Abort,
}

/// Unwinding payload for threads stopped because another thread of the launch failed.
pub(crate) struct Abort;

/// How a thread's coroutine ended.
enum Outcome {
    Returned,
    Aborted,
    Panicked(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Runnable,
    Waiting(Wait),
    Returned,
}

/// One thread's scheduling state.
struct Thread {
    status: Status,
    /// Where it waits.
    site: Option<Site>,
    /// Block barriers it has reached, this one included: threads at one barrier agree.
    barriers: u64,
    /// Return addresses at its barrier, in the launch's first block only.
    path: Vec<usize>,
}

struct Warp {
    /// Lanes waiting at a warp-level call, and lanes that have returned.
    waiting: u32,
    returned: u32,
    /// Bumped at each warp-level sync: orders the lanes' accesses around it.
    epoch: u32,
    /// What each lane offers to the shuffle in progress.
    offered: [u32; WARP_SIZE as usize],
    /// What the lanes offered to the last shuffle, read after it.
    exchanged: [u32; WARP_SIZE as usize],
}

/// The block's mutable state, borrowed by the device layer while a thread runs and by the
/// scheduler between threads (one OS thread: the borrows never overlap).
struct State {
    threads: Vec<Thread>,
    /// Threads waiting at a block barrier, and threads that have returned.
    at_barrier: u32,
    returned: u32,
    warps: Vec<Warp>,
    warp_epochs: Vec<u32>,
    shared: SharedMemory,
    /// Bumped at each block barrier.
    block_epoch: u32,
    /// The first thing that went wrong: thread and message.
    failure: Option<(u32, String)>,
}

/// A failed block: which thread, and what happened.
pub(crate) struct Failure {
    pub block: Dim3,
    pub thread: Dim3,
    pub message: String,
}

/// Frames of a call path compared at barriers; deeper frames are the emulator's own.
const PATH_FRAMES: usize = 24;

/// Barriers of the launch's first block at which call paths are compared: a trace costs about a
/// microsecond per thread, twenty times the barrier itself, and a barrier reached through one
/// helper from two branches shows at its first pass.
const TRACED_BARRIERS: u64 = 16;

type Thread_ = Coroutine<Resume, Wait, Outcome, ThreadStack>;

/// A worker's block: the same object runs block after block of a launch.
pub(crate) struct BlockRun {
    /// The launch's record of global stores; outlives the run.
    global_writes: *const super::global::GlobalWrites,
    shape: LaunchShape,
    threads: u32,
    /// What the device layer answers for each thread.
    currents: Vec<Current>,
    /// Whether to compare call paths at barriers (the launch's first block).
    trace_paths: Cell<bool>,
    state: RefCell<State>,
}

impl BlockRun {
    /// A block runner for `shape`, boxed so that the threads' `Current`s can point at it.
    pub fn new(shape: &LaunchShape, global_writes: &super::global::GlobalWrites) -> Box<BlockRun> {
        let threads = shape.block.volume() as u32;
        let warps = threads.div_ceil(WARP_SIZE) as usize;
        let mut run = Box::new(BlockRun {
            global_writes,
            shape: *shape,
            threads,
            currents: Vec::with_capacity(threads as usize),
            trace_paths: Cell::new(false),
            state: RefCell::new(State {
                threads: (0..threads)
                    .map(|_| Thread {
                        status: Status::Runnable,
                        site: None,
                        barriers: 0,
                        path: Vec::new(),
                    })
                    .collect(),
                at_barrier: 0,
                returned: 0,
                warps: (0..warps)
                    .map(|_| Warp {
                        waiting: 0,
                        returned: 0,
                        epoch: 0,
                        offered: [0; WARP_SIZE as usize],
                        exchanged: [0; WARP_SIZE as usize],
                    })
                    .collect(),
                warp_epochs: vec![0; warps],
                shared: SharedMemory::new(),
                block_epoch: 0,
                failure: None,
            }),
        });
        let block: *const BlockRun = &*run;
        for tid in 0..threads {
            run.currents.push(Current {
                tid,
                thread_idx: shadow::thread(tid, shape.block),
                block_idx: Cell::new(Dim3::new(0, 0, 0)),
                block_dim: shape.block,
                grid_dim: shape.grid,
                block,
                yielder: Cell::new(std::ptr::null()),
                stack_base: Cell::new(0),
                copies: Default::default(),
                spin: Default::default(),
            });
        }
        run
    }

    /// The launch's record of global stores.
    pub fn global_writes(&self) -> Option<&super::global::GlobalWrites> {
        // SAFETY: owned by the launch, which joins every worker (and so drops every BlockRun)
        // before it returns.
        unsafe { self.global_writes.as_ref() }
    }

    /// Threads in warp `warp`: 32, or fewer in the last warp of a block that is not a multiple of 32.
    pub fn warp_len(&self, warp: u32) -> u32 {
        (self.threads - warp * WARP_SIZE).min(WARP_SIZE)
    }

    /// Runs block `block_idx` with `body` as every thread's kernel, taking stacks from `stacks` and
    /// giving them back.
    pub fn run(
        &self,
        block_idx: Dim3,
        trace_paths: bool,
        body: &'static (dyn Fn() + Sync),
        stacks: &mut Stacks,
    ) -> Result<(), Failure> {
        for current in &self.currents {
            current.block_idx.set(block_idx);
            // Copies a thread of the previous block left unwaited never land in this one.
            *current.copies.borrow_mut() = Default::default();
            current.spin.set(Default::default());
        }
        self.trace_paths.set(trace_paths);
        self.reset();
        let mut threads = Vec::with_capacity(self.threads as usize);
        for current in &self.currents {
            let stack = stacks.get().map_err(|e| Failure {
                block: block_idx,
                thread: current.thread_idx,
                message: format!("the emulator cannot allocate a thread's stack: {e}"),
            })?;
            let current: *const Current = current;
            threads.push(Coroutine::with_stack(stack, move |yielder, first: Resume| {
                // SAFETY: the `Current` lives in this BlockRun, which outlives the coroutine.
                let current = unsafe { &*current };
                current.yielder.set(yielder);
                current.stack_base.set(stack_address());
                if first == Resume::Abort {
                    return Outcome::Aborted;
                }
                match panic::catch_unwind(AssertUnwindSafe(body)) {
                    Ok(()) => Outcome::Returned,
                    Err(payload) if payload.is::<Abort>() => Outcome::Aborted,
                    Err(payload) => Outcome::Panicked(take_panic_message(payload.as_ref())),
                }
            }));
        }
        let result = self.schedule(&mut threads);
        if result.is_err() {
            self.abort(&mut threads);
        }
        for thread in threads {
            // Every coroutine has finished (or never started): its stack is free again.
            stacks.put(thread.into_stack());
        }
        result.map_err(|(tid, message)| Failure {
            block: block_idx,
            thread: self.currents[tid as usize].thread_idx,
            message,
        })
    }

    fn reset(&self) {
        let mut s = self.state.borrow_mut();
        for thread in &mut s.threads {
            thread.status = Status::Runnable;
            thread.site = None;
            thread.barriers = 0;
            thread.path.clear();
        }
        s.at_barrier = 0;
        s.returned = 0;
        for warp in &mut s.warps {
            warp.waiting = 0;
            warp.returned = 0;
            warp.epoch = 0;
        }
        s.warp_epochs.fill(0);
        s.block_epoch = 0;
        s.failure = None;
        s.shared.reset(self.shape.shared_bytes);
    }

    /// Resumes threads until all have returned, or one failed.
    fn schedule(&self, threads: &mut [Thread_]) -> Result<(), (u32, String)> {
        loop {
            for tid in 0..self.threads {
                if self.state.borrow().threads[tid as usize].status != Status::Runnable {
                    continue;
                }
                if let Some(failure) = self.resume(threads, tid, Resume::Go) {
                    return Err(failure);
                }
            }
            if self.release()? {
                return Ok(());
            }
        }
    }

    /// Resumes thread `tid` until it waits or ends, and records which; the launch's failure, once
    /// there is one.
    fn resume(&self, threads: &mut [Thread_], tid: u32, how: Resume) -> Option<(u32, String)> {
        set_current(&self.currents[tid as usize]);
        let result = threads[tid as usize].resume(how);
        set_current(std::ptr::null());
        let mut s = self.state.borrow_mut();
        let s = &mut *s;
        let warp = &mut s.warps[(tid / WARP_SIZE) as usize];
        s.threads[tid as usize].status = match result {
            CoroutineResult::Yield(Wait::Barrier) => {
                s.at_barrier += 1;
                Status::Waiting(Wait::Barrier)
            }
            CoroutineResult::Yield(Wait::Warp) => {
                warp.waiting += 1;
                Status::Waiting(Wait::Warp)
            }
            CoroutineResult::Return(outcome) => {
                warp.returned += 1;
                s.returned += 1;
                if let Outcome::Panicked(message) = outcome {
                    s.failure.get_or_insert((tid, message));
                }
                Status::Returned
            }
        };
        s.failure.take()
    }

    /// Ends every thread that has not ended: a waiting one unwinds out of the kernel, one that never
    /// started returns at once. Then every stack can be reused.
    fn abort(&self, threads: &mut [Thread_]) {
        for tid in 0..self.threads {
            if !threads[tid as usize].done() {
                // The launch has failed already: a second failure while unwinding adds nothing.
                let _ = self.resume(threads, tid, Resume::Abort);
            }
        }
    }

    /// With no thread runnable: lets a warp or the block go on (`Ok(false)`), reports that every
    /// thread has returned (`Ok(true)`), or says why the block is stuck. Works from the running
    /// counts, so a barrier costs a pass over the warps, not over the threads, until it opens.
    fn release(&self) -> Result<bool, (u32, String)> {
        let mut s = self.state.borrow_mut();
        if s.returned == self.threads {
            return Ok(true);
        }
        let mut released = false;
        for warp in 0..self.threads.div_ceil(WARP_SIZE) {
            let w = warp as usize;
            let (waiting, returned) = (s.warps[w].waiting, s.warps[w].returned);
            if waiting == 0 {
                continue;
            }
            let lanes = warp * WARP_SIZE..warp * WARP_SIZE + self.warp_len(warp);
            let first = lanes.start
                + s.threads[lanes.start as usize..lanes.end as usize]
                    .iter()
                    .position(|t| t.status == Status::Waiting(Wait::Warp))
                    .unwrap_or(0) as u32;
            if waiting + returned == lanes.len() as u32 && returned > 0 {
                return Err((
                    first,
                    format!(
                        "the warp-level call at {} was reached by {waiting} lanes of warp {warp}, but {returned} lanes had returned from the kernel: shuffles and sync_warp need every lane",
                        site_of(&s, first)
                    ),
                ));
            }
            if waiting < lanes.len() as u32 {
                continue;
            }
            if !same_site(&s, lanes.clone()) {
                return Err((
                    first,
                    format!(
                        "lanes of warp {warp} wait at different warp-level calls ({}): shuffles and sync_warp must be reached by all 32 lanes together",
                        describe(&sites(&s, lanes))
                    ),
                ));
            }
            let State {
                warps,
                warp_epochs,
                threads,
                ..
            } = &mut *s;
            let warp_state = &mut warps[w];
            warp_state.exchanged = warp_state.offered;
            warp_state.epoch += 1;
            warp_state.waiting = 0;
            warp_epochs[w] = warp_state.epoch;
            for thread in &mut threads[lanes.start as usize..lanes.end as usize] {
                thread.status = Status::Runnable;
            }
            released = true;
        }
        if released {
            return Ok(false);
        }
        let first = s
            .threads
            .iter()
            .position(|t| t.status == Status::Waiting(Wait::Barrier))
            .unwrap_or(0) as u32;
        if s.at_barrier + s.returned < self.threads {
            return Err((first, deadlock(&s)));
        }
        if s.returned > 0 {
            let gone = s.threads.iter().position(|t| t.status == Status::Returned).unwrap_or(0) as u32;
            return Err((
                first,
                format!(
                    "sync_threads at {} was reached by {} threads, but {} threads of the block had already returned from the kernel (first: thread {}): every thread must reach each barrier",
                    site_of(&s, first),
                    s.at_barrier,
                    s.returned,
                    shadow::thread(gone, self.shape.block)
                ),
            ));
        }
        self.check_barrier(&s)?;
        s.block_epoch += 1;
        s.at_barrier = 0;
        for thread in &mut s.threads {
            thread.status = Status::Runnable;
        }
        Ok(false)
    }

    /// Every thread waits at the same barrier: the same call site, the same count, the same path.
    fn check_barrier(&self, s: &State) -> Result<(), (u32, String)> {
        if !same_site(s, 0..self.threads) {
            return Err((
                0,
                format!(
                    "threads of one block wait at different sync_threads calls ({}): a barrier must be reached by all threads at the same place",
                    describe(&sites(s, 0..self.threads))
                ),
            ));
        }
        let first = &s.threads[0];
        if let Some(t) = (1..self.threads).find(|&t| s.threads[t as usize].barriers != first.barriers) {
            return Err((
                t,
                format!(
                    "threads wait at sync_threads at {} on different passes: thread {} at its barrier number {}, thread {} at number {}; every thread must reach each barrier the same number of times",
                    site_of(s, 0),
                    shadow::thread(0, self.shape.block),
                    first.barriers,
                    shadow::thread(t, self.shape.block),
                    s.threads[t as usize].barriers
                ),
            ));
        }
        if self.trace_paths.get() && first.barriers <= TRACED_BARRIERS {
            // Equal return addresses are one path. Different ones may still be one path in the
            // source: the optimiser can copy a call into both arms of an earlier branch. So where
            // the addresses differ, the source lines decide (in builds without line tables, they
            // cannot, and the check passes).
            for t in 1..self.threads {
                let path = &s.threads[t as usize].path;
                if *path == first.path {
                    continue;
                }
                if let Some((mine, theirs)) = first_difference(&first.path, path) {
                    return Err((
                        t,
                        format!(
                            "threads reach sync_threads at {} through different calls: thread {} through {mine}, thread {} through {theirs}; a barrier in a function called from both sides of a branch is two barriers on the GPU",
                            site_of(s, 0),
                            shadow::thread(0, self.shape.block),
                            shadow::thread(t, self.shape.block),
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Thread `tid` has reached a barrier or warp-level call at `site`; for a barrier in the
    /// launch's first block, `stack_base` bounds the call path recorded (the frames on the
    /// thread's own stack).
    pub fn arrive(&self, tid: u32, wait: Wait, site: Site, stack_base: usize) {
        let mut s = self.state.borrow_mut();
        let thread = &mut s.threads[tid as usize];
        thread.site = Some(site);
        if wait == Wait::Barrier {
            thread.barriers += 1;
            if self.trace_paths.get() && thread.barriers <= TRACED_BARRIERS {
                thread.path.clear();
                let path = &mut thread.path;
                // SAFETY: the trace is taken on this thread's own stack, with no other unwinder
                // running on this OS thread (the worker runs one coroutine at a time).
                unsafe {
                    backtrace::trace_unsynchronized(|frame| {
                        // Frames above the coroutine's entry are the scheduler's, the same for all.
                        if frame.sp() as usize >= stack_base {
                            return false;
                        }
                        path.push(frame.ip() as usize);
                        path.len() < PATH_FRAMES
                    })
                };
            }
        }
    }

    /// Thread `tid` offers `bits` to its warp's shuffle.
    pub fn offer(&self, tid: u32, bits: u32) {
        let mut s = self.state.borrow_mut();
        s.warps[(tid / WARP_SIZE) as usize].offered[(tid % WARP_SIZE) as usize] = bits;
    }

    /// What lane `lane` of thread `tid`'s warp offered to the shuffle just completed.
    pub fn exchanged(&self, tid: u32, lane: u32) -> u32 {
        self.state.borrow().warps[(tid / WARP_SIZE) as usize].exchanged[lane as usize]
    }

    pub fn shared_base(&self) -> *mut u8 {
        self.state.borrow().shared.base()
    }

    pub fn shared_bytes(&self) -> u32 {
        self.shape.shared_bytes
    }

    pub fn carved(&self, view: View) {
        self.state.borrow_mut().shared.carved(view);
    }

    /// Checks and records thread `tid`'s access to `size` bytes at shared address `address`; the
    /// report of a race, an uninitialised read or an access outside shared memory.
    pub fn shared_access(&self, address: usize, size: u32, kind: Kind, tid: u32, site: Site) -> Result<(), String> {
        let mut s = self.state.borrow_mut();
        let offset = address.wrapping_sub(s.shared.base() as usize);
        let Ok(offset) = u32::try_from(offset) else {
            return Err(format!("address {address:#x} is not in the block's shared memory"));
        };
        let State {
            shared,
            warp_epochs,
            block_epoch,
            ..
        } = &mut *s;
        let order = Ordering {
            block_epoch: *block_epoch,
            warp_epochs,
            block_dim: self.shape.block,
        };
        shared.access((offset, size), kind, tid, site, &order)
    }
}

/// Whether the threads in `range` wait at one call site (checked without building the map).
fn same_site(s: &State, range: std::ops::Range<u32>) -> bool {
    let threads = &s.threads[range.start as usize..range.end as usize];
    let first = threads[0].site;
    // Call sites are static: one site is one address, and comparing addresses spares comparing
    // file names.
    let same = |a: Option<Site>, b: Option<Site>| match (a, b) {
        (Some(a), Some(b)) => std::ptr::eq(a, b) || a == b,
        (a, b) => a == b,
    };
    threads.iter().all(|t| same(t.site, first))
}

/// Threads in `range` waiting somewhere, counted by the call site they wait at.
fn sites(s: &State, range: std::ops::Range<u32>) -> BTreeMap<Site, u32> {
    let mut sites = BTreeMap::new();
    for thread in &s.threads[range.start as usize..range.end as usize] {
        if let (Status::Waiting(_), Some(site)) = (thread.status, thread.site) {
            *sites.entry(site).or_default() += 1;
        }
    }
    sites
}

fn describe(sites: &BTreeMap<Site, u32>) -> String {
    let parts: Vec<String> = sites
        .iter()
        .map(|(site, n)| format!("{n} at {}", shadow::site(site)))
        .collect();
    parts.join(", ")
}

fn site_of(s: &State, tid: u32) -> String {
    s.threads[tid as usize].site.map_or_else(|| "?".into(), shadow::site)
}

/// What every thread waits for, when none can go on.
fn deadlock(s: &State) -> String {
    let mut waits: BTreeMap<String, u32> = BTreeMap::new();
    for thread in &s.threads {
        let what = match (thread.status, thread.site) {
            (Status::Waiting(Wait::Barrier), Some(site)) => format!("sync_threads at {}", shadow::site(site)),
            (Status::Waiting(Wait::Warp), Some(site)) => format!("a warp-level call at {}", shadow::site(site)),
            (Status::Returned, _) => "returned from the kernel".to_string(),
            _ => "running".to_string(),
        };
        *waits.entry(what).or_default() += 1;
    }
    let waits: Vec<String> = waits.iter().map(|(what, n)| format!("{n} threads {what}")).collect();
    format!("deadlock: no thread can go on ({})", waits.join("; "))
}

/// The first source line (from the coroutine's start inwards) where two call paths part, one for
/// each; `None` when they are the same in the source or cannot be told apart without line tables.
/// Only the kernel's own lines count (the emulator's frames are the same for every thread), and a
/// path that is the other with frames left out is the same path: optimised code that duplicates a
/// call can drop inlined frames from one copy's line table.
fn first_difference(a: &[usize], b: &[usize]) -> Option<(String, String)> {
    let kernel_lines = |path: &[usize]| -> Option<Vec<String>> {
        Some(
            source_path(path)?
                .into_iter()
                .filter(|line| !is_emulator_line(line))
                .collect(),
        )
    };
    let (a, b) = (kernel_lines(a)?, kernel_lines(b)?);
    if is_subsequence(&a, &b) || is_subsequence(&b, &a) {
        return None;
    }
    let common = a.iter().rev().zip(b.iter().rev()).take_while(|(x, y)| x == y).count();
    match (a.iter().rev().nth(common), b.iter().rev().nth(common)) {
        (None, None) => None,
        (x, y) => {
            let show = |line: Option<&String>| line.cloned().unwrap_or_else(|| "no further call".into());
            Some((show(x), show(y)))
        }
    }
}

/// A line of the emulator itself or of the `kernel!` macro's launch glue.
fn is_emulator_line(line: &str) -> bool {
    let line = line.replace('\\', "/");
    line.contains("kernels/src/emu/") || line.contains("kernels/src/kernel_macro.rs")
}

/// Whether every element of `short` appears in `long`, in order.
fn is_subsequence(short: &[String], long: &[String]) -> bool {
    let mut rest = long.iter();
    short.iter().all(|line| rest.any(|other| other == line))
}

/// The source lines of a call path, innermost first, inlined frames included; `None` where a
/// frame has no line table.
fn source_path(path: &[usize]) -> Option<Vec<String>> {
    static LINES: std::sync::Mutex<BTreeMap<usize, Vec<String>>> = std::sync::Mutex::new(BTreeMap::new());
    let mut cache = LINES.lock().unwrap_or_else(|e| e.into_inner());
    let mut lines = Vec::new();
    for &ip in path {
        let frame = cache.entry(ip).or_insert_with(|| {
            let mut frame = Vec::new();
            // The return address is one past the call: resolve the call itself.
            backtrace::resolve((ip - 1) as *mut std::ffi::c_void, |symbol| {
                if let (Some(file), Some(line)) = (symbol.filename(), symbol.lineno()) {
                    frame.push(format!("{}:{line}:{}", file.display(), symbol.colno().unwrap_or(0)));
                }
            });
            frame
        });
        if frame.is_empty() {
            return None;
        }
        lines.extend(frame.iter().cloned());
    }
    Some(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_path_with_frames_left_out_is_the_same_path_and_a_different_call_is_not() {
        let full = lines(&["helper.rs:10", "kernel.rs:5", "kernel.rs:2"]);
        // Optimised line tables dropped the helper's frame: the same path.
        assert!(is_subsequence(&lines(&["kernel.rs:5", "kernel.rs:2"]), &full));
        assert!(is_subsequence(&lines(&[]), &full));
        // The helper called from another line: a different path, either way round.
        let other = lines(&["helper.rs:10", "kernel.rs:7", "kernel.rs:2"]);
        assert!(!is_subsequence(&other, &full));
        assert!(!is_subsequence(&full, &other));
        // Order matters.
        assert!(!is_subsequence(&lines(&["kernel.rs:2", "kernel.rs:5"]), &full));
    }

    #[test]
    fn the_emulator_and_the_launch_glue_are_not_kernel_lines() {
        assert!(is_emulator_line("/work/x/kernels/src/emu/device.rs:31:5"));
        assert!(is_emulator_line("C:\\x\\kernels\\src\\kernel_macro.rs:78:94"));
        assert!(!is_emulator_line("/work/x/kernels/src/scan/mod.rs:12:3"));
        assert!(!is_emulator_line("/work/x/kernels/tests/detectors.rs:335:13"));
    }
}
