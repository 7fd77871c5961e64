//! `C = A·B` with bf16 operands and C in bf16, as PyTorch's bf16 `a @ b` returns it: the sums of
//! the f32-output rungs ([`super::pipelined`], [`super::specialized`]'s persistent rung), each
//! rounded once on its way out (nearest, ties to even). C's bytes are half the f32 output's, which
//! is most of the cost of a product whose k is short (a vision transformer's 768).
//!
//! For A of a few rows (decoding), the small-m rungs of [`super::small_m`] and the 16-row rung of
//! [`super::small_m16`], rounding the same way.
//!
//! Where a rung cuts a tile's k into runs (the small-m rungs always where k is long; the
//! persistent rung where the tiles are few or the last wave part-empty), the runs cannot meet in a
//! bf16 C: they meet in f32 partial sums the host gives (one block per counter), and the run that
//! arrives last rounds the block into C ([`crate::matmul::k_runs::meet_in_partials_warp`]).

use super::specialized::{self, partials_per_counter};
use super::{MatmulBf16, TensorMaps, pipelined, small_m, small_m16, swapped};
use crate::matmul::output::Out;
use crate::matmul::small_m::{Bf16s, partials_per_block, small_m_into};
use ptxkit::device::mma::Bf16;
use ptxkit::device::{lane_id, load4_l2, unrolled_to};
use ptxkit::{Dim3, Family, Kernel, Problem, kernel, kernel_sm90a};

/// The sizes of one product: A is m×k, B k×n, C m×n (bf16).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatmulBf16Rounded {
    pub m: u32,
    pub n: u32,
    pub k: u32,
}

impl MatmulBf16Rounded {
    /// The same product with f32 output: the launches are that family's.
    pub const fn summed(&self) -> MatmulBf16 {
        MatmulBf16 {
            m: self.m,
            n: self.n,
            k: self.k,
        }
    }
}

impl Problem for MatmulBf16Rounded {
    /// `(a, b, c, m, n, k, maps, arrivals, partials)`: as [`MatmulBf16`]'s, C of bf16, and
    /// `partials` the f32 partial sums where the persistent rung cuts k into runs
    /// ([`partials_needed`]; null elsewhere).
    type Args = (
        *const Bf16,
        *const Bf16,
        *mut Bf16,
        u32,
        u32,
        u32,
        *const TensorMaps,
        *mut u32,
        *mut f32,
    );
}

kernel! {
    #[launch_bounds(Dim3::x(pipelined::THREADS), 2)]
    /// `C = A·B` on the tensor cores (bf16 operands, f32 sums, C rounded to bf16), 128×128 per
    /// block.
    pub unsafe fn matmul_bf16_rounded_pipelined(a: *const Bf16, b: *const Bf16, c: *mut Bf16, m: u32, n: u32, k: u32, maps: *const TensorMaps, arrivals: *mut u32, partials: *mut f32) {
        // Copies by cp.async, k in one run: no maps, counters or partials.
        let _ = (maps, arrivals, partials);
        // SAFETY: the kernel's contract; PIPELINED launches the block and grid.
        unsafe { pipelined::run::<Bf16>(a, b, c, (m, n, k)) }
    }
}

kernel_sm90a! {
    #[launch_bounds(Dim3::x(specialized::THREADS), 1)]
    /// As `matmul_bf16_persistent` (TMA and `wgmma` on a persistent grid), C rounded to bf16.
    pub unsafe fn matmul_bf16_rounded_persistent(a: *const Bf16, b: *const Bf16, c: *mut Bf16, m: u32, n: u32, k: u32, maps: *const TensorMaps, arrivals: *mut u32, partials: *mut f32) {
        // SAFETY: the kernel's contract.
        unsafe { specialized::body::run::<true, { specialized::BN }, Bf16>(a, b, c, (m, n, k), maps, (arrivals, partials)) }
    }
}

kernel_sm90a! {
    #[launch_bounds(Dim3::x(specialized::THREADS), 1)]
    /// As `matmul_bf16_persistent_128x128` (128×128 tiles), C rounded to bf16.
    pub unsafe fn matmul_bf16_rounded_persistent_128x128(a: *const Bf16, b: *const Bf16, c: *mut Bf16, m: u32, n: u32, k: u32, maps: *const TensorMaps, arrivals: *mut u32, partials: *mut f32) {
        // SAFETY: the kernel's contract.
        unsafe { specialized::body::run::<true, { specialized::BN_NARROW }, Bf16>(a, b, c, (m, n, k), maps, (arrivals, partials)) }
    }
}

/// `$code` launched as the f32-output family's `$summed` is: the same block, shared memory and
/// grid for the same sizes.
macro_rules! launched_as {
    ($code:ident, $summed:expr) => {
        Kernel {
            code: $code,
            block: $summed.block,
            shared: $summed.shared,
            grid: |p, device| ($summed.grid)(&p.summed(), device),
        }
    };
}

macro_rules! small_m_rounded {
    ($name:ident, $launch:ident, $rows:literal, $i:literal, $blocks_per_sm:literal) => {
        kernel! {
            #[launch_bounds(Dim3::x(crate::matmul::small_m::THREADS), $blocks_per_sm)]
            /// `C = A·B` for A of a few rows (`small_m`'s rows per block): bf16 operands, C rounded
            /// to bf16.
            pub unsafe fn $name(a: *const Bf16, b: *const Bf16, c: *mut Bf16, m: u32, n: u32, k: u32, maps: *const TensorMaps, arrivals: *mut u32, partials: *mut f32) {
                // Plain loads: no tensor maps.
                let _ = maps;
                // SAFETY: forwarded from the kernel's contract; its launch gives the block and grid.
                unsafe { small_m_into::<Bf16s, $rows, 8, Bf16>((a, b, c), (m, n, k), (arrivals, partials)) }
            }
        }

        /// Launched as the f32-output small-m rung of as many rows is.
        pub const $launch: Kernel<MatmulBf16Rounded> = launched_as!($name, small_m::KERNELS[$i]);
    };
}
small_m_rounded!(matmul_bf16_rounded_small_m1, SMALL_M1, 1, 0, 3);
small_m_rounded!(matmul_bf16_rounded_small_m4, SMALL_M4, 4, 1, 2);
small_m_rounded!(matmul_bf16_rounded_small_m8, SMALL_M8, 8, 2, 1);

/// The small-m rungs, in the order of [`crate::matmul::small_m::ROWS`].
pub const SMALL_M: [Kernel<MatmulBf16Rounded>; 3] = [SMALL_M1, SMALL_M4, SMALL_M8];

kernel! {
    #[launch_bounds(Dim3::x(small_m16::THREADS), 1)]
    /// `C = A·B` for m ≤ 16 (more rows in more blocks) on the tensor cores, as
    /// `matmul_bf16_small_m16`, C rounded to bf16.
    pub unsafe fn matmul_bf16_rounded_small_m16(a: *const Bf16, b: *const Bf16, c: *mut Bf16, m: u32, n: u32, k: u32, maps: *const TensorMaps, arrivals: *mut u32, partials: *mut f32) {
        // Plain loads: no tensor maps.
        let _ = maps;
        // SAFETY: the kernel's contract; SMALL_M16 launches the block and grid.
        unsafe { small_m16::small_m16::<Bf16>((a, b, c), (m, n, k), (arrivals, partials)) }
    }
}

/// [`small_m16::KERNEL`]'s launch.
pub const SMALL_M16: Kernel<MatmulBf16Rounded> = launched_as!(matmul_bf16_rounded_small_m16, small_m16::KERNEL);

kernel_sm90a! {
    #[launch_bounds(Dim3::x(specialized::THREADS), 1)]
    /// As `matmul_bf16_persistent_128x64` (128×64 tiles), C rounded to bf16.
    pub unsafe fn matmul_bf16_rounded_persistent_128x64(a: *const Bf16, b: *const Bf16, c: *mut Bf16, m: u32, n: u32, k: u32, maps: *const TensorMaps, arrivals: *mut u32, partials: *mut f32) {
        // SAFETY: the kernel's contract.
        unsafe { specialized::body::run::<true, { specialized::BN_NARROWEST }, Bf16>(a, b, c, (m, n, k), maps, (arrivals, partials)) }
    }
}

kernel_sm90a! {
    #[launch_bounds(Dim3::x(swapped::THREADS), 2)]
    /// `C = A·B` for m ≤ 16 as `matmul_bf16_swapped` (Cᵀ = Bᵀ·Aᵀ on `wgmma`), C rounded to bf16.
    pub unsafe fn matmul_bf16_rounded_swapped(a: *const Bf16, b: *const Bf16, c: *mut Bf16, m: u32, n: u32, k: u32, maps: *const TensorMaps, arrivals: *mut u32, partials: *mut f32) {
        // The operands are read through the maps.
        let _ = (a, b);
        // SAFETY: the kernel's contract; SWAPPED launches the block and grid.
        unsafe { swapped::body::run::<super::specialized::Bf16Tiles, Bf16>(c, (m, n, k), maps, (arrivals, partials), 1.0) }
    }
}

/// [`swapped::KERNEL`]'s launch.
pub const SWAPPED: Kernel<MatmulBf16Rounded> = launched_as!(matmul_bf16_rounded_swapped, swapped::KERNEL);

kernel_sm90a! {
    #[launch_bounds(Dim3::x(specialized::THREADS), 1, cluster = specialized::CLUSTER)]
    /// As `matmul_bf16_clustered` (tiles in pairs sharing B's copies), C rounded to bf16.
    pub unsafe fn matmul_bf16_rounded_clustered(a: *const Bf16, b: *const Bf16, c: *mut Bf16, m: u32, n: u32, k: u32, maps: *const TensorMaps, arrivals: *mut u32, partials: *mut f32) {
        // SAFETY: the kernel's contract; launched in clusters of CLUSTER.
        unsafe {
            specialized::body::run_in::<specialized::Bf16Tiles, true, { specialized::BN }, Bf16, { specialized::CLUSTER }, { specialized::CLUSTER_ROWS }>((a, b, 1.0), c, (m, n, k), maps, (arrivals, partials))
        }
    }
}

kernel_sm90a! {
    #[launch_bounds(Dim3::x(specialized::THREADS), 1, cluster = specialized::CLUSTER)]
    /// As `matmul_bf16_clustered_128x128`, C rounded to bf16.
    pub unsafe fn matmul_bf16_rounded_clustered_128x128(a: *const Bf16, b: *const Bf16, c: *mut Bf16, m: u32, n: u32, k: u32, maps: *const TensorMaps, arrivals: *mut u32, partials: *mut f32) {
        // SAFETY: as above.
        unsafe {
            specialized::body::run_in::<specialized::Bf16Tiles, true, { specialized::BN_NARROW }, Bf16, { specialized::CLUSTER }, { specialized::CLUSTER_ROWS }>((a, b, 1.0), c, (m, n, k), maps, (arrivals, partials))
        }
    }
}

/// [`specialized::KERNEL_CLUSTERED`]'s launch.
pub const CLUSTERED: Kernel<MatmulBf16Rounded> =
    launched_as!(matmul_bf16_rounded_clustered, specialized::KERNEL_CLUSTERED);

/// [`specialized::KERNEL_CLUSTERED_128X128`]'s launch.
pub const CLUSTERED_128X128: Kernel<MatmulBf16Rounded> = launched_as!(
    matmul_bf16_rounded_clustered_128x128,
    specialized::KERNEL_CLUSTERED_128X128
);

/// [`pipelined::KERNEL`]'s launch.
pub const PIPELINED: Kernel<MatmulBf16Rounded> = launched_as!(matmul_bf16_rounded_pipelined, pipelined::KERNEL);

/// [`specialized::KERNEL_PERSISTENT`]'s launch.
pub const PERSISTENT: Kernel<MatmulBf16Rounded> =
    launched_as!(matmul_bf16_rounded_persistent, specialized::KERNEL_PERSISTENT);

/// [`specialized::KERNEL_PERSISTENT_128X128`]'s launch.
pub const PERSISTENT_128X128: Kernel<MatmulBf16Rounded> = launched_as!(
    matmul_bf16_rounded_persistent_128x128,
    specialized::KERNEL_PERSISTENT_128X128
);

/// [`specialized::KERNEL_PERSISTENT_128X64`]'s launch.
pub const PERSISTENT_128X64: Kernel<MatmulBf16Rounded> = launched_as!(
    matmul_bf16_rounded_persistent_128x64,
    specialized::KERNEL_PERSISTENT_128X64
);

/// The bf16-output matmul kernels, in ladder order: the registry's list.
pub const FAMILY: Family<MatmulBf16Rounded> = Family::new(
    "matmul_bf16_rounded",
    &[
        PIPELINED,
        PERSISTENT,
        PERSISTENT_128X128,
        PERSISTENT_128X64,
        CLUSTERED,
        CLUSTERED_128X128,
        SMALL_M1,
        SMALL_M4,
        SMALL_M8,
        SMALL_M16,
        SWAPPED,
    ],
);

/// The tile width of a clustered rung of this family, `None` for the others.
#[cfg(not(target_arch = "nvptx64"))]
fn clustered_width(kernel: &Kernel<MatmulBf16Rounded>) -> Option<u32> {
    let tiles = [
        (CLUSTERED, specialized::BN),
        (CLUSTERED_128X128, specialized::BN_NARROW),
    ];
    specialized::width_among(&tiles, kernel.entry())
}

/// The tile width of a persistent rung of this family, `None` for the others.
#[cfg(not(target_arch = "nvptx64"))]
fn persistent_width(kernel: &Kernel<MatmulBf16Rounded>) -> Option<u32> {
    let tiles = [
        (PERSISTENT, specialized::BN),
        (PERSISTENT_128X128, specialized::BN_NARROW),
        (PERSISTENT_128X64, specialized::BN_NARROWEST),
    ];
    specialized::width_among(&tiles, kernel.entry())
}

/// The zeroed counters `arrivals` must hold for a launch of `kernel` on `grid`: the persistent
/// rungs' where they cut k into runs ([`specialized::counters`]), the small-m rungs' where the grid
/// is more than one deep ([`crate::matmul::k_runs::counters`], [`crate::matmul::k_runs::warp_counters`]), none
/// elsewhere.
#[cfg(not(target_arch = "nvptx64"))]
pub fn arrivals_needed(kernel: &Kernel<MatmulBf16Rounded>, problem: &MatmulBf16Rounded, grid: Dim3) -> usize {
    if kernel.entry() == SMALL_M16.entry() {
        return crate::matmul::k_runs::warp_counters(grid, small_m16::WARPS);
    }
    if kernel.entry() == SWAPPED.entry() {
        return crate::matmul::k_runs::warp_counters(grid, swapped::WARPS);
    }
    match clustered_width(kernel) {
        Some(specialized::BN) => {
            return specialized::clustered_counters::<{ specialized::BN }>(&problem.summed(), grid);
        }
        Some(_) => return specialized::clustered_counters::<{ specialized::BN_NARROW }>(&problem.summed(), grid),
        None => {}
    }
    match persistent_width(kernel) {
        Some(specialized::BN) => specialized::counters::<{ specialized::BN }>(&problem.summed(), grid),
        Some(specialized::BN_NARROW) => specialized::counters::<{ specialized::BN_NARROW }>(&problem.summed(), grid),
        Some(_) => specialized::counters::<{ specialized::BN_NARROWEST }>(&problem.summed(), grid),
        None => crate::matmul::k_runs::counters(&SMALL_M, kernel, grid),
    }
}

/// The f32 partial sums `partials` must hold for such a launch: a block per counter.
#[cfg(not(target_arch = "nvptx64"))]
pub fn partials_needed(kernel: &Kernel<MatmulBf16Rounded>, problem: &MatmulBf16Rounded, grid: Dim3) -> usize {
    let per_counter = match (
        SMALL_M.iter().position(|small| small.entry() == kernel.entry()),
        persistent_width(kernel).or(clustered_width(kernel)),
    ) {
        (Some(i), _) => partials_per_block(crate::matmul::small_m::ROWS[i] as usize, 8),
        (None, Some(width)) => partials_per_counter(width),
        (None, None) if kernel.entry() == SMALL_M16.entry() => small_m16::PARTIALS_PER_COUNTER,
        (None, None) if kernel.entry() == SWAPPED.entry() => swapped::PARTIALS_PER_COUNTER,
        (None, None) => 0,
    };
    arrivals_needed(kernel, problem, grid) * per_counter as usize
}

#[cfg(not(target_arch = "nvptx64"))]
impl MatmulBf16Rounded {
    /// m, n, k at least 1, and each matrix within the kernels' 32-bit index range.
    pub fn new(m: usize, n: usize, k: usize) -> Result<Self, ptxkit::InvalidSize> {
        let sizes = MatmulBf16::new(m, n, k).map_err(|e| ptxkit::InvalidSize {
            problem: "matmul_bf16_rounded",
            ..e
        })?;
        Ok(MatmulBf16Rounded {
            m: sizes.m,
            n: sizes.n,
            k: sizes.k,
        })
    }
}

/// Rounds a warp's block of partial sums (16 rows of `N` f32 from `block`, whole once every run
/// has added its own, where inside C) into C (m×n) at `(row0, col0)`, the parts inside C: each
/// lane four consecutive columns at a time, one 16-byte load each, past the L1 (`load4_l2`: other
/// SMs added the sums, and no one reads them again). Sixteen loads (eight at 64 columns) go out
/// before any of their stores: one wait for the L2 per sixteen, not per four sums.
///
/// # Safety
/// `block` holds 16·N f32 that no one writes meanwhile, 16-byte aligned, every addition to it
/// acquired; `c` holds m·n elements; every lane of the warp calls it.
#[inline(always)]
pub unsafe fn round_partials<const N: u32, O: Out>(
    block: *const f32,
    c: *mut O,
    (m, n): (u32, u32),
    (row0, col0): (u32, u32),
) {
    const { assert!(N == 256 || N == 128 || N == 64, "rows of 256, 128 or 64 columns") };
    // The block as fours: the warp's j-th load takes fours 32·j to 32·j + 31, one a lane, so
    // each lane loads N / 8 of them, in batches of at most sixteen.
    let loads = N / 8;
    let per_batch = if loads < 16 { loads } else { 16 };
    let lane = lane_id();
    // The row and column of this lane's j-th four.
    let place = |j: u32| ((128 * j + 4 * lane) / N, (128 * j + 4 * lane) % N);
    unrolled_to(
        loads / per_batch,
        #[inline(always)]
        |batch| {
            let mut sums = [[0.0f32; 4]; 16];
            unrolled_to(
                per_batch,
                #[inline(always)]
                |p| {
                    let (r, column) = place(per_batch * batch + p);
                    let first = block.wrapping_add((r * N + column) as usize);
                    // Rows past C's last were never summed.
                    if row0 + r < m {
                        // SAFETY: inside the block (r < 16, columns < N), 16-byte aligned (the
                        // block is, and the column a multiple of 4).
                        sums[p as usize] = unsafe { load4_l2(first) }.0;
                    }
                },
            );
            unrolled_to(
                per_batch,
                #[inline(always)]
                |p| {
                    let (r, column) = place(per_batch * batch + p);
                    let (row, at) = (row0 + r, col0 + column);
                    if row >= m || at >= n {
                        return;
                    }
                    let four = sums[p as usize];
                    let first = c.wrapping_add(row as usize * n as usize + at as usize);
                    // SAFETY: inside C's row `row` < m, by the tests; the fours aligned as four
                    // where stored as one.
                    unsafe {
                        if at + 3 < n && (first as usize).is_multiple_of(4 * size_of::<O>()) {
                            O::put4(first, four, false);
                        } else {
                            for e in 0..4 {
                                if at + e < n {
                                    O::put(first.wrapping_add(e as usize), four[e as usize], false);
                                }
                            }
                        }
                    }
                },
            );
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matmul::k_runs::meet_in_partials_warp;
    use ptxkit::device::{WARP_SIZE, block_idx, global_store, grid_dim, red_add};
    use ptxkit::{LaunchShape, kernel};

    /// Run `run`'s sum for element i of the block: small integers and halves, so that every sum
    /// of runs is exact in f32 and each element's differs.
    fn part(run: u32, i: u32) -> f32 {
        (i % 509) as f32 + 0.5 * run as f32
    }

    kernel! {
        /// Block z of the grid's x is run z of one warp's part: it stores or adds its sums into
        /// the 16×`width` partials (256, 128 or 64 columns), and the last to arrive rounds them into C
        /// (m×n) at (row0, col0).
        unsafe fn meet_and_round(partials: *mut f32, c: *mut Bf16, m: u32, n: u32, row0: u32, col0: u32, arrived: *mut u32, width: u32) {
            let (run, runs) = (block_idx().x, grid_dim().x);
            let lane = lane_id();
            let write = |adding: bool| {
                for i in (lane..16 * width).step_by(WARP_SIZE as usize) {
                    let at = partials.wrapping_add(i as usize);
                    // SAFETY: inside the partials.
                    unsafe { if adding { red_add(at, part(run, i)) } else { global_store(at, part(run, i)) } }
                }
            };
            // SAFETY: the partials hold 16·width f32, every run's sums acquired; C holds m·n.
            let round = || unsafe {
                match width {
                    256 => round_partials::<256, Bf16>(partials, c, (m, n), (row0, col0)),
                    128 => round_partials::<128, Bf16>(partials, c, (m, n), (row0, col0)),
                    _ => round_partials::<64, Bf16>(partials, c, (m, n), (row0, col0)),
                }
            };
            // SAFETY: one counter for the part, zeroed; blocks start in order.
            unsafe { meet_in_partials_warp(arrived, (run, runs), write, round) }
        }
    }

    /// Every run's sums meet and are rounded once into C, whole rows and a block cut by C's last
    /// row and column, C's rows aligned and not, blocks of 256, 128 and 64 columns; elsewhere C is
    /// untouched, and the counter is left at zero.
    #[test]
    fn the_last_run_rounds_the_whole_sums_into_c() {
        const POISON: u16 = 0x7fc1;
        for ((runs, (m, n), corner), width) in [
            (1, (16, 256), (0, 0)),
            (3, (16, 256), (0, 0)),
            (4, (20, 300), (0, 0)),
            (2, (9, 301), (3, 45)),
            (5, (40, 515), (30, 259)),
            // A row's last four start 8-byte aligned three short of its end (row 16, n of 255).
            (2, (20, 255), (1, 0)),
            (3, (16, 128), (0, 0)),
            (2, (9, 301), (3, 175)),
        ]
        .into_iter()
        .flat_map(|case| [(case, 256u32), (case, 128), (case, 64)])
        {
            let mut partials = vec![f32::NAN; (16 * width) as usize];
            let mut c = vec![POISON; m * n];
            let mut arrived = 0u32;
            let shape = LaunchShape {
                grid: Dim3::x(runs),
                block: Dim3::x(WARP_SIZE),
                shared_bytes: 0,
            };
            let args = (
                partials.as_mut_ptr(),
                c.as_mut_ptr().cast::<Bf16>(),
                m as u32,
                n as u32,
                corner.0,
                corner.1,
                &mut arrived as *mut u32,
                width,
            );
            // SAFETY: the partials hold 16·width f32, C m·n bf16, one counter.
            unsafe { meet_and_round.emulate(&shape, args) }.unwrap();
            for (e, &got) in c.iter().enumerate() {
                let (row, col) = ((e / n) as u32, (e % n) as u32);
                let (r, j) = (row.wrapping_sub(corner.0), col.wrapping_sub(corner.1));
                let expected = if r < 16 && j < width {
                    let sum: f32 = (0..runs).map(|run| part(run, r * width + j)).sum();
                    Bf16::from_f32(sum).0
                } else {
                    POISON
                };
                assert_eq!(
                    got, expected,
                    "{runs} runs, {m}×{n}, block of {width} at {corner:?}: ({row}, {col})"
                );
            }
            assert_eq!(arrived, 0, "{runs} runs: the counter left at zero");
        }
    }

    /// Each small-m rung on the emulator's places, twice (the counters must be back at zero), C
    /// poisoned each time: one row, four, and seven in two row groups, k cut into runs that meet in
    /// the partial sums and not, n not a multiple of 8 (the element-wise path): within the f32 sums'
    /// bound and one rounding to bf16 of the f64 product.
    #[test]
    fn small_m_runs_meet_in_partials_and_round_once() {
        use crate::testing::{GUARD, assert_matches, random_vec, rng};
        let mut rng = rng();
        for (kernel, (m, n, k)) in [
            (SMALL_M1, (1, 300, 2051)),
            (SMALL_M1, (1, 77, 100)),
            (SMALL_M4, (4, 515, 1500)),
            (SMALL_M8, (7, 260, 4096)),
            (SMALL_M16, (16, 520, 2048)),
            (SMALL_M16, (11, 77, 1001)),
            (SMALL_M16, (16, 64, 64)),
        ] {
            let round = |v: Vec<f32>| v.into_iter().map(|x| Bf16::from_f32(x).to_f32()).collect::<Vec<_>>();
            let (a, b) = (round(random_vec(&mut rng, m * k)), round(random_vec(&mut rng, k * n)));
            let mut expected = crate::reference::matmul(&a, &b, m, n, k);
            for (value, tolerance) in expected.values.iter().zip(expected.tolerance.iter_mut()) {
                *tolerance += (value.abs() + *tolerance) / 256.0;
            }
            let bits = |v: &[f32]| v.iter().map(|&x| Bf16::from_f32(x)).collect::<Vec<_>>();
            let (a, b) = (bits(&a), bits(&b));
            let problem = MatmulBf16Rounded::new(m, n, k).unwrap();
            let shape = kernel.launch_shape(&problem, ptxkit::Occupancy::EMULATOR);
            let mut arrivals = vec![0u32; arrivals_needed(&kernel, &problem, shape.grid)];
            let mut partials = vec![f32::NAN; partials_needed(&kernel, &problem, shape.grid)];
            let what = format!("{} at {m}×{n}×{k}, grid {:?}", kernel.entry(), shape.grid);
            if k > 100 {
                assert!(shape.grid.z > 1 && !partials.is_empty(), "{what}: k not cut");
            }
            for launch in 0..2 {
                let mut c = vec![Bf16(0x7fc1); m * n + GUARD];
                let args = (
                    a.as_ptr(),
                    b.as_ptr(),
                    c.as_mut_ptr(),
                    problem.m,
                    problem.n,
                    problem.k,
                    core::ptr::null(),
                    arrivals.as_mut_ptr(),
                    partials.as_mut_ptr(),
                );
                // SAFETY: A, B and C hold m·k, k·n and m·n elements; the counters and partials
                // the launch needs.
                unsafe { kernel.code.emulate(&shape, args) }.unwrap();
                let c: Vec<f32> = c.iter().map(|x| x.to_f32()).collect();
                assert_matches(&format!("{what}, launch {launch}"), &c, &expected);
                assert!(c[m * n..].iter().all(|x| x.is_nan()), "{what}: written past C");
                assert!(
                    arrivals.iter().all(|&count| count == 0),
                    "{what}: counters {arrivals:?}"
                );
            }
        }
    }
}
