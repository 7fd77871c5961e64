//! Rung 8: the warp look-back with a pause between polls. While a window of statuses is not yet all
//! published, the warp walk reads it again at once: with four blocks per SM on 132 SMs, hundreds of
//! warps can be re-reading 32 statuses each through the L2 that the scan's own data streams
//! through. Here a warp that finds a window incomplete sleeps for about [`BACKOFF_NS`]
//! (`nanosleep`) before it reads again, as CUB's look-back does with its delay between polls.
//! (A window twice as wide, two reads per lane, ran slower: docs/perf-log.md, change 32. What the
//! walk costs may be the polling traffic rather than its round trips.)

use super::look_back::{BLOCKS_PER_SM, Scratch, look_back_body};
use super::look_back_warp::WholeWarp;
use super::{Scan, THREADS};
use ptxkit::device::{GlobalSlice, GlobalSliceMut};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};

/// The pause between two reads of an incomplete window: about a fifth of an L2 round trip under
/// load, so that a warp polls a few times per round trip rather than continuously.
pub const BACKOFF_NS: u32 = 200;

kernel! {
    #[launch_bounds(Dim3::x(THREADS), BLOCKS_PER_SM)]
    /// Phase 0: clears the statuses and the ticket in `scratch`. Phase 1: `output` = the scan of
    /// `input`, warp 0 walking back 32 tiles at a time, pausing between polls.
    pub unsafe fn scan_look_back_backoff(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, scratch: GlobalSliceMut<f32>, n: u32, exclusive: u32, phase: u32) {
        // SAFETY: forwarded from the kernel's contract; KERNEL launches THREADS threads.
        unsafe { look_back_body::<f32, WholeWarp<BACKOFF_NS>, true>(input, output, scratch, (n, exclusive, phase)) }
    }
}

/// One block per 8192 elements (a thread per status word in the reset phase); four blocks per SM,
/// as the other look-back rungs.
pub const KERNEL: Kernel<Scan> = Kernel {
    code: scan_look_back_backoff,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Scratch::BYTES),
    grid: |p, _| super::look_back::look_back_grid(p),
};
