//! Rung 2: TF32 on Hopper's warpgroup multiply, warp-specialised as the bf16 ladder's rung 3
//! ([`crate::matmul_bf16::specialized`]): a producer warpgroup copies (`cp.async`), two consumer
//! warpgroups multiply, handing the four slots of a ring over by `mbarrier`s, one group of
//! `wgmma`s always in flight.
//!
//! What TF32 changes is the layout. `wgmma` reads a TF32 operand from shared memory K-major only:
//! rows of k, as row-major A is and row-major B is not. Its A operand may instead come from
//! registers, in any layout the lanes load. So the roles are swapped: each consumer computes a
//! 64×256 block of Cᵀ = Bᵀ·Aᵀ, Bᵀ's fragments loaded by its lanes from B's tile as copied (rows
//! of k), Aᵀ read by descriptor from A's rows, which are K-major as they stand. A block covers
//! 256 rows × 128 columns of C, stored transposed back out of the accumulators.
//!
//! Where C has at most 128 rows, [`KERNEL_128X128`] takes 128-row tiles instead (the `wgmma`'s N of
//! 128): a 256-row tile would leave half of every `wgmma` multiplying the zeros past C's last row.
//! Its slots are smaller, so the same shared memory holds six of them instead of four.
//!
//! A slot is 384 rows of 128 bytes (256 for 128-row tiles): A's 256 rows of 32 f32 of k in the
//! 128-byte swizzle, then B's 32 k-rows of 128 columns, 512 bytes each, 16-byte chunk c of k-row r
//! at chunk `c ^ 2·(r % 4)` so that a fragment load (8 columns × 4 k per warp) and a copy (a k-row
//! per warp) both hit 32 banks. The slots are filled by TMA from the host's tensor maps; without
//! maps, the 256-row kernel's producer warpgroup copies by `cp.async` (16-byte copies where k and
//! n are multiples of 4 and A and B 16-byte aligned, else 4-byte ones), and the 128-row kernel,
//! whose producer keeps too few registers for that, traps. Zeros land past the matrices' edges,
//! so edge tiles need no other case.
//! GPU-only (sm_90a).

use super::MatmulTc;
use crate::matmul::k_runs::splits;
use crate::matmul::tile_order::Work;
use ptxkit::device::{MatrixLayout, SharedMatrix, SharedSlice, WARP_SIZE};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel_sm90a, shared_memory};

/// Rows of C per block of [`KERNEL`]: the `wgmma`'s N...
pub const BM: u32 = 256;
/// ...and of [`KERNEL_128X128`].
pub const BM_NARROW: u32 = 128;
/// Columns of C per block: 64 (the `wgmma`'s M) per consumer.
pub const BN: u32 = 128;
/// The k of one step: one 128-byte swizzled row of f32.
pub const BK: u32 = 32;
/// Threads of a warpgroup.
const WARPGROUP: u32 = 4 * WARP_SIZE;
/// One producer warpgroup, two consumers.
pub const THREADS: u32 = 3 * WARPGROUP;
/// Bytes of one ring row.
const ROW_BYTES: u32 = 128;
/// Columns of B per box: one 128-byte swizzled row of f32.
const B_BOX_COLUMNS: u32 = ROW_BYTES / 4;
/// Rows of one slot of a tile of `rows` rows: A's, then B's BN / 32 boxes of BK k-rows.
const fn slot_rows(rows: u32) -> u32 {
    rows + BK * (BN / B_BOX_COLUMNS)
}
/// Rows of the ring: four slots of the 256-row tile.
const RING_ROWS: u32 = 4 * slot_rows(BM);
/// Slots of the ring for tiles of `rows` rows: four of 256 rows, six of 128.
pub const fn stages(rows: u32) -> u32 {
    RING_ROWS / slot_rows(rows)
}
/// The most slots any tile's ring has, each with two barriers.
const MAX_STAGES: u32 = stages(BM_NARROW);
/// Rows kept free to align the ring to 1024 bytes wherever the carve lands.
const SLACK_ROWS: u32 = 1024 / ROW_BYTES;

shared_memory! {
    /// The ring, in 128-byte rows of 32 words, and each slot's *full* and *empty* barriers.
    pub struct Ring {
        pub rows: SharedMatrix<u32> = MatrixLayout::dense(RING_ROWS + SLACK_ROWS, ROW_BYTES / 4),
        pub barriers: SharedSlice<u64> = 2 * MAX_STAGES,
    }
}

/// The TMA boxes (columns, rows): A's slice of a step for a tile of `rows` rows, and one
/// 32-column box of B's.
pub const fn a_box(rows: u32) -> (u32, u32) {
    (BK, rows)
}
pub const B_BOX: (u32, u32) = (B_BOX_COLUMNS, BK);

/// Where element (k-row `r`, column `nn`) of B's tile lies: ring row and word from the slot's B
/// part (see the module).
#[cfg_attr(not(all(target_arch = "nvptx64", target_feature = "sm_90a")), allow(dead_code))]
#[inline(always)]
const fn b_place(r: u32, nn: u32) -> (u32, u32) {
    let (column, chunk) = (nn % B_BOX_COLUMNS, nn / B_BOX_COLUMNS);
    (BK * chunk + r, 4 * ((column / 4) ^ (r % 8)) + column % 4)
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
mod body {
    use super::*;
    use crate::matmul::k_runs::meet_in_c_warp;
    use crate::matmul::tile_order::{Item, Walk};
    use ptxkit::device::mma::tf32_a_position;
    use ptxkit::device::wgmma::{
        Descriptor, fence_proxy_async, registers_claim, registers_release, shared_address, wgmma_commit, wgmma_fence,
        wgmma_m64n128k8_tf32_registers, wgmma_m64n256k8_tf32_registers, wgmma_wait, wgmma_wait_reading,
    };
    use ptxkit::device::{
        block_idx, grid_dim, lane_id, mbarrier, opaque, shfl_idx, sync_threads, thread_idx, tma, trap, unrolled,
        unrolled_to,
    };

    /// Registers per thread of the producer warpgroup, which only computes addresses (its
    /// `cp.async` path spilled 4 bytes at 64 once the copies took `.shared` addresses: docs/perf-log.md,
    /// change 79; at 72 once it walked items of work, change 113)...
    const PRODUCER_REGISTERS: u32 = 88;
    /// ...and of each consumer: 128 accumulators and two groups' fragments (the block's 168 per
    /// thread at launch, redistributed; with 168, ptxas serialises the `wgmma`s, its note C7512).
    /// The three warpgroups' together at most the launch's 3 × 168.
    const CONSUMER_REGISTERS: u32 = 208;
    /// The 128-row rung's, whose producer is the TMA thread alone: the bf16 TMA rungs' split.
    const TMA_PRODUCER_REGISTERS: u32 = 56;
    const TMA_CONSUMER_REGISTERS: u32 = 224;

    /// `body(i)` for i in 0..n: unrolled for the 16-byte copies; a plain loop for the 4-byte ones,
    /// whose unrolled addresses would not fit in the producer's registers.
    #[inline(always)]
    fn each<const VECTORS: bool>(n: u32, mut body: impl FnMut(u32)) {
        if VECTORS {
            unrolled_to(n, body);
        } else {
            for i in 0..opaque(n) {
                body(i);
            }
        }
    }
    use crate::matmul_bf16::store::write_warpgroup_transposed;
    use crate::matmul_tc::TensorMaps;

    /// Starts copying the four f32 of `matrix` at `offset` into ring words `(row, word..word + 4)`,
    /// the first `valid` of them, zeros after: one 16-byte copy with `VECTORS`, else four 4-byte
    /// ones.
    ///
    /// # Safety
    /// The first `valid` (≤ 4) elements from `offset` lie inside the matrix; with `VECTORS`,
    /// `matrix + offset` is 16-byte aligned; the words inside the ring.
    #[inline(always)]
    unsafe fn copy_chunk<const VECTORS: bool>(
        ring: &SharedMatrix<u32>,
        (row, word): (u32, u32),
        matrix: *const f32,
        offset: u32,
        valid: u32,
    ) {
        if VECTORS {
            // SAFETY (both): the caller's promise; with nothing valid, the matrix's start, read
            // for no bytes.
            let src = if valid > 0 {
                unsafe { matrix.add(offset as usize) }
            } else {
                matrix
            };
            unsafe { ring.copy4_async_zero_fill_unchecked(row, word, src.cast(), valid) };
        } else {
            unrolled::<4>(|w| {
                let inside = w < valid;
                // SAFETY: as above.
                let src = if inside {
                    unsafe { matrix.add((offset + w) as usize) }
                } else {
                    matrix
                };
                unsafe { ring.copy1_async_zero_fill_unchecked(row, word + w, src.cast(), inside) };
            });
        }
    }

    /// Starts the copies of k-step `step` into the slot whose first row is `first`: producer
    /// thread `tid`'s share of A's ROWS × BK and of B's BK × BN, for the tile at `(row0, col0)`.
    ///
    /// # Safety
    /// A and B hold m·k and k·n f32; `VECTORS` only where k and n are multiples of 4 and A and B
    /// 16-byte aligned; the slot within the ring; `tid < WARPGROUP`.
    #[inline(always)]
    unsafe fn stage<const ROWS: u32, const VECTORS: bool>(
        ring: &SharedMatrix<u32>,
        (a, b): (*const f32, *const f32),
        (m, n, k): (u32, u32, u32),
        (row0, col0): (u32, u32),
        (tid, step, first): (u32, u32, u32),
    ) {
        let k0 = step * BK;
        let part = |left: u32| if left < 4 { left } else { 4 };
        // A: a warp copies four rows of 8 chunks; pass i moves down 16 rows, which keeps each
        // thread's chunk c at the same swizzled place (c ^ (r % 8)).
        let (r0, c) = (tid / (BK / 4), tid % (BK / 4));
        let (at, word) = (k0 + 4 * c, 4 * (c ^ (r0 % 8)));
        each::<VECTORS>(ROWS * BK / 4 / WARPGROUP, |i| {
            let r = r0 + i * (WARPGROUP / (BK / 4));
            let row = row0 + r;
            let valid = if row < m { part(k.saturating_sub(at)) } else { 0 };
            // SAFETY: `valid` counts only elements inside A; the destination inside the slot.
            unsafe { copy_chunk::<VECTORS>(ring, (first + r, word), a, row.wrapping_mul(k).wrapping_add(at), valid) };
        });
        // B: a warp copies one k-row of 32 chunks, 8 in each box; pass i moves down 4 k-rows.
        let (r0, c) = (tid / (BN / 4), tid % (BN / 4));
        let column = col0 + 4 * c;
        each::<VECTORS>(BK * BN / 4 / WARPGROUP, |i| {
            let r = r0 + i * (WARPGROUP / (BN / 4));
            let at = k0 + r;
            let valid = if at < k { part(n.saturating_sub(column)) } else { 0 };
            let (b_row, word) = b_place(r, 4 * c);
            let row = first + ROWS + b_row;
            // SAFETY: as for A.
            unsafe { copy_chunk::<VECTORS>(ring, (row, word), b, at.wrapping_mul(n).wrapping_add(column), valid) };
        });
    }

    /// The kernel's body (see the module) for tiles of `ROWS` (256 or 128) rows, each block
    /// taking the tiles of C from its own index in steps of the grid's size.
    ///
    /// # Safety
    /// The kernel's contract.
    #[inline(always)]
    pub unsafe fn run<const ROWS: u32>(
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        (m, n, k): (u32, u32, u32),
        maps: *const TensorMaps,
        arrivals: *mut u32,
    ) {
        const { assert!(ROWS == BM || ROWS == BM_NARROW, "the wgmma's N: 256 or 128") };
        let by_tma = !maps.is_null();
        let (stages, slot_len) = (stages(ROWS), slot_rows(ROWS));
        let Ring { rows: ring, barriers } = Ring::carve();
        let tid = thread_idx().x;
        // From lane 0, so that ptxas sees one path per warp (see the bf16 rung).
        let group = shfl_idx(tid / WARPGROUP, 0);
        // Whole tiles in row order (bands measured slower here: docs/perf-log.md, change 113),
        // runs of their k where the grid has more blocks than C has tiles, or of the last two
        // waves' tiles where the last would be part-empty ([`crate::matmul::tile_order`]).
        // Worked out by each warpgroup where it starts on its items, so that none of it is held
        // across the register hand-over (where ptxas would spill it).
        let work = || Work::<ROWS, BN, false>::new((m, n), k.div_ceil(BK), grid_dim().x);
        let block = block_idx().x;
        let base = shared_address(ring.element_ptr(0, 0));
        let skew = (1024 - base % 1024) % 1024 / ROW_BYTES;
        let first_row = |index: u32| skew + index * slot_len;
        let full = |index: u32| barriers.element_ptr(index);
        let empty = |index: u32| barriers.element_ptr(MAX_STAGES + index);
        if tid == 0 {
            for slot in 0..stages {
                // SAFETY: the barriers' words, used by no one before the barrier below.
                unsafe {
                    // One arrival per fill by TMA (its bytes complete the phase), else every
                    // producer thread's once its copies have landed...
                    mbarrier::init(full(slot), if by_tma { 1 } else { WARPGROUP });
                    // ...and every consumer thread once per use.
                    mbarrier::init(empty(slot), 2 * WARPGROUP);
                }
            }
        }
        sync_threads();
        // Fill g of the ring (counted across items) goes to slot g % stages, phase g / stages.
        let slot_of = |fill: u32| (fill % stages, (fill / stages) & 1);
        if group == 0 {
            if ROWS == BM {
                registers_release::<PRODUCER_REGISTERS>();
            } else {
                registers_release::<TMA_PRODUCER_REGISTERS>();
            }
            if by_tma {
                if tid == 0 {
                    let (a_map, b_map) = (maps.cast::<u8>(), maps.cast::<u8>().wrapping_add(128));
                    let mut fill = 0;
                    let work = work();
                    let mut walk = work.walk(block);
                    while !work.done(&walk) {
                        let Item {
                            corner: (row0, col0),
                            steps,
                            ..
                        } = work.item(&walk);
                        for step in steps.0..steps.1 {
                            let (slot, phase) = slot_of(fill);
                            // SAFETY (barriers): initialised above; (copies) the maps describe A
                            // and B, the boxes land inside the slot, 1024-byte aligned.
                            unsafe {
                                mbarrier::wait(empty(slot), phase ^ 1);
                                mbarrier::arrive_expect_tx(full(slot), slot_len * ROW_BYTES);
                                let first = base + first_row(slot) * ROW_BYTES;
                                tma::load_2d(first, a_map, (step * BK, row0), full(slot));
                                for box_index in 0..BN / B_BOX_COLUMNS {
                                    let dst = first + (ROWS + BK * box_index) * ROW_BYTES;
                                    let at = (col0 + B_BOX_COLUMNS * box_index, step * BK);
                                    tma::load_2d(dst, b_map, at, full(slot));
                                }
                            }
                            fill += 1;
                        }
                        work.advance(&mut walk);
                    }
                }
                return;
            }
            if ROWS != BM {
                // The 128-row rung copies by TMA only (its producer has too few registers for
                // the copies); the host always gives it maps.
                trap();
            }
            let vectors = k.is_multiple_of(4)
                && n.is_multiple_of(4)
                && (a as usize).is_multiple_of(16)
                && (b as usize).is_multiple_of(16);
            let produce = |stage: unsafe fn(&SharedMatrix<u32>, _, _, _, _)| {
                let mut fill = 0;
                let work = work();
                let mut walk = work.walk(block);
                while !work.done(&walk) {
                    let Item { corner, steps, .. } = work.item(&walk);
                    for step in steps.0..steps.1 {
                        let (slot, phase) = slot_of(fill);
                        // SAFETY (every barrier operation): initialised above. The slot is free
                        // once the consumers are done with its last use (fresh ones pass: they
                        // start empty).
                        unsafe { mbarrier::wait(empty(slot), phase ^ 1) };
                        // SAFETY: the kernel's contract; the slot within the ring.
                        unsafe { stage(&ring, (a, b), (m, n, k), corner, (tid, step, first_row(slot))) };
                        unsafe { mbarrier::arrive_when_copies_land(full(slot)) };
                        fill += 1;
                    }
                    work.advance(&mut walk);
                }
            };
            if vectors {
                produce(stage::<ROWS, true>);
            } else {
                produce(stage::<ROWS, false>);
            }
            return;
        }
        if ROWS == BM {
            registers_claim::<CONSUMER_REGISTERS>();
        } else {
            registers_claim::<TMA_CONSUMER_REGISTERS>();
        }
        // Read again rather than kept: ptxas would spill it across the register hand-over.
        let consumer = shfl_idx(thread_idx().x / WARPGROUP, 0) - 1;
        let lane = lane_id();
        // This warp's 16 columns of C (rows of Cᵀ) within the block's tile.
        let columns = 64 * consumer + 16 * ((tid / WARP_SIZE) % 4);
        let mut fill = 0;
        let work = work();
        let mut walk = work.walk(block);
        // The fragments of the group in flight, kept alive until the wait that ends it.
        let mut in_flight = [[0u32; 4]; 2];
        while !work.done(&walk) {
            let steps = work.item(&walk).steps;
            let (mut low, mut high) = ([0.0f32; 64], [0.0f32; 64]);
            for step in steps.0..steps.1 {
                let (slot, phase) = slot_of(fill);
                unsafe { mbarrier::wait(full(slot), phase) };
                let first = first_row(slot);
                // The copies landed in the generic proxy; the wgmmas read A's rows through the
                // async one.
                fence_proxy_async();
                // Two groups per slot, of two k-steps each: the fragments of one group in flight
                // and of the next fit beside the 128 accumulators.
                unrolled::<2>(
                    #[inline(always)]
                    |half| {
                        // Bᵀ's 64×8 fragments of the group's k-steps, in mma.sync's tf32 A order.
                        let fragments: [[u32; 4]; 2] = core::array::from_fn(|kk| {
                            core::array::from_fn(|r| {
                                let (column, kr) = tf32_a_position(lane, r as u32);
                                let (row, word) = b_place(16 * half + 8 * kk as u32 + kr, columns + column);
                                // SAFETY: inside the slot's B part, which the copies have filled.
                                unsafe { ring.get_unchecked(first + ROWS + row, word) }
                            })
                        });
                        let a_rows = base + first * ROW_BYTES + 64 * half;
                        wgmma_fence();
                        unrolled::<2>(
                            #[inline(always)]
                            |kk| {
                                // 8 f32 of k are 32 bytes along A's swizzled rows.
                                let db = Descriptor::swizzle_128(a_rows + 32 * kk, 16, 1024);
                                if ROWS == BM {
                                    wgmma_m64n256k8_tf32_registers((&mut low, &mut high), fragments[kk as usize], db);
                                } else {
                                    // The 64×128 product in `low`; `high` stays unused.
                                    wgmma_m64n128k8_tf32_registers(&mut low, fragments[kk as usize], db);
                                }
                            },
                        );
                        wgmma_commit();
                        // The group before this one is done (its fragments free); where it
                        // ended the previous slot, that slot goes back to the producer.
                        let ([p0, p1], [f0, f1]) = (in_flight, fragments);
                        wgmma_wait_reading::<1>(&[p0, p1, f0, f1, f0, f1, f0, f1]);
                        in_flight = fragments;
                        if half == 0 && step > steps.0 {
                            unsafe { mbarrier::arrive(empty(slot_of(fill - 1).0)) };
                        }
                    },
                );
                fill += 1;
            }
            wgmma_wait::<0>();
            unsafe { mbarrier::arrive(empty(slot_of(fill - 1).0)) };
            let value = #[inline(always)]
            |i: u32| {
                if i < 64 {
                    low[i as usize]
                } else {
                    high[(i - 64) as usize]
                }
            };
            // Worked out again rather than kept across the loop, where ptxas would spill it.
            let this = work.item(&Walk {
                position: opaque(walk.position),
            });
            let (row0, col0) = this.corner;
            let (corner, at) = ((row0, col0 + 64 * consumer), (m, n));
            // This warp's counter within a tile's, where the runs of k meet in C.
            let warp = 4 * consumer + (opaque(thread_idx().x) / WARP_SIZE) % 4;
            // SAFETY: the kernel's contract (C holds m·n; `arrivals` the zeroed [`counters`]), every
            // lane of the warpgroup is here; no block takes a run 0 after a run that adds.
            unsafe {
                meet_in_c_warp(
                    work.counter(&this, arrivals, CONSUMER_WARPS, warp),
                    (this.run, this.runs),
                    #[inline(always)]
                    |adding| write_warpgroup_transposed::<ROWS>(c, at, corner, value, adding),
                )
            };
            work.advance(&mut walk);
        }
    }
}

kernel_sm90a! {
    #[launch_bounds(Dim3::x(THREADS), 1)]
    /// `C = A·B` by warp-specialised `wgmma` on TF32 operands (f32 sums), 256×128 per block, the
    /// operands' roles swapped (see the module).
    pub unsafe fn matmul_tc_wgmma(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, maps: *const super::TensorMaps, arrivals: *mut u32) {
        // SAFETY: the kernel's contract.
        unsafe { body::run::<BM>(a, b, c, (m, n, k), maps, arrivals) }
    }
}

kernel_sm90a! {
    #[launch_bounds(Dim3::x(THREADS), 1)]
    /// As [`matmul_tc_wgmma`], 128×128 per block: for C of at most 128 rows.
    pub unsafe fn matmul_tc_wgmma_128x128(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, maps: *const super::TensorMaps, arrivals: *mut u32) {
        // SAFETY: the kernel's contract.
        unsafe { body::run::<BM_NARROW>(a, b, c, (m, n, k), maps, arrivals) }
    }
}

/// [`THREADS`] threads per block (a producer warpgroup and two consumers), a 193 KiB ring, one
/// block per SM; a persistent grid: the device's resident blocks take the 256×128 tiles of C in
/// turn, so a block's producer fills the ring for its next tile while its consumers store the last.
/// Where C has fewer tiles than the device has places, one block per run of k of each tile, runs
/// of at least [`MIN_RUN`]; where the last wave of tiles would be part-empty, the last two waves'
/// tiles cut into runs too ([`crate::matmul::tile_order::Work`]).
pub const KERNEL: Kernel<MatmulTc> = Kernel {
    code: matmul_tc_wgmma,
    block: Dim3::x(THREADS),
    shared: SharedMemory::opt_in(Ring::BYTES),
    grid: |p, device| grid::<BM>(p, device),
};

/// As [`KERNEL`] on tiles of 128×128, six slots in its ring.
pub const KERNEL_128X128: Kernel<MatmulTc> = Kernel {
    code: matmul_tc_wgmma_128x128,
    grid: |p, device| grid::<BM_NARROW>(p, device),
    ..KERNEL
};

/// The persistent grid for tiles of `ROWS` rows: a block per run of k of each tile where the
/// tiles are few, at most the device's resident blocks.
const fn grid<const ROWS: u32>(p: &MatmulTc, device: ptxkit::Occupancy) -> Dim3 {
    let tiles = tiles::<ROWS>(p);
    let runs = splits(tiles, device.resident_blocks, p.k, MIN_RUN);
    Dim3::x(device.at_most_resident(tiles * runs))
}

/// The rows of C each block of `kernel` covers, where it is one of this file's kernels.
#[cfg(not(target_arch = "nvptx64"))]
pub fn tile_rows(kernel: &Kernel<MatmulTc>) -> Option<u32> {
    if kernel.entry() == KERNEL.entry() {
        Some(BM)
    } else if kernel.entry() == KERNEL_128X128.entry() {
        Some(BM_NARROW)
    } else {
        None
    }
}

/// The shortest run of k a tile is cut into: eight steps, twice the 256-row tile's ring.
pub const MIN_RUN: u32 = 8 * BK;

/// Consumer warps per block: each holds its own columns of the tile, and meets the other runs' in
/// C on its own counter.
const CONSUMER_WARPS: u32 = 2 * WARPGROUP / WARP_SIZE;

/// Tiles of C (`ROWS`×128 each).
const fn tiles<const ROWS: u32>(p: &MatmulTc) -> u32 {
    p.m.div_ceil(ROWS) * p.n.div_ceil(BN)
}

/// The zeroed counters a launch of `kernel` (one of this file's) on `grid` needs: one per
/// consumer warp and tile where the grid cuts tiles' k into runs, none otherwise.
#[cfg(not(target_arch = "nvptx64"))]
pub fn counters(kernel: &Kernel<MatmulTc>, p: &MatmulTc, grid: Dim3) -> usize {
    let steps = p.k.div_ceil(BK);
    match tile_rows(kernel) {
        Some(BM) => Work::<BM, BN, false>::new((p.m, p.n), steps, grid.x).counters(CONSUMER_WARPS),
        Some(BM_NARROW) => Work::<BM_NARROW, BN, false>::new((p.m, p.n), steps, grid.x).counters(CONSUMER_WARPS),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ptxkit::Occupancy;

    /// As the bf16 rung's test: runs of k where C has few tiles, counters for their warps.
    #[test]
    fn runs_of_k_where_tiles_are_few() {
        let h200 = Occupancy { resident_blocks: 132 };
        let problem = |m, n, k| MatmulTc { m, n, k };
        // 32 tiles of 256×128, k of 11008: 4 runs.
        assert_eq!(KERNEL.launch_shape(&problem(16, 4096, 11008), h200).grid, Dim3::x(128));
        assert_eq!(counters(&KERNEL, &problem(16, 4096, 11008), Dim3::x(128)), 32 * 8);
        assert_eq!(KERNEL.launch_shape(&problem(8192, 8192, 8192), h200).grid, Dim3::x(132));
        // 8 × 132 tiles: whole waves, nothing cut.
        assert_eq!(counters(&KERNEL, &problem(2048, 16896, 4096), Dim3::x(132)), 0);
        // 40 × 8 tiles on 132 blocks: the last wave 56/132 full, so its 56 tiles are cut into
        // runs, with counters.
        assert_eq!(counters(&KERNEL, &problem(10240, 1024, 4096), Dim3::x(132)), 56 * 8);
    }

    /// The 128-row tiles: twice as many rows of tiles as the 256-row kernel's, six slots in the
    /// same ring, and A's box as tall as the tile.
    #[test]
    fn the_narrow_tiles_count_their_own_rows() {
        let h200 = Occupancy { resident_blocks: 132 };
        let problem = |m, n, k| MatmulTc { m, n, k };
        assert_eq!((stages(BM), stages(BM_NARROW)), (4, 6));
        assert_eq!((tile_rows(&KERNEL), tile_rows(&KERNEL_128X128)), (Some(256), Some(128)));
        assert_eq!(a_box(BM_NARROW), (BK, 128));
        // 2 × 32 tiles of 128×128 at k = 11008: two runs each.
        let p = problem(129, 4096, 11008);
        assert_eq!(KERNEL_128X128.launch_shape(&p, h200).grid, Dim3::x(128));
        assert_eq!(counters(&KERNEL_128X128, &p, Dim3::x(128)), 64 * 8);
        assert_eq!(counters(&KERNEL, &p, Dim3::x(128)), 32 * 8);
        // 134 tiles of 128 rows on 132 blocks: the second wave nearly empty, its two tiles cut...
        assert_eq!(
            counters(&KERNEL_128X128, &problem(128, 17152, 8192), Dim3::x(132)),
            2 * 8
        );
        // ...224: 1.7 waves, where no cut saves an eighth ([`Work`]'s cost model).
        assert_eq!(counters(&KERNEL_128X128, &problem(128, 28672, 8192), Dim3::x(132)), 0);
    }
}
