//! The backward pass's first launch: a block per 64 query rows of one head, four warps of 16.
//! Each row's Δ = Σ_c dO·O from global memory; Q's and dO's tiles staged once and held as A
//! fragments; K tiles (then K and V) streamed through a two-slot `cp.async` ring. A first pass over
//! the keys gives each row's running maximum and sum, so its lse; the second recomputes
//! P = 2^(S − lse), dP = dO·Vᵀ (V's rows by plain `ldmatrix`, as K's in the scores), dS = P ∘ (dP − Δ)
//! rounded to bf16 as the A fragments of dQ += dS·K (K by `ldmatrix.trans`), 32 keys at a time.

use super::{
    Arrays, AttentionBackward, ROWS, THREADS, TILE, accumulate, fragment, fragments, layout, rows_by_rows, scales,
    stage, unpack,
};
use crate::attention::{key_tiles, query_block};
use ptxkit::device::mma::{Bf16, round_pack_bf16x2};
use ptxkit::device::{
    SharedMatrix, SharedSlice, WARP_SIZE, async_copy_commit, async_copy_wait, block_idx, exp2, global_store, grid_dim,
    lane_id, log2, shfl_xor, sync_threads, thread_idx, unrolled, unrolled_to,
};
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory, shared_memory};

/// Staged rows: Q's tile, dO's, then K's two slots and V's two.
const DO_ROWS: u32 = ROWS;
const K_ROWS: u32 = 2 * ROWS;
const V_ROWS: u32 = 2 * ROWS + 2 * TILE;

shared_memory! {
    /// The tiles in bf16 pairs, and each of the block's rows' Δ.
    pub struct Tiles {
        pub rows: SharedMatrix<u32> = layout(2 * ROWS + 4 * TILE),
        pub delta: SharedSlice<f32> = ROWS,
    }
}

/// The products of a warp's 16 rows (A fragments `fa`) and 32 staged rows from `rows_at`: four
/// 16×8 tiles (the scores from K's rows, dP from V's).
///
/// # Safety
/// The staged rows lie in `tiles`.
#[inline(always)]
unsafe fn products<const D: u32>(tiles: &SharedMatrix<u32>, fa: [[u32; 4]; 8], rows_at: u32) -> [[f32; 4]; 4] {
    // SAFETY: forwarded.
    let [a, b] = unsafe {
        [
            rows_by_rows::<D>(tiles, fa, rows_at),
            rows_by_rows::<D>(tiles, fa, rows_at + 16),
        ]
    };
    [a[0], a[1], b[0], b[1]]
}

/// Whether `key` is hidden from query row `row`: past the keys, or after the row with the mask.
#[inline(always)]
fn masked<const CAUSAL: bool>(key: u32, row: u32, seq: u32) -> bool {
    key >= seq || (CAUSAL && key > row)
}

/// The body for head dimension `D` (see the module).
///
/// # Safety
/// The arrays as [`super::AttentionBackward`] lays them out for `kv_group` and `seq`, 16-byte
/// aligned; the grid is [`KERNEL`]'s.
#[inline(always)]
pub(crate) unsafe fn run<const D: u32, const CAUSAL: bool>(arrays: Arrays, kv_group: u32, seq: u32, dim: u32) {
    // SAFETY: forwarded.
    unsafe { run_with::<D, CAUSAL, true, false>(arrays, kv_group, seq, dim) }
}

/// [`run`] with each row's lse read from `stats`, where the forward saved it.
///
/// # Safety
/// As [`run`]; the first heads·seq floats of `stats` hold the rows' lse.
#[inline(always)]
unsafe fn run_saved<const D: u32, const CAUSAL: bool>(arrays: Arrays, kv_group: u32, seq: u32, dim: u32) {
    // SAFETY: forwarded.
    unsafe { run_with::<D, CAUSAL, true, true>(arrays, kv_group, seq, dim) }
}

/// [`run`], or with `DQ` false [`super::statistics`]: the rows' lse and Δ, and their sums of dQ
/// zeroed in place of dQ; with `SAVED` (and `DQ`) the rows' lse read from `stats` instead of
/// computed by the first pass.
///
/// # Safety
/// As [`run`]; without `DQ`, `stats` holds [`super::AttentionBackward::stats_len`] floats; with
/// `SAVED`, its first heads·seq floats hold the rows' lse.
#[inline(always)]
pub(crate) unsafe fn run_with<const D: u32, const CAUSAL: bool, const DQ: bool, const SAVED: bool>(
    arrays: Arrays,
    kv_group: u32,
    seq: u32,
    dim: u32,
) {
    let Tiles { rows: tiles, delta } = Tiles::carve();
    let (tid, lane, warp) = (thread_idx().x, lane_id(), thread_idx().x / WARP_SIZE);
    let (group, member) = (lane / 4, lane % 4);
    let (head, heads) = (block_idx().y, grid_dim().y);
    let (at, kv_at) = ((head * seq * dim) as usize, (head / kv_group * seq * dim) as usize);
    // SAFETY (the head's matrices): inside Q, O, dO, dQ and K, V by the kernel's contract.
    let (q, o, d_o, dq, k, v) = unsafe {
        (
            arrays.q.add(at),
            arrays.o.add(at),
            arrays.d_o.add(at),
            arrays.dq.add(at),
            arrays.k.add(kv_at),
            arrays.v.add(kv_at),
        )
    };
    let first = query_block(CAUSAL, block_idx().x, grid_dim().x) * ROWS;
    let tiles_n = key_tiles(CAUSAL, seq, first, ROWS, TILE);
    // SAFETY (stages): the kernel's contract; the staged rows inside the tiles.
    unsafe {
        stage::<D>(&tiles, (q, dim), seq, first, 0);
        stage::<D>(&tiles, (d_o, dim), seq, first, DO_ROWS);
        if !SAVED {
            stage::<D>(&tiles, (k, dim), seq, 0, K_ROWS);
        }
    }
    async_copy_commit();
    // Δ of row first + tid / 2: two threads a row, half the (staged) columns each.
    {
        let row = first + tid / 2;
        let mut sum = 0.0f32;
        if row < seq {
            unrolled_to(D / 4, |i| {
                let c = (tid % 2) * (D / 2) + 2 * i;
                // The padding's columns are not read (a test that folds away where dim is D).
                if dim == D || c < dim {
                    // SAFETY: row < seq, the pair inside dim: 4-byte aligned inside O and dO.
                    let (a, b) = unsafe {
                        (
                            o.add((row * dim + c) as usize).cast::<u32>().read(),
                            d_o.add((row * dim + c) as usize).cast::<u32>().read(),
                        )
                    };
                    let ((o0, o1), (g0, g1)) = (unpack(a), unpack(b));
                    sum += o0 * g0 + o1 * g1;
                }
            });
        }
        let sum = sum + shfl_xor(sum, 1);
        if tid % 2 == 0 {
            delta.set(tid / 2, sum);
            if row < seq {
                // SAFETY: the row's Δ inside `stats` (after every row's lse).
                unsafe { global_store(arrays.stats.add((heads * seq + head * seq + row) as usize), sum) };
            }
        }
    }
    let mut fq = [[0u32; 4]; (super::MAX_DIM / 16) as usize];
    let mut fdo = [[0u32; 4]; (super::MAX_DIM / 16) as usize];
    let (scale, plain_scale) = scales::<D>(dim);
    let my_row0 = first + 16 * warp + group;
    let mut lse = [0.0f32; 2];
    if SAVED {
        unrolled::<2>(|h| {
            let row = my_row0 + 8 * h;
            if row < seq {
                // SAFETY: the row's lse inside `stats` (the kernel's contract).
                lse[h as usize] = unsafe { arrays.stats.add((head * seq + row) as usize).read() };
            }
        });
        // Q's and dO's tiles landed (their group is the only one), and every row's Δ in `delta`,
        // before either is read.
        async_copy_wait::<0>();
        sync_threads();
        // SAFETY (ldmatrix): Q's and dO's staged rows.
        unsafe {
            fq = fragments::<D>(&tiles, 16 * warp);
            fdo = fragments::<D>(&tiles, DO_ROWS + 16 * warp);
        }
    } else {
        // Pass 1: each row's maximum and sum, so its lse.
        let mut max = [f32::NEG_INFINITY; 2];
        let mut sum = [0.0f32; 2];
        for t in 0..tiles_n {
            let slot = t % 2;
            if t + 1 < tiles_n {
                // SAFETY: as above; the other slot was released by the barrier ending tile t - 1.
                unsafe { stage::<D>(&tiles, (k, dim), seq, (t + 1) * TILE, K_ROWS + (1 - slot) * TILE) };
                async_copy_commit();
                async_copy_wait::<1>();
            } else {
                async_copy_wait::<0>();
            }
            sync_threads();
            if t == 0 {
                // SAFETY (ldmatrix): Q's and dO's staged rows.
                unsafe {
                    fq = fragments::<D>(&tiles, 16 * warp);
                    fdo = fragments::<D>(&tiles, DO_ROWS + 16 * warp);
                }
            }
            for half in 0..2 {
                let key0 = t * TILE + 32 * half;
                // SAFETY: K's slot rows.
                let mut s = unsafe { products::<D>(&tiles, fq, K_ROWS + slot * TILE + 32 * half) };
                let mut tile_max = [f32::NEG_INFINITY; 2];
                unrolled::<4>(|j| {
                    unrolled::<4>(|r| {
                        let key = key0 + 8 * j + 2 * member + r % 2;
                        let x = &mut s[j as usize][r as usize];
                        *x = if masked::<CAUSAL>(key, my_row0 + 8 * (r / 2), seq) {
                            f32::NEG_INFINITY
                        } else {
                            *x * scale
                        };
                        tile_max[(r / 2) as usize] = tile_max[(r / 2) as usize].max(*x);
                    });
                });
                unrolled::<2>(|h| {
                    let h = h as usize;
                    let m = tile_max[h].max(shfl_xor(tile_max[h], 1));
                    let m = m.max(shfl_xor(m, 2)).max(max[h]);
                    let base = if m == f32::NEG_INFINITY { 0.0 } else { m };
                    sum[h] *= exp2(max[h] - base);
                    max[h] = m;
                    unrolled::<4>(|j| {
                        sum[h] += exp2(s[j as usize][2 * h] - base) + exp2(s[j as usize][2 * h + 1] - base);
                    });
                });
            }
            sync_threads();
        }
        unrolled::<2>(|h| {
            let total = sum[h as usize] + shfl_xor(sum[h as usize], 1);
            let total = total + shfl_xor(total, 2);
            lse[h as usize] = max[h as usize] + log2(total);
            let row = my_row0 + 8 * h;
            if member == 0 && row < seq {
                // SAFETY: the row's lse inside `stats`.
                unsafe { global_store(arrays.stats.add((head * seq + row) as usize), lse[h as usize]) };
            }
        });
    }
    if !DQ {
        // The block's rows of the sums of dQ, zeroed for the `wgmma` launch's additions.
        let rows = ROWS.min(seq - first);
        let sums = super::sums_at(heads, seq) + ((head * seq + first) * dim) as usize;
        for i in (tid..rows * dim).step_by(THREADS as usize) {
            // SAFETY: rows first..first + rows of the head's sums, inside `stats`.
            unsafe { global_store(arrays.stats.add(sums + i as usize), 0.0) };
        }
        return;
    }
    let mut row_delta = [0.0f32; 2];
    unrolled::<2>(|h| row_delta[h as usize] = delta.get(16 * warp + group + 8 * h));
    // Pass 2: dQ.
    // SAFETY (stages): the kernel's contract; the slots were released by the last barrier.
    unsafe {
        stage::<D>(&tiles, (k, dim), seq, 0, K_ROWS);
        stage::<D>(&tiles, (v, dim), seq, 0, V_ROWS);
    }
    async_copy_commit();
    let mut acc = [[0.0f32; 4]; (super::MAX_DIM / 8) as usize];
    for t in 0..tiles_n {
        let slot = t % 2;
        if t + 1 < tiles_n {
            // SAFETY: as above.
            unsafe {
                stage::<D>(&tiles, (k, dim), seq, (t + 1) * TILE, K_ROWS + (1 - slot) * TILE);
                stage::<D>(&tiles, (v, dim), seq, (t + 1) * TILE, V_ROWS + (1 - slot) * TILE);
            }
            async_copy_commit();
            async_copy_wait::<1>();
        } else {
            async_copy_wait::<0>();
        }
        sync_threads();
        for half in 0..2 {
            let key0 = t * TILE + 32 * half;
            // SAFETY: K's and V's slot rows.
            let (s, dp) = unsafe {
                (
                    products::<D>(&tiles, fq, K_ROWS + slot * TILE + 32 * half),
                    products::<D>(&tiles, fdo, V_ROWS + slot * TILE + 32 * half),
                )
            };
            let mut ds = [[[0.0f32; 4]; 2]; 2];
            unrolled::<4>(|j| {
                unrolled::<4>(|r| {
                    let key = key0 + 8 * j + 2 * member + r % 2;
                    let (h, j, r) = ((r / 2) as usize, j as usize, r as usize);
                    ds[j / 2][j % 2][r] = if masked::<CAUSAL>(key, my_row0 + 8 * h as u32, seq) {
                        0.0
                    } else {
                        exp2(s[j][r] * scale - lse[h]) * (dp[j][r] - row_delta[h])
                    };
                });
            });
            unrolled::<2>(|kk| {
                let row = K_ROWS + slot * TILE + 32 * half + 16 * kk;
                // SAFETY (ldmatrix): K's slot rows.
                acc = unsafe { accumulate::<D>(&tiles, acc, fragment(ds[kk as usize]), row) };
            });
        }
        sync_threads();
    }
    unrolled::<2>(|h| {
        let row = my_row0 + 8 * h;
        if row < seq {
            unrolled_to(D / 8, |j| {
                // The padding's columns are not stored (a test that folds away where dim is D).
                if dim != D && 8 * j >= dim {
                    return;
                }
                let (j, r) = (j as usize, 2 * h as usize);
                let pair = round_pack_bf16x2(acc[j][r] * plain_scale, acc[j][r + 1] * plain_scale);
                // SAFETY: row < seq, the pair inside dim: inside the head's dQ, 4-byte aligned.
                unsafe {
                    global_store(
                        dq.add((row * dim + 8 * j as u32 + 2 * member) as usize).cast::<u32>(),
                        pair,
                    )
                };
            });
        }
    });
}

super::backward_entries!(
    run,
    /// Attention's backward, first launch: dQ and each query row's lse and Δ.
    attention_backward_query,
    /// As `attention_backward_query`, with the causal mask.
    attention_backward_query_causal
);

super::backward_entries!(
    run_saved,
    /// Attention's backward, first launch after a forward that saved each row's lse: dQ and each
    /// row's Δ.
    attention_backward_query_saved,
    /// As `attention_backward_query_saved`, with the causal mask.
    attention_backward_query_saved_causal
);

/// One block per 64 query rows of each head.
fn grid(p: &AttentionBackward, _: Occupancy) -> Dim3 {
    Dim3::xy(p.0.seq.div_ceil(ROWS), p.0.heads)
}

/// [`THREADS`] threads per block; 104 KiB of tiles.
pub const KERNEL: Kernel<AttentionBackward> = Kernel {
    code: attention_backward_query,
    block: Dim3::x(THREADS),
    shared: SharedMemory::opt_in(Tiles::BYTES),
    grid,
};

/// As [`KERNEL`], with the causal mask.
pub const KERNEL_CAUSAL: Kernel<AttentionBackward> = Kernel {
    code: attention_backward_query_causal,
    ..KERNEL
};

/// As [`KERNEL`], each row's lse read from `stats` (saved there by the forward).
pub const KERNEL_SAVED: Kernel<AttentionBackward> = Kernel {
    code: attention_backward_query_saved,
    ..KERNEL
};

/// As [`KERNEL_SAVED`], with the causal mask.
pub const KERNEL_SAVED_CAUSAL: Kernel<AttentionBackward> = Kernel {
    code: attention_backward_query_saved_causal,
    ..KERNEL
};
