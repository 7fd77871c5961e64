//! The element-wise problem: two inputs and one output of `n` f32 each, one result per element.
//! Its families: [`vec_add`](crate::vec_add) and [`shared_mem_add`](crate::shared_mem_add).

use ptxkit::Problem;

/// `n` elements in each of `a`, `b` and `out`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Elementwise {
    pub n: u32,
}

impl Problem for Elementwise {
    /// `(a, b, out, n)`.
    type Args = (*const f32, *const f32, *mut f32, u32);
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
