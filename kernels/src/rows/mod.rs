//! Reductions of each row of a rows × cols f32 matrix: the sum and the maximum per row, the building
//! blocks of softmax and layer norm. Three shapes of the same walk, for long rows, short ones and
//! few ones:
//!
//! * [`block`]: one block of 256 threads per row, each thread a strided share, then the block's
//!   combine (shuffles, then the warps' results through shared memory);
//! * [`warp`]: one warp per row, eight rows per block: no shared memory and no barrier, for rows
//!   too short to keep 256 threads busy;
//! * [`split`]: each row cut into [`RowReduce::splits`] pieces, a block per piece, the pieces'
//!   results combined by the row's last block (a ticket per row): for matrices of fewer rows
//!   than the device keeps blocks resident, where a block per row leaves SMs idle.
//!
//! [`SUM_FAMILY`] and [`MAX_FAMILY`] are the same kernels, combining by addition and by the
//! larger value ([`crate::reduce::Combine`]).

pub mod block;
pub mod split;
pub mod warp;

use ptxkit::device::{GlobalSlice, GlobalSliceMut};
use ptxkit::{Family, Problem};

/// A reduction of each row of a `rows × cols` row-major matrix into `output[row]`.
/// `resident_blocks` is what the device keeps resident at once (SMs × blocks per SM), chosen by
/// the host: [`split`] cuts rows until the grid fills that many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowReduce {
    pub rows: u32,
    pub cols: u32,
    pub resident_blocks: u32,
}

impl Problem for RowReduce {
    /// `(input, output, partials, tickets, rows, cols)`: views of the rows × cols input, of the
    /// rows results, of [`RowReduce::partials_len`] floats for the pieces' results and of
    /// [`RowReduce::tickets_len`] u32 that are zero before the launch and after it (only
    /// [`split`] uses the last two).
    type Args = (
        GlobalSlice<f32>,
        GlobalSliceMut<f32>,
        GlobalSliceMut<f32>,
        GlobalSliceMut<u32>,
        u32,
        u32,
    );
}

/// Elements of a row the [`split`] kernel gives a block at least: fewer would cost more in the
/// pieces' combining than they save.
pub const MIN_PIECE: u32 = 2048;

impl RowReduce {
    /// Pieces [`split`] cuts each row into: enough for rows × pieces to reach the resident
    /// blocks, none shorter than [`MIN_PIECE`]; 1 where the rows alone fill the device.
    pub const fn splits(&self) -> u32 {
        if self.rows >= self.resident_blocks {
            return 1;
        }
        let to_fill = self.resident_blocks.div_ceil(self.rows);
        let by_length = self.cols / MIN_PIECE;
        let splits = if to_fill < by_length { to_fill } else { by_length };
        if splits > 1 { splits } else { 1 }
    }

    /// Floats of the `partials` argument: a result per piece where rows are split, else one
    /// (unused).
    pub const fn partials_len(&self) -> usize {
        match self.splits() {
            1 => 1,
            splits => self.rows as usize * splits as usize,
        }
    }

    /// u32 of the `tickets` argument: one per row where rows are split, else one (unused).
    pub const fn tickets_len(&self) -> usize {
        match self.splits() {
            1 => 1,
            _ => self.rows as usize,
        }
    }
}

/// The sum of each row: the registry's list.
pub const SUM_FAMILY: Family<RowReduce> =
    Family::new("row_sum", &[block::SUM_KERNEL, warp::SUM_KERNEL, split::SUM_KERNEL]);

/// The maximum of each row: the registry's list.
pub const MAX_FAMILY: Family<RowReduce> =
    Family::new("row_max", &[block::MAX_KERNEL, warp::MAX_KERNEL, split::MAX_KERNEL]);

#[cfg(not(target_arch = "nvptx64"))]
impl RowReduce {
    /// At least one row and column, within the kernels' 32-bit indices; at least one resident
    /// block.
    pub fn new(rows: usize, cols: usize, resident_blocks: u32) -> Result<Self, ptxkit::InvalidSize> {
        let (rows, cols) = crate::size::rows_and_cols("row reduction", rows, cols)?;
        Ok(RowReduce {
            rows,
            cols,
            resident_blocks: resident_blocks.clamp(1, 1 << 16),
        })
    }

    pub fn len(&self) -> usize {
        self.rows as usize * self.cols as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
