//! The `wgmma` backward pass's last launch: dQ = the f32 sums of dQ (after the statistics in
//! `stats`, [`super::sums_at`], added into by [`super::wgmma`]'s blocks) times 1/√dim, rounded to
//! bf16. Four elements a thread and step, the grid going round.

use super::{AttentionBackward, scales};
use ptxkit::device::mma::{Bf16, round_pack_bf16x2};
use ptxkit::device::{block_dim, block_idx, global_store, grid_dim, load4, thread_idx};
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory};

/// Threads per block.
pub const THREADS: u32 = 256;

/// The body, 1/√dim as the other launches have it for `D`.
///
/// # Safety
/// `stats` holds [`AttentionBackward::stats_len`] floats, `dq` heads·seq·dim bf16, 8-byte
/// aligned; `dim` a multiple of 8.
#[inline(always)]
unsafe fn run<const D: u32>(dq: *mut Bf16, stats: *const f32, heads: u32, seq: u32, dim: u32) {
    let (_, plain_scale) = scales::<D>(dim);
    // SAFETY: head block_idx().y's sums and dQ inside `stats` and `dq`, the sums 16-byte aligned
    // (a multiple of four floats on, as is each head's seq·dim).
    let (sums, dq) = unsafe {
        let at = (block_idx().y * seq * dim) as usize;
        (stats.add(super::sums_at(heads, seq) + at), dq.add(at))
    };
    let quads = seq * dim / 4;
    let step = grid_dim().x * block_dim().x;
    let mut i = block_idx().x * block_dim().x + thread_idx().x;
    while i < quads {
        // SAFETY: element 4·i + 3 < seq·dim: inside the head's sums and dQ, aligned.
        unsafe {
            let [a, b, c, d] = load4(sums.add(4 * i as usize)).0;
            let pairs = [
                round_pack_bf16x2(a * plain_scale, b * plain_scale),
                round_pack_bf16x2(c * plain_scale, d * plain_scale),
            ];
            let out = dq.add(4 * i as usize).cast::<u32>();
            global_store(out, pairs[0]);
            global_store(out.add(1), pairs[1]);
        }
        i += step;
    }
}

ptxkit::kernel! {
    #[launch_bounds(ptxkit::Dim3::x(THREADS), 1)]
    /// Attention's backward on `wgmma`, last launch: dQ from its f32 sums.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn attention_backward_finish(
        q: *const Bf16, k: *const Bf16, v: *const Bf16, o: *const Bf16, d_o: *const Bf16,
        dq: *mut Bf16, dk: *mut Bf16, dv: *mut Bf16, stats: *mut f32, kv_group: u32, seq: u32, dim: u32,
    ) {
        let _ = (q, k, v, o, d_o, dk, dv, kv_group);
        let heads = grid_dim().y;
        // SAFETY: the kernel's contract.
        unsafe {
            match dim {
                64 => run::<64>(dq, stats, heads, seq, 64),
                128 => run::<128>(dq, stats, heads, seq, 128),
                narrow if narrow < 64 => run::<64>(dq, stats, heads, seq, narrow),
                wide => run::<128>(dq, stats, heads, seq, wide),
            }
        }
    }
}

/// A row of blocks per head (y), together a few times what the device holds, each block four
/// elements a thread and step.
fn grid(p: &AttentionBackward, occupancy: Occupancy) -> Dim3 {
    let quads = (p.0.seq as u64 * p.0.dim as u64).div_ceil(4);
    let wanted = quads.div_ceil(THREADS as u64);
    let per_head = (4 * occupancy.resident_blocks as u64).div_ceil(p.0.heads as u64);
    Dim3::xy(wanted.clamp(1, per_head) as u32, p.0.heads)
}

/// [`THREADS`] threads per block, no shared memory.
pub const KERNEL: Kernel<AttentionBackward> = Kernel {
    code: attention_backward_finish,
    block: Dim3::x(THREADS),
    shared: SharedMemory::NONE,
    grid,
};
