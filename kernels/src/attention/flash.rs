//! Rung 1: `mma.sync` attention (FlashAttention-2's order of work). A block of four warps owns 64
//! query rows, each warp 16 of them. Q's tile is staged once and held as A fragments in registers;
//! K and V stream through a two-slot ring of 64-key tiles that `cp.async` fills one tile ahead.
//! Per tile each warp computes its 16×64 scores with Q·Kᵀ (K's rows by plain `ldmatrix`: a row of
//! K is a column of Kᵀ), masks them, folds them into its rows' running maximum and sum, and
//! multiplies their exponentials, rounded to bf16, by V (`ldmatrix.trans`). The accumulator layout
//! of the scores is the A-fragment layout of the second product, so the exponentials never leave
//! the registers.
//!
//! A row's four lanes (`lane / 4` equal) share its maximum by two shuffles per tile; the sum stays a
//! per-lane partial until the end. Staged rows are padded by 16 bytes (272 bytes apart), so the
//! eight rows of an `ldmatrix` fall on eight different bank groups.

use super::{Attention, key_tiles, log2_scale_of, query_block};
use ptxkit::device::mma::{Bf16, mma_bf16_m16n8k16, round_pack_bf16x2};
use ptxkit::device::{
    MatrixLayout, SharedMatrix, WARP_SIZE, async_copy_commit, async_copy_wait, block_idx, exp2, global_store, grid_dim,
    lane_id, log2, shfl_xor, sync_threads, thread_idx, unrolled, unrolled_to,
};
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory, shared_memory};

/// Query rows per block.
pub const ROWS: u32 = 64;
/// Keys per tile.
pub const KEYS: u32 = 64;
/// Four warps of 16 query rows.
pub const THREADS: u32 = 4 * WARP_SIZE;
/// The widest head the layout holds.
const MAX_DIM: u32 = 128;
/// bf16 per 16-byte chunk.
const CHUNK: u32 = 8;
/// Words per staged row: the widest head in bf16 pairs, plus 16 bytes of padding.
pub(crate) const PITCH: u32 = MAX_DIM / 2 + 4;
/// Where K's and V's two slots start, in staged rows (Q's tile first).
const K_ROWS: u32 = ROWS;
const V_ROWS: u32 = ROWS + 2 * KEYS;

shared_memory! {
    /// Q's tile, then K's two slots, then V's two, in bf16 pairs.
    pub struct Tiles {
        pub rows: SharedMatrix<u32> = MatrixLayout { rows: ROWS + 4 * KEYS, cols: MAX_DIM / 2, pitch: PITCH },
    }
}

/// Starts copying rows `first..first + rows` of one head's `[seq][D]` matrix into staged rows
/// `at..at + rows`, zeros past `seq`: this thread's chunks.
///
/// # Safety
/// `matrix` holds the head's seq·D elements, 16-byte aligned; the staged rows lie in `tiles`.
#[inline(always)]
pub(crate) unsafe fn stage<const D: u32>(
    tiles: &SharedMatrix<u32>,
    matrix: *const Bf16,
    seq: u32,
    (first, rows): (u32, u32),
    at: u32,
) {
    let tid = thread_idx().x;
    unrolled_to(rows * D / CHUNK / THREADS, |i| {
        let e = tid + i * THREADS;
        let (r, c) = (e / (D / CHUNK), e % (D / CHUNK));
        let inside = first + r < seq;
        // SAFETY: the source is inside the head where read (rows below seq), 16-byte aligned (D,
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

/// [`stage`] for a `[seq][dim]` matrix, `dim` a multiple of 8 up to `D`: the columns past `dim`
/// staged as zeros ([`super::stage_padded`]). At `dim` = `D` it is [`stage`], the code the
/// kernels at 64 and 128 were measured with.
///
/// # Safety
/// `matrix` holds the head's seq·dim elements, 16-byte aligned; the staged rows lie in `tiles`.
#[inline(always)]
pub(crate) unsafe fn stage_narrower<const D: u32>(
    tiles: &SharedMatrix<u32>,
    (matrix, dim): (*const Bf16, u32),
    seq: u32,
    (first, rows): (u32, u32),
    at: u32,
) {
    // SAFETY: forwarded; the block's THREADS threads share the copies.
    unsafe {
        if dim == D {
            stage::<D>(tiles, matrix, seq, (first, rows), at)
        } else {
            super::stage_padded::<D, THREADS>(tiles, (matrix, dim), (first, rows), seq, (at, thread_idx().x))
        }
    }
}

/// The kernel's body for head dimension `D` (see the module).
///
/// # Safety
/// Q and O hold heads·seq·D elements, K and V heads / kv_group · seq·D, 16-byte aligned; `lse`
/// is null or holds heads·seq floats; the grid is [`KERNEL`]'s.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the kernel's own arguments, as every rung takes them
unsafe fn run<const D: u32, const CAUSAL: bool>(
    q: *const Bf16,
    k: *const Bf16,
    v: *const Bf16,
    o: *mut Bf16,
    lse: *mut f32,
    seq: u32,
    kv_group: u32,
    maps: *const super::TensorMaps,
) {
    // Copies by cp.async: no tensor maps.
    let _ = maps;
    // SAFETY: forwarded; dim = D.
    unsafe { run_padded::<D, CAUSAL>((q, k, v, o, lse), seq, kv_group, D) }
}

/// The kernel's body for head dimension `dim` (a multiple of 8, at most `D`), staged and
/// multiplied `D` wide: the columns past `dim` are staged as zeros (adding nothing to the scores,
/// and nothing to the outputs, which are not stored there).
///
/// # Safety
/// Q and O hold heads·seq·dim elements, K and V heads / kv_group · seq·dim, 16-byte aligned, `lse`
/// null or heads·seq floats; the grid is [`KERNEL`]'s.
#[inline(always)]
unsafe fn run_padded<const D: u32, const CAUSAL: bool>(
    (q, k, v, o, lse): (*const Bf16, *const Bf16, *const Bf16, *mut Bf16, *mut f32),
    seq: u32,
    kv_group: u32,
    dim: u32,
) {
    let Tiles { rows: tiles } = Tiles::carve();
    let (lane, warp) = (lane_id(), thread_idx().x / WARP_SIZE);
    let (group, member) = (lane / 4, lane % 4);
    let head = (block_idx().y * seq * dim) as usize;
    let kv_head = (block_idx().y / kv_group * seq * dim) as usize;
    // SAFETY (the head's matrices): head·seq·dim + seq·dim ≤ heads·seq·dim elements, and as much
    // of K and V's heads / kv_group.
    let (q, k, v, o) = unsafe { (q.add(head), k.add(kv_head), v.add(kv_head), o.add(head)) };
    let first = query_block(CAUSAL, block_idx().x, grid_dim().x) * ROWS;
    let tiles_n = key_tiles(CAUSAL, seq, first, ROWS, KEYS);
    // SAFETY (stages): the kernel's contract; the staged rows inside the tiles.
    unsafe {
        stage_narrower::<D>(&tiles, (q, dim), seq, (first, ROWS), 0);
        stage_narrower::<D>(&tiles, (k, dim), seq, (0, KEYS), K_ROWS);
        stage_narrower::<D>(&tiles, (v, dim), seq, (0, KEYS), V_ROWS);
    }
    async_copy_commit();
    // Lane l gives row l % 8 of ldmatrix matrix l / 8. A (Q): matrices at rows +0, +8, then
    // columns +8. B from K's rows (keys): keys +0 at k +0 and +8, then keys +8. B from V (k =
    // keys, ldmatrix.trans): keys +0 and +8, then columns +8.
    let (a_row, a_word) = (lane % 8 + 8 * ((lane / 8) % 2), 4 * (lane / 16));
    let (k_row, k_word) = (lane % 8 + 8 * (lane / 16), 4 * ((lane / 8) % 2));
    let (v_row, v_word) = (a_row, a_word);
    let mut fq = [[0u32; 4]; (MAX_DIM / 16) as usize];
    let mut acc = [[0.0f32; 4]; (MAX_DIM / 8) as usize];
    // The running maximum (in log2 units, scaled) and this lane's partial sum of rows group and
    // group + 8.
    let mut max = [f32::NEG_INFINITY; 2];
    let mut sum = [0.0f32; 2];
    let scale = log2_scale_of::<D>(dim);
    let row_of = |h: u32| first + 16 * warp + group + 8 * h;
    for t in 0..tiles_n {
        let slot = t % 2;
        if t + 1 < tiles_n {
            let next = (t + 1) * KEYS;
            // SAFETY: as above; the other slot was released by the barrier ending tile t - 1.
            unsafe {
                stage_narrower::<D>(&tiles, (k, dim), seq, (next, KEYS), K_ROWS + (1 - slot) * KEYS);
                stage_narrower::<D>(&tiles, (v, dim), seq, (next, KEYS), V_ROWS + (1 - slot) * KEYS);
            }
            async_copy_commit();
            async_copy_wait::<1>();
        } else {
            async_copy_wait::<0>();
        }
        sync_threads();
        if t == 0 {
            unrolled_to(D / 16, |kk| {
                // SAFETY (ldmatrix): rows below ROWS, words + 4 within D / 2, 16-byte aligned.
                fq[kk as usize] = unsafe { tiles.load_matrices_x4(16 * warp + a_row, 8 * kk + a_word) };
            });
        }
        // Scores: 16 rows × 64 keys, eight 16×8 tiles.
        let mut s = [[0.0f32; 4]; (KEYS / 8) as usize];
        unrolled_to(D / 16, |kk| {
            unrolled::<{ KEYS / 16 }>(|p| {
                // SAFETY (ldmatrix): K's slot rows, words + 4 within D / 2, aligned.
                let pair = unsafe { tiles.load_matrices_x4(K_ROWS + slot * KEYS + 16 * p + k_row, 8 * kk + k_word) };
                let (kk, p) = (kk as usize, p as usize);
                s[2 * p] = mma_bf16_m16n8k16(fq[kk], [pair[0], pair[1]], s[2 * p]);
                s[2 * p + 1] = mma_bf16_m16n8k16(fq[kk], [pair[2], pair[3]], s[2 * p + 1]);
            });
        });
        // Scaled into log2 units, masked, and folded into the running maximum.
        let key0 = t * KEYS;
        let mut tile_max = [f32::NEG_INFINITY; 2];
        unrolled::<{ KEYS / 8 }>(|j| {
            unrolled::<4>(|r| {
                let key = key0 + 8 * j + 2 * member + r % 2;
                let h = (r / 2) as usize;
                let masked = key >= seq || (CAUSAL && key > row_of(r / 2));
                let x = &mut s[j as usize][r as usize];
                *x = if masked { f32::NEG_INFINITY } else { *x * scale };
                tile_max[h] = tile_max[h].max(*x);
            });
        });
        let mut base = [0.0f32; 2];
        let mut alpha = [0.0f32; 2];
        unrolled::<2>(|h| {
            let h = h as usize;
            let m = tile_max[h].max(shfl_xor(tile_max[h], 1));
            let m = m.max(shfl_xor(m, 2)).max(max[h]);
            // A row with every key so far masked keeps e^(−∞ − 0) = 0 rather than NaN.
            base[h] = if m == f32::NEG_INFINITY { 0.0 } else { m };
            alpha[h] = exp2(max[h] - base[h]);
            max[h] = m;
            sum[h] *= alpha[h];
        });
        unrolled_to(D / 8, |j| {
            unrolled::<4>(|r| acc[j as usize][r as usize] *= alpha[(r / 2) as usize]);
        });
        // The exponentials, as the A fragments of P·V: keys 16·kk.. of the tile.
        let mut fp = [[0u32; 4]; (KEYS / 16) as usize];
        unrolled::<{ KEYS / 8 }>(|j| {
            let e: [f32; 4] = core::array::from_fn(|r| exp2(s[j as usize][r] - base[r / 2]));
            sum[0] += e[0] + e[1];
            sum[1] += e[2] + e[3];
            let (kk, half) = ((j / 2) as usize, 2 * (j % 2) as usize);
            fp[kk][half] = round_pack_bf16x2(e[0], e[1]);
            fp[kk][half + 1] = round_pack_bf16x2(e[2], e[3]);
        });
        unrolled::<{ KEYS / 16 }>(|kk| {
            unrolled_to(D / 16, |p| {
                // SAFETY (ldmatrix): V's slot rows, words + 4 within D / 2, aligned.
                let pair =
                    unsafe { tiles.load_matrices_x4_trans(V_ROWS + slot * KEYS + 16 * kk + v_row, 8 * p + v_word) };
                let (kk, p) = (kk as usize, p as usize);
                acc[2 * p] = mma_bf16_m16n8k16(fp[kk], [pair[0], pair[1]], acc[2 * p]);
                acc[2 * p + 1] = mma_bf16_m16n8k16(fp[kk], [pair[2], pair[3]], acc[2 * p + 1]);
            });
        });
        // Every warp is done with this slot before the next tile's copies refill it.
        sync_threads();
    }
    unrolled::<2>(|h| {
        let total = sum[h as usize] + shfl_xor(sum[h as usize], 1);
        let total = total + shfl_xor(total, 2);
        let row = row_of(h);
        if !lse.is_null() && member == 0 && row < seq {
            // The row's log-sum-exp in log2 units of the scaled scores (the maximum is kept so).
            // SAFETY: the head's row below seq: inside `lse`'s heads·seq floats.
            unsafe {
                global_store(
                    lse.add((block_idx().y * seq + row) as usize),
                    max[h as usize] + log2(total),
                )
            };
        }
        if row < seq {
            unrolled_to(D / 8, |j| {
                // The padding's columns are not stored (a test that folds away where dim is D).
                if dim == D || 8 * j < dim {
                    let (j, r) = (j as usize, 2 * h as usize);
                    let pair = round_pack_bf16x2(acc[j][r] / total, acc[j][r + 1] / total);
                    // SAFETY: row < seq, the column pair inside dim: inside the head's O, 4-byte
                    // aligned.
                    unsafe {
                        global_store(
                            o.add((row * dim + 8 * j as u32 + 2 * member) as usize).cast::<u32>(),
                            pair,
                        )
                    };
                }
            });
        }
    });
}

super::entries!(
    [ptxkit::Dim3::x(THREADS), 2],
    kernel,
    run,
    /// Attention over every key, `mma.sync`.
    attention_flash,
    /// Attention over the keys up to each query, `mma.sync`.
    attention_causal_flash
);

ptxkit::kernel! {
    #[launch_bounds(ptxkit::Dim3::x(THREADS), 2)]
    /// Attention over every key, `mma.sync`, for any head dimension that is a multiple of 8 up to
    /// 128: staged 64 or 128 wide.
    pub unsafe fn attention_flash_any_dim(q: *const Bf16, k: *const Bf16, v: *const Bf16, o: *mut Bf16, lse: *mut f32, kv_group: u32, seq: u32, dim: u32, maps: *const super::TensorMaps) {
        // Copies by cp.async: no tensor maps.
        let _ = maps;
        // SAFETY: the kernel's contract (dim a multiple of 8 up to 128: Attention::any_dim).
        unsafe {
            if dim <= 64 {
                run_padded::<64, false>((q, k, v, o, lse), seq, kv_group, dim)
            } else {
                run_padded::<128, false>((q, k, v, o, lse), seq, kv_group, dim)
            }
        }
    }
}

ptxkit::kernel! {
    #[launch_bounds(ptxkit::Dim3::x(THREADS), 2)]
    /// Attention over the keys up to each query, `mma.sync`, for any head dimension that is a
    /// multiple of 8 up to 128.
    pub unsafe fn attention_causal_flash_any_dim(q: *const Bf16, k: *const Bf16, v: *const Bf16, o: *mut Bf16, lse: *mut f32, kv_group: u32, seq: u32, dim: u32, maps: *const super::TensorMaps) {
        let _ = maps;
        // SAFETY: as above.
        unsafe {
            if dim <= 64 {
                run_padded::<64, true>((q, k, v, o, lse), seq, kv_group, dim)
            } else {
                run_padded::<128, true>((q, k, v, o, lse), seq, kv_group, dim)
            }
        }
    }
}

/// One block per 64 query rows of each head.
fn grid(p: &Attention, _: Occupancy) -> Dim3 {
    Dim3::xy(p.seq.div_ceil(ROWS), p.heads)
}

/// [`THREADS`] threads per block; 85 KiB of tiles, two blocks per SM.
pub const KERNEL: Kernel<Attention> = Kernel {
    code: attention_flash,
    block: Dim3::x(THREADS),
    shared: SharedMemory::opt_in(Tiles::BYTES),
    grid,
};

/// As [`KERNEL`], with the causal mask.
pub const KERNEL_CAUSAL: Kernel<Attention> = Kernel {
    code: attention_causal_flash,
    ..KERNEL
};

/// As [`KERNEL`], for any head dimension that is a multiple of 8 up to 128.
pub const KERNEL_ANY_DIM: Kernel<Attention> = Kernel {
    code: attention_flash_any_dim,
    ..KERNEL
};

/// As [`KERNEL_ANY_DIM`], with the causal mask.
pub const KERNEL_ANY_DIM_CAUSAL: Kernel<Attention> = Kernel {
    code: attention_causal_flash_any_dim,
    ..KERNEL
};
