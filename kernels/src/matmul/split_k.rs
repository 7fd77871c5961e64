//! Split-k: the warp-tiled kernel ([`super::warp_tiled`]) with k split across the grid's third
//! dimension. A product with few tiles of C and a long k (256×256×65536: 16 tiles of 64×64 for 132
//! SMs; 8192×64×8192: 128) leaves most of the GPU idle however its tiles are sized; split k ways,
//! it has that many times the blocks, each multiplying a run of k ([`super::warp_tiled::products`]
//! from the run's start to its end).
//!
//! The runs meet in C as [`super::k_runs`] describes.
//!
//! Three tiles: 64×64 (the most blocks), and 128×64 and 64×128 (twice the outputs per lane, for C
//! with few columns or few rows). Two more configurations multiply their runs as
//! [`super::multistage`] does (128×128 and 128×64 tiles, the slices through a `cp.async` pipeline):
//! the fastest tiles where C has a few hundred rows. Each splits k as many ways as one wave of its
//! own blocks holds on the problem's device ([`splits_for`]).

use super::Matmul;
use super::k_runs::{meet_in_c_by, run_of_k, splits};
use super::multistage::{self, THREADS_128X64 as MULTISTAGE_128X64, THREADS_128X128 as MULTISTAGE_128X128};
use super::warp_tiled::{
    Acc, BK, BLOCK_COL_STRIDE, BLOCK_ROW_STRIDE, origin, products, shared_bytes, store_tile, threads, tile_origin,
};
use crate::inlined::is_aligned4;
use ptxkit::device::{red_add, unrolled, unrolled_to};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};
use ptxkit::{KernelFn, Problem};

/// The shortest run of k worth a split of its own: below it a block's fixed costs (its prologue,
/// its additions into C) outweigh the products.
pub const MIN_RUN: u32 = 256;

/// Calls `out(index in C, [i, j, r, q])` for each of this lane's outputs inside C (row 32·i + r,
/// column 16·j + q of its span).
#[inline(always)]
fn each_output<const BM: u32, const BN: u32, const RI: usize, const RJ: usize>(
    (m, n): (u32, u32),
    mut out: impl FnMut(usize, [usize; 4]),
) {
    let (tile_row, tile_col) = tile_origin::<BM, BN>();
    let (row0, col0) = origin::<BN, RI, RJ>();
    // Every closure inlined: out of line, they took the accumulators by reference (local memory).
    unrolled_to(
        RI as u32,
        #[inline(always)]
        |i| {
            unrolled::<4>(
                #[inline(always)]
                |r| {
                    let global_row = tile_row + row0 + BLOCK_ROW_STRIDE * i + r;
                    unrolled_to(
                        RJ as u32,
                        #[inline(always)]
                        |j| {
                            let global_col = tile_col + col0 + BLOCK_COL_STRIDE * j;
                            unrolled::<4>(
                                #[inline(always)]
                                |q| {
                                    if global_row < m && global_col + q < n {
                                        let at = (global_row * n + global_col + q) as usize;
                                        out(at, [i, j, r, q].map(|x| x as usize));
                                    }
                                },
                            );
                        },
                    );
                },
            );
        },
    );
}

/// `C = A·B`, block z multiplying its run of k, with BM×BN tiles per block and (32·RI)×(16·RJ)
/// per warp; the runs meet in C through their tile's counter in `arrivals` (the module's doc).
///
/// # Safety
/// The kernels' contract: `a`, `b`, `c` hold m·k, k·n and m·n elements; where the grid is more
/// than one deep, `arrivals` holds a counter per tile of C (`gridDim.x · gridDim.y`), each zero;
/// the block has `THREADS` = [`threads`]`(BM, BN, RI, RJ)` threads and [`shared_bytes`]`(BM, BN)`
/// of dynamic shared memory; the grid covers C's tiles.
#[inline(always)]
unsafe fn split_k<const BM: u32, const BN: u32, const RI: usize, const RJ: usize, const THREADS: u32>(
    (a, b, c): (*const f32, *const f32, *mut f32),
    (m, n, k): (u32, u32, u32),
    arrivals: *mut u32,
) {
    // SAFETY: forwarded from the caller, for the block's run of k (`end` k or a multiple of BK).
    unsafe {
        split_with::<BM, BN, RI, RJ>(
            c,
            (m, n, k),
            arrivals,
            #[inline(always)]
            |begin, end| {
                let vector = k.is_multiple_of(4) && n.is_multiple_of(4) && is_aligned4(a) && is_aligned4(b);
                products::<BM, BN, RI, RJ, THREADS, true>((a, b), (m, n, k), (begin, end), vector)
            },
        )
    }
}

/// As [`split_k`], each run multiplied by [`multistage::run_products`].
///
/// # Safety
/// As for [`split_k`], with [`multistage::shared_bytes`]`(BM, BN)` of dynamic shared memory.
#[inline(always)]
unsafe fn split_k_multistage<const BM: u32, const BN: u32, const RI: usize, const RJ: usize, const THREADS: u32>(
    (a, b, c): (*const f32, *const f32, *mut f32),
    (m, n, k): (u32, u32, u32),
    arrivals: *mut u32,
) {
    // SAFETY: forwarded from the caller, for the block's run of k.
    unsafe {
        split_with::<BM, BN, RI, RJ>(
            c,
            (m, n, k),
            arrivals,
            #[inline(always)]
            |begin, end| multistage::run_products::<BM, BN, RI, RJ, THREADS, false>((a, b), (m, n, k), (begin, end)),
        )
    }
}

/// Block z's run of k multiplied by `products(begin, end)` (this lane's sums of the tile), and the
/// runs' sums meeting in C.
///
/// # Safety
/// As for [`split_k`]; `products` is safe to call with the block's run.
#[inline(always)]
unsafe fn split_with<const BM: u32, const BN: u32, const RI: usize, const RJ: usize>(
    c: *mut f32,
    (m, n, k): (u32, u32, u32),
    arrivals: *mut u32,
    products: impl FnOnce(u32, u32) -> Acc<RI, RJ>,
) {
    let (begin, end, runs) = run_of_k::<BK>(k);
    if begin == end {
        // Past k: not one of the runs (the whole block leaves).
        return;
    }
    // The same for every thread of the launch.
    let wide_store = n.is_multiple_of(4) && is_aligned4(c);
    let acc = products(begin, end);
    // SAFETY: forwarded from the caller; C's tile lies inside C; `arrivals` as the caller gives it.
    unsafe {
        meet_in_c_by(
            arrivals,
            runs,
            #[inline(always)]
            move |adding| {
                if adding {
                    add_tile::<BM, BN, RI, RJ>(c, (m, n), acc)
                } else {
                    store_tile::<BM, BN, RI, RJ>(c, (m, n), acc, wide_store)
                }
            },
        )
    }
}

/// Adds this lane's outputs `acc` into C (m×n), 4 bytes at a time with `red.global.add.f32`.
///
/// # Safety
/// `c` holds m·n elements.
#[inline(always)]
unsafe fn add_tile<const BM: u32, const BN: u32, const RI: usize, const RJ: usize>(
    c: *mut f32,
    (m, n): (u32, u32),
    acc: Acc<RI, RJ>,
) {
    // SAFETY: inside C.
    each_output::<BM, BN, RI, RJ>(
        (m, n),
        #[inline(always)]
        |at, [i, j, r, q]| unsafe { red_add(c.add(at), acc[i][j][r][q]) },
    );
}

/// Threads of the configurations: 128 each (four warps).
const THREADS_64X64: u32 = threads(64, 64, 1, 2);
const THREADS_128X64: u32 = threads(128, 64, 2, 2);
const THREADS_64X128: u32 = threads(64, 128, 2, 2);

kernel! {
    #[launch_bounds(Dim3::x(THREADS_64X64), 4)]
    /// `C = A·B`, k split across the grid's depth (the runs meeting through `arrivals`): a 64×64
    /// tile per block, 32×32 per warp, 1×2 blocks of 4×4 per lane.
    pub unsafe fn matmul_split_k(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, arrivals: *mut u32) {
        // SAFETY: forwarded from the kernel's contract; KERNEL launches the configuration's block.
        unsafe { split_k::<64, 64, 1, 2, THREADS_64X64>((a, b, c), (m, n, k), arrivals) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS_128X64), 4)]
    /// As [`matmul_split_k`] with a 128×64 tile per block, 64×32 per warp, 2×2 blocks of 4×4 per lane.
    pub unsafe fn matmul_split_k_128x64(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, arrivals: *mut u32) {
        // SAFETY: as above.
        unsafe { split_k::<128, 64, 2, 2, THREADS_128X64>((a, b, c), (m, n, k), arrivals) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS_64X128), 4)]
    /// As [`matmul_split_k`] with a 64×128 tile per block, 64×32 per warp, 2×2 blocks of 4×4 per lane.
    pub unsafe fn matmul_split_k_64x128(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, arrivals: *mut u32) {
        // SAFETY: as above.
        unsafe { split_k::<64, 128, 2, 2, THREADS_64X128>((a, b, c), (m, n, k), arrivals) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(MULTISTAGE_128X128), 2)]
    /// As [`matmul_split_k`] with the multistage 128×128 tile (64×64 per warp, the slices three
    /// steps deep through `cp.async`).
    pub unsafe fn matmul_split_k_multistage(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, arrivals: *mut u32) {
        // SAFETY: as above.
        unsafe { split_k_multistage::<128, 128, 2, 4, MULTISTAGE_128X128>((a, b, c), (m, n, k), arrivals) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(MULTISTAGE_128X64), 3)]
    /// As [`matmul_split_k_multistage`] with the multistage 128×64 tile (64×32 per warp).
    pub unsafe fn matmul_split_k_multistage_128x64(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, arrivals: *mut u32) {
        // SAFETY: as above.
        unsafe { split_k_multistage::<128, 64, 2, 2, MULTISTAGE_128X64>((a, b, c), (m, n, k), arrivals) }
    }
}

/// Ways to split k for `problem` in BM×BN tiles when the device holds `resident_blocks` blocks at
/// once ([`splits`]: one wave, runs of at least [`MIN_RUN`]).
pub const fn splits_for(problem: &Matmul, (bm, bn): (u32, u32), resident_blocks: u32) -> u32 {
    splits(
        problem.m.div_ceil(bm) * problem.n.div_ceil(bn),
        resident_blocks,
        problem.k,
        MIN_RUN,
    )
}

/// A split-k configuration's launch: a block of `threads` per BM×BN tile of C and per run of k,
/// [`splits_for`] the device's resident blocks of it deep.
const fn config<const BM: u32, const BN: u32>(
    code: KernelFn<<Matmul as Problem>::Args>,
    threads: u32,
) -> Kernel<Matmul> {
    config_with::<BM, BN>(code, threads, shared_bytes(BM, BN))
}

/// [`config`] with `shared` bytes of dynamic shared memory.
const fn config_with<const BM: u32, const BN: u32>(
    code: KernelFn<<Matmul as Problem>::Args>,
    threads: u32,
    shared: u32,
) -> Kernel<Matmul> {
    Kernel {
        code,
        block: Dim3::x(threads),
        shared: SharedMemory::of(shared),
        grid: |p, device| {
            Dim3::new(
                p.n.div_ceil(BN),
                p.m.div_ceil(BM),
                splits_for(p, (BM, BN), device.resident_blocks),
            )
        },
    }
}

/// 64×64 tiles, at least four blocks per SM (81 registers on sm_90a: five reside).
pub const KERNEL: Kernel<Matmul> = config::<64, 64>(matmul_split_k, THREADS_64X64);
/// 128×64 tiles (for C with few columns), four blocks per SM.
pub const KERNEL_128X64: Kernel<Matmul> = config::<128, 64>(matmul_split_k_128x64, THREADS_128X64);
/// 64×128 tiles (for C with few rows), four blocks per SM.
pub const KERNEL_64X128: Kernel<Matmul> = config::<64, 128>(matmul_split_k_64x128, THREADS_64X128);
/// The multistage 128×128 tile, two blocks per SM.
pub const KERNEL_MULTISTAGE: Kernel<Matmul> = config_with::<128, 128>(
    matmul_split_k_multistage,
    MULTISTAGE_128X128,
    multistage::shared_bytes(128, 128),
);
/// The multistage 128×64 tile, three blocks per SM.
pub const KERNEL_MULTISTAGE_128X64: Kernel<Matmul> = config_with::<128, 64>(
    matmul_split_k_multistage_128x64,
    MULTISTAGE_128X64,
    multistage::shared_bytes(128, 64),
);
/// The split-k configurations.
pub const KERNELS: [Kernel<Matmul>; 5] = [
    KERNEL,
    KERNEL_128X64,
    KERNEL_64X128,
    KERNEL_MULTISTAGE,
    KERNEL_MULTISTAGE_128X64,
];

/// Whether `kernel` is a split-k configuration.
#[cfg(not(target_arch = "nvptx64"))]
pub fn is_split(kernel: &Kernel<Matmul>) -> bool {
    KERNELS.iter().any(|split| split.entry() == kernel.entry())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ptxkit::Occupancy;

    const TILE: (u32, u32) = (64, 64);

    #[test]
    fn splits_fill_one_wave_without_runs_shorter_than_the_minimum() {
        // 16 tiles, k = 65536, 660 resident blocks: 41 splits fill one wave (runs of 1600 ≥ 256).
        assert_eq!(splits_for(&Matmul::new(256, 256, 65_536).unwrap(), TILE, 660), 41);
        // 4096 tiles already fill the device: no split.
        assert_eq!(splits_for(&Matmul::new(4096, 4096, 4096).unwrap(), TILE, 660), 1);
        // k = 300: one run of at least 256.
        assert_eq!(splits_for(&Matmul::new(64, 64, 300).unwrap(), TILE, 660), 1);
        // 128 tiles: 5 splits, 640 blocks; 6 would start a second wave of 108.
        assert_eq!(splits_for(&Matmul::new(8192, 64, 8192).unwrap(), TILE, 660), 5);
        // 256 tiles at 1024³: 2 splits, where 3 would need 768 places.
        assert_eq!(splits_for(&Matmul::new(1024, 1024, 1024).unwrap(), TILE, 660), 2);
        // 64 tiles of 128×64 and 528 places: 8 splits.
        assert_eq!(splits_for(&Matmul::new(8192, 64, 8192).unwrap(), (128, 64), 528), 8);
    }

    #[test]
    fn runs_meet_in_poisoned_c_and_leave_the_counters_at_zero_for_the_next_launch() {
        // On 8 places: 64×64 tiles 2 (k split 4 ways), 128×64 and 64×128 one (4 ways each), as
        // the multistage tiles.
        for kernel in KERNELS {
            let grid = crate::matmul::k_runs::check_runs_meet(&kernel, (40, 68, 1024));
            assert_eq!(grid.z, 4, "{}", kernel.entry());
        }
        // Runs of k that are not whole steps of the pipeline, and odd n (the scalar copies of B).
        for kernel in [KERNEL_MULTISTAGE, KERNEL_MULTISTAGE_128X64] {
            for shape in [(130, 67, 1031), (1, 256, 2051), (129, 129, 257)] {
                crate::matmul::k_runs::check_runs_meet(&kernel, shape);
            }
        }
    }

    #[test]
    fn each_configuration_fills_one_wave_of_its_places() {
        // 528 places (132 SMs holding four blocks each).
        let problem = Matmul::new(8192, 64, 8192).unwrap();
        let device = Occupancy { resident_blocks: 528 };
        let blocks = |kernel: &Kernel<Matmul>| kernel.launch_shape(&problem, device).grid.volume();
        assert_eq!(blocks(&KERNEL), 128 * 4);
        assert_eq!(blocks(&KERNEL_128X64), 64 * 8);
        // 64×128 tiles on a 64-column C: 128 tiles, the 64×64 count.
        assert_eq!(blocks(&KERNEL_64X128), 128 * 4);
    }
}
