//! Waits on global memory. A thread that polls a global word (a look-back waiting for a
//! predecessor's status, a flag another block sets) and finds there what it found the last time
//! gives way: its block runs its other threads, and once all that is left is such waits, the block
//! gives way to its worker, which runs other blocks (starting new ones if it must, as a GPU with
//! free room would) and comes back to poll again. So a block never waits on a block that cannot
//! run, whatever order the blocks start in.
//!
//! A wait that nothing will end (a status never written, a flag set only past a barrier the
//! poller must reach first) shows as every block of the launch waiting, with no poll finding a
//! change: after [`spin_limit`] of that (a host thread may still write the word), the launch
//! fails, naming the poll's line, the address and the value.

use super::block::Wait;
use super::context::{current, in_kernel, pause};
use super::shadow::Site;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Words a thread remembers what it last polled from: a wait may poll a few in turn.
const REMEMBERED: usize = 4;

/// What one thread's recent polls found.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Spin {
    /// The last words polled (address, bits), most recent last.
    seen: [(usize, u64); REMEMBERED],
    /// The last poll, for a report: address, bits, and the kernel's line.
    pub last: Option<(usize, u64, Site)>,
}

impl Spin {
    /// Records a poll of `address` that read `bits`; whether this thread found the same there last
    /// time.
    fn poll(&mut self, address: usize, bits: u64, site: Site) -> bool {
        self.last = Some((address, bits, site));
        if self.seen.contains(&(address, bits)) {
            return true;
        }
        match self.seen.iter().position(|&(a, _)| a == address) {
            Some(slot) => self.seen[slot].1 = bits,
            None => {
                self.seen.rotate_left(1);
                self.seen[REMEMBERED - 1] = (address, bits);
            }
        }
        false
    }
}

/// The limit, in milliseconds.
static LIMIT_MS: AtomicU64 = AtomicU64::new(2_000);

/// How long every block of a launch may wait on global words, no poll finding a change, before
/// the launch fails: two seconds unless [`set_spin_limit`] says otherwise. (Only a host thread
/// writing the memory could end such a wait: no block is running.)
pub fn spin_limit() -> Duration {
    Duration::from_millis(LIMIT_MS.load(Ordering::Relaxed))
}

/// Sets [`spin_limit`] for every launch after this call, in this process.
pub fn set_spin_limit(limit: Duration) {
    LIMIT_MS.store(limit.as_millis().clamp(1, u64::MAX as u128) as u64, Ordering::Relaxed);
}

/// Records that the calling kernel thread's poll of `address` read `bits`; where it read the same
/// there last time, the thread gives way (see the module). Outside a launch it does nothing.
pub(crate) fn polled(address: usize, bits: u64, site: Site) {
    // Host code (a unit test of a device helper) may load outside any launch: nothing to watch.
    if !in_kernel() {
        return;
    }
    let current = current();
    let mut spin = current.spin.get();
    let unchanged = spin.poll(address, bits, site);
    current.spin.set(spin);
    if unchanged {
        pause(current, Wait::Spin);
    } else {
        current.block().progressed();
        switch_point();
    }
}

/// Under the interleaved schedule, lets another block run here: called at every atomic, fence
/// and poll of global memory.
pub(crate) fn switch_point() {
    if !in_kernel() {
        return;
    }
    let current = current();
    if current.block().switches_at_atomics() {
        pause(current, Wait::Switch);
    }
}

/// The report of a launch whose every block waits: what `thread` of `block` polled last.
pub(crate) fn report(spin: &Spin, blocks_waiting: u64, held_limit: Option<u64>) -> String {
    let (address, bits, site) = spin.last.unwrap_or((0, 0, std::panic::Location::caller()));
    let file = site.file().rsplit(['/', '\\']).next().unwrap_or(site.file());
    let held = match held_limit {
        Some(limit) => format!(
            "; the emulator holds at most {limit} blocks of this launch at once, as a GPU holds a limited number: blocks that wait for blocks that cannot start deadlock there too"
        ),
        None => String::new(),
    };
    format!(
        "at {file}:{}, polled the word at {address:#x} and it stayed {bits:#x}, while every block the emulator holds ({blocks_waiting}) waited on global memory for {:.1} s: a wait that nothing will end (a status never written, a flag set only past a barrier the poller must reach, or blocks waiting for each other){held}",
        site.line(),
        spin_limit().as_secs_f64(),
    )
}
