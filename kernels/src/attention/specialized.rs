//! Rung 4: warp specialisation with TMA, as FlashAttention-3 is built. Rung 2's two warpgroups
//! only compute; a ninth warp only copies: one of its threads fills each slot of K's and of V's
//! three-slot rings with TMA (the copy engine swizzling the 128×64 boxes and writing zeros past a
//! head's last row), announcing the bytes on the slot's *full* barrier, and refills it once both
//! warpgroups have arrived on its *empty* barrier. No block-wide barrier is left in the loop: each
//! warpgroup waits only for the tiles it needs, so one's softmax can run while the other's
//! products occupy the tensor cores, and no consumer thread spends issue slots on addresses.
//!
//! The host makes the tensor maps (Q, K and V as `[heads][seq][dim]`, boxes of [`BOX`]); the
//! kernel must have them. GPU-only (sm_90a).

use super::Attention;
use super::warpgroup::{ROW_BYTES, SLACK_ROWS, TILE_ROWS};
use crate::device::{MatrixLayout, SharedMatrix, SharedSlice, WARP_SIZE};
use crate::{Dim3, Kernel, LaunchBounds, SharedMemory, kernel_sm90a, shared_memory};

/// Slots of K's and of V's rings.
pub const SLOTS: u32 = 3;
/// Two consumer warpgroups, then the producer warp.
pub const THREADS: u32 = 9 * WARP_SIZE;
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
    use crate::attention::warpgroup::{
        Halves, KEYS, ROWS, Running, issue_scores, issue_values, rescale, tile_needs_mask,
    };
    use crate::attention::{key_tiles, log2_scale, query_block};
    use crate::device::mma::Bf16;
    use crate::device::wgmma::{fence_proxy_async, shared_address, wgmma_commit, wgmma_fence, wgmma_wait};
    use crate::device::{block_idx, grid_dim, lane_id, mbarrier, shfl_idx, sync_threads, thread_idx, tma, trap};

    /// Where K's and V's slots start, in staged rows (Q's tile first).
    const K_ROWS: u32 = TILE_ROWS;
    const V_ROWS: u32 = (1 + SLOTS) * TILE_ROWS;
    /// Threads of the two consumer warpgroups: every one arrives on a slot's *empty* barrier.
    const CONSUMERS: u32 = 8 * WARP_SIZE;

    /// The kernel's body for head dimension `D` (see the module).
    ///
    /// # Safety
    /// The kernel's contract; `maps` describes Q, K and V.
    #[inline(always)]
    pub unsafe fn run<const D: u32, const CAUSAL: bool>(o: *mut Bf16, seq: u32, maps: *const TensorMaps) {
        if maps.is_null() {
            // The host always passes them; without them there is nothing to copy by.
            trap();
        }
        let Tiles { rows: tiles, barriers } = Tiles::carve();
        let tid = thread_idx().x;
        let head = block_idx().y;
        let first = query_block(CAUSAL, block_idx().x, grid_dim().x) * ROWS;
        let tiles_n = key_tiles(CAUSAL, seq, first, ROWS, KEYS);
        let base = shared_address(tiles.element_ptr(0, 0));
        let skew = (1024 - base % 1024) % 1024 / ROW_BYTES;
        let address = |row: u32| base + (skew + row) * ROW_BYTES;
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
                            tma::load_3d(dst, map(1), (64 * atom, t * KEYS, head), k_full(slot));
                        }
                        mbarrier::arrive_expect_tx(v_full(slot), tile_bytes);
                        for atom in 0..D / 64 {
                            let dst = address(v_slot(slot) + KEYS * atom);
                            tma::load_3d(dst, map(2), (64 * atom, t * KEYS, head), v_full(slot));
                        }
                    }
                }
            }
            return;
        }
        // The warpgroup as a value ptxas sees is uniform across it (else it serializes wgmma).
        let group = shfl_idx(tid / 128, 0);
        let warp = (tid / WARP_SIZE) % 4;
        let q_rows = address(0) + 64 * group * ROW_BYTES;
        let row0 = first + 64 * group + 16 * warp + lane_id() / 4;
        let rows = [row0, row0 + 8];
        let edge = |t: u32| tile_needs_mask::<CAUSAL>(t, seq, first);
        let mut acc: Halves = ([0.0; 32], [0.0; 32]);
        let mut running = Running::EMPTY;
        let scale = log2_scale(D);
        // SAFETY (barriers): initialised above.
        unsafe { mbarrier::wait(q_full, 0) };
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
            wgmma_fence();
            issue_values::<D>(&mut acc, &p, address(v_slot(slot)));
            wgmma_commit();
            wgmma_wait::<0>();
            // Both products of the tile are done: its slots go back to the producer.
            unsafe { mbarrier::arrive(empty(slot)) };
        }
        let head_o = (head * seq * D) as usize;
        // SAFETY: the kernel's contract (O holds heads·seq·D elements).
        unsafe { running.store::<D>(&acc, o.add(head_o), seq, rows) };
    }
}

kernel_sm90a! {
    /// Attention over every key, warp-specialised with TMA.
    pub unsafe fn attention_specialized(q: *const crate::device::mma::Bf16, k: *const crate::device::mma::Bf16, v: *const crate::device::mma::Bf16, o: *mut crate::device::mma::Bf16, heads: u32, seq: u32, dim: u32, maps: *const super::TensorMaps) {
        // Q, K and V are read through the maps; the heads are the grid's.
        let _ = (q, k, v, heads);
        // SAFETY: the kernel's contract (dim is one of DIMS, checked by the host).
        unsafe {
            if dim == 64 { body::run::<64, false>(o, seq, maps) } else { body::run::<128, false>(o, seq, maps) }
        }
    }
}

kernel_sm90a! {
    /// Attention over the keys up to each query, warp-specialised with TMA.
    pub unsafe fn attention_causal_specialized(q: *const crate::device::mma::Bf16, k: *const crate::device::mma::Bf16, v: *const crate::device::mma::Bf16, o: *mut crate::device::mma::Bf16, heads: u32, seq: u32, dim: u32, maps: *const super::TensorMaps) {
        let _ = (q, k, v, heads);
        // SAFETY: as above.
        unsafe {
            if dim == 64 { body::run::<64, true>(o, seq, maps) } else { body::run::<128, true>(o, seq, maps) }
        }
    }
}

/// [`THREADS`] threads per block, one block per 128 query rows of each head; 225 KiB of tiles.
pub const KERNEL: Kernel<Attention> = Kernel {
    code: attention_specialized,
    block: Dim3::x(THREADS),
    shared: SharedMemory::opt_in(Tiles::BYTES),
    grid: super::wgmma::grid,
    bounds: LaunchBounds::min_blocks_per_sm(1),
};

/// As [`KERNEL`], with the causal mask.
pub const KERNEL_CAUSAL: Kernel<Attention> = Kernel {
    code: attention_causal_specialized,
    ..KERNEL
};
