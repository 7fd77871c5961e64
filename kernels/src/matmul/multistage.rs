//! The warp tiles ([`super::warp_tiled`]; 64×64 per warp, 8×16 outputs per lane, and 64×32) fed the way
//! cuBLAS's own SIMT SGEMM on the H200 is fed (its SASS, read without a GPU: docs/perf-log.md,
//! change 96): the slices travel from global into shared memory by `cp.async`, three steps in
//! flight ([`STAGES`]), so no register holds them on the way; and each k's fragments are read from
//! shared memory before the previous k's products, so their latency hides behind 128 FFMAs. The
//! register-prefetched tiles hold a step's loads in registers across the products, and with the
//! fragments double-buffered as well ptxas ran out of registers and issued those loads after
//! most of the step's products.
//!
//! `cp.async` copies contiguous bytes, so A's slice, transposed in shared memory (k-major, as the
//! other warp tiles keep it), is copied a float at a time: consecutive threads take consecutive k
//! of a row (whole 32-byte sectors), and their stores fall in distinct banks. B's slice is copied
//! 16 bytes at a time where n is a multiple of 4 and B 16-byte aligned, else a float at a time.
//! Any shape: copies outside A, B or the run of k land as zeros.

use super::Matmul;
use super::warp_tiled::{
    Acc, BK, BLOCK_COL_STRIDE, BLOCK_ROW_STRIDE, Slices, a_scalar_spot, b_scalar_spot, b_spot, layouts, origin,
    outer_product, store_tile, threads, tile_grid, tile_origin,
};
use ptxkit::device::{
    DynamicShared, Float4, async_copy_commit, async_copy_wait, compiler_barrier, is_aligned4, sync_threads, unrolled,
    unrolled_to,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};

/// Steps in flight: the one multiplied and two travelling (cuBLAS's `stage3`).
pub const STAGES: u32 = 3;

/// Shared bytes of a configuration: [`STAGES`] pairs of slices.
pub const fn shared_bytes(bm: u32, bn: u32) -> u32 {
    let (a, b) = layouts(bm, bn);
    let mut end = 0;
    let mut stage = 0;
    while stage < STAGES {
        end = ptxkit::device::SharedMatrix::<f32>::region_end(end, a);
        end = ptxkit::device::SharedMatrix::<f32>::region_end(end, b);
        stage += 1;
    }
    end
}

/// The stages' slices, carved as [`shared_bytes`] counts them.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn carve<const BM: u32, const BN: u32>() -> [Slices; STAGES as usize] {
    let (a, b) = layouts(BM, BN);
    let mut shared = DynamicShared::new();
    let mut pair = |a_name, b_name| Slices {
        a: shared.named_matrix(a_name, a),
        b: shared.named_matrix(b_name, b),
    };
    [pair("a0", "b0"), pair("a1", "b1"), pair("a2", "b2")]
}

/// Starts copying the step at `k0` into `slices`: A's BM×BK elements a float each, B's BK×BN in
/// 16-byte pieces where `vector`, else a float each; zeros outside A, B and k below `end` (the
/// block's run of k ends there).
///
/// # Safety
/// `a`, `b` hold m·k and k·n elements; `end` ≤ k; where `vector`, n is a multiple of 4 and `b`
/// 16-byte aligned; no thread reads `slices` until a barrier after this thread's wait for the
/// copies.
#[inline(always)]
unsafe fn copy_step<const BM: u32, const BN: u32, const THREADS: u32>(
    Slices { a: a_slice, b: b_slice }: Slices,
    (a, b): (*const f32, *const f32),
    (m, n, k, end): (u32, u32, u32, u32),
    k0: u32,
    vector: bool,
) {
    let (tile_row, tile_col) = tile_origin::<BM, BN>();
    unrolled_to(BM * BK / THREADS, |r| {
        let (row, kk) = a_scalar_spot::<THREADS>(r);
        let (global_row, global_k) = (tile_row + row, k0.wrapping_add(kk));
        let valid = global_row < m && global_k < end;
        let src = if valid {
            a.wrapping_add((global_row * k + global_k) as usize)
        } else {
            a
        };
        // SAFETY: a float inside A where valid (else nothing is read); (kk, row) inside the slice.
        unsafe { a_slice.copy1_async_zero_fill_unchecked(kk, row, src, valid) };
    });
    if vector {
        unrolled_to(BK * BN / 4 / THREADS, |r| {
            let (kk, col) = b_spot::<BN, THREADS>(r);
            let (global_k, global_col) = (k0.wrapping_add(kk), tile_col + col);
            // n is a multiple of 4: a piece lies wholly inside B's row or wholly past it.
            let valid = global_k < end && global_col < n;
            let src = if valid {
                b.wrapping_add((global_k * n + global_col) as usize)
            } else {
                b
            };
            // SAFETY: four floats inside B, 16-byte aligned, where valid; none read otherwise.
            unsafe { b_slice.copy4_async_zero_fill_unchecked(kk, col, src, if valid { 4 } else { 0 }) };
        });
    } else {
        unrolled_to(BK * BN / THREADS, |r| {
            let (kk, col) = b_scalar_spot::<BN, THREADS>(r);
            let (global_k, global_col) = (k0.wrapping_add(kk), tile_col + col);
            let valid = global_k < end && global_col < n;
            let src = if valid {
                b.wrapping_add((global_k * n + global_col) as usize)
            } else {
                b
            };
            // SAFETY: a float inside B where valid; (kk, col) inside the slice.
            unsafe { b_slice.copy1_async_zero_fill_unchecked(kk, col, src, valid) };
        });
    }
}

/// `acc += ` the step's outer products, each k's fragments read before the previous k's products.
/// The barriers keep LLVM from hoisting every k's reads to the top (their 192 values would not fit
/// in the registers); ptxas does not see them and interleaves the reads with the FFMAs freely.
/// With `CORNERS` the fragments are read through windows at the thread's corners of the slices,
/// at constant offsets (immediates in the loads: 31 fewer instructions per step); measured, that
/// paid on the 128×64 tile and cost the 128×128 one (ptxas gave it fewer registers), and moved the
/// 128×256 one little (docs/perf-log.md, change 97).
#[inline(always)]
fn multiply<const BN: u32, const RI: usize, const RJ: usize, const CORNERS: bool>(
    Slices { a: a_slice, b: b_slice }: Slices,
    acc: &mut Acc<RI, RJ>,
) {
    let (row0, col0) = origin::<BN, RI, RJ>();
    // Where this thread's fragments start: (the slices, row0, col0), or the windows at the
    // thread's corner, every fragment a constant distance from it.
    let ((a_from, row0), (b_from, col0)) = if CORNERS {
        ((a_slice.window(0, row0), 0), (b_slice.window(0, col0), 0))
    } else {
        ((a_slice, row0), (b_slice, col0))
    };
    // SAFETY: kk < BK; rows row0 + 32i + 4 ≤ BM and columns col0 + 16j + 4 ≤ BN; all offsets
    // multiples of 4 in rows of pitch BM + 4 and BN: aligned float4.
    let fragments = |kk: u32| -> ([Float4; RI], [Float4; RJ]) {
        (
            core::array::from_fn(|i| unsafe { a_from.get4_unchecked(kk, row0 + BLOCK_ROW_STRIDE * i as u32) }),
            core::array::from_fn(|j| unsafe { b_from.get4_unchecked(kk, col0 + BLOCK_COL_STRIDE * j as u32) }),
        )
    };
    let mut current = fragments(0);
    unrolled::<BK>(|kk| {
        let next = if kk + 1 < BK { fragments(kk + 1) } else { current };
        compiler_barrier();
        let (column, row) = current;
        outer_product::<RI, RJ, true>(column, row, acc);
        compiler_barrier();
        current = next;
    });
}

/// The products over the run `begin..end` of k, each step's slices copied by `copy(slices, k0)`
/// [`STAGES`] − 1 steps ahead. Every step copies and commits one group, past the last step too (zeros into a
/// stage nobody reads: no branch in the loop), so that "all but the newest STAGES − 2 groups" is
/// always "up to this step". (Past a k within 16 of 2^32 the steps' k wrap around: those copies
/// then read elements inside A and B, into a stage still nobody reads.) The stages rotate through
/// three variables: which one a step reads is then a register move, not a select of each of its
/// addresses.
#[inline(always)]
fn pipeline<const BN: u32, const RI: usize, const RJ: usize, const CORNERS: bool>(
    (begin, end): (u32, u32),
    [mut reading, mut next, mut filling]: [Slices; STAGES as usize],
    copy: impl Fn(Slices, u32),
) -> Acc<RI, RJ> {
    copy(reading, begin);
    async_copy_commit();
    copy(next, begin.wrapping_add(BK));
    async_copy_commit();
    let mut acc: Acc<RI, RJ> = [[[[0.0; 4]; 4]; RJ]; RI];
    for step in 0..(end - begin).div_ceil(BK) {
        async_copy_wait::<{ STAGES - 2 }>();
        // This step's slices are complete, and every thread is done with the previous step's,
        // whose stage (`filling`) the copies below refill.
        sync_threads();
        copy(filling, begin.wrapping_add((step + STAGES - 1).wrapping_mul(BK)));
        async_copy_commit();
        multiply::<BN, RI, RJ, CORNERS>(reading, &mut acc);
        (reading, next, filling) = (next, filling, reading);
    }
    // The zeros copied past the last step land before the block leaves its shared memory.
    async_copy_wait::<0>();
    acc
}

/// This lane's sums of the block's BM×BN tile over the run `begin..end` of k, (32·RI)×(16·RJ) per
/// warp, the slices [`STAGES`] deep; the fragments read from the thread's corners where `CORNERS`
/// ([`multiply`]).
///
/// # Safety
/// The kernels' contract: `a`, `b` hold m·k and k·n elements; `end` ≤ k; the block has `THREADS`
/// = [`threads`]`(BM, BN, RI, RJ)` threads and [`shared_bytes`]`(BM, BN)` of dynamic shared memory;
/// the grid covers C's tiles.
#[inline(always)]
pub(super) unsafe fn run_products<
    const BM: u32,
    const BN: u32,
    const RI: usize,
    const RJ: usize,
    const THREADS: u32,
    const CORNERS: bool,
>(
    (a, b): (*const f32, *const f32),
    (m, n, k): (u32, u32, u32),
    (begin, end): (u32, u32),
) -> Acc<RI, RJ> {
    const {
        assert!(THREADS == threads(BM, BN, RI, RJ), "a warp per warp tile");
        assert!((BM * BK).is_multiple_of(THREADS) && (BK * BN / 4).is_multiple_of(THREADS));
    };
    let [first, second, third] = carve::<BM, BN>();
    let at = (m, n, k, end);
    // The same for every thread of the launch: one loop per path, no test of it inside.
    if n.is_multiple_of(4) && is_aligned4(b) {
        // SAFETY (every copy): forwarded from the caller (n a multiple of 4, B aligned); a stage
        // is refilled only after the barrier that follows every thread's products from it.
        pipeline::<BN, RI, RJ, CORNERS>((begin, end), [first, second, third], |slices, k0| unsafe {
            copy_step::<BM, BN, THREADS>(slices, (a, b), at, k0, true)
        })
    } else {
        // SAFETY: as above.
        pipeline::<BN, RI, RJ, CORNERS>((begin, end), [first, second, third], |slices, k0| unsafe {
            copy_step::<BM, BN, THREADS>(slices, (a, b), at, k0, false)
        })
    }
}

/// `C = A·B` with BM×BN tiles per block ([`run_products`] over all of k).
///
/// # Safety
/// As for [`run_products`]; `c` holds m·n elements.
#[inline(always)]
unsafe fn multistage<
    const BM: u32,
    const BN: u32,
    const RI: usize,
    const RJ: usize,
    const THREADS: u32,
    const CORNERS: bool,
>(
    (a, b, c): (*const f32, *const f32, *mut f32),
    (m, n, k): (u32, u32, u32),
) {
    // SAFETY: forwarded from the caller.
    let acc = unsafe { run_products::<BM, BN, RI, RJ, THREADS, CORNERS>((a, b), (m, n, k), (0, k)) };
    // SAFETY: forwarded; 16 bytes wide only where C is aligned and n a multiple of 4.
    unsafe { store_tile::<BM, BN, RI, RJ>(c, (m, n), acc, n.is_multiple_of(4) && is_aligned4(c)) };
}

/// Threads of the configurations: four warps at 128×128, eight at 128×256 (64×64 warp tiles), four
/// at 128×64 (64×32 warp tiles, 8×8 outputs per lane: cuBLAS's tile at 1024³, docs/perf-log.md,
/// change 94).
pub(super) const THREADS_128X128: u32 = threads(128, 128, 2, 4);
const THREADS_128X256: u32 = threads(128, 256, 2, 4);
pub(super) const THREADS_128X64: u32 = threads(128, 64, 2, 2);

kernel! {
    #[launch_bounds(Dim3::x(THREADS_128X128), 2)]
    /// `C = A·B`, a 128×128 tile per block, 64×64 per warp, 2×4 blocks of 4×4 per lane, the
    /// slices three steps deep through `cp.async`.
    pub unsafe fn matmul_multistage(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, _arrivals: *mut u32) {
        // SAFETY: forwarded from the kernel's contract; KERNEL launches the configuration's block.
        unsafe { multistage::<128, 128, 2, 4, THREADS_128X128, false>((a, b, c), (m, n, k)) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS_128X256), 1)]
    /// As [`matmul_multistage`] on a 128×256 tile: eight warps.
    pub unsafe fn matmul_multistage_128x256(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, _arrivals: *mut u32) {
        // SAFETY: as above.
        unsafe { multistage::<128, 256, 2, 4, THREADS_128X256, false>((a, b, c), (m, n, k)) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS_128X64), 3)]
    /// As [`matmul_multistage`] on a 128×64 tile, 64×32 per warp, 2×2 blocks of 4×4 per lane.
    pub unsafe fn matmul_multistage_128x64(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, _arrivals: *mut u32) {
        // SAFETY: as above.
        unsafe { multistage::<128, 64, 2, 2, THREADS_128X64, true>((a, b, c), (m, n, k)) }
    }
}

/// A block of 128 threads per 128×128 tile; three stages of slices (24.4 KiB); two blocks per SM.
pub const KERNEL: Kernel<Matmul> = Kernel {
    code: matmul_multistage,
    block: Dim3::x(THREADS_128X128),
    shared: SharedMemory::of(shared_bytes(128, 128)),
    grid: tile_grid::<128, 128>,
};

/// A block of 256 threads per 128×256 tile (36.4 KiB); one block per SM.
pub const KERNEL_128X256: Kernel<Matmul> = Kernel {
    code: matmul_multistage_128x256,
    block: Dim3::x(THREADS_128X256),
    shared: SharedMemory::of(shared_bytes(128, 256)),
    grid: tile_grid::<128, 256>,
};

/// A block of 128 threads per 128×64 tile (18.4 KiB); three blocks per SM (at four, ptxas spilled
/// 28 bytes of its 128 registers).
pub const KERNEL_128X64: Kernel<Matmul> = Kernel {
    code: matmul_multistage_128x64,
    block: Dim3::x(THREADS_128X64),
    shared: SharedMemory::of(shared_bytes(128, 64)),
    grid: tile_grid::<128, 64>,
};
