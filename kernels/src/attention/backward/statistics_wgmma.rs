//! [`super::statistics`] on `wgmma` (sm_90a, GPU only): each query row's lse from a pass over the
//! keys with the forward's first product and online softmax ([`crate::attention::warpgroup`]: a
//! block of two warpgroups over 128 query rows, Q staged once, 128-key tiles of K through two
//! `cp.async` slots), without the forward's second product; each row's Δ = Σ dO·O, and its sums of
//! dQ zeroed. Head dimensions 64 and 128.

use super::AttentionBackward;
use crate::attention::warpgroup::{ROW_BYTES, ROWS, SLACK_ROWS, THREADS, TILE_ROWS};
use ptxkit::device::{MatrixLayout, SharedMatrix};
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory, shared_memory};

shared_memory! {
    /// Q's tile and K's two slots, in 128-byte rows of 32 words.
    pub struct Tiles {
        pub rows: SharedMatrix<u32> = MatrixLayout::dense(3 * TILE_ROWS + SLACK_ROWS, ROW_BYTES / 4),
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
mod body {
    use super::super::{Arrays, sums_at};
    use super::*;
    use crate::attention::log2_scale;
    use crate::attention::warpgroup::{Block, Halves, KEYS, Running, issue_scores, stage};
    use ptxkit::device::wgmma::{fence_proxy_async, wgmma_commit, wgmma_fence, wgmma_wait};
    use ptxkit::device::{
        async_copy_commit, async_copy_wait, block_idx, global_store, grid_dim, shfl_xor, sync_threads, thread_idx,
        unrolled_to,
    };

    /// Where K's two slots start, in staged rows (Q's tile first).
    const K_ROWS: u32 = TILE_ROWS;

    /// Bit-exact bf16 of a pair from global memory as f32s.
    #[inline(always)]
    fn unpack(pair: u32) -> (f32, f32) {
        (f32::from_bits(pair << 16), f32::from_bits(pair & 0xffff_0000))
    }

    /// The kernel's body for head dimension `D` (see the module).
    ///
    /// # Safety
    /// The arrays as [`super::AttentionBackward`] lays them out for `kv_group` and `seq`, 16-byte
    /// aligned, `stats` [`AttentionBackward::stats_len`] floats; `dim` is `D`; the grid is
    /// [`KERNEL`]'s.
    #[inline(always)]
    pub unsafe fn run<const D: u32, const CAUSAL: bool>(arrays: Arrays, kv_group: u32, seq: u32, dim: u32) {
        let _ = dim;
        let Tiles { rows: tiles } = Tiles::carve();
        let block = Block::new::<CAUSAL>(&tiles, seq);
        let (first, tiles_n, rows, skew) = (block.first, block.tiles, block.rows, block.skew);
        let tid = thread_idx().x;
        let (head, heads) = (block_idx().y, grid_dim().y);
        let (at, kv_at) = ((head * seq * D) as usize, (head / kv_group * seq * D) as usize);
        // SAFETY: the head's Q, O and dO and its KV head's K inside the arrays.
        let (q, o, d_o, k) = unsafe {
            (
                arrays.q.add(at),
                arrays.o.add(at),
                arrays.d_o.add(at),
                arrays.k.add(kv_at),
            )
        };
        // SAFETY (stages): the kernel's contract; every tile inside the carve.
        unsafe {
            stage::<D>(&tiles, q, seq, first, skew);
            stage::<D>(&tiles, k, seq, 0, skew + K_ROWS);
        }
        async_copy_commit();
        // Δ of row first + tid / 2 (two threads a row, half the columns each) while the copies run.
        {
            let row = first + tid / 2;
            let mut sum = 0.0f32;
            if row < seq {
                unrolled_to(D / 4, |i| {
                    let c = (tid % 2) * (D / 2) + 2 * i;
                    // SAFETY: row < seq, the pair inside D: 4-byte aligned inside O and dO.
                    let (a, b) = unsafe {
                        (
                            o.add((row * D + c) as usize).cast::<u32>().read(),
                            d_o.add((row * D + c) as usize).cast::<u32>().read(),
                        )
                    };
                    let ((o0, o1), (g0, g1)) = (unpack(a), unpack(b));
                    sum += o0 * g0 + o1 * g1;
                });
            }
            let sum = sum + shfl_xor(sum, 1);
            if tid % 2 == 0 && row < seq {
                // SAFETY: the row's Δ inside `stats` (after every row's lse).
                unsafe { global_store(arrays.stats.add((heads * seq + head * seq + row) as usize), sum) };
            }
        }
        // The block's rows of the sums of dQ, zeroed for the `wgmma` launch's additions.
        {
            let count = ROWS.min(seq - first) * D;
            let sums = sums_at(heads, seq) + ((head * seq + first) * D) as usize;
            let mut i = tid;
            while i < count {
                // SAFETY: rows first..first + count / D of the head's sums, inside `stats`.
                unsafe { global_store(arrays.stats.add(sums + i as usize), 0.0) };
                i += THREADS;
            }
        }
        let address = |row: u32| block.address(row);
        let q_rows = block.q_rows();
        let mut running = Running::EMPTY;
        for t in 0..tiles_n {
            let slot = t % 2;
            if t + 1 < tiles_n {
                // SAFETY: as above; the other slot was released by the barrier ending tile t - 1.
                unsafe { stage::<D>(&tiles, k, seq, (t + 1) * KEYS, skew + K_ROWS + (1 - slot) * TILE_ROWS) };
                async_copy_commit();
                async_copy_wait::<1>();
            } else {
                async_copy_wait::<0>();
            }
            // This thread's copies seen by the tensor cores, then everyone's.
            fence_proxy_async();
            sync_threads();
            let mut s: Halves = ([0.0; 32], [0.0; 32]);
            wgmma_fence();
            issue_scores::<D>(&mut s, q_rows, address(K_ROWS + slot * TILE_ROWS));
            wgmma_commit();
            wgmma_wait::<0>();
            // The exponentials as P·V's registers are not needed: only the running sums.
            let _ = running.fold::<CAUSAL>(
                &mut s,
                (t * KEYS, block.needs_mask::<CAUSAL>(t, seq)),
                (seq, rows, log2_scale(D)),
            );
            // Every warpgroup is done with this slot before the next tile's copies refill it.
            sync_threads();
        }
        // SAFETY: the rows' lse inside `stats` (its first heads·seq floats).
        unsafe { running.store_lse(arrays.stats, log2_scale(D), seq, rows) };
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
use body::run;

super::wgmma::wgmma_entries!(
    false,
    run,
    /// Attention's backward on `wgmma`, first launch on `wgmma`: each row's lse and Δ, its sums of
    /// dQ zeroed.
    attention_backward_statistics_wgmma
);
super::wgmma::wgmma_entries!(
    true,
    run,
    /// As `attention_backward_statistics_wgmma`, with the causal mask.
    attention_backward_statistics_wgmma_causal
);

/// One block per 128 query rows of each head.
fn grid(p: &AttentionBackward, _: Occupancy) -> Dim3 {
    Dim3::xy(p.0.seq.div_ceil(ROWS), p.0.heads)
}

/// [`THREADS`] threads per block; 97 KiB of tiles.
pub const KERNEL: Kernel<AttentionBackward> = Kernel {
    code: attention_backward_statistics_wgmma,
    block: Dim3::x(THREADS),
    shared: SharedMemory::opt_in(Tiles::BYTES),
    grid,
};

/// As [`KERNEL`], with the causal mask.
pub const KERNEL_CAUSAL: Kernel<AttentionBackward> = Kernel {
    code: attention_backward_statistics_wgmma_causal,
    ..KERNEL
};
