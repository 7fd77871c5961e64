//! Reductions of each row of a rows × cols f32 matrix: the sum and the maximum per row, the building
//! blocks of softmax and layer norm. Two shapes of the same walk, for long rows and short ones:
//!
//! * [`block`]: one block of 256 threads per row, each thread a strided share, then the block's
//!   combine (shuffles, then the warps' results through shared memory);
//! * [`warp`]: one warp per row, eight rows per block: no shared memory and no barrier, for rows
//!   too short to keep 256 threads busy.
//!
//! [`SUM_FAMILY`] and [`MAX_FAMILY`] are the same two kernels, combining by addition and by the
//! larger value ([`crate::reduce::Combine`]).

pub mod block;
pub mod warp;

use ptxkit::device::{GlobalSlice, GlobalSliceMut};
use ptxkit::{Family, Problem};

/// A reduction of each row of a `rows × cols` row-major matrix into `output[row]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowReduce {
    pub rows: u32,
    pub cols: u32,
}

impl Problem for RowReduce {
    /// `(input, output, rows, cols)`: views of the rows × cols input and of the rows results.
    type Args = (GlobalSlice<f32>, GlobalSliceMut<f32>, u32, u32);
}

/// The sum of each row: the registry's list.
pub const SUM_FAMILY: Family<RowReduce> = Family::new("row_sum", &[block::SUM_KERNEL, warp::SUM_KERNEL]);

/// The maximum of each row: the registry's list.
pub const MAX_FAMILY: Family<RowReduce> = Family::new("row_max", &[block::MAX_KERNEL, warp::MAX_KERNEL]);

#[cfg(not(target_arch = "nvptx64"))]
impl RowReduce {
    /// At least one row and column, within the kernels' 32-bit indices.
    pub fn new(rows: usize, cols: usize) -> Result<Self, ptxkit::InvalidSize> {
        let (rows, cols) = crate::size::rows_and_cols("row reduction", rows, cols)?;
        Ok(RowReduce { rows, cols })
    }

    pub fn len(&self) -> usize {
        self.rows as usize * self.cols as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
