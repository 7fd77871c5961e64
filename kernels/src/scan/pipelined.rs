//! Rung 7: the warp look-back with the next tile's loads in flight while a block waits. In the
//! rungs before, a block's loads are all done before it scans, looks back and stores, so an SM has
//! loads in flight only in the blocks that are still loading: about half of them. Here a block
//! stays resident and scans tile after tile, each taken by ticket: as soon as it has read tile t
//! into registers it takes its next ticket and starts `cp.async` copies of that tile into the
//! other half of a double buffer in shared memory, so the memory system works on it while the
//! block looks back for and stores tile t.
//!
//! Each thread copies exactly the 16-byte words it will read back (the register layout of
//! [`super::warp_shuffle`]), so its own `cp.async.wait_group` is all the ordering it needs: no
//! barrier guards the buffers. The grid is the blocks the device holds at once (the host's
//! [`Scan::blocks`]). Every tile is held by a block that runs (it took the ticket), each waits
//! only on smaller tiles, and a block scans its own in increasing order, so the smallest
//! unfinished tile can always finish: no deadlock, whatever order or number the GPU runs blocks
//! in. A block holds one tile besides the one it scans, taken when that one was already read, so
//! tickets follow the order in which blocks go on. (The first form took two tickets at once: tile
//! 2b's look-back then waited on tile 2b − 1, another block's second tile, queued behind its
//! first, and so on down a chain through every block: docs/perf-log.md, changes 24 and 26.)

use super::look_back::{Walk, status_words};
use super::look_back_warp::WholeWarp;
use super::warp_shuffle::{PER_THREAD, RUNS, Runs, TILE, run_totals, store_run};
use super::{RESET, Scan, ScanElement, THREADS, WARPS, block_exclusive};
use ptxkit::device::{
    DynamicShared, GlobalSlice, GlobalSliceMut, MatrixLayout, SharedMatrix, SharedSlice, WARP_SIZE, async_copy_commit,
    async_copy_wait, block_idx, grid_dim, is_aligned4, sync_threads, thread_idx, unrolled,
};
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory, kernel};

/// Blocks per SM the registers must allow: two (128 registers). With 32 elements per thread and
/// the next tile's copy in flight, ptxas spills at three (80 registers); shared memory (two 32 KiB
/// tiles per block) would allow three. (With 16 per thread it ran at four blocks, 64 registers.)
pub const BLOCKS_PER_SM: u32 = 2;

/// Ticket slots: the block's first tile, then each next one (apart, so that a thread still reading
/// the first cannot see it overwritten).
const TICKETS: u32 = 2;
const FIRST: u32 = 0;
const NEXT: u32 = 1;

/// Bytes of shared memory per block: the double buffer first (16-byte aligned at offset 0), then
/// the block scan's warp totals, the tickets (first, next) and the tile's prefix (4-byte elements).
pub const SHARED_BYTES: u32 = {
    let buffers = 2 * TILE * 4;
    buffers + 4 * (WARPS + 1 + TICKETS + 1)
};

/// The shared views: the two tile buffers (as bits), the warp totals, the tickets, the prefix.
struct Views<T> {
    buffers: SharedMatrix<f32>,
    sums: SharedSlice<T>,
    tickets: SharedSlice<u32>,
    prefix: SharedSlice<T>,
}

#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn carve<T: ScanElement>() -> Views<T> {
    const { assert!(core::mem::size_of::<T>() == 4, "the layout is for 4-byte elements") };
    let mut shared = DynamicShared::new();
    Views {
        buffers: shared.named_matrix("buffers", MatrixLayout::dense(2, TILE)),
        sums: shared.named_slice("sums", WARPS + 1),
        tickets: shared.named_slice("tickets", TICKETS),
        prefix: shared.named_slice("prefix", 1),
    }
}

/// Where thread `t`'s run `c` sits inside a tile (the layout of `warp_shuffle`'s runs).
#[inline(always)]
pub(super) fn in_tile(t: u32, c: u32) -> u32 {
    let first = t / WARP_SIZE * (WARP_SIZE * PER_THREAD) + 4 * (t % WARP_SIZE);
    // SAFETY: first + 128·c < TILE: no overflow. Said to the compiler (no unsigned wrap), the
    // runs' shared addresses become one register plus constants instead of a register per run.
    unsafe { first.unchecked_add(c * (WARP_SIZE * 4)) }
}

/// Starts bringing the thread's runs of `tile` into buffer `buffer`: a `cp.async` per run that lies
/// inside the input (aligned input), else plain loads (0 past n) stored at once. Commits a group
/// either way.
///
/// # Safety
/// `input` holds n elements; `tile` < the number of tiles; nothing reads the thread's slots of
/// `buffer` until the group is waited for.
#[inline(always)]
unsafe fn fetch<T: ScanElement>(buffers: SharedMatrix<f32>, buffer: u32, input: GlobalSlice<T>, tile: u32, n: u32) {
    let vector = is_aligned4(input.as_ptr());
    unrolled::<RUNS>(|c| {
        let offset = in_tile(thread_idx().x, c);
        // tile · TILE ≤ n − 1 and offset < TILE: saturate rather than wrap past u32::MAX.
        let first = (tile * TILE).saturating_add(offset);
        // SAFETY (buffers): buffer < 2, offset + 4 ≤ TILE, a multiple of 4 in a matrix at offset 0.
        if vector && first.checked_add(4).is_some_and(|end| end <= n) {
            // SAFETY: first + 4 ≤ n and first is a multiple of 4: 16-byte aligned, inside the input.
            unsafe { buffers.copy4_async_unchecked(buffer, offset, input.as_ptr().add(first as usize).cast::<f32>()) };
        } else {
            let four: [T; 4] = core::array::from_fn(|k| {
                let i = first.saturating_add(k as u32);
                // SAFETY: i < n.
                if i < n {
                    unsafe { input.get_unchecked(i) }
                } else {
                    T::ZERO
                }
            });
            unsafe { buffers.set4_unchecked(buffer, offset, T::to_float4(four)) };
        }
    });
    async_copy_commit();
}

/// Thread `t`'s runs from buffer `buffer` (after the wait that covers their copies): the calling
/// thread's, `t` given so that a caller can make the compiler compute the addresses afresh.
#[inline(always)]
pub(super) fn read_runs<T: ScanElement>(buffers: SharedMatrix<f32>, buffer: u32, t: u32) -> Runs<T> {
    let mut run = [T::ZERO; PER_THREAD as usize];
    unrolled::<RUNS>(|c| {
        // SAFETY: as in `fetch`: inside the buffer, 16-byte aligned.
        let four = T::from_float4(unsafe { buffers.get4_unchecked(buffer, in_tile(t, c)) });
        unrolled::<4>(|k| run[(4 * c + k) as usize] = four[k as usize]);
    });
    run
}

/// Phase [`RESET`]: clears the statuses and the ticket. Phase 1: the scan, tiles by ticket, each
/// block copying its next tile while it looks back for and stores the current one.
///
/// # Safety
/// As `look_back_body`: `input` and `output` hold n elements, `scratch` the look-back's words
/// (8-byte aligned); the block has THREADS threads.
#[inline(always)]
pub(super) unsafe fn pipelined_body<T: ScanElement>(
    input: GlobalSlice<T>,
    output: GlobalSliceMut<T>,
    scratch: GlobalSliceMut<T>,
    (n, exclusive, phase): (u32, u32, u32),
) {
    let tiles = n.div_ceil(TILE);
    // SAFETY: the scratch is 8-byte aligned (the caller's promise), its words used as these.
    let (statuses, ticket) = unsafe { status_words(scratch, n) };
    let t = thread_idx().x;
    if phase == RESET {
        // The grid has fewer blocks than tiles: each thread clears every grid-th status.
        let mut s = block_idx().x * THREADS + t;
        while s < tiles {
            // SAFETY: s < tiles: one status per tile.
            unsafe { statuses.at_unchecked(s).store_relaxed(0u64) };
            s += grid_dim().x * THREADS;
        }
        if block_idx().x == 0 && t == 0 {
            // SAFETY: the ticket's slot after the statuses.
            unsafe { ticket.at_unchecked(0u32).store_relaxed(0u32) };
        }
        return;
    }
    let views = carve::<T>();
    if t == 0 {
        // SAFETY: the ticket is the caller's, zero after the reset phase.
        views
            .tickets
            .set(FIRST, unsafe { ticket.at_unchecked(0u32) }.atomic_add(1u32));
    }
    // The first tile is in shared memory before any thread reads it.
    sync_threads();
    let mut tile = views.tickets.get(FIRST);
    if tile >= tiles {
        return;
    }
    // SAFETY: tile < tiles; buffer 0 is not read before the wait below.
    unsafe { fetch(views.buffers, 0, input, tile, n) };
    let mut buffer = 0u32;
    loop {
        // This tile's copies have landed.
        async_copy_wait::<0>();
        let run: Runs<T> = read_runs(views.buffers, buffer, t);
        if t == 0 {
            // The next tile, taken now that this one is read; in shared memory before the block
            // scan's first barrier (and rewritten only after this iteration's last one).
            // SAFETY: as above.
            views
                .tickets
                .set(NEXT, unsafe { ticket.at_unchecked(0u32) }.atomic_add(1u32));
        }
        // SAFETY: every thread of the block calls it; `sums` is this block's.
        let (in_tile, aggregate) = unsafe { block_exclusive(views.sums, run_totals(&run)) };
        let next = views.tickets.get(NEXT);
        if next < tiles {
            // SAFETY: next < tiles; this thread read its slots of the other buffer an iteration
            // ago, into registers that have been used since.
            unsafe { fetch(views.buffers, buffer ^ 1, input, next, n) };
        }
        if t < WARP_SIZE {
            // SAFETY: every tile before `tile` is held by a running block, which finishes it
            // without waiting on this block (see the module documentation).
            let before = unsafe { <WholeWarp>::prefix(statuses, tile, aggregate) };
            if t == 0 {
                views.prefix.set(0, before);
            }
        }
        // The tile's prefix is in shared memory before any thread reads it.
        sync_threads();
        let before = views.prefix.get(0);
        // SAFETY: the output holds n elements; tile < tiles.
        unsafe { store_run(output, tile, n, run, in_tile.map(|p| before.plus(p)), exclusive != 0) };
        if next >= tiles {
            return;
        }
        tile = next;
        buffer ^= 1;
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), BLOCKS_PER_SM)]
    /// Phase 0: clears the statuses and the ticket in `scratch`. Phase 1: `output` = the scan of
    /// `input`, resident blocks taking tiles by ticket, each copying its next tile while it looks
    /// back for and stores the current one.
    pub unsafe fn scan_look_back_pipelined(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, scratch: GlobalSliceMut<f32>, n: u32, exclusive: u32, phase: u32) {
        // SAFETY: forwarded from the kernel's contract; KERNEL launches THREADS threads.
        unsafe { pipelined_body::<f32>(input, output, scratch, (n, exclusive, phase)) }
    }
}

/// The grid: the blocks the device holds at once, never more than there are tiles.
pub const fn grid<T>(p: &Scan<T>, device: Occupancy) -> Dim3 {
    Dim3::x(device.at_most_resident(p.n.div_ceil(TILE)))
}

/// As many blocks as the device holds at once, in both phases.
pub const KERNEL: Kernel<Scan> = Kernel {
    code: scan_look_back_pipelined,
    block: Dim3::x(THREADS),
    shared: SharedMemory::opt_in(SHARED_BYTES),
    grid: |p, device| grid(p, device),
};
