//! What a product's C holds: the f32 sums as they are, or each rounded once to bf16 ([`Out`]).
//! The matmul kernels that write either are generic over it.

use ptxkit::device::mma::{Bf16, round_pack_bf16x2};
use ptxkit::device::{Float4, global_store, red_add, red_add4, store4};

/// The element C holds: the f32 sums as they are, or each rounded once to bf16 (nearest, ties to
/// even), as PyTorch's bf16 products return them. Runs of k meet in f32 (a bf16 C's in f32
/// partial sums first, [`crate::matmul_bf16::rounded`]), so only an f32 C is ever added to.
pub trait Out: Copy + 'static {
    /// Whether runs of k meet in C itself (adding into it), else in f32 partial sums.
    const ADDS: bool;

    /// Stores `x` at `at`, rounded to this type; or adds it where `adding` (an f32 C only: a bf16
    /// C traps).
    ///
    /// # Safety
    /// `at` is an element of global memory.
    unsafe fn put(at: *mut Self, x: f32, adding: bool);

    /// Stores `four` at `at` and the next three elements in one store; or adds them where
    /// `adding` (an f32 C only, as for [`Out::put`]).
    ///
    /// # Safety
    /// `at` is aligned to four elements' bytes, four elements of global memory; on the GPU,
    /// sm_90a code (the f32 adds).
    unsafe fn put4(at: *mut Self, four: [f32; 4], adding: bool);
}

impl Out for f32 {
    const ADDS: bool = true;

    #[inline(always)]
    unsafe fn put(at: *mut f32, x: f32, adding: bool) {
        // SAFETY: forwarded.
        unsafe { if adding { red_add(at, x) } else { global_store(at, x) } }
    }

    #[inline(always)]
    unsafe fn put4(at: *mut f32, four: [f32; 4], adding: bool) {
        // SAFETY: forwarded: 16-byte aligned.
        unsafe {
            if adding {
                red_add4(at, Float4(four))
            } else {
                store4(at, Float4(four))
            }
        }
    }
}

impl Out for Bf16 {
    const ADDS: bool = false;

    #[inline(always)]
    unsafe fn put(at: *mut Bf16, x: f32, adding: bool) {
        if adding {
            never_added();
        }
        // SAFETY: forwarded.
        unsafe { global_store(at, Bf16(round_pack_bf16x2(x, 0.0) as u16)) }
    }

    #[inline(always)]
    unsafe fn put4(at: *mut Bf16, [w, x, y, z]: [f32; 4], adding: bool) {
        if adding {
            never_added();
        }
        let (low, high) = (round_pack_bf16x2(w, x), round_pack_bf16x2(y, z));
        // SAFETY: forwarded: four bf16 from an 8-byte boundary, one 8-byte store.
        unsafe { global_store(at.cast::<u64>(), low as u64 | (high as u64) << 32) }
    }
}

/// A bf16 C asked to add: a caller's mistake, stopped (the kernel traps; the emulator panics).
#[inline(always)]
fn never_added() -> ! {
    #[cfg(target_arch = "nvptx64")]
    ptxkit::device::trap();
    #[cfg(not(target_arch = "nvptx64"))]
    panic!("a bf16 C is never added to: its runs of k meet in f32 partial sums")
}
