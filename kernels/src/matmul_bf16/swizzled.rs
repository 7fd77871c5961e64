//! Staging bf16 tiles in the 128-byte swizzle that `wgmma`'s descriptors read (see
//! [`ptxkit::device::wgmma`]), shared by the `wgmma` rungs. The ring is counted in 128-byte rows
//! of 32 words: a slot holds A's BM rows (K-major: row r of A's slice, its 16-byte chunk c at chunk
//! `c ^ (r % 8)`), then B's BN / 64 atoms of BK k-rows (MN-major: 64 columns of one k per row,
//! chunks swizzled the same way).
// Only the sm_90a kernel bodies stage with these; elsewhere the bodies are stubs.
#![cfg_attr(not(all(target_arch = "nvptx64", target_feature = "sm_90a")), allow(dead_code))]

use ptxkit::device::mma::Bf16;
use ptxkit::device::{SharedMatrix, unrolled, unrolled_to};

/// bf16 per 16-byte chunk.
pub const CHUNK: u32 = 8;
/// Bytes of one swizzled row.
pub const ROW_BYTES: u32 = 128;
/// Columns of B per atom: one 128-byte row of bf16.
pub const ATOM_COLUMNS: u32 = ROW_BYTES / 2;

/// The operands, their sizes, and the block's corner of C.
#[derive(Clone, Copy)]
pub struct Operands {
    pub a: *const Bf16,
    pub b: *const Bf16,
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub row0: u32,
    pub col0: u32,
    /// Whether 16-byte copies can move the rows: k and n multiples of 8, A and B 16-byte aligned.
    pub aligned: bool,
}

impl Operands {
    /// The operands of the block whose tile of C starts at `(row0, col0)`.
    #[inline(always)]
    pub fn new(a: *const Bf16, b: *const Bf16, (m, n, k): (u32, u32, u32), (row0, col0): (u32, u32)) -> Self {
        let aligned = k.is_multiple_of(CHUNK)
            && n.is_multiple_of(CHUNK)
            && (a as usize).is_multiple_of(16)
            && (b as usize).is_multiple_of(16);
        Operands {
            a,
            b,
            m,
            n,
            k,
            row0,
            col0,
            aligned,
        }
    }
}

/// Element `at`, or zero outside the matrix.
///
/// # Safety
/// `at` is inside the matrix where `inside`.
#[inline(always)]
unsafe fn element_or_zero(matrix: *const Bf16, at: u32, inside: bool) -> u32 {
    // SAFETY: read only where inside, by the caller's promise.
    if inside {
        unsafe { (*matrix.add(at as usize)).0 as u32 }
    } else {
        0
    }
}

/// One 16-byte chunk into ring words `(row, word..word + 4)`: by `cp.async` (zeros outside the
/// matrix) when `aligned`, else element by element through registers.
///
/// # Safety
/// `src` inside the matrix where `inside`; `element(i)` reads only inside the matrix; the
/// destination inside the ring.
#[inline(always)]
unsafe fn chunk(
    ring: &SharedMatrix<u32>,
    (row, word): (u32, u32),
    aligned: bool,
    (src, inside): (*const Bf16, bool),
    element: impl Fn(u32) -> u32,
) {
    if aligned {
        // SAFETY: forwarded from the caller.
        unsafe { ring.copy4_async_zero_fill_unchecked(row, word, src.cast::<u32>(), 4 * inside as u32) };
    } else {
        unrolled::<4>(|w| {
            // SAFETY: as above.
            unsafe { ring.set_unchecked(row, word + w, element(2 * w) | (element(2 * w + 1) << 16)) }
        });
    }
}

/// Stages k-step `step` into the slot whose first row is `first`: this thread's share (it is
/// `tid` of `THREADS` that stage together) of A's BM × BK and B's BK × BN.
///
/// # Safety
/// A and B hold m·k and k·n elements; the slot's rows lie within the ring; `tid < THREADS`.
#[inline(always)]
pub unsafe fn stage<const THREADS: u32, const BM: u32, const BN: u32, const BK: u32>(
    ring: &SharedMatrix<u32>,
    ops: Operands,
    tid: u32,
    step: u32,
    first: u32,
) {
    let Operands {
        a,
        b,
        m,
        n,
        k,
        row0,
        col0,
        aligned,
    } = ops;
    let k0 = step * BK;
    unrolled_to(BM * BK / CHUNK / THREADS, |i| {
        let e = tid + i * THREADS;
        let (r, c) = (e / (BK / CHUNK), e % (BK / CHUNK));
        let (row, at) = (row0 + r, k0 + CHUNK * c);
        let inside = row < m && at < k;
        // SAFETY (the reads): inside A where read, by the tests beside them.
        let src = if inside {
            unsafe { a.add((row * k + at) as usize) }
        } else {
            a
        };
        let element = |i: u32| unsafe { element_or_zero(a, row * k + at + i, row < m && at + i < k) };
        unsafe { chunk(ring, (first + r, 4 * (c ^ (r % 8))), aligned, (src, inside), element) };
    });
    unrolled_to(BK * BN / CHUNK / THREADS, |i| {
        let e = tid + i * THREADS;
        let (r, c) = (e / (BN / CHUNK), e % (BN / CHUNK));
        let (at, column) = (k0 + r, col0 + CHUNK * c);
        let inside = at < k && column < n;
        // SAFETY: as for A.
        let src = if inside {
            unsafe { b.add((at * n + column) as usize) }
        } else {
            b
        };
        let element = |i: u32| unsafe { element_or_zero(b, at * n + column + i, at < k && column + i < n) };
        let atom = c / (ATOM_COLUMNS / CHUNK);
        let row = first + BM + BK * atom + r;
        unsafe { chunk(ring, (row, 4 * ((c % 8) ^ (r % 8))), aligned, (src, inside), element) };
    });
}
