//! Rung 3: rung 2 with each warpgroup's softmax overlapped with its own products
//! (FlashAttention-3's intra-warpgroup pipelining). While the tensor cores multiply tile t's
//! exponentials by V, the warpgroup has already issued tile t + 1's scores, and exponentiates them
//! as soon as they land: two `wgmma` groups in flight, the second product waited for only before
//! the output is rescaled. The scores of the next tile and the exponentials of this one live in
//! registers side by side (about 40 more per lane).
//!
//! K is needed a tile earlier than in rung 2, so K and V stream through three slots: tile t + 2's
//! copies start once every warpgroup is done with tile t − 1, one barrier per tile. 225 KiB of
//! shared memory, one block per SM. GPU-only (sm_90a).

use super::Attention;
use super::warpgroup::{ROW_BYTES, SLACK_ROWS, THREADS, TILE_ROWS};
use ptxkit::device::{MatrixLayout, SharedMatrix};
use ptxkit::{Dim3, Kernel, SharedMemory, shared_memory};

/// Slots of K's and of V's rings.
pub const SLOTS: u32 = 3;

shared_memory! {
    /// Q's tile, K's three slots, V's three, in 128-byte rows of 32 words.
    pub struct Tiles {
        pub rows: SharedMatrix<u32> = MatrixLayout::dense((1 + 2 * SLOTS) * TILE_ROWS + SLACK_ROWS, ROW_BYTES / 4),
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
mod body {
    use super::*;
    use crate::attention::log2_scale;
    use crate::attention::warpgroup::{
        Block, Halves, KEYS, Running, head_offset, issue_scores, issue_values, kv_head_offset, rescale, stage,
        value_descriptors,
    };
    use ptxkit::device::mma::Bf16;
    use ptxkit::device::wgmma::{fence_proxy_async, wgmma_commit, wgmma_fence, wgmma_wait, wgmma_wait_reading};
    use ptxkit::device::{async_copy_commit, async_copy_wait, sync_threads};

    /// Where K's and V's slots start, in staged rows (Q's tile first).
    const K_ROWS: u32 = TILE_ROWS;
    const V_ROWS: u32 = (1 + SLOTS) * TILE_ROWS;

    /// The kernel's body for head dimension `D` (see the module).
    ///
    /// # Safety
    /// Q and O hold heads·seq·D elements, K and V heads / kv_group · seq·D, 16-byte aligned; `lse`
    /// is null or holds heads·seq floats; the grid is [`KERNEL`]'s.
    #[inline(always)]
    pub unsafe fn run<const D: u32, const CAUSAL: bool>(
        q: *const Bf16,
        k: *const Bf16,
        v: *const Bf16,
        o: *mut Bf16,
        lse: *mut f32,
        seq: u32,
        kv_group: u32,
        maps: *const crate::attention::TensorMaps,
    ) {
        // Copies by cp.async: no tensor maps.
        let _ = maps;
        let Tiles { rows: tiles } = Tiles::carve();
        let block = Block::new::<CAUSAL>(&tiles, seq);
        let (first, tiles_n, rows, skew) = (block.first, block.tiles, block.rows, block.skew);
        let (head, kv_head) = (head_offset::<D>(seq), kv_head_offset::<D>(seq, kv_group));
        // SAFETY: head·seq·D + seq·D ≤ heads·seq·D elements, and as much of K and V's heads /
        // kv_group.
        let (q, k, v, o) = unsafe { (q.add(head), k.add(kv_head), v.add(kv_head), o.add(head)) };
        let address = |row: u32| block.address(row);
        let (k_slot, v_slot) = (
            |t: u32| K_ROWS + (t % SLOTS) * TILE_ROWS,
            |t: u32| V_ROWS + (t % SLOTS) * TILE_ROWS,
        );
        // Tile t's K and V into their slots: one commit group.
        let stage_tile = |t: u32| {
            // SAFETY: the kernel's contract; the slots inside the carve.
            unsafe {
                stage::<D>(&tiles, k, seq, t * KEYS, skew + k_slot(t));
                stage::<D>(&tiles, v, seq, t * KEYS, skew + v_slot(t));
            }
            async_copy_commit();
        };
        // SAFETY: as above.
        unsafe { stage::<D>(&tiles, q, seq, first, skew) };
        stage_tile(0);
        if tiles_n > 1 {
            stage_tile(1);
            async_copy_wait::<1>();
        } else {
            async_copy_wait::<0>();
        }
        fence_proxy_async();
        sync_threads();
        let q_rows = block.q_rows();
        let edge = |t: u32| block.needs_mask::<CAUSAL>(t, seq);
        let scale = log2_scale(D);
        let mut running = Running::EMPTY;
        let mut s: Halves = ([0.0; 32], [0.0; 32]);
        wgmma_fence();
        issue_scores::<D>(&mut s, q_rows, address(k_slot(0)));
        wgmma_commit();
        wgmma_wait::<0>();
        // Nothing is summed yet: the first factor multiplies zeros.
        let (_, mut p) = running.fold::<CAUSAL>(&mut s, (0, edge(0)), (seq, rows, scale));
        let mut acc: Halves = ([0.0; 32], [0.0; 32]);
        // Every tile but the last has a next one; the last is peeled off, so that no branch (and
        // no copy of the accumulators the compiler would make where branches join) falls between
        // a `wgmma` and its wait: ptxas serialises the products when one does (its note C7513).
        for t in 0..tiles_n - 1 {
            // Tile t + 1 has landed (its group is the only one open), and every warpgroup is done
            // with tile t − 1: its slots take tile t + 2.
            async_copy_wait::<0>();
            fence_proxy_async();
            sync_threads();
            if t + 2 < tiles_n {
                stage_tile(t + 2);
            }
            s = ([0.0; 32], [0.0; 32]);
            let dv = value_descriptors(address(v_slot(t)));
            wgmma_fence();
            issue_scores::<D>(&mut s, q_rows, address(k_slot(t + 1)));
            wgmma_commit();
            issue_values::<D>(&mut acc, &p, &dv);
            wgmma_commit();
            // The scores have landed; P·V is still running.
            wgmma_wait::<1>();
            let (alpha, p_next) = running.fold::<CAUSAL>(&mut s, ((t + 1) * KEYS, edge(t + 1)), (seq, rows, scale));
            // P·V of tile t still reads `p`: kept apart from `p_next` up to the wait.
            wgmma_wait_reading::<0>(&p);
            rescale(&mut acc, alpha);
            p = p_next;
        }
        let dv = value_descriptors(address(v_slot(tiles_n - 1)));
        wgmma_fence();
        issue_values::<D>(&mut acc, &p, &dv);
        wgmma_commit();
        wgmma_wait::<0>();
        // SAFETY: the kernel's contract.
        unsafe { running.store::<D, CAUSAL>(&acc, (o, lse), (seq, rows, scale)) };
    }
}

super::entries!(
    [ptxkit::Dim3::x(THREADS), 1],
    kernel_sm90a,
    body::run,
    /// Attention over every key, `wgmma` with the softmax overlapped.
    attention_overlapped,
    /// Attention over the keys up to each query, `wgmma` with the softmax overlapped.
    attention_causal_overlapped
);

/// [`THREADS`] threads per block, one block per 128 query rows of each head; 225 KiB of tiles.
pub const KERNEL: Kernel<Attention> = Kernel {
    code: attention_overlapped,
    block: Dim3::x(THREADS),
    shared: SharedMemory::opt_in(Tiles::BYTES),
    grid: super::wgmma::grid,
};

/// As [`KERNEL`], with the causal mask.
pub const KERNEL_CAUSAL: Kernel<Attention> = Kernel {
    code: attention_causal_overlapped,
    ..KERNEL
};
