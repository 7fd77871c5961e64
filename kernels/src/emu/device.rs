//! The device layer on the emulator: each call asks about, or synchronises, the calling thread.

use super::block::{Abort, Resume, Wait};
use super::context::{current, report};
use super::shadow;
use super::shadow::{Kind, View};
use crate::device::{SharedWord, WARP_SIZE};
use crate::launch::Dim3;
use std::panic::Location;

pub fn thread_idx() -> Dim3 {
    current().thread_idx
}

pub fn block_idx() -> Dim3 {
    current().block_idx.get()
}

pub fn block_dim() -> Dim3 {
    current().block_dim
}

pub fn grid_dim() -> Dim3 {
    current().grid_dim
}

#[track_caller]
pub fn sync_threads() {
    wait(Wait::Barrier, Location::caller());
}

#[track_caller]
pub fn sync_warp() {
    wait(Wait::Warp, Location::caller());
}

/// Records the arrival, then suspends the thread until the scheduler lets it go on.
fn wait(what: Wait, site: &'static Location<'static>) {
    let current = current();
    current
        .block()
        .arrive(current.tid, what, site, current.stack_base.get());
    if current.suspend(what) == Resume::Abort {
        std::panic::resume_unwind(Box::new(Abort));
    }
}

pub fn lane_id() -> u32 {
    current().tid % WARP_SIZE
}

// PTX reads only the low five bits of a shuffle's lane offset or mask.
const LANE_BITS: u32 = WARP_SIZE - 1;

#[track_caller]
pub fn shfl_xor(bits: u32, lane_mask: u32) -> u32 {
    shuffle(bits, |lane| Some(lane ^ (lane_mask & LANE_BITS)))
}

#[track_caller]
pub fn shfl_down(bits: u32, delta: u32) -> u32 {
    let delta = delta & LANE_BITS;
    shuffle(bits, |lane| Some(lane + delta).filter(|&src| src < WARP_SIZE))
}

#[track_caller]
pub fn shfl_up(bits: u32, delta: u32) -> u32 {
    let delta = delta & LANE_BITS;
    shuffle(bits, |lane| lane.checked_sub(delta))
}

#[track_caller]
pub fn shfl_idx(bits: u32, src_lane: u32) -> u32 {
    shuffle(bits, |_| Some(src_lane & LANE_BITS))
}

/// Every lane offers its value and the warp meets; then each lane reads its source lane's offer
/// (`None`: its own value). The offers are copied aside when the warp goes on, so a lane that
/// races ahead to the next shuffle cannot overwrite what a slower lane still has to read.
#[track_caller]
fn shuffle(bits: u32, source_lane: impl Fn(u32) -> Option<u32>) -> u32 {
    let site = Location::caller();
    let current = current();
    let block = current.block();
    let (warp, lane) = (current.tid / WARP_SIZE, current.tid % WARP_SIZE);
    block.offer(current.tid, bits);
    wait(Wait::Warp, site);
    match source_lane(lane) {
        None => bits,
        Some(src) if src < block.warp_len(warp) => block.exchanged(current.tid, src),
        Some(src) => report(format!(
            "the shuffle at {} reads lane {src} of warp {warp}, which has only {} threads: blocks whose size is not a multiple of 32 have a partial last warp",
            shadow::site(site),
            block.warp_len(warp)
        )),
    }
}

pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    a.mul_add(b, c)
}

pub fn clock64() -> u64 {
    thread_local! {
        static CLOCK: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }
    CLOCK.with(|c| {
        c.set(c.get() + 1);
        c.get()
    })
}

pub fn dynamic_shared_bytes() -> u32 {
    current().block().shared_bytes()
}

pub fn dynamic_shared_base() -> *mut u8 {
    current().block().shared_base()
}

#[track_caller]
pub fn shared_overflow(end: u64, limit: u32) -> ! {
    panic!(
        "the kernel carves {end} bytes of dynamic shared memory, but the launch gave {limit}: the launch's shared_bytes must cover every view"
    )
}

/// Records a view the kernel carved, so that reports can name elements of it.
pub fn shared_carved(name: &'static str, (start, end): (u32, u32), element_bytes: u32, matrix: Option<(u32, u32)>) {
    current().block().carved(View {
        name,
        start,
        end,
        element_bytes,
        matrix,
    });
}

/// # Safety
/// `ptr` points into the block's shared memory, aligned for `T`.
#[track_caller]
pub unsafe fn shared_load<T: SharedWord>(ptr: *const T) -> T {
    check_shared(ptr as usize, size_of::<T>() as u32, Kind::Read, Location::caller());
    // SAFETY: inside the block's shared memory (checked above), aligned by the caller's promise;
    // only this OS thread touches the block's memory, one coroutine at a time.
    unsafe { ptr.read() }
}

/// # Safety
/// As for [`shared_load`]. (The emulator runs each read anyway.)
#[track_caller]
pub unsafe fn shared_load_volatile<T: SharedWord>(ptr: *const T) -> T {
    // SAFETY: forwarded from the caller.
    unsafe { shared_load(ptr) }
}

/// # Safety
/// As for [`shared_load`].
#[track_caller]
pub unsafe fn shared_store<T: SharedWord>(ptr: *mut T, value: T) {
    check_shared(ptr as usize, size_of::<T>() as u32, Kind::Write, Location::caller());
    // SAFETY: as in `shared_load`.
    unsafe { ptr.write(value) }
}

/// Fails the kernel with the shadow's report where an access races, reads an unwritten word or
/// falls outside shared memory.
fn check_shared(address: usize, size: u32, kind: Kind, site: &'static Location<'static>) {
    let current = current();
    if let Err(message) = current.block().shared_access(address, size, kind, current.tid, site) {
        report(message);
    }
}

/// # Safety
/// `ptr` is valid for writes of `T`, as for a plain store.
#[track_caller]
pub unsafe fn global_store<T: Copy>(ptr: *mut T, value: T) {
    let current = current();
    super::global::record_write(ptr as usize, size_of::<T>(), current, Location::caller());
    // SAFETY: forwarded from the caller.
    unsafe { ptr.write(value) }
}
