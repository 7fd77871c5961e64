//! Tiled matmul with padded tiles: the tiled algorithm, with each shared tile row one element longer
//! (pitch TILE+1), so that threads walking down a tile column hit 32 different banks.

use super::tiled::{TILE, grid, tiled_body};
use crate::device::MatrixLayout;
use crate::kernel;
use crate::launch::{Dim3, KernelInfo, LaunchShape};

pub const TILE_LAYOUT: MatrixLayout = MatrixLayout::padded(TILE, TILE);

/// One padded tile of A and one of B.
pub const SHARED_BYTES: u32 = 2 * TILE_LAYOUT.bytes::<f32>();

pub const INFO: KernelInfo = KernelInfo {
    entry: "matmul_tiled_padded",
    block: Dim3::xy(TILE, TILE),
    shared_bytes: SHARED_BYTES,
};

pub const fn launch_shape(m: u32, n: u32) -> LaunchShape {
    INFO.over(grid(m, n))
}

kernel! {
    /// `C = A·B` with 32×33 (padded) shared-memory tiles.
    pub unsafe fn matmul_tiled_padded(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        // SAFETY: forwarded from the kernel's contract; INFO launches TILE×TILE threads with
        // SHARED_BYTES of shared memory.
        unsafe { tiled_body(TILE_LAYOUT, a, b, c, m, n, k) }
    }
}
