//! Swizzled tiled transpose: the dense 32×32 tile, with element (r, c) stored in column c ⊕ r.
//! Along a row the XOR is a permutation (each row still holds its 32 elements); down a column the
//! 32 rows give 32 different stored columns, so 32 different banks, and no padding is wasted.

use super::tiled::{Tile, tiled_body};
use super::{ROWS_PER_PASS, TILE, Transpose, grid};
use ptxkit::device::{GlobalSlice, GlobalSliceMut};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};

kernel! {
    /// The tiled transpose over a dense tile with XOR-swizzled columns.
    pub unsafe fn transpose_swizzled(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, rows: u32, cols: u32) {
        let Tile { tile } = Tile::carve();
        // SAFETY: forwarded from the kernel's contract; KERNEL launches 32×8 threads; c ^ r < 32
        // for r, c < 32.
        unsafe { tiled_body(tile, |r, c| c ^ r, input, output, rows, cols) }
    }
}

/// As the tiled kernel: same tile, same shared memory.
pub const KERNEL: Kernel<Transpose> = Kernel {
    code: transpose_swizzled,
    block: Dim3::xy(TILE, ROWS_PER_PASS),
    shared: SharedMemory::of(Tile::BYTES),
    grid: |p, _| grid(p, TILE),
};
