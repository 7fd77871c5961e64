//! The `wgmma` backward pass's first launch: [`super::query`]'s block without its second pass.
//! Each query row's Δ = Σ dO·O and, from a pass over the keys, its lse, into `stats`; the block's
//! rows of the f32 sums of dQ (after the statistics, [`super::sums_at`]) zeroed for
//! [`super::wgmma`]'s additions.

use super::query::{Tiles, run_with};
use super::{AttentionBackward, THREADS};
use ptxkit::device::mma::Bf16;
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory};

/// The body for head dimension `D`.
///
/// # Safety
/// As [`super::query`]'s, `stats` holding [`AttentionBackward::stats_len`] floats.
#[inline(always)]
unsafe fn run<const D: u32, const CAUSAL: bool>(arrays: super::Arrays, kv_group: u32, seq: u32, dim: u32) {
    // SAFETY: forwarded.
    unsafe { run_with::<D, CAUSAL, false, false>(arrays, kv_group, seq, dim) }
}

super::backward_entries!(
    run,
    /// Attention's backward on `wgmma`, first launch: each query row's lse and Δ, its sums of dQ
    /// zeroed.
    attention_backward_statistics,
    /// As `attention_backward_statistics`, with the causal mask.
    attention_backward_statistics_causal
);

/// One block per 64 query rows of each head, as [`super::query`]'s.
fn grid(p: &AttentionBackward, _: Occupancy) -> Dim3 {
    Dim3::xy(p.0.seq.div_ceil(super::ROWS), p.0.heads)
}

/// [`THREADS`] threads per block, [`super::query`]'s tiles.
pub const KERNEL: Kernel<AttentionBackward> = Kernel {
    code: attention_backward_statistics,
    block: Dim3::x(THREADS),
    shared: SharedMemory::opt_in(Tiles::BYTES),
    grid,
};

/// As [`KERNEL`], with the causal mask.
pub const KERNEL_CAUSAL: Kernel<AttentionBackward> = Kernel {
    code: attention_backward_statistics_causal,
    ..KERNEL
};
