//! Flash-decoding's second pass: each query row's output from its runs of keys. Run s left the
//! row's output over its keys, normalised (o_s), and its log-sum-exp in log2 units (l_s); the
//! row's output is `Σ_s 2^(l_s − m)·o_s / Σ_s 2^(l_s − m)` with m the largest l_s, rounded to
//! bf16. A run whose keys the row never attends to has l_s = −∞ and weighs nothing; a row whose
//! every score is −∞ (or NaN somewhere) comes out NaN, as the one-pass kernels' do.
//!
//! A block per row: every warp finds m (its lanes over the runs, then shuffles), warp w sums runs
//! w, w + 8, … for its lanes' columns, [`BATCH`] runs' loads issued before any is used, and the
//! eight warps' sums meet in shared memory. A warp per row taking every run in turn waited for one
//! or two runs' loads at a time: at 132 runs, 66 round trips to the L2 per row. The sums' order is
//! fixed (the same bits in every launch).
use super::Decode;
use ptxkit::device::mma::{Bf16, round_pack_bf16x2};
use ptxkit::device::{
    MatrixLayout, SharedMatrix, SharedSlice, WARP_SIZE, block_idx, exp2, global_store, lane_id, shfl_xor, sync_threads,
    thread_idx, unrolled, unrolled_to,
};
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory, shared_memory};

/// Warps per block, each on every eighth run of the block's row.
pub const WARPS: u32 = 8;
/// Threads per block.
pub const THREADS: u32 = WARPS * WARP_SIZE;
/// Runs a warp loads before it uses any.
pub const BATCH: u32 = 4;
/// The widest head.
const MAX_DIM: u32 = 128;

shared_memory! {
    /// Each warp's sums for the row's columns, and its sum of weights.
    pub struct Sums {
        pub columns: SharedMatrix<f32> = MatrixLayout { rows: WARPS, cols: MAX_DIM, pitch: MAX_DIM },
        pub weights: SharedSlice<f32> = WARPS,
    }
}

/// The body for head dimension `p.dim`, at most `D` (the columns past it neither read nor
/// stored).
///
/// # Safety
/// `partial` holds [`Decode::partial_len`] floats as [`super::decode`] wrote them, `o`
/// kv_heads·rows·dim bf16, 4-byte aligned; the grid is [`KERNEL`]'s for `p`; every thread of the
/// block calls (it has barriers).
#[inline(always)]
unsafe fn run<const D: u32>(partial: *const f32, o: *mut Bf16, p: &Decode) {
    let Sums { columns, weights } = Sums::carve();
    let row = block_idx().x;
    let (lane, warp) = (lane_id(), thread_idx().x / WARP_SIZE);
    let (splits, dim) = (p.splits, p.dim);
    // Lane l's columns: 2l and 2l + 1, then 64 further, while inside the head.
    let inside = |i: u32| dim == D || 2 * lane + 64 * i < dim;
    let at = row * splits;
    // SAFETY (lse, pair): the row's runs are inside `partial` (the grid is a block per row), each
    // pair inside dim, 8-byte aligned (dim is even).
    let lse = |s: u32| unsafe { partial.add((p.lse_at() + at + s) as usize).read() };
    let pair = |s: u32, column: u32| unsafe {
        partial
            .add(((at + s) * dim + column) as usize)
            .cast::<[f32; 2]>()
            .read()
    };
    let mut max = f32::NEG_INFINITY;
    let mut s = lane;
    while s < splits {
        max = max.max(lse(s));
        s += WARP_SIZE;
    }
    unrolled::<5>(|i| max = max.max(shfl_xor(max, 16 >> i)));
    let mut total = 0.0f32;
    let mut acc = [[0.0f32; 2]; (MAX_DIM / 64) as usize];
    let mut first = warp;
    while first < splits {
        // BATCH runs a warp apart, loaded before any is used; a run past the last weighs 0.
        let mut weight = [0.0f32; BATCH as usize];
        let mut pairs = [[[0.0f32; 2]; (MAX_DIM / 64) as usize]; BATCH as usize];
        unrolled::<BATCH>(|b| {
            let s = first + b * WARPS;
            if s < splits {
                weight[b as usize] = lse(s);
                unrolled_to(D / 64, |i| {
                    if inside(i) {
                        pairs[b as usize][i as usize] = pair(s, 2 * lane + 64 * i);
                    }
                });
            }
        });
        unrolled::<BATCH>(|b| {
            if first + b * WARPS < splits {
                let w = exp2(weight[b as usize] - max);
                total += w;
                unrolled_to(D / 64, |i| {
                    let (i, b) = (i as usize, b as usize);
                    acc[i][0] += w * pairs[b][i][0];
                    acc[i][1] += w * pairs[b][i][1];
                });
            }
        });
        first += BATCH * WARPS;
    }
    unrolled_to(D / 64, |i| {
        if inside(i) {
            let column = 2 * lane + 64 * i;
            // SAFETY: warp < WARPS, column + 1 < D ≤ MAX_DIM.
            unsafe {
                columns.set_unchecked(warp, column, acc[i as usize][0]);
                columns.set_unchecked(warp, column + 1, acc[i as usize][1]);
            }
        }
    });
    if lane == 0 {
        // SAFETY: warp < WARPS.
        unsafe { weights.set_unchecked(warp, total) };
    }
    // Every warp's sums are in before any thread adds them.
    sync_threads();
    // Thread t's column t: the warps whose columns start inside the head take part whole (their
    // lanes meet in a shuffle); a lane past the head adds nothing and stores nothing.
    let column = thread_idx().x;
    if WARP_SIZE * warp < dim {
        let (mut sum, mut total) = (0.0f32, 0.0f32);
        if column < dim {
            unrolled::<WARPS>(|w| {
                // SAFETY: w < WARPS, column < dim ≤ MAX_DIM.
                unsafe {
                    sum += columns.get_unchecked(w, column);
                    total += weights.get_unchecked(w);
                }
            });
        }
        let value = sum / total;
        // Two columns a store: the even lane takes its odd neighbour's value.
        let next = shfl_xor(value, 1);
        if column < dim && column.is_multiple_of(2) {
            // SAFETY: the row is one of O's, the column pair inside dim (even): 4-byte aligned.
            unsafe {
                global_store(
                    o.add((row * dim + column) as usize).cast::<u32>(),
                    round_pack_bf16x2(value, next),
                )
            };
        }
    }
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

/// A block per query row.
fn grid(p: &Decode, _: Occupancy) -> Dim3 {
    Dim3::x(p.kv_heads * p.rows)
}

/// [`THREADS`] threads per block, each warp's sums in shared memory.
pub const KERNEL: Kernel<Decode> = Kernel {
    code: attention_decode_combine,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Sums::BYTES),
    grid,
};
