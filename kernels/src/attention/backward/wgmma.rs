//! The backward pass on Hopper's `wgmma` (sm_90a, GPU only): dK and dV of a block of 128 keys of one
//! KV head, and that block's share of dQ added into f32 sums, in FlashAttention-3's formulation.
//! [`super::statistics`] runs first (each query row's lse and Δ, the sums zeroed), [`super::finish`]
//! last (dQ from the sums).
//!
//! Two warpgroups of 64 keys. K's and V's 128 rows are staged once; Q's and dO's tiles of 64 query
//! rows, with their rows' lse and Δ, stream through a two-slot `cp.async` ring, in the 128-byte
//! swizzle of [`crate::attention::warpgroup`] (a tile's 64-column atom `a` at staged row
//! `rows·a + r`). Per tile, each warpgroup:
//!
//! * Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ: 64×64, both operands K-major (a row of Q is a column of Qᵀ);
//! * Pᵀ = 2^(Sᵀ·scale − lse) and dSᵀ = Pᵀ ∘ (dPᵀ − Δ) in registers, masked keys and rows zero;
//! * dV += Pᵀ·dO and dK += dSᵀ·Q with Pᵀ and dSᵀ, rounded to bf16, as `wgmma`'s register operand
//!   and dO and Q read MN-major (rows of the product's k);
//! * dSᵀ also into shared memory, where dQ's product reads it MN-major: at D = 128 each warpgroup
//!   multiplies all 128 keys' dS by its half of K's columns, at D = 64 its own 64 keys' dS by all of
//!   them; the 64×64 result is added into the sums by `red.global.add.v2.f32`.
//!
//! Head dimensions 64 and 128 (the host sends others to the `mma.sync` launches).

use super::{AttentionBackward, THREADS as MMA_THREADS};
use crate::attention::warpgroup::{ROW_BYTES, SLACK_ROWS};
use ptxkit::device::{MatrixLayout, SharedMatrix, WARP_SIZE};
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory, shared_memory};

/// Keys per block: two warpgroups of 64.
pub const KEYS: u32 = 128;
/// Query rows per streamed tile.
pub const QUERIES: u32 = 64;
/// Two warpgroups.
pub const THREADS: u32 = 8 * WARP_SIZE;

/// Staged rows (of [`ROW_BYTES`]) of a tile of `rows` rows of the widest head: two atoms.
const fn tile_rows(rows: u32) -> u32 {
    2 * rows
}
/// Where the tiles start, in staged rows: K, V (in the body), Q's two slots, dO's two, then dSᵀ
/// (a row per key, 64 query columns: one atom).
const Q_AT: u32 = 2 * tile_rows(KEYS);
const DO_AT: u32 = Q_AT + 2 * tile_rows(QUERIES);
const DS_AT: u32 = DO_AT + 2 * tile_rows(QUERIES);
const STAGED_ROWS: u32 = DS_AT + KEYS;

shared_memory! {
    /// The tiles in 128-byte rows of 32 words; the streamed rows' lse (rows 0 and 1, one per slot)
    /// and Δ (2, 3).
    pub struct Tiles {
        pub rows: SharedMatrix<u32> = MatrixLayout::dense(STAGED_ROWS + SLACK_ROWS, ROW_BYTES / 4),
        pub stats: SharedMatrix<f32> = MatrixLayout { rows: 4, cols: QUERIES, pitch: QUERIES },
    }
}

const _: () = assert!(THREADS == 2 * MMA_THREADS);

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
mod body {
    use super::super::{Arrays, scales};
    use super::*;
    use crate::attention::warpgroup::{Halves, stage_rows};
    use ptxkit::device::mma::{Bf16, round_pack_bf16x2};
    use ptxkit::device::wgmma::{
        Descriptor, fence_proxy_async, shared_address, wgmma_commit, wgmma_fence, wgmma_m64n64k16_bf16_k_major,
        wgmma_m64n64k16_bf16_mn_major, wgmma_m64n64k16_bf16_registers, wgmma_m64n128k16_bf16_registers, wgmma_wait,
        wgmma_wait_reading,
    };
    use ptxkit::device::{
        async_copy_commit, async_copy_wait, block_idx, exp2, global_store, grid_dim, lane_id, red_add2, shfl_idx,
        sync_threads, thread_idx, unrolled, unrolled_to,
    };

    /// Where K's and V's tiles start, in staged rows.
    const K_AT: u32 = 0;
    const V_AT: u32 = tile_rows(KEYS);

    /// The query tiles of one KV head's query heads, in the order the block takes them:
    /// `per_head` tiles of each head from tile `start`.
    struct Queries {
        arrays: Arrays,
        kv_group: u32,
        heads: u32,
        seq: u32,
        start: u32,
        per_head: u32,
    }

    impl Queries {
        /// Query tile `t`'s head and first row.
        #[inline(always)]
        fn place(&self, t: u32) -> (u32, u32) {
            (
                block_idx().y * self.kv_group + t / self.per_head,
                (self.start + t % self.per_head) * QUERIES,
            )
        }

        /// Starts copying tile `t`'s Q, dO, lse and Δ into `slot`.
        ///
        /// # Safety
        /// The arrays as the kernel's contract has them; the tiles carved, `skew` their rows before
        /// the first 1024-byte boundary.
        #[inline(always)]
        unsafe fn stage<const D: u32>(
            &self,
            (tiles, stats, skew): (&SharedMatrix<u32>, &SharedMatrix<f32>, u32),
            t: u32,
            slot: u32,
        ) {
            let (seq, tid) = (self.seq, thread_idx().x);
            let (head, first) = self.place(t);
            let at = (head * seq * D) as usize;
            // SAFETY: the head's Q and dO inside the arrays; the slots inside the tiles; the
            // statistics' rows below seq inside `stats`, 4-byte aligned.
            unsafe {
                stage_rows::<D, QUERIES>(
                    tiles,
                    self.arrays.q.add(at),
                    seq,
                    first,
                    skew + Q_AT + slot * tile_rows(QUERIES),
                );
                stage_rows::<D, QUERIES>(
                    tiles,
                    self.arrays.d_o.add(at),
                    seq,
                    first,
                    skew + DO_AT + slot * tile_rows(QUERIES),
                );
                if tid < 2 * QUERIES {
                    let (which, i) = (tid / QUERIES, tid % QUERIES);
                    let inside = first + i < seq;
                    let index = which * self.heads * seq + head * seq + if inside { first + i } else { 0 };
                    stats.copy1_async_zero_fill_unchecked(
                        2 * which + slot,
                        i,
                        self.arrays.stats.add(index as usize),
                        inside,
                    );
                }
            }
        }
    }

    /// The descriptor of a K-major operand's k-step `kk` (16 columns): 32 bytes along a swizzled
    /// row, the next 64 columns an atom (`atom` bytes) on.
    #[inline(always)]
    fn k_major(rows: u32, atom: u32, kk: u32) -> Descriptor {
        Descriptor::swizzle_128(rows + atom * (kk / 4) + 32 * (kk % 4), 16, 1024)
    }

    /// The descriptor of an MN-major operand's k-step `kk` (16 rows on), its 64-column atoms `atom`
    /// bytes apart.
    #[inline(always)]
    fn mn_major(rows: u32, atom: u32, kk: u32) -> Descriptor {
        Descriptor::swizzle_128(rows + 16 * ROW_BYTES * kk, atom, 1024)
    }

    /// `acc += A·B` over 16 rows of k, A as four registers a lane, B MN-major 64 or 128 wide.
    #[inline(always)]
    fn by_registers<const D: u32>(acc: &mut Halves, a: [u32; 4], b: Descriptor) {
        if D == 64 {
            wgmma_m64n64k16_bf16_registers(&mut acc.0, a, b);
        } else {
            wgmma_m64n128k16_bf16_registers((&mut acc.0, &mut acc.1), a, b);
        }
    }

    /// The bf16 A registers of a 64×64 product's four k-steps from a lane's 32 accumulators (the
    /// accumulators' columns are the next product's k).
    #[inline(always)]
    fn registers_of(x: &[f32; 32]) -> [[u32; 4]; 4] {
        core::array::from_fn(|kk| {
            let (even, odd) = (8 * kk, 8 * kk + 4);
            [
                round_pack_bf16x2(x[even], x[even + 1]),
                round_pack_bf16x2(x[even + 2], x[even + 3]),
                round_pack_bf16x2(x[odd], x[odd + 1]),
                round_pack_bf16x2(x[odd + 2], x[odd + 3]),
            ]
        })
    }

    /// The kernel's body for head dimension `D` (see the module).
    ///
    /// # Safety
    /// The arrays as [`super::AttentionBackward`] lays them out for `kv_group` and `seq`, 16-byte
    /// aligned, `stats` as [`super::super::statistics`] left it; `dim` is `D`; the grid is
    /// [`KERNEL`]'s.
    #[inline(always)]
    pub unsafe fn run<const D: u32, const CAUSAL: bool>(arrays: Arrays, kv_group: u32, seq: u32, dim: u32) {
        let _ = dim;
        let Tiles { rows: tiles, stats } = Tiles::carve();
        let tid = thread_idx().x;
        // Uniform across the warpgroup for ptxas (else it serialises the `wgmma`s).
        let group = shfl_idx(tid / 128, 0);
        let (warp, lane) = ((tid / WARP_SIZE) % 4, lane_id());
        let (quad, member) = (lane / 4, lane % 4);
        let base = shared_address(tiles.element_ptr(0, 0));
        let skew = (1024 - base % 1024) % 1024 / ROW_BYTES;
        let address = |row: u32| base + (skew + row) * ROW_BYTES;
        let kv_head = block_idx().y;
        let heads = grid_dim().y * kv_group;
        let kv_at = (kv_head * seq * D) as usize;
        // SAFETY (the KV head's matrices, and the sums after the statistics): inside K, V, dK, dV
        // and `stats` by the kernel's contract.
        let (k, v, dk, dv, sums) = unsafe {
            (
                arrays.k.add(kv_at),
                arrays.v.add(kv_at),
                arrays.dk.add(kv_at),
                arrays.dv.add(kv_at),
                arrays.stats.add(super::super::sums_at(heads, seq)),
            )
        };
        let key0 = block_idx().x * KEYS;
        // Query tiles from the one holding the block's first key (causal) or from the first.
        let start = if CAUSAL { key0 / QUERIES } else { 0 };
        let per_head = seq.div_ceil(QUERIES) - start;
        let tiles_n = kv_group * per_head;
        let queries = Queries {
            arrays,
            kv_group,
            heads,
            seq,
            start,
            per_head,
        };
        let carve = (&tiles, &stats, skew);
        // SAFETY (stages): the kernel's contract; every tile inside the carve.
        unsafe {
            stage_rows::<D, KEYS>(&tiles, k, seq, key0, skew + K_AT);
            stage_rows::<D, KEYS>(&tiles, v, seq, key0, skew + V_AT);
            queries.stage::<D>(carve, 0, 0);
        }
        async_copy_commit();
        let (scale, plain_scale) = scales::<D>(D);
        // This lane's keys: accumulator rows quad and quad + 8 of its warp's 16.
        let my_key = 64 * group + 16 * warp + quad;
        let keys = [key0 + my_key, key0 + my_key + 8];
        const KEY_ATOM: u32 = KEYS * ROW_BYTES;
        const QUERY_ATOM: u32 = QUERIES * ROW_BYTES;
        let mut dk_acc: Halves = ([0.0; 32], [0.0; 32]);
        let mut dv_acc: Halves = ([0.0; 32], [0.0; 32]);
        for t in 0..tiles_n {
            let slot = t % 2;
            if t + 1 < tiles_n {
                // The other slot was released by the barrier ending tile t - 1.
                // SAFETY: as above.
                unsafe { queries.stage::<D>(carve, t + 1, 1 - slot) };
                async_copy_commit();
                async_copy_wait::<1>();
            } else {
                async_copy_wait::<0>();
            }
            // This thread's copies seen by the tensor cores, then everyone's.
            fence_proxy_async();
            sync_threads();
            let (head, first) = queries.place(t);
            let q_rows = address(Q_AT + slot * tile_rows(QUERIES));
            let do_rows = address(DO_AT + slot * tile_rows(QUERIES));
            let (k_rows, v_rows) = (address(K_AT + 64 * group), address(V_AT + 64 * group));
            let mut s = [0.0f32; 32];
            let mut dp = [0.0f32; 32];
            wgmma_fence();
            unrolled_to(D / 16, |kk| {
                wgmma_m64n64k16_bf16_k_major(&mut s, k_major(k_rows, KEY_ATOM, kk), k_major(q_rows, QUERY_ATOM, kk));
            });
            wgmma_commit();
            unrolled_to(D / 16, |kk| {
                wgmma_m64n64k16_bf16_k_major(&mut dp, k_major(v_rows, KEY_ATOM, kk), k_major(do_rows, QUERY_ATOM, kk));
            });
            wgmma_commit();
            wgmma_wait::<1>();
            // Register 4·j + r: key keys[r / 2], query first + 8·j + 2·member + r % 2.
            unrolled::<32>(|i| {
                let (j, r) = (i / 4, i % 4);
                let c = 8 * j + 2 * member + r % 2;
                let (query, key) = (first + c, keys[(r / 2) as usize]);
                let masked = query >= seq || key >= seq || (CAUSAL && key > query);
                s[i as usize] = if masked {
                    0.0
                } else {
                    exp2(s[i as usize] * scale - stats.get(slot, c))
                };
            });
            wgmma_wait::<0>();
            unrolled::<32>(|i| {
                let (j, r) = (i / 4, i % 4);
                let delta = stats.get(2 + slot, 8 * j + 2 * member + r % 2);
                let p = s[i as usize];
                // A zero weight (a masked key, or one that underflowed) adds nothing, even where
                // dP is not finite.
                dp[i as usize] = if p == 0.0 { 0.0 } else { p * (dp[i as usize] - delta) };
            });
            let p_registers = registers_of(&s);
            let ds_registers = registers_of(&dp);
            wgmma_fence();
            unrolled::<4>(|kk| {
                by_registers::<D>(&mut dv_acc, p_registers[kk as usize], mn_major(do_rows, QUERY_ATOM, kk));
            });
            unrolled::<4>(|kk| {
                by_registers::<D>(&mut dk_acc, ds_registers[kk as usize], mn_major(q_rows, QUERY_ATOM, kk));
            });
            wgmma_commit();
            // dSᵀ's rows (keys) into shared memory, a pair of query columns a word: word `member`
            // of chunk j, swizzled by the row (my_key % 8 = quad).
            unrolled::<4>(|kk| {
                unrolled::<4>(|w| {
                    let j = 2 * kk + w / 2;
                    let row = DS_AT + my_key + 8 * (w % 2);
                    // SAFETY: the row inside the tiles, the word inside it.
                    unsafe {
                        tiles.set_unchecked(
                            skew + row,
                            4 * (j ^ quad) + member,
                            ds_registers[kk as usize][w as usize],
                        )
                    };
                });
            });
            fence_proxy_async();
            sync_threads();
            let mut dq = [0.0f32; 32];
            wgmma_fence();
            if D == 128 {
                // All 128 keys' dS by this warpgroup's 64 columns of K.
                let (ds_rows, k_half) = (address(DS_AT), address(K_AT) + KEY_ATOM * group);
                unrolled::<8>(|kk| {
                    wgmma_m64n64k16_bf16_mn_major(
                        &mut dq,
                        mn_major(ds_rows, QUERY_ATOM, kk),
                        mn_major(k_half, KEY_ATOM, kk),
                    );
                });
            } else {
                // This warpgroup's 64 keys' dS by all 64 columns of K.
                let (ds_rows, k_rows) = (address(DS_AT + 64 * group), address(K_AT + 64 * group));
                unrolled::<4>(|kk| {
                    wgmma_m64n64k16_bf16_mn_major(
                        &mut dq,
                        mn_major(ds_rows, QUERY_ATOM, kk),
                        mn_major(k_rows, KEY_ATOM, kk),
                    );
                });
            }
            wgmma_commit();
            let mut in_flight = [[0u32; 4]; 8];
            unrolled::<4>(|kk| {
                in_flight[kk as usize] = p_registers[kk as usize];
                in_flight[4 + kk as usize] = ds_registers[kk as usize];
            });
            wgmma_wait_reading::<0>(&in_flight);
            // dQ's rows are queries: register 4·j + r is query first + 16·warp + quad + 8·(r / 2),
            // column (64·group at D = 128) + 8·j + 2·member.
            let column0 = if D == 128 { 64 * group } else { 0 };
            unrolled::<2>(|h| {
                let query = first + 16 * warp + quad + 8 * h;
                if query < seq {
                    unrolled::<8>(|j| {
                        let i = (4 * j + 2 * h) as usize;
                        let at = ((head * seq + query) * D + column0 + 8 * j + 2 * member) as usize;
                        // SAFETY: query < seq, the pair inside D: inside the head's sums, 8-byte
                        // aligned (they start 16-byte aligned; an even column).
                        unsafe { red_add2(sums.add(at), (dq[i], dq[i + 1])) };
                    });
                }
            });
            // Every warpgroup is done with this slot and with dSᵀ before they are refilled.
            sync_threads();
        }
        unrolled::<2>(|h| {
            let key = keys[h as usize];
            if key < seq {
                unrolled_to(D / 8, |j| {
                    let r = (4 * (j % 8) + 2 * h) as usize;
                    let (dk_half, dv_half) = if j < 8 {
                        (&dk_acc.0, &dv_acc.0)
                    } else {
                        (&dk_acc.1, &dv_acc.1)
                    };
                    let at = (key * D + 8 * j + 2 * member) as usize;
                    let k_pair = round_pack_bf16x2(dk_half[r] * plain_scale, dk_half[r + 1] * plain_scale);
                    let v_pair = round_pack_bf16x2(dv_half[r], dv_half[r + 1]);
                    // SAFETY: key < seq, the pair inside D: inside the KV head's dK and dV, aligned.
                    unsafe {
                        global_store(dk.add(at).cast::<u32>(), k_pair);
                        global_store(dv.add(at).cast::<u32>(), v_pair);
                    }
                });
            }
        });
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
use body::run;

/// A PTX entry of a `wgmma` launch of the pass, every key or (`$flag`) causal, running
/// `$run::<D, $flag>` at head dimension D = 64 or 128.
macro_rules! wgmma_entries {
    ($flag:literal, $run:ident, $(#[$doc:meta])* $name:ident) => {
        ptxkit::kernel_sm90a! {
            #[launch_bounds(ptxkit::Dim3::x(THREADS), 1)]
            $(#[$doc])*
            #[allow(clippy::too_many_arguments)]
            pub unsafe fn $name(
                q: *const ptxkit::device::mma::Bf16, k: *const ptxkit::device::mma::Bf16,
                v: *const ptxkit::device::mma::Bf16, o: *const ptxkit::device::mma::Bf16,
                d_o: *const ptxkit::device::mma::Bf16, dq: *mut ptxkit::device::mma::Bf16,
                dk: *mut ptxkit::device::mma::Bf16, dv: *mut ptxkit::device::mma::Bf16, stats: *mut f32,
                kv_group: u32, seq: u32, dim: u32,
            ) {
                let arrays = super::Arrays { q, k, v, o, d_o, dq, dk, dv, stats };
                // SAFETY: the kernel's contract (dim 64 or 128).
                unsafe {
                    if dim == 64 {
                        $run::<64, $flag>(arrays, kv_group, seq, 64)
                    } else {
                        $run::<128, $flag>(arrays, kv_group, seq, 128)
                    }
                }
            }
        }
    };
}

pub(crate) use wgmma_entries;

wgmma_entries!(
    false,
    run,
    /// Attention's backward on `wgmma`: dK, dV and the sums of dQ.
    attention_backward_wgmma
);
wgmma_entries!(
    true,
    run,
    /// As `attention_backward_wgmma`, with the causal mask.
    attention_backward_wgmma_causal
);

/// One block per 128 keys of each KV head.
fn grid(p: &AttentionBackward, _: Occupancy) -> Dim3 {
    Dim3::xy(p.0.seq.div_ceil(KEYS), p.0.heads / p.0.kv_group)
}

/// [`THREADS`] threads per block; 146 KiB of tiles, one block per SM.
pub const KERNEL: Kernel<AttentionBackward> = Kernel {
    code: attention_backward_wgmma,
    block: Dim3::x(THREADS),
    shared: SharedMemory::opt_in(Tiles::BYTES),
    grid,
};

/// As [`KERNEL`], with the causal mask.
pub const KERNEL_CAUSAL: Kernel<AttentionBackward> = Kernel {
    code: attention_backward_wgmma_causal,
    ..KERNEL
};
