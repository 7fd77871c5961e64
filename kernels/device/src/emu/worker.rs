//! The emulator's workers: OS threads that run a launch's blocks, each block a coroutine whose
//! threads are coroutines inside it (`block.rs`).
//!
//! A worker takes the next block in the schedule's order and runs it until it ends, fails, or
//! gives way: because all its threads wait for global words that other blocks will write
//! (`spin.rs`), or, under the interleaved schedule, at an atomic or a fence. A worker whose blocks
//! all wait starts another block, as a GPU with room left would, up to [`HELD_THREADS`] threads
//! held at once across the launch; with none left to start it polls its blocks again. When every
//! worker has found nothing but unchanged words for [`spin_limit`](super::spin_limit), the launch
//! fails with the wait of the first block in grid order.

use super::LaunchState;
use super::block::{BlockCoroutine, BlockEnd, BlockEvent, BlockRun, Failure, Resume};
use super::schedule::{BlockOrder, Choices, Schedule};
use super::stack::Stacks;
use crate::launch::{Dim3, LaunchShape};
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// Threads the emulator holds at once in blocks that have started and not ended (a GPU holds a
/// few hundred thousand): blocks that wait for blocks past this many deadlock, as on a GPU.
pub(crate) const HELD_THREADS: u64 = 1 << 16;

/// How long a worker whose blocks all wait polls them again, while other workers run blocks,
/// before it starts another block.
const PATIENCE: std::time::Duration = std::time::Duration::from_micros(50);

/// Blocks the interleaved schedule keeps going at once and switches between.
const INTERLEAVED_BLOCKS: usize = 4;

/// Stack of a block's coroutine: the block's scheduler runs there, its threads on stacks of their
/// own.
const BLOCK_STACK_BYTES: usize = 256 << 10;

/// What the workers of one launch share.
pub(crate) struct Workers<'a> {
    pub shape: &'a LaunchShape,
    pub body: &'static (dyn Fn() + Sync),
    pub state: &'a LaunchState,
    pub schedule: Schedule,
    pub order: BlockOrder,
    pub blocks: u64,
    pub workers: usize,
    /// The next position in the schedule's order to start.
    pub next: AtomicU64,
    /// Blocks started and not ended, across the workers, and the most there may be.
    pub held: AtomicU64,
    pub held_limit: u64,
    pub stop: AtomicBool,
    /// The first failed block in grid order so far (`u64::MAX`: none).
    pub first_failed: AtomicU64,
    pub failures: Mutex<Vec<(u64, Failure)>>,
    /// Workers with nothing to do but poll unchanged words (or nothing at all).
    pub idle: AtomicUsize,
    /// Bumped by a worker whenever it sees progress: a block that went on, ended or started.
    pub activity: AtomicU64,
    /// Set once every block waits past the spin limit: each worker then reports its waiting
    /// blocks' first, and the launch stops when all have (`settled` counts them, and the workers
    /// that had ended).
    pub deadlocked: AtomicBool,
    pub settled: AtomicUsize,
}

impl<'a> Workers<'a> {
    pub fn new(
        shape: &'a LaunchShape,
        body: &'static (dyn Fn() + Sync),
        state: &'a LaunchState,
        schedule: Schedule,
    ) -> Self {
        let blocks = shape.grid.volume();
        let workers = if schedule.one_worker() {
            1
        } else {
            std::thread::available_parallelism()
                .map_or(1, |n| n.get() as u64)
                .min(blocks) as usize
        };
        Workers {
            shape,
            body,
            state,
            schedule,
            order: schedule.order(blocks),
            blocks,
            workers,
            next: AtomicU64::new(0),
            held: AtomicU64::new(0),
            held_limit: (HELD_THREADS / shape.block.volume()).max(workers as u64),
            stop: AtomicBool::new(false),
            first_failed: AtomicU64::new(u64::MAX),
            failures: Mutex::new(Vec::new()),
            idle: AtomicUsize::new(0),
            activity: AtomicU64::new(0),
            deadlocked: AtomicBool::new(false),
            settled: AtomicUsize::new(0),
        }
    }

    fn fail(&self, linear: u64, failure: Failure) {
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((linear, failure));
        self.first_failed.fetch_min(linear, Ordering::Relaxed);
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Claims the next block to start, if one is left and the launch may hold another; `holding`
    /// is how many this worker holds (it may always hold one).
    fn claim(&self, holding: usize) -> Option<u64> {
        if holding > 0 {
            let held = self.held.fetch_add(1, Ordering::Relaxed);
            if held >= self.held_limit {
                self.held.fetch_sub(1, Ordering::Relaxed);
                return None;
            }
        } else {
            self.held.fetch_add(1, Ordering::Relaxed);
        }
        let position = self.next.fetch_add(1, Ordering::Relaxed);
        if position >= self.blocks {
            self.held.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        Some(self.order.block(position))
    }

    /// Counts a worker that has reported its part of a deadlock, or ended; the last stops the
    /// launch.
    fn settle(&self) {
        if self.settled.fetch_add(1, Ordering::AcqRel) + 1 == self.workers {
            self.stop.store(true, Ordering::Relaxed);
        }
    }

    fn left_to_start(&self) -> bool {
        self.next.load(Ordering::Relaxed) < self.blocks
    }
}

/// A block a worker holds: its coroutine, and the runner and thread stacks the coroutine uses.
struct Held {
    linear: u64,
    coroutine: BlockCoroutine,
    parts: Parts,
    /// Whether its last turn ended with every thread waiting on unchanged words.
    stalled: bool,
}

/// What a block runs with, kept by the worker for its next block once one ends: making them
/// (a runner for every thread, stacks mapped) costs more than running most blocks.
struct Parts {
    run: Box<BlockRun>,
    stacks: Box<Stacks>,
}

/// Parts of ended blocks, and their coroutines' stacks.
#[derive(Default)]
struct Spare {
    parts: Vec<Parts>,
    stacks: Vec<DefaultStack>,
}

/// One worker's loop: runs blocks until none is left or the launch stops.
pub(crate) fn work(shared: &Workers, worker: usize) {
    let mut held: Vec<Held> = Vec::new();
    let mut spare = Spare::default();
    let mut choices = Choices::new(match shared.schedule {
        Schedule::Interleaved { seed } | Schedule::Random { seed } => seed ^ worker as u64,
        _ => worker as u64,
    });
    let interleaved = shared.schedule.switches_at_atomics();
    let mut idle = Idle::default();
    // Since when every held block has polled unchanged words.
    let mut waiting_since: Option<Instant> = None;
    let mut reported = false;
    while !shared.stop.load(Ordering::Relaxed) {
        if shared.deadlocked.load(Ordering::Acquire) {
            if !reported {
                deadlock(shared, &held);
                reported = true;
                shared.settle();
            }
            std::thread::yield_now();
            continue;
        }
        let all_stalled = held.iter().all(|h| h.stalled);
        // A worker whose blocks all wait for a block another worker runs polls them a little
        // before it starts another: the wait is usually short (a look-back, a chain of tickets).
        let patient = all_stalled
            && !held.is_empty()
            && waiting_since.is_none_or(|since| since.elapsed() < PATIENCE)
            && idle.others_busy(shared);
        // Under the interleaved schedule, keep a few blocks going at once.
        let want_more = (all_stalled && !patient) || (interleaved && held.len() < INTERLEAVED_BLOCKS);
        if want_more && let Some(linear) = shared.claim(held.len()) {
            match start(shared, linear, &mut spare) {
                Ok(block) => held.push(block),
                Err(failure) => shared.fail(linear, failure),
            }
            idle.busy(shared);
            waiting_since = None;
            continue;
        }
        let runnable: Vec<usize> = (0..held.len()).filter(|&i| !held[i].stalled).collect();
        if !runnable.is_empty() {
            let pick = if interleaved {
                runnable[choices.below(runnable.len())]
            } else {
                runnable[0]
            };
            turn(shared, &mut held, pick, &mut spare);
            idle.busy(shared);
            waiting_since = None;
            continue;
        }
        if held.is_empty() {
            if !shared.left_to_start() {
                break;
            }
            continue;
        }
        // Every block this worker holds waits: poll each once more.
        let mut progressed = false;
        for i in (0..held.len()).rev() {
            let before = held[i].parts.run.progress();
            let ended = turn(shared, &mut held, i, &mut spare);
            progressed |= ended || held.get(i).is_some_and(|h| h.parts.run.progress() != before);
        }
        if progressed {
            idle.busy(shared);
            waiting_since = None;
        } else if patient {
            waiting_since.get_or_insert_with(Instant::now);
            std::hint::spin_loop();
        } else if let Some(()) = idle.waiting(shared) {
            shared.deadlocked.store(true, Ordering::Release);
        }
    }
    finish_earlier(shared, &mut held, &mut spare);
    for block in &mut held {
        stop(block);
    }
    idle.done(shared);
    if !reported {
        shared.settle();
    }
}

/// Starts block `linear` in a coroutine of its own (not run yet), with parts from `spare`.
fn start(shared: &Workers, linear: u64, spare: &mut Spare) -> Result<Held, Failure> {
    let block_idx = unlinearize(linear, shared.shape.grid);
    let stack = match spare.stacks.pop() {
        Some(stack) => stack,
        None => DefaultStack::new(BLOCK_STACK_BYTES).map_err(|e| Failure {
            block: block_idx,
            thread: Dim3::new(0, 0, 0),
            message: format!("the emulator cannot allocate a block's stack: {e}"),
        })?,
    };
    let mut parts = spare.parts.pop().unwrap_or_else(|| Parts {
        run: BlockRun::new(shared.shape, shared.state),
        stacks: Box::new(Stacks::take(shared.shape.block.volume() as usize)),
    });
    let run: *const BlockRun = &*parts.run;
    let stacks: *mut Stacks = &mut *parts.stacks;
    let body = shared.body;
    let coroutine = Coroutine::with_stack(stack, move |yielder, first: Resume| {
        // SAFETY: the runner and the stacks are boxed in the same `Held` as this coroutine, which
        // is run to its end (or stopped) before they are dropped or reused, and nothing else
        // touches them meanwhile.
        let (run, stacks) = unsafe { (&*run, &mut *stacks) };
        if first == Resume::Abort {
            return BlockEnd::Aborted;
        }
        run.enter(yielder);
        run.run((block_idx, linear), body, stacks)
    });
    Ok(Held {
        linear,
        coroutine,
        parts,
        stalled: false,
    })
}

/// Gives held block `index` a turn; whether it ended (it is then removed and its runner kept).
fn turn(shared: &Workers, held: &mut Vec<Held>, index: usize, spare: &mut Spare) -> bool {
    let block = &mut held[index];
    match block.coroutine.resume(Resume::Go) {
        CoroutineResult::Yield(BlockEvent::Stalled) => {
            block.stalled = true;
            false
        }
        CoroutineResult::Yield(BlockEvent::Switch) => {
            block.stalled = false;
            false
        }
        CoroutineResult::Return(end) => {
            let block = held.swap_remove(index);
            shared.held.fetch_sub(1, Ordering::Relaxed);
            if let BlockEnd::Failed(failure) = end {
                shared.fail(block.linear, failure);
            }
            spare.stacks.push(block.coroutine.into_stack());
            spare.parts.push(block.parts);
            true
        }
    }
}

/// Once a block has failed, runs on the held blocks before it in grid order until they end, fail
/// or wait: the launch reports the first failure in grid order, whichever worker's block failed
/// first in time. A block that waits may wait for a block already stopped, so it is stopped too.
fn finish_earlier(shared: &Workers, held: &mut Vec<Held>, spare: &mut Spare) {
    while let Some(index) = held
        .iter()
        .position(|h| !h.stalled && h.linear < shared.first_failed.load(Ordering::Relaxed))
    {
        turn(shared, held, index, spare);
    }
}

/// Ends a held block that has not ended: its waiting threads unwind, and nothing is reported.
fn stop(block: &mut Held) {
    while !block.coroutine.done() {
        // Stopping is why it ends: how it ends adds nothing.
        let _ = block.coroutine.resume(Resume::Abort);
    }
}

/// Records the wait of this worker's first held block in grid order (the launch reports the first
/// of all workers').
fn deadlock(shared: &Workers, held: &[Held]) {
    let Some(block) = held.iter().min_by_key(|h| h.linear) else {
        return;
    };
    let Some((thread, spin)) = block.parts.run.waiting_thread() else {
        return;
    };
    let blocks = shared.held.load(Ordering::Relaxed);
    let limit = (shared.left_to_start() && blocks >= shared.held_limit).then_some(shared.held_limit);
    let message = super::spin::report(&spin, blocks, limit);
    shared.failures.lock().unwrap_or_else(|e| e.into_inner()).push((
        block.linear,
        Failure {
            block: unlinearize(block.linear, shared.shape.grid),
            thread,
            message,
        },
    ));
}

/// A worker's part in finding a launch whose every block waits: it counts itself idle while it
/// has nothing to do but poll unchanged words, and the launch fails once every worker has been
/// idle, with no worker seeing progress, for the spin limit.
#[derive(Default)]
struct Idle {
    counted: bool,
    since: Option<(Instant, u64)>,
    rounds: u32,
}

impl Idle {
    fn busy(&mut self, shared: &Workers) {
        if self.counted {
            shared.idle.fetch_sub(1, Ordering::Relaxed);
            self.counted = false;
        }
        self.since = None;
        self.rounds = 0;
        shared.activity.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether a worker other than this one is running blocks.
    fn others_busy(&self, shared: &Workers) -> bool {
        let idle_others = shared.idle.load(Ordering::Relaxed) - self.counted as usize;
        idle_others + 1 < shared.workers
    }

    /// Another round with nothing new; `Some` once the launch is deadlocked.
    fn waiting(&mut self, shared: &Workers) -> Option<()> {
        if !self.counted {
            shared.idle.fetch_add(1, Ordering::Relaxed);
            self.counted = true;
        }
        let activity = shared.activity.load(Ordering::Relaxed);
        let everyone = shared.idle.load(Ordering::Relaxed) == shared.workers;
        match self.since {
            Some((since, seen)) if everyone && seen == activity => {
                if since.elapsed() >= super::spin_limit() {
                    return Some(());
                }
            }
            _ => self.since = everyone.then(|| (Instant::now(), activity)),
        }
        // Leave the core to the workers that run blocks.
        self.rounds += 1;
        if self.rounds < 64 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
        None
    }

    fn done(&mut self, shared: &Workers) {
        if !self.counted {
            shared.idle.fetch_add(1, Ordering::Relaxed);
            self.counted = true;
        }
    }
}

pub(crate) fn unlinearize(linear: u64, extent: Dim3) -> Dim3 {
    let (x, y) = (extent.x as u64, extent.y as u64);
    Dim3::new((linear % x) as u32, (linear / x % y) as u32, (linear / (x * y)) as u32)
}
