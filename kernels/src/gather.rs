//! Gather: `output[i] = source[index[i]]`, the read pattern of an embedding lookup or PyTorch's
//! `index_select`, and of a kernel that touches only some pages of a large array (`host managed
//! partial`). One thread per output; an index past the source gives NaN rather than a read out of
//! bounds, so any index array is safe to launch with.

use ptxkit::device::{GlobalSlice, GlobalSliceMut, block_dim, block_idx, thread_idx};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};
use ptxkit::{Family, Problem};

/// `n` outputs gathered by `n` indices from a source of `len` elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gather {
    pub n: u32,
    pub len: u32,
}

impl Problem for Gather {
    /// `(source, index, output, n, len)`: views of the len source elements, the n indices and
    /// the n outputs.
    type Args = (GlobalSlice<f32>, GlobalSlice<u32>, GlobalSliceMut<f32>, u32, u32);
}

/// Threads per block.
pub const BLOCK: u32 = 256;

kernel! {
    /// `output[i] = source[index[i]]` for thread i of the grid; NaN where `index[i] ≥ len`.
    pub unsafe fn gather(source: GlobalSlice<f32>, index: GlobalSlice<u32>, output: GlobalSliceMut<f32>, n: u32, len: u32) {
        let i = block_idx().x * block_dim().x + thread_idx().x;
        if i < n {
            // SAFETY: i < n, inside the index and output arrays (the kernel's contract).
            let at = unsafe { index.get_unchecked(i) };
            // SAFETY: at < len, inside the source.
            let value = if at < len { unsafe { source.get_unchecked(at) } } else { f32::NAN };
            // SAFETY: as above.
            unsafe { output.set_unchecked(i, value) };
        }
    }
}

/// One thread per output, 256 per block.
pub const KERNEL: Kernel<Gather> = Kernel {
    code: gather,
    block: Dim3::x(BLOCK),
    shared: SharedMemory::NONE,
    grid: |p, _| Dim3::x(p.n.div_ceil(BLOCK)),
};

/// The registry's list.
pub const FAMILY: Family<Gather> = Family::new("gather", &[KERNEL]);

#[cfg(not(target_arch = "nvptx64"))]
impl Gather {
    /// At least one output and one source element, each within the kernels' 32-bit index range.
    pub fn new(n: usize, len: usize) -> Result<Self, ptxkit::InvalidSize> {
        Ok(Gather {
            n: crate::size::element_count("gather", "n", n)?,
            len: crate::size::element_count("gather", "len", len)?,
        })
    }

    /// The element `index` gathers from `source`: NaN past its end.
    pub fn expected(source: &[f32], index: u32) -> f32 {
        source.get(index as usize).copied().unwrap_or(f32::NAN)
    }
}
