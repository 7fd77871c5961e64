//! The single-pass scans on i32: the same tiles and look-backs as [`super::look_back`] and
//! [`super::look_back_warp`], adding integers. Every order of additions gives the same result, so the
//! sums are exact (wrapping past the 32-bit range, as `add.s32` does and as the reference does).

use super::look_back::{OneThread, Scratch, look_back_body};
use super::look_back_warp::WholeWarp;
use super::warp_shuffle::TILE;
use super::{Scan, THREADS};
use crate::family::Family;
use crate::{Dim3, Kernel, LaunchBounds, SharedMemory, kernel};

kernel! {
    /// Phase 0: clears the statuses and the ticket in `scratch`. Phase 1: `output` = the scan of
    /// `input`, thread 0 walking back one tile at a time.
    pub unsafe fn scan_look_back_i32(input: *const i32, output: *mut i32, scratch: *mut i32, n: u32, exclusive: u32, phase: u32) {
        // SAFETY: forwarded from the kernel's contract; the KERNELs launch THREADS threads.
        unsafe { look_back_body::<i32, OneThread, true>(input, output, scratch, (n, exclusive, phase)) }
    }
}

kernel! {
    /// Phase 0: clears the statuses and the ticket in `scratch`. Phase 1: `output` = the scan of
    /// `input`, warp 0 walking back 32 tiles at a time.
    pub unsafe fn scan_look_back_warp_i32(input: *const i32, output: *mut i32, scratch: *mut i32, n: u32, exclusive: u32, phase: u32) {
        // SAFETY: as above.
        unsafe { look_back_body::<i32, WholeWarp, true>(input, output, scratch, (n, exclusive, phase)) }
    }
}

/// One block per 4096 elements, in both phases (the look-back's statuses need `look_back_scratch`
/// words of scratch, as for f32).
const fn kernel(code: crate::KernelFn<<Scan<i32> as crate::family::Problem>::Args>) -> Kernel<Scan<i32>> {
    Kernel {
        code,
        block: Dim3::x(THREADS),
        shared: SharedMemory::of(Scratch::BYTES),
        grid: |p| Dim3::x(p.n.div_ceil(TILE)),
        bounds: LaunchBounds::NONE,
    }
}

/// The thread walk.
pub const LOOK_BACK: Kernel<Scan<i32>> = kernel(scan_look_back_i32);
/// The warp walk.
pub const LOOK_BACK_WARP: Kernel<Scan<i32>> = kernel(scan_look_back_warp_i32);

/// Every i32 scan kernel: the registry's list.
pub const FAMILY: Family<Scan<i32>> = Family::new("scan_i32", &[LOOK_BACK, LOOK_BACK_WARP]);
