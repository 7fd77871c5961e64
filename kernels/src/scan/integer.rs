//! The scans on i32: the three-phase warp-shuffle scan of [`super::warp_shuffle`] and the
//! single-pass ones of [`super::look_back`], [`super::look_back_warp`], [`super::pipelined`] and
//! [`super::staged`],
//! adding integers. Every order of additions gives the same result, so the sums are exact
//! (wrapping past the 32-bit range, as `add.s32` does and as the reference does).

use super::look_back::{BLOCKS_PER_SM as LOOK_BACK_BLOCKS_PER_SM, OneThread, Scratch, look_back_body};
use super::look_back_warp::WholeWarp;
use super::pipelined::{BLOCKS_PER_SM, SHARED_BYTES, grid, pipelined_body};
use super::staged::{BLOCKS_PER_SM as STAGED_BLOCKS_PER_SM, SHARED_BYTES as STAGED_SHARED_BYTES, staged_body};
use super::warp_shuffle::{TILE, WarpTotals, warp_shuffle_body};
use super::{Scan, THREADS};
use ptxkit::Family;
use ptxkit::device::{GlobalSlice, GlobalSliceMut};
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory, kernel};

kernel! {
    /// Phase 0: `output` = each 8192-element tile's scan, `scratch[tile]` = its total. Phase 1:
    /// `output[i] += scratch[tile of i]`.
    pub unsafe fn scan_warp_shuffle_i32(input: GlobalSlice<i32>, output: GlobalSliceMut<i32>, scratch: GlobalSliceMut<i32>, n: u32, exclusive: u32, phase: u32) {
        // SAFETY: forwarded from the kernel's contract; the KERNELs launch THREADS threads.
        unsafe { warp_shuffle_body(input, output, scratch, (n, exclusive, phase)) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), LOOK_BACK_BLOCKS_PER_SM)]
    /// Phase 0: clears the statuses and the ticket in `scratch`. Phase 1: `output` = the scan of
    /// `input`, thread 0 walking back one tile at a time.
    pub unsafe fn scan_look_back_i32(input: GlobalSlice<i32>, output: GlobalSliceMut<i32>, scratch: GlobalSliceMut<i32>, n: u32, exclusive: u32, phase: u32) {
        // SAFETY: forwarded from the kernel's contract; the KERNELs launch THREADS threads.
        unsafe { look_back_body::<i32, OneThread, true>(input, output, scratch, (n, exclusive, phase)) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), LOOK_BACK_BLOCKS_PER_SM)]
    /// Phase 0: clears the statuses and the ticket in `scratch`. Phase 1: `output` = the scan of
    /// `input`, warp 0 walking back 32 tiles at a time.
    pub unsafe fn scan_look_back_warp_i32(input: GlobalSlice<i32>, output: GlobalSliceMut<i32>, scratch: GlobalSliceMut<i32>, n: u32, exclusive: u32, phase: u32) {
        // SAFETY: as above.
        unsafe { look_back_body::<i32, WholeWarp, true>(input, output, scratch, (n, exclusive, phase)) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), BLOCKS_PER_SM)]
    /// Phase 0: clears the statuses and the ticket in `scratch`. Phase 1: `output` = the scan of
    /// `input`, resident blocks taking tiles by ticket, each copying its next tile while it scans
    /// the current one.
    pub unsafe fn scan_look_back_pipelined_i32(input: GlobalSlice<i32>, output: GlobalSliceMut<i32>, scratch: GlobalSliceMut<i32>, n: u32, exclusive: u32, phase: u32) {
        // SAFETY: as above.
        unsafe { pipelined_body::<i32>(input, output, scratch, (n, exclusive, phase)) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), STAGED_BLOCKS_PER_SM)]
    /// Phase 0: clears the statuses in `scratch`. Phase 1: `output` = the scan of `input`, block b
    /// scanning tile b staged in shared memory, warp 0 walking back 32 tiles at a time.
    pub unsafe fn scan_look_back_staged_i32(input: GlobalSlice<i32>, output: GlobalSliceMut<i32>, scratch: GlobalSliceMut<i32>, n: u32, exclusive: u32, phase: u32) {
        // SAFETY: as above.
        unsafe { staged_body::<i32>(input, output, scratch, (n, exclusive, phase)) }
    }
}

/// A kernel of one block per 8192 elements (the look-back ones: a thread per status word in their
/// reset phase), with `shared` bytes (the layouts of f32, the same bytes for i32) and the f32
/// kernel's launch bounds (on the kernels themselves).
const fn kernel(
    code: ptxkit::KernelFn<<Scan<i32> as ptxkit::Problem>::Args>,
    shared: u32,
    grid: fn(&Scan<i32>, Occupancy) -> Dim3,
) -> Kernel<Scan<i32>> {
    Kernel {
        code,
        block: Dim3::x(THREADS),
        shared: SharedMemory::of(shared),
        grid,
    }
}

/// Three phases.
pub const WARP_SHUFFLE: Kernel<Scan<i32>> = kernel(scan_warp_shuffle_i32, WarpTotals::BYTES, |p, _| {
    Dim3::x(p.n.div_ceil(TILE))
});
/// The thread walk.
pub const LOOK_BACK: Kernel<Scan<i32>> = kernel(scan_look_back_i32, Scratch::BYTES, |p, _| {
    super::look_back::look_back_grid(p)
});
/// The warp walk.
pub const LOOK_BACK_WARP: Kernel<Scan<i32>> = kernel(scan_look_back_warp_i32, Scratch::BYTES, |p, _| {
    super::look_back::look_back_grid(p)
});

/// The warp walk in resident blocks, each prefetching its next tile (as [`super::pipelined`]).
pub const LOOK_BACK_PIPELINED: Kernel<Scan<i32>> = Kernel {
    code: scan_look_back_pipelined_i32,
    block: Dim3::x(THREADS),
    shared: SharedMemory::opt_in(SHARED_BYTES),
    grid: |p, device| grid(p, device),
};

/// The ordered warp walk with the tile staged in shared memory (as [`super::staged`]).
pub const LOOK_BACK_STAGED: Kernel<Scan<i32>> = kernel(scan_look_back_staged_i32, STAGED_SHARED_BYTES, |p, _| {
    super::look_back::look_back_grid(p)
});

/// Every i32 scan kernel: the registry's list.
pub const FAMILY: Family<Scan<i32>> = Family::new(
    "scan_i32",
    &[
        WARP_SHUFFLE,
        LOOK_BACK,
        LOOK_BACK_WARP,
        LOOK_BACK_PIPELINED,
        LOOK_BACK_STAGED,
    ],
);
