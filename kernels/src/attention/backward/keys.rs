//! The backward pass's second launch: a block per 64 keys of one KV head, four warps of 16, over
//! every query row of the query heads that share the KV head. K's and V's tiles are staged once;
//! Q's and dO's tiles stream through a two-slot `cp.async` ring with their rows' lse and Δ (from
//! the first launch). Per 16 query rows a warp computes its keys' Sᵀ = K·Qᵀ and Pᵀ = 2^(Sᵀ − lse),
//! dV += Pᵀ·dO, dPᵀ = V·dOᵀ, dSᵀ = Pᵀ ∘ (dPᵀ − Δ) and dK += dSᵀ·Q, the scores' accumulators
//! reused as the A fragments of the next product (Q and dO by `ldmatrix.trans` there). With the
//! causal mask the query tiles before the block's first key are skipped.

use super::{
    Arrays, AttentionBackward, ROWS, THREADS, TILE, accumulate, fragment, layout, scales, stage, staged_by_rows, unpack,
};
use ptxkit::device::mma::{Bf16, round_pack_bf16x2};
use ptxkit::device::{
    MatrixLayout, SharedMatrix, WARP_SIZE, async_copy_commit, async_copy_wait, block_idx, exp2, global_store, grid_dim,
    lane_id, opaque, sync_threads, thread_idx, unrolled, unrolled_to,
};
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory, shared_memory};

/// Staged rows: K's tile, V's, then Q's two slots and dO's two.
const V_ROWS: u32 = ROWS;
const Q_ROWS: u32 = 2 * ROWS;
const DO_ROWS: u32 = 2 * ROWS + 2 * TILE;

shared_memory! {
    /// The tiles in bf16 pairs; the streamed rows' lse (rows 0 and 1, one per slot) and Δ (2, 3).
    pub struct Tiles {
        pub rows: SharedMatrix<u32> = layout(2 * ROWS + 4 * TILE),
        pub stats: SharedMatrix<f32> = MatrixLayout { rows: 4, cols: TILE, pitch: TILE },
    }
}

/// The query heads of one KV head and their tiles of query rows, in the order the block takes
/// them: `per_head` tiles of each head from tile `start`.
struct Queries {
    arrays: Arrays,
    kv_group: u32,
    heads: u32,
    seq: u32,
    dim: u32,
    start: u32,
    per_head: u32,
}

impl Queries {
    /// Starts copying tile `t`'s Q, dO, lse and Δ into `slot`.
    ///
    /// # Safety
    /// The arrays as the kernel's contract has them; the staged rows inside the tiles.
    #[inline(always)]
    unsafe fn stage<const D: u32>(&self, tiles: &SharedMatrix<u32>, stats: &SharedMatrix<f32>, t: u32, slot: u32) {
        let (seq, tid) = (self.seq, thread_idx().x);
        let head = block_idx().y * self.kv_group + t / self.per_head;
        let first = (self.start + t % self.per_head) * TILE;
        let at = (head * seq * self.dim) as usize;
        // SAFETY: the query head's Q and dO inside the arrays; the slots' rows inside the tiles;
        // the statistics' rows below seq inside `stats`, 4-byte aligned.
        unsafe {
            stage::<D>(
                tiles,
                (self.arrays.q.add(at), self.dim),
                seq,
                first,
                Q_ROWS + slot * TILE,
            );
            stage::<D>(
                tiles,
                (self.arrays.d_o.add(at), self.dim),
                seq,
                first,
                DO_ROWS + slot * TILE,
            );
            let (which, i) = (tid / TILE, tid % TILE);
            let inside = first + i < seq;
            let index = which * self.heads * seq + head * seq + if inside { first + i } else { 0 };
            stats.copy1_async_zero_fill_unchecked(2 * which + slot, i, self.arrays.stats.add(index as usize), inside);
        }
    }
}

/// The body for head dimension `D` (see the module).
///
/// # Safety
/// The arrays as [`super::AttentionBackward`] lays them out for `kv_group` and `seq`, 16-byte
/// aligned, `stats` as the first launch wrote it; the grid is [`KERNEL`]'s.
#[inline(always)]
pub(crate) unsafe fn run<const D: u32, const CAUSAL: bool>(arrays: Arrays, kv_group: u32, seq: u32, dim: u32) {
    let Tiles { rows: tiles, stats } = Tiles::carve();
    let (lane, warp) = (lane_id(), thread_idx().x / WARP_SIZE);
    let (group, member) = (lane / 4, lane % 4);
    let kv_head = block_idx().y;
    let heads = grid_dim().y * kv_group;
    let kv_at = (kv_head * seq * dim) as usize;
    // SAFETY (the KV head's matrices): inside K, V, dK and dV by the kernel's contract.
    let (k, v, dk, dv) = unsafe {
        (
            arrays.k.add(kv_at),
            arrays.v.add(kv_at),
            arrays.dk.add(kv_at),
            arrays.dv.add(kv_at),
        )
    };
    let key0 = block_idx().x * ROWS;
    // Query tiles from the one holding the block's first key (causal) or from the first.
    let start = if CAUSAL { key0 / TILE } else { 0 };
    let per_head = seq.div_ceil(TILE) - start;
    let tiles_n = kv_group * per_head;
    let queries = Queries {
        arrays,
        kv_group,
        heads,
        seq,
        dim,
        start,
        per_head,
    };
    // SAFETY (stages): the kernel's contract; the staged rows inside the tiles.
    unsafe {
        stage::<D>(&tiles, (k, dim), seq, key0, 0);
        stage::<D>(&tiles, (v, dim), seq, key0, V_ROWS);
    }
    // SAFETY (stages): the kernel's contract.
    unsafe { queries.stage::<D>(&tiles, &stats, 0, 0) };
    async_copy_commit();
    let (scale, plain_scale) = scales::<D>(dim);
    let my_key0 = key0 + 16 * warp + group;
    let mut dk_acc = [[0.0f32; 4]; (super::MAX_DIM / 8) as usize];
    let mut dv_acc = [[0.0f32; 4]; (super::MAX_DIM / 8) as usize];
    for t in 0..tiles_n {
        let slot = t % 2;
        if t + 1 < tiles_n {
            // The other slot was released by the barrier ending tile t - 1.
            // SAFETY: as above.
            unsafe { queries.stage::<D>(&tiles, &stats, t + 1, 1 - slot) };
            async_copy_commit();
            async_copy_wait::<1>();
        } else {
            async_copy_wait::<0>();
        }
        sync_threads();
        let first = (start + t % per_head) * TILE;
        // A loop, not unrolled: the body is large, and a closure called four times is not inlined.
        for qs in 0..opaque(TILE / 16) {
            let (q_at, do_at) = (Q_ROWS + slot * TILE + 16 * qs, DO_ROWS + slot * TILE + 16 * qs);
            // SAFETY (every staged row below): the warp's K and V rows, the slot's Q and dO rows.
            let scores = unsafe { staged_by_rows::<D>(&tiles, 16 * warp, q_at) };
            let mut p = [[0.0f32; 4]; 2];
            unrolled::<2>(|j| {
                unrolled::<4>(|r| {
                    let c = 16 * qs + 8 * j + 2 * member + r % 2;
                    let (query, key) = (first + c, my_key0 + 8 * (r / 2));
                    let masked = query >= seq || key >= seq || (CAUSAL && key > query);
                    p[j as usize][r as usize] = if masked {
                        0.0
                    } else {
                        exp2(scores[j as usize][r as usize] * scale - stats.get(slot, c))
                    };
                });
            });
            // Pᵀ rounded to bf16: the A fragment of dV's product, and the weights of dSᵀ (the f32
            // weights are not kept: registers).
            let fp = fragment(p);
            // SAFETY: the slot's dO rows.
            dv_acc = unsafe { accumulate::<D>(&tiles, dv_acc, fp, do_at) };
            let mut ds = unsafe { staged_by_rows::<D>(&tiles, V_ROWS + 16 * warp, do_at) };
            unrolled::<2>(|j| {
                unrolled::<4>(|r| {
                    let delta = stats.get(2 + slot, 16 * qs + 8 * j + 2 * member + r % 2);
                    let (j, r) = (j as usize, r as usize);
                    let (low, high) = unpack(fp[2 * j + r / 2]);
                    let weight = if r % 2 == 0 { low } else { high };
                    // dPᵀ into dSᵀ in place. A zero weight (a masked key, or one that underflowed)
                    // adds nothing, even where dP is not finite.
                    ds[j][r] = if weight == 0.0 {
                        0.0
                    } else {
                        weight * (ds[j][r] - delta)
                    };
                });
            });
            // SAFETY: the slot's Q rows.
            dk_acc = unsafe { accumulate::<D>(&tiles, dk_acc, fragment(ds), q_at) };
        }
        // Every warp is done with this slot before the next tile's copies refill it.
        sync_threads();
    }
    unrolled::<2>(|h| {
        let key = my_key0 + 8 * h;
        if key < seq {
            unrolled_to(D / 8, |j| {
                // The padding's columns are not stored (a test that folds away where dim is D).
                if dim != D && 8 * j >= dim {
                    return;
                }
                let (j, r) = (j as usize, 2 * h as usize);
                let at = (key * dim + 8 * j as u32 + 2 * member) as usize;
                let k_pair = round_pack_bf16x2(dk_acc[j][r] * plain_scale, dk_acc[j][r + 1] * plain_scale);
                let v_pair = round_pack_bf16x2(dv_acc[j][r], dv_acc[j][r + 1]);
                // SAFETY: key < seq, the pair inside dim: inside the KV head's dK and dV, aligned.
                unsafe {
                    global_store(dk.add(at).cast::<u32>(), k_pair);
                    global_store(dv.add(at).cast::<u32>(), v_pair);
                }
            });
        }
    });
}

super::backward_entries!(
    run,
    /// Attention's backward, second launch: dK and dV.
    attention_backward_keys,
    /// As `attention_backward_keys`, with the causal mask.
    attention_backward_keys_causal
);

/// One block per 64 keys of each KV head.
fn grid(p: &AttentionBackward, _: Occupancy) -> Dim3 {
    Dim3::xy(p.0.seq.div_ceil(ROWS), p.0.heads / p.0.kv_group)
}

/// [`THREADS`] threads per block; 105 KiB of tiles.
pub const KERNEL: Kernel<AttentionBackward> = Kernel {
    code: attention_backward_keys,
    block: Dim3::x(THREADS),
    shared: SharedMemory::opt_in(Tiles::BYTES),
    grid,
};

/// As [`KERNEL`], with the causal mask.
pub const KERNEL_CAUSAL: Kernel<AttentionBackward> = Kernel {
    code: attention_backward_keys_causal,
    ..KERNEL
};
