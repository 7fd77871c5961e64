//! Rung 2: attention on Hopper's `wgmma` (the shape, the staging and the softmax in
//! [`super::warpgroup`]). Per 128-key tile each warpgroup computes its 64×128 scores with one
//! `wgmma` group reading Q and K from shared memory, waits for it, folds the scores into the online
//! softmax, then multiplies the exponentials by V with them as `wgmma`'s register operand, and
//! waits again: the tensor cores idle while the warpgroup exponentiates. K and V are
//! double-buffered: the next tile's copies run during this tile's products.
//!
//! GPU-only (sm_90a): the emulator does not model `wgmma`.

use super::Attention;
use super::warpgroup::{ROW_BYTES, ROWS, SLACK_ROWS, THREADS, TILE_ROWS};
use ptxkit::device::{MatrixLayout, SharedMatrix};
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory, shared_memory};

shared_memory! {
    /// Q's tile, K's two slots, V's two, in 128-byte rows of 32 words.
    pub struct Tiles {
        pub rows: SharedMatrix<u32> = MatrixLayout::dense(5 * TILE_ROWS + SLACK_ROWS, ROW_BYTES / 4),
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
    use ptxkit::device::wgmma::{fence_proxy_async, wgmma_commit, wgmma_fence, wgmma_wait};
    use ptxkit::device::{async_copy_commit, async_copy_wait, sync_threads};

    /// Where K's and V's two slots start, in staged rows (Q's tile first).
    const K_ROWS: u32 = TILE_ROWS;
    const V_ROWS: u32 = 3 * TILE_ROWS;

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
        // SAFETY (stages): the kernel's contract; every tile inside the carve.
        unsafe {
            stage::<D>(&tiles, q, seq, first, skew);
            stage::<D>(&tiles, k, seq, 0, skew + K_ROWS);
            stage::<D>(&tiles, v, seq, 0, skew + V_ROWS);
        }
        async_copy_commit();
        let address = |row: u32| block.address(row);
        let q_rows = block.q_rows();
        let edge = |t: u32| block.needs_mask::<CAUSAL>(t, seq);
        let mut acc: Halves = ([0.0; 32], [0.0; 32]);
        let mut running = Running::EMPTY;
        for t in 0..tiles_n {
            let slot = t % 2;
            // Tile t has landed (its group is the only one open); this thread's copies seen by
            // the tensor cores, then everyone's. Past the barrier every warpgroup is done with
            // tile t − 1, so its slot takes tile t + 1 (copied before the barrier, it could be
            // overwritten while the other warpgroup's products still read it).
            async_copy_wait::<0>();
            fence_proxy_async();
            sync_threads();
            if t + 1 < tiles_n {
                // SAFETY: as above.
                unsafe {
                    stage::<D>(&tiles, k, seq, (t + 1) * KEYS, skew + K_ROWS + (1 - slot) * TILE_ROWS);
                    stage::<D>(&tiles, v, seq, (t + 1) * KEYS, skew + V_ROWS + (1 - slot) * TILE_ROWS);
                }
                async_copy_commit();
            }
            let mut s: Halves = ([0.0; 32], [0.0; 32]);
            wgmma_fence();
            issue_scores::<D>(&mut s, q_rows, address(K_ROWS + slot * TILE_ROWS));
            wgmma_commit();
            wgmma_wait::<0>();
            let (alpha, p) = running.fold::<CAUSAL>(&mut s, (t * KEYS, edge(t)), (seq, rows, log2_scale(D)));
            rescale(&mut acc, alpha);
            let dv = value_descriptors(address(V_ROWS + slot * TILE_ROWS));
            wgmma_fence();
            issue_values::<D>(&mut acc, &p, &dv);
            wgmma_commit();
            wgmma_wait::<0>();
        }
        // SAFETY: the kernel's contract.
        unsafe { running.store::<D, CAUSAL>(&acc, (o, lse), (seq, rows, log2_scale(D))) };
    }
}

super::entries!(
    [ptxkit::Dim3::x(THREADS), 1],
    kernel_sm90a,
    body::run,
    /// Attention over every key, `wgmma`.
    attention_wgmma,
    /// Attention over the keys up to each query, `wgmma`.
    attention_causal_wgmma
);

/// One block per 128 query rows of each head.
pub(super) fn grid(p: &Attention, _: Occupancy) -> Dim3 {
    Dim3::xy(p.seq.div_ceil(ROWS), p.heads)
}

/// [`THREADS`] threads per block; 161 KiB of tiles, one block per SM.
pub const KERNEL: Kernel<Attention> = Kernel {
    code: attention_wgmma,
    block: Dim3::x(THREADS),
    shared: SharedMemory::opt_in(Tiles::BYTES),
    grid,
};

/// As [`KERNEL`], with the causal mask.
pub const KERNEL_CAUSAL: Kernel<Attention> = Kernel {
    code: attention_causal_wgmma,
    ..KERNEL
};
