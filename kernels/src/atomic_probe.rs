//! A kernel that exercises the device layer's atomics, fences and ordered loads and stores, so
//! that the emulator and the GPU are checked against the same expected words.
//!
//! Every thread updates a set of counters with each atomic (thread 0 of each block the
//! compare-and-swap loops); then the blocks form a chain in the
//! order they started: the block that takes ticket `v` waits until block `v - 1` has published its
//! link, reads it, and publishes `link[v] = link[v - 1] + v + 1`, alternately through a release
//! store read with acquire (even `v`) and through a fence before a relaxed store, read by a relaxed
//! load and a fence (odd `v`). A missing ordering shows as a wrong link; a block waiting on one that
//! has not started would hang (the ticket prevents it, as a scan's look-back needs).

use ptxkit::device::{
    atomic_add, atomic_cas, atomic_exch, atomic_max, atomic_min, block_dim, block_idx, global_store, grid_dim,
    load_acquire, load_relaxed, red_add, store_relaxed, store_release, sync_threads, thread_fence, thread_idx,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};
use ptxkit::{Family, Problem};

/// Threads per block.
pub const BLOCK: u32 = 256;

/// Where each counter lives in the output, in u32 words. Each starts at 0.
pub mod word {
    /// Tickets handed out: the blocks.
    pub const TICKET: usize = 0;
    /// Each thread adds 1 (u32).
    pub const ADD_U32: usize = 1;
    /// Each thread adds -2 (i32).
    pub const ADD_I32: usize = 2;
    /// Each thread adds 0.5 (f32, as its bits): exact up to 2^25 threads.
    pub const ADD_F32: usize = 3;
    /// Each thread adds 2^32 + 1 (u64, words 4 and 5).
    pub const ADD_U64: usize = 4;
    /// Each thread's max of its global index g (u32).
    pub const MAX_U32: usize = 6;
    /// Each thread's min of -g (i32).
    pub const MIN_I32: usize = 7;
    /// Each thread exchanges g + 1 (u32): the last one stays.
    pub const EXCH_U32: usize = 8;
    /// Thread 0 of each block adds 3 in a compare-and-swap loop (u32).
    pub const CAS_U32: usize = 9;
    /// Each thread exchanges 2^40 + g (u64, words 10 and 11).
    pub const EXCH_U64: usize = 10;
    /// Thread 0 of each block adds 2^32 in a compare-and-swap loop (u64, words 12 and 13).
    pub const CAS_U64: usize = 12;
    /// Each thread adds 5 without wanting the old value (`red_add`, u32).
    pub const RED_U32: usize = 14;
    /// Each thread adds 0.25 without wanting the old value (`red_add`, f32 bits).
    pub const RED_F32: usize = 15;
    /// Then one ready flag per block, then one link per block.
    pub const CHAIN: usize = 16;
}

/// A launch of `blocks` blocks of [`BLOCK`] threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtomicProbe {
    pub blocks: u32,
}

impl Problem for AtomicProbe {
    /// `(words,)`: the counters, flags and links, zero before the launch.
    type Args = (*mut u32,);
}

#[cfg(not(target_arch = "nvptx64"))]
impl AtomicProbe {
    /// At least one block; at most 2^16, so that the f32 sum stays exact.
    pub fn new(blocks: usize) -> Result<Self, ptxkit::InvalidSize> {
        if (1..=1 << 16).contains(&blocks) {
            Ok(AtomicProbe { blocks: blocks as u32 })
        } else {
            Err(ptxkit::InvalidSize {
                problem: "atomic probe",
                reason: format!("blocks = {blocks}: from 1 to 65536 (the f32 counter stays exact up to there)"),
            })
        }
    }

    pub fn threads(&self) -> u32 {
        self.blocks * BLOCK
    }

    /// Words of output.
    pub fn len(&self) -> usize {
        word::CHAIN + 2 * self.blocks as usize
    }

    pub fn is_empty(&self) -> bool {
        self.blocks == 0
    }
}

shared_memory! {
    /// The block's ticket, told to every thread.
    pub struct Ticket {
        pub ticket: ptxkit::device::SharedSlice<u32> = 1,
    }
}

/// Adds 3 to `narrow` and 2^32 to `wide`, each by a compare-and-swap loop.
///
/// # Safety
/// Both are aligned words of global memory.
#[inline(always)]
unsafe fn cas_increments(narrow: *mut u32, wide: *mut u64) {
    // SAFETY: forwarded from the caller.
    unsafe {
        let mut seen = load_relaxed(narrow);
        loop {
            let old = atomic_cas(narrow, seen, seen + 3);
            if old == seen {
                break;
            }
            seen = old;
        }
        let mut seen = load_relaxed(wide);
        loop {
            let old = atomic_cas(wide, seen, seen + (1 << 32));
            if old == seen {
                break;
            }
            seen = old;
        }
    }
}

kernel! {
    /// The counters, then the chain (see the module documentation).
    pub unsafe fn atomic_probe(words: *mut u32) {
        let Ticket { ticket } = Ticket::carve();
        let t = thread_idx().x;
        let g = block_idx().x * block_dim().x + t;
        let at = |i: usize| words.wrapping_add(i);
        // SAFETY (every access below): the caller gives `AtomicProbe::len` words, 8-byte aligned,
        // zero before the launch; the u64 counters sit on even words.
        unsafe {
            atomic_add(at(word::ADD_U32), 1u32);
            atomic_add(at(word::ADD_I32).cast::<i32>(), -2i32);
            atomic_add(at(word::ADD_F32).cast::<f32>(), 0.5f32);
            atomic_add(at(word::ADD_U64).cast::<u64>(), (1u64 << 32) + 1);
            atomic_max(at(word::MAX_U32), g);
            atomic_min(at(word::MIN_I32).cast::<i32>(), -(g as i32));
            atomic_exch(at(word::EXCH_U32), g + 1);
            atomic_exch(at(word::EXCH_U64).cast::<u64>(), (1u64 << 40) + g as u64);
            red_add(at(word::RED_U32), 5u32);
            red_add(at(word::RED_F32).cast::<f32>(), 0.25f32);
        }
        // Compare-and-swap loops retry once per competitor: one loop per block, as a loop per thread
        // on one word would keep the GPU busy for minutes at 16 million threads.
        if t == 0 {
            // SAFETY: as above.
            unsafe {
                cas_increments(at(word::CAS_U32), at(word::CAS_U64).cast::<u64>());
                ticket.set(0, atomic_add(at(word::TICKET), 1u32));
            }
        }
        // The ticket is in shared memory before any thread reads it.
        sync_threads();
        let v = ticket.get(0);
        if t == 0 {
            let blocks = grid_dim().x as usize;
            let ready = |i: u32| at(word::CHAIN + i as usize);
            let link = |i: u32| at(word::CHAIN + blocks + i as usize);
            // SAFETY: v < gridDim.x: flags and links are inside the words.
            unsafe {
                let previous = if v == 0 {
                    0
                } else if v % 2 == 1 {
                    // Block v - 1 (even) released its link.
                    while load_acquire(ready(v - 1)) == 0 {}
                    *link(v - 1)
                } else {
                    // Block v - 1 (odd) fenced, then stored its flag relaxed.
                    while load_relaxed(ready(v - 1)) == 0 {}
                    thread_fence();
                    *link(v - 1)
                };
                global_store(link(v), previous.wrapping_add(v + 1));
                if v % 2 == 0 {
                    store_release(ready(v), 1u32);
                } else {
                    thread_fence();
                    store_relaxed(ready(v), 1u32);
                }
            }
        }
    }
}

/// [`BLOCK`] threads per block, `blocks` blocks.
pub const KERNEL: Kernel<AtomicProbe> = Kernel {
    code: atomic_probe,
    block: Dim3::x(BLOCK),
    shared: SharedMemory::of(Ticket::BYTES),
    grid: |p, _| Dim3::x(p.blocks),
};

/// The atomics, fences and ordered accesses, checked: the registry's list.
pub const FAMILY: Family<AtomicProbe> = Family::new("atomic_probe", &[KERNEL]);
