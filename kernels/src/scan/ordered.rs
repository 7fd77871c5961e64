//! Rung 6: the warp look-back with each block's tile its own index instead of a ticket. A block
//! then starts loading at once: no round trip to the L2 for a ticket, and one barrier fewer. The
//! price is an assumption: a tile waits only on tiles before it, so the scan cannot hang if the
//! GPU starts blocks in index order, which every NVIDIA GPU does and CUB's own single-pass scan
//! relies on, though CUDA does not promise it. (The ticketed rungs need no such assumption.) The
//! emulator starts blocks in grid order too.

use super::look_back::{BLOCKS_PER_SM, Scratch, look_back_body};
use super::look_back_warp::WholeWarp;
use super::{Scan, THREADS};
use ptxkit::device::{GlobalSlice, GlobalSliceMut};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};

kernel! {
    #[launch_bounds(Dim3::x(THREADS), BLOCKS_PER_SM)]
    /// Phase 0: clears the statuses in `scratch`. Phase 1: `output` = the scan of `input`, block b
    /// scanning tile b, warp 0 walking back 32 tiles at a time.
    pub unsafe fn scan_look_back_ordered(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, scratch: GlobalSliceMut<f32>, n: u32, exclusive: u32, phase: u32) {
        // SAFETY: forwarded from the kernel's contract; KERNEL launches THREADS threads.
        unsafe { look_back_body::<f32, WholeWarp, false>(input, output, scratch, (n, exclusive, phase)) }
    }
}

/// One block per 8192 elements (a thread per status word in the reset phase).
pub const KERNEL: Kernel<Scan> = Kernel {
    code: scan_look_back_ordered,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Scratch::BYTES),
    grid: |p, _| super::look_back::look_back_grid(p),
};
