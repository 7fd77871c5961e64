//! `C = scale_a · scale_b · (A·B)` with FP8 operands, as PyTorch's `torch._scaled_mm` computes it
//! with per-tensor scales: A (m×k) row-major e4m3, B (k×n) given as its transpose Bᵀ (n×k
//! row-major, the column-major B that `_scaled_mm` takes), `scale_a` and `scale_b` one f32 each in
//! global memory, f32 sums, C (m×n) rounded once to bf16.
//!
//! * [`tiled`]: 32×32 shared-memory tiles on the CUDA cores, each FP8 widened to f32 as it is
//!   staged: the rung that runs anywhere (the emulator, GPUs without FP8 tensor cores).
//! * [`scaled`]: the warp-specialised, persistent TMA tiles of the bf16 ladder
//!   ([`crate::matmul_bf16::specialized`]) on FP8's `wgmma` (sm_90a): 128 of k a step in the same
//!   slots, the sums scaled on their way out.
//!
//! * [`swapped`]: for A of few rows, the roles swapped (Cᵀ = Bᵀ·Aᵀ on `wgmma.m64n16k32`), Bᵀ
//!   streamed once in strips and runs of k (sm_90a).
//!
//! [`rowwise`] is the same rungs with row-wise scales (a factor per row of A and one per column of
//! B, [`RowScales`]), a family of its own: its scales are m and n f32, not one each; [`blockwise`]
//! with block scales (1×128 for A, 128×128 for B, [`BlockScales`]), each block of k's sums scaled
//! on their own into f32 totals; [`promoted`] row-wise scales over such totals (PyTorch's
//! `_scaled_mm` without `use_fast_accum`).
//!
//! Hopper's FP8 `wgmma` adds into its accumulators with fewer mantissa bits than f32's (published
//! measurements: 13); the check's bound allows for that (the host's `matmul_fp8` family).
//!
//! A new rung is a file here and its line in [`FAMILY`].

pub mod blockwise;
pub mod promoted;
pub mod rowwise;
pub mod scaled;
pub mod swapped;
pub mod tiled;

use crate::matmul::scale::{SCALE_BLOCK_K, Scale};
use crate::matmul_bf16::specialized::{self, TileFormat};
use crate::matmul_bf16::{MatmulBf16, TensorMaps};
use ptxkit::device::fp8::E4M3;
use ptxkit::device::mma::Bf16;
use ptxkit::{Dim3, Family, Kernel, Problem};

/// The sizes of one product: A is m×k, B k×n (given as n×k), C m×n.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatmulFp8 {
    pub m: u32,
    pub n: u32,
    pub k: u32,
}

impl MatmulFp8 {
    /// The bf16 product whose rows of A and B are as many bytes: the same tiles, steps of k and
    /// grids (a 128-byte row holds 128 FP8 or 64 bf16).
    pub const fn same_steps(&self) -> MatmulBf16 {
        MatmulBf16 {
            m: self.m,
            n: self.n,
            k: self.k.div_ceil(2),
        }
    }
}

impl Problem for MatmulFp8 {
    /// `(a, bt, c, m, n, k, maps, arrivals, partials, scale_a, scale_b)`: A and Bᵀ of e4m3, C of
    /// bf16; `maps` the tensor maps of A and Bᵀ for the TMA rungs (null elsewhere); `arrivals`
    /// and `partials` the zeroed counters and f32 partial sums where a rung cuts k into runs
    /// ([`arrivals_needed`], [`partials_needed`]; null elsewhere); `scale_a` and `scale_b` one
    /// f32 each.
    type Args = (
        *const E4M3,
        *const E4M3,
        *mut Bf16,
        u32,
        u32,
        u32,
        *const TensorMaps,
        *mut u32,
        *mut f32,
        *const f32,
        *const f32,
    );
}

/// How `auto` chooses among the FP8 tiles (the bf16 product of the same steps'
/// [`specialized::TileRule`]). A 128×128 step costs 12 twentieths of a 128×256 one and a 128×64
/// step 8: the tiles' rates at large products (about 1000, 745 and 1225 TFLOP/s on an H100, run
/// 2026-12-07 l), narrower tiles cheaper than bf16's as an FP8 step's products take half the
/// time of its copies'. Clusters from 32 steps (a k of 4096) over 3 waves: an FP8 step does the
/// same copies in half the tensor-core time, so halving B's copies pays at shorter k (8192³,
/// 4096³, 2048 × 11008 × 4096 and 4096 × 28672 × 8192 ran 1.04–1.17× faster in clusters,
/// 12608 × 4096 × 1024, of 8 steps, slower: runs k and l).
pub const TILE_RULE: specialized::TileRule = specialized::TileRule {
    narrow_step_twentieths: 12,
    narrowest_step_twentieths: 8,
    clusters_min_steps: 32,
    clusters_min_waves: 3,
};

/// The per-tensor factor, `scale_a · scale_b`, for every element of C.
///
/// # Safety
/// `scale_a` and `scale_b` point at an f32 each.
#[inline(always)]
pub unsafe fn per_tensor(scale_a: *const f32, scale_b: *const f32, _sizes: (u32, u32, u32)) -> f32 {
    // SAFETY: the caller's promise.
    unsafe { *scale_a * *scale_b }
}

/// Row-wise scales: C's element (i, j) is multiplied by `a[i] · b[j]`, a factor per row of A and
/// one per column of B (`torch._scaled_mm`'s (m, 1) and (1, n) scales).
#[derive(Clone, Copy)]
pub struct RowScales {
    a: *const f32,
    b: *const f32,
    c: (u32, u32),
}

impl RowScales {
    /// The factors of the product of an m × k A and a k × n B.
    ///
    /// # Safety
    /// m and n are at least 1; `a` holds m f32 and `b` n, readable while the value is used.
    #[inline(always)]
    pub unsafe fn new(a: *const f32, b: *const f32, (m, n, _k): (u32, u32, u32)) -> Self {
        RowScales { a, b, c: (m, n) }
    }
}

impl Scale for RowScales {
    #[inline(always)]
    fn at(self, row: u32, col: u32) -> f32 {
        // SAFETY: clamped to the last row and column, within the m and n factors `new` was
        // promised.
        unsafe { *self.a.add(row.min(self.c.0 - 1) as usize) * *self.b.add(col.min(self.c.1 - 1) as usize) }
    }
}

/// Block scales (DeepSeek-V3's): A's factors per row and block of 128 of k (1×128), B's per block
/// of 128 of k and of 128 columns (128×128). The sums of each block of k are scaled on their own,
/// by `a[block][i] · b[j / 128][block]`, and added into f32 totals. `a` lies block by block (a
/// block's m factors together), `b` by blocks of columns (each one's factors for every block of k
/// together), as PyTorch lays them out for `_scaled_mm`.
#[derive(Clone, Copy)]
pub struct BlockScales {
    a: *const f32,
    b: *const f32,
    c: (u32, u32),
    blocks: u32,
}

impl BlockScales {
    /// The factors of the product of an m × k A and a k × n B.
    ///
    /// # Safety
    /// m, n and k are at least 1; `a` holds `m · ⌈k/128⌉` f32 and `b` `⌈n/128⌉ · ⌈k/128⌉`,
    /// readable while the value is used.
    #[inline(always)]
    pub unsafe fn new(a: *const f32, b: *const f32, (m, n, k): (u32, u32, u32)) -> Self {
        BlockScales {
            a,
            b,
            c: (m, n),
            blocks: k.div_ceil(SCALE_BLOCK_K),
        }
    }
}

impl Scale for BlockScales {
    const PER_BLOCK: bool = true;

    #[inline(always)]
    fn at(self, _row: u32, _col: u32) -> f32 {
        1.0
    }

    #[inline(always)]
    fn at_block(self, block: u32, row: u32, col: u32) -> f32 {
        let (row, col) = (row.min(self.c.0 - 1), col.min(self.c.1 - 1));
        let block = block.min(self.blocks - 1);
        // SAFETY: each index clamped inside the factors `new` was promised.
        unsafe {
            *self.a.add((block * self.c.0 + row) as usize)
                * *self.b.add(((col / SCALE_BLOCK_K) * self.blocks + block) as usize)
        }
    }
}

/// e4m3 operands for the bf16 ladder's tile body: 128 of k a step, B transposed (FP8's `wgmma`
/// reads B k-major only).
pub struct E4m3Tiles;

impl TileFormat for E4m3Tiles {
    type Element = E4M3;
    const STEP_K: u32 = 2 * specialized::BK;
    const B_TRANSPOSED: bool = true;
}

/// The TMA boxes (columns, rows) of A and of Bᵀ: a step's 128 of k by the tile's 128 rows of A,
/// and by 64 of Bᵀ's rows (a tile's columns of C), the bytes of the bf16 tiles' boxes.
pub const A_BOX: (u32, u32) = (E4m3Tiles::STEP_K, specialized::BM);
pub const B_BOX: (u32, u32) = (E4m3Tiles::STEP_K, 64);

/// The FP8 matmul kernels, in ladder order: the registry's list.
pub const FAMILY: Family<MatmulFp8> = Family::new(
    "matmul_fp8",
    &[
        tiled::KERNEL,
        scaled::PERSISTENT,
        scaled::PERSISTENT_128X128,
        scaled::PERSISTENT_128X64,
        scaled::CLUSTERED,
        swapped::SWAPPED,
    ],
);

/// The TMA rungs of the families (per-tensor, row-wise, block scales, row-wise over f32 totals): entry, tile width, and
/// whether its blocks come in clusters.
#[cfg(not(target_arch = "nvptx64"))]
const TMA_RUNGS: [(Kernel<MatmulFp8>, u32, bool); 11] = [
    (scaled::PERSISTENT, specialized::BN, false),
    (scaled::PERSISTENT_128X128, specialized::BN_NARROW, false),
    (scaled::PERSISTENT_128X64, specialized::BN_NARROWEST, false),
    (scaled::CLUSTERED, specialized::BN, true),
    (rowwise::PERSISTENT, specialized::BN, false),
    (rowwise::PERSISTENT_128X128, specialized::BN_NARROW, false),
    (rowwise::PERSISTENT_128X64, specialized::BN_NARROWEST, false),
    (blockwise::PERSISTENT_128X128, specialized::BN_NARROW, false),
    (blockwise::PERSISTENT_128X64, specialized::BN_NARROWEST, false),
    (promoted::PERSISTENT_128X128, specialized::BN_NARROW, false),
    (promoted::PERSISTENT_128X64, specialized::BN_NARROWEST, false),
];

/// The swapped-role rungs of the families (per-tensor, row-wise, block scales, row-wise over f32
/// totals).
#[cfg(not(target_arch = "nvptx64"))]
const SWAPPED_RUNGS: [Kernel<MatmulFp8>; 4] = [
    swapped::SWAPPED,
    rowwise::SWAPPED,
    blockwise::SWAPPED,
    promoted::SWAPPED,
];

/// Whether `kernel` is the swapped-role rung of one of the families.
#[cfg(not(target_arch = "nvptx64"))]
pub fn is_swapped(kernel: &Kernel<MatmulFp8>) -> bool {
    SWAPPED_RUNGS.iter().any(|rung| rung.entry() == kernel.entry())
}

/// The tile width of `kernel` and whether it runs in clusters, for a TMA rung of any family;
/// `None` for the others.
#[cfg(not(target_arch = "nvptx64"))]
fn tma_rung(kernel: &Kernel<MatmulFp8>) -> Option<(u32, bool)> {
    TMA_RUNGS
        .iter()
        .find(|(rung, ..)| rung.entry() == kernel.entry())
        .map(|&(_, width, clustered)| (width, clustered))
}

/// The tile width of a TMA rung of any of the families (persistent or clustered), `None` for the
/// others.
#[cfg(not(target_arch = "nvptx64"))]
pub fn tile_width(kernel: &Kernel<MatmulFp8>) -> Option<u32> {
    tma_rung(kernel).map(|(width, _)| width)
}

/// The zeroed counters `arrivals` must hold for a launch of `kernel` on `grid`: the TMA and
/// swapped rungs' where they cut k into runs (those of the bf16 product of the same steps), none
/// for the tiled rungs.
#[cfg(not(target_arch = "nvptx64"))]
pub fn arrivals_needed(kernel: &Kernel<MatmulFp8>, problem: &MatmulFp8, grid: Dim3) -> usize {
    if is_swapped(kernel) {
        return crate::matmul::k_runs::warp_counters(grid, crate::matmul_bf16::swapped::WARPS);
    }
    let same = problem.same_steps();
    match tma_rung(kernel) {
        Some((_, true)) => specialized::clustered_counters::<{ specialized::BN }>(&same, grid),
        Some((specialized::BN, _)) => specialized::counters::<{ specialized::BN }>(&same, grid),
        Some((specialized::BN_NARROW, _)) => specialized::counters::<{ specialized::BN_NARROW }>(&same, grid),
        Some(_) => specialized::counters::<{ specialized::BN_NARROWEST }>(&same, grid),
        None => 0,
    }
}

/// The f32 factors `scale_a` and `scale_b` hold for a launch of `kernel` on `problem`: m and n
/// for a rung of [`rowwise::FAMILY`] or [`promoted::FAMILY`], `m·⌈k/128⌉` and
/// `⌈n/128⌉·⌈k/128⌉` for one of [`blockwise::FAMILY`], one each for the others.
#[cfg(not(target_arch = "nvptx64"))]
pub fn scale_lengths(kernel: &Kernel<MatmulFp8>, problem: &MatmulFp8) -> (usize, usize) {
    let of = |family: &Family<MatmulFp8>| family.kernels.iter().any(|rung| rung.entry() == kernel.entry());
    let (m, n) = (problem.m as usize, problem.n as usize);
    let blocks = problem.k.div_ceil(SCALE_BLOCK_K) as usize;
    if of(&rowwise::FAMILY) || of(&promoted::FAMILY) {
        (m, n)
    } else if of(&blockwise::FAMILY) {
        (m * blocks, n.div_ceil(SCALE_BLOCK_K as usize) * blocks)
    } else {
        (1, 1)
    }
}

/// The f32 partial sums `partials` must hold for such a launch: a block per counter.
#[cfg(not(target_arch = "nvptx64"))]
pub fn partials_needed(kernel: &Kernel<MatmulFp8>, problem: &MatmulFp8, grid: Dim3) -> usize {
    let per_counter = match is_swapped(kernel) {
        true => crate::matmul_bf16::swapped::PARTIALS_PER_COUNTER,
        false => tile_width(kernel).map_or(0, specialized::partials_per_counter),
    };
    arrivals_needed(kernel, problem, grid) * per_counter as usize
}

#[cfg(not(target_arch = "nvptx64"))]
impl MatmulFp8 {
    /// m, n, k at least 1, and each matrix within the kernels' 32-bit index range (the f32
    /// ladder's rule).
    pub fn new(m: usize, n: usize, k: usize) -> Result<Self, ptxkit::InvalidSize> {
        let sizes = crate::matmul::Matmul::new(m, n, k).map_err(|e| ptxkit::InvalidSize {
            problem: "matmul_fp8",
            ..e
        })?;
        Ok(MatmulFp8 {
            m: sizes.m,
            n: sizes.n,
            k: sizes.k,
        })
    }

    /// Elements of A, Bᵀ and C.
    pub fn lengths(&self) -> (usize, usize, usize) {
        let (m, n, k) = (self.m as usize, self.n as usize, self.k as usize);
        (m * k, n * k, m * n)
    }

    /// Floating-point operations of the product: one multiply and one add per term.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tile the rule predicts fastest at each of run l's model shapes is the one that ran
    /// fastest there, or within 3 % of it (H100, run 2026-12-07 l).
    #[test]
    fn the_fp8_rule_predicts_the_tiles_that_ran_fastest() {
        // 0: 128×256, 1: 128×128, 2: 128×64; of equals the wider, as the host chooses.
        let fastest = |(m, n, k): (u32, u32, u32)| {
            let times = TILE_RULE.predicted_twentieths(&MatmulFp8 { m, n, k }.same_steps(), 132);
            (0..3).min_by_key(|&i| times[i]).unwrap()
        };
        for (shape, tile) in [
            ((128, 4096, 4096), 2),
            ((128, 4096, 11008), 2),
            ((128, 11008, 4096), 1),
            ((512, 4096, 4096), 1),
            ((512, 4096, 11008), 1),
            ((1024, 4096, 4096), 0),
            ((2048, 4096, 4096), 0),
            ((2048, 4096, 11008), 0),
            ((4096, 11008, 4096), 0),
            ((8192, 8192, 2048), 0),
            ((12608, 4096, 1024), 0),
            ((16384, 4096, 4096), 0),
        ] {
            assert_eq!(fastest(shape), tile, "{shape:?}");
        }
    }

    /// Clusters from a k of 4096 over three waves of 128×256 tiles: 8192³, 4096³ and
    /// 2048 × 11008 × 4096 in them, 12608 × 4096 × 1024 and few rows not.
    #[test]
    fn fp8_clusters_pay_from_a_shorter_k_than_bf16s() {
        let pays = |(m, n, k): (u32, u32, u32)| TILE_RULE.clusters_pay(&MatmulFp8 { m, n, k }.same_steps(), 132);
        for shape in [(8192, 8192, 8192), (4096, 4096, 4096), (2048, 11008, 4096)] {
            assert!(pays(shape), "{shape:?}");
        }
        for shape in [
            (12608, 4096, 1024),
            (128, 4096, 4096),
            (512, 4096, 11008),
            (4096, 4096, 4095 - 128),
            (1, 1, 1),
        ] {
            assert!(!pays(shape), "{shape:?}");
        }
    }

    /// FP8's steps of k are the bf16 product's of half the k, rounded up: the grids and counters
    /// the host computes from that product are the kernels' own.
    #[test]
    fn the_same_steps_are_the_bf16_products_of_the_same_bytes() {
        for k in [1, 2, 127, 128, 129, 255, 256, 257, 4095, 4096, 4097, 11008] {
            let p = MatmulFp8 { m: 1, n: 1, k };
            assert_eq!(
                k.div_ceil(E4m3Tiles::STEP_K),
                p.same_steps().k.div_ceil(specialized::BK),
                "k = {k}"
            );
        }
    }
}
