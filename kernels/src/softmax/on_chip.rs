//! A row held on chip by a block of [`THREADS`] threads between its statistics and its outputs,
//! for the rows too long for registers alone (vocabulary-wide rows), f32 or bf16 ([`RowElement`]:
//! a vector holds four or eight, kept as loaded and widened where used): its 16-byte vectors (from its
//! first 16-byte boundary, as [`crate::cross_entropy::walk::split`] finds it, so that every load is
//! a vector whatever the row's offset) go [`register_vectors`] a thread to registers, the next
//! [`STAGED_VECTORS`] a thread to shared memory (copied by `cp.async` while the register loads are
//! in flight; each thread reads back only its own copies, so they need no barrier), and the few
//! elements before the first boundary and after the last vector one a thread to registers. What is
//! left of a row past [`on_chip_cols`] (65536 f32, 114688 bf16; Llama 3's 128256 words are past
//! either) is read as it streams by, its running maximum and sum merged with the rest's, and read
//! again for its outputs.
//!
//! Each thread's sum of e^(x − m) is taken from its own maximum m and the pairs merged over the
//! block: one round of barriers, where the block's maximum first would take two. Softmax's
//! widest rung ([`super::wide_staged`]) and cross-entropy's training pass
//! ([`crate::cross_entropy::fused`]) differ only in what they write.

use super::{Running, block_running};
use crate::cross_entropy::walk::{map_row, split};
use crate::element::RowElement;
use ptxkit::device::{
    GlobalSlice, GlobalSliceMut, MatrixLayout, SharedMatrix, SharedSlice, WARP_SIZE, async_copy_commit,
    async_copy_wait, exp, thread_idx, unrolled, unrolled_to,
};
use ptxkit::shared_memory;

/// Threads per block, one block per row.
pub const THREADS: u32 = 1024;
/// Warps per block.
pub const WARPS: u32 = THREADS / WARP_SIZE;
/// 16-byte vectors of f32 each thread holds in registers (six fit under the 64 registers a block
/// of 1024 threads allows, as in softmax's `wide_staged` rung).
pub const VECTORS: u32 = 6;
/// 16-byte vectors each thread stages in shared memory: 160 KiB in all, within an sm_80 block's
/// 163 KiB.
pub const STAGED_VECTORS: u32 = 10;
/// The vectors of bf16 each thread holds in registers: the compiler keeps the values it widened
/// for the maximum until the outputs, twice the registers of the vectors as loaded; five spill.
pub const BF16_VECTORS: u32 = 4;

/// The vectors of `E` each thread holds in registers.
pub const fn register_vectors<E: RowElement>() -> u32 {
    if E::LANES == 4 { VECTORS } else { BF16_VECTORS }
}

/// Vectors a row holds in registers.
const fn register_span<E: RowElement>() -> u32 {
    THREADS * register_vectors::<E>()
}

/// Vectors a row holds on chip.
const fn on_chip_span<E: RowElement>() -> u32 {
    THREADS * (register_vectors::<E>() + STAGED_VECTORS)
}
/// The columns of f32 a row holds on chip, whatever its place against 16-byte boundaries; the
/// rest is read twice.
pub const ON_CHIP_COLS: u32 = on_chip_cols::<f32>();

/// The columns of `E` a row holds on chip ([`ON_CHIP_COLS`] for f32, twice that for bf16).
pub const fn on_chip_cols<E: RowElement>() -> u32 {
    E::LANES * on_chip_span::<E>()
}
/// Vectors of the streamed part each thread loads at once.
const STREAM_BATCH: u32 = 4;

shared_memory! {
    /// The staged vectors (`STAGED_VECTORS` rows of one vector per thread), then one maximum and
    /// one sum per warp, and one word for the kernel's own use (cross-entropy's ticket verdict).
    pub struct Staging {
        pub staged: SharedMatrix<f32> = MatrixLayout { rows: STAGED_VECTORS, cols: 4 * THREADS, pitch: 4 * THREADS },
        pub maxes: SharedSlice<f32> = WARPS,
        pub sums: SharedSlice<f32> = WARPS,
        pub last: SharedSlice<u32> = 1,
    }
}

/// Where a row's values sit: `head` elements before its first 16-byte boundary, `vectors`
/// aligned vectors of `lanes` from there, then fewer than `lanes`.
#[derive(Clone, Copy)]
struct Layout {
    head: u32,
    vectors: u32,
    lanes: u32,
}

impl Layout {
    /// Where row `src` of `cols` elements of `E` sits.
    #[inline(always)]
    fn of<E: RowElement>(src: GlobalSlice<E>, cols: u32) -> Layout {
        let (head, vectors) = split(src.as_ptr(), cols);
        Layout {
            head,
            vectors,
            lanes: E::LANES,
        }
    }

    /// The column of vector `v`'s first element.
    #[inline(always)]
    fn column(self, v: u32) -> u32 {
        self.head + self.lanes * v
    }

    /// The column of this thread's element past the last vector (inside the row or not).
    #[inline(always)]
    fn tail_column(self, t: u32) -> u32 {
        self.head + self.lanes * self.vectors + t
    }
}

/// Calls `see(v, raw)` for each vector v of the streamed part in this thread's share (`t`, a
/// stride of [`THREADS`] vectors from [`on_chip_span`]), as loaded, [`STREAM_BATCH`] loads issued
/// before any is used.
///
/// # Safety
/// `src` holds the row `layout` describes, 16-byte aligned at its vectors.
#[inline(always)]
unsafe fn stream<E: RowElement>(src: GlobalSlice<E>, layout: Layout, t: u32, mut see: impl FnMut(u32, [f32; 4])) {
    let mut v = on_chip_span::<E>() + t;
    while v + (STREAM_BATCH - 1) * THREADS < layout.vectors {
        let mut x = [[0.0f32; 4]; STREAM_BATCH as usize];
        unrolled::<STREAM_BATCH>(|i| {
            // SAFETY: v + i·THREADS < vectors: inside the row, 16-byte aligned.
            x[i as usize] = unsafe { E::load_raw(src, layout.column(v + i * THREADS)) };
        });
        unrolled::<STREAM_BATCH>(|i| see(v + i * THREADS, x[i as usize]));
        v += STREAM_BATCH * THREADS;
    }
    while v < layout.vectors {
        // SAFETY: as above.
        see(v, unsafe { E::load_raw(src, layout.column(v)) });
        v += THREADS;
    }
}

/// Calls `f` with each of a raw vector's `E::LANES` values, widened, every call written out.
#[inline(always)]
fn each<E: RowElement>(raw: [f32; 4], mut f: impl FnMut(f32)) {
    let x = E::widen(raw);
    unrolled_to(E::LANES, |k| f(x[k as usize]));
}

/// A row's place against 16-byte boundaries, and this thread's register vectors of it as loaded
/// ([`load`]): what [`statistics`] and [`write`] take, the staged vectors aside.
#[derive(Clone, Copy)]
pub struct Held {
    layout: Layout,
    x: [[f32; 4]; VECTORS as usize],
    /// This thread's element before the first boundary and after the last vector (−∞ where none).
    edges: [f32; 2],
}

impl Held {
    /// Nothing held (rows of `E`): no row's loads issued.
    pub const fn none<E: RowElement>() -> Held {
        Held {
            layout: Layout {
                head: 0,
                vectors: 0,
                lanes: E::LANES,
            },
            x: [[0.0; 4]; VECTORS as usize],
            edges: [f32::NEG_INFINITY; 2],
        }
    }
}

/// Issues this thread's loads of the part of row `src` (`cols` elements) held on chip: its staged
/// vectors' copies to shared memory (committed as one group) and its register vectors, returned
/// as loaded. Rows past [`on_chip_cols`] have the rest streamed by [`row_on_chip`].
///
/// # Safety
/// `src` holds `cols` elements; this thread's staged slots are not read until [`statistics`]
/// waits for them.
#[inline(always)]
pub unsafe fn load<E: RowElement>(staged: SharedMatrix<f32>, src: GlobalSlice<E>, cols: u32) -> Held {
    let t = thread_idx().x;
    let layout = Layout::of(src, cols);
    // SAFETY: forwarded.
    unsafe {
        issue_staged::<E>(staged, src, layout, t);
        hold::<E>(src, layout, cols, t)
    }
}

/// This thread's register vectors of the row `layout` describes and its two edge elements, loaded.
///
/// # Safety
/// `src` holds that row, of `cols` elements.
#[inline(always)]
unsafe fn hold<E: RowElement>(src: GlobalSlice<E>, layout: Layout, cols: u32, t: u32) -> Held {
    // SAFETY: forwarded.
    unsafe {
        Held {
            layout,
            x: load_registers::<E>(src, layout, t),
            edges: edges::<E>(src, layout, cols, t),
        }
    }
}

/// This thread's staged vectors' copies, committed as one group.
///
/// # Safety
/// `src` holds the row `layout` describes.
#[inline(always)]
unsafe fn issue_staged<E: RowElement>(staged: SharedMatrix<f32>, src: GlobalSlice<E>, layout: Layout, t: u32) {
    unrolled::<STAGED_VECTORS>(|j| {
        let v = register_span::<E>() + t + THREADS * j;
        if v < layout.vectors {
            // SAFETY: vector v is inside the row, 16-byte aligned; this thread's slot of staged
            // row j, 16-byte aligned.
            unsafe { staged.copy4_async_unchecked(j, 4 * t, src.as_ptr().add(layout.column(v) as usize).cast()) };
        }
    });
    async_copy_commit();
}

/// This thread's register vectors, loaded (−∞ past the row).
///
/// # Safety
/// `src` holds the row `layout` describes.
#[inline(always)]
unsafe fn load_registers<E: RowElement>(src: GlobalSlice<E>, layout: Layout, t: u32) -> [[f32; 4]; VECTORS as usize] {
    let mut x = [E::RAW_NEG_INFINITY; VECTORS as usize];
    unrolled_to(register_vectors::<E>(), |i| {
        let v = t + THREADS * i;
        if v < layout.vectors {
            // SAFETY: vector v is inside the row, 16-byte aligned.
            x[i as usize] = unsafe { E::load_raw(src, layout.column(v)) };
        }
    });
    x
}

/// This thread's element before the row's first boundary and its element after the last vector
/// (−∞ where there is none), loaded with the register vectors and held as values (read again
/// where used, their addresses were what the compiler held, and over bf16 spilled).
///
/// # Safety
/// `src` holds the row `layout` describes, of `cols` elements.
#[inline(always)]
unsafe fn edges<E: RowElement>(src: GlobalSlice<E>, layout: Layout, cols: u32, t: u32) -> [f32; 2] {
    let (first, last) = (t, layout.tail_column(t));
    // SAFETY: each inside the row where read.
    unsafe {
        [
            if first < layout.head {
                src.get_unchecked(first).to_f32()
            } else {
                f32::NEG_INFINITY
            },
            if last < cols {
                src.get_unchecked(last).to_f32()
            } else {
                f32::NEG_INFINITY
            },
        ]
    }
}

/// The row's maximum and sum of e^(x − maximum), merged over the block with `running` (the
/// streamed part's pair, or [`Running::EMPTY`]): waits for this thread's staged copies.
///
/// # Safety
/// `held` is [`load`]'s of a row of `E`, its staged copies this thread's latest; the block has
/// [`THREADS`] threads, all calling.
#[inline(always)]
pub unsafe fn statistics<E: RowElement>(
    (staged, maxes, sums): (SharedMatrix<f32>, SharedSlice<f32>, SharedSlice<f32>),
    held: &Held,
    running: Running,
) -> Running {
    let t = thread_idx().x;
    let (layout, x) = (held.layout, &held.x);
    let vectors = layout.vectors;
    async_copy_wait::<0>();
    // NaN is left out of every maximum (and makes the sum NaN below).
    let larger = #[inline(always)]
    |m: f32, x: f32| if x > m { x } else { m };
    let mut m = held.edges.iter().fold(running.max, |m, &x| larger(m, x));
    unrolled_to(register_vectors::<E>(), |i| {
        each::<E>(x[i as usize], |x| m = larger(m, x))
    });
    unrolled::<STAGED_VECTORS>(|j| {
        if register_span::<E>() + t + THREADS * j < vectors {
            // SAFETY: this thread's own staged vector, its copy waited for.
            let raw = unsafe { staged.get4_unchecked(j, 4 * t) }.0;
            each::<E>(raw, |x| m = larger(m, x));
        }
    });
    // This thread's sum from its own maximum, then one merge over the block (one round of
    // barriers where the block's maximum first would take two). The maximum starts from the
    // running pair's floor, f32::MIN, not −∞: a thread that saw only −∞ has a sum of 0, which
    // the merge leaves out, and a row of −∞ alone gets l = −∞, as the forward pass writes it.
    let mut sum = running.sum * exp(running.max - m);
    held.edges.iter().for_each(|&x| sum += exp(x - m));
    unrolled_to(register_vectors::<E>(), |i| {
        if t + THREADS * i < vectors {
            each::<E>(x[i as usize], |x| sum += exp(x - m));
        }
    });
    unrolled::<STAGED_VECTORS>(|j| {
        if register_span::<E>() + t + THREADS * j < vectors {
            // SAFETY: as above.
            let raw = unsafe { staged.get4_unchecked(j, 4 * t) }.0;
            each::<E>(raw, |x| sum += exp(x - m));
        }
    });
    // SAFETY: every thread calls it (the caller's promise).
    unsafe { block_running::<WARPS>(maxes, sums, Running { max: m, sum }) }
}

/// Writes `f(c, x)` to element c of `dst` for each element x of row `src`: the held part from
/// chip, the rest (`STREAMED`: rows past [`on_chip_cols`]) read again.
///
/// # Safety
/// `held` is [`load`]'s of row `src`, waited for by [`statistics`]; `src` and `dst` hold `cols`
/// elements; without `STREAMED`, cols ≤ [`on_chip_cols`].
#[inline(always)]
pub unsafe fn write<E: RowElement, const STREAMED: bool>(
    staged: SharedMatrix<f32>,
    (src, dst): (GlobalSlice<E>, GlobalSliceMut<E>),
    cols: u32,
    held: &Held,
    f: impl Fn(u32, f32) -> f32,
) {
    let t = thread_idx().x;
    let (layout, x) = (held.layout, &held.x);
    let vectors = layout.vectors;
    if !(src.as_ptr() as usize)
        .wrapping_sub(dst.as_mut_ptr() as usize)
        .is_multiple_of(16)
    {
        // The output's row sits otherwise against 16-byte boundaries: read again, element by
        // element.
        // SAFETY: both rows hold cols elements.
        unsafe { map_row::<_, THREADS>(src, dst, cols, t, f) };
        return;
    }
    // Vector v's outputs from its bits, stored as one vector.
    let put = #[inline(always)]
    |v: u32, raw: [f32; 4]| {
        let c = layout.column(v);
        // SAFETY: vector v of the output's row, 16-byte aligned as the input's is.
        unsafe { E::store_raw(dst, c, E::map_raw(raw, |k, x| f(c + k, x))) };
    };
    unrolled_to(register_vectors::<E>(), |i| {
        let v = t + THREADS * i;
        if v < vectors {
            put(v, x[i as usize]);
        }
    });
    let (first, last, edge) = (t, layout.tail_column(t), held.edges);
    // SAFETY: each inside the row where written.
    unsafe {
        if first < layout.head {
            dst.set_unchecked(first, E::from_f32(f(first, edge[0])));
        }
        if last < cols {
            dst.set_unchecked(last, E::from_f32(f(last, edge[1])));
        }
    }
    unrolled::<STAGED_VECTORS>(|j| {
        let v = register_span::<E>() + t + THREADS * j;
        if v < vectors {
            // SAFETY: this thread's own staged vector.
            put(v, unsafe { staged.get4_unchecked(j, 4 * t) }.0);
        }
    });
    if STREAMED {
        // SAFETY: the row's vectors, read again; the output's, 16-byte aligned alike.
        unsafe { stream(src, layout, t, put) };
    }
}

/// Reads row `src` of `cols` elements (the part past [`ON_CHIP_COLS`] twice), merges its
/// maximum and sum of e^(x − maximum) over the block (the maximum from f32::MIN, as
/// [`Running::EMPTY`]: a row of −∞ alone has a sum of 0), then writes `f(c, x)` to element c of
/// `dst` for each element x, `f` being `map` of those statistics; returns the statistics.
///
/// # Safety
/// `src` and `dst` hold `cols` elements; the block has [`THREADS`] threads, all calling (`map`
/// too, so that it may use the block's barriers).
#[inline(always)]
pub unsafe fn row_on_chip<E: RowElement, F: Fn(u32, f32) -> f32>(
    (staged, maxes, sums): (SharedMatrix<f32>, SharedSlice<f32>, SharedSlice<f32>),
    (src, dst): (GlobalSlice<E>, GlobalSliceMut<E>),
    cols: u32,
    map: impl FnOnce(Running) -> F,
) -> Running {
    let t = thread_idx().x;
    let layout = Layout::of(src, cols);
    // SAFETY: the row's vectors are inside it, 16-byte aligned; every thread calls the block's
    // merge; `held` is this row's.
    unsafe {
        // The staged copies first, to travel beside everything else.
        issue_staged::<E>(staged, src, layout, t);
        // The streamed part: a running maximum and sum (rows within ON_CHIP_COLS have none).
        let mut running = Running::EMPTY;
        stream(
            src,
            layout,
            t,
            #[inline(always)]
            |_, raw| each::<E>(raw, |x| running = running.see(x)),
        );
        let held = hold::<E>(src, layout, cols, t);
        let row = statistics::<E>((staged, maxes, sums), &held, running);
        write::<E, true>(staged, (src, dst), cols, &held, map(row));
        row
    }
}
