//! A kernel that exercises the warp-level device layer (lane id, the four shuffles, sync_warp), so
//! that the emulator and the GPU can be checked against the same expected values.

use crate::device::{
    WARP_SIZE, block_dim, block_idx, lane_id, shfl_down, shfl_idx, shfl_up, shfl_xor, sync_warp, thread_idx,
};
use crate::kernel;
use crate::launch::{Dim3, KernelInfo, LaunchShape};

/// Words each thread writes.
pub const WARP_PROBE_WORDS: u32 = 6;

pub const WARP_PROBE_BLOCK: u32 = 2 * WARP_SIZE;

pub const WARP_PROBE_INFO: KernelInfo = KernelInfo {
    entry: "warp_probe",
    block: Dim3::x(WARP_PROBE_BLOCK),
    shared_bytes: 0,
};

pub const fn warp_probe_launch(blocks: u32) -> LaunchShape {
    WARP_PROBE_INFO.over(Dim3::x(blocks))
}

kernel! {
    /// With `g` the thread's global index, thread `g` writes to `out[g·6 ..]`: its lane id,
    /// `shfl_xor(g, 1)`, `shfl_down(g, 3)`, `shfl_up(g, 2)`, `shfl_idx(g, 5)`, and the sum of `g` over
    /// its warp by a butterfly of xor-shuffles.
    pub unsafe fn warp_probe(out: *mut u32) {
        let g = block_idx().x * block_dim().x + thread_idx().x;
        let mut sum = g;
        let mut mask = WARP_SIZE / 2;
        while mask > 0 {
            sum += shfl_xor(sum, mask);
            mask /= 2;
        }
        let words = [lane_id(), shfl_xor(g, 1), shfl_down(g, 3), shfl_up(g, 2), shfl_idx(g, 5), sum];
        sync_warp();
        for (j, word) in words.into_iter().enumerate() {
            // SAFETY: the caller gives WARP_PROBE_WORDS words per launched thread.
            unsafe { *out.add((g * WARP_PROBE_WORDS) as usize + j) = word };
        }
    }
}
