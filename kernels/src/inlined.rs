//! A ptxkit device helper compiled in this crate, for the f32 matmul kernels whose code depends
//! on where it is inlined: the same source from ptxkit is inlined at another point of the
//! optimisation, which re-lays out the whole kernel (its PTX and SASS change, and its time moves
//! by one or two per cent either way: docs/perf-log.md, change 101). The other kernels use
//! ptxkit's.

use ptxkit::device::Float4;

/// [`ptxkit::device::is_aligned4`], compiled here.
#[inline(always)]
pub(crate) fn is_aligned4<T>(ptr: *const T) -> bool {
    (ptr as usize).is_multiple_of(core::mem::align_of::<Float4>())
}
