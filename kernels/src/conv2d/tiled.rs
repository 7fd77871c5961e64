//! Tiled convolution: the block stages its input tile, halo included (zeros outside the image),
//! and the filter in shared memory, meets at a barrier, and each thread computes four outputs
//! from shared memory: each input pixel is read from global memory about once per block instead of
//! once per filter tap.

use super::{Conv2d, MAX_RADIUS};
use ptxkit::device::{
    GlobalSlice, GlobalSliceMut, MatrixLayout, SharedMatrix, SharedSlice, block_idx, fma, sync_threads, thread_idx,
    unrolled,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

/// Output tile side; 32×8 threads, each computing TILE / 8 outputs down a column.
pub const TILE: u32 = 32;
const ROWS_PER_PASS: u32 = 8;
/// The input tile for the largest radius.
const HALO_TILE: u32 = TILE + 2 * MAX_RADIUS;

shared_memory! {
    /// The input tile with its halo (sized for 7×7 filters), and the filter.
    pub struct Staged {
        pub input: SharedMatrix<f32> = MatrixLayout::dense(HALO_TILE, HALO_TILE),
        pub weights: SharedSlice<f32> = (2 * MAX_RADIUS + 1) * (2 * MAX_RADIUS + 1),
    }
}

/// The block's 32×32 outputs for radius R: thread (x, y) computes rows y + 8j of column x.
///
/// # Safety
/// The arrays hold what the problem needs; the block is 32×8 threads; R ≤ MAX_RADIUS.
#[inline(always)]
unsafe fn tile_body<const R: u32>(
    staged: Staged,
    image: GlobalSlice<f32>,
    filter: GlobalSlice<f32>,
    output: GlobalSliceMut<f32>,
    height: u32,
    width: u32,
) {
    let Staged { input, weights } = staged;
    let (tx, ty) = (thread_idx().x, thread_idx().y);
    let t = ty * TILE + tx;
    let (side, wide) = (2 * R + 1, TILE + 2 * R);
    let (y0, x0) = (block_idx().y * TILE, block_idx().x * TILE);
    // The tile covers image rows y0 - R .. y0 + 32 + R, columns likewise; zeros outside.
    let mut i = t;
    while i < wide * wide {
        let (r, c) = (i / wide, i % wide);
        let (row, col) = ((y0 + r).wrapping_sub(R), (x0 + c).wrapping_sub(R));
        // Below zero wraps to a huge value: one unsigned compare covers both edges.
        let value = if row < height && col < width {
            // SAFETY: inside the image.
            unsafe { image.get_unchecked(row * width + col) }
        } else {
            0.0
        };
        // SAFETY: r, c < wide ≤ HALO_TILE.
        unsafe { input.set_unchecked(r, c, value) };
        i += TILE * ROWS_PER_PASS;
    }
    if t < side * side {
        // SAFETY: the filter has side² values; t < side² ≤ the slice's length.
        unsafe { weights.set_unchecked(t, filter.get_unchecked(t)) };
    }
    // Every pixel of the tile and every weight is staged before any thread reads them.
    sync_threads();
    for pass in 0..TILE / ROWS_PER_PASS {
        let r = ty + pass * ROWS_PER_PASS;
        let (y, x) = (y0 + r, x0 + tx);
        let mut sum = 0.0f32;
        // Written out as in `direct`.
        unrolled::<7>(|i| {
            unrolled::<7>(|j| {
                if i < side && j < side {
                    // SAFETY: r + i < 32 + 2R and tx + j likewise; i·side + j < side².
                    unsafe {
                        sum = fma(
                            weights.get_unchecked(i * side + j),
                            input.get_unchecked(r + i, tx + j),
                            sum,
                        )
                    };
                }
            })
        });
        if y < height && x < width {
            // SAFETY: inside the output.
            unsafe { output.set_unchecked(y * width + x, sum) };
        }
    }
}

kernel! {
    /// The tiled convolution: 32×32 outputs per block.
    pub unsafe fn conv2d_tiled(image: GlobalSlice<f32>, filter: GlobalSlice<f32>, output: GlobalSliceMut<f32>, height: u32, width: u32, radius: u32) {
        let staged = Staged::carve();
        // SAFETY: forwarded from the kernel's contract; KERNEL launches 32×8 threads; radius ≤ 3.
        unsafe { with_radius!(radius, tile_body(staged, image, filter, output, height, width)) }
    }
}

/// 32×8 threads, one 32×32 output tile per block.
pub const KERNEL: Kernel<Conv2d> = Kernel {
    code: conv2d_tiled,
    block: Dim3::xy(TILE, ROWS_PER_PASS),
    shared: SharedMemory::of(Staged::BYTES),
    grid: |p, _| Dim3::xy(p.width.div_ceil(TILE), p.height.div_ceil(TILE)),
};
