//! Asynchronous copies from global to shared memory (`cp.async`, sm_80 and later): a thread starts
//! 16-byte copies, closes them into a group, and goes on computing while they travel; later it
//! waits until all but its most recent groups have landed. The copies bypass the registers, so a
//! tile can be loaded for the next step while the current one is multiplied (double buffering).
//!
//! The rules, as PTX states them and the emulator enforces them by performing each copy only at
//! the wait that covers its group: a copy's bytes are in shared memory for the issuing thread once
//! an [`async_copy_wait`] has covered its group; other threads may read them only after a barrier
//! that follows that wait. A copy not yet committed is not waited for.

use super::{SharedMatrix, backend};

impl<T: super::Word32> SharedMatrix<T> {
    /// Starts copying the four floats at `src` (global memory) into elements `(row, col..col + 4)`:
    /// `cp.async.cg.shared.global`, 16 bytes, cached in the L2 only. The copy joins this thread's
    /// open group ([`async_copy_commit`] closes it).
    ///
    /// # Safety
    /// The destination as for [`SharedMatrix::get4_unchecked`]; `src` points to four floats of
    /// global memory, 16-byte aligned, that no thread writes until the copy's group is waited for.
    /// (The emulator checks both alignments.)
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn copy4_async_unchecked(&self, row: u32, col: u32, src: *const T) {
        let dst = self.vector_at(row, col);
        // SAFETY: forwarded from the caller.
        unsafe { backend::copy16_async(self.base(), dst, src.cast()) }
    }

    /// As [`SharedMatrix::copy4_async_unchecked`], but only the first `valid` of the four floats
    /// (0 to 4) are read from `src`; the rest land as zeros (`cp.async`'s source size). With
    /// `valid = 0` nothing is read and `src` need only be aligned: a tile's edge past the image or
    /// matrix stages zeros without a branch or a store of its own.
    ///
    /// With `valid` from 1 to 3, ptxas turns the copy into a 16-byte read that compute-sanitizer
    /// counts whole (an out-of-bounds read where the allocation ends inside the 16 bytes: run
    /// 2026-12-01-ba); the scan's staged tile copies its ragged end a float at a time instead.
    ///
    /// # Safety
    /// As for [`SharedMatrix::copy4_async_unchecked`], for the first `valid` floats at `src`;
    /// `valid ≤ 4`.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn copy4_async_zero_fill_unchecked(&self, row: u32, col: u32, src: *const T, valid: u32) {
        let dst = self.vector_at(row, col);
        // SAFETY: forwarded from the caller.
        unsafe { backend::copy16_async_zero_fill(self.base(), dst, src.cast(), valid) }
    }

    /// Starts copying the float at `src` into element `(row, col)` where `valid`, else a zero
    /// (`cp.async.ca.shared.global`, 4 bytes, through the L1): the form for rows of any length and
    /// alignment. Joins this thread's open group, as the 16-byte copies.
    ///
    /// # Safety
    /// The destination as for [`SharedMatrix::get_unchecked`]; where `valid`, `src` points to a
    /// float of global memory that no thread writes until the copy's group is waited for; `src` is
    /// 4-byte aligned either way.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn copy1_async_zero_fill_unchecked(&self, row: u32, col: u32, src: *const T, valid: bool) {
        let dst = self.element_at(row, col);
        // SAFETY: forwarded from the caller.
        unsafe { backend::copy4_async(self.base(), dst.cast(), src.cast(), valid as u32) }
    }
}

/// `cp.async.commit_group`: closes this thread's open group of copies (an empty group is allowed:
/// it completes at once).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn async_copy_commit() {
    backend::async_copy_commit()
}

/// `cp.async.wait_group PENDING`: waits until at most `PENDING` of this thread's committed groups,
/// the most recent ones, are still in flight. `async_copy_wait::<0>()` waits for every committed
/// copy.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn async_copy_wait<const PENDING: u32>() {
    backend::async_copy_wait::<PENDING>()
}
