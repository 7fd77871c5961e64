//! One block's shared memory on the emulator, and its shadow: for every 4-byte word, whether a
//! thread of this block has written it, and which threads touched it since the last barrier. From
//! that the emulator reports what the GPU would only get wrong silently:
//!
//! * a read of a word no thread of the block has written (whatever its type);
//! * a race: two threads touching a word between two barriers, at least one of them writing,
//!   unless both are lanes of one warp and a `sync_warp` or a shuffle of that warp came between, or
//!   both accesses are atomic (`SharedSlice::atomic_add`): atomics race only with plain accesses.
//!
//! Each report names both threads, the word (as an element of the view the kernel carved), and
//! both source lines.

use crate::launch::Dim3;
use std::fmt::Write as _;
use std::panic::Location;

pub(crate) type Site = &'static Location<'static>;

/// Bytes per shadow word: the smallest access (f32, u32, i32); 8-byte accesses cover two.
const WORD: u32 = 4;

/// One access to a word since the last barrier; `tid == NONE` for no access.
#[derive(Clone, Copy)]
struct Access {
    tid: u32,
    /// The epoch of the accessing thread's warp at the time: a later warp-level sync orders it.
    warp_epoch: u32,
    site: Site,
}

const NONE: u32 = u32::MAX;

impl Access {
    const EMPTY: Access = Access {
        tid: NONE,
        warp_epoch: 0,
        site: Location::caller(),
    };
}

/// What the shadow knows of one word: 56 bytes, so that a block's shadow stays in cache.
#[derive(Clone, Copy)]
struct Word {
    /// The block-barrier epoch `writer` and `readers` belong to; older entries are ordered before
    /// every access now, by a barrier.
    epoch: u32,
    /// Written by some thread of this block (reset when the next block starts).
    written: bool,
    /// Whether `writer`'s access was atomic.
    writer_atomic: bool,
    writer: Access,
    /// Up to two distinct readers: enough to name one that is not the writer.
    readers: [Access; 2],
}

impl Word {
    const FRESH: Word = Word {
        epoch: 0,
        written: false,
        writer_atomic: false,
        writer: Access::EMPTY,
        readers: [Access::EMPTY; 2],
    };
}

/// A region the kernel carved, to name the element a report is about.
pub(crate) struct View {
    pub name: &'static str,
    pub start: u32,
    pub end: u32,
    pub element_bytes: u32,
    /// For a matrix: (columns, pitch) in elements.
    pub matrix: Option<(u32, u32)>,
}

/// Whether an access reads or writes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Read,
    Write,
    /// A read-modify-write by a shared-memory atomic.
    Atomic,
}

/// What a block's threads need to know to judge an access: who they are and what orders them.
pub(crate) struct Ordering<'a> {
    pub block_epoch: u32,
    /// The current epoch of each warp of the block.
    pub warp_epochs: &'a [u32],
    pub block_dim: Dim3,
}

pub(crate) struct SharedMemory {
    /// The memory itself, 8-byte aligned (16 after the base offset below), reused block after block.
    data: Box<[u128]>,
    bytes: u32,
    words: Vec<Word>,
    views: Vec<View>,
}

impl SharedMemory {
    pub fn new() -> Self {
        SharedMemory {
            data: Box::new([]),
            bytes: 0,
            words: Vec::new(),
            views: Vec::new(),
        }
    }

    /// Ready for a block with `bytes` of dynamic shared memory: nothing written, nothing carved.
    pub fn reset(&mut self, bytes: u32) {
        let slots = (bytes as usize).div_ceil(16);
        if self.data.len() < slots {
            self.data = vec![0u128; slots].into_boxed_slice();
        }
        self.bytes = bytes;
        self.words.clear();
        self.words.resize(bytes.div_ceil(WORD) as usize, Word::FRESH);
        self.views.clear();
    }

    /// The block's shared memory, 16-byte aligned as on the GPU.
    pub fn base(&self) -> *mut u8 {
        // Writes go through this pointer into the boxed slice, which nothing else borrows while the
        // block runs: the shadow lives beside it, not in it.
        self.data.as_ptr().cast::<u8>().cast_mut()
    }

    /// Records a region the kernel carved (each thread carves the same: recorded once).
    pub fn carved(&mut self, view: View) {
        if !self.views.iter().any(|v| v.start == view.start && v.name == view.name) {
            self.views.push(view);
        }
    }

    /// Checks and records an access of `size` bytes at byte `offset` by thread `tid` at `site`:
    /// the report of a race or an uninitialised read, or `Ok`.
    #[inline]
    pub fn access(
        &mut self,
        (offset, size): (u32, u32),
        kind: Kind,
        tid: u32,
        site: Site,
        order: &Ordering,
    ) -> Result<(), String> {
        if offset.checked_add(size).is_none_or(|end| end > self.bytes) {
            return Err(format!(
                "a shared-memory access of {size} bytes at byte {offset} is outside the block's {} bytes",
                self.bytes
            ));
        }
        let warp_epoch = order.warp_epochs[(tid / crate::launch::WARP_SIZE) as usize];
        let this = Access { tid, warp_epoch, site };
        for index in offset / WORD..(offset + size).div_ceil(WORD) {
            let word = &mut self.words[index as usize];
            if word.epoch != order.block_epoch {
                word.epoch = order.block_epoch;
                word.writer = Access::EMPTY;
                word.readers = [Access::EMPTY; 2];
            }
            let unordered = |a: &Access| a.tid != NONE && !ordered(a, &this, order);
            match kind {
                Kind::Read => {
                    if !word.written {
                        return Err(self.uninitialised(index, &this, order));
                    }
                    if unordered(&word.writer) {
                        let writer = word.writer;
                        return Err(self.race(index, (&writer, "wrote"), (&this, kind), order));
                    }
                    if word.readers[0].tid == NONE || word.readers[0].tid == tid {
                        word.readers[0] = this;
                    } else if word.readers[1].tid == NONE || word.readers[1].tid == tid {
                        word.readers[1] = this;
                    }
                }
                Kind::Write => {
                    let earlier = if unordered(&word.writer) {
                        Some((word.writer, "wrote"))
                    } else {
                        word.readers.iter().find(|r| unordered(r)).map(|r| (*r, "read"))
                    };
                    if let Some((earlier, what)) = earlier {
                        return Err(self.race(index, (&earlier, what), (&this, kind), order));
                    }
                    word.written = true;
                    word.writer_atomic = false;
                    word.writer = this;
                }
                Kind::Atomic => {
                    if !word.written {
                        return Err(self.uninitialised(index, &this, order));
                    }
                    let earlier = if unordered(&word.writer) && !word.writer_atomic {
                        Some((word.writer, "wrote"))
                    } else {
                        word.readers.iter().find(|r| unordered(r)).map(|r| (*r, "read"))
                    };
                    if let Some((earlier, what)) = earlier {
                        return Err(self.race(index, (&earlier, what), (&this, kind), order));
                    }
                    word.writer_atomic = true;
                    word.writer = this;
                }
            }
        }
        Ok(())
    }

    #[cold]
    fn uninitialised(&self, word: u32, reader: &Access, order: &Ordering) -> String {
        format!(
            "thread {} read {} at {}, which no thread of this block has written: shared memory starts undefined in every block",
            thread(reader.tid, order.block_dim),
            self.describe(word * WORD),
            site(reader.site),
        )
    }

    #[cold]
    fn race(
        &self,
        word: u32,
        (earlier, did): (&Access, &str),
        (this, kind): (&Access, Kind),
        order: &Ordering,
    ) -> String {
        let does = match kind {
            Kind::Read => "reads",
            Kind::Write => "writes",
            Kind::Atomic => "atomically updates",
        };
        let mut message = format!(
            "shared-memory race on {}: thread {} {did} it at {} and thread {} {does} it at {}, with no sync_threads between",
            self.describe(word * WORD),
            thread(earlier.tid, order.block_dim),
            site(earlier.site),
            thread(this.tid, order.block_dim),
            site(this.site),
        );
        if earlier.tid / crate::launch::WARP_SIZE == this.tid / crate::launch::WARP_SIZE {
            let _ = write!(message, " (nor a sync_warp or shuffle of their warp)");
        }
        message
    }

    /// "view `a`, element (3, 7) (byte 428)", or the byte where no view covers it.
    fn describe(&self, byte: u32) -> String {
        let Some(view) = self.views.iter().find(|v| v.start <= byte && byte < v.end) else {
            return format!("shared byte {byte} (in no carved view)");
        };
        let element = (byte - view.start) / view.element_bytes;
        match view.matrix {
            Some((_, pitch)) => format!(
                "view `{}`, element ({}, {}) (byte {byte})",
                view.name,
                element / pitch,
                element % pitch
            ),
            None => format!("view `{}`, element {element} (byte {byte})", view.name),
        }
    }
}

/// Whether `earlier` is ordered before `now`: the same thread, or lanes of one warp with a
/// warp-level sync between. (Accesses before the last block barrier are never compared.)
#[inline]
fn ordered(earlier: &Access, now: &Access, order: &Ordering) -> bool {
    let warp = earlier.tid / crate::launch::WARP_SIZE;
    earlier.tid == now.tid
        || (warp == now.tid / crate::launch::WARP_SIZE && earlier.warp_epoch < order.warp_epochs[warp as usize])
}

pub(crate) fn thread(tid: u32, block_dim: Dim3) -> Dim3 {
    let (x, y) = (block_dim.x, block_dim.y);
    Dim3::new(tid % x, tid / x % y, tid / (x * y))
}

pub(crate) fn site(site: Site) -> String {
    format!("{}:{}", site.file(), site.line())
}
