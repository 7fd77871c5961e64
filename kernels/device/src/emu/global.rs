//! Global-memory writes of one launch, for the emulator's race report: two threads of a launch
//! writing the same element without an atomic is what a reduction gets wrong first, and on the GPU
//! it silently loses updates. Only stores through [`crate::device::global_store`] are seen; a plain
//! `*ptr = value` is not.

use super::context::{Current, report};
use super::shadow::{self, Site};
use crate::launch::Dim3;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;

/// Who wrote an element first in this launch.
#[derive(Clone, Copy)]
struct Writer {
    block: Dim3,
    thread: Dim3,
    site: Site,
}

/// Shards of the record: the workers store to different shards at once instead of waiting on one
/// lock.
const SHARDS: usize = 64;

type Shard = Mutex<HashMap<usize, Writer, BuildHasherDefault<AddressHasher>>>;

/// Every element stored to in one launch, by address.
pub(crate) struct GlobalWrites {
    shards: [Shard; SHARDS],
}

impl Default for GlobalWrites {
    fn default() -> Self {
        GlobalWrites {
            shards: std::array::from_fn(|_| Mutex::new(HashMap::default())),
        }
    }
}

impl GlobalWrites {
    fn shard(&self, address: usize) -> &Shard {
        // Neighbouring elements go to different shards; the low bits of an aligned address are 0.
        &self.shards[(address >> 2) % SHARDS]
    }
}

/// A hash for addresses: they are already spread out and need no protection against collisions
/// chosen by an attacker.
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 << 8 | byte as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_usize(&mut self, address: usize) {
        self.0 = (address as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Records `current`'s store of `size` bytes at `address`; fails the kernel when another thread of
/// the launch stored there before.
#[track_caller]
pub(crate) fn record_write(address: usize, size: usize, current: &Current, site: Site) {
    let this = Writer {
        block: current.block_idx.get(),
        thread: current.thread_idx,
        site,
    };
    let writes = &current.block().launch().global_writes;
    let mut writes = writes.shard(address).lock().unwrap_or_else(|e| e.into_inner());
    let earlier = *writes.entry(address).or_insert(this);
    if earlier.block != this.block || earlier.thread != this.thread {
        drop(writes);
        report(format!(
            "global-memory race at address {address:#x} ({size} bytes): thread {} of block {} wrote it at {}, and thread {} of block {} writes it at {}; two threads storing to one element need an atomic",
            earlier.thread,
            earlier.block,
            shadow::site(earlier.site),
            this.thread,
            this.block,
            shadow::site(this.site)
        ));
    }
}
