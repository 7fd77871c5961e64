//! Rung 7: the vectorised walk in one launch for any n. Each block publishes its partial sum, then
//! takes a ticket; the fence between the two makes the sum visible to the whole GPU before the
//! ticket counts it. The block that takes the last ticket knows every partial sum is there, adds
//! them in block order (so the total's bits depend only on the input and the grid) and resets the
//! ticket for the next launch.
//!
//! The same body, combining with the larger value instead of adding, is the maximum
//! ([`MAX_KERNEL`], the `reduce_max` family).

use super::vectorized::{grid, thread_walk};
use super::{Combine, Max, Reduce, Sum, THREADS, WARPS, block_combine};
use ptxkit::device::{
    GlobalSlice, GlobalSliceMut, SharedSlice, block_idx, grid_dim, sync_threads, thread_fence, thread_idx,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

shared_memory! {
    /// One result per warp, and whether this block took the last ticket.
    pub struct Scratch {
        pub sums: SharedSlice<f32> = WARPS,
        pub last: SharedSlice<u32> = 1,
    }
}

/// `output[1 + b]` = block b's share combined by `O`; `output[0]` = the whole input's, written by
/// the last block.
///
/// # Safety
/// `input` holds n elements, `output` 1 + gridDim.x; `ticket` is zero; the block has THREADS threads.
#[inline(always)]
unsafe fn one_pass_body<O: Combine>(
    input: GlobalSlice<f32>,
    output: GlobalSliceMut<f32>,
    ticket: GlobalSliceMut<u32>,
    n: u32,
) {
    let Scratch { sums, last } = Scratch::carve();
    let t = thread_idx().x;
    let blocks = grid_dim().x;
    // SAFETY: the input holds n elements; the block has THREADS threads.
    let partial = unsafe { block_combine::<O>(sums, thread_walk::<O>(input, n)) };
    if t == 0 {
        // SAFETY: the caller gives 1 + gridDim.x outputs and a ticket that is zero.
        unsafe {
            output.set_unchecked(1 + block_idx().x as usize, partial);
            thread_fence();
            let taken = ticket.at_unchecked(0u32).atomic_add(1);
            last.set(0, (taken == blocks - 1) as u32);
        }
    }
    // The ticket's verdict is in shared memory before any thread reads it.
    sync_threads();
    if last.get(0) != 0 {
        // Every block fenced its partial result before taking its ticket.
        thread_fence();
        let mut all = O::IDENTITY;
        let mut b = t;
        while b < blocks {
            // SAFETY: b < gridDim.x: a partial result, read from where every block's store landed.
            let value = unsafe { output.at_unchecked(1 + b as usize) }.load_relaxed();
            all = O::combine(all, value);
            b += THREADS;
        }
        // SAFETY: the block has THREADS threads; `sums` was last read before the barrier above.
        let total = unsafe { block_combine::<O>(sums, all) };
        if t == 0 {
            // SAFETY: output[0] and the ticket are the caller's; no block uses the ticket now.
            unsafe {
                output.set_unchecked(0u32, total);
                ticket.at_unchecked(0u32).store_relaxed(0);
            }
        }
    }
}

kernel! {
    /// `output[1 + b]` = block b's share; `output[0]` = the total, written by the last block.
    pub unsafe fn reduce_one_pass(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, ticket: GlobalSliceMut<u32>, n: u32) {
        // SAFETY: forwarded from the kernel's contract; KERNEL launches THREADS threads.
        unsafe { one_pass_body::<Sum>(input, output, ticket, n) }
    }
}

kernel! {
    /// `output[1 + b]` = block b's maximum; `output[0]` = the input's, written by the last block.
    pub unsafe fn reduce_max_one_pass(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, ticket: GlobalSliceMut<u32>, n: u32) {
        // SAFETY: forwarded from the kernel's contract; MAX_KERNEL launches THREADS threads.
        unsafe { one_pass_body::<Max>(input, output, ticket, n) }
    }
}

/// At most `resident_blocks` blocks of 256 threads, one launch.
pub const KERNEL: Kernel<Reduce> = Kernel {
    code: reduce_one_pass,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Scratch::BYTES),
    grid,
};

/// The maximum, as [`KERNEL`].
pub const MAX_KERNEL: Kernel<Reduce> = Kernel {
    code: reduce_max_one_pass,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Scratch::BYTES),
    grid,
};
