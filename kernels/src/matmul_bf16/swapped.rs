//! The bf16 ladders' rung for A of up to 16 rows on Hopper's `wgmma`, the operands' roles swapped:
//! Cᵀ = Bᵀ·Aᵀ, so that B's columns are the instruction's 64-row side and A's few rows its narrow
//! N of 16 (`wgmma.m64n16k16`, A transposed). A 128-row tile would spend seven eighths of its
//! copies and products on rows A does not have; here every byte TMA brings in is used, and B
//! streams through once.
//!
//! * A block takes a strip of [`COLUMNS`] columns of C (two 64-column atoms of B) and a run of k
//!   ([`crate::matmul::k_runs`], grid z); runs of k are cut so that the waves of resident blocks
//!   (two per SM) finish soonest.
//! * One producer warp fills a ring of [`STAGES`] slots by TMA: per step of 64 k, A's 16 rows (a
//!   K-major box, rows past m zero-filled) and B's two 64×64 atoms (MN-major, as the persistent
//!   rung loads them), announced on the slot's *full* barrier by their bytes.
//! * One consumer warpgroup multiplies each slot (eight `wgmma`s, one group always in flight) and
//!   hands it back on its *empty* barrier.
//! * Each consumer warp's runs meet on a counter of their own ([`counters`]): in C itself where C
//!   is f32, in f32 partial sums where it is bf16, [`PARTIALS_PER_COUNTER`] a warp, kept in the
//!   layout the lanes hold their sums in, rounded into C by the last to arrive.
//!
//! Rows of A past 16 go to further blocks beside the same strip (grid x, the row group fastest),
//! each reading B again. GPU-only (sm_90a); the host gives tensor maps of A and B in the boxes
//! [`A_BOX`] and [`B_BOX`].
//!
//! The body serves FP8 too ([`crate::matmul_fp8::swapped`]): a step is then 128 of k in the same
//! bytes, Bᵀ's rows lie K-major in the atoms as A's do, and the sums are multiplied by the
//! scales' factors on their way out (or, for factors per block of k, each step's sums on their
//! own into f32 totals).

use super::MatmulBf16;
use super::swizzled::ROW_BYTES;
use crate::matmul::k_runs::splits_to_fill;
use ptxkit::device::{MatrixLayout, SharedMatrix, SharedSlice, WARP_SIZE};
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory, kernel_sm90a, shared_memory};

/// Rows of A per block: the `wgmma`'s N.
pub const ROWS: u32 = 16;
/// B's 64-column atoms per block.
pub const ATOMS: u32 = 2;
/// Columns of C per block.
pub const COLUMNS: u32 = 64 * ATOMS;
/// The k of one step: one 128-byte swizzled row of bf16.
pub const BK: u32 = 64;
/// Slots of the ring: two blocks' rings fill an SM's shared memory.
pub const STAGES: u32 = 6;
/// Threads of the consumer warpgroup, then the producer warp.
const WARPGROUP: u32 = 4 * WARP_SIZE;
pub const THREADS: u32 = WARPGROUP + WARP_SIZE;
/// Consumer warps, each with its own counter.
pub const WARPS: u32 = WARPGROUP / WARP_SIZE;
/// Rows (of 128 bytes) of one slot: A's 16, then B's atoms of 64 k-rows.
const SLOT_ROWS: u32 = ROWS + ATOMS * BK;
/// Rows kept free to align the ring to 1024 bytes wherever the carve lands.
const SLACK_ROWS: u32 = 1024 / ROW_BYTES;
/// The TMA boxes (columns, rows): A's slice of a step, and one 64-column atom of B's.
pub const A_BOX: (u32, u32) = (BK, ROWS);
pub const B_BOX: (u32, u32) = (64, BK);
/// The shortest run of k: two steps a slot of the ring.
pub const MIN_RUN: u32 = 2 * STAGES * BK;
/// A block's fixed cost (its start, the ring's first fill, its meeting) in rows of k, for
/// [`splits_to_fill`].
pub const FIXED_ROWS: u32 = 256;
/// The f32 sums of one consumer warp: 16 a lane.
const LANE_SUMS: u32 = 8 * ATOMS;
/// f32 partial sums per counter where C is bf16 and k is cut into runs: a warp's sums.
pub const PARTIALS_PER_COUNTER: u32 = WARP_SIZE * LANE_SUMS;

// Each slot's atoms start 1024 bytes apart from the ring's start.
const _: () = assert!((ROWS * ROW_BYTES).is_multiple_of(1024) && (SLOT_ROWS * ROW_BYTES).is_multiple_of(1024));

shared_memory! {
    /// The ring, in 128-byte rows of 32 words, and each slot's *full* and *empty* barriers.
    pub struct Ring {
        pub rows: SharedMatrix<u32> = MatrixLayout::dense(STAGES * SLOT_ROWS + SLACK_ROWS, ROW_BYTES / 4),
        pub barriers: SharedSlice<u64> = 2 * STAGES,
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
pub(crate) mod body {
    use super::*;
    use crate::matmul::k_runs::{meet_in_c_warp, meet_in_partials_warp, run_of_k};
    use crate::matmul::output::Out;
    use crate::matmul::scale::{Scale, per_block};
    use crate::matmul_bf16::TensorMaps;
    use crate::matmul_bf16::specialized::{Bf16Tiles, TileFormat};
    use ptxkit::device::wgmma::{
        Descriptor, fence_proxy_async, shared_address, wgmma_commit, wgmma_fence, wgmma_m64n16k16_bf16_transposed_a,
        wgmma_m64n16k32_e4m3, wgmma_wait,
    };
    use ptxkit::device::{
        block_idx, fma, grid_dim, lane_id, load4_l2, shfl_idx, sync_threads, thread_idx, trap, unrolled,
    };
    use ptxkit::device::{mbarrier, tma};

    /// A format's product of one 32-byte column of k of a slot: `sums += ` one atom's 64 columns
    /// of C (the atom's rows from shared address `atom`) times A's 16 rows (from `a_rows`), chunk
    /// `kk` of the step's four.
    pub trait Multiply: TileFormat {
        fn multiply(sums: &mut [f32; 8], atom: u32, a_rows: u32, kk: u32);
    }

    impl Multiply for Bf16Tiles {
        #[inline(always)]
        fn multiply(sums: &mut [f32; 8], atom: u32, a_rows: u32, kk: u32) {
            // A's 16 rows, K-major (the instruction's B): the k16 slice `kk` is 32 bytes along
            // each swizzled row.
            let rows_of_a = Descriptor::swizzle_128(a_rows + 32 * kk, 16, 1024);
            // The atom's 16 rows of k, MN-major (the instruction's A, transposed).
            let strip_of_b = Descriptor::swizzle_128(atom + 16 * kk * ROW_BYTES, BK * ROW_BYTES, 1024);
            wgmma_m64n16k16_bf16_transposed_a(sums, strip_of_b, rows_of_a);
        }
    }

    impl Multiply for crate::matmul_fp8::E4m3Tiles {
        #[inline(always)]
        fn multiply(sums: &mut [f32; 8], atom: u32, a_rows: u32, kk: u32) {
            // Both K-major: 32 of k are 32 bytes along each swizzled row of either.
            let rows_of_a = Descriptor::swizzle_128(a_rows + 32 * kk, 16, 1024);
            let rows_of_bt = Descriptor::swizzle_128(atom + 32 * kk, 16, 1024);
            wgmma_m64n16k32_e4m3(sums, rows_of_bt, rows_of_a);
        }
    }

    /// The lane's sums: per atom, the `wgmma`'s eight (register `4·j + r` at column
    /// `16·warp + lane / 4 + 8·(r / 2)` of the atom, row `8·j + 2·(lane % 4) + r % 2` of A's
    /// group).
    type Sums = [[f32; 8]; ATOMS as usize];

    /// The kernel's body (see the module) on `F`'s operands; C holds f32, or bf16 ([`Out`]),
    /// whose runs of k meet in `partials`; each sum times `scale`'s factor for its place.
    ///
    /// # Safety
    /// The kernel's contract: A, B (for FP8 Bᵀ), C hold m·k, k·n, m·n elements; `maps` describes
    /// A and B in [`A_BOX`] and [`B_BOX`] (the 128-byte swizzle; for FP8 its boxes of the same
    /// bytes); where the grid is more than one deep, `arrivals` holds [`counters`] zeroed counters
    /// and, for a bf16 C, `partials` [`PARTIALS_PER_COUNTER`] f32 per counter; the block and grid
    /// are [`KERNEL`]'s for the bf16 product of the same steps.
    #[inline(always)]
    pub unsafe fn run<F: Multiply, O: Out>(
        c: *mut O,
        (m, n, k): (u32, u32, u32),
        maps: *const TensorMaps,
        (arrivals, partials): (*mut u32, *mut f32),
        scale: impl Scale,
    ) {
        if maps.is_null() {
            trap();
        }
        // Runs and steps counted on the bf16 product of the same bytes (an FP8 step is 128 of k
        // in a bf16 step's 128 bytes), as the host's grid and counters are.
        let (begin, end, runs) = run_of_k::<BK>(k.div_ceil(F::STEP_K / BK));
        if begin == end {
            // Past k: not one of the runs (the whole block leaves).
            return;
        }
        let Ring { rows: ring, barriers } = Ring::carve();
        let tid = thread_idx().x;
        let groups = m.div_ceil(ROWS);
        let (row0, col0) = ((block_idx().x % groups) * ROWS, (block_idx().x / groups) * COLUMNS);
        let base = shared_address(ring.element_ptr(0, 0));
        let skew = (1024 - base % 1024) % 1024 / ROW_BYTES;
        let slot_address = |slot: u32| base + (skew + slot * SLOT_ROWS) * ROW_BYTES;
        let full = |slot: u32| barriers.element_ptr(slot);
        let empty = |slot: u32| barriers.element_ptr(STAGES + slot);
        if tid == 0 {
            for slot in 0..STAGES {
                // SAFETY: the barriers' words, used by no one before the barrier below.
                unsafe {
                    // One arrival per fill (its bytes complete the phase)...
                    mbarrier::init(full(slot), 1);
                    // ...and every consumer thread once per use.
                    mbarrier::init(empty(slot), WARPGROUP);
                }
            }
        }
        sync_threads();
        let (first_step, steps) = (begin / BK, end.div_ceil(BK));
        // Fill f goes to slot f % STAGES, in that slot's phase f / STAGES.
        let slot_of = |fill: u32| (fill % STAGES, (fill / STAGES) & 1);
        // Read from lane 0, so that the compiler sees each warp's role as uniform.
        let warp = shfl_idx(tid / WARP_SIZE, 0);
        if warp == WARPS {
            if tid == WARPGROUP {
                let (a_map, b_map) = (maps.cast::<u8>(), maps.cast::<u8>().wrapping_add(128));
                for step in first_step..steps {
                    let (slot, phase) = slot_of(step - first_step);
                    // SAFETY (barriers): initialised above; (copies) the maps describe A and B,
                    // the boxes land inside the slot, 1024-byte aligned.
                    unsafe {
                        mbarrier::wait(empty(slot), phase ^ 1);
                        mbarrier::arrive_expect_tx(full(slot), SLOT_ROWS * ROW_BYTES);
                        let first = slot_address(slot);
                        let k0 = step * F::STEP_K;
                        tma::load_2d(first, a_map, (k0, row0), full(slot));
                        for atom in 0..ATOMS {
                            let dst = first + (ROWS + BK * atom) * ROW_BYTES;
                            // 64 k-rows of 64 columns, or (Bᵀ) 64 columns' rows of k.
                            let at = match F::B_TRANSPOSED {
                                true => (k0, col0 + 64 * atom),
                                false => (col0 + 64 * atom, k0),
                            };
                            tma::load_2d(dst, b_map, at, full(slot));
                        }
                    }
                }
            }
            return;
        }
        let (lane, group, member) = (lane_id(), lane_id() / 4, lane_id() % 4);
        let mut sums: Sums = [[0.0; 8]; ATOMS as usize];
        // Per-block factors: each step's sums land in `sums` and go, times their factors, into
        // the totals.
        let mut totals: Sums = [[0.0; 8]; ATOMS as usize];
        for step in first_step..steps {
            let fill = step - first_step;
            let (slot, phase) = slot_of(fill);
            // The step's factors for the lane's four rows of A (`8·j + 2·member + h`; the strip's
            // columns lie in one block of B's: strips are 128 columns, at multiples of 128),
            // their loads in flight while the step's wgmmas run.
            let factors: [[f32; 2]; 2] = core::array::from_fn(|j| {
                core::array::from_fn(|h| match per_block(&scale) {
                    true => scale.at_block(step, row0 + 8 * j as u32 + 2 * member + h as u32, col0),
                    false => 1.0,
                })
            });
            // SAFETY: initialised above.
            unsafe { mbarrier::wait(full(slot), phase) };
            fence_proxy_async();
            let first = slot_address(slot);
            if per_block(&scale) {
                sums = [[0.0; 8]; ATOMS as usize];
            }
            wgmma_fence();
            unrolled::<4>(
                #[inline(always)]
                |kk| {
                    unrolled::<ATOMS>(
                        #[inline(always)]
                        |atom| {
                            let atom_rows = first + (ROWS + BK * atom) * ROW_BYTES;
                            F::multiply(&mut sums[atom as usize], atom_rows, first, kk);
                        },
                    );
                },
            );
            wgmma_commit();
            if per_block(&scale) {
                // The step's sums into the totals, and its slot back to the producer.
                wgmma_wait::<0>();
                // SAFETY: initialised above.
                unsafe { mbarrier::arrive(empty(slot)) };
                unrolled::<ATOMS>(|atom| {
                    unrolled::<8>(|i| {
                        let (a, i) = (atom as usize, i as usize);
                        let factor = factors[i / 4][i % 2];
                        totals[a][i] = fma(sums[a][i], factor, totals[a][i]);
                    })
                });
            } else {
                // The previous step's group is done: its slot goes back to the producer.
                wgmma_wait::<1>();
                if fill > 0 {
                    // SAFETY: initialised above.
                    unsafe { mbarrier::arrive(empty(slot_of(fill - 1).0)) };
                }
            }
        }
        if per_block(&scale) {
            sums = totals;
        } else {
            wgmma_wait::<0>();
        }

        // The lane's sums into C (stored, or added where `adding`).
        let write_c = #[inline(always)]
        |sums: &Sums, adding: bool| {
            unrolled::<ATOMS>(
                #[inline(always)]
                |atom| {
                    unrolled::<8>(
                        #[inline(always)]
                        |i| {
                            let (j, r) = (i / 4, i % 4);
                            let col = col0 + 64 * atom + 16 * warp + group + 8 * (r / 2);
                            let row = row0 + 8 * j + 2 * member + r % 2;
                            if row < m && col < n {
                                let at = c.wrapping_add(row as usize * n as usize + col as usize);
                                let value = sums[atom as usize][i as usize] * scale.at(row, col);
                                // SAFETY: inside C (row < m, col < n).
                                unsafe { O::put(at, value, adding) };
                            }
                        },
                    );
                },
            );
        };
        let place = ((block_idx().y * grid_dim().x + block_idx().x) * WARPS + warp) as usize;
        let arrived = arrivals.wrapping_add(place);
        let run = (block_idx().z, runs);
        if O::ADDS {
            // SAFETY: the warp's counter (the caller's promise); run 0's block starts before any
            // other run's (blocks start in order, run 0 the grid's first layer).
            unsafe { meet_in_c_warp(arrived, run, |adding| write_c(&sums, adding)) };
            return;
        }
        if runs == 1 {
            write_c(&sums, false);
            return;
        }
        // The warp's partials, each lane's sums side by side as it holds them.
        let mine = partials.wrapping_add(place * PARTIALS_PER_COUNTER as usize + (lane * LANE_SUMS) as usize);
        let write_partials = |adding: bool| {
            unrolled::<{ LANE_SUMS / 4 }>(
                #[inline(always)]
                |q| {
                    let sums = &sums[(q / 2) as usize];
                    let four = core::array::from_fn(|e| sums[(4 * (q % 2)) as usize + e]);
                    // SAFETY: inside the warp's partials, 16-byte aligned (the host's blocks are).
                    unsafe { f32::put4(mine.wrapping_add(4 * q as usize), four, adding) };
                },
            );
        };
        let round = || {
            let mut whole: Sums = [[0.0; 8]; ATOMS as usize];
            unrolled::<{ LANE_SUMS / 4 }>(
                #[inline(always)]
                |q| {
                    // SAFETY: as above; every run's additions reached the L2 (the meeting
                    // acquires them), which this load reads past the L1.
                    let four = unsafe { load4_l2(mine.wrapping_add(4 * q as usize)) }.0;
                    for e in 0..4 {
                        whole[(q / 2) as usize][(4 * (q % 2)) as usize + e] = four[e];
                    }
                },
            );
            write_c(&whole, false);
        };
        // SAFETY: as for `meet_in_c_warp` above; the partials the caller's.
        unsafe { meet_in_partials_warp(arrived, run, write_partials, round) }
    }
}

kernel_sm90a! {
    #[launch_bounds(Dim3::x(THREADS), 2)]
    /// `C = A·B` for m ≤ 16 (more rows in more blocks) as Cᵀ = Bᵀ·Aᵀ on `wgmma.m64n16k16`: bf16
    /// operands copied by TMA, f32 sums and C.
    pub unsafe fn matmul_bf16_swapped(a: *const ptxkit::device::mma::Bf16, b: *const ptxkit::device::mma::Bf16, c: *mut f32, m: u32, n: u32, k: u32, maps: *const super::TensorMaps, arrivals: *mut u32) {
        // The operands are read through the maps.
        let _ = (a, b);
        // SAFETY: the kernel's contract; an f32 C's runs meet in C itself.
        unsafe { body::run::<super::specialized::Bf16Tiles, f32>(c, (m, n, k), maps, (arrivals, core::ptr::null_mut()), 1.0) }
    }
}

/// [`THREADS`] threads per block, a strip of [`COLUMNS`] and a run of k each ([`grid`]), a ring of
/// 109 KiB: two blocks per SM.
pub const KERNEL: Kernel<MatmulBf16> = Kernel {
    code: matmul_bf16_swapped,
    block: Dim3::x(THREADS),
    shared: SharedMemory::opt_in(Ring::BYTES),
    grid: |p, device| grid((p.m, p.n, p.k), device),
};

/// The launch grid: a block per row group of 16 and strip of [`COLUMNS`] (x, the row group
/// fastest), k cut into the runs whose waves finish soonest ([`splits_to_fill`], z), and not cut
/// where the strips alone fill [`UNCUT_WAVES`] waves (the runs' counters stay within what the
/// host keeps: a few per resident block).
pub const fn grid((m, n, k): (u32, u32, u32), device: Occupancy) -> Dim3 {
    let tiles = m.div_ceil(ROWS) * n.div_ceil(COLUMNS);
    let runs = if tiles as u64 > UNCUT_WAVES as u64 * device.resident_blocks as u64 {
        1
    } else {
        splits_to_fill(tiles, device.resident_blocks, k, (MIN_RUN, FIXED_ROWS))
    };
    Dim3::new(tiles, 1, runs)
}

/// Waves of strips past which k is not cut: the last wave's share of the time is small there.
pub const UNCUT_WAVES: u32 = 4;

#[cfg(test)]
mod tests {
    use super::*;

    /// Decoding's shapes on 132 SMs of two blocks each: k cut into runs of whole steps, at least
    /// [`MIN_RUN`], so that the blocks fill the waves; one run where k is short.
    #[test]
    fn runs_of_k_fill_the_waves_of_two_blocks_per_sm() {
        let device = Occupancy { resident_blocks: 264 };
        for (m, n, k) in [
            (16, 4096, 4096),
            (16, 12288, 4096),
            (1, 28672, 4096),
            (16, 4096, 14336),
            (7, 300, 500),
        ] {
            let g = grid((m, n, k), device);
            let strips = m.div_ceil(ROWS) * n.div_ceil(COLUMNS);
            assert_eq!((g.x, g.y), (strips, 1), "{m}×{n}×{k}");
            let run = k.div_ceil(g.z).next_multiple_of(BK);
            assert!(g.z == 1 || run >= MIN_RUN, "{m}×{n}×{k}: runs of {run}");
            assert!(
                g.z == 1 || g.x * g.z > device.resident_blocks / 2,
                "{m}×{n}×{k}: {} blocks",
                g.x * g.z
            );
            assert_eq!(
                crate::matmul::k_runs::warp_counters(g, WARPS),
                if g.z > 1 { (strips * WARPS) as usize } else { 0 }
            );
        }
        assert_eq!(grid((7, 300, 500), device).z, 1);
        // Strips just past a whole number of waves would be cut in two, but not past four waves:
        // at most four counters per resident block.
        assert!(grid((16, 265 * COLUMNS, 8192), device).z > 1);
        for strips in [4 * 264 + 1, 8 * 264 + 1, 20 * 264 + 1] {
            let g = grid((16, strips * COLUMNS, 8192), device);
            assert_eq!(g.z, 1, "{strips} strips");
        }
        // Any device's count of places, the emulator's too.
        for places in [1, 264, u32::MAX / 2, u32::MAX] {
            let g = grid(
                (16, 4096, 4096),
                Occupancy {
                    resident_blocks: places,
                },
            );
            assert!(g.z >= 1, "{places} places: {g:?}");
        }
        for strips in 1..=4 * 264 {
            let g = grid((16, strips * COLUMNS, 65536), device);
            assert!(
                crate::matmul::k_runs::warp_counters(g, WARPS) <= (4 * WARPS * 264) as usize,
                "{strips} strips: {g:?}"
            );
        }
    }
}
