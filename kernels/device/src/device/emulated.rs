//! The device layer on the emulator: each call asks the emulator ([`crate::emu`]) about, or
//! synchronises, the calling thread. The twin of `nvptx.rs`.

use crate::device::SharedWord;
use crate::emu::async_copies::PendingCopy;
use crate::emu::block::Wait;
use crate::emu::context::{current, in_kernel, pause, report};
use crate::emu::shadow;
use crate::emu::shadow::{Kind, View};
use crate::emu::{global, spin};
use crate::emu::{memory, order};
use crate::launch::Dim3;
use crate::launch::WARP_SIZE;
use std::panic::Location;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64};

pub fn thread_idx() -> Dim3 {
    current().thread_idx
}

pub fn block_idx() -> Dim3 {
    current().block_idx.get()
}

pub fn block_dim() -> Dim3 {
    current().block_dim
}

pub fn indices_again() -> (Dim3, Dim3, Dim3) {
    (thread_idx(), block_idx(), grid_dim())
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
    pause(current, what);
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

pub fn sqrt(x: f32) -> f32 {
    x.sqrt()
}

pub fn max_nan(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if a > b || (a == b && b.is_sign_negative()) {
        a
    } else {
        b
    }
}

pub fn exp2_approx(x: f32) -> f32 {
    let y = x.exp2();
    // `.ftz`: results below the normal range are flushed to zero.
    if y < f32::MIN_POSITIVE { 0.0 } else { y }
}

pub fn log2_approx(x: f32) -> f32 {
    // `.ftz`: subnormal inputs are taken as zero (log2 0 = −∞).
    if x.is_subnormal() { f32::NEG_INFINITY } else { x.log2() }
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
    let address = ptr as usize;
    // Into a view of the launch, the store is recorded as any store through the view.
    match current.block().launch().views.as_ref().filter(|v| v.covers(address)) {
        Some(_) => record_global((address, size_of::<T>()), memory::Kind::Write, Location::caller()),
        None => {
            current.block().progressed();
            global::record_write(address, size_of::<T>(), current, Location::caller())
        }
    }
    // SAFETY: forwarded from the caller.
    unsafe { ptr.write(value) }
}

/// A load through a global view, recorded in the launch's shadow.
///
/// # Safety
/// `ptr` is valid for a read of `T`.
#[track_caller]
pub unsafe fn global_load<T: Copy>(ptr: *const T) -> T {
    record_global((ptr as usize, size_of::<T>()), memory::Kind::Read, Location::caller());
    // SAFETY: forwarded from the caller.
    unsafe { ptr.read() }
}

/// A store through a global view, recorded in the launch's shadow.
///
/// # Safety
/// `ptr` is valid for a write of `T`.
#[track_caller]
pub unsafe fn global_write<T: Copy>(ptr: *mut T, value: T) {
    record_global((ptr as usize, size_of::<T>()), memory::Kind::Write, Location::caller());
    // SAFETY: forwarded from the caller.
    unsafe { ptr.write(value) }
}

/// An atomic access through a global view, recorded in the launch's shadow (it races only with
/// plain accesses).
#[track_caller]
pub fn global_atomic_access(ptr: *const u8, size: usize, writes: bool) {
    let kind = if writes {
        memory::Kind::AtomicWrite
    } else {
        memory::Kind::AtomicRead
    };
    record_global((ptr as usize, size), kind, Location::caller());
}

/// Fails the launch where an access through the views of the launch races.
fn record_global(access: (usize, usize), kind: memory::Kind, site: &'static Location<'static>) {
    let current = current();
    let block = current.block();
    if let Some(views) = &block.launch().views
        && let Err(message) = block.global_access(current, views, access, kind, site)
    {
        report(message);
    }
}

/// Fails the launch: `index` is past a view of `len` whose element 0 is at `base`
/// (`element_bytes` 0: a matrix's row index).
#[track_caller]
pub fn global_out_of_bounds(base: usize, index: usize, len: usize, element_bytes: usize) -> ! {
    let site = Location::caller();
    let what = if element_bytes == 0 { "row" } else { "index" };
    let of = match current().block().launch().views.as_ref() {
        Some(views) if views.covers(base) || len == 0 => format!(" (its element 0 is {})", views.describe(base)),
        _ => String::new(),
    };
    report(format!(
        "global-memory access out of bounds at {}: {what} {index} of a view of {len}{of}",
        shadow::site(site)
    ))
}

/// Orders an atomic access of global memory at `address` between blocks, where the launch keeps
/// that order (it takes views); an access that writes is progress of its block (`emu::spin`).
fn order(address: usize, sync: order::Sync, writes: bool) {
    if !in_kernel() {
        return;
    }
    let current = current();
    let block = current.block();
    if writes {
        block.progressed();
    }
    if let Some(views) = &block.launch().views {
        block.order_atomic(current, views, address, sync);
    }
}

// Atomics and ordered accesses: the host's atomics with the same orderings, since the blocks of
// a launch run on several OS threads at once. Not recorded by the global race check: many threads
// updating one element atomically is what atomics are for. Each is a point where the interleaved
// schedule switches blocks (before a write, after a read: the value read may then be stale), and
// a read that finds what this thread read there last time is a wait (`emu::spin`).

macro_rules! host_rmw {
    ($($name:ident: $t:ty, $atomic:ty, $method:ident);* $(;)?) => {$(
        /// # Safety
        /// `ptr` is aligned and valid for reads and writes.
        #[track_caller]
        pub unsafe fn $name(ptr: *mut $t, value: $t) -> $t {
            spin::switch_point();
            order(ptr as usize, order::Sync::ReadModifyWrite, true);
            // SAFETY: forwarded from the caller; every access to it during the launch is atomic.
            unsafe { <$atomic>::from_ptr(ptr) }.$method(value, std::sync::atomic::Ordering::Relaxed)
        }
    )*};
}

host_rmw! {
    atomic_add_u32: u32, AtomicU32, fetch_add;
    atomic_add_i32: i32, AtomicI32, fetch_add;
    atomic_add_u64: u64, AtomicU64, fetch_add;
    atomic_min_u32: u32, AtomicU32, fetch_min;
    atomic_max_u32: u32, AtomicU32, fetch_max;
    atomic_min_i32: i32, AtomicI32, fetch_min;
    atomic_max_i32: i32, AtomicI32, fetch_max;
}

macro_rules! host_exch {
    ($($name:ident: $t:ty, $atomic:ty);* $(;)?) => {$(
        /// # Safety
        /// As for `atomic_add_u32`.
        #[track_caller]
        pub unsafe fn $name(ptr: *mut $t, value: $t) -> $t {
            order(ptr as usize, order::Sync::ReadModifyWrite, true);
            // SAFETY: forwarded from the caller.
            let old = unsafe { <$atomic>::from_ptr(ptr) }.swap(value, Relaxed);
            // A spin lock polls with these.
            spin::polled(ptr as usize, u64::from(old), Location::caller());
            old
        }
    )*};
}

host_exch! {
    atomic_exch_u32: u32, AtomicU32;
    atomic_exch_u64: u64, AtomicU64;
}

macro_rules! host_red {
    ($($name:ident: $t:ty => $rmw:ident);* $(;)?) => {$(
        /// # Safety
        /// As for `atomic_add_u32`.
        #[track_caller]
        pub unsafe fn $name(ptr: *mut $t, value: $t) {
            // SAFETY: forwarded from the caller.
            unsafe { $rmw(ptr, value) };
        }
    )*};
}

host_red! {
    red_add_f32: f32 => atomic_add_f32;
    red_add_u32: u32 => atomic_add_u32;
    red_add_i32: i32 => atomic_add_i32;
    red_add_u64: u64 => atomic_add_u64;
}

/// # Safety
/// As for `atomic_add_u32`.
#[track_caller]
pub unsafe fn atomic_add_f32(ptr: *mut f32, value: f32) -> f32 {
    spin::switch_point();
    order(ptr as usize, order::Sync::ReadModifyWrite, true);
    // SAFETY: forwarded from the caller; f32 and u32 have one size and alignment.
    let bits = unsafe { AtomicU32::from_ptr(ptr.cast::<u32>()) };
    let old = bits
        .fetch_update(Relaxed, Relaxed, |old| Some((f32::from_bits(old) + value).to_bits()))
        .unwrap_or_else(|old| old);
    f32::from_bits(old)
}

macro_rules! host_cas {
    ($($name:ident: $t:ty, $atomic:ty);* $(;)?) => {$(
        /// # Safety
        /// As for `atomic_add_u32`.
        #[track_caller]
        pub unsafe fn $name(ptr: *mut $t, expected: $t, new: $t) -> $t {
            // SAFETY: forwarded from the caller.
            let atomic = unsafe { <$atomic>::from_ptr(ptr) };
            // Only a compare-and-swap that stores is progress: a spin lock fails them while it waits.
            order(ptr as usize, order::Sync::ReadModifyWrite, atomic.load(Relaxed) == expected);
            let old = atomic.compare_exchange(expected, new, Relaxed, Relaxed).unwrap_or_else(|old| old);
            // A spin lock polls with these.
            spin::polled(ptr as usize, u64::from(old), Location::caller());
            old
        }
    )*};
}

host_cas! {
    atomic_cas_u32: u32, AtomicU32;
    atomic_cas_u64: u64, AtomicU64;
}

macro_rules! host_load {
    ($($name:ident: $t:ty, $atomic:ty, $order:ident, $sync:ident);* $(;)?) => {$(
        /// # Safety
        /// `ptr` is aligned and valid for reads.
        #[track_caller]
        pub unsafe fn $name(ptr: *const $t) -> $t {
            // SAFETY: forwarded from the caller.
            let value = unsafe { <$atomic>::from_ptr(ptr.cast_mut()) }.load($order);
            order(ptr as usize, order::Sync::$sync, false);
            // A wait polls with these.
            spin::polled(ptr as usize, u64::from(value), Location::caller());
            value
        }
    )*};
}

host_load! {
    load_acquire_u32: u32, AtomicU32, Acquire, Acquire;
    load_acquire_u64: u64, AtomicU64, Acquire, Acquire;
    load_relaxed_u32: u32, AtomicU32, Relaxed, RelaxedRead;
    load_relaxed_u64: u64, AtomicU64, Relaxed, RelaxedRead;
}

macro_rules! host_store {
    ($($name:ident: $t:ty, $atomic:ty, $order:ident, $sync:ident);* $(;)?) => {$(
        /// # Safety
        /// `ptr` is aligned and valid for writes.
        #[track_caller]
        pub unsafe fn $name(ptr: *mut $t, value: $t) {
            spin::switch_point();
            order(ptr as usize, order::Sync::$sync, true);
            // SAFETY: forwarded from the caller.
            unsafe { <$atomic>::from_ptr(ptr) }.store(value, $order)
        }
    )*};
}

host_store! {
    store_release_u32: u32, AtomicU32, Release, Release;
    store_release_u64: u64, AtomicU64, Release, Release;
    store_relaxed_u32: u32, AtomicU32, Relaxed, RelaxedWrite;
    store_relaxed_u64: u64, AtomicU64, Relaxed, RelaxedWrite;
}

#[track_caller]
pub fn thread_fence() {
    spin::switch_point();
    std::sync::atomic::fence(SeqCst);
    if in_kernel() {
        let current = current();
        let block = current.block();
        if let Some(views) = &block.launch().views {
            block.order_fence(current, views);
        }
    }
}

/// # Safety
/// `ptr` points into the block's shared memory, aligned.
#[track_caller]
pub unsafe fn shared_atomic_add_u32(ptr: *mut u32, value: u32) -> u32 {
    check_shared(ptr as usize, 4, Kind::Atomic, Location::caller());
    // SAFETY: checked above; the block's threads run one at a time on this OS thread, so the
    // read-modify-write is indivisible.
    unsafe {
        let old = ptr.read();
        ptr.write(old.wrapping_add(value));
        old
    }
}

/// # Safety
/// As for [`shared_atomic_add_u32`].
#[track_caller]
pub unsafe fn shared_atomic_add_f32(ptr: *mut f32, value: f32) -> f32 {
    check_shared(ptr as usize, 4, Kind::Atomic, Location::caller());
    // SAFETY: as in `shared_atomic_add_u32`.
    unsafe {
        let old = ptr.read();
        ptr.write(old + value);
        old
    }
}

/// The host's fences have no lighter form that keeps the emulator's checks: as [`thread_fence`].
#[track_caller]
pub fn thread_fence_acq_rel() {
    thread_fence()
}

pub fn thread_fence_block() {
    // The threads of a block run on one OS thread: program order is their order. The compiler
    // must still not move accesses across it.
    std::sync::atomic::compiler_fence(SeqCst);
}

/// Every lane offers its predicate and the warp meets, as for a shuffle; then each lane reads all
/// of them.
#[track_caller]
fn vote(predicate: bool) -> u32 {
    let site = Location::caller();
    let current = current();
    let block = current.block();
    let warp = current.tid / WARP_SIZE;
    block.offer(current.tid, predicate as u32);
    wait(Wait::Warp, site);
    (0..block.warp_len(warp)).fold(0, |bits, lane| bits | (block.exchanged(current.tid, lane) & 1) << lane)
}

/// Every lane offers its value and the warp meets; then each lane gathers the lanes whose value
/// equals its own.
#[track_caller]
pub fn match_any(value: u32) -> u32 {
    let site = Location::caller();
    let current = current();
    let block = current.block();
    let warp = current.tid / WARP_SIZE;
    block.offer(current.tid, value);
    wait(Wait::Warp, site);
    (0..block.warp_len(warp)).fold(0, |bits, lane| {
        bits | ((block.exchanged(current.tid, lane) == value) as u32) << lane
    })
}

/// Lanes past a partial last warp do not exist: they count as false for `ballot` and `any`, and
/// are left out of `all`, as on the GPU (the member mask names only existing lanes there).
#[track_caller]
pub fn ballot(predicate: bool) -> u32 {
    vote(predicate)
}

#[track_caller]
pub fn vote_any(predicate: bool) -> bool {
    vote(predicate) != 0
}

#[track_caller]
pub fn vote_all(predicate: bool) -> bool {
    let current = current();
    let lanes = current.block().warp_len(current.tid / WARP_SIZE);
    let all = if lanes == WARP_SIZE { u32::MAX } else { (1 << lanes) - 1 };
    vote(predicate) == all
}

/// Fails the launch where a 16-byte global access is misaligned: the GPU faults there, and the
/// emulator's own read or write would only be slower.
#[track_caller]
pub fn check_aligned4(ptr: *const f32, what: &str) {
    if !(ptr as usize).is_multiple_of(16) {
        report(format!(
            "misaligned 16-byte global {what} at {ptr:p} ({}): float4 accesses need 16-byte alignment (the GPU faults)",
            Location::caller()
        ));
    }
}

/// Fails the launch where a global view is cast to elements its start is not aligned for.
#[track_caller]
pub fn check_view_aligned(ptr: *const u8, align: usize) {
    if !(ptr as usize).is_multiple_of(align) {
        report(format!(
            "a global view cast to {align}-byte-aligned elements starts at {ptr:p} ({}): the GPU faults on \
             misaligned accesses",
            Location::caller()
        ));
    }
}

/// Starts a 16-byte copy into shared memory: its bytes are read from global memory now and land
/// at the wait that covers its group (see `device::async_copy`).
///
/// # Safety
/// `src` is readable for 16 bytes; `dst` is inside the block's shared memory (checked at the wait).
#[track_caller]
pub unsafe fn copy16_async<T>(base: *const T, dst: *mut crate::device::Float4, src: *const f32) {
    // SAFETY: forwarded.
    unsafe { copy16_async_zero_fill(base, dst, src, 4) }
}

/// Starts a 16-byte copy into shared memory: its first `valid` floats are read from global memory
/// now, the rest are zeros, and all 16 bytes land at the wait that covers its group.
///
/// # Safety
/// `src` is readable for `valid` floats; `dst` is inside the block's shared memory (checked at the
/// wait).
#[track_caller]
pub unsafe fn copy16_async_zero_fill<T>(_base: *const T, dst: *mut crate::device::Float4, src: *const f32, valid: u32) {
    if !(src as usize).is_multiple_of(16) || !(dst as usize).is_multiple_of(16) {
        report(format!(
            "cp.async of 16 bytes needs 16-byte aligned addresses: global {src:p}, shared {dst:p}"
        ));
    }
    if valid > 4 {
        report(format!(
            "cp.async of 16 bytes given a source of {valid} floats (at most 4)"
        ));
    }
    // SAFETY: (the caller's promise) readable for `valid` floats.
    unsafe { start_copy(dst.cast(), src, valid, 4) }
}

/// Starts a 4-byte copy into shared memory: the float at `src` if `valid` is 1, else a zero.
///
/// # Safety
/// `src` is readable for `valid` floats; `dst` is inside the block's shared memory (checked at the
/// wait).
#[track_caller]
pub unsafe fn copy4_async<T>(_base: *const T, dst: *mut f32, src: *const f32, valid: u32) {
    if !(src as usize).is_multiple_of(4) || !(dst as usize).is_multiple_of(4) {
        report(format!(
            "cp.async of 4 bytes needs 4-byte aligned addresses: global {src:p}, shared {dst:p}"
        ));
    }
    // SAFETY: as for `copy16_async`.
    unsafe { start_copy(dst, src, valid.min(1), 1) }
}

/// Reads the copy's source now (`valid` of its `words` floats, zeros after) and queues its write.
///
/// # Safety
/// `src` is readable for `valid ≤ words ≤ 4` floats.
#[track_caller]
unsafe fn start_copy(dst: *mut f32, src: *const f32, valid: u32, words: u32) {
    let mut value = [0.0f32; 4];
    for (i, word) in value.iter_mut().enumerate().take(valid.min(words) as usize) {
        // SAFETY: inside the source's valid floats, by the caller's promise.
        *word = unsafe { src.add(i).read() };
    }
    current().copies.borrow_mut().open.push(PendingCopy {
        dst,
        value,
        words,
        site: Location::caller(),
    });
}

#[track_caller]
pub fn async_copy_commit() {
    let mut copies = current().copies.borrow_mut();
    let group = std::mem::take(&mut copies.open);
    copies.committed.push_back(group);
}

/// Performs this thread's oldest committed groups until at most `PENDING` remain, each copy a
/// shared-memory write of this thread (so the shadow sees it, and a reader that did not wait
/// behind a barrier races with it).
#[track_caller]
pub fn async_copy_wait<const PENDING: u32>() {
    let current = current();
    loop {
        let group = {
            let mut copies = current.copies.borrow_mut();
            if copies.committed.len() <= PENDING as usize {
                break;
            }
            copies.committed.pop_front().unwrap_or_default()
        };
        for copy in group {
            check_shared(copy.dst as usize, 4 * copy.words, Kind::Write, copy.site);
            // SAFETY: inside the block's shared memory (checked above), aligned (checked when the
            // copy started).
            unsafe {
                copy.dst
                    .copy_from_nonoverlapping(copy.value.as_ptr(), copy.words as usize)
            };
        }
    }
}

/// Every lane's `bits`, in lane order, the warp meeting once: the emulator's view of a warp-wide
/// operation on registers (the tensor cores' `mma.sync`). A partial warp is reported: those
/// operations need all 32 lanes.
fn warp_gather(bits: u32, site: &'static Location<'static>) -> [u32; WARP_SIZE as usize] {
    let current = current();
    let block = current.block();
    let warp = current.tid / WARP_SIZE;
    block.offer(current.tid, bits);
    wait(Wait::Warp, site);
    if block.warp_len(warp) < WARP_SIZE {
        report(format!(
            "the warp-wide operation at {} runs in warp {warp}, which has only {} threads: it needs all 32",
            shadow::site(site),
            block.warp_len(warp)
        ));
    }
    core::array::from_fn(|lane| block.exchanged(current.tid, lane as u32))
}

/// The registers of every lane, `[r][lane]`; `site` is the kernel's line, for reports.
fn gather_all<const R: usize>(regs: [u32; R], site: &'static Location<'static>) -> [[u32; WARP_SIZE as usize]; R] {
    regs.map(|bits| warp_gather(bits, site))
}

/// The emulator's `mma.sync` m16n8k16 bf16: the warp's A and B gathered from every lane's
/// fragments (the positions of `device::mma`), and this lane's four sums of A's row times B's
/// column accumulated in f32 in k order onto C (the hardware's order and intermediate precision
/// are its own; each product of two bf16 is exact in f32).
#[track_caller]
pub fn mma_bf16_m16n8k16(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    m16n8k16(
        a,
        b,
        c,
        |bits| crate::device::mma::Bf16(bits).to_f32(),
        Location::caller(),
    )
}

/// As [`mma_bf16_m16n8k16`] on halves (the same fragments; a product of two halves is exact in
/// f32 too).
#[track_caller]
pub fn mma_f16_m16n8k16(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    m16n8k16(
        a,
        b,
        c,
        |bits| crate::device::mma::F16(bits).to_f32(),
        Location::caller(),
    )
}

/// The m16n8k16 product on 16-bit elements that `decode` reads.
fn m16n8k16(
    a: [u32; 4],
    b: [u32; 2],
    c: [f32; 4],
    decode: fn(u16) -> f32,
    site: &'static Location<'static>,
) -> [f32; 4] {
    use crate::device::mma::{accumulator_position, bf16_a_position, bf16_b_position};
    let (a_all, b_all) = (gather_all(a, site), gather_all(b, site));
    let mut am = [[0.0f32; 16]; 16];
    let mut bm = [[0.0f32; 8]; 16];
    for lane in 0..WARP_SIZE {
        for e in 0..2 {
            for r in 0..4 {
                let (row, col) = bf16_a_position(lane, r, e);
                am[row as usize][col as usize] = decode((a_all[r as usize][lane as usize] >> (16 * e)) as u16);
            }
            for r in 0..2 {
                let (row, col) = bf16_b_position(lane, r, e);
                bm[row as usize][col as usize] = decode((b_all[r as usize][lane as usize] >> (16 * e)) as u16);
            }
        }
    }
    let lane = lane_id();
    core::array::from_fn(|r| {
        let (row, col) = accumulator_position(lane, r as u32);
        (0..16).fold(c[r], |sum, k| sum + am[row as usize][k] * bm[k][col as usize])
    })
}

/// The emulator's `mma.sync` m16n8k8 tf32, as [`mma_bf16_m16n8k16`]; each operand's lower 13
/// mantissa bits are ignored, as the tensor cores ignore them.
#[track_caller]
pub fn mma_tf32_m16n8k8(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    use crate::device::mma::{accumulator_position, tf32_a_position, tf32_b_position, tf32_value};
    let site = Location::caller();
    let (a_all, b_all) = (gather_all(a, site), gather_all(b, site));
    let mut am = [[0.0f32; 8]; 16];
    let mut bm = [[0.0f32; 8]; 8];
    for lane in 0..WARP_SIZE {
        for r in 0..4 {
            let (row, col) = tf32_a_position(lane, r);
            am[row as usize][col as usize] = tf32_value(a_all[r as usize][lane as usize]);
        }
        for r in 0..2 {
            let (row, col) = tf32_b_position(lane, r);
            bm[row as usize][col as usize] = tf32_value(b_all[r as usize][lane as usize]);
        }
    }
    let lane = lane_id();
    core::array::from_fn(|r| {
        let (row, col) = accumulator_position(lane, r as u32);
        (0..8).fold(c[r], |sum, k| sum + am[row as usize][k] * bm[k][col as usize])
    })
}

/// The emulator's `ldmatrix` (x1, x2, x4: one, two or four matrices, their rows' addresses from
/// lanes 0–7, 0–15 or all, the other lanes' ignored): every lane's row address gathered, and this
/// lane's word of each matrix read from shared memory as the PTX ISA places it
/// (`device::ldmatrix`). Each read is a shared-memory read of this thread, so the shadow checks it
/// as any other.
///
/// # Safety
/// The addresses of the lanes that give rows are inside the block's shared memory (checked per
/// read) and 16-byte aligned.
#[track_caller]
pub unsafe fn ldmatrix<const N: usize>(row: *const u32, trans: bool) -> [u32; N] {
    let site = Location::caller();
    if lane_id() < 8 * N as u32 && !(row as usize).is_multiple_of(16) {
        report(format!("ldmatrix needs 16-byte aligned row addresses, got {row:p}"));
    }
    let address = row as usize as u64;
    let (low, high) = (
        warp_gather(address as u32, site),
        warp_gather((address >> 32) as u32, site),
    );
    let row_of = |lane: u32| (low[lane as usize] as u64 | ((high[lane as usize] as u64) << 32)) as usize as *const u32;
    let lane = lane_id();
    let half = |word: u32, e: u32| (word >> (16 * e)) & 0xffff;
    core::array::from_fn(|j| {
        let j = j as u32;
        if !trans {
            // SAFETY: inside shared memory (checked by the read), aligned (checked above).
            unsafe { shared_load(row_of(8 * j + lane / 4).add((lane % 4) as usize)) }
        } else {
            // Element lane / 4 of rows 2·(lane % 4) and the next.
            let [r0, r1] = [0, 1].map(|e| {
                let word = unsafe { shared_load(row_of(8 * j + 2 * (lane % 4) + e).add((lane / 4 / 2) as usize)) };
                half(word, (lane / 4) % 2)
            });
            r0 | (r1 << 16)
        }
    })
}

#[cfg(test)]
mod tests {
    /// NaN from either side (quiet, with a payload, negative), the larger otherwise, `-0.0` below
    /// `0.0`: IEEE 754-2019's maximum, as `max.NaN.f32` gives it on the GPU.
    #[test]
    fn max_nan_propagates_nan_from_either_side() {
        for nan in [f32::NAN, f32::from_bits(0x7fc0_1234), f32::from_bits(0xffc0_0001)] {
            for other in [f32::NEG_INFINITY, -1.0, 0.0, f32::INFINITY, nan] {
                assert!(super::max_nan(nan, other).is_nan() && super::max_nan(other, nan).is_nan());
            }
        }
        assert_eq!(super::max_nan(1.0, f32::INFINITY), f32::INFINITY);
        assert_eq!(super::max_nan(-3.0, -2.0), -2.0);
        assert_eq!(super::max_nan(f32::NEG_INFINITY, f32::MIN), f32::MIN);
        assert!(super::max_nan(-0.0, 0.0).is_sign_positive() && super::max_nan(0.0, -0.0).is_sign_positive());
    }
}
