//! The rows a mean counts (those whose target is not `ignore_index`), before the fused pass
//! ([`super::fused`]) writes gradients divided by it: one block over the targets.

use super::CrossEntropyCount;
use crate::softmax::block_sum;
use ptxkit::device::{GlobalSlice, GlobalSliceMut, SharedSlice, WARP_SIZE, thread_idx, unrolled};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

/// Threads of the one block.
pub const THREADS: u32 = 1024;
/// Warps of the block.
const WARPS: u32 = THREADS / WARP_SIZE;
/// Targets each thread loads at once.
const BATCH: u32 = 4;

shared_memory! {
    /// One partial count per warp.
    pub struct Counts {
        pub sums: SharedSlice<f32> = WARPS,
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 1)]
    /// The rows whose target is not `ignore_index`, into count[0].
    pub unsafe fn cross_entropy_count(targets: GlobalSlice<i64>, count: GlobalSliceMut<f32>, rows: u32, ignore_index: i64) {
        let Counts { sums } = Counts::carve();
        let t = thread_idx().x;
        let mut n = 0u32;
        let mut r = t;
        while r + (BATCH - 1) * THREADS < rows {
            let mut batch = [0i64; BATCH as usize];
            // SAFETY: r + i·THREADS < rows.
            unrolled::<BATCH>(|i| batch[i as usize] = unsafe { targets.get_unchecked(r + i * THREADS) });
            batch.iter().for_each(|&target| n += (target != ignore_index) as u32);
            r += BATCH * THREADS;
        }
        while r < rows {
            // SAFETY: r < rows.
            n += (unsafe { targets.get_unchecked(r) } != ignore_index) as u32;
            r += THREADS;
        }
        // Exact while the count is below 2^24, as the forward pass's total[1].
        // SAFETY: THREADS threads, all here.
        let total = unsafe { block_sum::<WARPS>(sums, n as f32) };
        if t == 0 {
            // SAFETY: count holds one element.
            unsafe { count.set_unchecked(0u32, total) };
        }
    }
}

/// One block of 1024 threads.
pub const KERNEL: Kernel<CrossEntropyCount> = Kernel {
    code: cross_entropy_count,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Counts::BYTES),
    grid: |_, _| Dim3::x(1),
};
