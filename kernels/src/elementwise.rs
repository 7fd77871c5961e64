//! The element-wise problem: two inputs and one output of `n` f32 each, one result per element.
//! Its families: [`vec_add`](crate::vec_add) and [`shared_mem_add`](crate::shared_mem_add).

use crate::family::Problem;

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
    pub fn new(n: usize) -> Result<Self, crate::InvalidSize> {
        let invalid = |reason: String| crate::InvalidSize {
            problem: "element-wise",
            reason,
        };
        if n == 0 {
            return Err(invalid("n must be at least 1".into()));
        }
        let n = u32::try_from(n).map_err(|_| {
            invalid(format!(
                "n = {n} is beyond the kernels' 32-bit index range (at most {} elements)",
                u32::MAX
            ))
        })?;
        Ok(Elementwise { n })
    }

    /// Elements of each array.
    pub fn len(&self) -> usize {
        self.n as usize
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}
