//! A row held on chip by a block of [`THREADS`] threads between its statistics and its outputs,
//! for the rows too long for registers alone (vocabulary-wide rows): its 16-byte vectors (from its
//! first 16-byte boundary, as [`crate::cross_entropy::walk::split`] finds it, so that every load is
//! a vector whatever the row's offset) go [`VECTORS`] a thread to registers, the next
//! [`STAGED_VECTORS`] a thread to shared memory (copied by `cp.async` while the register loads are
//! in flight; each thread reads back only its own copies, so they need no barrier), and the few
//! elements before the first boundary and after the last vector one a thread to registers. What is
//! left of a row past [`ON_CHIP_COLS`] (Llama 3's 128256 words) is read as it streams by, its
//! running maximum and sum merged with the rest's, and read again for its outputs.
//!
//! Each thread's sum of e^(x − m) is taken from its own maximum m and the pairs merged over the
//! block: one round of barriers, where the block's maximum first would take two. Softmax's
//! widest rung ([`super::wide_staged`]) and cross-entropy's training pass
//! ([`crate::cross_entropy::fused`]) differ only in what they write.

use super::{Running, block_running};
use crate::cross_entropy::walk::{map_row, split};
use ptxkit::device::{
    Float4, GlobalSlice, GlobalSliceMut, MatrixLayout, SharedMatrix, SharedSlice, WARP_SIZE, async_copy_commit,
    async_copy_wait, exp, thread_idx, unrolled,
};
use ptxkit::shared_memory;

/// Threads per block, one block per row.
pub const THREADS: u32 = 1024;
/// Warps per block.
pub const WARPS: u32 = THREADS / WARP_SIZE;
/// 16-byte vectors each thread holds in registers (six fit under the 64 registers a block of
/// 1024 threads allows, as in softmax's `wide_staged` rung).
pub const VECTORS: u32 = 6;
/// 16-byte vectors each thread stages in shared memory: 160 KiB in all, within an sm_80 block's
/// 163 KiB.
pub const STAGED_VECTORS: u32 = 10;
/// Vectors a row holds in registers.
const REGISTER_SPAN: u32 = THREADS * VECTORS;
/// Vectors a row holds on chip.
const ON_CHIP_SPAN: u32 = THREADS * (VECTORS + STAGED_VECTORS);
/// The columns a row holds on chip, whatever its place against 16-byte boundaries; the rest is
/// read twice.
pub const ON_CHIP_COLS: u32 = 4 * ON_CHIP_SPAN;
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
/// aligned vectors from there, then fewer than four.
#[derive(Clone, Copy)]
struct Layout {
    head: u32,
    vectors: u32,
}

impl Layout {
    /// The column of vector `v`'s first element.
    #[inline(always)]
    fn column(self, v: u32) -> u32 {
        self.head + 4 * v
    }

    /// The column of this thread's element past the last vector (inside the row or not).
    #[inline(always)]
    fn tail_column(self, t: u32) -> u32 {
        self.head + 4 * self.vectors + t
    }
}

/// Calls `see(v, x)` for each vector v of the streamed part in this thread's share (`t`, a
/// stride of [`THREADS`] vectors from [`ON_CHIP_SPAN`]), [`STREAM_BATCH`] loads issued before any
/// is used.
///
/// # Safety
/// `src` holds the row `layout` describes, 16-byte aligned at its vectors.
#[inline(always)]
unsafe fn stream(src: GlobalSlice<f32>, layout: Layout, t: u32, mut see: impl FnMut(u32, [f32; 4])) {
    let mut v = ON_CHIP_SPAN + t;
    while v + (STREAM_BATCH - 1) * THREADS < layout.vectors {
        let mut x = [[0.0f32; 4]; STREAM_BATCH as usize];
        unrolled::<STREAM_BATCH>(|i| {
            // SAFETY: v + i·THREADS < vectors: inside the row, 16-byte aligned.
            x[i as usize] = unsafe { src.get4_unchecked(layout.column(v + i * THREADS)) }.0;
        });
        unrolled::<STREAM_BATCH>(|i| see(v + i * THREADS, x[i as usize]));
        v += STREAM_BATCH * THREADS;
    }
    while v < layout.vectors {
        // SAFETY: as above.
        see(v, unsafe { src.get4_unchecked(layout.column(v)) }.0);
        v += THREADS;
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
pub unsafe fn row_on_chip<F: Fn(u32, f32) -> f32>(
    (staged, maxes, sums): (SharedMatrix<f32>, SharedSlice<f32>, SharedSlice<f32>),
    (src, dst): (GlobalSlice<f32>, GlobalSliceMut<f32>),
    cols: u32,
    map: impl FnOnce(Running) -> F,
) -> Running {
    let t = thread_idx().x;
    let (head, vectors) = split(src.as_ptr(), cols);
    let layout = Layout { head, vectors };
    // The staged copies first, to travel beside everything else.
    unrolled::<STAGED_VECTORS>(|j| {
        let v = REGISTER_SPAN + t + THREADS * j;
        if v < vectors {
            // SAFETY: vector v is inside the row, 16-byte aligned; this thread's slot of staged
            // row j, 16-byte aligned.
            unsafe { staged.copy4_async_unchecked(j, 4 * t, src.as_ptr().add(layout.column(v) as usize)) };
        }
    });
    async_copy_commit();
    // The streamed part: a running maximum and sum (rows within ON_CHIP_COLS have none).
    let mut running = Running::EMPTY;
    // SAFETY: the row's vectors are inside it, 16-byte aligned.
    unsafe {
        stream(
            src,
            layout,
            t,
            #[inline(always)]
            |_, x| x.iter().for_each(|&x| running = running.see(x)),
        )
    };
    let mut x = [[f32::NEG_INFINITY; 4]; VECTORS as usize];
    unrolled::<VECTORS>(|i| {
        let v = t + THREADS * i;
        if v < vectors {
            // SAFETY: as above.
            x[i as usize] = unsafe { src.get4_unchecked(layout.column(v)) }.0;
        }
    });
    // This thread's element before the first boundary and its element after the last vector,
    // read again where used (from L1) rather than held in two registers throughout.
    let (first, last) = (t, layout.tail_column(t));
    let edge = #[inline(always)]
    || {
        // SAFETY: each inside the row where read.
        unsafe {
            [
                if first < head {
                    src.get_unchecked(first)
                } else {
                    f32::NEG_INFINITY
                },
                if last < cols {
                    src.get_unchecked(last)
                } else {
                    f32::NEG_INFINITY
                },
            ]
        }
    };
    async_copy_wait::<0>();
    // NaN is left out of every maximum (and makes the sum NaN below).
    let larger = #[inline(always)]
    |m: f32, x: f32| if x > m { x } else { m };
    let mut m = edge().iter().fold(running.max, |m, &x| larger(m, x));
    unrolled::<VECTORS>(|i| m = x[i as usize].iter().fold(m, |m, &x| larger(m, x)));
    unrolled::<STAGED_VECTORS>(|j| {
        if REGISTER_SPAN + t + THREADS * j < vectors {
            // SAFETY: this thread's own staged vector, its copy waited for.
            let Float4(s) = unsafe { staged.get4_unchecked(j, 4 * t) };
            m = s.iter().fold(m, |m, &x| larger(m, x));
        }
    });
    // This thread's sum from its own maximum, then one merge over the block (one round of
    // barriers where the block's maximum first would take two). The maximum starts from the
    // running pair's floor, f32::MIN, not −∞: a thread that saw only −∞ has a sum of 0, which
    // the merge leaves out, and a row of −∞ alone gets l = −∞, as the forward pass writes it.
    let mut sum = running.sum * exp(running.max - m);
    edge().iter().for_each(|&x| sum += exp(x - m));
    unrolled::<VECTORS>(|i| {
        if t + THREADS * i < vectors {
            x[i as usize].iter().for_each(|&x| sum += exp(x - m));
        }
    });
    unrolled::<STAGED_VECTORS>(|j| {
        if REGISTER_SPAN + t + THREADS * j < vectors {
            // SAFETY: as above.
            let Float4(s) = unsafe { staged.get4_unchecked(j, 4 * t) };
            s.iter().for_each(|&x| sum += exp(x - m));
        }
    });
    // SAFETY: every thread calls it (the caller's promise).
    let row = unsafe { block_running::<WARPS>(maxes, sums, Running { max: m, sum }) };
    let f = map(row);
    if !(src.as_ptr() as usize)
        .wrapping_sub(dst.as_mut_ptr() as usize)
        .is_multiple_of(16)
    {
        // The output's row sits otherwise against 16-byte boundaries: read again, element by
        // element.
        // SAFETY: both rows hold cols elements.
        unsafe { map_row::<_, THREADS>(src, dst, cols, t, f) };
        return row;
    }
    let four = #[inline(always)]
    |v: u32, x: [f32; 4]| {
        let c = layout.column(v);
        Float4([f(c, x[0]), f(c + 1, x[1]), f(c + 2, x[2]), f(c + 3, x[3])])
    };
    unrolled::<VECTORS>(|i| {
        let v = t + THREADS * i;
        if v < vectors {
            // SAFETY: vector v of the output's row, 16-byte aligned as the input's is.
            unsafe { dst.set4_unchecked(layout.column(v), four(v, x[i as usize])) };
        }
    });
    let edge = edge();
    // SAFETY: each inside the row where written.
    unsafe {
        if first < head {
            dst.set_unchecked(first, f(first, edge[0]));
        }
        if last < cols {
            dst.set_unchecked(last, f(last, edge[1]));
        }
    }
    unrolled::<STAGED_VECTORS>(|j| {
        let v = REGISTER_SPAN + t + THREADS * j;
        if v < vectors {
            // SAFETY: this thread's own staged vector; vector v of the output's row.
            unsafe { dst.set4_unchecked(layout.column(v), four(v, staged.get4_unchecked(j, 4 * t).0)) };
        }
    });
    // SAFETY: the row's vectors, read again; the output's, 16-byte aligned alike.
    unsafe {
        stream(
            src,
            layout,
            t,
            #[inline(always)]
            |v, x| dst.set4_unchecked(layout.column(v), four(v, x)),
        )
    };
    row
}
