//! Histogram of n bytes into 256 bins: where atomics meet contention, one idea per file.
//!
//! * [`global`]: every element an atomic add on the bin in global memory: simple, and on data with
//!   one frequent value every SM waits on the same address in the L2;
//! * [`shared`]: the bins privatised per block in shared memory (shared-memory atomics, on chip),
//!   merged into the global bins once per block at the end;
//! * [`vectorized`]: the bins privatised per warp (eight copies per block, so the warps of a block
//!   do not contend with each other), the input read 16 bytes per load;
//! * [`aggregated`]: the same, with the lanes of a warp holding the same byte found by
//!   `match_any` and counted by one atomic: contention within a warp gone too.
//!
//! Every kernel adds its counts to `bins`, which must be zero before the launch; counts are exact,
//! whatever the order of the atomics.
//!
//! A new variant is a file here, its line in [`FAMILY`], and its CUDA C twin in `benches/reference/cuda_c/`.

pub mod aggregated;
pub mod global;
pub mod shared;
pub mod vectorized;

use ptxkit::Dim3;
use ptxkit::device::{GlobalSlice, GlobalSliceMut};
use ptxkit::{Family, Problem};

/// Bins: one per byte value.
pub const BINS: u32 = 256;
/// Threads per block, for every variant (one per bin when merging).
pub const THREADS: u32 = 256;

/// A histogram of `n` bytes. `resident_blocks`: the most blocks the grid-stride kernels launch
/// (the blocks the device keeps resident at once, chosen by the host).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Histogram {
    pub n: u32,
    pub resident_blocks: u32,
}

impl Problem for Histogram {
    /// `(input, bins, n)`: views of the n bytes in and of the [`BINS`] counts out (zero before
    /// the launch).
    type Args = (GlobalSlice<u8>, GlobalSliceMut<u32>, u32);
}

/// Every histogram kernel, in ladder order: the registry's list.
pub const FAMILY: Family<Histogram> = Family::new(
    "histogram",
    &[global::KERNEL, shared::KERNEL, vectorized::KERNEL, aggregated::KERNEL],
);

/// Blocks for a grid-stride walk of `per_block` elements per block per step: enough for one step,
/// at most the resident blocks.
pub(crate) const fn grid(p: &Histogram, per_block: u32) -> Dim3 {
    stride_grid(p.n, p.resident_blocks, per_block)
}

/// Blocks for a grid-stride walk over `n` elements, `per_block` per block per step: enough for one
/// step, at most `resident_blocks` (shared by both histogram families).
pub(crate) const fn stride_grid(n: u32, resident_blocks: u32, per_block: u32) -> Dim3 {
    let wanted = n.div_ceil(per_block);
    Dim3::x(if wanted < resident_blocks {
        wanted
    } else {
        resident_blocks
    })
}

#[cfg(not(target_arch = "nvptx64"))]
impl Histogram {
    /// At least one byte, at most u32::MAX; at least one resident block.
    pub fn new(n: usize, resident_blocks: u32) -> Result<Self, ptxkit::InvalidSize> {
        Ok(Histogram {
            n: crate::size::element_count("histogram", "n", n)?,
            resident_blocks: resident_blocks.clamp(1, 1 << 16),
        })
    }
}
