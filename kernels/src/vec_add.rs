//! `out[i] = a[i] + b[i]`: the memory-bound baseline, one element per thread.

use crate::device::{block_dim, block_idx, thread_idx};
use crate::kernel;
use crate::launch::{Dim3, KernelInfo, LaunchShape};

pub const BLOCK: u32 = 256;

pub const INFO: KernelInfo = KernelInfo {
    entry: "vec_add",
    block: Dim3::x(BLOCK),
    shared_bytes: 0,
};

/// One thread per element.
pub const fn launch_shape(n: u32) -> LaunchShape {
    INFO.over(Dim3::x(n.div_ceil(BLOCK)))
}

kernel! {
    /// `out[i] = a[i] + b[i]` for `i < n`.
    pub unsafe fn vec_add(a: *const f32, b: *const f32, out: *mut f32, n: u32) {
        let i = block_idx().x * block_dim().x + thread_idx().x;
        if i < n {
            let i = i as usize;
            // SAFETY: i < n, and the caller gives n elements behind each pointer.
            unsafe { *out.add(i) = *a.add(i) + *b.add(i) };
        }
    }
}
