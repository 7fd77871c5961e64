//! Direct convolution: one thread per output pixel, every image and filter value read from global
//! memory. Neighbouring threads read overlapping windows, which the L1 cache catches in part.

use super::Conv2d;
use ptxkit::device::{GlobalSlice, GlobalSliceMut, block_dim, block_idx, fma, thread_idx, unrolled};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};

/// 32×8 threads per block.
pub const BLOCK: Dim3 = Dim3::xy(32, 8);

/// Output pixel (y, x) for a filter of radius R.
///
/// # Safety
/// `image` and `output` hold height × width values, `filter` (2R+1)²; y < height, x < width.
#[inline(always)]
unsafe fn pixel<const R: u32>(
    image: GlobalSlice<f32>,
    filter: GlobalSlice<f32>,
    (height, width): (u32, u32),
    (y, x): (u32, u32),
) -> f32 {
    let side = 2 * R + 1;
    let mut sum = 0.0f32;
    // Written out for the largest filter, with tests on constants that fold away (`unrolled`):
    // LLVM leaves loops with early exits rolled, where nvcc's `#pragma unroll` does not.
    unrolled::<7>(|i| {
        // The window's row is y + i - R: outside the image (zero padding) when below R or past
        // height + R - 1; compared unsigned, shifted by R.
        let row = y + i;
        if i >= side || row < R || row >= height + R {
            return;
        }
        unrolled::<7>(|j| {
            let col = x + j;
            if j >= side || col < R || col >= width + R {
                return;
            }
            // SAFETY: (row - R, col - R) is inside the image; i, j < side.
            let (value, weight) = unsafe {
                (
                    image.get_unchecked((row - R) * width + col - R),
                    filter.get_unchecked(i * side + j),
                )
            };
            sum = fma(weight, value, sum);
        });
    });
    sum
}

kernel! {
    /// `output[y][x]` for thread (x, y) of the grid.
    pub unsafe fn conv2d_direct(image: GlobalSlice<f32>, filter: GlobalSlice<f32>, output: GlobalSliceMut<f32>, height: u32, width: u32, radius: u32) {
        let x = block_idx().x * block_dim().x + thread_idx().x;
        let y = block_idx().y * block_dim().y + thread_idx().y;
        if y < height && x < width {
            // SAFETY: y < height, x < width; the caller gives the arrays the problem needs.
            let sum = unsafe { with_radius!(radius, pixel(image, filter, (height, width), (y, x))) };
            // SAFETY: as above.
            unsafe { output.set_unchecked(y * width + x, sum) };
        }
    }
}

/// One thread per output pixel.
pub const KERNEL: Kernel<Conv2d> = Kernel {
    code: conv2d_direct,
    block: BLOCK,
    shared: SharedMemory::NONE,
    grid: |p, _| Dim3::xy(p.width.div_ceil(BLOCK.x), p.height.div_ceil(BLOCK.y)),
};
