//! Rung 4: warp specialisation with TMA, as FlashAttention-3 is built. Rung 2's two warpgroups
//! only compute; a ninth warp only copies: one of its threads fills each slot of K's and of V's
//! three-slot rings with TMA (the copy engine swizzling the 128×64 boxes and writing zeros past a
//! head's last row), announcing the bytes on the slot's *full* barrier, and refills it once both
//! warpgroups have arrived on its *empty* barrier. No block-wide barrier is left in the loop: each
//! warpgroup waits only for the tiles it needs, so one's softmax can run while the other's
//! products occupy the tensor cores, and no consumer thread spends issue slots on addresses.
//!
//! [`attention_rebalanced`] (rung 5) gives the producer a whole warpgroup, so that it can hand
//! registers over: it keeps 24 per thread (`setmaxnreg.dec`) and the consumers take 240
//! (`setmaxnreg.inc`; a 384-thread block starts at 168). With them each consumer overlaps its
//! softmax with its own products as rung 3 does: tile t + 1's scores and tile t's P·V in flight
//! together, tile t + 1 exponentiated while P·V runs; and the two consumers take turns issuing
//! their products (FlashAttention-3's ping-pong), so that one's run while the other exponentiates.
//!
//! The host makes the tensor maps (Q as `[heads][seq][dim]`, K and V as `[heads / kv_group][seq][dim]`,
//! boxes of [`BOX`]); the kernel must have them. GPU-only (sm_90a).

use super::Attention;
use super::warpgroup::{ROW_BYTES, SLACK_ROWS, TILE_ROWS};
use ptxkit::device::{MatrixLayout, SharedMatrix, SharedSlice, WARP_SIZE};
use ptxkit::{Dim3, Kernel, SharedMemory, shared_memory};

/// Slots of K's and of V's rings.
pub const SLOTS: u32 = 3;
/// Two consumer warpgroups, then the producer warp.
pub const THREADS: u32 = 9 * WARP_SIZE;
/// Rung 5: two consumer warpgroups, then a producer warpgroup.
pub const THREADS_REBALANCED: u32 = 12 * WARP_SIZE;

/// The TMA box (columns, rows): one 64-column atom of 128 rows of one head.
pub const BOX: (u32, u32) = (64, 128);

shared_memory! {
    /// Q's tile, K's slots, V's slots (128-byte rows of 32 words); Q's *full* barrier, then each
    /// slot's K *full*, V *full* and *empty* barriers.
    pub struct Tiles {
        pub rows: SharedMatrix<u32> = MatrixLayout::dense((1 + 2 * SLOTS) * TILE_ROWS + SLACK_ROWS, ROW_BYTES / 4),
        pub barriers: SharedSlice<u64> = 1 + 3 * SLOTS,
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
mod body {
    use super::*;
    use crate::attention::TensorMaps;
    use crate::attention::log2_scale;
    use crate::attention::warpgroup::{
        Block, Halves, KEYS, ROWS, Running, head_offset, issue_scores, issue_values, rescale, value_descriptors,
    };
    use ptxkit::device::mma::Bf16;
    use ptxkit::device::wgmma::{
        barrier_arrive, barrier_sync, registers_claim, registers_release, wgmma_commit, wgmma_fence, wgmma_wait,
        wgmma_wait_reading,
    };
    use ptxkit::device::{block_idx, mbarrier, sync_threads, thread_idx, tma, trap};

    /// Where K's and V's slots start, in staged rows (Q's tile first).
    const K_ROWS: u32 = TILE_ROWS;
    const V_ROWS: u32 = (1 + SLOTS) * TILE_ROWS;
    /// Threads of the two consumer warpgroups: every one arrives on a slot's *empty* barrier.
    const CONSUMERS: u32 = 8 * WARP_SIZE;
    /// Registers per thread of rung 5's producer and consumers: 24 + 2 · 240 per scheduler's three
    /// warps fits its 512.
    const PRODUCER_REGISTERS: u32 = 24;
    const CONSUMER_REGISTERS: u32 = 240;

    /// Rung 4's body for head dimension `D` (see the module).
    ///
    /// # Safety
    /// The kernel's contract; `maps` describes Q, K and V.
    #[inline(always)]
    pub unsafe fn run<const D: u32, const CAUSAL: bool>(
        q: *const Bf16,
        k: *const Bf16,
        v: *const Bf16,
        o: *mut Bf16,
        lse: *mut f32,
        seq: u32,
        kv_group: u32,
        maps: *const TensorMaps,
    ) {
        // SAFETY: forwarded.
        unsafe { work::<D, CAUSAL, false>(q, k, v, o, lse, seq, kv_group, maps) }
    }

    /// Rung 5's body (see the module).
    ///
    /// # Safety
    /// As for [`run`].
    #[inline(always)]
    pub unsafe fn run_rebalanced<const D: u32, const CAUSAL: bool>(
        q: *const Bf16,
        k: *const Bf16,
        v: *const Bf16,
        o: *mut Bf16,
        lse: *mut f32,
        seq: u32,
        kv_group: u32,
        maps: *const TensorMaps,
    ) {
        // SAFETY: forwarded.
        unsafe { work::<D, CAUSAL, true>(q, k, v, o, lse, seq, kv_group, maps) }
    }

    /// Both rungs: `REBALANCED` with a producer warpgroup and the overlapped consumers.
    ///
    /// # Safety
    /// As for [`run`].
    #[inline(always)]
    unsafe fn work<const D: u32, const CAUSAL: bool, const REBALANCED: bool>(
        q: *const Bf16,
        k: *const Bf16,
        v: *const Bf16,
        o: *mut Bf16,
        lse: *mut f32,
        seq: u32,
        kv_group: u32,
        maps: *const TensorMaps,
    ) {
        // Q, K and V are read through the maps.
        let _ = (q, k, v);
        if maps.is_null() {
            // The host always passes them; without them there is nothing to copy by.
            trap();
        }
        let Tiles { rows: tiles, barriers } = Tiles::carve();
        let tid = thread_idx().x;
        let (head, kv_head) = (block_idx().y, block_idx().y / kv_group);
        let block = Block::new::<CAUSAL>(&tiles, seq);
        let (first, tiles_n, rows, group) = (block.first, block.tiles, block.rows, block.group);
        let address = |row: u32| block.address(row);
        let (k_slot, v_slot) = (
            |slot: u32| K_ROWS + slot * TILE_ROWS,
            |slot: u32| V_ROWS + slot * TILE_ROWS,
        );
        let q_full = barriers.element_ptr(0);
        let k_full = |slot: u32| barriers.element_ptr(1 + slot);
        let v_full = |slot: u32| barriers.element_ptr(1 + SLOTS + slot);
        let empty = |slot: u32| barriers.element_ptr(1 + 2 * SLOTS + slot);
        if tid == 0 {
            // SAFETY: the barriers' words, used by no one before the barrier below.
            unsafe {
                mbarrier::init(q_full, 1);
                for slot in 0..SLOTS {
                    mbarrier::init(k_full(slot), 1);
                    mbarrier::init(v_full(slot), 1);
                    mbarrier::init(empty(slot), CONSUMERS);
                }
            }
        }
        sync_threads();
        // Tile t goes to slot t % SLOTS, in that slot's phase t / SLOTS.
        let slot_of = |t: u32| (t % SLOTS, (t / SLOTS) & 1);
        let tile_bytes = KEYS * D * 2;
        if tid >= CONSUMERS {
            if REBALANCED {
                registers_release::<PRODUCER_REGISTERS>();
            }
            if tid == CONSUMERS {
                let map = |i: usize| maps.cast::<u8>().wrapping_add(128 * i);
                // SAFETY (every copy and barrier below): the maps describe Q, K and V (the
                // kernel's contract); each box lands 1024-byte aligned inside its tile; the
                // barriers were initialised.
                unsafe {
                    mbarrier::arrive_expect_tx(q_full, ROWS * D * 2);
                    for atom in 0..D / 64 {
                        tma::load_3d(address(KEYS * atom), map(0), (64 * atom, first, head), q_full);
                    }
                    for t in 0..tiles_n {
                        let (slot, phase) = slot_of(t);
                        // A fresh barrier passes parity 1 at once: the slots start empty.
                        mbarrier::wait(empty(slot), phase ^ 1);
                        mbarrier::arrive_expect_tx(k_full(slot), tile_bytes);
                        for atom in 0..D / 64 {
                            let dst = address(k_slot(slot) + KEYS * atom);
                            tma::load_3d(dst, map(1), (64 * atom, t * KEYS, kv_head), k_full(slot));
                        }
                        mbarrier::arrive_expect_tx(v_full(slot), tile_bytes);
                        for atom in 0..D / 64 {
                            let dst = address(v_slot(slot) + KEYS * atom);
                            tma::load_3d(dst, map(2), (64 * atom, t * KEYS, kv_head), v_full(slot));
                        }
                    }
                }
            }
            return;
        }
        if REBALANCED {
            registers_claim::<CONSUMER_REGISTERS>();
        }
        let q_rows = block.q_rows();
        let edge = |t: u32| block.needs_mask::<CAUSAL>(t, seq);
        let mut acc: Halves = ([0.0; 32], [0.0; 32]);
        let mut running = Running::EMPTY;
        let scale = log2_scale(D);
        // SAFETY (barriers): initialised above.
        unsafe { mbarrier::wait(q_full, 0) };
        if REBALANCED {
            // Tile 0's scores first; then per tile t, tile t + 1's scores and tile t's P·V in
            // flight together, tile t + 1 exponentiated while P·V runs.
            unsafe { mbarrier::wait(k_full(0), 0) };
            let mut s: Halves = ([0.0; 32], [0.0; 32]);
            wgmma_fence();
            issue_scores::<D>(&mut s, q_rows, address(k_slot(0)));
            wgmma_commit();
            wgmma_wait::<0>();
            // Nothing is summed yet: the first factor multiplies zeros.
            let (_, mut p) = running.fold::<CAUSAL>(&mut s, (0, edge(0)), (seq, rows, scale));
            // The warpgroups take turns issuing their products (named barriers 1 and 2, each
            // warpgroup waiting at its own for the other's arrival): one's products then run
            // while the other exponentiates. The first turn is warpgroup 0's.
            let my_turn = || {
                if group == 0 {
                    barrier_sync::<1, 256>()
                } else {
                    barrier_sync::<2, 256>()
                }
            };
            let pass_turn = || {
                if group == 0 {
                    barrier_arrive::<2, 256>()
                } else {
                    barrier_arrive::<1, 256>()
                }
            };
            if group == 1 {
                pass_turn();
            }
            // The last tile peeled off, as in rung 3: no branch between a `wgmma` and its wait.
            for t in 0..tiles_n - 1 {
                let (slot, phase) = slot_of(t);
                let (next_slot, next_phase) = slot_of(t + 1);
                unsafe { mbarrier::wait(k_full(next_slot), next_phase) };
                s = ([0.0; 32], [0.0; 32]);
                unsafe { mbarrier::wait(v_full(slot), phase) };
                let dv = value_descriptors(address(v_slot(slot)));
                my_turn();
                wgmma_fence();
                issue_scores::<D>(&mut s, q_rows, address(k_slot(next_slot)));
                wgmma_commit();
                issue_values::<D>(&mut acc, &p, &dv);
                wgmma_commit();
                pass_turn();
                // The scores have landed; P·V is still running.
                wgmma_wait::<1>();
                let (alpha, p_next) = running.fold::<CAUSAL>(&mut s, ((t + 1) * KEYS, edge(t + 1)), (seq, rows, scale));
                // P·V of tile t still reads `p`: kept apart from `p_next` up to the wait.
                wgmma_wait_reading::<0>(&p);
                rescale(&mut acc, alpha);
                p = p_next;
                // Tile t's K (its scores long done) and V: the slots go back.
                unsafe { mbarrier::arrive(empty(slot)) };
            }
            let (slot, phase) = slot_of(tiles_n - 1);
            unsafe { mbarrier::wait(v_full(slot), phase) };
            let dv = value_descriptors(address(v_slot(slot)));
            my_turn();
            wgmma_fence();
            issue_values::<D>(&mut acc, &p, &dv);
            wgmma_commit();
            // Every turn of warpgroup 0 is answered; warpgroup 1's last would be one too many
            // (it arrived once before its first).
            if group == 0 {
                pass_turn();
            }
            wgmma_wait::<0>();
            unsafe { mbarrier::arrive(empty(slot)) };
        } else {
            for t in 0..tiles_n {
                let (slot, phase) = slot_of(t);
                unsafe { mbarrier::wait(k_full(slot), phase) };
                let mut s: Halves = ([0.0; 32], [0.0; 32]);
                wgmma_fence();
                issue_scores::<D>(&mut s, q_rows, address(k_slot(slot)));
                wgmma_commit();
                wgmma_wait::<0>();
                let (alpha, p) = running.fold::<CAUSAL>(&mut s, (t * KEYS, edge(t)), (seq, rows, scale));
                rescale(&mut acc, alpha);
                unsafe { mbarrier::wait(v_full(slot), phase) };
                let dv = value_descriptors(address(v_slot(slot)));
                wgmma_fence();
                issue_values::<D>(&mut acc, &p, &dv);
                wgmma_commit();
                wgmma_wait::<0>();
                // Both products of the tile are done: its slots go back to the producer.
                unsafe { mbarrier::arrive(empty(slot)) };
            }
        }
        // SAFETY: the kernel's contract (O holds heads·seq·D elements, lse null or heads·seq).
        unsafe { running.store::<D, CAUSAL>(&acc, (o.add(head_offset::<D>(seq)), lse), (seq, rows, scale)) };
    }
}

super::entries!(
    [ptxkit::Dim3::x(THREADS), 1],
    kernel_sm90a,
    body::run,
    /// Attention over every key, warp-specialised with TMA.
    attention_specialized,
    /// Attention over the keys up to each query, warp-specialised with TMA.
    attention_causal_specialized
);

super::entries!(
    [ptxkit::Dim3::x(THREADS_REBALANCED), 1],
    kernel_sm90a,
    body::run_rebalanced,
    /// Attention over every key: rung 4 with registers moved to the consumers and the softmax
    /// overlapped.
    attention_rebalanced,
    /// Attention over the keys up to each query, as [`attention_rebalanced`].
    attention_causal_rebalanced
);

/// [`THREADS`] threads per block, one block per 128 query rows of each head; 225 KiB of tiles.
pub const KERNEL: Kernel<Attention> = Kernel {
    code: attention_specialized,
    block: Dim3::x(THREADS),
    shared: SharedMemory::opt_in(Tiles::BYTES),
    grid: super::wgmma::grid,
};

/// As [`KERNEL`], with the causal mask.
pub const KERNEL_CAUSAL: Kernel<Attention> = Kernel {
    code: attention_causal_specialized,
    ..KERNEL
};

/// Rung 5: [`THREADS_REBALANCED`] threads per block, the tiles as rung 4's.
pub const KERNEL_REBALANCED: Kernel<Attention> = Kernel {
    code: attention_rebalanced,
    block: Dim3::x(THREADS_REBALANCED),
    ..KERNEL
};

/// As [`KERNEL_REBALANCED`], with the causal mask.
pub const KERNEL_CAUSAL_REBALANCED: Kernel<Attention> = Kernel {
    code: attention_causal_rebalanced,
    ..KERNEL_REBALANCED
};

/// The kernels that copy by TMA and so need the host's tensor maps: every kernel of this module.
pub const TMA_KERNELS: [&Kernel<Attention>; 4] =
    [&KERNEL, &KERNEL_CAUSAL, &KERNEL_REBALANCED, &KERNEL_CAUSAL_REBALANCED];
