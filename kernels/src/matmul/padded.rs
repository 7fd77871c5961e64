//! Tiled matmul with padded tiles: the tiled algorithm, with each shared tile row one element longer
//! (pitch TILE+1), so that threads walking down a tile column hit 32 different banks.

use super::Matmul;
use super::tiled::{TILE, grid, tiled_body};
use ptxkit::device::{MatrixLayout, SharedMatrix};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

shared_memory! {
    /// One 32×33 tile of A and one of B: each row padded by one float.
    pub struct PaddedTiles {
        pub a: SharedMatrix<f32> = MatrixLayout::padded(TILE, TILE),
        pub b: SharedMatrix<f32> = MatrixLayout::padded(TILE, TILE),
    }
}

kernel! {
    /// `C = A·B` with 32×33 (padded) shared-memory tiles.
    pub unsafe fn matmul_tiled_padded(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, _arrivals: *mut u32) {
        let PaddedTiles { a: a_tile, b: b_tile } = PaddedTiles::carve();
        // SAFETY: forwarded from the kernel's contract; KERNEL launches TILE×TILE threads.
        unsafe { tiled_body(a_tile, b_tile, a, b, c, m, n, k) }
    }
}

/// As the tiled kernel, with the padded tiles' shared memory.
pub const KERNEL: Kernel<Matmul> = Kernel {
    code: matmul_tiled_padded,
    block: Dim3::xy(TILE, TILE),
    shared: SharedMemory::of(PaddedTiles::BYTES),
    grid,
};
