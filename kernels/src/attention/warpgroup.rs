//! What the `wgmma` attention rungs share: the block's shape, the swizzled staging of Q, K and V,
//! the two products of one warpgroup, the online softmax over its scores, and the store of O.
//!
//! A block of two warpgroups owns 128 query rows, each warpgroup 64. Tiles of 128 rows of Q, K or
//! V are staged by `cp.async` in the 128-byte swizzle (see [`ptxkit::device::wgmma`]): a row's
//! 64-column atom `a` at staged row `128·a + r`, its chunk c at chunk `c ^ (r % 8)`. Q and K are
//! read K-major (a row of K is a column of Kᵀ, so Q·Kᵀ needs no transpose), V MN-major as a GEMM's
//! B. The scores' accumulators are the A registers of P·V once rounded to bf16: P never goes
//! through shared memory.
//!
//! A lane's accumulators of a 64×128 product, in two halves of 64 columns: register 4·j + r of a
//! half is column 8·j + 2·member + r % 2 of row `quad + 8·(r / 2)` of its warp's 16.

use ptxkit::device::WARP_SIZE;

/// Query rows per block: two warpgroups of 64.
pub const ROWS: u32 = 128;
/// Keys per tile.
pub const KEYS: u32 = 128;
/// Two warpgroups of four warps.
pub const THREADS: u32 = 8 * WARP_SIZE;
/// Bytes of one swizzled row: 64 bf16.
pub const ROW_BYTES: u32 = 128;
/// Staged rows of one tile of the widest head (128 columns: two atoms).
pub const TILE_ROWS: u32 = 2 * KEYS;
/// Rows kept free to align the tiles to 1024 bytes (the swizzle's atom) wherever the carve lands.
pub const SLACK_ROWS: u32 = 1024 / ROW_BYTES;

// The sm_90a kernel bodies' side; elsewhere the bodies are stubs.
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
pub use body::*;

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
mod body {
    use super::{KEYS, ROW_BYTES, ROWS, THREADS, WARP_SIZE};
    use crate::attention::{key_tiles, query_block};
    use ptxkit::device::mma::{Bf16, round_pack_bf16x2};
    use ptxkit::device::wgmma::shared_address;
    use ptxkit::device::wgmma::{
        Descriptor, wgmma_m64n64k16_bf16_registers, wgmma_m64n128k16_bf16_k_major, wgmma_m64n128k16_bf16_registers,
    };
    use ptxkit::device::{SharedMatrix, exp2, fma, global_store, log2, shfl_xor, thread_idx, unrolled, unrolled_to};
    use ptxkit::device::{block_idx, grid_dim, indices_again, lane_id, shfl_idx};

    /// bf16 per 16-byte chunk.
    const CHUNK: u32 = 8;

    /// A lane's 64×128 accumulators (or 64×64 in the low half), columns 0–63 and 64–127.
    pub type Halves = ([f32; 32], [f32; 32]);

    /// Where one block of a `wgmma` rung works: this thread's warpgroup and rows, the block's key
    /// tiles, and its tiles' shared addresses, counted from the first 1024-byte boundary (the
    /// swizzle's atom) of the carve.
    #[derive(Clone, Copy)]
    pub struct Block {
        /// This thread's warpgroup, read through a shuffle: ptxas must see that it is uniform
        /// across the warpgroup, else it serialises the `wgmma`s.
        pub group: u32,
        /// The first of the block's query rows.
        pub first: u32,
        /// The key tiles its rows attend to.
        pub tiles: u32,
        /// This lane's two rows of its warpgroup's accumulators.
        pub rows: [u32; 2],
        /// Staged rows before the first 1024-byte boundary.
        pub skew: u32,
        base: u32,
    }

    impl Block {
        /// The block's place: query block `block_idx().x` (the last first when `CAUSAL`), the
        /// tiles' start at `tiles`' first row.
        #[inline(always)]
        pub fn new<const CAUSAL: bool>(tiles: &SharedMatrix<u32>, seq: u32) -> Block {
            let tid = thread_idx().x;
            let group = shfl_idx(tid / 128, 0);
            let first = query_block(CAUSAL, block_idx().x, grid_dim().x) * ROWS;
            let row0 = first + 64 * group + 16 * ((tid / WARP_SIZE) % 4) + lane_id() / 4;
            let base = shared_address(tiles.element_ptr(0, 0));
            Block {
                group,
                first,
                tiles: key_tiles(CAUSAL, seq, first, ROWS, KEYS),
                rows: [row0, row0 + 8],
                skew: (1024 - base % 1024) % 1024 / ROW_BYTES,
                base,
            }
        }

        /// The shared address of staged row `row`, counted from the boundary.
        #[inline(always)]
        pub fn address(&self, row: u32) -> u32 {
            self.base + (self.skew + row) * ROW_BYTES
        }

        /// This warpgroup's 64 rows of Q's tile (staged first).
        #[inline(always)]
        pub fn q_rows(&self) -> u32 {
            self.address(64 * self.group)
        }

        /// Whether key tile `t` needs its keys tested (see [`tile_needs_mask`]).
        #[inline(always)]
        pub fn needs_mask<const CAUSAL: bool>(&self, t: u32, seq: u32) -> bool {
            tile_needs_mask::<CAUSAL>(t, seq, self.first)
        }
    }

    /// Element offset of query head `block_idx().y`'s matrices in Q and O.
    #[inline(always)]
    pub fn head_offset<const D: u32>(seq: u32) -> usize {
        (block_idx().y * seq * D) as usize
    }

    /// Element offset in K and V of the head query head `block_idx().y` reads, shared by
    /// `kv_group` query heads.
    #[inline(always)]
    pub fn kv_head_offset<const D: u32>(seq: u32, kv_group: u32) -> usize {
        (block_idx().y / kv_group * seq * D) as usize
    }

    /// Starts copying rows `first..first + 128` of one head's `[seq][D]` matrix into the tile whose
    /// first staged row is `at`, zeros past `seq`: this thread's chunks.
    ///
    /// # Safety
    /// `matrix` holds the head's seq·D elements, 16-byte aligned; the tile lies in `tiles`.
    #[inline(always)]
    pub unsafe fn stage<const D: u32>(tiles: &SharedMatrix<u32>, matrix: *const Bf16, seq: u32, first: u32, at: u32) {
        // SAFETY: forwarded.
        unsafe { stage_rows::<D, KEYS>(tiles, matrix, seq, first, at) }
    }

    /// [`stage`] for a tile of `R` rows (its atoms `R` rows apart): a multiple of 32 rows.
    ///
    /// # Safety
    /// As [`stage`]'s.
    #[inline(always)]
    pub unsafe fn stage_rows<const D: u32, const R: u32>(
        tiles: &SharedMatrix<u32>,
        matrix: *const Bf16,
        seq: u32,
        first: u32,
        at: u32,
    ) {
        let tid = thread_idx().x;
        unrolled_to(R * D / CHUNK / THREADS, |i| {
            let e = tid + i * THREADS;
            let (r, c) = (e / (D / CHUNK), e % (D / CHUNK));
            let inside = first + r < seq;
            let row = at + R * (c / 8) + r;
            // SAFETY: the source inside the head where read, 16-byte aligned; the row inside the
            // tiles, the word + 4 inside it.
            unsafe {
                let src = if inside {
                    matrix.add(((first + r) * D + c * CHUNK) as usize)
                } else {
                    matrix
                };
                tiles.copy4_async_zero_fill_unchecked(
                    row,
                    4 * ((c % 8) ^ (r % 8)),
                    src.cast::<u32>(),
                    4 * inside as u32,
                );
            }
        });
    }

    /// Issues `s += Q·Kᵀ` for the warpgroup: Q's 64 rows at shared address `q`, K's tile at `k`, k = D
    /// in steps of 16 (32 bytes along a swizzled row; the second 64 columns in the next atom, 128 rows
    /// on). Not committed.
    #[inline(always)]
    pub fn issue_scores<const D: u32>(s: &mut Halves, q: u32, k: u32) {
        unrolled_to(D / 16, |kk| {
            let along = KEYS * ROW_BYTES * (kk / 4) + 32 * (kk % 4);
            let da = Descriptor::swizzle_128(q + along, 16, 1024);
            let db = Descriptor::swizzle_128(k + along, 16, 1024);
            wgmma_m64n128k16_bf16_k_major((&mut s.0, &mut s.1), da, db);
        });
    }

    /// The descriptors of P·V's eight k-steps over V's tile at shared address `v` (16 keys = 16
    /// rows on; 64-column atoms KEYS rows apart), [pinned](Descriptor::pinned) where they are
    /// computed: before the `wgmma_fence` of a stage that issues the scores first.
    #[inline(always)]
    pub fn value_descriptors(v: u32) -> [Descriptor; 8] {
        core::array::from_fn(|kk| {
            Descriptor::swizzle_128(v + 16 * ROW_BYTES * kk as u32, KEYS * ROW_BYTES, 1024).pinned()
        })
    }

    /// Issues `acc += P·V` for the warpgroup: `p` the exponentials as A registers (keys 16·kk.. in
    /// `p[kk]`), `v` V's [`value_descriptors`]. Not committed.
    #[inline(always)]
    pub fn issue_values<const D: u32>(acc: &mut Halves, p: &[[u32; 4]; 8], v: &[Descriptor; 8]) {
        unrolled::<{ KEYS / 16 }>(|kk| {
            let db = v[kk as usize];
            if D == 64 {
                wgmma_m64n64k16_bf16_registers(&mut acc.0, p[kk as usize], db);
            } else {
                wgmma_m64n128k16_bf16_registers((&mut acc.0, &mut acc.1), p[kk as usize], db);
            }
        });
    }

    /// One lane's share of the online softmax of its two rows: the running maximum (log2 units,
    /// scaled) and the lane's partial sum of each.
    pub struct Running {
        max: [f32; 2],
        sum: [f32; 2],
    }

    impl Running {
        pub const EMPTY: Running = Running {
            max: [f32::NEG_INFINITY; 2],
            sum: [0.0; 2],
        };

        /// Folds the scores `s` of the tile whose first key is `key0` into the running maxima and
        /// sums. Where `edge` (a tile reaching past `seq`, or with `CAUSAL` past a row of the
        /// block), masks keys past `seq` and past each row's own position `rows[h]`; elsewhere no
        /// key needs a test. The maxima are kept in the scores' units (the scale is positive), and
        /// each exponential is 2^(s·scale − max·scale), one `fma` and one `ex2`, `scale` holding
        /// log2(e). Returns the factor that rescales what was summed before (per row), and the
        /// exponentials as the A registers of P·V.
        #[inline(always)]
        pub fn fold<const CAUSAL: bool>(
            &mut self,
            s: &mut Halves,
            (key0, edge): (u32, bool),
            (seq, rows, scale): (u32, [u32; 2], f32),
        ) -> ([f32; 2], [[u32; 4]; 8]) {
            let tile_max = if edge {
                let low = masked_max::<true, CAUSAL>(&mut s.0, key0, seq, rows);
                let high = masked_max::<true, CAUSAL>(&mut s.1, key0 + 64, seq, rows);
                [low[0].max(high[0]), low[1].max(high[1])]
            } else {
                let low = masked_max::<false, CAUSAL>(&mut s.0, key0, seq, rows);
                let high = masked_max::<false, CAUSAL>(&mut s.1, key0 + 64, seq, rows);
                [low[0].max(high[0]), low[1].max(high[1])]
            };
            let mut shift = [0.0f32; 2];
            let mut alpha = [0.0f32; 2];
            unrolled::<2>(|h| {
                let h = h as usize;
                // The row's four lanes (lane / 4 equal) share its maximum.
                let m = tile_max[h].max(shfl_xor(tile_max[h], 1));
                let m = m.max(shfl_xor(m, 2)).max(self.max[h]);
                // A row with every key so far masked keeps 2^(−∞ − 0) = 0 rather than NaN.
                shift[h] = if m == f32::NEG_INFINITY { 0.0 } else { m * scale };
                alpha[h] = exp2(self.max[h] * scale - shift[h]);
                self.max[h] = m;
                self.sum[h] *= alpha[h];
            });
            let mut p = [[0u32; 4]; 8];
            let sum = &mut self.sum;
            let mut exponentials = #[inline(always)]
            |half: &[f32; 32], kk0: usize| {
                unrolled::<8>(|j| {
                    let e: [f32; 4] =
                        core::array::from_fn(|r| exp2(fma(half[(4 * j) as usize + r], scale, -shift[r / 2])));
                    sum[0] += e[0] + e[1];
                    sum[1] += e[2] + e[3];
                    let (kk, pair) = (kk0 + (j / 2) as usize, 2 * (j % 2) as usize);
                    p[kk][pair] = round_pack_bf16x2(e[0], e[1]);
                    p[kk][pair + 1] = round_pack_bf16x2(e[2], e[3]);
                });
            };
            exponentials(&s.0, 0);
            exponentials(&s.1, 4);
            (alpha, p)
        }

        /// The log-sum-exp of this lane's two rows in log2 units of the scaled scores
        /// (max·scale + log2 Σ 2^(s·scale − max·scale)), the row's four lanes' sums added.
        #[inline(always)]
        pub fn lse(&self, scale: f32) -> [f32; 2] {
            core::array::from_fn(|h| {
                let total = self.sum[h] + shfl_xor(self.sum[h], 1);
                let total = total + shfl_xor(total, 2);
                self.max[h] * scale + log2(total)
            })
        }

        /// Stores rows `rows` (those below `seq`) of query head `block_idx().y`'s log-sum-exp
        /// ([`Running::lse`]) into `lse`, `[heads][seq]` floats.
        ///
        /// # Safety
        /// `lse` holds heads·seq floats.
        #[inline(always)]
        pub unsafe fn store_lse(&self, lse: *mut f32, scale: f32, seq: u32, rows: [u32; 2]) {
            let values = self.lse(scale);
            if thread_idx().x % 4 == 0 {
                unrolled::<2>(|h| {
                    let row = rows[h as usize];
                    if row < seq {
                        // SAFETY: the head's row below seq: inside `lse`.
                        unsafe { global_store(lse.add((block_idx().y * seq + row) as usize), values[h as usize]) };
                    }
                });
            }
        }

        /// Stores this lane's rows `rows` (those below `seq`) of the head's O: `acc` divided by
        /// the rows' sums, rounded to bf16; and, where `lse` is not null, the rows' log-sum-exps
        /// (as [`Running::store_lse`]; `scale` the scores' as [`Running::fold`] took it). Without
        /// the causal mask the rows, the lane's member and the head are computed again here
        /// ([`Lane::again`]) rather than held through the loop, and each row's lse is stored
        /// beside its O: rung 4 spilled otherwise.
        ///
        /// # Safety
        /// `o` holds the head's seq·D elements; `lse` is null or holds heads·seq floats.
        #[inline(always)]
        pub unsafe fn store<const D: u32, const CAUSAL: bool>(
            &self,
            acc: &Halves,
            (o, lse): (*mut Bf16, *mut f32),
            (seq, rows, scale): (u32, [u32; 2], f32),
        ) {
            let again = Lane::again::<CAUSAL>();
            let (member, head) = (again.member, again.head);
            // The causal mask needs the rows through the loop anyway.
            let rows = if CAUSAL { rows } else { again.rows };
            // Each row's sum, its four lanes' added: O's divisor and the lse's argument.
            let totals: [f32; 2] = core::array::from_fn(|h| {
                let total = self.sum[h] + shfl_xor(self.sum[h], 1);
                total + shfl_xor(total, 2)
            });
            unrolled::<2>(|h| {
                let (total, row) = (totals[h as usize], rows[h as usize]);
                if row < seq {
                    unrolled_to(D / 8, |j| {
                        let r = (4 * (j % 8) + 2 * h) as usize;
                        let half = if j < 8 { &acc.0 } else { &acc.1 };
                        let pair = round_pack_bf16x2(half[r] / total, half[r + 1] / total);
                        // SAFETY: row < seq, the column pair inside D: inside the head's O, aligned.
                        unsafe { global_store(o.add((row * D + 8 * j + 2 * member) as usize).cast::<u32>(), pair) };
                    });
                    if !lse.is_null() && member == 0 {
                        let value = fma(self.max[h as usize], scale, log2(total));
                        // SAFETY: the head's row below seq: inside `lse` (the caller's).
                        unsafe { global_store(lse.add((head * seq + row) as usize), value) };
                    }
                }
            });
        }
    }

    /// A lane's place for the stores after the loop: its member of the row's four lanes, its two
    /// rows, its query head.
    struct Lane {
        member: u32,
        rows: [u32; 2],
        head: u32,
    }

    impl Lane {
        /// The place from the special registers read again ([`indices_again`]): recomputed here
        /// rather than held through the loop.
        #[inline(always)]
        fn again<const CAUSAL: bool>() -> Lane {
            let (thread, block, grid) = indices_again();
            let (tid, head) = (thread.x, block.y);
            let first = query_block(CAUSAL, block.x, grid.x) * ROWS;
            let row0 = first + 64 * (tid / 128) + 16 * ((tid / WARP_SIZE) % 4) + (tid % WARP_SIZE) / 4;
            Lane {
                member: tid % 4,
                rows: [row0, row0 + 8],
                head,
            }
        }
    }

    /// The maxima of this lane's two rows over a half of a tile's scores (its first key `key0`:
    /// register 4·j + r is key `key0 + 8·j + 2·member + r % 2` of row `rows[r / 2]`), with `MASK`
    /// the keys past `seq` (and, `CAUSAL`, past the row) set to −∞ first.
    #[inline(always)]
    fn masked_max<const MASK: bool, const CAUSAL: bool>(
        half: &mut [f32; 32],
        key0: u32,
        seq: u32,
        rows: [u32; 2],
    ) -> [f32; 2] {
        let member = thread_idx().x % 4;
        let mut max = [f32::NEG_INFINITY; 2];
        unrolled::<32>(|i| {
            let (j, r) = (i / 4, i % 4);
            let x = &mut half[i as usize];
            if MASK {
                let key = key0 + 8 * j + 2 * member + r % 2;
                if key >= seq || (CAUSAL && key > rows[(r / 2) as usize]) {
                    *x = f32::NEG_INFINITY;
                }
            }
            max[(r / 2) as usize] = max[(r / 2) as usize].max(*x);
        });
        max
    }

    /// Whether key tile `t` needs its keys tested: it reaches past `seq`, or (`CAUSAL`) past the
    /// first of the block's rows, `first`.
    #[inline(always)]
    pub fn tile_needs_mask<const CAUSAL: bool>(t: u32, seq: u32, first: u32) -> bool {
        let end = (t + 1) * KEYS;
        end > seq || (CAUSAL && end > first + 1)
    }

    /// `acc` times each row's factor.
    #[inline(always)]
    pub fn rescale(acc: &mut Halves, alpha: [f32; 2]) {
        unrolled::<32>(|i| {
            acc.0[i as usize] *= alpha[((i % 4) / 2) as usize];
            acc.1[i as usize] *= alpha[((i % 4) / 2) as usize];
        });
    }
}
