//! The device layer on the emulator: each call asks about, or synchronises, the calling thread.

use super::block::Abort;
use super::context::current;
use crate::device::{SharedBits, SharedWord, WARP_SIZE};
use crate::launch::Dim3;
use std::panic::Location;

pub fn thread_idx() -> Dim3 {
    current().thread_idx
}

pub fn block_idx() -> Dim3 {
    current().block_idx
}

pub fn block_dim() -> Dim3 {
    current().block_dim
}

pub fn grid_dim() -> Dim3 {
    current().grid_dim
}

#[track_caller]
pub fn sync_threads() {
    let ctx = current();
    stop_on_abort(ctx.block.barrier(ctx.tid, ctx.block_idx, Location::caller()));
}

#[track_caller]
pub fn sync_warp() {
    let ctx = current();
    stop_on_abort(ctx.block.warp_barrier(ctx.tid, ctx.block_idx, Location::caller()));
}

pub fn lane_id() -> u32 {
    current().tid % WARP_SIZE
}

#[track_caller]
pub fn shfl_xor(bits: u32, lane_mask: u32) -> u32 {
    shuffle(bits, |lane| Some(lane ^ (lane_mask & (WARP_SIZE - 1))))
}

#[track_caller]
pub fn shfl_down(bits: u32, delta: u32) -> u32 {
    // PTX reads only the low 5 bits of the lane offset.
    let delta = delta & (WARP_SIZE - 1);
    shuffle(bits, |lane| Some(lane + delta).filter(|&src| src < WARP_SIZE))
}

#[track_caller]
pub fn shfl_up(bits: u32, delta: u32) -> u32 {
    let delta = delta & (WARP_SIZE - 1);
    shuffle(bits, |lane| lane.checked_sub(delta))
}

#[track_caller]
pub fn shfl_idx(bits: u32, src_lane: u32) -> u32 {
    shuffle(bits, |_| Some(src_lane % WARP_SIZE))
}

/// Every lane publishes its value, the warp meets, each lane reads its source lane's value
/// (`None`: its own), and the warp meets again so that no slot is overwritten before it is read.
#[track_caller]
fn shuffle(bits: u32, source_lane: impl Fn(u32) -> Option<u32>) -> u32 {
    let ctx = current();
    let site = Location::caller();
    let (warp, lane) = (ctx.tid / WARP_SIZE, ctx.tid % WARP_SIZE);
    ctx.block
        .warp_slot(warp, lane)
        .store(bits, std::sync::atomic::Ordering::Relaxed);
    stop_on_abort(ctx.block.warp_barrier(ctx.tid, ctx.block_idx, site));
    let value = match source_lane(lane) {
        None => bits,
        Some(src) if src < ctx.block.warp_len(warp) => ctx
            .block
            .warp_slot(warp, src)
            .load(std::sync::atomic::Ordering::Relaxed),
        Some(src) => panic!(
            "shuffle reads lane {src} of warp {warp}, which has only {} threads: blocks whose size is not a multiple of 32 have a partial last warp",
            ctx.block.warp_len(warp)
        ),
    };
    stop_on_abort(ctx.block.warp_barrier(ctx.tid, ctx.block_idx, site));
    value
}

pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    a.mul_add(b, c)
}

pub fn dynamic_shared_bytes() -> u32 {
    current().block.shared_bytes()
}

pub fn dynamic_shared_base() -> *mut u8 {
    current().block.shared_base()
}

#[track_caller]
pub fn shared_overflow(end: u64, limit: u32) -> ! {
    panic!(
        "the kernel carves {end} bytes of dynamic shared memory, but the launch gave {limit}: the launch's shared_bytes must cover every view"
    )
}

/// # Safety
/// `ptr` points into the block's shared memory, aligned for `T`.
pub unsafe fn shared_load<T: SharedWord>(ptr: *const T) -> T {
    // SAFETY: forwarded from the caller; T and T::Bits have the same size.
    T::from_bits(unsafe { T::Bits::load_relaxed(ptr.cast()) })
}

/// # Safety
/// As for [`shared_load`].
pub unsafe fn shared_store<T: SharedWord>(ptr: *mut T, value: T) {
    // SAFETY: as in `shared_load`.
    unsafe { T::Bits::store_relaxed(ptr.cast(), value.to_bits()) }
}

/// Another thread's failure stopped the launch: unwind out of the kernel body without a message.
fn stop_on_abort(result: Result<(), Abort>) {
    if let Err(abort) = result {
        std::panic::resume_unwind(Box::new(abort));
    }
}
