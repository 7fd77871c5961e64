//! The emulated threads' stacks, and a pool of them kept across blocks and launches.
//!
//! Each stack's top is moved down by a different multiple of a cache line. Fresh mappings all begin
//! at a page boundary, so 1024 stack tops would share their low address bits and fall into the same
//! few cache sets: every switch to a thread would miss (measured: 53.7 ns per thread per barrier
//! with aligned tops; see the perf log for after).

use corosensei::stack::{DefaultStack, Stack, StackPointer};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Stack of each emulated thread. Far more than the 512 KiB of local memory a CUDA thread may have,
/// so that every kernel the GPU can run fits; only the pages a kernel touches take memory.
pub(crate) const STACK_BYTES: usize = 8 << 20;

/// The tops spread over this span: 1024 cache lines, as many as a block has threads.
const STAGGER_SPAN: usize = 64 << 10;
const CACHE_LINE: usize = 64;

/// A stack whose top sits `offset` bytes below the mapping's end.
pub(crate) struct ThreadStack {
    stack: DefaultStack,
    offset: usize,
}

impl ThreadStack {
    fn new() -> std::io::Result<ThreadStack> {
        static CREATED: AtomicUsize = AtomicUsize::new(0);
        let index = CREATED.fetch_add(1, Ordering::Relaxed);
        Ok(ThreadStack {
            stack: DefaultStack::new(STACK_BYTES + STAGGER_SPAN)?,
            offset: (index * CACHE_LINE) % STAGGER_SPAN,
        })
    }
}

// SAFETY: the base moves down by a multiple of 64 bytes, so it stays aligned and inside the
// mapping; the limit and the guard page are the inner stack's, and at least STACK_BYTES remain.
unsafe impl Stack for ThreadStack {
    fn base(&self) -> StackPointer {
        StackPointer::new(self.stack.base().get() - self.offset).expect("a stack's base is far above 0")
    }

    fn limit(&self) -> StackPointer {
        self.stack.limit()
    }
}

/// Stacks of finished threads, kept for the next block and the next launch: mapping them costs
/// more than running most blocks.
static POOL: Mutex<Vec<ThreadStack>> = Mutex::new(Vec::new());

/// Most stacks the pool keeps: enough for the blocks a launch usually holds at once; those of a
/// launch that held many more (blocks waiting on each other) are unmapped, with the pages they
/// touched.
const POOL_LIMIT: usize = 8192;

/// Stacks a worker holds for its blocks' threads.
pub(crate) struct Stacks(Vec<ThreadStack>);

impl Stacks {
    /// Up to `count` stacks from the pool; `get` maps any more the worker needs.
    pub fn take(count: usize) -> Stacks {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let keep = pool.len().saturating_sub(count);
        Stacks(pool.split_off(keep))
    }

    pub fn get(&mut self) -> std::io::Result<ThreadStack> {
        match self.0.pop() {
            Some(stack) => Ok(stack),
            None => ThreadStack::new(),
        }
    }

    pub fn put(&mut self, stack: ThreadStack) {
        self.0.push(stack);
    }
}

impl Drop for Stacks {
    fn drop(&mut self) {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let room = POOL_LIMIT.saturating_sub(pool.len());
        let keep = self.0.len().min(room);
        pool.extend(self.0.drain(..keep));
        drop(pool);
        // The rest are unmapped here, outside the lock.
        self.0.clear();
    }
}
