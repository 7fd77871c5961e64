//! Rung 3: 2048 elements per tile, 8 consecutive ones per thread. Each thread scans its 8 in
//! registers, the threads' totals are scanned with shuffles inside each warp, and only the eight
//! warp totals go through shared memory: two barriers per tile instead of one per step, and 8
//! elements of work per thread per barrier.

use super::{ADD_PREFIXES, Scan, THREADS, WARPS, block_exclusive};
use crate::device::{Float4, SharedSlice, block_idx, global_store, is_aligned4, load4, thread_idx, unrolled};
use crate::{Dim3, Kernel, LaunchBounds, SharedMemory, kernel, shared_memory};

/// Elements per thread.
pub const PER_THREAD: u32 = 8;
/// Elements per tile.
pub const TILE: u32 = PER_THREAD * THREADS;

shared_memory! {
    /// The warps' totals, then their prefixes and the tile's total.
    pub struct WarpTotals {
        pub sums: SharedSlice<f32> = WARPS + 1,
    }
}

/// The thread's 8 elements of `tile` (0 past n): two 16-byte loads where the whole run is inside
/// the input and the input is aligned, else one at a time.
///
/// # Safety
/// `input` holds n elements.
#[inline(always)]
pub(crate) unsafe fn load_run(input: *const f32, tile: u32, n: u32) -> [f32; PER_THREAD as usize] {
    let first = tile * TILE + thread_idx().x * PER_THREAD;
    let mut run = [0.0f32; PER_THREAD as usize];
    if first.checked_add(PER_THREAD).is_some_and(|end| end <= n) && is_aligned4(input) {
        unrolled::<2>(|h| {
            // SAFETY: first + 8 ≤ n, and first is a multiple of 8, so 16-byte aligned.
            let Float4(four) = unsafe { load4(input.add((first + 4 * h) as usize)) };
            unrolled::<4>(|k| run[(4 * h + k) as usize] = four[k as usize]);
        });
    } else {
        unrolled::<PER_THREAD>(|k| {
            let i = first.saturating_add(k);
            if i < n {
                // SAFETY: i < n.
                run[k as usize] = unsafe { *input.add(i as usize) };
            }
        });
    }
    run
}

/// Writes the thread's run of `tile`, scanned on top of `prefix`: inclusive or exclusive.
///
/// # Safety
/// `output` holds n elements.
#[inline(always)]
pub(crate) unsafe fn store_run(output: *mut f32, tile: u32, n: u32, run: &[f32; 8], prefix: f32, exclusive: bool) {
    let first = tile * TILE + thread_idx().x * PER_THREAD;
    let mut sum = prefix;
    unrolled::<PER_THREAD>(|k| {
        let before = sum;
        sum += run[k as usize];
        let i = first.saturating_add(k);
        if i < n {
            // SAFETY: i < n.
            unsafe { global_store(output.add(i as usize), if exclusive { before } else { sum }) };
        }
    });
}

/// The sum of a run, left to right.
#[inline(always)]
pub(crate) fn run_total(run: &[f32; 8]) -> f32 {
    let mut total = 0.0;
    unrolled::<PER_THREAD>(|k| total += run[k as usize]);
    total
}

kernel! {
    /// Phase 0: `output` = each 2048-element tile's scan, `scratch[tile]` = its total. Phase 1:
    /// `output[i] += scratch[tile of i]`.
    pub unsafe fn scan_warp_shuffle(input: *const f32, output: *mut f32, scratch: *mut f32, n: u32, exclusive: u32, phase: u32) {
        let tile = block_idx().x;
        if phase == ADD_PREFIXES {
            // SAFETY: one prefix per tile; the output holds n elements.
            unsafe {
                let prefix = *scratch.add(tile as usize);
                let run = load_run(output, tile, n);
                let first = tile * TILE + thread_idx().x * PER_THREAD;
                unrolled::<PER_THREAD>(|k| {
                    let i = first.saturating_add(k);
                    if i < n {
                        global_store(output.add(i as usize), prefix + run[k as usize]);
                    }
                });
            }
            return;
        }
        let WarpTotals { sums } = WarpTotals::carve();
        // SAFETY: the input holds n elements; the block has THREADS threads.
        let run = unsafe { load_run(input, tile, n) };
        let (prefix, tile_total) = unsafe { block_exclusive(sums, run_total(&run)) };
        // SAFETY: the output holds n elements; one scratch word per tile.
        unsafe {
            store_run(output, tile, n, &run, prefix, exclusive != 0);
            if thread_idx().x == 0 {
                global_store(scratch.add(tile as usize), tile_total);
            }
        }
    }
}

/// One block per 2048 elements.
pub const KERNEL: Kernel<Scan> = Kernel {
    code: scan_warp_shuffle,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(WarpTotals::BYTES),
    grid: |p| Dim3::x(p.n.div_ceil(TILE)),
    bounds: LaunchBounds::NONE,
};
