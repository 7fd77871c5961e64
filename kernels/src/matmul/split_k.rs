//! Split-k: the 64×64 warp-tiled kernel ([`super::warp_tiled`]) with k split `splits` ways across
//! the grid's third dimension. A product with few tiles of C and a long k (256×256×65536: 16 tiles
//! for 132 SMs; 8192×64×8192: 128) leaves most of the GPU idle however its tiles are sized; split
//! k ways, it has `splits` times the blocks, each multiplying a run of k and adding its partial
//! products into C with `red.global.add.f32`. C is zeroed first by a launch of the same kernel
//! with k = 0 (the empty product), which the host makes before each split product.
//!
//! The additions into C arrive in whatever order the blocks finish, so the result's last bits can
//! differ from run to run (within the same error bound: each element is still a sum of k
//! products).
//!
//! The staging and the loop are the warp-tiled kernel's with the run's end in place of k. They are
//! written out here rather than made generic there: threading the run's end through the warp-tiled
//! kernels changed their SASS (ptxas 12.9, sm_90), and those are the measured rungs.

use super::Matmul;
use super::warp_tiled::{
    Acc, BK, BLOCK_COL_STRIDE, BLOCK_ROW_STRIDE, MAX_FOURS, Slices, THREADS_64X64, a_spot, b_spot, carve, multiply,
    origin, shared_bytes, store_prefetched, tile_origin,
};
use crate::device::{
    Float4, block_idx, global_store, grid_dim, is_aligned4, load4, red_add, sync_threads, thread_idx, unrolled,
    unrolled_to,
};
use crate::{Dim3, Kernel, LaunchBounds, SharedMemory, kernel};

/// Tile of C per block (64×64).
pub const TILE: u32 = 64;
/// The shortest run of k worth a split of its own: below it a block's fixed costs (its prologue,
/// its additions into C) outweigh the products.
pub const MIN_RUN: u32 = 256;
/// Threads per block: the 64×64 warp-tiled configuration's.
const THREADS: u32 = THREADS_64X64;
/// A lane's 4×4 blocks: 1 × 2 (32×32 warp tiles).
const RI: usize = 1;
const RJ: usize = 2;

/// Block z's run of k: `gridDim.z` equal runs, multiples of BK (the 16-byte loads stay aligned and
/// inside a run), the last one short; empty past k.
#[inline(always)]
fn run_of_k(k: u32) -> (u32, u32) {
    let chunk = k.div_ceil(grid_dim().z).next_multiple_of(BK);
    let begin = block_idx().z.saturating_mul(chunk).min(k);
    (begin, begin.saturating_add(chunk).min(k))
}

/// The step at `k0`'s float4s of A and B for this thread, zeros outside A, B and the run (k ≥
/// `end`).
///
/// # Safety
/// `a`, `b` hold m·k and k·n elements, 16-byte aligned, k and n multiples of 4; `end` ≤ k is a
/// multiple of 4.
#[inline(always)]
unsafe fn prefetch(
    (a, b): (*const f32, *const f32),
    (m, n, k): (u32, u32, u32),
    end: u32,
    k0: u32,
) -> ([Float4; MAX_FOURS], [Float4; MAX_FOURS]) {
    let (tile_row, tile_col) = tile_origin::<TILE, TILE>();
    let mut fours = ([Float4([0.0; 4]); MAX_FOURS], [Float4([0.0; 4]); MAX_FOURS]);
    unrolled_to(TILE * BK / 4 / THREADS, |r| {
        let (row, kk) = a_spot::<THREADS>(r);
        let (global_row, global_k) = (tile_row + row, k0 + kk);
        if global_row < m && global_k < end {
            // SAFETY: inside A and the run; a float4 along a row lies wholly inside both, aligned.
            fours.0[r as usize] = unsafe { load4(a.add((global_row * k + global_k) as usize)) };
        }
    });
    unrolled_to(BK * TILE / 4 / THREADS, |r| {
        let (kb, col) = b_spot::<TILE, THREADS>(r);
        let (global_kb, global_col) = (k0 + kb, tile_col + col);
        if global_kb < end && global_col < n {
            // SAFETY: as for A (n a multiple of 4).
            fours.1[r as usize] = unsafe { load4(b.add((global_kb * n + global_col) as usize)) };
        }
    });
    fours
}

/// The slices of the step at `k0`, one element at a time, zeros outside A, B and the run (any
/// shape).
///
/// # Safety
/// `a`, `b` hold m·k and k·n elements; `end` ≤ k.
#[inline(always)]
unsafe fn stage_scalar(
    Slices { a: a_slice, b: b_slice }: Slices,
    (a, b): (*const f32, *const f32),
    (m, n, k): (u32, u32, u32),
    end: u32,
    k0: u32,
) {
    let (tile_row, tile_col) = tile_origin::<TILE, TILE>();
    unrolled_to(TILE * BK / THREADS, |r| {
        let i = thread_idx().x + THREADS * r;
        let (row, kk) = (i / BK, i % BK);
        let (global_row, global_k) = (tile_row + row, k0 + kk);
        // SAFETY: inside A.
        let value = if global_row < m && global_k < end {
            unsafe { *a.add((global_row * k + global_k) as usize) }
        } else {
            0.0
        };
        // SAFETY: kk < BK, row < TILE.
        unsafe { a_slice.set_unchecked(kk, row, value) };
    });
    unrolled_to(BK * TILE / THREADS, |r| {
        let i = thread_idx().x + THREADS * r;
        let (kk, col) = (i / TILE, i % TILE);
        let (global_k, global_col) = (k0 + kk, tile_col + col);
        // SAFETY: inside B.
        let value = if global_k < end && global_col < n {
            unsafe { *b.add((global_k * n + global_col) as usize) }
        } else {
            0.0
        };
        // SAFETY: kk < BK, col < TILE.
        unsafe { b_slice.set_unchecked(kk, col, value) };
    });
}

kernel! {
    /// `C += A·B` over block z's run of k (k > 0, C zero before), or `C = 0` (k = 0).
    pub unsafe fn matmul_split_k(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32) {
        let pairs = carve::<TILE, TILE>();
        // A select, not an index: an array indexed at run time would live in local memory.
        let pair = |step: u32| if step.is_multiple_of(2) { pairs[0] } else { pairs[1] };
        let (begin, end) = run_of_k(k);
        if k != 0 && begin == end {
            // Past k: nothing to add (the whole block leaves).
            return;
        }
        let vector = k.is_multiple_of(4) && n.is_multiple_of(4) && is_aligned4(a) && is_aligned4(b);
        let steps = (end - begin).div_ceil(BK);
        let mut acc: Acc<RI, RJ> = [[[[0.0; 4]; 4]; RJ]; RI];
        // SAFETY (every staging): forwarded from the kernel's contract (and the shape check for
        // the 16-byte path); KERNEL launches THREADS threads; a pair is written only after the
        // barrier that ends the last step reading it.
        unsafe {
            if vector {
                store_prefetched::<TILE, TILE, THREADS>(pair(0), prefetch((a, b), (m, n, k), end, begin));
            } else {
                stage_scalar(pair(0), (a, b), (m, n, k), end, begin);
            }
        }
        sync_threads();
        for step in 0..steps {
            let next = step + 1 < steps;
            let k0 = begin + (step + 1) * BK;
            // The next step's loads leave before this step's arithmetic.
            let fetched = if vector && next { Some(unsafe { prefetch((a, b), (m, n, k), end, k0) }) } else { None };
            multiply::<TILE, RI, RJ>(pair(step), &mut acc);
            if let Some(fetched) = fetched {
                store_prefetched::<TILE, TILE, THREADS>(pair(step + 1), fetched);
            } else if next {
                unsafe { stage_scalar(pair(step + 1), (a, b), (m, n, k), end, k0) };
            }
            // The next pair is complete, and this one read by everyone, before either is used.
            sync_threads();
        }
        let (tile_row, tile_col) = tile_origin::<TILE, TILE>();
        let (row0, col0) = origin::<TILE, RI, RJ>();
        unrolled_to(RI as u32, |i| {
            unrolled::<4>(|r| {
                let global_row = tile_row + row0 + BLOCK_ROW_STRIDE * i + r;
                unrolled_to(RJ as u32, |j| {
                    let global_col = tile_col + col0 + BLOCK_COL_STRIDE * j;
                    unrolled::<4>(|q| {
                        if global_row < m && global_col + q < n {
                            let at = (global_row * n + global_col + q) as usize;
                            let value = acc[i as usize][j as usize][r as usize][q as usize];
                            // SAFETY: inside C. A split adds; the k = 0 launch (value 0) stores.
                            unsafe {
                                if k == 0 {
                                    global_store(c.add(at), value)
                                } else {
                                    red_add(c.add(at), value)
                                }
                            };
                        }
                    });
                });
            });
        });
    }
}

/// Ways to split k for `problem` when the device holds `resident_blocks` blocks of [`KERNEL`] at
/// once: as many as one wave of them holds, no run of k shorter than [`MIN_RUN`], at least 1.
/// One split more would start a second wave for a few blocks, each as long as the first wave's:
/// rounding up (768 blocks for 660 places at 1024³ and on 8192×64×8192) cost 11–27 % against the
/// twin, which holds six blocks per SM to our five (docs/perf-log.md, run 2026-12-01-bj).
pub const fn splits_for(problem: &Matmul, resident_blocks: u32) -> u32 {
    let tiles = problem.m.div_ceil(TILE) * problem.n.div_ceil(TILE);
    let one_wave = resident_blocks / tiles;
    let longest = problem.k / MIN_RUN;
    let splits = if one_wave < longest { one_wave } else { longest };
    if splits < 1 { 1 } else { splits }
}

/// 128 threads per 64×64 tile of C and per run of k: `splits` deep (one deep for the zeroing launch).
pub const KERNEL: Kernel<Matmul> = Kernel {
    code: matmul_split_k,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(shared_bytes(TILE, TILE)),
    grid: |p| {
        Dim3::new(
            p.n.div_ceil(TILE),
            p.m.div_ceil(TILE),
            if p.k == 0 { 1 } else { p.splits },
        )
    },
    bounds: LaunchBounds::min_blocks_per_sm(4),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_fill_one_wave_without_runs_shorter_than_the_minimum() {
        // 16 tiles, k = 65536, 660 resident blocks: 41 splits fill one wave (runs of 1600 ≥ 256).
        assert_eq!(splits_for(&Matmul::new(256, 256, 65_536).unwrap(), 660), 41);
        // 4096 tiles already fill the device: no split.
        assert_eq!(splits_for(&Matmul::new(4096, 4096, 4096).unwrap(), 660), 1);
        // k = 300: one run of at least 256.
        assert_eq!(splits_for(&Matmul::new(64, 64, 300).unwrap(), 660), 1);
        // 128 tiles: 5 splits, 640 blocks; 6 would start a second wave of 108.
        assert_eq!(splits_for(&Matmul::new(8192, 64, 8192).unwrap(), 660), 5);
        // 256 tiles at 1024³: 2 splits, where 3 would need 768 places.
        assert_eq!(splits_for(&Matmul::new(1024, 1024, 1024).unwrap(), 660), 2);
    }
}
