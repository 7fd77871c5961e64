//! Out-of-place transpose of a row-major `rows × cols` f32 matrix into `cols × rows`, any shape:
//! one idea per file, from the seed's claim that padding a tile removes its bank conflicts.
//!
//! * [`naive`]: reads coalesced, writes a column at a time (each warp's store touches 32 lines);
//! * [`tiled`]: a 32×32 tile staged in shared memory, so that reads and writes are both
//!   coalesced, but the tile is read down a column: 32 threads on one bank;
//! * [`padded`]: the tile's rows padded to 33 floats: the column read hits 32 banks;
//! * [`swizzled`]: the dense tile with each row's columns XOR-ed with the row: 32 banks too, and
//!   not a byte of padding;
//! * [`vectorized`]: 64×64 tiles, 16-byte global loads and stores where the shape allows, 16
//!   elements per thread; two tile sizes, one of which the host chooses from the device;
//! * [`peeled`]: the 64×64 tile with 16-byte accesses on any shape, each row read and written as
//!   the aligned chunks that cover it wherever it starts (rows and cols not multiples of 4);
//! * [`skewed`]: the peeled tile, each block's part of an output row starting at a 16-byte
//!   boundary, so that no block shares a chunk with its neighbour and none writes a float alone.
//!
//! A new variant is a file here, its line in [`FAMILY`], and its CUDA C twin in `benches/reference/cuda_c/`.

pub mod naive;
pub mod padded;
pub mod peeled;
pub mod skewed;
pub mod swizzled;
pub mod tiled;
pub mod vectorized;

use ptxkit::Dim3;
use ptxkit::device::{GlobalSlice, GlobalSliceMut};
use ptxkit::{Family, Problem};

/// One transpose: the input is `rows × cols`, the output `cols × rows`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transpose {
    pub rows: u32,
    pub cols: u32,
}

impl Problem for Transpose {
    /// `(input, output, rows, cols)`: views of the rows × cols input and the cols × rows output.
    type Args = (GlobalSlice<f32>, GlobalSliceMut<f32>, u32, u32);
}

/// Every transpose kernel, in ladder order: the registry's list.
pub const FAMILY: Family<Transpose> = Family::new(
    "transpose",
    &[
        naive::KERNEL,
        tiled::KERNEL,
        padded::KERNEL,
        swizzled::KERNEL,
        vectorized::KERNEL_32,
        vectorized::KERNEL_64,
        peeled::KERNEL,
        skewed::KERNEL,
    ],
);

/// Side of the tile the 32×8-thread variants move per block; each thread moves TILE / ROWS_PER_PASS.
pub const TILE: u32 = 32;
/// Rows of the tile a block covers per pass (its y extent).
pub const ROWS_PER_PASS: u32 = 8;

/// How far `ptr` + `offset` floats lies past a 16-byte boundary, in floats (an offset that wrapped
/// below zero gives the right answer too: only its low bits count).
#[inline(always)]
pub(crate) fn misalignment(ptr: *const f32, offset: u32) -> u32 {
    ((ptr as usize >> 2) as u32).wrapping_add(offset) & 3
}

/// One block per `tile × tile` tile of the input.
pub(crate) const fn grid(p: &Transpose, tile: u32) -> Dim3 {
    Dim3::xy(p.cols.div_ceil(tile), p.rows.div_ceil(tile))
}

#[cfg(not(target_arch = "nvptx64"))]
impl Transpose {
    /// At least one row and column, and within the kernels' 32-bit index range.
    pub fn new(rows: usize, cols: usize) -> Result<Self, ptxkit::InvalidSize> {
        let (rows, cols) = crate::size::rows_and_cols("transpose", rows, cols)?;
        Ok(Transpose { rows, cols })
    }

    /// Elements of the input (and of the output).
    pub fn len(&self) -> usize {
        self.rows as usize * self.cols as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::{Transpose, peeled, skewed};
    use crate::testing::{at_offset, poisoned};
    use ptxkit::device::{GlobalSlice, GlobalSliceMut};

    /// The kernels that read and write 16-byte chunks wherever a row starts take the offset of
    /// the arrays themselves into account too: every pair of base offsets (0–3 floats past a
    /// 16-byte boundary), at a shape with interior and edge blocks and rows of every offset.
    #[test]
    fn the_chunked_transposes_are_exact_at_every_base_offset() {
        let (rows, cols) = (203usize, 134usize);
        let problem = Transpose::new(rows, cols).unwrap();
        let len = rows * cols;
        let source: Vec<f32> = (0..len).map(|i| (i as f32 * 0.37).sin() + i as f32).collect();
        for kernel in [peeled::KERNEL, skewed::KERNEL] {
            for input_offset in 0..4 {
                for output_offset in 0..4 {
                    let (input, at) = at_offset(&source, input_offset);
                    let input = &input[at];
                    let (mut output, at) = at_offset(&poisoned(len), output_offset);
                    let output = &mut output[at];
                    let args = (
                        GlobalSlice::new(input),
                        GlobalSliceMut::new(output),
                        problem.rows,
                        problem.cols,
                    );
                    // SAFETY: both slices hold rows × cols floats.
                    unsafe {
                        kernel
                            .code
                            .emulate(&kernel.launch_shape(&problem, ptxkit::Occupancy::EMULATOR), args)
                    }
                    .unwrap();
                    for (i, &value) in output.iter().enumerate() {
                        let expected = crate::reference::transpose_at(input, rows, cols, i).0;
                        assert_eq!(
                            value as f64,
                            expected,
                            "{} at offsets {input_offset}/{output_offset}, element {i}",
                            kernel.entry()
                        );
                    }
                }
            }
        }
    }
}
