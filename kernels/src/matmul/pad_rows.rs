//! Row-padded copies of a matrix for the TMA rungs ([`crate::matmul_bf16`], [`crate::matmul_tc`]):
//! a tensor map needs rows a multiple of 16 bytes apart, which a matrix of odd width (an LM head's
//! 50257 columns) does not have, so the host copies such an operand into scratch first. Each
//! thread writes one 16-byte chunk of a padded row (zeros past the row's end), reading its
//! elements one by one from the dense source: the threads of a warp read consecutive elements, so
//! a warp's loads are whole sectors whatever the source's alignment, and its stores are 512
//! contiguous bytes. (The driver's 2D copy moved such rows at about half the copy ceiling:
//! docs/perf-log.md, change 145.)

use ptxkit::device::{Float4, block_idx, global_load, store4, thread_idx};
use ptxkit::{Dim3, Family, Kernel, Problem, SharedMemory, kernel};

/// One padded copy: `rows` rows of `cols` elements of `bytes` bytes (2 or 4), dense, into rows
/// [`PadRows::pitch`] elements apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PadRows {
    pub rows: u32,
    pub cols: u32,
    pub bytes: u32,
}

impl Problem for PadRows {
    /// `(src, dst, rows, cols, bytes)`: the dense source, and the copy (16-byte aligned).
    type Args = (*const u8, *mut u32, u32, u32, u32);
}

impl PadRows {
    /// Elements from one copied row to the next: the row rounded up to 16 bytes.
    pub const fn pitch(&self) -> u32 {
        self.cols.next_multiple_of(16 / self.bytes)
    }

    /// 16-byte chunks of the copy: a thread each.
    pub const fn chunks(&self) -> u32 {
        self.rows * (self.pitch() * self.bytes / 16)
    }

    /// A copy whose every index fits the kernel's 32-bit arithmetic, of 2- or 4-byte elements.
    #[cfg(not(target_arch = "nvptx64"))]
    pub fn new(rows: usize, cols: usize, bytes: usize) -> Result<Self, ptxkit::InvalidSize> {
        let invalid = |reason: String| ptxkit::InvalidSize {
            problem: "pad_rows",
            reason,
        };
        if !matches!(bytes, 2 | 4) {
            return Err(invalid(format!(
                "elements of {bytes} bytes: the copy takes 2 (bf16) or 4 (f32)"
            )));
        }
        if rows == 0 || cols == 0 {
            return Err(invalid(format!(
                "{rows} rows of {cols} elements: both must be at least 1"
            )));
        }
        let pitch = cols.next_multiple_of(16 / bytes);
        let words = rows.checked_mul(pitch).and_then(|e| e.checked_mul(bytes));
        if words.is_none_or(|b| b / 16 + THREADS as usize >= 1 << 32 || b / bytes >= 1 << 32) {
            return Err(invalid(format!(
                "{rows} rows of {cols} elements: the copy must hold fewer than 2^32 elements"
            )));
        }
        Ok(PadRows {
            rows: rows as u32,
            cols: cols as u32,
            bytes: bytes as u32,
        })
    }
}

/// Threads per block.
pub const THREADS: u32 = 256;

/// Thread `i` of the grid's chunk of the copy: `dst`'s 16 bytes at element `16 / BYTES · i` of
/// the padded rows, from the dense `rows` × `cols` `src` (element `index` read by
/// `element(index)`), zeros past `cols`.
///
/// # Safety
/// `element` reads inside a source of rows · cols elements; `dst` holds rows · pitch elements,
/// 16-byte aligned; the grid is [`KERNEL`]'s.
#[inline(always)]
unsafe fn pad<const BYTES: u32>(element: impl Fn(u32) -> u32, dst: *mut u32, (rows, cols): (u32, u32)) {
    let per_chunk = 16 / BYTES;
    let pitch = cols.next_multiple_of(per_chunk);
    let chunks = pitch / per_chunk;
    let i = block_idx().x * THREADS + thread_idx().x;
    let (row, first) = (i / chunks, (i % chunks) * per_chunk);
    if row >= rows {
        return;
    }
    let at = |c: u32| if c < cols { element(row * cols + c) } else { 0 };
    let words: [u32; 4] = core::array::from_fn(|w| {
        let w = w as u32;
        if BYTES == 2 {
            at(first + 2 * w) | (at(first + 2 * w + 1) << 16)
        } else {
            at(first + w)
        }
    });
    // SAFETY: the chunk lies inside `dst`'s row `row` (first + per_chunk ≤ pitch), 16-byte aligned
    // (dst is, and rows are pitch · BYTES bytes apart, a multiple of 16).
    let to = dst.wrapping_add(((row * pitch + first) * BYTES / 4) as usize);
    unsafe { store4(to.cast(), Float4(words.map(f32::from_bits))) };
}

kernel! {
    /// The row-padded copy of a dense `rows` × `cols` matrix of `bytes`-byte elements (2: bf16, 4:
    /// f32) into rows 16-byte aligned (see the module).
    pub unsafe fn pad_rows(src: *const u8, dst: *mut u32, rows: u32, cols: u32, bytes: u32) {
        // SAFETY (both): the kernel's contract ([`pad`]'s); every index read is below rows · cols.
        if bytes == 2 {
            unsafe { pad::<2>(|i| u32::from(global_load(src.cast::<u16>().wrapping_add(i as usize))), dst, (rows, cols)) }
        } else {
            unsafe { pad::<4>(|i| global_load(src.cast::<u32>().wrapping_add(i as usize)), dst, (rows, cols)) }
        }
    }
}

/// [`THREADS`] threads per block, a thread per 16-byte chunk of the copy.
pub const KERNEL: Kernel<PadRows> = Kernel {
    code: pad_rows,
    block: Dim3::x(THREADS),
    shared: SharedMemory::NONE,
    grid: |p, _| Dim3::x(p.chunks().div_ceil(THREADS)),
};

/// The family: one kernel.
pub const FAMILY: Family<PadRows> = Family::new("pad_rows", &[KERNEL]);

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy)]
    #[repr(C, align(16))]
    struct Chunk([u32; 4]);

    /// Copies a labelled rows × cols matrix into rows `pitch` apart, the destination poisoned: each
    /// row's elements exact, its padding zero, nothing past the copy touched.
    fn check(bytes: u32, (rows, cols): (u32, u32), offset: usize) {
        let per_chunk = 16 / bytes;
        let pitch = cols.next_multiple_of(per_chunk);
        let label = |i: u32| i.wrapping_mul(2_654_435_761) >> (32 - 8 * bytes) | 1;
        // The source starts `offset` elements into its allocation: any alignment of its element.
        let len = (rows * cols) as usize;
        let (source16, source32): (Vec<u16>, Vec<u32>) = (
            (0..offset + len).map(|i| label(i as u32) as u16).collect(),
            (0..offset + len).map(|i| label(i as u32)).collect(),
        );
        let words = (rows * pitch * bytes / 4) as usize;
        let poison = 0xdead_beef;
        let mut dst = vec![Chunk([poison; 4]); words.div_ceil(4) + 1];
        let out = dst.as_mut_ptr().cast::<u32>();
        let problem = PadRows::new(rows as usize, cols as usize, bytes as usize).unwrap();
        assert_eq!(problem.pitch(), pitch);
        let shape = KERNEL.launch_shape(&problem, ptxkit::Occupancy::ONE);
        let src = match bytes {
            2 => source16[offset..].as_ptr().cast::<u8>(),
            _ => source32[offset..].as_ptr().cast::<u8>(),
        };
        // SAFETY: the source holds rows · cols elements, dst rows · pitch and more.
        unsafe { pad_rows.emulate(&shape, (src, out, rows, cols, bytes)) }.unwrap();
        let copied = unsafe { core::slice::from_raw_parts(out, dst.len() * 4) };
        let element = |e: usize| -> u32 {
            match bytes {
                2 => (copied[e / 2] >> (16 * (e % 2))) & 0xffff,
                _ => copied[e],
            }
        };
        for row in 0..rows {
            for c in 0..pitch {
                let e = (row * pitch + c) as usize;
                let want = if c < cols {
                    let i = offset as u32 + row * cols + c;
                    if bytes == 2 { label(i) & 0xffff } else { label(i) }
                } else {
                    0
                };
                assert_eq!(
                    element(e),
                    want,
                    "{bytes}-byte {rows}×{cols} at +{offset}: row {row} column {c}"
                );
            }
        }
        assert!(
            copied[words..].iter().all(|&w| w == poison),
            "{bytes}-byte {rows}×{cols}: past the copy"
        );
    }

    /// Odd and even widths, one row and several, sources at every alignment of their elements.
    #[test]
    fn every_row_lands_whole_and_padded_with_zeros() {
        assert!(PadRows::new(3, 7, 8).is_err() && PadRows::new(0, 7, 2).is_err());
        assert!(PadRows::new(1 << 20, 1 << 13, 2).is_err(), "2^33 elements");
        for bytes in [2, 4] {
            for (rows, cols) in [(1, 1), (3, 7), (5, 8), (2, 9), (7, 33), (4, 257), (3, 1027)] {
                for offset in 0..3 {
                    check(bytes, (rows, cols), offset);
                }
            }
        }
    }
}
