//! `mbarrier`: a barrier object in shared memory that counts arrivals and completes a *phase*
//! when the expected number has arrived; waiters name the phase's parity. Unlike `bar.sync` it
//! does not stop the arriving threads, so one group of warps (producers) can hand a filled slot to
//! another (consumers) and go on, and the consumers hand it back empty the same way. `cp.async`
//! can arrive on one when a thread's copies have landed (`arrive_when_copies_land`). sm_90a only
//! here (the waits use `try_wait.parity`), beside `wgmma`.

use core::arch::asm;

/// The `.shared` window address of the barrier, as the instructions take it.
#[inline(always)]
fn address(barrier: *const u64) -> u32 {
    super::wgmma::shared_address(barrier)
}

/// `mbarrier.init`: a barrier expecting `count` arrivals per phase. One thread initialises it;
/// a `bar.sync` must follow before any other thread uses it.
///
/// # Safety
/// `barrier` is 8-byte aligned shared memory that no thread uses until that barrier.
#[inline(always)]
pub unsafe fn init(barrier: *const u64, count: u32) {
    // SAFETY: the caller's promise.
    unsafe {
        asm!("mbarrier.init.shared::cta.b64 [{a}], {c};", a = in(reg32) address(barrier), c = in(reg32) count, options(nostack))
    };
}

/// `mbarrier.arrive`: this thread's arrival on the current phase.
///
/// # Safety
/// `barrier` was initialised.
#[inline(always)]
pub unsafe fn arrive(barrier: *const u64) {
    // SAFETY: the caller's promise.
    unsafe {
        asm!(
            "{{ .reg .b64 state; mbarrier.arrive.shared::cta.b64 state, [{a}]; }}",
            a = in(reg32) address(barrier), options(nostack),
        )
    };
}

/// `mbarrier.arrive.expect_tx`: this thread's arrival, announcing `bytes` more that asynchronous
/// copies (TMA) will complete on the current phase: the phase completes when the arrivals and
/// the bytes are all in.
///
/// # Safety
/// `barrier` was initialised.
#[inline(always)]
pub unsafe fn arrive_expect_tx(barrier: *const u64, bytes: u32) {
    // SAFETY: the caller's promise.
    unsafe {
        asm!(
            "{{ .reg .b64 state; mbarrier.arrive.expect_tx.shared::cta.b64 state, [{a}], {n}; }}",
            a = in(reg32) address(barrier), n = in(reg32) bytes, options(nostack),
        )
    };
}

/// `cp.async.mbarrier.arrive.noinc`: this thread arrives once all the `cp.async` copies it has
/// started so far have landed (counted among the barrier's expected arrivals).
///
/// # Safety
/// `barrier` was initialised.
#[inline(always)]
pub unsafe fn arrive_when_copies_land(barrier: *const u64) {
    // SAFETY: the caller's promise.
    unsafe {
        asm!("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [{a}];", a = in(reg32) address(barrier), options(nostack))
    };
}

/// Waits until the phase of parity `parity` (0 or 1) has completed. A fresh barrier is in phase 0,
/// so waiting for parity 1 passes at once: the way a producer starts on slots that are empty.
///
/// # Safety
/// `barrier` was initialised.
#[inline(always)]
// PTX scopes a label to its braces, so the copies of this block that inlining makes do not clash.
#[allow(named_asm_labels)]
pub unsafe fn wait(barrier: *const u64, parity: u32) {
    // SAFETY: the caller's promise; the loop re-tries until the phase is seen complete.
    unsafe {
        asm!(
            "{{ .reg .pred done; retry: mbarrier.try_wait.parity.shared::cta.b64 done, [{a}], {p}; @!done bra retry; }}",
            a = in(reg32) address(barrier), p = in(reg32) parity, options(nostack),
        )
    };
}

/// `mbarrier.arrive` on a barrier of another block of the cluster, at `peer` in the
/// `.shared::cluster` window ([`super::cluster::peer_address`]): this thread's arrival, with the
/// default release at the block's scope, as CUTLASS's cluster pipelines arrive: the reads it must
/// order before a refill (the `wgmma`s it waited for) are done at the arrival; a release at the
/// cluster's scope fences every arrival.
///
/// # Safety
/// `peer` is an initialised barrier of a block of this cluster that has not exited.
#[inline(always)]
pub unsafe fn arrive_in_peer(peer: u32) {
    // SAFETY: the caller's promise.
    unsafe { asm!("mbarrier.arrive.shared::cluster.b64 _, [{a}];", a = in(reg32) peer, options(nostack)) };
}
