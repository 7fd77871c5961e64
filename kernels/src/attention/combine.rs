//! Flash-decoding's second pass: each query row's output from its runs of keys. Run s left the
//! row's output over its keys, normalised (o_s), and its log-sum-exp in log2 units (l_s); the
//! row's output is `Σ_s 2^(l_s − m)·o_s / Σ_s 2^(l_s − m)` with m the largest l_s, rounded to
//! bf16. A run whose keys the row never attends to has l_s = −∞ and weighs nothing; a row whose
//! every score is −∞ (or NaN somewhere) comes out NaN, as the one-pass kernels' do.
//!
//! A warp per row, eight rows per block: every lane takes the runs in order for its columns (the
//! sums, and so the bits, are the same in every lane and every run of the launch).

use super::Decode;
use ptxkit::device::mma::{Bf16, round_pack_bf16x2};
use ptxkit::device::{WARP_SIZE, block_idx, exp2, global_store, lane_id, thread_idx, unrolled_to};
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory};

/// Rows per block, a warp each.
pub const WARPS: u32 = 8;
/// Threads per block.
pub const THREADS: u32 = WARPS * WARP_SIZE;
/// The widest head.
const MAX_DIM: u32 = 128;

/// The body for head dimension `p.dim`, at most `D` (the columns past it neither read nor
/// stored).
///
/// # Safety
/// `partial` holds [`Decode::partial_len`] floats as [`super::decode`] wrote them, `o`
/// kv_heads·rows·dim bf16, 4-byte aligned; the grid is [`KERNEL`]'s for `p`.
#[inline(always)]
unsafe fn run<const D: u32>(partial: *const f32, o: *mut Bf16, p: &Decode) {
    let row = block_idx().x * WARPS + thread_idx().x / WARP_SIZE;
    if row >= p.kv_heads * p.rows {
        return;
    }
    let lane = lane_id();
    let (splits, dim) = (p.splits, p.dim);
    // Whether this lane's pair of columns i is inside the head (always, where dim is D).
    let inside = |i: u32| dim == D || 2 * lane + 64 * i < dim;
    let at = row * splits;
    // SAFETY: the row's runs inside the lse part of `partial`.
    let lse = |s: u32| unsafe { partial.add((p.lse_at() + at + s) as usize).read() };
    let mut max = f32::NEG_INFINITY;
    for s in 0..splits {
        max = max.max(lse(s));
    }
    let mut total = 0.0f32;
    let mut acc = [[0.0f32; 2]; (MAX_DIM / 64) as usize];
    for s in 0..splits {
        let weight = exp2(lse(s) - max);
        total += weight;
        unrolled_to(D / 64, |i| {
            if !inside(i) {
                return;
            }
            let column = 2 * lane + 64 * i;
            // SAFETY: the row's run inside `partial`, the pair inside dim: 8-byte aligned.
            let pair = unsafe {
                partial
                    .add(((at + s) * dim + column) as usize)
                    .cast::<[f32; 2]>()
                    .read()
            };
            let i = i as usize;
            // A run that weighs nothing left zeros; 0·x adds nothing.
            acc[i][0] += weight * pair[0];
            acc[i][1] += weight * pair[1];
        });
    }
    unrolled_to(D / 64, |i| {
        if !inside(i) {
            return;
        }
        let column = 2 * lane + 64 * i;
        let i = i as usize;
        let pair = round_pack_bf16x2(acc[i][0] / total, acc[i][1] / total);
        // SAFETY: the row of O, the pair inside dim: 4-byte aligned.
        unsafe { global_store(o.add((row * dim + column) as usize).cast::<u32>(), pair) };
    });
}

ptxkit::kernel! {
    #[launch_bounds(ptxkit::Dim3::x(THREADS), 4)]
    /// Flash-decoding's second pass: the runs of keys of each query row weighed into O.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn attention_decode_combine(
        q: *const Bf16, k: *const Bf16, v: *const Bf16, o: *mut Bf16, partial: *mut f32,
        kv_heads: u32, rows: u32, queries: u32, keys: u32, dim: u32, chunk: u32, splits: u32,
    ) {
        // The first pass's arguments, so that both launch from one problem; Q, K and V are its.
        let _ = (q, k, v);
        let p = Decode { kv_heads, rows, queries, keys, dim, causal: false, chunk, splits };
        // SAFETY: the kernel's contract (dim a multiple of 8 up to 128). At 64 and 128 the
        // dimension is a constant, as before any other was taken.
        unsafe {
            match dim {
                64 => run::<64>(partial, o, &Decode { dim: 64, ..p }),
                128 => run::<128>(partial, o, &Decode { dim: 128, ..p }),
                narrow if narrow < 64 => run::<64>(partial, o, &p),
                _ => run::<128>(partial, o, &p),
            }
        }
    }
}

/// A warp per query row.
fn grid(p: &Decode, _: Occupancy) -> Dim3 {
    Dim3::x((p.kv_heads * p.rows).div_ceil(WARPS))
}

/// [`THREADS`] threads per block, no shared memory.
pub const KERNEL: Kernel<Decode> = Kernel {
    code: attention_decode_combine,
    block: Dim3::x(THREADS),
    shared: SharedMemory::NONE,
    grid,
};
