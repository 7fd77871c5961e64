//! The element-wise problem: two inputs and one output of `n` f32 each, one result per element.
//! Its families: [`vec_add`](crate::vec_add) and [`shared_mem_add`](crate::shared_mem_add).

use ptxkit::Problem;
use ptxkit::device::{GlobalSlice, GlobalSliceMut};

/// `n` elements in each of `a`, `b` and `out`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elementwise {
    pub n: u32,
}

impl Problem for Elementwise {
    /// `(a, b, out, n)`: views of the two inputs and the output, n elements each.
    type Args = (GlobalSlice<f32>, GlobalSlice<f32>, GlobalSliceMut<f32>, u32);
}

#[cfg(not(target_arch = "nvptx64"))]
impl Elementwise {
    /// `n` elements: at least 1, and within the kernels' 32-bit index range.
    pub fn new(n: usize) -> Result<Self, ptxkit::InvalidSize> {
        Ok(Elementwise {
            n: crate::size::element_count("element-wise", "n", n)?,
        })
    }

    /// Elements of each array.
    pub fn len(&self) -> usize {
        self.n as usize
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}
