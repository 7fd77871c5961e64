//! Histogram of n f32 into 256 equal bins over a range [lo, hi) (values outside it, NaN included,
//! are not counted), the privatisation ladder of [`crate::histogram`] on real-valued samples:
//!
//! * [`global`]: every sample in range an atomic add on its bin in global memory;
//! * [`shared`]: the bins privatised per block in shared memory, merged once per block;
//! * [`warp_bins`]: the bins privatised per warp, the input read 16 bytes (four samples) per load.
//!
//! A sample's bin is `⌊(x − lo) · 256 / (hi − lo)⌋` ([`bin`]), the formula of CUB's
//! `DeviceHistogram::HistogramEven`. Every kernel adds its counts to `bins`, which must be zero
//! before the launch; counts are exact, whatever the order of the atomics.
//!
//! A new variant is a file here, its line in [`FAMILY`], and its CUDA C twin in `benches/reference/cuda_c/`.

pub mod global;
pub mod shared;
pub mod warp_bins;

pub use crate::histogram::{BINS, THREADS};
use ptxkit::Dim3;
use ptxkit::device::{GlobalSlice, GlobalSliceMut};
use ptxkit::{Family, Problem};

/// A histogram of `n` f32. `resident_blocks`: the most blocks the grid-stride kernels launch (the
/// blocks the device keeps resident at once, chosen by the host).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HistogramF32 {
    pub n: u32,
    pub resident_blocks: u32,
}

impl Problem for HistogramF32 {
    /// `(input, bins, n, lo, hi)`: views of the n samples in and of the [`BINS`] counts of the
    /// samples in [lo, hi) out (zero before the launch); lo < hi, both finite.
    type Args = (GlobalSlice<f32>, GlobalSliceMut<u32>, u32, f32, f32);
}

/// Every f32 histogram kernel, in ladder order: the registry's list.
pub const FAMILY: Family<HistogramF32> =
    Family::new("histogram_f32", &[global::KERNEL, shared::KERNEL, warp_bins::KERNEL]);

/// Bins per unit of the range: what [`bin`] multiplies by.
#[inline(always)]
pub fn scale(lo: f32, hi: f32) -> f32 {
    BINS as f32 / (hi - lo)
}

/// The bin of `x` among the [`BINS`] equal bins over [lo, hi) (`scale` from [`scale`]); `None`
/// outside the range. A sample just under `hi` whose product rounds up to 256 goes to the last
/// bin. The host's reference counts with this same function.
#[inline(always)]
pub fn bin(x: f32, lo: f32, hi: f32, scale: f32) -> Option<u32> {
    if x >= lo && x < hi {
        // Clamped in f32 first (NaN becomes 0), so that the conversion is one truncating F2I:
        // `as u32` would add the saturation Rust defines for every float (two compares and two
        // selects per sample in the SASS: docs/perf-log.md, change 18), and this loop is
        // instruction-bound.
        let clamped = ((x - lo) * scale).max(0.0).min((BINS - 1) as f32);
        // SAFETY: clamped is finite and in [0, 255], which u32 represents.
        Some(unsafe { clamped.to_int_unchecked::<u32>() })
    } else {
        None
    }
}

/// Blocks for a grid-stride walk of `per_block` samples per block per step.
pub(crate) const fn grid(p: &HistogramF32, per_block: u32) -> Dim3 {
    crate::histogram::stride_grid(p.n, p.resident_blocks, per_block)
}

#[cfg(not(target_arch = "nvptx64"))]
impl HistogramF32 {
    /// At least one sample, at most u32::MAX; at least one resident block.
    pub fn new(n: usize, resident_blocks: u32) -> Result<Self, ptxkit::InvalidSize> {
        Ok(HistogramF32 {
            n: crate::size::element_count("histogram_f32", "n", n)?,
            resident_blocks: resident_blocks.clamp(1, 1 << 16),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_split_the_range_evenly_and_leave_out_what_is_outside() {
        let s = scale(-1.0, 1.0);
        assert_eq!(bin(-1.0, -1.0, 1.0, s), Some(0));
        assert_eq!(bin(0.0, -1.0, 1.0, s), Some(128));
        assert_eq!(bin(-1.0 + 1.0 / 128.0, -1.0, 1.0, s), Some(1));
        assert_eq!(bin(1.0 - 1.0 / 1024.0, -1.0, 1.0, s), Some(255));
        assert_eq!(bin(1.0, -1.0, 1.0, s), None);
        assert_eq!(bin(-1.0001, -1.0, 1.0, s), None);
        assert_eq!(bin(f32::NAN, -1.0, 1.0, s), None);
        // The largest f32 under 1: x − lo rounds to 2, the product to 256: the last bin.
        assert_eq!(bin(1.0 - f32::EPSILON / 2.0, -1.0, 1.0, s), Some(255));
    }
}
