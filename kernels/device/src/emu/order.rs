//! Which accesses of other blocks a thread's access is ordered after: happens-before between the
//! blocks of a launch, as the PTX memory model builds it from releases and acquires.
//!
//! Inside a block, a barrier orders everything before it before everything after it; so an
//! access is named by its block, its thread, the block's barrier count (epoch) at the access, and
//! how many releases its thread had made in that epoch. A **release** by thread `t` of block `B`
//! ([`store_release`](crate::device::store_release), or a relaxed store or read-modify-write after a
//! [`thread_fence`](crate::device::thread_fence)) covers every access of `B` before `B`'s current
//! barrier and `t`'s own accesses before the release, and also what `t` had acquired itself; the
//! word it writes keeps that ([`Clock`]). An **acquire** (`load_acquire`, or a relaxed load or
//! read-modify-write followed by a fence) of the word adds what it keeps to what the thread
//! knows, and a barrier shares what each thread of a block knows with the others. A conflicting
//! access of another block is ordered iff what the accessing thread (or its block) knows covers it.
//!
//! Kept only in launches that take typed views, whose accesses the emulator records: atomics
//! through raw pointers still order those (a ticket, a status word), at the cost of a lock per
//! atomic.

use std::collections::HashMap;
use std::sync::Mutex;

/// Releases a thread may make in one epoch and still be told apart: past this many, its further
/// accesses in that epoch are not recorded (reports are never wrong, some races go unseen).
pub(crate) const COUNT_LIMIT: u32 = (1 << 11) - 1;
/// Barriers a block may pass and have its accesses recorded (as for [`COUNT_LIMIT`]).
pub(crate) const EPOCH_LIMIT: u32 = (1 << 20) - 1;

/// One access, as the shadow keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Access {
    /// The block's linear index in the grid.
    pub block: u32,
    /// The thread's linear index in the block.
    pub tid: u32,
    pub epoch: u32,
    pub count: u32,
    pub atomic: bool,
}

/// What one release of block `B` covers of `B`'s accesses: all before barrier `epoch`, and each
/// listed thread's own before its `count`-th release of that epoch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mark {
    epoch: u32,
    threads: Vec<(u32, u32)>,
}

impl Mark {
    fn covers(&self, access: &Access) -> bool {
        access.epoch < self.epoch
            || (access.epoch == self.epoch
                && self
                    .threads
                    .iter()
                    .any(|&(tid, count)| tid == access.tid && access.count < count))
    }

    fn join(&mut self, other: &Mark) {
        if other.epoch > self.epoch {
            *self = other.clone();
        } else if other.epoch == self.epoch {
            for &(tid, count) in &other.threads {
                match self.threads.iter_mut().find(|(t, _)| *t == tid) {
                    Some(entry) => entry.1 = entry.1.max(count),
                    None => self.threads.push((tid, count)),
                }
            }
        }
    }
}

/// For each block, the accesses of it ordered before a point (sorted by block).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Clock {
    marks: Vec<(u32, Mark)>,
}

impl Clock {
    fn mark(&self, block: u32) -> Option<&Mark> {
        self.marks
            .binary_search_by_key(&block, |(b, _)| *b)
            .ok()
            .map(|i| &self.marks[i].1)
    }

    pub fn covers(&self, access: &Access) -> bool {
        self.mark(access.block).is_some_and(|mark| mark.covers(access))
    }

    pub fn join(&mut self, other: &Clock) {
        for (block, mark) in &other.marks {
            self.join_mark(*block, mark);
        }
    }

    fn join_mark(&mut self, block: u32, mark: &Mark) {
        match self.marks.binary_search_by_key(&block, |(b, _)| *b) {
            Ok(i) => self.marks[i].1.join(mark),
            Err(i) => self.marks.insert(i, (block, mark.clone())),
        }
    }

    pub fn clear(&mut self) {
        self.marks.clear();
    }
}

/// One thread's part: what it has acquired since its block's last barrier, what its relaxed
/// reads would acquire at its next fence, what its last fence released, and its releases in the
/// current epoch.
#[derive(Default)]
pub(crate) struct ThreadOrder {
    pub acquired: Clock,
    /// Words read by relaxed loads and read-modify-writes since the last fence.
    pending: Vec<usize>,
    /// What a relaxed store after the last fence releases.
    fenced: Option<Clock>,
    epoch: u32,
    count: u32,
}

/// Words read since a fence that a thread remembers, to acquire at the next fence. Past this many
/// the oldest are dropped, and the fence then acquires less than the GPU's would (a race could be
/// reported where there is none); kernels read far fewer words between fences.
const PENDING_LIMIT: usize = 64;

impl ThreadOrder {
    /// The words this thread read with relaxed loads since its last fence, handed to its block at
    /// a barrier.
    pub fn take_pending(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.pending)
    }

    pub fn reset(&mut self) {
        self.acquired.clear();
        self.pending.clear();
        self.fenced = None;
        self.epoch = 0;
        self.count = 0;
    }

    /// This thread's releases so far in `epoch`.
    pub fn count(&mut self, epoch: u32) -> u32 {
        if self.epoch != epoch {
            self.epoch = epoch;
            self.count = 0;
        }
        self.count
    }

    /// What a release by thread `tid` of block `block` at `epoch` makes known, given what its
    /// block knows; counts the release.
    fn release(&mut self, block: u32, tid: u32, epoch: u32, known: &Clock) -> Clock {
        let count = (self.count(epoch) + 1).min(COUNT_LIMIT + 1);
        self.count = count;
        let mut clock = known.clone();
        clock.join(&self.acquired);
        clock.join_mark(
            block,
            &Mark {
                epoch,
                threads: vec![(tid, count)],
            },
        );
        clock
    }
}

/// The clocks of the words that releases wrote, by address.
pub(crate) struct SyncWords {
    shards: [Mutex<HashMap<usize, Clock>>; SHARDS],
}

const SHARDS: usize = 64;

impl Default for SyncWords {
    fn default() -> Self {
        SyncWords {
            shards: std::array::from_fn(|_| Mutex::new(HashMap::new())),
        }
    }
}

/// How an atomic access orders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sync {
    /// `load_acquire`.
    Acquire,
    /// `load_relaxed`: acquires at the thread's next fence.
    RelaxedRead,
    /// `store_release`.
    Release,
    /// `store_relaxed`: releases what the thread's last fence did.
    RelaxedWrite,
    /// A read-modify-write (relaxed, as CUDA's atomics): both relaxed forms.
    ReadModifyWrite,
}

/// Who makes an access: the thread, its block, what the block knows, and the words its threads
/// read with relaxed loads and read-modify-writes before its last barrier.
pub(crate) struct Agent<'a> {
    pub block: u32,
    pub tid: u32,
    pub epoch: u32,
    pub known: &'a Clock,
    pub read_before_barrier: &'a [usize],
    pub thread: &'a mut ThreadOrder,
}

impl SyncWords {
    fn shard(&self, address: usize) -> std::sync::MutexGuard<'_, HashMap<usize, Clock>> {
        self.shards[(address >> 3) % SHARDS]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// An atomic access of the word at `address` by `agent`, ordering as `sync` does.
    pub fn atomic(&self, address: usize, sync: Sync, agent: Agent) {
        let Agent {
            block,
            tid,
            epoch,
            known,
            thread,
            ..
        } = agent;
        match sync {
            Sync::Acquire => {
                if let Some(clock) = self.shard(address).get(&address) {
                    thread.acquired.join(clock);
                }
            }
            Sync::RelaxedRead => remember(&mut thread.pending, address),
            Sync::Release => {
                let clock = thread.release(block, tid, epoch, known);
                self.shard(address).entry(address).or_default().join(&clock);
            }
            Sync::RelaxedWrite => {
                if let Some(clock) = &thread.fenced {
                    self.shard(address).entry(address).or_default().join(clock);
                }
            }
            Sync::ReadModifyWrite => {
                remember(&mut thread.pending, address);
                if let Some(clock) = &thread.fenced {
                    self.shard(address).entry(address).or_default().join(clock);
                }
            }
        }
    }

    /// A `thread_fence` by `agent`: what its relaxed reads since the last fence read becomes
    /// acquired, and what it knows now is what its relaxed writes after the fence release. The
    /// relaxed reads of the block's other threads before a barrier count as its own: a barrier
    /// orders them before the fence (the last-block pattern: thread 0 takes the ticket, the block
    /// meets, every thread fences and reads what the other blocks published).
    pub fn fence(&self, agent: Agent) {
        let Agent {
            block,
            tid,
            epoch,
            known,
            read_before_barrier,
            thread,
        } = agent;
        for address in std::mem::take(&mut thread.pending)
            .into_iter()
            .chain(read_before_barrier.iter().copied())
        {
            if let Some(clock) = self.shard(address).get(&address) {
                thread.acquired.join(clock);
            }
        }
        let clock = thread.release(block, tid, epoch, known);
        thread.fenced = Some(clock);
    }
}

/// Adds `address` to the words read since a fence (once; the oldest dropped past the limit).
pub(crate) fn remember(pending: &mut Vec<usize>, address: usize) {
    if !pending.contains(&address) {
        if pending.len() == PENDING_LIMIT {
            pending.remove(0);
        }
        pending.push(address);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(block: u32, tid: u32, epoch: u32, count: u32) -> Access {
        Access {
            block,
            tid,
            epoch,
            count,
            atomic: false,
        }
    }

    #[test]
    fn a_release_covers_the_block_before_its_barrier_and_its_thread_before_it() {
        let mut thread = ThreadOrder::default();
        let clock = thread.release(7, 3, 2, &Clock::default());
        // Before the barrier: every thread of block 7.
        assert!(clock.covers(&access(7, 0, 1, 0)));
        // In the release's epoch: thread 3 before the release, no one else.
        assert!(clock.covers(&access(7, 3, 2, 0)));
        assert!(!clock.covers(&access(7, 4, 2, 0)));
        // Thread 3 after the release, and a later epoch: not covered.
        assert!(!clock.covers(&access(7, 3, 2, 1)));
        assert!(!clock.covers(&access(7, 3, 3, 0)));
        // Another block: not covered.
        assert!(!clock.covers(&access(6, 3, 1, 0)));
    }

    fn agent<'a>(block: u32, known: &'a Clock, thread: &'a mut ThreadOrder) -> Agent<'a> {
        Agent {
            block,
            tid: 0,
            epoch: 0,
            known,
            read_before_barrier: &[],
            thread,
        }
    }

    #[test]
    fn an_acquire_gets_what_the_release_covered_and_a_relaxed_read_needs_a_fence() {
        let words = SyncWords::default();
        let known = Clock::default();
        let mut writer = ThreadOrder::default();
        words.atomic(0x100, Sync::Release, agent(1, &known, &mut writer));
        let written = access(1, 0, 0, 0);
        let mut reader = ThreadOrder::default();
        words.atomic(0x100, Sync::RelaxedRead, agent(2, &known, &mut reader));
        assert!(!reader.acquired.covers(&written));
        words.fence(agent(2, &known, &mut reader));
        assert!(reader.acquired.covers(&written));
        let mut acquirer = ThreadOrder::default();
        words.atomic(0x100, Sync::Acquire, agent(2, &known, &mut acquirer));
        assert!(acquirer.acquired.covers(&written));
    }

    #[test]
    fn a_relaxed_write_releases_only_after_a_fence() {
        let words = SyncWords::default();
        let known = Clock::default();
        let mut writer = ThreadOrder::default();
        words.atomic(0x200, Sync::ReadModifyWrite, agent(1, &known, &mut writer));
        let mut reader = ThreadOrder::default();
        words.atomic(0x200, Sync::Acquire, agent(2, &known, &mut reader));
        assert!(!reader.acquired.covers(&access(1, 0, 0, 0)));
        words.fence(agent(1, &known, &mut writer));
        words.atomic(0x200, Sync::ReadModifyWrite, agent(1, &known, &mut writer));
        words.atomic(0x200, Sync::Acquire, agent(2, &known, &mut reader));
        // What came before the fence is covered; what came after it is not.
        assert!(reader.acquired.covers(&access(1, 0, 0, 0)));
        assert!(!reader.acquired.covers(&access(1, 0, 0, 1)));
    }
}
