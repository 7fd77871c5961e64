//! A watchdog for waits that cannot end. A kernel thread that polls a global word (a look-back
//! waiting for a predecessor's status, a flag another block sets) waits on the emulator as on the
//! GPU while the writer runs on another worker; but a word nothing will write (a status whose
//! reset was skipped, a block waiting on one that has not started and will not, since a worker runs
//! its blocks one after another) would keep it polling for ever, and CI with it. So each thread
//! counts its polls of one address that answer the same bits; once such a run has lasted
//! [`spin_limit`] of wall time, the launch fails, naming the address and the value.

use super::context::{current, in_kernel, report};
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One thread's current run of unchanged polls.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Spin {
    address: usize,
    bits: u64,
    polls: u64,
    /// When the run was first looked at against the clock (every [`CHECK_EVERY`] polls).
    since: Option<Instant>,
}

/// Polls between looks at the clock: a poll costs nanoseconds, a clock read tens of them.
const CHECK_EVERY: u64 = 1 << 16;

/// The limit, in milliseconds: a minute unless a test sets it.
static LIMIT_MS: AtomicU64 = AtomicU64::new(60_000);

/// How long a thread may poll one word that keeps its value before the launch fails.
pub fn spin_limit() -> Duration {
    Duration::from_millis(LIMIT_MS.load(Ordering::Relaxed))
}

/// Sets [`spin_limit`] for every launch after this call, in this process: for tests of the
/// watchdog (a legitimate wait on the emulator lasts as long as emulating the block it waits for,
/// well under the default minute).
pub fn set_spin_limit(limit: Duration) {
    LIMIT_MS.store(limit.as_millis().clamp(1, u64::MAX as u128) as u64, Ordering::Relaxed);
}

/// Records that the calling kernel thread's poll of `address` read `bits`; fails the launch if it
/// has read the same there for longer than [`spin_limit`]. Outside a launch it does nothing.
#[track_caller]
pub(crate) fn polled(address: usize, bits: u64) {
    // Host code (a unit test of a device helper) may load outside any launch: nothing to watch.
    if !in_kernel() {
        return;
    }
    let current = current();
    let mut spin = current.spin.get();
    if spin.address != address || spin.bits != bits {
        spin = Spin {
            address,
            bits,
            ..Spin::default()
        };
    }
    spin.polls += 1;
    if spin.polls.is_multiple_of(CHECK_EVERY) {
        let since = *spin.since.get_or_insert_with(Instant::now);
        let waited = since.elapsed();
        if waited >= spin_limit() {
            current.spin.set(Spin::default());
            let site = Location::caller();
            report(format!(
                "at {}:{}, polled the word at {address:#x} {} times over {:.1} s and it stayed {bits:#x}: \
                 a wait that nothing will end (a status never written, or a block waiting on one that is \
                 not running); the emulator gives up after {:.1} s (kernels::emu::spin_limit)",
                site.file().rsplit('/').next().unwrap_or(site.file()),
                site.line(),
                spin.polls,
                waited.as_secs_f64(),
                spin_limit().as_secs_f64(),
            ));
        }
    }
    current.spin.set(spin);
}
