//! Padded tiled transpose: the seed's idea. Each tile row is 33 floats long, so element (r, c) sits
//! on bank (33r + c) mod 32 = (r + c) mod 32: a warp reading a column (32 rows, one column) hits 32
//! different banks instead of one.

use super::tiled::tiled_body;
use super::{ROWS_PER_PASS, TILE, Transpose, grid};
use ptxkit::device::{GlobalSlice, GlobalSliceMut, MatrixLayout, SharedMatrix};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

shared_memory! {
    /// One 32×32 tile of the input, each row padded by one float.
    pub struct PaddedTile {
        pub tile: SharedMatrix<f32> = MatrixLayout::padded(TILE, TILE),
    }
}

kernel! {
    /// The tiled transpose over a padded (32×33) tile.
    pub unsafe fn transpose_padded(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, rows: u32, cols: u32) {
        let PaddedTile { tile } = PaddedTile::carve();
        // SAFETY: forwarded from the kernel's contract; KERNEL launches 32×8 threads.
        unsafe { tiled_body(tile, |_, c| c, input, output, rows, cols) }
    }
}

/// As the tiled kernel, with the padded tile's shared memory.
pub const KERNEL: Kernel<Transpose> = Kernel {
    code: transpose_padded,
    block: Dim3::xy(TILE, ROWS_PER_PASS),
    shared: SharedMemory::of(PaddedTile::BYTES),
    grid: |p, _| grid(p, TILE),
};
