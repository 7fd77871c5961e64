//! The device layer: what a kernel body calls, with CUDA's names and meaning.
//!
//! On nvptx64 each function is a PTX special register, instruction or intrinsic; on the host each one
//! asks the emulator ([`crate::emu`]) about the calling thread (`emulated.rs`). Kernels see no difference.
//! `#[track_caller]` on the host lets the emulator say which barrier a thread stopped at.

mod async_copy;
mod atomic;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
pub mod cluster;
pub mod fp8;
mod global;
mod ldmatrix;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
pub mod mbarrier;
pub mod mma;
pub mod print;
mod shared;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
pub mod tma;
mod unroll;
mod vector;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
pub mod wgmma;
mod word;

#[cfg(target_arch = "nvptx64")]
mod nvptx;
#[cfg(target_arch = "nvptx64")]
use nvptx as backend;
/// Aborts the kernel: the launch fails (the stub that `kernel_sm90a!` leaves in other PTX).
#[cfg(target_arch = "nvptx64")]
#[doc(hidden)]
pub use nvptx::trap;

#[cfg(not(target_arch = "nvptx64"))]
mod emulated;
#[cfg(not(target_arch = "nvptx64"))]
use emulated as backend;

pub use crate::launch::{Dim3, WARP_SIZE};
pub use async_copy::{async_copy_commit, async_copy_wait};
pub use atomic::{
    AtomicAdd, AtomicOrd, AtomicWord, SharedAtomicAdd, atomic_add, atomic_cas, atomic_exch, atomic_max, atomic_min,
    load_acquire, load_relaxed, red_add, store_relaxed, store_release, thread_fence, thread_fence_acq_rel,
    thread_fence_block,
};
pub use global::{
    Element, ElementMut, GlobalIndex, GlobalMatrix, GlobalMatrixMut, GlobalSlice, GlobalSliceMut, MatrixExtents,
};
pub use shared::{DynamicShared, MatrixLayout, SharedMatrix, SharedSlice, region};
pub use unroll::{unrolled, unrolled_to};
pub use vector::{Float4, is_aligned4, load4, load4_l2, red_add2, red_add4, store4};
pub use word::{SharedWord, WarpWord, Word32};

/// `threadIdx`: this thread's index within its block.
#[inline(always)]
pub fn thread_idx() -> Dim3 {
    backend::thread_idx()
}

/// `blockIdx`: this block's index within the grid.
#[inline(always)]
pub fn block_idx() -> Dim3 {
    backend::block_idx()
}

/// [`thread_idx`], [`block_idx`] and [`grid_dim`] read again, by reads the compiler may not merge
/// with earlier ones nor move: what a kernel derives from them after a long loop is computed
/// there rather than held in registers through the loop (for kernels at their register limit).
/// (x and y so; z as the plain reads. On the emulator: the plain reads.)
#[inline(always)]
pub fn indices_again() -> (Dim3, Dim3, Dim3) {
    backend::indices_again()
}

/// `blockDim`: threads per block.
#[inline(always)]
pub fn block_dim() -> Dim3 {
    backend::block_dim()
}

/// `gridDim`: blocks per grid.
#[inline(always)]
pub fn grid_dim() -> Dim3 {
    backend::grid_dim()
}

/// `__syncthreads()`: waits until every thread of the block has reached this barrier, and makes the
/// shared-memory writes made before it visible to all of them. Every thread of the block must reach
/// the same barrier; the emulator reports a thread that returned or waits elsewhere.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn sync_threads() {
    backend::sync_threads()
}

/// `__syncwarp()`: waits until every lane of this thread's warp has reached this point.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn sync_warp() {
    backend::sync_warp()
}

/// `value` through a register copy the compiler cannot see through, so that what a kernel
/// computes from the result is computed there again instead of kept live from an earlier use of
/// `value` (the look-back scans recompute their run addresses after the look-back: fewer registers).
/// The emulator returns `value`.
#[inline(always)]
pub fn opaque(value: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    let value = backend::opaque(value);
    value
}

/// A point LLVM moves no memory access across (an empty `asm!` that may touch memory); it emits
/// nothing, so ptxas still schedules freely. Keeps LLVM from hoisting an unrolled loop's later
/// loads to its top. Nothing on the emulator.
#[inline(always)]
pub fn compiler_barrier() {
    #[cfg(target_arch = "nvptx64")]
    backend::compiler_barrier();
}

/// `__nanosleep(ns)`: suspends the thread for about `ns` nanoseconds (the GPU sleeps between 0
/// and 2·`ns`; sm_70 and later), so that a spinning warp stops issuing loads for a while. A no-op
/// on the emulator, whose waiting threads already yield.
#[inline(always)]
pub fn nanosleep(ns: u32) {
    #[cfg(target_arch = "nvptx64")]
    backend::nanosleep(ns);
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = ns;
}

/// This thread's lane within its warp, 0..32.
#[inline(always)]
pub fn lane_id() -> u32 {
    backend::lane_id()
}

/// `__shfl_xor_sync(0xffffffff, value, lane_mask)`: the value of lane `lane_id() ^ lane_mask`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn shfl_xor<T: WarpWord>(value: T, lane_mask: u32) -> T {
    T::from_bits(backend::shfl_xor(value.to_bits(), lane_mask))
}

/// `__shfl_down_sync(0xffffffff, value, delta)`: the value of lane `lane_id() + delta`, or this
/// lane's own value where that lane is past the end of the warp.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn shfl_down<T: WarpWord>(value: T, delta: u32) -> T {
    T::from_bits(backend::shfl_down(value.to_bits(), delta))
}

/// `__shfl_up_sync(0xffffffff, value, delta)`: the value of lane `lane_id() - delta`, or this lane's
/// own value where that lane would be below 0.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn shfl_up<T: WarpWord>(value: T, delta: u32) -> T {
    T::from_bits(backend::shfl_up(value.to_bits(), delta))
}

/// `__shfl_sync(0xffffffff, value, src_lane)`: the value of lane `src_lane % 32`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn shfl_idx<T: WarpWord>(value: T, src_lane: u32) -> T {
    T::from_bits(backend::shfl_idx(value.to_bits(), src_lane))
}

/// `__ballot_sync(0xffffffff, predicate)`: bit `l` set where lane `l`'s predicate is true.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn ballot(predicate: bool) -> u32 {
    backend::ballot(predicate)
}

/// `__match_any_sync(0xffffffff, value)`: bit `l` set where lane `l` holds the same `value` as
/// this lane (this lane's bit included). Lanes that hold equal values can then let one of them act
/// for all: a histogram's warp-aggregated atomic.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn match_any(value: u32) -> u32 {
    backend::match_any(value)
}

/// `__all_sync(0xffffffff, predicate)`: whether every lane's predicate is true.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn vote_all(predicate: bool) -> bool {
    backend::vote_all(predicate)
}

/// `__any_sync(0xffffffff, predicate)`: whether some lane's predicate is true.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn vote_any(predicate: bool) -> bool {
    backend::vote_any(predicate)
}

/// e^x as CUDA's `__expf`: `ex2.approx.ftz.f32` of x·log2(e). Relative error about 2^-21, plus
/// about |x|·2^-24 from rounding x·log2(e); results below f32's normal range are 0. (On the
/// emulator: the host's `exp2` of the same product, flushed the same way.)
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    backend::exp2_approx(x * core::f32::consts::LOG2_E)
}

/// 2^x as CUDA's `exp2f` with `--use_fast_math`: one `ex2.approx.ftz.f32`, relative error about
/// 2^-22; 2^-∞ is 0. For kernels that keep their exponents in log2 units (attention's scores).
#[inline(always)]
pub fn exp2(x: f32) -> f32 {
    backend::exp2_approx(x)
}

/// log2 x as CUDA's `__log2f`: one `lg2.approx.ftz.f32`, absolute error about 2^-22 for x in
/// [0.5, 2], relative error about 2^-22 elsewhere; log2 0 is −∞, subnormal x is taken as 0. For
/// kernels that keep their exponents in log2 units. (On the emulator: the host's `log2`, flushed
/// the same way.)
#[inline(always)]
pub fn log2(x: f32) -> f32 {
    backend::log2_approx(x)
}

/// ln x as CUDA's `__logf`: `lg2.approx.ftz.f32` of x, times ln 2. Absolute error about 2^-22
/// for x in [0.5, 2], relative error about 2^-22 elsewhere; ln 0 is −∞, ln of a negative number
/// NaN, and subnormal x is taken as 0. (On the emulator: the host's `log2` of x, flushed the same
/// way.)
#[inline(always)]
pub fn ln(x: f32) -> f32 {
    backend::log2_approx(x) * core::f32::consts::LN_2
}

/// √x correctly rounded (`sqrt.rn.f32`, as CUDA's `__fsqrt_rn` and IEEE 754's square root): the
/// same bits on the GPU and on the emulator; NaN below −0.0, −0.0 at −0.0. The approximate
/// `sqrt.approx` and `rsqrt.approx` differ from it in the last bits.
#[inline(always)]
pub fn sqrt(x: f32) -> f32 {
    backend::sqrt(x)
}

/// The larger of `a` and `b`, NaN when either is (`torch.maximum`'s rule, IEEE 754-2019's
/// maximum): one `max.NaN.f32` (sm_80 and later, as `cp.async`). `f32::max` drops a NaN instead;
/// `f32::maximum` says the same as this but compiles to a dozen instructions, and a compare and
/// select of one's own makes ptxas order loads behind it. Which of `0.0` and `-0.0` comes out
/// of two zeros is the hardware's.
#[inline(always)]
pub fn max_nan(a: f32, b: f32) -> f32 {
    backend::max_nan(a, b)
}

/// `fmaf(a, b, c)`: `a·b + c` with a single rounding, one `fma.rn.f32` instruction. nvcc contracts
/// `sum += a * b` into this by default (`--fmad=true`); Rust never contracts floating-point
/// expressions, so a kernel that wants the fused instruction asks for it here.
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    backend::fma(a, b, c)
}

/// Stores `value` at `ptr`, an element of global memory: on the GPU a plain store; on the emulator
/// the store is also recorded, so that two threads of a launch storing to one element (what a
/// reduction without atomics does) fail the launch with both threads and source lines.
///
/// # Safety
/// `ptr` is valid for a write of `T`, as for `ptr.write(value)`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn global_store<T: Copy>(ptr: *mut T, value: T) {
    // SAFETY: forwarded from the caller.
    unsafe { backend::global_store(ptr, value) }
}

/// Reads the element of global memory at `ptr`: on the GPU a plain load; on the emulator, in a
/// launch that takes views, the read is also recorded and checked as a view's read is (see
/// docs/emulator.md); elsewhere a plain read.
///
/// # Safety
/// `ptr` is valid for a read of `T`, as for `ptr.read()`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn global_load<T: Copy>(ptr: *const T) -> T {
    // SAFETY: forwarded from the caller.
    unsafe { backend::global_load(ptr) }
}

/// `clock64()`: this SM's cycle counter, for timing code inside a kernel (the bank-conflict probe).
/// On the emulator, a counter that every call advances by one.
#[inline(always)]
pub fn clock64() -> u64 {
    backend::clock64()
}

/// Bytes of dynamic shared memory this launch gave each block.
#[inline(always)]
pub fn dynamic_shared_bytes() -> u32 {
    backend::dynamic_shared_bytes()
}
