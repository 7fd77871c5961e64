//! Rung 9: the ordered warp look-back with the tile staged in shared memory instead of registers.
//! In the rungs before, each thread holds its 32 elements in registers from the load to the
//! store, through the look-back, when the block only waits: 64 registers a thread, four blocks
//! (32 768 elements) per SM. Here each thread copies its runs into shared memory (`cp.async`,
//! no register holds them in flight), reads them to sum its runs, and reads them again to store
//! after the look-back: about 40 registers, and 32 KiB of shared memory per block, so six blocks
//! (49 152 elements) per SM are loading, waiting and storing at once.
//!
//! Each thread copies and reads only its own 16-byte words (the register layout of
//! [`super::warp_shuffle`]), so its own `cp.async.wait_group` orders them: no barrier guards the
//! tile. Tiles in block order, as [`super::ordered`].
//!
//! Ahead of CUB's `DeviceScan` at every size from 2^22 to 2^30, where the same scan with the tile
//! in registers trailed it at 2^28 (measured: docs/perf-log.md, change 85).

use super::look_back::{Walk, look_back_grid, reset, status_words};
use super::look_back_warp::WholeWarp;
use super::pipelined::{in_tile, read_runs};
use super::warp_shuffle::{PER_THREAD, RUNS, TILE, run_totals};
use super::{RESET, Scan, ScanElement, THREADS, WARPS, block_exclusive};
use ptxkit::device::{
    DynamicShared, GlobalSlice, GlobalSliceMut, MatrixLayout, SharedMatrix, SharedSlice, WARP_SIZE, async_copy_commit,
    async_copy_wait, block_idx, is_aligned4, opaque, sync_threads, thread_idx, unrolled,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};

/// Blocks per SM: six, as shared memory allows (six tiles of 32 KiB and their scratch in the
/// SM's 228 KiB; seven do not fit), so at most 40 registers a thread (registers go by eights).
pub const BLOCKS_PER_SM: u32 = 6;

/// Bytes of shared memory per block: the tile (16-byte aligned at offset 0), then the block
/// scan's warp totals and the tile's prefix (4-byte elements).
pub const SHARED_BYTES: u32 = TILE * 4 + 4 * (WARPS + 1 + 1);

/// The shared views: the tile (as bits), the warp totals, the prefix.
struct Views<T> {
    tile: SharedMatrix<f32>,
    sums: SharedSlice<T>,
    prefix: SharedSlice<T>,
}

#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn carve<T: ScanElement>() -> Views<T> {
    const { assert!(core::mem::size_of::<T>() == 4, "the layout is for 4-byte elements") };
    let mut shared = DynamicShared::new();
    Views {
        tile: shared.named_matrix("tile", MatrixLayout::dense(1, TILE)),
        sums: shared.named_slice("sums", WARPS + 1),
        prefix: shared.named_slice("prefix", 1),
    }
}

/// Whether `tile` lies wholly inside n elements (every tile but perhaps the last).
#[inline(always)]
fn whole(tile: u32, n: u32) -> bool {
    (tile + 1).checked_mul(TILE).is_some_and(|end| end <= n)
}

/// Starts copying the calling thread's runs of `tile` into the staged tile and commits them: from
/// one address, 16 bytes at a time and with no test where the tile is whole and the input
/// aligned (every tile but perhaps the last), else an element at a time with `cp.async`'s zero
/// fill past n. No register holds an element, so the copies cost the thread no more registers
/// than their addresses. (A 16-byte copy told to read fewer bytes, as the end of n would ask,
/// reads all 16 as compute-sanitizer sees it: an out-of-bounds read at an allocation's end, run
/// 2026-12-01-ba.)
///
/// # Safety
/// `input` holds n elements; `tile` < the number of tiles; the thread reads its slots only after
/// waiting for the group.
#[inline(always)]
unsafe fn stage<T: ScanElement>(staged: SharedMatrix<f32>, input: GlobalSlice<T>, tile: u32, n: u32) {
    let t = thread_idx().x;
    // The copies take addresses.
    let input = input.as_ptr().cast::<f32>();
    // SAFETY (all copies): the slots lie inside the staged tile, aligned; every source read lies
    // inside the input (the others read nothing: zero fill, from the input's first element).
    unsafe {
        if is_aligned4(input) && whole(tile, n) {
            let first = input.add((tile * TILE + in_tile(t, 0)) as usize);
            unrolled::<RUNS>(|c| {
                staged.copy4_async_unchecked(0, in_tile(t, c), first.add((c * WARP_SIZE * 4) as usize))
            });
        } else {
            // A loop, not written out: 32 copies each with its own address and test spill
            // registers at the six-block bound (the bound is opaque, so LLVM keeps the loop).
            let mut e = 0;
            while e < opaque(PER_THREAD) {
                let slot = in_tile(t, e / 4) + e % 4;
                // tile · TILE ≤ n − 1 and the slot < TILE: saturate rather than wrap.
                let i = (tile * TILE).saturating_add(slot);
                let src = if i < n { input.add(i as usize) } else { input };
                staged.copy1_async_zero_fill_unchecked(0, slot, src, i < n);
                e += 1;
            }
        }
    }
    async_copy_commit();
}

/// Writes thread `t`'s runs of `tile` from the staged tile, each scanned on top of its prefix,
/// run by run (four elements live at a time): with no test where the tile is whole and the
/// output aligned, else tested against n.
///
/// # Safety
/// `output` holds n elements; the staged tile holds `tile`'s elements.
#[inline(always)]
unsafe fn write_scanned<T: ScanElement>(
    staged: SharedMatrix<f32>,
    output: GlobalSliceMut<T>,
    (tile, n, t): (u32, u32, u32),
    prefixes: [T; RUNS as usize],
    exclusive: bool,
) {
    let scanned = |c: u32| {
        // SAFETY: the slots lie inside the staged tile, 16-byte aligned.
        let mut four = T::from_float4(unsafe { staged.get4_unchecked(0, in_tile(t, c)) });
        let mut sum = prefixes[c as usize];
        unrolled::<4>(|k| {
            let before = sum;
            sum = sum.plus(four[k as usize]);
            four[k as usize] = if exclusive { before } else { sum };
        });
        four
    };
    let vector = is_aligned4(output.as_mut_ptr());
    // SAFETY (all stores): inside the output (the whole tile, or tested against n), aligned; T is
    // 4 bytes (as f32, the same alignment), and f32 takes every bit pattern.
    unsafe {
        let words = output.cast::<f32>();
        if vector && whole(tile, n) {
            let first = (tile * TILE + in_tile(t, 0)) as usize;
            unrolled::<RUNS>(|c| words.set4_unchecked(first + (c * WARP_SIZE * 4) as usize, T::to_float4(scanned(c))));
        } else {
            unrolled::<RUNS>(|c| {
                let four = scanned(c);
                let first = (tile * TILE).saturating_add(in_tile(t, c));
                if vector && n.checked_sub(4).is_some_and(|last| first <= last) {
                    words.set4_unchecked(first, T::to_float4(four));
                } else {
                    unrolled::<4>(|k| {
                        let i = first.saturating_add(k);
                        if i < n {
                            output.set_unchecked(i, four[k as usize]);
                        }
                    });
                }
            });
        }
    }
}

/// Phase [`RESET`]: clears the statuses. Phase 1: block b scans tile b, staged in shared memory,
/// warp 0 walking back 32 tiles at a time.
///
/// # Safety
/// As `look_back_body`: `input` and `output` hold n elements, `scratch` the look-back's words
/// (8-byte aligned); the block has THREADS threads.
#[inline(always)]
pub(super) unsafe fn staged_body<T: ScanElement>(
    input: GlobalSlice<T>,
    output: GlobalSliceMut<T>,
    scratch: GlobalSliceMut<T>,
    (n, exclusive, phase): (u32, u32, u32),
) {
    if phase == RESET {
        // SAFETY: forwarded.
        unsafe { reset(scratch, n) };
        return;
    }
    // SAFETY: the scratch is 8-byte aligned (the caller's promise), its words used as these.
    let (statuses, _) = unsafe { status_words(scratch, n) };
    let views = carve::<T>();
    let tile = block_idx().x;
    // SAFETY: tile < tiles (a block per tile); the thread reads its slots only after the wait.
    unsafe { stage(views.tile, input, tile, n) };
    async_copy_wait::<0>();
    // SAFETY: every thread of the block calls it; `sums` is this block's.
    let (in_tile, aggregate) =
        unsafe { block_exclusive(views.sums, run_totals(&read_runs::<T>(views.tile, 0, thread_idx().x))) };
    if thread_idx().x < WARP_SIZE {
        // SAFETY: blocks start in index order, so every tile before this one has a running or
        // finished block (see `ordered`).
        let before = unsafe { <WholeWarp>::prefix(statuses, tile, aggregate) };
        if thread_idx().x == 0 {
            views.prefix.set(0, before);
        }
    }
    // The tile's prefix is in shared memory before any thread reads it (and the barrier makes
    // the compiler read the tile again below rather than keep it in registers).
    sync_threads();
    let before = views.prefix.get(0);
    // The thread's index again, as a value the compiler cannot equate with the one the copies
    // used: it computes the addresses afresh instead of keeping them through the look-back.
    let t = opaque(thread_idx().x);
    // SAFETY: the output holds n elements; the staged tile holds this tile.
    unsafe {
        write_scanned(
            views.tile,
            output,
            (tile, n, t),
            in_tile.map(|p| before.plus(p)),
            exclusive != 0,
        )
    };
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), BLOCKS_PER_SM)]
    /// Phase 0: clears the statuses in `scratch`. Phase 1: `output` = the scan of `input`, block b
    /// scanning tile b staged in shared memory, warp 0 walking back 32 tiles at a time.
    pub unsafe fn scan_look_back_staged(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, scratch: GlobalSliceMut<f32>, n: u32, exclusive: u32, phase: u32) {
        // SAFETY: forwarded from the kernel's contract; KERNEL launches THREADS threads.
        unsafe { staged_body::<f32>(input, output, scratch, (n, exclusive, phase)) }
    }
}

/// One block per 8192 elements (a thread per status word in the reset phase), six per SM.
pub const KERNEL: Kernel<Scan> = Kernel {
    code: scan_look_back_staged,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(SHARED_BYTES),
    grid: |p, _| look_back_grid(p),
};
