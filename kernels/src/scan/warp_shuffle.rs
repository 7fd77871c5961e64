//! Rung 3: 8192 elements per tile, 32 per thread in eight runs of 4. Each thread sums its runs in
//! registers, the runs' totals are scanned with shuffles inside each warp, and only the eight warp
//! totals go through shared memory: two barriers per tile instead of one per step, and 32 elements
//! of work per thread per barrier. Eight 16-byte loads per thread are in flight at once (with two,
//! the single-pass scans waited on memory: docs/perf-log.md, change 15; with four, the look-back
//! scans' warps spent most of their stalls waiting at the barrier for warp 0's look-back, which
//! eight runs halve per element: change 75).
//!
//! The runs are striped across the warp: lane l's run c is the 4 elements at 128·c + 4·l of the
//! warp's 1024, so each 16-byte load or store of the warp covers 512 contiguous bytes. (Eight
//! consecutive elements per thread, the textbook layout, puts 32 bytes between lanes: every store
//! instruction then touches 32 sectors, a quarter or an eighth of each, and the scans ran at a
//! quarter of copy speed.)

use super::{ADD_PREFIXES, Scan, ScanElement, THREADS, WARPS, block_exclusive};
use ptxkit::device::{
    DynamicShared, GlobalSlice, GlobalSliceMut, SharedSlice, WARP_SIZE, block_idx, is_aligned4, lane_id, thread_idx,
    unrolled,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

/// Runs of 4 elements per thread.
pub const RUNS: u32 = 8;
/// Elements per thread.
pub const PER_THREAD: u32 = 4 * RUNS;
/// Elements per tile.
pub const TILE: u32 = PER_THREAD * THREADS;

shared_memory! {
    /// The warps' totals, then their prefixes and the tile's total.
    pub struct WarpTotals {
        pub sums: SharedSlice<f32> = WARPS + 1,
    }
}

/// A thread's elements: `run[4·c + k]` is element k of its run c.
pub type Runs<T> = [T; PER_THREAD as usize];

/// Where the calling thread's run `c` of `tile` starts (saturating past u32::MAX: the last tile
/// of an n near it): run 0's start plus a constant 128·c, so that the runs share one live
/// value (an offset per run kept four live across the look-back).
#[inline(always)]
fn run_start(tile: u32, c: u32) -> u32 {
    let warp = thread_idx().x / WARP_SIZE;
    let first = warp * (WARP_SIZE * PER_THREAD) + 4 * lane_id();
    // tile · TILE ≤ n − 1: no overflow before the offsets are added.
    (tile * TILE).saturating_add(first).saturating_add(c * (WARP_SIZE * 4))
}

/// Whether the run from `first` is inside n elements (`first + 4 ≤ n` without overflow), against
/// n − 4, one value for all runs (`checked_add` kept a predicate per run live).
#[inline(always)]
fn run_fits(first: u32, n: u32) -> bool {
    n.checked_sub(4).is_some_and(|last| first <= last)
}

/// The thread's runs of `tile` (0 past n): a 16-byte load per run where the run is inside the
/// input and the input is aligned, else one element at a time.
///
/// # Safety
/// `input` holds n elements.
#[inline(always)]
pub(crate) unsafe fn load_run<T: ScanElement>(input: GlobalSlice<T>, tile: u32, n: u32) -> Runs<T> {
    let mut run = [T::ZERO; PER_THREAD as usize];
    let vector = is_aligned4(input.as_ptr());
    // SAFETY: T is 4 bytes (as f32, the same alignment), and f32 takes every bit pattern.
    let words = unsafe { input.cast::<f32>() };
    unrolled::<RUNS>(|c| {
        let first = run_start(tile, c);
        if vector && run_fits(first, n) {
            // SAFETY: first + 4 ≤ n, and first is a multiple of 4, so 16-byte aligned (elements
            // are 4 bytes; the load moves their bits).
            let four = T::from_float4(unsafe { words.get4_unchecked(first) });
            unrolled::<4>(|k| run[(4 * c + k) as usize] = four[k as usize]);
        } else {
            unrolled::<4>(|k| {
                let i = first.saturating_add(k);
                if i < n {
                    // SAFETY: i < n.
                    run[(4 * c + k) as usize] = unsafe { input.get_unchecked(i) };
                }
            });
        }
    });
    run
}

/// Writes `values` (the thread's runs, laid out as [`load_run`] reads them) to `output`.
///
/// # Safety
/// `output` holds n elements.
#[inline(always)]
pub(crate) unsafe fn write_runs<T: ScanElement>(output: GlobalSliceMut<T>, tile: u32, n: u32, values: &Runs<T>) {
    let vector = is_aligned4(output.as_mut_ptr());
    // SAFETY: as in `load_run`.
    let words = unsafe { output.cast::<f32>() };
    unrolled::<RUNS>(|c| {
        let first = run_start(tile, c);
        let four: [T; 4] = core::array::from_fn(|k| values[4 * c as usize + k]);
        if vector && run_fits(first, n) {
            // SAFETY: as for the loads.
            unsafe { words.set4_unchecked(first, T::to_float4(four)) };
        } else {
            unrolled::<4>(|k| {
                let i = first.saturating_add(k);
                if i < n {
                    // SAFETY: i < n.
                    unsafe { output.set_unchecked(i, four[k as usize]) };
                }
            });
        }
    });
}

/// Writes the thread's runs of `tile`, each scanned on top of its prefix: inclusive or exclusive.
///
/// # Safety
/// `output` holds n elements.
#[inline(always)]
pub(crate) unsafe fn store_run<T: ScanElement>(
    output: GlobalSliceMut<T>,
    tile: u32,
    n: u32,
    mut run: Runs<T>,
    prefixes: [T; RUNS as usize],
    exclusive: bool,
) {
    // Scanned in place: the elements' registers take their prefixes.
    unrolled::<RUNS>(|c| {
        let mut sum = prefixes[c as usize];
        unrolled::<4>(|k| {
            let i = (4 * c + k) as usize;
            let before = sum;
            sum = sum.plus(run[i]);
            run[i] = if exclusive { before } else { sum };
        });
    });
    // SAFETY: forwarded.
    unsafe { write_runs(output, tile, n, &run) };
}

/// The totals of the thread's runs, each left to right.
#[inline(always)]
pub(crate) fn run_totals<T: ScanElement>(run: &Runs<T>) -> [T; RUNS as usize] {
    core::array::from_fn(|c| {
        let mut total = T::ZERO;
        unrolled::<4>(|k| total = total.plus(run[4 * c + k as usize]));
        total
    })
}

/// Phase 0: `output` = each 8192-element tile's scan, `scratch[tile]` = its total. Phase 1:
/// `output[i] += scratch[tile of i]`.
///
/// # Safety
/// As the kernels' contract: `input` and `output` hold n elements, `scratch` one word per tile;
/// the block has THREADS threads.
#[inline(always)]
pub(super) unsafe fn warp_shuffle_body<T: ScanElement>(
    input: GlobalSlice<T>,
    output: GlobalSliceMut<T>,
    scratch: GlobalSliceMut<T>,
    (n, exclusive, phase): (u32, u32, u32),
) {
    let tile = block_idx().x;
    if phase == ADD_PREFIXES {
        // SAFETY: one prefix per tile; the output holds n elements.
        unsafe {
            let prefix = scratch.get_unchecked(tile);
            let mut run = load_run(output.as_const(), tile, n);
            unrolled::<PER_THREAD>(|k| run[k as usize] = run[k as usize].plus(prefix));
            write_runs(output, tile, n, &run);
        }
        return;
    }
    // WarpTotals' view for elements of type T (4 bytes, as f32: the same bytes).
    const {
        assert!(
            core::mem::size_of::<T>() == 4,
            "WarpTotals is laid out for 4-byte elements"
        )
    };
    let sums = DynamicShared::new().named_slice::<T>("sums", WARPS + 1);
    // SAFETY: the input holds n elements; the block has THREADS threads.
    let run = unsafe { load_run(input, tile, n) };
    let (prefixes, tile_total) = unsafe { block_exclusive(sums, run_totals(&run)) };
    // SAFETY: the output holds n elements; one scratch word per tile.
    unsafe {
        store_run(output, tile, n, run, prefixes, exclusive != 0);
        if thread_idx().x == 0 {
            scratch.set_unchecked(tile, tile_total);
        }
    }
}

kernel! {
    /// Phase 0: `output` = each 8192-element tile's scan, `scratch[tile]` = its total. Phase 1:
    /// `output[i] += scratch[tile of i]`.
    pub unsafe fn scan_warp_shuffle(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, scratch: GlobalSliceMut<f32>, n: u32, exclusive: u32, phase: u32) {
        // SAFETY: forwarded from the kernel's contract; KERNEL launches THREADS threads.
        unsafe { warp_shuffle_body(input, output, scratch, (n, exclusive, phase)) }
    }
}

/// One block per 8192 elements.
pub const KERNEL: Kernel<Scan> = Kernel {
    code: scan_warp_shuffle,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(WarpTotals::BYTES),
    grid: |p, _| Dim3::x(p.n.div_ceil(TILE)),
};
