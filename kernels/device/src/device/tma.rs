//! The Tensor Memory Accelerator (sm_90a): one thread starts the copy of a whole tile of a 2-D
//! tensor from global to shared memory, described by a *tensor map* the host made
//! (`cuTensorMapEncodeTiled`: the tensor's address, sizes and strides, the tile's box, the
//! shared-memory swizzle). The copy engine does the addressing, writes zeros for the parts of the
//! box outside the tensor, and on landing counts its bytes on an `mbarrier`
//! ([`super::mbarrier::arrive_expect_tx`] announces them).

use core::arch::asm;

/// Starts copying the box at column `x`, row `y` of the tensor that `map` describes into shared
/// memory at `dst` (the `.shared` window's address), completing its bytes on `barrier`.
///
/// # Safety
/// `map` points to a valid tensor map in global memory (64-byte aligned) that stays unchanged
/// during the kernel; `dst` has room for the box, aligned as the map's swizzle needs (1024 bytes
/// for the 128-byte swizzle); `barrier` was initialised.
#[inline(always)]
pub unsafe fn load_2d(dst: u32, map: *const u8, (x, y): (u32, u32), barrier: *const u64) {
    let barrier = super::wgmma::shared_address(barrier);
    // SAFETY: the caller's promise.
    unsafe {
        asm!(
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}}}], [{b}];",
            d = in(reg32) dst, m = in(reg64) map, x = in(reg32) x, y = in(reg32) y, b = in(reg32) barrier,
            options(nostack),
        )
    };
}

/// As [`load_2d`], the box landing at `dst` in every block of the cluster whose rank's bit is set
/// in `ctas`, each completing its bytes on its own barrier at `barrier`'s offset (`.multicast`).
///
/// # Safety
/// As for [`load_2d`], in each of those blocks, none of which has exited.
#[inline(always)]
pub unsafe fn load_2d_multicast(dst: u32, map: *const u8, (x, y): (u32, u32), barrier: *const u64, ctas: u16) {
    let barrier = super::wgmma::shared_address(barrier);
    // SAFETY: the caller's promise.
    unsafe {
        asm!(
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [{d}], [{m}, {{{x}, {y}}}], [{b}], {c};",
            d = in(reg32) dst, m = in(reg64) map, x = in(reg32) x, y = in(reg32) y, b = in(reg32) barrier, c = in(reg16) ctas,
            options(nostack),
        )
    };
}

/// As [`load_2d`] for a 3-D tensor (a stack of matrices): the box at column `x`, row `y` of matrix
/// `z`.
///
/// # Safety
/// As for [`load_2d`], the map describing a 3-D tensor.
#[inline(always)]
pub unsafe fn load_3d(dst: u32, map: *const u8, (x, y, z): (u32, u32, u32), barrier: *const u64) {
    let barrier = super::wgmma::shared_address(barrier);
    // SAFETY: the caller's promise.
    unsafe {
        asm!(
            "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}, {z}}}], [{b}];",
            d = in(reg32) dst, m = in(reg64) map, x = in(reg32) x, y = in(reg32) y, z = in(reg32) z, b = in(reg32) barrier,
            options(nostack),
        )
    };
}
