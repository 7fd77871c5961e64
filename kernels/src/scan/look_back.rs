//! Rung 4: the whole scan in one pass (decoupled look-back, Merrill & Garland 2016). Each block
//! takes the next tile by ticket (so that every tile it waits on belongs to a block that started
//! before it), scans its 8192 elements as the warp-shuffle rung does, publishes its total
//! (AGGREGATE), then walks back over the tiles before it, adding their totals until it meets one
//! that has published its inclusive prefix (INCLUSIVE); it publishes its own and writes its
//! elements. Every element is read once and written once: 2n words, the copy's traffic.
//!
//! A tile's status is one 8-byte word (flag in the high half, the f32 in the low half), written
//! and read whole, so a reader never sees a flag without its value. Phase [`RESET`] clears them.

use super::warp_shuffle::{PER_THREAD, TILE, load_run, run_totals, store_run};
use super::{RESET, Scan, ScanElement, THREADS, WARPS, block_exclusive};
use ptxkit::device::{
    DynamicShared, GlobalSlice, GlobalSliceMut, SharedSlice, WARP_SIZE, WarpWord, block_idx, opaque, sync_threads,
    thread_idx,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

/// No status yet.
pub(super) const EMPTY: u64 = 0;
/// The tile's own total.
pub(super) const AGGREGATE: u64 = 1;
/// The sum of every element up to the tile's end.
pub(super) const INCLUSIVE: u64 = 2;

const _: () = assert!(TILE == PER_THREAD * THREADS);

/// The grid of a look-back kernel with a tile per block: a block per tile to scan, and in phase
/// [`RESET`] a thread per status word and one for the ticket (a block per tile there, its thread 0
/// alone working, took a large share of the scan at 2^28, far longer than CUB's init kernel:
/// docs/perf-log.md, change 74).
pub const fn look_back_grid<T>(p: &Scan<T>) -> Dim3 {
    let tiles = p.n.div_ceil(TILE);
    Dim3::x(if p.phase == RESET {
        (tiles + 1).div_ceil(THREADS)
    } else {
        tiles
    })
}

/// Blocks per SM the registers of the look-back kernels (this rung's, the warp walk's and the
/// ordered one's, f32 and i32) must allow: four, at 64 registers, with 32 elements per thread (the
/// twins say the same to nvcc). With 16 per thread the bound was six blocks at 40 registers; 32 per
/// thread at four blocks ran faster at every size from 2^22 (measured: docs/perf-log.md, change
/// 75).
pub(super) const BLOCKS_PER_SM: u32 = 4;

shared_memory! {
    /// The warps' totals, the tile's ticket and its prefix from the look-back (for f32; [`carve`]
    /// lays out the same for any 4-byte element).
    pub struct Scratch {
        pub sums: SharedSlice<f32> = WARPS + 1,
        pub ticket: SharedSlice<u32> = 1,
        pub prefix: SharedSlice<f32> = 1,
    }
}

/// [`Scratch`]'s views for elements of type `T` (4 bytes, as f32: the same bytes).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn carve<T: ScanElement>() -> (SharedSlice<T>, SharedSlice<u32>, SharedSlice<T>) {
    const {
        assert!(
            core::mem::size_of::<T>() == 4,
            "Scratch is laid out for 4-byte elements"
        )
    };
    let mut shared = DynamicShared::new();
    let sums = shared.named_slice::<T>("sums", WARPS + 1);
    let ticket = shared.named_slice::<u32>("ticket", 1);
    let prefix = shared.named_slice::<T>("prefix", 1);
    (sums, ticket, prefix)
}

/// A tile's status word: the flag in the high half, the value's bits in the low half.
#[inline(always)]
pub(super) fn status<T: WarpWord>(flag: u64, value: T) -> u64 {
    flag << 32 | value.to_bits() as u64
}

/// The sum of every element before `tile`, from the statuses of the tiles before it; publishes
/// the tile's own statuses on the way.
///
/// # Safety
/// `statuses` holds a status per tile, reset before the launch; `tile`'s predecessors all belong
/// to blocks that started before this one.
#[inline(always)]
unsafe fn look_back<T: ScanElement>(statuses: GlobalSliceMut<u64>, tile: u32, aggregate: T) -> T {
    // SAFETY (statuses): tile and its predecessors are inside the array.
    unsafe {
        if tile == 0 {
            statuses.at_unchecked(0u32).store_relaxed(status(INCLUSIVE, aggregate));
            return T::ZERO;
        }
        statuses.at_unchecked(tile).store_relaxed(status(AGGREGATE, aggregate));
        let mut prefix = T::ZERO;
        let mut j = tile - 1;
        loop {
            let word = statuses.at_unchecked(j).load_relaxed();
            let flag = word >> 32;
            if flag == EMPTY {
                // Tile j's block has started (it took an earlier ticket) but not published yet.
                continue;
            }
            prefix = prefix.plus(T::from_bits(word as u32));
            if flag == INCLUSIVE {
                break;
            }
            j -= 1;
        }
        statuses
            .at_unchecked(tile)
            .store_relaxed(status(INCLUSIVE, prefix.plus(aggregate)));
        prefix
    }
}

/// How a tile finds the sum of every element before it from the statuses of the tiles before it,
/// publishing its own statuses on the way.
pub(super) trait Walk {
    /// Called by every thread of warp 0 (a walk may use the whole warp); the prefix it returns is
    /// used from lane 0.
    ///
    /// # Safety
    /// As for [`look_back`].
    unsafe fn prefix<T: ScanElement>(statuses: GlobalSliceMut<u64>, tile: u32, aggregate: T) -> T;
}

/// Thread 0 walks back one tile at a time ([`look_back`]).
pub(super) struct OneThread;

impl Walk for OneThread {
    #[inline(always)]
    unsafe fn prefix<T: ScanElement>(statuses: GlobalSliceMut<u64>, tile: u32, aggregate: T) -> T {
        if ptxkit::device::lane_id() != 0 {
            return T::ZERO;
        }
        // SAFETY: forwarded from the caller.
        unsafe { look_back(statuses, tile, aggregate) }
    }
}

/// Where the tiles' statuses and the ticket lie in `scratch`: a status per tile of n elements,
/// then the ticket.
///
/// # Safety
/// `scratch` is 8-byte aligned, and read only as these words while they are in use.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub(super) unsafe fn status_words<T: Copy>(
    scratch: GlobalSliceMut<T>,
    n: u32,
) -> (GlobalSliceMut<u64>, GlobalSliceMut<u32>) {
    let tiles = n.div_ceil(TILE);
    // SAFETY: aligned by the caller's promise; u64 and u32 take every bit pattern.
    unsafe {
        let words = scratch.cast::<u64>();
        (words.head(tiles), words.tail(tiles).cast::<u32>())
    }
}

/// Phase [`RESET`] of a kernel launched on [`look_back_grid`]: thread i clears status i, and the
/// thread after the last status the ticket.
///
/// # Safety
/// `scratch` holds `look_back_scratch(tiles)` words, 8-byte aligned; the block has THREADS threads.
#[inline(always)]
pub(super) unsafe fn reset<T: Copy>(scratch: GlobalSliceMut<T>, n: u32) {
    // SAFETY: forwarded.
    let (statuses, ticket) = unsafe { status_words(scratch, n) };
    let tiles = n.div_ceil(TILE);
    let i = block_idx().x * THREADS + thread_idx().x;
    // SAFETY: one status per tile and the ticket's slot after them.
    unsafe {
        if i < tiles {
            statuses.at_unchecked(i).store_relaxed(EMPTY);
        } else if i == tiles {
            ticket.at_unchecked(0u32).store_relaxed(0u32);
        }
    }
}

/// Phase [`RESET`]: clears the statuses and the ticket in `scratch`. Phase 1: `output` = the scan
/// of `input`, each tile's prefix found by `W`. With `TICKETS` a block's tile is the next ticket
/// (every tile it waits on then belongs to a block that started before it, whatever order the GPU
/// starts blocks in); without, it is the block's index, which saves the ticket's round trip to the
/// L2 and a barrier but relies on blocks starting in index order (see `ordered`).
///
/// # Safety
/// As the kernels' contract: `input` and `output` hold n elements, `scratch` the look-back's words
/// (8-byte aligned); the block has THREADS threads.
#[inline(always)]
pub(super) unsafe fn look_back_body<T: ScanElement, W: Walk, const TICKETS: bool>(
    input: GlobalSlice<T>,
    output: GlobalSliceMut<T>,
    scratch: GlobalSliceMut<T>,
    (n, exclusive, phase): (u32, u32, u32),
) {
    // SAFETY: the scratch is 8-byte aligned (the caller's promise), its words used as these.
    let (statuses, ticket) = unsafe { status_words(scratch, n) };
    let t = thread_idx().x;
    if phase == RESET {
        // SAFETY: forwarded.
        unsafe { reset(scratch, n) };
        return;
    }
    let (sums, my_ticket, prefix) = carve::<T>();
    let tile = if TICKETS {
        if t == 0 {
            // SAFETY: the ticket is the caller's, zero after the reset phase.
            my_ticket.set(0, unsafe { ticket.at_unchecked(0u32) }.atomic_add(1u32));
        }
        // The tile's number is in shared memory before any thread reads it.
        sync_threads();
        my_ticket.get(0)
    } else {
        block_idx().x
    };
    // SAFETY: the input holds n elements; the block has THREADS threads.
    let run = unsafe { load_run(input, tile, n) };
    let (in_tile, aggregate) = unsafe { block_exclusive(sums, run_totals(&run)) };
    if t < WARP_SIZE {
        // SAFETY: tiles are taken by ticket, so every predecessor's block started first.
        let before = unsafe { W::prefix(statuses, tile, aggregate) };
        if t == 0 {
            prefix.set(0, before);
        }
    }
    // The tile's prefix is in shared memory before any thread reads it.
    sync_threads();
    let before = prefix.get(0);
    // The tile again, as a value LLVM cannot equate with the one the loads used: it then computes
    // the run addresses again here instead of keeping them live across the look-back (which took
    // 48 to 55 registers on sm_90 where the twins take 40).
    let tile = if TICKETS {
        my_ticket.get(0)
    } else {
        opaque(block_idx().x)
    };
    // SAFETY: the output holds n elements.
    unsafe { store_run(output, tile, n, run, in_tile.map(|p| before.plus(p)), exclusive != 0) };
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), BLOCKS_PER_SM)]
    /// Phase 0: clears the statuses and the ticket in `scratch`. Phase 1: `output` = the scan of
    /// `input`, thread 0 walking back one tile at a time.
    pub unsafe fn scan_look_back(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, scratch: GlobalSliceMut<f32>, n: u32, exclusive: u32, phase: u32) {
        // SAFETY: forwarded from the kernel's contract; KERNEL launches THREADS threads.
        unsafe { look_back_body::<f32, OneThread, true>(input, output, scratch, (n, exclusive, phase)) }
    }
}

/// One block per 8192 elements (a thread per status word in the reset phase).
pub const KERNEL: Kernel<Scan> = Kernel {
    code: scan_look_back,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Scratch::BYTES),
    grid: |p, _| look_back_grid(p),
};

#[cfg(test)]
mod tests {
    use super::*;
    use ptxkit::LaunchShape;

    kernel! {
        /// One thread runs the walk for `tile` over `statuses`; the prefix into `out`.
        unsafe fn look_back_probe(statuses: GlobalSliceMut<u64>, tile: u32, aggregate: f32, out: GlobalSliceMut<f32>) {
            // SAFETY: the test gives statuses up to `tile`, every predecessor published.
            let prefix = unsafe { look_back(statuses, tile, aggregate) };
            out.set(0u32, prefix);
        }
    }

    fn walk(statuses: &mut [u64], tile: u32, aggregate: f32) -> f32 {
        let mut out = f32::NAN;
        let shape = LaunchShape {
            grid: Dim3::x(1),
            block: Dim3::x(1),
            shared_bytes: 0,
        };
        let args = (
            GlobalSliceMut::new(statuses),
            tile,
            aggregate,
            GlobalSliceMut::new(core::slice::from_mut(&mut out)),
        );
        // SAFETY: the statuses cover `tile`; one output.
        unsafe { look_back_probe.emulate(&shape, args) }.unwrap();
        out
    }

    /// The walk over predecessors that have published only their totals: on the emulator the
    /// tile before is usually complete by the time a tile looks back, so the launch tests rarely
    /// take this path; here it is set up directly.
    #[test]
    fn look_back_adds_aggregates_until_an_inclusive_prefix() {
        let mut statuses = [
            status(INCLUSIVE, 1.0),
            status(AGGREGATE, 2.0),
            status(INCLUSIVE, 100.0),
            status(AGGREGATE, 4.0),
            status(AGGREGATE, 8.0),
            EMPTY,
        ];
        // Tile 5 walks back over tiles 4 and 3 (totals) to tile 2 (inclusive prefix 100).
        assert_eq!(walk(&mut statuses, 5, 16.0), 112.0);
        assert_eq!(statuses[5], status(INCLUSIVE, 128.0));
        // Tile 0 needs no walk.
        assert_eq!(walk(&mut statuses, 0, 3.0), 0.0);
        assert_eq!(statuses[0], status(INCLUSIVE, 3.0));
    }
}
