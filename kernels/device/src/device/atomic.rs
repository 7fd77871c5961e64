//! What blocks need to cooperate through global memory: atomics, fences, and loads and stores with
//! the orderings of the PTX memory model. A reduction's last block, a scan's look-back and a
//! histogram's bins are built from these.
//!
//! * `atomic_*` are `atom.global.*` (relaxed, GPU scope, as CUDA's `atomicAdd` and friends): each
//!   read-modify-write is indivisible, but orders nothing else.
//! * [`load_acquire`] / [`store_release`] (`ld.acquire.gpu` / `st.release.gpu`): a thread that
//!   reads, with acquire, the flag another thread stored with release, sees everything that thread
//!   wrote before the store. [`load_relaxed`] / [`store_relaxed`] are strong but order nothing
//!   (for polling, and for values published by a fence).
//! * [`thread_fence`] (`__threadfence()`, `fence.sc.gpu`) orders a thread's accesses before it
//!   against those after it, as seen by every thread of the GPU; [`thread_fence_block`] only for
//!   the threads of its block. [`thread_fence_acq_rel`] (`fence.acq_rel.gpu`) is the lighter fence
//!   that a release (writes, the fence, then a relaxed store or atomic of a flag) and an acquire
//!   (the flag seen by a relaxed load or atomic, the fence, then reads) need; it does not give
//!   the single order of all fenced accesses that `fence.sc` does.
//!
//! On the emulator every one of these is the host's atomic with the same ordering (blocks run on
//! several OS threads at once), so the orderings a kernel relies on hold there too, and the tests
//! of `atomic_probe` show them.
//!
//! All pointers are into global memory; a block waiting on another block must wait only on blocks
//! that started before it (take a ticket with [`atomic_add`] to learn the order), as the GPU
//! schedules blocks in no promised order.

use super::backend;

mod sealed {
    pub trait Sealed {}
}

/// A type `atom.global.add` adds: f32, u32, i32, u64.
pub trait AtomicAdd: Copy + sealed::Sealed {
    #[doc(hidden)]
    unsafe fn atomic_add(ptr: *mut Self, value: Self) -> Self;
    #[doc(hidden)]
    unsafe fn red_add(ptr: *mut Self, value: Self);
}

/// A type `atom.shared.add` adds: u32, f32. (Shared-memory atomics work on this block's copy;
/// see [`SharedSlice::atomic_add`](super::SharedSlice::atomic_add).)
pub trait SharedAtomicAdd: super::SharedWord + sealed::Sealed {
    #[doc(hidden)]
    unsafe fn shared_atomic_add(ptr: *mut Self, value: Self) -> Self;
}

impl SharedAtomicAdd for u32 {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn shared_atomic_add(ptr: *mut Self, value: Self) -> Self {
        // SAFETY: forwarded from `SharedSlice::atomic_add`.
        unsafe { backend::shared_atomic_add_u32(ptr, value) }
    }
}

impl SharedAtomicAdd for f32 {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn shared_atomic_add(ptr: *mut Self, value: Self) -> Self {
        // SAFETY: forwarded from `SharedSlice::atomic_add`.
        unsafe { backend::shared_atomic_add_f32(ptr, value) }
    }
}

/// A type `atom.global.min` / `.max` compare: u32, i32.
pub trait AtomicOrd: Copy + sealed::Sealed {
    #[doc(hidden)]
    unsafe fn atomic_min(ptr: *mut Self, value: Self) -> Self;
    #[doc(hidden)]
    unsafe fn atomic_max(ptr: *mut Self, value: Self) -> Self;
}

/// A word `atom.global.exch` / `.cas` and the ordered loads and stores move: u32, u64, f32.
pub trait AtomicWord: Copy + sealed::Sealed {
    #[doc(hidden)]
    unsafe fn atomic_exch(ptr: *mut Self, value: Self) -> Self;
    #[doc(hidden)]
    unsafe fn atomic_cas(ptr: *mut Self, expected: Self, new: Self) -> Self;
    #[doc(hidden)]
    unsafe fn load_acquire(ptr: *const Self) -> Self;
    #[doc(hidden)]
    unsafe fn load_relaxed(ptr: *const Self) -> Self;
    #[doc(hidden)]
    unsafe fn store_release(ptr: *mut Self, value: Self);
    #[doc(hidden)]
    unsafe fn store_relaxed(ptr: *mut Self, value: Self);
}

impl sealed::Sealed for f32 {}
impl sealed::Sealed for u32 {}
impl sealed::Sealed for i32 {}
impl sealed::Sealed for u64 {}

macro_rules! atomic_add {
    ($($t:ty => $f:ident, $red:ident),*) => {$(
        impl AtomicAdd for $t {
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn atomic_add(ptr: *mut Self, value: Self) -> Self {
                // SAFETY: forwarded from `atomic_add`.
                unsafe { backend::$f(ptr, value) }
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn red_add(ptr: *mut Self, value: Self) {
                // SAFETY: forwarded from `red_add`.
                unsafe { backend::$red(ptr, value) }
            }
        }
    )*};
}
atomic_add!(
    f32 => atomic_add_f32, red_add_f32,
    u32 => atomic_add_u32, red_add_u32,
    i32 => atomic_add_i32, red_add_i32,
    u64 => atomic_add_u64, red_add_u64
);

macro_rules! atomic_ord {
    ($($t:ty => $min:ident, $max:ident);*) => {$(
        impl AtomicOrd for $t {
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn atomic_min(ptr: *mut Self, value: Self) -> Self {
                // SAFETY: forwarded from `atomic_min`.
                unsafe { backend::$min(ptr, value) }
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn atomic_max(ptr: *mut Self, value: Self) -> Self {
                // SAFETY: forwarded from `atomic_max`.
                unsafe { backend::$max(ptr, value) }
            }
        }
    )*};
}
atomic_ord!(u32 => atomic_min_u32, atomic_max_u32; i32 => atomic_min_i32, atomic_max_i32);

macro_rules! atomic_word {
    ($($t:ty => $exch:ident, $cas:ident, $acq:ident, $ld:ident, $rel:ident, $st:ident);*) => {$(
        impl AtomicWord for $t {
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn atomic_exch(ptr: *mut Self, value: Self) -> Self {
                // SAFETY: forwarded from `atomic_exch`.
                unsafe { backend::$exch(ptr, value) }
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn atomic_cas(ptr: *mut Self, expected: Self, new: Self) -> Self {
                // SAFETY: forwarded from `atomic_cas`.
                unsafe { backend::$cas(ptr, expected, new) }
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn load_acquire(ptr: *const Self) -> Self {
                // SAFETY: forwarded from `load_acquire`.
                unsafe { backend::$acq(ptr) }
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn load_relaxed(ptr: *const Self) -> Self {
                // SAFETY: forwarded from `load_relaxed`.
                unsafe { backend::$ld(ptr) }
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn store_release(ptr: *mut Self, value: Self) {
                // SAFETY: forwarded from `store_release`.
                unsafe { backend::$rel(ptr, value) }
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn store_relaxed(ptr: *mut Self, value: Self) {
                // SAFETY: forwarded from `store_relaxed`.
                unsafe { backend::$st(ptr, value) }
            }
        }
    )*};
}
atomic_word!(
    u32 => atomic_exch_u32, atomic_cas_u32, load_acquire_u32, load_relaxed_u32, store_release_u32, store_relaxed_u32;
    u64 => atomic_exch_u64, atomic_cas_u64, load_acquire_u64, load_relaxed_u64, store_release_u64, store_relaxed_u64
);

/// An f32 moves as its 32 bits: the same instructions as a u32 (a value published for other
/// blocks, read back with the memory model's loads).
impl AtomicWord for f32 {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn atomic_exch(ptr: *mut Self, value: Self) -> Self {
        // SAFETY: forwarded from `atomic_exch`; f32 and u32 have one size and alignment.
        f32::from_bits(unsafe { u32::atomic_exch(ptr.cast(), value.to_bits()) })
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn atomic_cas(ptr: *mut Self, expected: Self, new: Self) -> Self {
        // SAFETY: as above; the comparison is of the bits.
        f32::from_bits(unsafe { u32::atomic_cas(ptr.cast(), expected.to_bits(), new.to_bits()) })
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn load_acquire(ptr: *const Self) -> Self {
        // SAFETY: as above.
        f32::from_bits(unsafe { u32::load_acquire(ptr.cast()) })
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn load_relaxed(ptr: *const Self) -> Self {
        // SAFETY: as above.
        f32::from_bits(unsafe { u32::load_relaxed(ptr.cast()) })
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn store_release(ptr: *mut Self, value: Self) {
        // SAFETY: as above.
        unsafe { u32::store_release(ptr.cast(), value.to_bits()) }
    }
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn store_relaxed(ptr: *mut Self, value: Self) {
        // SAFETY: as above.
        unsafe { u32::store_relaxed(ptr.cast(), value.to_bits()) }
    }
}

/// `atomicAdd(ptr, value)`: adds `value` to `*ptr` indivisibly; returns the old value. (f32 adds
/// round, and their order varies from run to run: sums built this way are not reproducible.)
///
/// # Safety
/// `ptr` is an aligned element of global memory, valid for reads and writes.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn atomic_add<T: AtomicAdd>(ptr: *mut T, value: T) -> T {
    // SAFETY: forwarded from the caller.
    unsafe { T::atomic_add(ptr, value) }
}

/// `atomicAdd(ptr, value)` whose old value is not wanted: PTX `red.global.add`, what nvcc emits for
/// an `atomicAdd` whose result is unused (the L2 does the add without sending a value back).
///
/// # Safety
/// As for [`atomic_add`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn red_add<T: AtomicAdd>(ptr: *mut T, value: T) {
    // SAFETY: forwarded from the caller.
    unsafe { T::red_add(ptr, value) }
}

/// `atomicMin(ptr, value)`; returns the old value.
///
/// # Safety
/// As for [`atomic_add`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn atomic_min<T: AtomicOrd>(ptr: *mut T, value: T) -> T {
    // SAFETY: forwarded from the caller.
    unsafe { T::atomic_min(ptr, value) }
}

/// `atomicMax(ptr, value)`; returns the old value.
///
/// # Safety
/// As for [`atomic_add`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn atomic_max<T: AtomicOrd>(ptr: *mut T, value: T) -> T {
    // SAFETY: forwarded from the caller.
    unsafe { T::atomic_max(ptr, value) }
}

/// `atomicExch(ptr, value)`: stores `value`, returns the old value.
///
/// # Safety
/// As for [`atomic_add`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn atomic_exch<T: AtomicWord>(ptr: *mut T, value: T) -> T {
    // SAFETY: forwarded from the caller.
    unsafe { T::atomic_exch(ptr, value) }
}

/// `atomicCAS(ptr, expected, new)`: stores `new` if `*ptr == expected`; returns the old value
/// either way (equal to `expected` when the store happened).
///
/// # Safety
/// As for [`atomic_add`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn atomic_cas<T: AtomicWord>(ptr: *mut T, expected: T, new: T) -> T {
    // SAFETY: forwarded from the caller.
    unsafe { T::atomic_cas(ptr, expected, new) }
}

/// `ld.acquire.gpu`: reads `*ptr`; what the writer of the value wrote before its release store is
/// visible after this load.
///
/// # Safety
/// `ptr` is an aligned element of global memory, valid for reads.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn load_acquire<T: AtomicWord>(ptr: *const T) -> T {
    // SAFETY: forwarded from the caller.
    unsafe { T::load_acquire(ptr) }
}

/// `ld.relaxed.gpu`: reads `*ptr` from where all threads of the GPU see it (not a stale copy in
/// this SM's L1), ordering nothing.
///
/// # Safety
/// As for [`load_acquire`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn load_relaxed<T: AtomicWord>(ptr: *const T) -> T {
    // SAFETY: forwarded from the caller.
    unsafe { T::load_relaxed(ptr) }
}

/// `st.release.gpu`: stores `value` after every access this thread made before it.
///
/// # Safety
/// `ptr` is an aligned element of global memory, valid for writes.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn store_release<T: AtomicWord>(ptr: *mut T, value: T) {
    // SAFETY: forwarded from the caller.
    unsafe { T::store_release(ptr, value) }
}

/// `st.relaxed.gpu`: a store other threads can poll for, ordering nothing.
///
/// # Safety
/// As for [`store_release`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn store_relaxed<T: AtomicWord>(ptr: *mut T, value: T) {
    // SAFETY: forwarded from the caller.
    unsafe { T::store_relaxed(ptr, value) }
}

/// `__threadfence()`: every access of this thread before the fence is ordered before every access
/// after it, for all threads of the GPU.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn thread_fence() {
    backend::thread_fence()
}

/// `fence.acq_rel.gpu`: as [`thread_fence`] for a release or an acquire through a flag (the
/// module's doc), without `fence.sc`'s single order of all fenced accesses, and cheaper.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn thread_fence_acq_rel() {
    backend::thread_fence_acq_rel()
}

/// `__threadfence_block()`: as [`thread_fence`], for the threads of this block.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn thread_fence_block() {
    backend::thread_fence_block()
}
