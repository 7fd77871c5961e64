//! The seed's shared-memory example: each thread stages `a[i] + b[i]` in shared memory, the block
//! meets at a barrier, then each thread adds its left neighbour's staged value to its own.

use crate::device::{DynamicShared, block_dim, block_idx, sync_threads, thread_idx};
use crate::kernel;
use crate::launch::{Dim3, KernelInfo, LaunchShape};

pub const BLOCK: u32 = 256;

/// One f32 of shared memory per thread.
pub const SHARED_BYTES: u32 = crate::device::slice_bytes::<f32>(BLOCK);

pub const INFO: KernelInfo = KernelInfo {
    entry: "shared_mem_add",
    block: Dim3::x(BLOCK),
    shared_bytes: SHARED_BYTES,
};

pub const fn launch_shape(n: u32) -> LaunchShape {
    INFO.over(Dim3::x(n.div_ceil(BLOCK)))
}

kernel! {
    /// With `s[t] = a[i] + b[i]` for thread `t` of the block: `out[i] = s[0]` for `t = 0`, else
    /// `s[t] + s[t - 1]`. The neighbour is always in the same block.
    pub unsafe fn shared_mem_add(a: *const f32, b: *const f32, out: *mut f32, n: u32) {
        let staged = DynamicShared::new().slice::<f32>(block_dim().x);
        let t = thread_idx().x;
        let i = block_idx().x * block_dim().x + t;
        // Threads past the end stage a value too, so that every thread reaches the barrier.
        // SAFETY: read only for i < n.
        let sum = if i < n { unsafe { *a.add(i as usize) + *b.add(i as usize) } } else { 0.0 };
        staged.set(t, sum);
        sync_threads();
        if i < n {
            let value = if t == 0 { staged.get(0) } else { staged.get(t) + staged.get(t - 1) };
            // SAFETY: i < n.
            unsafe { *out.add(i as usize) = value };
        }
    }
}
