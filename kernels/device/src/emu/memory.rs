//! The global memory a launch's typed views cover, and its shadow: for every element, the last
//! access that wrote it and the last that read it, so that an access conflicting with either and
//! not ordered after it (`order.rs`) fails the launch with both threads, both blocks and both lines.
//!
//! The views are the launch's parameters (`kernel!` hands their regions over, named by the
//! parameters); one array passed as two parameters is one region. Each element of a region has a
//! slot of four words, updated with atomics: blocks run on several workers at once.

use super::order::{Access, COUNT_LIMIT, EPOCH_LIMIT, SyncWords};
use super::shadow::{self, Site};
use crate::launch::Dim3;
use crate::params::GlobalRegion;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};

/// How an access touches an element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Read,
    Write,
    /// An atomic that only reads (`load_acquire`, `load_relaxed`).
    AtomicRead,
    /// An atomic that writes (a read-modify-write, `store_release`, `store_relaxed`).
    AtomicWrite,
}

impl Kind {
    fn writes(self) -> bool {
        matches!(self, Kind::Write | Kind::AtomicWrite)
    }

    fn atomic(self) -> bool {
        matches!(self, Kind::AtomicRead | Kind::AtomicWrite)
    }
}

/// The last writer and the last reader of one element, packed ([`pack`]), with their lines.
#[repr(C)]
struct Slot {
    writer: AtomicU64,
    writer_site: AtomicU64,
    reader: AtomicU64,
    reader_site: AtomicU64,
}

/// One region of global memory the launch's views cover.
struct Region {
    /// The parameters that view it, for reports: "`out`", or "`x` (also `y`)".
    name: String,
    start: usize,
    end: usize,
    element_bytes: usize,
    /// Whether a writable view covers it. Where none does, nothing writes it and its reads
    /// cannot race: they are not recorded, and it has no slots.
    writable: bool,
    slots: Box<[Slot]>,
}

impl Region {
    fn slot(&self, address: usize) -> &Slot {
        &self.slots[(address - self.start) / self.element_bytes]
    }
}

/// The launch's views, their shadow, and the clocks of the words releases wrote.
pub(crate) struct Views {
    regions: Vec<Region>,
    pub sync: SyncWords,
    grid: Dim3,
    block: Dim3,
}

/// A conflicting access found in the shadow, not ordered before the one being made.
pub(crate) struct Conflict {
    earlier: Access,
    earlier_site: Option<Site>,
    earlier_wrote: bool,
}

impl Views {
    /// The shadow of the launch's view parameters (name and region each); `None` when it takes
    /// none, or an error where the shadow cannot be allocated.
    pub fn new(
        params: &[(&'static str, Option<GlobalRegion>)],
        grid: Dim3,
        block: Dim3,
    ) -> Result<Option<Views>, String> {
        // Each view's span as a region without its slots; overlapping ones merged, then the
        // slots of those a writable view covers.
        let mut spans: Vec<Region> = params
            .iter()
            .filter_map(|(name, region)| region.map(|r| (r, name)))
            .filter(|(r, _)| r.bytes > 0)
            .map(|(r, name)| Region {
                name: format!("`{name}`"),
                start: r.start,
                end: r.start + r.bytes,
                element_bytes: r.element_bytes,
                writable: r.writable,
                slots: Box::new([]),
            })
            .collect();
        if spans.is_empty() {
            return Ok(None);
        }
        spans.sort_by_key(|span| span.start);
        let mut regions: Vec<Region> = Vec::new();
        for span in spans {
            match regions.last_mut() {
                Some(last) if span.start < last.end => {
                    last.end = last.end.max(span.end);
                    last.element_bytes = gcd(last.element_bytes, span.element_bytes);
                    last.name = format!("{} (also {})", last.name, span.name);
                    last.writable |= span.writable;
                }
                _ => regions.push(span),
            }
        }
        for region in regions.iter_mut().filter(|r| r.writable) {
            // Regions start where the views do; an element size that does not divide the span
            // still gets a slot for its last bytes.
            let count = (region.end - region.start).div_ceil(region.element_bytes);
            region.slots = zeroed_slots(count).ok_or_else(|| {
                format!(
                    "the emulator cannot hold the record of {}'s {count} elements ({} MiB): emulate a smaller problem",
                    region.name,
                    (count * size_of::<Slot>()) >> 20
                )
            })?;
        }
        Ok(Some(Views {
            regions,
            sync: SyncWords::default(),
            grid,
            block,
        }))
    }

    /// Whether a view of the launch covers `address`.
    pub fn covers(&self, address: usize) -> bool {
        self.region(address).is_some()
    }

    fn region(&self, address: usize) -> Option<&Region> {
        let i = self.regions.partition_point(|r| r.start <= address);
        self.regions[..i].last().filter(|r| address < r.end)
    }

    /// "element 17 of `out`", or the address where no view covers it.
    pub fn describe(&self, address: usize) -> String {
        match self.region(address) {
            Some(region) => format!(
                "element {} of {}",
                (address - region.start) / region.element_bytes,
                region.name
            ),
            None => format!("global address {address:#x} (outside the launch's views)"),
        }
    }

    /// Checks and records an access of `size` bytes at `address` by `me` at `site`; `ordered` says
    /// whether an access of another thread is ordered before it. Outside every view: nothing.
    pub fn access(
        &self,
        (address, size): (usize, usize),
        kind: Kind,
        me: Access,
        site: Site,
        ordered: impl Fn(&Access) -> bool,
    ) -> Result<(), String> {
        let Some(region) = self.region(address) else {
            return Ok(());
        };
        if !region.writable {
            return if kind.writes() {
                Err(self.read_only_store(address, &me, site))
            } else {
                Ok(())
            };
        }
        let packed = pack(&me);
        let end = (address + size.max(1)).min(region.end);
        let mut at = address - (address - region.start) % region.element_bytes;
        while at < end {
            let slot = region.slot(at);
            if let Err(conflict) = check(slot, kind, &me, packed, site, &ordered) {
                return Err(self.race(at, &conflict, kind, &me, site));
            }
            at += region.element_bytes;
        }
        Ok(())
    }

    /// A store into a region that only read-only views cover (through a raw pointer or a view
    /// made inside the kernel).
    #[cold]
    fn read_only_store(&self, address: usize, me: &Access, site: Site) -> String {
        format!(
            "a store into {}, which the launch passes only as a read-only view, by thread {} of block {} at {}: take it as a GlobalSliceMut or GlobalMatrixMut to write it",
            self.describe(address),
            shadow::thread(me.tid, self.block),
            super::worker::unlinearize(me.block as u64, self.grid),
            shadow::site(site),
        )
    }

    #[cold]
    fn race(&self, address: usize, conflict: &Conflict, kind: Kind, me: &Access, site: Site) -> String {
        let earlier = &conflict.earlier;
        let did = match (conflict.earlier_wrote, earlier.atomic) {
            (true, true) => "atomically updated",
            (true, false) => "wrote",
            (false, true) => "atomically read",
            (false, false) => "read",
        };
        let does = match kind {
            Kind::Read => "reads",
            Kind::Write => "writes",
            Kind::AtomicRead => "atomically reads",
            Kind::AtomicWrite => "atomically updates",
        };
        let at = |site: Option<Site>| site.map_or_else(|| "an unknown line".into(), shadow::site);
        let who = |access: &Access| {
            format!(
                "thread {} of block {}",
                shadow::thread(access.tid, self.block),
                super::worker::unlinearize(access.block as u64, self.grid)
            )
        };
        let why = if earlier.block == me.block {
            "a sync_threads between them would order them"
        } else if conflict.earlier_wrote && kind.writes() && !earlier.atomic && !kind.atomic() {
            "two threads storing to one element need an atomic, or an order between them"
        } else {
            "between blocks, the first must release (store_release, or thread_fence then a relaxed store or atomic) and the second acquire what it released (load_acquire, or a relaxed load or atomic then thread_fence)"
        };
        format!(
            "global-memory race on {}: {} {did} it at {}, and {} {does} it at {}, with nothing ordering them: {why}",
            self.describe(address),
            who(earlier),
            at(conflict.earlier_site),
            who(me),
            shadow::site(site),
        )
    }
}

/// Checks one element's slot against an access, and records the access.
fn check(
    slot: &Slot,
    kind: Kind,
    me: &Access,
    packed: Option<u64>,
    site: Site,
    ordered: &impl Fn(&Access) -> bool,
) -> Result<(), Conflict> {
    let conflicts = |other: &Access| {
        !(other.block == me.block && other.tid == me.tid) && !(other.atomic && kind.atomic()) && !ordered(other)
    };
    // Each access puts itself in its slot before it reads the other kind's (sequentially
    // consistent both ways), so that of a write and another access at once, one always finds the
    // other.
    if kind.writes() {
        let writer = match packed {
            Some(packed) => slot.writer.swap(packed, Ordering::SeqCst),
            None => slot.writer.load(Ordering::SeqCst),
        };
        let writer_site = slot.writer_site.load(Ordering::Acquire);
        if packed.is_some() {
            slot.writer_site.store(site as *const _ as u64, Ordering::Release);
        }
        if let Some(earlier) = unpack(writer).filter(|w| conflicts(w)) {
            return Err(Conflict {
                earlier,
                earlier_site: site_of(writer_site),
                earlier_wrote: true,
            });
        }
        let reader = slot.reader.load(Ordering::SeqCst);
        if let Some(earlier) = unpack(reader).filter(|r| conflicts(r)) {
            return Err(Conflict {
                earlier,
                earlier_site: site_of(slot.reader_site.load(Ordering::Acquire)),
                earlier_wrote: false,
            });
        }
    } else {
        if let Some(packed) = packed
            && slot.reader.load(Ordering::Relaxed) != packed
        {
            slot.reader_site.store(site as *const _ as u64, Ordering::Release);
            slot.reader.swap(packed, Ordering::SeqCst);
        }
        let writer = slot.writer.load(Ordering::SeqCst);
        if let Some(earlier) = unpack(writer).filter(|w| conflicts(w)) {
            return Err(Conflict {
                earlier,
                earlier_site: site_of(slot.writer_site.load(Ordering::Acquire)),
                earlier_wrote: true,
            });
        }
    }
    Ok(())
}

// An access in one word: the thread (10 bits), its block + 1 (22 bits; 0 is "none"), the epoch
// (20 bits), the release count (11 bits), atomic (1 bit).
const BLOCK_LIMIT: u32 = (1 << 22) - 2;

/// The access in one word; `None` where a field is past its width (it is then not recorded).
fn pack(access: &Access) -> Option<u64> {
    if access.block > BLOCK_LIMIT || access.epoch > EPOCH_LIMIT || access.count > COUNT_LIMIT || access.tid >= 1024 {
        return None;
    }
    Some(
        access.tid as u64
            | (access.block as u64 + 1) << 10
            | (access.epoch as u64) << 32
            | (access.count as u64) << 52
            | (access.atomic as u64) << 63,
    )
}

fn unpack(word: u64) -> Option<Access> {
    let block = (word >> 10) as u32 & ((1 << 22) - 1);
    (block != 0).then(|| Access {
        tid: word as u32 & 1023,
        block: block - 1,
        epoch: (word >> 32) as u32 & EPOCH_LIMIT,
        count: (word >> 52) as u32 & COUNT_LIMIT,
        atomic: word >> 63 != 0,
    })
}

fn site_of(word: u64) -> Option<Site> {
    // SAFETY: only `&'static Location` addresses (or 0) are stored in a site word.
    (word != 0).then(|| unsafe { &*(word as usize as *const Location<'static>) })
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// `count` slots, all zero (no access), from zeroed pages the OS maps on first touch.
fn zeroed_slots(count: usize) -> Option<Box<[Slot]>> {
    if count == 0 {
        return Some(Box::new([]));
    }
    let layout = std::alloc::Layout::array::<Slot>(count).ok()?;
    // SAFETY: a non-zero size; all-zero bytes are valid atomics (no access recorded).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<Slot>();
    if ptr.is_null() {
        return None;
    }
    // SAFETY: `count` slots, allocated with the global allocator for this layout and initialised.
    Some(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, count)) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_access_packs_and_unpacks_whole() {
        for access in [
            Access {
                block: 0,
                tid: 0,
                epoch: 0,
                count: 0,
                atomic: false,
            },
            Access {
                block: BLOCK_LIMIT,
                tid: 1023,
                epoch: EPOCH_LIMIT,
                count: COUNT_LIMIT,
                atomic: true,
            },
        ] {
            assert_eq!(unpack(pack(&access).unwrap()), Some(access));
        }
        assert_eq!(unpack(0), None);
        let past = Access {
            block: BLOCK_LIMIT + 1,
            tid: 0,
            epoch: 0,
            count: 0,
            atomic: false,
        };
        assert_eq!(pack(&past), None);
    }

    #[test]
    fn one_array_passed_twice_is_one_region_named_by_both() {
        let data = [0u32; 16];
        let region = |len| Some(GlobalRegion::of(data.as_ptr(), len, true));
        let views = Views::new(&[("x", region(16)), ("y", region(8))], Dim3::x(1), Dim3::x(1))
            .unwrap()
            .unwrap();
        assert_eq!(views.regions.len(), 1);
        assert_eq!(
            views.describe(data.as_ptr() as usize + 12),
            "element 3 of `x` (also `y`)"
        );
    }
}
