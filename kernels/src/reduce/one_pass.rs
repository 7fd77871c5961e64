//! Rung 7: the vectorised walk in one launch for any n. Each block publishes its partial sum, then
//! takes a ticket; the fence between the two makes the sum visible to the whole GPU before the
//! ticket counts it. The block that takes the last ticket knows every partial sum is there, adds
//! them in block order (so the total's bits depend only on the input and the grid) and resets the
//! ticket for the next launch.

use super::vectorized::{grid, thread_sum};
use super::{Reduce, THREADS, WARPS, block_sum};
use crate::device::{
    SharedSlice, atomic_add, block_idx, global_store, grid_dim, load_relaxed, store_relaxed, sync_threads,
    thread_fence, thread_idx,
};
use crate::{Dim3, Kernel, LaunchBounds, SharedMemory, kernel, shared_memory};

shared_memory! {
    /// One sum per warp, and whether this block took the last ticket.
    pub struct Scratch {
        pub sums: SharedSlice<f32> = WARPS,
        pub last: SharedSlice<u32> = 1,
    }
}

kernel! {
    /// `output[1 + b]` = block b's share; `output[0]` = the total, written by the last block.
    pub unsafe fn reduce_one_pass(input: *const f32, output: *mut f32, ticket: *mut u32, n: u32) {
        let Scratch { sums, last } = Scratch::carve();
        let t = thread_idx().x;
        let blocks = grid_dim().x;
        // SAFETY: the input holds n elements; the block has THREADS threads.
        let partial = unsafe { block_sum(sums, thread_sum(input, n)) };
        if t == 0 {
            // SAFETY: the caller gives 1 + gridDim.x outputs and a ticket that is zero.
            unsafe {
                global_store(output.add(1 + block_idx().x as usize), partial);
                thread_fence();
                let taken = atomic_add(ticket, 1u32);
                last.set(0, (taken == blocks - 1) as u32);
            }
        }
        // The ticket's verdict is in shared memory before any thread reads it.
        sync_threads();
        if last.get(0) != 0 {
            // Every block fenced its partial sum before taking its ticket.
            thread_fence();
            let mut sum = 0.0f32;
            let mut b = t;
            while b < blocks {
                // SAFETY: b < gridDim.x: a partial sum, read from where every block's store landed.
                sum += f32::from_bits(unsafe { load_relaxed(output.add(1 + b as usize).cast::<u32>()) });
                b += THREADS;
            }
            // SAFETY: the block has THREADS threads; `sums` was last read before the barrier above.
            let total = unsafe { block_sum(sums, sum) };
            if t == 0 {
                // SAFETY: output[0] and the ticket are the caller's; no block uses the ticket now.
                unsafe {
                    global_store(output, total);
                    store_relaxed(ticket, 0u32);
                }
            }
        }
    }
}

/// At most `resident_blocks` blocks of 256 threads, one launch.
pub const KERNEL: Kernel<Reduce> = Kernel {
    code: reduce_one_pass,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Scratch::BYTES),
    grid,
    bounds: LaunchBounds::NONE,
};
