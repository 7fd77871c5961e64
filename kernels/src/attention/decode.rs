//! Attention for short queries over long keys (decoding: 1–16 new tokens against a KV cache),
//! with grouped heads: flash-decoding. The keys of each KV head are cut into `splits` runs; a warp
//! takes one run for up to 16 query rows (the rows of the query heads that share the KV head) and
//! writes their output over that run, normalised, and its log-sum-exp ([`split`]); a second launch
//! weighs the runs' outputs by their sums ([`super::combine`]). With one run the first launch writes
//! O itself and the second is not launched.
//!
//! A warp works alone: its own Q tile and its own [`SLOTS`]-slot ring of 32-key K and V tiles,
//! filled by `cp.async` two tiles ahead, ordered by `__syncwarp` (no block barrier, so warps of one
//! block may work on different heads and runs, and a warp past the grid's work returns at once).
//! Per tile it computes its 16×32 scores by `mma.sync`, folds them into the rows' running maximum
//! and sum, and multiplies their exponentials, rounded to bf16, by V, as [`super::flash`] does for
//! 16 rows.
//!
//! Layouts (bf16, row-major): Q and O `[batch][heads][queries][dim]`, K and V
//! `[batch][heads_kv][keys][dim]`; query head h reads KV head h / (heads / heads_kv). The
//! `group = heads / heads_kv` query heads of one KV head are consecutive in Q, so their
//! `group × queries` rows are one block of Q's rows, cut into tiles of 16.
//!
//! The causal mask is SDPA's for `queries ≠ keys`: query i attends to keys 0..=i (top-left).

use super::{Decode, log2_scale_of};
use ptxkit::device::mma::{Bf16, mma_bf16_m16n8k16, round_pack_bf16x2};
use ptxkit::device::{
    MatrixLayout, SharedMatrix, WARP_SIZE, async_copy_commit, async_copy_wait, block_idx, exp2, global_store, lane_id,
    log2, shfl_xor, sync_warp, thread_idx, unrolled, unrolled_to,
};
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory, shared_memory};

/// Query rows per warp (one `mma` tile).
pub const ROWS: u32 = 16;
/// Keys per tile.
pub const KEYS: u32 = 32;
/// Warps per block, each on its own work: two, so that two blocks share an SM (each a warp on
/// every other of its four schedulers).
pub const WARPS: u32 = 2;
/// Tiles of K and V a warp's ring holds: the one it computes on and two in flight (one in flight
/// kept 64 KiB of an SM's loads under way, too few where runs are short).
pub const SLOTS: u32 = 3;
/// Threads per block.
pub const THREADS: u32 = WARPS * WARP_SIZE;
/// The widest head the layout holds.
const MAX_DIM: u32 = 128;
/// bf16 per 16-byte chunk.
const CHUNK: u32 = 8;
/// Words per staged row: the widest head in bf16 pairs, plus 16 bytes of padding (the eight rows
/// of an `ldmatrix` on eight bank groups).
const PITCH: u32 = MAX_DIM / 2 + 4;
/// A warp's staged rows: its Q tile, K's slots, V's.
const WARP_ROWS: u32 = ROWS + 2 * SLOTS * KEYS;
const K_ROWS: u32 = ROWS;
const V_ROWS: u32 = ROWS + SLOTS * KEYS;

shared_memory! {
    /// Each warp's Q tile and K and V rings, in bf16 pairs.
    pub struct Tiles {
        pub rows: SharedMatrix<u32> = MatrixLayout { rows: WARPS * WARP_ROWS, cols: MAX_DIM / 2, pitch: PITCH },
    }
}

/// Starts copying rows `first..first + rows` of a `[..][D]` matrix into staged rows `at..`, zeros
/// from row `end` on: this lane's chunks.
///
/// # Safety
/// `matrix` holds rows `..end` of D elements, 16-byte aligned; the staged rows lie in `tiles`.
#[inline(always)]
unsafe fn stage<const D: u32>(
    tiles: &SharedMatrix<u32>,
    matrix: *const Bf16,
    (first, rows): (u32, u32),
    end: u32,
    at: u32,
) {
    let lane = lane_id();
    unrolled_to(rows * D / CHUNK / WARP_SIZE, |i| {
        let e = lane + i * WARP_SIZE;
        let (r, c) = (e / (D / CHUNK), e % (D / CHUNK));
        let inside = first + r < end;
        // SAFETY: the source is inside the matrix where read (rows below end), 16-byte aligned (D,
        // the chunk and the matrix are); the destination inside the tiles.
        unsafe {
            let src = if inside {
                matrix.add(((first + r) * D + c * CHUNK) as usize)
            } else {
                matrix
            };
            tiles.copy4_async_zero_fill_unchecked(at + r, c * CHUNK / 2, src.cast::<u32>(), 4 * inside as u32);
        }
    });
}

/// [`stage`] for rows of `dim` elements, `dim` a multiple of 8 up to `D`: the chunks past `dim`
/// staged as zeros ([`super::stage_padded`]). At `dim` = `D` it is [`stage`], the code the kernels
/// at 64 and 128 were measured with.
///
/// # Safety
/// `matrix` holds rows `..end` of dim elements, 16-byte aligned; the staged rows lie in `tiles`.
#[inline(always)]
unsafe fn stage_narrower<const D: u32>(
    tiles: &SharedMatrix<u32>,
    (matrix, dim): (*const Bf16, u32),
    (first, rows): (u32, u32),
    end: u32,
    at: u32,
) {
    // SAFETY: forwarded; the warp's lanes share the copies.
    unsafe {
        if dim == D {
            stage::<D>(tiles, matrix, (first, rows), end, at)
        } else {
            super::stage_padded::<D, WARP_SIZE>(tiles, (matrix, dim), (first, rows), end, (at, lane_id()))
        }
    }
}

/// What one warp works on: a tile of query rows of one KV head, over one run of its keys.
struct Work {
    /// The KV head (over every batch).
    kv: u32,
    /// The first of the warp's query rows within the KV head's `group × queries`, and how many
    /// of the 16 there are.
    row0: u32,
    rows: u32,
    /// The run of keys, and which run it is.
    first_key: u32,
    end_key: u32,
    split: u32,
}

/// The warp's work, or `None` past the grid's: warps in the order (KV head, run, row tile), so
/// that the row tiles reading one run of K and V run side by side and share it through the L2.
#[inline(always)]
fn work(p: &Decode) -> Option<Work> {
    let warp = block_idx().x * WARPS + thread_idx().x / WARP_SIZE;
    let tiles = p.row_tiles();
    let (tile, rest) = (warp % tiles, warp / tiles);
    let (split, kv) = (rest % p.splits, rest / p.splits);
    if kv >= p.kv_heads {
        return None;
    }
    let first_key = split * p.chunk;
    Some(Work {
        kv,
        row0: tile * ROWS,
        rows: (p.rows - tile * ROWS).min(ROWS),
        first_key,
        end_key: (first_key + p.chunk).min(p.visible_keys()),
        split,
    })
}

/// The kernel's body for head dimension `p.dim`, staged `D` wide (`p.dim ≤ D`, a multiple of 8;
/// the columns past it zeros, and not stored). See the module.
///
/// # Safety
/// Q and O hold kv_heads·rows·dim elements, K and V kv_heads·keys·dim, all 16-byte aligned; with
/// several runs `partial` holds [`Decode::partial_len`] floats; the grid is [`KERNEL`]'s for `p`.
#[inline(always)]
pub(crate) unsafe fn run<const D: u32, const CAUSAL: bool>(
    (q, k, v, o): (*const Bf16, *const Bf16, *const Bf16, *mut Bf16),
    partial: *mut f32,
    p: &Decode,
) {
    let Some(w) = work(p) else { return };
    let Tiles { rows: tiles } = Tiles::carve();
    let (lane, warp) = (lane_id(), thread_idx().x / WARP_SIZE);
    let (group, member) = (lane / 4, lane % 4);
    let base = warp * WARP_ROWS;
    let (rows, dim) = (p.rows, p.dim);
    // SAFETY (the head's matrices): kv·rows·dim + rows·dim ≤ kv_heads·rows·dim, and as much for
    // keys.
    let (q, k, v) = unsafe {
        (
            q.add(((w.kv * rows + w.row0) * dim) as usize),
            k.add((w.kv * p.keys * dim) as usize),
            v.add((w.kv * p.keys * dim) as usize),
        )
    };
    let tiles_n = (w.end_key - w.first_key).div_ceil(KEYS);
    // SAFETY (stages): the kernel's contract; the staged rows are this warp's.
    unsafe {
        stage_narrower::<D>(&tiles, (q, dim), (0, ROWS), w.rows, base);
        stage_narrower::<D>(&tiles, (k, dim), (w.first_key, KEYS), w.end_key, base + K_ROWS);
        stage_narrower::<D>(&tiles, (v, dim), (w.first_key, KEYS), w.end_key, base + V_ROWS);
    }
    async_copy_commit();
    // Tile `t` of the run into its slot, as a group of its own.
    let stage_tile = #[inline(always)]
    |t: u32| {
        let (first, slot) = (w.first_key + t * KEYS, t % SLOTS);
        // SAFETY: as above; the slot was released by the sync ending the tile before it.
        unsafe {
            stage_narrower::<D>(&tiles, (k, dim), (first, KEYS), w.end_key, base + K_ROWS + slot * KEYS);
            stage_narrower::<D>(&tiles, (v, dim), (first, KEYS), w.end_key, base + V_ROWS + slot * KEYS);
        }
        async_copy_commit();
    };
    if tiles_n > 1 {
        stage_tile(1);
    }
    // Lane l gives row l % 8 of ldmatrix matrix l / 8, as in `flash`.
    let (a_row, a_word) = (lane % 8 + 8 * ((lane / 8) % 2), 4 * (lane / 16));
    let (k_row, k_word) = (lane % 8 + 8 * (lane / 16), 4 * ((lane / 8) % 2));
    let mut fq = [[0u32; 4]; (MAX_DIM / 16) as usize];
    let mut acc = [[0.0f32; 4]; (MAX_DIM / 8) as usize];
    let mut max = [f32::NEG_INFINITY; 2];
    let mut sum = [0.0f32; 2];
    let scale = log2_scale_of::<D>(dim);
    // The query position of the warp's rows group and group + 8 (for the causal mask).
    let position = |h: u32| (w.row0 + group + 8 * h) % p.queries;
    for t in 0..tiles_n {
        let slot = t % SLOTS;
        // Tile t + 2 into the slot tile t - 1 left; then wait for tile t, with the tiles after
        // it (as many as were staged) left in flight.
        if t + 2 < tiles_n {
            stage_tile(t + 2);
            async_copy_wait::<2>();
        } else if t + 1 < tiles_n {
            async_copy_wait::<1>();
        } else {
            async_copy_wait::<0>();
        }
        // Every lane's copies of this tile have landed; the warp's lanes read each other's.
        sync_warp();
        if t == 0 {
            unrolled_to(D / 16, |kk| {
                // SAFETY (ldmatrix): the warp's Q rows, words + 4 within D / 2, 16-byte aligned.
                fq[kk as usize] = unsafe { tiles.load_matrices_x4(base + a_row, 8 * kk + a_word) };
            });
        }
        // Scores: 16 rows × 32 keys, four 16×8 tiles.
        let mut s = [[0.0f32; 4]; (KEYS / 8) as usize];
        unrolled_to(D / 16, |kk| {
            unrolled::<{ KEYS / 16 }>(|pair_index| {
                let row = base + K_ROWS + slot * KEYS + 16 * pair_index + k_row;
                // SAFETY (ldmatrix): K's slot rows, words + 4 within D / 2, aligned.
                let pair = unsafe { tiles.load_matrices_x4(row, 8 * kk + k_word) };
                let (kk, j) = (kk as usize, 2 * pair_index as usize);
                s[j] = mma_bf16_m16n8k16(fq[kk], [pair[0], pair[1]], s[j]);
                s[j + 1] = mma_bf16_m16n8k16(fq[kk], [pair[2], pair[3]], s[j + 1]);
            });
        });
        let key0 = w.first_key + t * KEYS;
        let mut tile_max = [f32::NEG_INFINITY; 2];
        unrolled::<{ KEYS / 8 }>(|j| {
            unrolled::<4>(|r| {
                let key = key0 + 8 * j + 2 * member + r % 2;
                let h = (r / 2) as usize;
                let masked = key >= w.end_key || (CAUSAL && key > position(r / 2));
                let x = &mut s[j as usize][r as usize];
                *x = if masked { f32::NEG_INFINITY } else { *x * scale };
                tile_max[h] = tile_max[h].max(*x);
            });
        });
        let mut base_max = [0.0f32; 2];
        let mut alpha = [0.0f32; 2];
        unrolled::<2>(|h| {
            let h = h as usize;
            let m = tile_max[h].max(shfl_xor(tile_max[h], 1));
            let m = m.max(shfl_xor(m, 2)).max(max[h]);
            // A row with every key so far masked keeps e^(−∞ − 0) = 0 rather than NaN.
            base_max[h] = if m == f32::NEG_INFINITY { 0.0 } else { m };
            alpha[h] = exp2(max[h] - base_max[h]);
            max[h] = m;
            sum[h] *= alpha[h];
        });
        unrolled_to(D / 8, |j| {
            unrolled::<4>(|r| acc[j as usize][r as usize] *= alpha[(r / 2) as usize]);
        });
        let mut fp = [[0u32; 4]; (KEYS / 16) as usize];
        unrolled::<{ KEYS / 8 }>(|j| {
            let e: [f32; 4] = core::array::from_fn(|r| exp2(s[j as usize][r] - base_max[r / 2]));
            sum[0] += e[0] + e[1];
            sum[1] += e[2] + e[3];
            let (kk, half) = ((j / 2) as usize, 2 * (j % 2) as usize);
            fp[kk][half] = round_pack_bf16x2(e[0], e[1]);
            fp[kk][half + 1] = round_pack_bf16x2(e[2], e[3]);
        });
        unrolled::<{ KEYS / 16 }>(|kk| {
            unrolled_to(D / 16, |pair_index| {
                let row = base + V_ROWS + slot * KEYS + 16 * kk + a_row;
                // SAFETY (ldmatrix): V's slot rows, words + 4 within D / 2, aligned.
                let pair = unsafe { tiles.load_matrices_x4_trans(row, 8 * pair_index + a_word) };
                let (kk, j) = (kk as usize, 2 * pair_index as usize);
                acc[j] = mma_bf16_m16n8k16(fp[kk], [pair[0], pair[1]], acc[j]);
                acc[j + 1] = mma_bf16_m16n8k16(fp[kk], [pair[2], pair[3]], acc[j + 1]);
            });
        });
        // Every lane is done with this slot before the next tile's copies refill it.
        sync_warp();
    }
    unrolled::<2>(|h| {
        let total = sum[h as usize] + shfl_xor(sum[h as usize], 1);
        let total = total + shfl_xor(total, 2);
        let local = group + 8 * h;
        if local >= w.rows {
            return;
        }
        let row = w.kv * rows + w.row0 + local;
        let r = 2 * h as usize;
        // The padding's columns are not stored (a test that folds away where dim is D).
        let stored = |j: u32| dim == D || 8 * j < dim;
        if p.splits == 1 {
            unrolled_to(D / 8, |j| {
                if !stored(j) {
                    return;
                }
                let j = j as usize;
                let pair = round_pack_bf16x2(acc[j][r] / total, acc[j][r + 1] / total);
                // SAFETY: the row is one of O's, the column pair inside dim: 4-byte aligned.
                unsafe {
                    global_store(
                        o.add((row * dim + 8 * j as u32 + 2 * member) as usize).cast::<u32>(),
                        pair,
                    )
                };
            });
        } else {
            // A run with no key this row attends to weighs nothing: its output 0, its lse −∞.
            let inverse = if total == 0.0 { 0.0 } else { 1.0 / total };
            let at = row * p.splits + w.split;
            unrolled_to(D / 8, |j| {
                if !stored(j) {
                    return;
                }
                let j = j as usize;
                let pair = [acc[j][r] * inverse, acc[j][r + 1] * inverse];
                // SAFETY: the row's run inside `partial`, the pair inside dim: 8-byte aligned.
                unsafe {
                    global_store(
                        partial
                            .add((at * dim + 8 * j as u32 + 2 * member) as usize)
                            .cast::<[f32; 2]>(),
                        pair,
                    )
                };
            });
            if member == 0 {
                // SAFETY: the row's run inside the lse part of `partial`.
                unsafe { global_store(partial.add((p.lse_at() + at) as usize), max[h as usize] + log2(total)) };
            }
        }
    });
}

macro_rules! decode_entry {
    ($(#[$doc:meta])* $name:ident, $causal:literal) => {
        ptxkit::kernel! {
            #[launch_bounds(ptxkit::Dim3::x(THREADS), 1)]
            $(#[$doc])*
            #[allow(clippy::too_many_arguments)]
            pub unsafe fn $name(
                q: *const Bf16, k: *const Bf16, v: *const Bf16, o: *mut Bf16, partial: *mut f32,
                kv_heads: u32, rows: u32, queries: u32, keys: u32, dim: u32, chunk: u32, splits: u32,
            ) {
                let p = Decode { kv_heads, rows, queries, keys, dim, causal: $causal, chunk, splits };
                // SAFETY: the kernel's contract (dim a multiple of 8 up to 128: Decode::new). At
                // 64 and 128 the dimension is a constant, as before any other was taken.
                unsafe {
                    match dim {
                        64 => run::<64, $causal>((q, k, v, o), partial, &Decode { dim: 64, ..p }),
                        128 => run::<128, $causal>((q, k, v, o), partial, &Decode { dim: 128, ..p }),
                        narrow if narrow < 64 => run::<64, $causal>((q, k, v, o), partial, &p),
                        _ => run::<128, $causal>((q, k, v, o), partial, &p),
                    }
                }
            }
        }
    };
}

decode_entry!(
    /// Decoding attention over every key: each warp one run of keys for 16 query rows.
    attention_decode_split,
    false
);
decode_entry!(
    /// As `attention_decode_split`, query i attending to keys 0..=i.
    attention_decode_split_causal,
    true
);

/// Warps for every (KV head, run, row tile), [`WARPS`] to a block.
fn grid(p: &Decode, _: Occupancy) -> Dim3 {
    Dim3::x(p.warps().div_ceil(WARPS))
}

/// [`THREADS`] threads per block; 110.5 KiB of tiles, two blocks per SM on Hopper (one on sm_80).
pub const KERNEL: Kernel<Decode> = Kernel {
    code: attention_decode_split,
    block: Dim3::x(THREADS),
    shared: SharedMemory::opt_in(Tiles::BYTES),
    grid,
};

/// As [`KERNEL`], with the causal mask.
pub const KERNEL_CAUSAL: Kernel<Decode> = Kernel {
    code: attention_decode_split_causal,
    ..KERNEL
};
