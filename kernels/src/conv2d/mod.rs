//! 2D convolution of an f32 image with an odd square filter (3×3, 5×5, 7×7), zero padding, output
//! the image's size: `out[y][x] = Σ w[i][j] · in[y + i - r][x + j - r]` over i, j in 0..2r+1
//! (cross-correlation, as PyTorch's `conv2d` computes it). One idea per file:
//!
//! * [`direct`]: one thread per output, image and filter read from global memory (through L1);
//! * [`tiled`]: the block's input tile with its halo, and the filter, staged in shared memory;
//! * [`blocked`]: the same tile, each thread computing a column of 8 outputs with the filter in
//!   registers and each input row it loads used by every output it touches (register blocking);
//! * [`rolling`]: each warp walks down a band, input rows travelling into a ring in shared memory
//!   (`cp.async`) rows ahead of use, the open output rows in registers.
//!
//! The radius is a run-time value but each kernel dispatches to a body compiled for it, so that
//! every loop over the filter is unrolled.

/// Calls `$body::<R>(...)` for the run-time radius `$radius` (1, 2 or 3): the loops over the
/// filter are then unrolled at compile time. (Defined before the submodules: they see it in
/// textual scope.)
macro_rules! with_radius {
    ($radius:expr, $body:ident $(::<$($generic:tt),*>)? ($($arg:expr),* $(,)?)) => {
        match $radius {
            1 => $body::<$($($generic,)*)? 1>($($arg),*),
            2 => $body::<$($($generic,)*)? 2>($($arg),*),
            _ => $body::<$($($generic,)*)? 3>($($arg),*),
        }
    };
}

pub mod blocked;
pub mod direct;
pub mod rolling;
pub mod tiled;

use ptxkit::device::{GlobalSlice, GlobalSliceMut};
use ptxkit::{Family, Problem};

/// Largest filter radius: 7×7 filters.
pub const MAX_RADIUS: u32 = 3;

/// One convolution: a `height × width` image and a `(2·radius + 1)²` filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv2d {
    pub height: u32,
    pub width: u32,
    pub radius: u32,
}

impl Problem for Conv2d {
    /// `(image, filter, output, height, width, radius)`: views of the height × width image and
    /// output and of the (2·radius + 1)² filter.
    type Args = (GlobalSlice<f32>, GlobalSlice<f32>, GlobalSliceMut<f32>, u32, u32, u32);
}

/// Every convolution kernel, in ladder order: the registry's list.
pub const FAMILY: Family<Conv2d> = Family::new(
    "conv2d",
    &[
        direct::KERNEL,
        tiled::KERNEL,
        blocked::KERNEL_V4,
        blocked::KERNEL_V8,
        rolling::KERNEL_V4,
        rolling::KERNEL_V8,
    ],
);

#[cfg(not(target_arch = "nvptx64"))]
impl Conv2d {
    /// At least one row and column, a 3×3, 5×5 or 7×7 filter, and within the 32-bit index range.
    pub fn new(height: usize, width: usize, filter: usize) -> Result<Self, ptxkit::InvalidSize> {
        let invalid = |reason: String| ptxkit::InvalidSize {
            problem: "conv2d",
            reason,
        };
        if height == 0 || width == 0 {
            return Err(invalid(format!(
                "the image must have at least one pixel (got {height} × {width})"
            )));
        }
        if !(filter == 3 || filter == 5 || filter == 7) {
            return Err(invalid(format!(
                "filter = {filter}: the kernels take 3×3, 5×5 and 7×7 filters"
            )));
        }
        if !crate::size::fits_u32_index(height, width) {
            return Err(invalid(format!(
                "{height} × {width} pixels is beyond the kernels' 32-bit index range (at most {})",
                u32::MAX
            )));
        }
        Ok(Conv2d {
            height: height as u32,
            width: width as u32,
            radius: (filter / 2) as u32,
        })
    }

    /// Pixels of the image (and of the output).
    pub fn len(&self) -> usize {
        self.height as usize * self.width as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The filter's side, 2·radius + 1.
    pub fn side(&self) -> usize {
        2 * self.radius as usize + 1
    }
}
