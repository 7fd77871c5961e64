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
//!
//! A thread that polls a global word and finds what it found there before (a wait on another
//! block) yields too; when such waits are all that is left, the block itself gives way to its
//! worker (`worker.rs`), which runs other blocks and comes back to poll again. Under the
//! interleaved schedule a thread also gives way at every atomic and fence, and the block with it.

use super::context::{Current, set_current, stack_address, take_panic_message};
use super::shadow::{self, Kind, Ordering, SharedMemory, Site, View};
use super::stack::{Stacks, ThreadStack};
use crate::launch::WARP_SIZE;
use crate::launch::{Dim3, LaunchShape};
use corosensei::{Coroutine, CoroutineResult, Yielder};
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
    /// A global word to change: its poll found what this thread's last poll of it found.
    Spin,
    /// Nothing: the interleaved schedule lets another block run here (an atomic or a fence).
    Switch,
}

/// Why a block gives way to its worker before it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BlockEvent {
    /// Every thread that can go on waits for a global word to change.
    Stalled,
    /// A thread reached an atomic or a fence under the interleaved schedule.
    Switch,
}

/// How a block ended.
pub(crate) enum BlockEnd {
    Done,
    Failed(Failure),
    /// Stopped because another block of the launch failed.
    Aborted,
}

/// The worker's side of a block that is running: a coroutine of its own, whose threads are
/// coroutines inside it.
pub(crate) type BlockCoroutine = Coroutine<Resume, BlockEvent, BlockEnd, corosensei::stack::DefaultStack>;

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

/// Why the scheduler stopped before every thread returned.
enum Stop {
    Failed(u32, String),
    Aborted,
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
    /// Threads waiting at a block barrier, threads that have returned, threads waiting for a
    /// global word to change.
    at_barrier: u32,
    returned: u32,
    spinning: u32,
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

/// What [`BlockRun::release`] could do.
enum Released {
    AllReturned,
    /// A warp or the block went on.
    Opened,
    /// Nothing: every thread that has not returned waits, some of them for a global word.
    Nothing,
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
    /// What the launch's blocks share; outlives the run.
    launch: *const super::LaunchState,
    /// The block coroutine's yielder, while the block runs in one.
    yielder: Cell<*const Yielder<Resume, BlockEvent>>,
    /// Bumped whenever a thread writes memory (shared or global, through the device layer),
    /// finds a polled word changed, or returns: a block whose threads do none of these while some
    /// poll is waiting, and a worker that finds it unchanged after resuming a stalled block knows
    /// the block still waits.
    progress: Cell<u64>,
    /// The block's linear index in the grid, and its barriers passed so far (the state's
    /// `block_epoch`, kept here too for the global accesses' records).
    linear: Cell<u64>,
    epoch: Cell<u32>,
    /// What every thread of the block knows of other blocks' accesses since its last barrier.
    known: RefCell<super::order::Clock>,
    /// Words the block's threads read with relaxed loads before its last barrier, which a fence
    /// after it acquires.
    read_before_barrier: RefCell<Vec<usize>>,
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
    pub fn new(shape: &LaunchShape, launch: &super::LaunchState) -> Box<BlockRun> {
        let threads = shape.block.volume() as u32;
        let warps = threads.div_ceil(WARP_SIZE) as usize;
        let mut run = Box::new(BlockRun {
            launch,
            yielder: Cell::new(std::ptr::null()),
            progress: Cell::new(0),
            linear: Cell::new(0),
            epoch: Cell::new(0),
            known: RefCell::new(Default::default()),
            read_before_barrier: RefCell::new(Vec::new()),
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
                spinning: 0,
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
                order: Default::default(),
            });
        }
        run
    }

    /// What the launch's blocks share.
    pub fn launch(&self) -> &super::LaunchState {
        // SAFETY: owned by the launch, which joins every worker (and so drops every BlockRun)
        // before it returns.
        unsafe { &*self.launch }
    }

    /// Whether threads give way to other blocks at every atomic and fence (the interleaved
    /// schedule).
    pub fn switches_at_atomics(&self) -> bool {
        self.launch().switches_at_atomics
    }

    /// Threads in warp `warp`: 32, or fewer in the last warp of a block that is not a multiple of 32.
    pub fn warp_len(&self, warp: u32) -> u32 {
        (self.threads - warp * WARP_SIZE).min(WARP_SIZE)
    }

    /// Runs block `block_idx` with `body` as every thread's kernel, taking stacks from `stacks` and
    /// giving them back. Called inside the block's coroutine (its yielder set by
    /// [`BlockRun::enter`]), to which it gives way while it waits on other blocks.
    pub fn run(
        &self,
        (block_idx, linear): (Dim3, u64),
        body: &'static (dyn Fn() + Sync),
        stacks: &mut Stacks,
    ) -> BlockEnd {
        for current in &self.currents {
            current.block_idx.set(block_idx);
            // Copies a thread of the previous block left unwaited never land in this one.
            *current.copies.borrow_mut() = Default::default();
            current.spin.set(Default::default());
            current.order.borrow_mut().reset();
        }
        self.linear.set(linear);
        self.epoch.set(0);
        self.known.borrow_mut().clear();
        self.read_before_barrier.borrow_mut().clear();
        self.trace_paths.set(linear == 0);
        self.reset();
        let mut threads = Vec::with_capacity(self.threads as usize);
        for current in &self.currents {
            let stack = match stacks.get() {
                Ok(stack) => stack,
                Err(e) => {
                    // The coroutines made so far never started: dropping them runs nothing.
                    for thread in threads {
                        stacks.put(Thread_::into_stack(thread));
                    }
                    return BlockEnd::Failed(Failure {
                        block: block_idx,
                        thread: current.thread_idx,
                        message: format!("the emulator cannot allocate a thread's stack: {e}"),
                    });
                }
            };
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
        match result {
            Ok(()) => BlockEnd::Done,
            Err(Stop::Aborted) => BlockEnd::Aborted,
            Err(Stop::Failed(tid, message)) => BlockEnd::Failed(Failure {
                block: block_idx,
                thread: self.currents[tid as usize].thread_idx,
                message,
            }),
        }
    }

    /// Records the yielder of the block coroutine this block runs in.
    pub fn enter(&self, yielder: &Yielder<Resume, BlockEvent>) {
        self.yielder.set(yielder);
    }

    /// How many times a thread of this block has done more than poll an unchanged word again.
    pub fn progress(&self) -> u64 {
        self.progress.get()
    }

    /// Records progress (see `progress`).
    pub fn progressed(&self) {
        self.progress.set(self.progress.get() + 1);
    }

    /// Gives way to the worker; `Err` when the worker stops the block instead of resuming it.
    fn give_way(&self, event: BlockEvent) -> Result<(), Stop> {
        let yielder = self.yielder.get();
        debug_assert!(!yielder.is_null(), "a block gives way only inside its coroutine");
        // SAFETY: set by the block's coroutine when it started, and that coroutine is running
        // (this code runs on its stack).
        match unsafe { &*yielder }.suspend(event) {
            Resume::Go => Ok(()),
            Resume::Abort => Err(Stop::Aborted),
        }
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
        s.spinning = 0;
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

    /// Resumes threads until all have returned, or one failed; gives way to the worker where
    /// every thread that can go on waits for a global word, and at every switch a thread asks for.
    fn schedule(&self, threads: &mut [Thread_]) -> Result<(), Stop> {
        loop {
            let progress = self.progress.get();
            for tid in 0..self.threads {
                loop {
                    let status = self.state.borrow().threads[tid as usize].status;
                    if !matches!(status, Status::Runnable | Status::Waiting(Wait::Spin)) {
                        break;
                    }
                    if let Some(failure) = self.resume(threads, tid, Resume::Go) {
                        return Err(Stop::Failed(failure.0, failure.1));
                    }
                    if self.state.borrow().threads[tid as usize].status == Status::Waiting(Wait::Switch) {
                        self.give_way(BlockEvent::Switch)?;
                        self.state.borrow_mut().threads[tid as usize].status = Status::Runnable;
                        continue;
                    }
                    break;
                }
            }
            // Runs and barriers are not progress of their own (a warp that polls words in turn
            // passes warp barriers between polls): what they write is.
            match self.release().map_err(|(tid, message)| Stop::Failed(tid, message))? {
                Released::AllReturned => return Ok(()),
                Released::Nothing if self.progress.get() == progress => self.give_way(BlockEvent::Stalled)?,
                Released::Opened | Released::Nothing => {}
            }
        }
    }

    /// Resumes thread `tid` until it waits or ends, and records which; the launch's failure, once
    /// there is one.
    fn resume(&self, threads: &mut [Thread_], tid: u32, how: Resume) -> Option<(u32, String)> {
        {
            let mut s = self.state.borrow_mut();
            if s.threads[tid as usize].status == Status::Waiting(Wait::Spin) {
                s.spinning -= 1;
            }
        }
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
            CoroutineResult::Yield(Wait::Spin) => {
                s.spinning += 1;
                Status::Waiting(Wait::Spin)
            }
            CoroutineResult::Yield(Wait::Switch) => Status::Waiting(Wait::Switch),
            CoroutineResult::Return(outcome) => {
                self.progress.set(self.progress.get() + 1);
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

    /// The first thread that waits for a global word, and what it polled: for the report of a
    /// launch in which every block waits.
    pub fn waiting_thread(&self) -> Option<(Dim3, super::spin::Spin)> {
        let s = self.state.borrow();
        let tid = s.threads.iter().position(|t| t.status == Status::Waiting(Wait::Spin))?;
        Some((self.currents[tid].thread_idx, self.currents[tid].spin.get()))
    }

    /// With no thread runnable: lets a warp or the block go on, reports that every thread has
    /// returned, that nothing can go on until a global word changes, or says why the block is
    /// stuck. Works from the running counts, so a barrier costs a pass over the warps, not over
    /// the threads, until it opens.
    fn release(&self) -> Result<Released, (u32, String)> {
        let mut s = self.state.borrow_mut();
        if s.returned == self.threads {
            return Ok(Released::AllReturned);
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
            return Ok(Released::Opened);
        }
        if s.spinning > 0 {
            // The waits on global words may end: what else is stuck is judged once they have.
            return Ok(Released::Nothing);
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
        self.epoch.set(s.block_epoch);
        if self.launch().views.is_some() {
            // What each thread acquired before the barrier, every thread knows after it; what
            // each read with relaxed loads, every thread's next fence acquires.
            let mut known = self.known.borrow_mut();
            let mut read = self.read_before_barrier.borrow_mut();
            for current in &self.currents {
                let mut order = current.order.borrow_mut();
                known.join(&order.acquired);
                order.acquired.clear();
                for address in order.take_pending() {
                    super::order::remember(&mut read, address);
                }
            }
        }
        s.at_barrier = 0;
        for thread in &mut s.threads {
            thread.status = Status::Runnable;
        }
        Ok(Released::Opened)
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

    /// Checks and records `current`'s access of `size` bytes of global memory at `address`
    /// against the launch's views; the report of a race.
    pub fn global_access(
        &self,
        current: &Current,
        views: &super::memory::Views,
        (address, size): (usize, usize),
        kind: super::memory::Kind,
        site: Site,
    ) -> Result<(), String> {
        if matches!(kind, super::memory::Kind::Write | super::memory::Kind::AtomicWrite) {
            self.progressed();
        }
        let epoch = self.epoch.get();
        let mut order = current.order.borrow_mut();
        let me = super::order::Access {
            block: u32::try_from(self.linear.get()).unwrap_or(u32::MAX),
            tid: current.tid,
            epoch,
            count: order.count(epoch),
            atomic: matches!(kind, super::memory::Kind::AtomicRead | super::memory::Kind::AtomicWrite),
        };
        let known = self.known.borrow();
        let acquired = &order.acquired;
        views.access((address, size), kind, me, site, |other| {
            if other.block == me.block {
                other.epoch < epoch
            } else {
                known.covers(other) || acquired.covers(other)
            }
        })
    }

    /// Orders `current`'s atomic access of the word at `address` as `sync` says.
    pub fn order_atomic(
        &self,
        current: &Current,
        views: &super::memory::Views,
        address: usize,
        sync: super::order::Sync,
    ) {
        let (known, read) = (self.known.borrow(), self.read_before_barrier.borrow());
        views.sync.atomic(
            address,
            sync,
            self.agent(current, (&known, &read), &mut current.order.borrow_mut()),
        );
    }

    /// Orders `current`'s `thread_fence`.
    pub fn order_fence(&self, current: &Current, views: &super::memory::Views) {
        let (known, read) = (self.known.borrow(), self.read_before_barrier.borrow());
        views
            .sync
            .fence(self.agent(current, (&known, &read), &mut current.order.borrow_mut()));
    }

    fn agent<'a>(
        &self,
        current: &Current,
        (known, read_before_barrier): (&'a super::order::Clock, &'a [usize]),
        thread: &'a mut super::order::ThreadOrder,
    ) -> super::order::Agent<'a> {
        super::order::Agent {
            block: u32::try_from(self.linear.get()).unwrap_or(u32::MAX),
            tid: current.tid,
            epoch: self.epoch.get(),
            known,
            read_before_barrier,
            thread,
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
        if kind != Kind::Read {
            self.progressed();
        }
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
            (Status::Waiting(Wait::Spin | Wait::Switch), _) => "waiting for a global word".to_string(),
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
    is_line_of(line, concat!(env!("CARGO_MANIFEST_DIR"), "/src/emu/"))
        || is_line_of(line, concat!(env!("CARGO_MANIFEST_DIR"), "/src/device/emulated.rs"))
        || is_line_of(line, concat!(env!("CARGO_MANIFEST_DIR"), "/src/kernel_macro.rs"))
}

/// Whether `line` ("file:line:column") is in `path` (a file or a folder ending in `/`), whichever
/// way the paths' separators lean.
fn is_line_of(line: &str, path: &str) -> bool {
    line.replace('\\', "/").starts_with(&path.replace('\\', "/"))
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
        let ours = env!("CARGO_MANIFEST_DIR");
        assert!(is_emulator_line(&format!("{ours}/src/emu/block.rs:31:5")));
        assert!(is_emulator_line(&format!("{ours}/src/device/emulated.rs:31:5")));
        assert!(is_emulator_line(&format!(
            "{}/src/kernel_macro.rs:78:94",
            ours.replace('/', "\\")
        )));
        assert!(!is_emulator_line(&format!("{ours}/src/device/mma.rs:12:3")));
        assert!(!is_emulator_line("/work/x/kernels/src/scan/mod.rs:12:3"));
        assert!(!is_emulator_line(&format!("{ours}/tests/detectors.rs:335:13")));
    }
}
