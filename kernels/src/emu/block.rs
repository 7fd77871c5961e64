//! One block's shared state on the emulator: shared memory, the block barrier, the warp barriers
//! and the bookkeeping that turns a would-be hang into an error.

use crate::device::WARP_SIZE;
use crate::launch::{Dim3, LaunchShape};
use std::collections::BTreeMap;
use std::panic::Location;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

/// Unwinding payload for threads stopped because another thread of the launch failed.
pub(crate) struct Abort;

/// The first thing that went wrong in a launch.
pub(crate) struct Failure {
    pub block: Dim3,
    pub thread: Dim3,
    pub message: String,
}

type Site = &'static Location<'static>;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Status {
    Running,
    AtBarrier(Site),
    AtWarpSync(Site),
    Returned,
}

struct SyncState {
    status: Vec<Status>,
    running: u32,
    at_barrier: u32,
    returned: u32,
    /// Bumped when the block barrier opens or the block completes.
    block_generation: u64,
    warp_waiting: Vec<u32>,
    warp_returned: Vec<u32>,
    warp_generation: Vec<u64>,
    failure: Option<Failure>,
}

pub(crate) struct Block {
    block_dim: Dim3,
    threads: u32,
    shared: Box<[AtomicU64]>,
    shared_bytes: u32,
    warp_slots: Box<[AtomicU32]>,
    sync: Mutex<SyncState>,
    block_ready: Condvar,
    warp_ready: Box<[Condvar]>,
}

/// Shared memory starts each block as all-ones bytes (NaN as f32 or f64): a read of a word no
/// thread wrote shows up in the results instead of passing as zero.
const SHARED_POISON: u64 = u64::MAX;

impl Block {
    pub fn new(shape: &LaunchShape) -> Block {
        let threads = shape.block.volume() as u32;
        let warps = threads.div_ceil(WARP_SIZE) as usize;
        let words = (shape.shared_bytes as usize).div_ceil(8);
        Block {
            block_dim: shape.block,
            threads,
            shared: (0..words).map(|_| AtomicU64::new(SHARED_POISON)).collect(),
            shared_bytes: shape.shared_bytes,
            warp_slots: (0..warps * WARP_SIZE as usize).map(|_| AtomicU32::new(0)).collect(),
            sync: Mutex::new(SyncState {
                status: vec![Status::Running; threads as usize],
                running: threads,
                at_barrier: 0,
                returned: 0,
                block_generation: 0,
                warp_waiting: vec![0; warps],
                warp_returned: vec![0; warps],
                warp_generation: vec![0; warps],
                failure: None,
            }),
            block_ready: Condvar::new(),
            warp_ready: (0..warps).map(|_| Condvar::new()).collect(),
        }
    }

    pub fn shared_base(&self) -> *mut u8 {
        // Atomics have interior mutability: writing through this pointer (atomically) is allowed.
        self.shared.as_ptr().cast::<u8>().cast_mut()
    }

    pub fn shared_bytes(&self) -> u32 {
        self.shared_bytes
    }

    /// The exchange slot of lane `lane` of warp `warp`.
    pub fn warp_slot(&self, warp: u32, lane: u32) -> &AtomicU32 {
        &self.warp_slots[(warp * WARP_SIZE + lane) as usize]
    }

    /// Threads in warp `warp`: 32, or fewer in the last warp of a block that is not a multiple of 32.
    pub fn warp_len(&self, warp: u32) -> u32 {
        (self.threads - warp * WARP_SIZE).min(WARP_SIZE)
    }

    /// `__syncthreads()`: returns when every thread of the block has arrived at `site`.
    pub fn barrier(&self, tid: u32, block_idx: Dim3, site: Site) -> Result<(), Abort> {
        let mut s = self.lock()?;
        s.set(tid, Status::AtBarrier(site));
        s.at_barrier += 1;
        if s.at_barrier == self.threads {
            let sites = s.sites(|st| matches!(st, Status::AtBarrier(_)), 0..self.threads);
            if sites.len() > 1 {
                let message = format!(
                    "threads of one block wait at different sync_threads calls ({}): a barrier must be reached by all threads at the same place",
                    describe_sites(&sites)
                );
                return Err(self.fail_locked(s, tid, block_idx, message));
            }
            s.status.fill(Status::Running);
            s.running = self.threads;
            s.at_barrier = 0;
            s.block_generation += 1;
            self.block_ready.notify_all();
            return Ok(());
        }
        if s.at_barrier + s.returned == self.threads {
            let message = format!(
                "sync_threads at {} was reached by {} threads, but {} threads of the block had already returned from the kernel (first: thread {}): every thread must reach each barrier",
                fmt_site(site),
                s.at_barrier,
                s.returned,
                self.first_returned(&s),
            );
            return Err(self.fail_locked(s, tid, block_idx, message));
        }
        if s.running == 0 {
            return Err(self.deadlock(s, tid, block_idx));
        }
        let generation = s.block_generation;
        self.wait_block(s, generation)
    }

    /// `__syncwarp()`, and the two steps of every shuffle: returns when every lane of the calling
    /// thread's warp has arrived at `site`.
    pub fn warp_barrier(&self, tid: u32, block_idx: Dim3, site: Site) -> Result<(), Abort> {
        let warp = tid / WARP_SIZE;
        let lanes = self.warp_len(warp);
        let w = warp as usize;
        let mut s = self.lock()?;
        s.set(tid, Status::AtWarpSync(site));
        s.warp_waiting[w] += 1;
        if s.warp_waiting[w] == lanes {
            let range = warp * WARP_SIZE..warp * WARP_SIZE + lanes;
            let sites = s.sites(|st| matches!(st, Status::AtWarpSync(_)), range.clone());
            if sites.len() > 1 {
                let message = format!(
                    "lanes of warp {warp} wait at different warp-level calls ({}): shuffles and sync_warp must be reached by all 32 lanes together",
                    describe_sites(&sites)
                );
                return Err(self.fail_locked(s, tid, block_idx, message));
            }
            for t in range {
                s.status[t as usize] = Status::Running;
            }
            s.running += lanes;
            s.warp_waiting[w] = 0;
            s.warp_generation[w] += 1;
            self.warp_ready[w].notify_all();
            return Ok(());
        }
        if s.warp_waiting[w] + s.warp_returned[w] == lanes {
            let message = format!(
                "the warp-level call at {} was reached by {} lanes of warp {warp}, but {} lanes had returned from the kernel: shuffles and sync_warp need every lane",
                fmt_site(site),
                s.warp_waiting[w],
                s.warp_returned[w],
            );
            return Err(self.fail_locked(s, tid, block_idx, message));
        }
        if s.running == 0 {
            return Err(self.deadlock(s, tid, block_idx));
        }
        let generation = s.warp_generation[w];
        loop {
            s = self.warp_ready[w].wait(s).unwrap_or_else(|e| e.into_inner());
            if s.failure.is_some() {
                return Err(Abort);
            }
            if s.warp_generation[w] != generation {
                return Ok(());
            }
        }
    }

    /// The thread has returned from the kernel body; waits until the whole block has, so that the
    /// next block starts on fresh shared memory.
    pub fn exit(&self, tid: u32, block_idx: Dim3) -> Result<(), Abort> {
        let warp = tid / WARP_SIZE;
        let w = warp as usize;
        let mut s = self.lock()?;
        s.set(tid, Status::Returned);
        s.returned += 1;
        s.warp_returned[w] += 1;
        if s.returned == self.threads {
            for word in self.shared.iter() {
                word.store(SHARED_POISON, Ordering::Relaxed);
            }
            s.status.fill(Status::Running);
            s.running = self.threads;
            s.returned = 0;
            s.warp_returned.fill(0);
            s.block_generation += 1;
            self.block_ready.notify_all();
            return Ok(());
        }
        if s.at_barrier > 0 && s.at_barrier + s.returned == self.threads {
            let site = s
                .sites(|st| matches!(st, Status::AtBarrier(_)), 0..self.threads)
                .into_keys()
                .next()
                .unwrap_or_else(|| Location::caller());
            let message = format!(
                "thread {} returned from the kernel while {} threads wait at sync_threads at {}: every thread must reach each barrier",
                self.thread_idx(tid),
                s.at_barrier,
                fmt_site(site)
            );
            return Err(self.fail_locked(s, tid, block_idx, message));
        }
        let lanes = self.warp_len(warp);
        if s.warp_waiting[w] > 0 && s.warp_waiting[w] + s.warp_returned[w] == lanes {
            let message = format!(
                "thread {} returned from the kernel while {} lanes of its warp wait at a shuffle or sync_warp: they need every lane",
                self.thread_idx(tid),
                s.warp_waiting[w]
            );
            return Err(self.fail_locked(s, tid, block_idx, message));
        }
        if s.running == 0 {
            return Err(self.deadlock(s, tid, block_idx));
        }
        let generation = s.block_generation;
        self.wait_block(s, generation)
    }

    /// Records a failure of thread `tid` and wakes every waiting thread so that the launch ends.
    pub fn fail(&self, tid: u32, message: String) {
        if let Ok(s) = self.lock() {
            let _ = self.fail_locked(s, tid, Dim3::new(0, 0, 0), message);
        }
    }

    /// As [`Block::fail`], for a thread that knows its block.
    pub fn fail_at(&self, tid: u32, block_idx: Dim3, thread_idx: Dim3, message: String) {
        debug_assert_eq!(thread_idx, self.thread_idx(tid));
        if let Ok(s) = self.lock() {
            let _ = self.fail_locked(s, tid, block_idx, message);
        }
    }

    pub fn failure(&self) -> Option<Failure> {
        self.sync.lock().unwrap_or_else(|e| e.into_inner()).failure.take()
    }

    fn lock(&self) -> Result<MutexGuard<'_, SyncState>, Abort> {
        let s = self.sync.lock().unwrap_or_else(|e| e.into_inner());
        if s.failure.is_some() { Err(Abort) } else { Ok(s) }
    }

    fn wait_block(&self, mut s: MutexGuard<'_, SyncState>, generation: u64) -> Result<(), Abort> {
        loop {
            s = self.block_ready.wait(s).unwrap_or_else(|e| e.into_inner());
            if s.failure.is_some() {
                return Err(Abort);
            }
            if s.block_generation != generation {
                return Ok(());
            }
        }
    }

    fn fail_locked(&self, mut s: MutexGuard<'_, SyncState>, tid: u32, block: Dim3, message: String) -> Abort {
        if s.failure.is_none() {
            s.failure = Some(Failure {
                block,
                thread: self.thread_idx(tid),
                message,
            });
        }
        drop(s);
        self.block_ready.notify_all();
        for ready in self.warp_ready.iter() {
            ready.notify_all();
        }
        Abort
    }

    fn deadlock(&self, s: MutexGuard<'_, SyncState>, tid: u32, block_idx: Dim3) -> Abort {
        let mut waits: BTreeMap<String, u32> = BTreeMap::new();
        for status in &s.status {
            let what = match status {
                Status::Running => continue,
                Status::AtBarrier(site) => format!("sync_threads at {}", fmt_site(site)),
                Status::AtWarpSync(site) => format!("a warp-level call at {}", fmt_site(site)),
                Status::Returned => "returned from the kernel".to_string(),
            };
            *waits.entry(what).or_default() += 1;
        }
        let waits: Vec<String> = waits.iter().map(|(what, n)| format!("{n} threads {what}")).collect();
        let message = format!("deadlock: no thread can go on ({})", waits.join("; "));
        self.fail_locked(s, tid, block_idx, message)
    }

    fn first_returned(&self, s: &SyncState) -> Dim3 {
        let tid = s.status.iter().position(|st| *st == Status::Returned).unwrap_or(0);
        self.thread_idx(tid as u32)
    }

    fn thread_idx(&self, tid: u32) -> Dim3 {
        let (x, y) = (self.block_dim.x, self.block_dim.y);
        Dim3::new(tid % x, tid / x % y, tid / (x * y))
    }
}

impl SyncState {
    fn set(&mut self, tid: u32, status: Status) {
        let slot = &mut self.status[tid as usize];
        debug_assert!(*slot == Status::Running, "a thread can wait at one place at a time");
        *slot = status;
        self.running -= 1;
    }

    /// Threads in `range` whose status `is_wait` accepts, counted by the call site they wait at.
    fn sites(&self, is_wait: impl Fn(&Status) -> bool, range: std::ops::Range<u32>) -> BTreeMap<Site, u32> {
        let mut sites = BTreeMap::new();
        for status in &self.status[range.start as usize..range.end as usize] {
            if let Status::AtBarrier(site) | Status::AtWarpSync(site) = status
                && is_wait(status)
            {
                *sites.entry(*site).or_default() += 1;
            }
        }
        sites
    }
}

fn fmt_site(site: Site) -> String {
    format!("{}:{}", site.file(), site.line())
}

fn describe_sites(sites: &BTreeMap<Site, u32>) -> String {
    let parts: Vec<String> = sites
        .iter()
        .map(|(site, n)| format!("{n} at {}", fmt_site(site)))
        .collect();
    parts.join(", ")
}
