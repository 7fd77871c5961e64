//! Copies of matrices with their rows padded, for the TMA kernels: a tensor map needs a 16-byte
//! aligned start and rows a multiple of 16 bytes apart, which a matrix of odd width (an LM head's
//! 50257 columns of bf16) or a view starting mid-row does not have. [`Gpu::padded_copies`] copies
//! such matrices into scratch, each row starting 16-byte aligned, on the launch stream before the
//! launch that reads them, in the stream's scratch ([`crate::scratch`]), whose address, and the
//! tensor maps encoding it, stay the same from call to call.

use crate::error::{Doing, Result};
use crate::gpu::Gpu;
use crate::scratch::ScratchHold;
use cudarc::driver::sys::{self, CUmemorytype};

/// A row-major matrix in device memory: `rows` rows of `row_bytes` bytes, `pitch` bytes apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pitched {
    pub address: u64,
    pub rows: u64,
    pub row_bytes: u64,
    pub pitch: u64,
}

/// The alignment TMA asks of a matrix's start and of the distance between its rows.
pub const TMA_ALIGNMENT: u64 = 16;

impl Pitched {
    /// A dense matrix: rows one after another.
    pub fn dense(address: u64, rows: u64, row_bytes: u64) -> Pitched {
        Pitched {
            address,
            rows,
            row_bytes,
            pitch: row_bytes,
        }
    }

    /// Whether TMA can read the matrix where it is.
    pub fn tma_ready(&self) -> bool {
        self.address.is_multiple_of(TMA_ALIGNMENT) && self.pitch.is_multiple_of(TMA_ALIGNMENT)
    }

    /// Bytes of its padded copy.
    fn padded_bytes(&self) -> u64 {
        self.rows * self.row_bytes.next_multiple_of(TMA_ALIGNMENT)
    }
}

/// The padded copies of one launch's matrices ([`Gpu::padded_copies`]). While it lives, no other
/// launch on the stream can take the scratch: drop it once the launch reading the copies is
/// enqueued (a later copy into the scratch is then ordered after that launch).
pub struct PaddedCopies<'g> {
    _hold: ScratchHold<'g>,
    copies: Vec<Pitched>,
}

impl PaddedCopies<'_> {
    /// The matrix where the launch reads it: the `i`-th given, padded.
    pub fn get(&self, i: usize) -> Pitched {
        self.copies[i]
    }
}

impl Gpu {
    /// Copies each of `matrices` into this stream's scratch with rows 16 bytes aligned (the copy
    /// of each row, then its padding, untouched), ordered on the launch stream: a launch enqueued
    /// while the returned value lives reads them after the copies. The scratch grows to the
    /// largest set asked for; before it grows, the stream is waited for (a launch may still read
    /// the old one). The copies are the driver's 2D copies ([`Gpu::copy_rows`]).
    pub fn padded_copies(&self, matrices: &[Pitched]) -> Result<PaddedCopies<'_>> {
        // SAFETY: `from` is one of the caller's matrices and `to` its scratch rows, both of this
        // context's device memory (the contract `padded_copies` inherits from its callers).
        self.padded_copies_by(matrices, |from, to| unsafe { self.copy_rows(from, to) })
    }

    /// As [`Gpu::padded_copies`], each copy enqueued by `copy(from, to)` on the launch stream
    /// (`to` the scratch's rows, 16-byte aligned and `to.pitch` apart, for `from`'s): a kernel of
    /// the caller's, say, where the driver's 2D copy is slow.
    pub fn padded_copies_by(
        &self,
        matrices: &[Pitched],
        mut copy: impl FnMut(Pitched, Pitched) -> Result<()>,
    ) -> Result<PaddedCopies<'_>> {
        let needed: u64 = matrices.iter().map(|m| m.padded_bytes().next_multiple_of(256)).sum();
        let hold = self.hold_scratch(&self.padding, needed, "a TMA kernel's row-padded copies")?;
        let base = hold.address();
        let mut offset = 0;
        let mut copies = Vec::with_capacity(matrices.len());
        for m in matrices {
            let to = Pitched {
                address: base + offset,
                rows: m.rows,
                row_bytes: m.row_bytes,
                pitch: m.row_bytes.next_multiple_of(TMA_ALIGNMENT),
            };
            copy(*m, to)?;
            copies.push(to);
            offset += m.padded_bytes().next_multiple_of(256);
        }
        Ok(PaddedCopies { _hold: hold, copies })
    }
}

impl Gpu {
    /// Enqueues the copy of `from`'s rows into `to`'s on the launch stream (the driver's 2D copy).
    ///
    /// # Safety
    /// Both are device memory of this GPU's context holding their `rows` rows of `row_bytes`
    /// bytes at their pitches, `to`'s as wide as `from`'s, alive until the copy has run.
    pub unsafe fn copy_rows(&self, from: Pitched, to: Pitched) -> Result<()> {
        copy_rows(self.launch_stream(), from, to)
    }
}

/// Enqueues the copy of `from`'s rows into `to`'s on `stream`.
fn copy_rows(stream: sys::CUstream, from: Pitched, to: Pitched) -> Result<()> {
    if from.rows == 0 || from.row_bytes == 0 {
        return Ok(());
    }
    let copy = sys::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: CUmemorytype::CU_MEMORYTYPE_DEVICE,
        srcHost: std::ptr::null(),
        srcDevice: from.address,
        srcArray: std::ptr::null_mut(),
        srcPitch: from.pitch as usize,
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: CUmemorytype::CU_MEMORYTYPE_DEVICE,
        dstHost: std::ptr::null_mut(),
        dstDevice: to.address,
        dstArray: std::ptr::null_mut(),
        dstPitch: to.pitch as usize,
        WidthInBytes: from.row_bytes as usize,
        Height: from.rows as usize,
    };
    // SAFETY: both are device memory of this context holding `rows` rows at their pitches (the
    // caller's matrix, and the scratch sized for it); the copy is ordered on `stream`.
    unsafe { sys::cuMemcpy2DAsync_v2(&copy, stream) }.result().doing(|| {
        format!(
            "copying {} rows of {} bytes into rows {} bytes apart",
            from.rows, from.row_bytes, to.pitch
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_aligned_starts_and_pitches_are_read_in_place_and_copies_pad_each_row() {
        // An LM head's B: 768 rows of 50257 bf16.
        let head = Pitched::dense(0x1000, 768, 2 * 50257);
        assert!(!head.tma_ready());
        assert_eq!(head.padded_bytes(), 768 * 100_528);
        assert!(Pitched::dense(0x1000, 768, 2 * 50264).tma_ready());
        // A view starting mid-row of an aligned matrix.
        assert!(!Pitched::dense(0x1008, 4, 64).tma_ready());
    }
}
