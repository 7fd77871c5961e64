//! Rung 3: warp specialisation, as cuBLAS's Hopper kernels are built. A block of three warpgroups
//! computes a 128×256 tile of C (or, in [`matmul_bf16_persistent_128x128`] and
//! [`matmul_bf16_persistent_128x64`], a 128×128 or 128×64 one): the first only copies (a
//! *producer*), the other two only multiply (*consumers*, 64×256 each with `wgmma.m64n256k16`,
//! 128 accumulators per lane; 64×128 or 64×64 on the narrower tiles). They hand the
//! four slots of the ring to each other through `mbarrier`s instead of block-wide barriers: a
//! producer thread arrives on a slot's *full* barrier once its copies into it have landed
//! (`cp.async.mbarrier.arrive`), a consumer waits for it, issues the slot's four `wgmma`s, and
//! arrives on the slot's *empty* barrier only when the next slot's group has been issued and this
//! one is done (`wgmma.wait_group 1`), so one group of `wgmma`s is always in flight.
//!
//! The slots are laid out as in rung 2 ([`super::swizzled`]): A's 128 k-major rows, then B's four
//! 64-column atoms. GPU-only (sm_90a).
//!
//! Two kernels share the body. In [`matmul_bf16_specialized`] every producer thread copies 16-byte
//! chunks (`cp.async`, arriving on the *full* barrier when they have landed). In
//! [`matmul_bf16_tma`] one producer thread fills a slot with five TMA copies (A's 64×128 box and
//! B's four 64×64 boxes, by the tensor maps the host made, the copy engine swizzling and
//! zero-filling past the edges), announcing the slot's bytes on its *full* barrier; shapes that TMA
//! cannot take (rows not 16-byte multiples: the host passes no maps) fall back to the copies.
//!
//! [`matmul_bf16_clustered`] and [`matmul_bf16_clustered_128x128`] run the persistent body in
//! clusters of two blocks that take two tiles one above the other: each copies its own rows of A
//! and half of B's atoms, these into both blocks at once (TMA multicast), so the L2 serves B's part
//! of a step once for two tiles; a slot is refilled once both blocks' consumers are done with it.

use super::MatmulBf16;
use super::swizzled::ROW_BYTES;
use crate::matmul::k_runs::splits;
use crate::matmul::tile_order::Work;
use ptxkit::device::{MatrixLayout, SharedMatrix, SharedSlice, WARP_SIZE};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel_sm90a, shared_memory};

/// Rows of C per block.
pub const BM: u32 = 128;
/// Columns of C per block.
pub const BN: u32 = 256;
/// Columns of C per block of the narrow tile: twice the tiles of [`BN`]'s, for C whose 128×256
/// tiles leave SMs idle or must cut k into runs (whose meeting costs a round trip through the L2).
pub const BN_NARROW: u32 = 128;
/// Columns of C per block of the narrowest tile: four times the wide tiles, for products too
/// small to give every SM a 128×128 tile.
pub const BN_NARROWEST: u32 = 64;
/// The k of one step: one 128-byte swizzled row of bf16.
pub const BK: u32 = 64;
/// Slots of the wide tile's ring.
pub const STAGES: u32 = 4;
/// Threads of a warpgroup.
const WARPGROUP: u32 = 4 * WARP_SIZE;
/// One producer warpgroup, two consumers.
pub const THREADS: u32 = 3 * WARPGROUP;
/// Rows of one slot of a tile `bn` wide: A's 128, then B's `bn / 64` atoms of 64 k-rows.
const fn slot_rows(bn: u32) -> u32 {
    BM + (bn / 64) * BK
}
/// The ring's rows: [`STAGES`] slots of the wide tile.
const RING_ROWS: u32 = STAGES * slot_rows(BN);
/// Slots of a tile `bn` wide in the same ring: 4 of the wide tile's, 6 of the narrow's, 8 of the
/// narrowest's.
pub const fn stages(bn: u32) -> u32 {
    RING_ROWS / slot_rows(bn)
}
/// Rows kept free to align the ring to 1024 bytes wherever the carve lands.
const SLACK_ROWS: u32 = 1024 / ROW_BYTES;
/// The TMA boxes (columns, rows): A's slice of a step, and one 64-column atom of B's.
pub const A_BOX: (u32, u32) = (BK, BM);
pub const B_BOX: (u32, u32) = (64, BK);

/// What the tiles' operands are, for the body they share: bf16 with B row-major ([`Bf16Tiles`],
/// this ladder's), or FP8 with B given as its transpose ([`crate::matmul_fp8`]'s). A slot's
/// bytes are the same for both: each 128-byte row holds one step's k of A's rows, and B's part
/// is `BN / 64` boxes of 64 rows.
pub trait TileFormat {
    /// One element of A and B.
    type Element;
    /// Elements of k in one step: one 128-byte swizzled row of them.
    const STEP_K: u32;
    /// Whether B comes as its transpose (n × k row-major, k-major in the slot: FP8's `wgmma` has
    /// no transpose for B), else row-major (k × n, MN-major in the slot).
    const B_TRANSPOSED: bool;
}

/// bf16 operands, B row-major: 64 of k a step.
pub struct Bf16Tiles;

impl TileFormat for Bf16Tiles {
    type Element = ptxkit::device::mma::Bf16;
    const STEP_K: u32 = BK;
    const B_TRANSPOSED: bool = false;
}

shared_memory! {
    /// The ring, in 128-byte rows of 32 words, and each slot's *full* and *empty* barriers.
    pub struct Ring {
        pub rows: SharedMatrix<u32> = MatrixLayout::dense(RING_ROWS + SLACK_ROWS, ROW_BYTES / 4),
        pub barriers: SharedSlice<u64> = 2 * stages(BN_NARROWEST),
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
pub(crate) mod body {
    use super::*;
    use crate::matmul::k_runs::{meet_in_c_warp, meet_in_partials_warp};
    use crate::matmul::output::Out;
    use crate::matmul::scale::{Scale, per_block};
    use crate::matmul::tile_order::Item;
    use crate::matmul_bf16::TensorMaps;
    use crate::matmul_bf16::rounded::round_partials;
    use crate::matmul_bf16::store::write_warpgroup;
    use crate::matmul_bf16::swizzled::{Operands, stage};
    use ptxkit::device::mma::Bf16;
    use ptxkit::device::wgmma::{
        Descriptor, fence_proxy_async, registers_claim, registers_release, shared_address, wgmma_commit, wgmma_fence,
        wgmma_m64n64k16_bf16, wgmma_m64n64k32_e4m3, wgmma_m64n128k16_bf16, wgmma_m64n128k32_e4m3,
        wgmma_m64n256k16_bf16, wgmma_m64n256k32_e4m3, wgmma_wait,
    };

    /// A format's product of one 32-byte column of a slot: `acc += A·B` for the warpgroup by the
    /// `wgmma` of N = `BN` (256 into both halves, 128 into `low`, 64 into `low`'s first half).
    pub trait Multiply: TileFormat {
        fn multiply<const BN: u32>(acc: (&mut [f32; 64], &mut [f32; 64]), a: Descriptor, b: Descriptor);
    }

    /// Per-block factors need the step's sums and the totals in 64 registers each (`low` and
    /// `high`), and a tile's columns inside one block of B's factors: tiles of at most 128
    /// columns.
    #[inline(always)]
    fn narrow_enough_for<const BN: u32, S: Scale>(_scale: &S) {
        const {
            assert!(
                !S::PER_BLOCK || BN <= BN_NARROW,
                "per-block factors: tiles of at most 128 columns"
            )
        }
    }

    /// The 64×`BN` part of `acc` the `wgmma`s of N = `BN` accumulate in: `low`'s first 32 for 64.
    #[inline(always)]
    fn first_half(low: &mut [f32; 64]) -> &mut [f32; 32] {
        // SAFETY: the first 32 of `low`'s 64, as an array of their own.
        unsafe { &mut *low.as_mut_ptr().cast::<[f32; 32]>() }
    }

    impl Multiply for Bf16Tiles {
        #[inline(always)]
        fn multiply<const BN: u32>((low, high): (&mut [f32; 64], &mut [f32; 64]), a: Descriptor, b: Descriptor) {
            match BN {
                super::BN => wgmma_m64n256k16_bf16((low, high), a, b),
                BN_NARROW => wgmma_m64n128k16_bf16(low, a, b),
                _ => wgmma_m64n64k16_bf16(first_half(low), a, b),
            }
        }
    }

    impl Multiply for crate::matmul_fp8::E4m3Tiles {
        #[inline(always)]
        fn multiply<const BN: u32>((low, high): (&mut [f32; 64], &mut [f32; 64]), a: Descriptor, b: Descriptor) {
            match BN {
                super::BN => wgmma_m64n256k32_e4m3((low, high), a, b),
                BN_NARROW => wgmma_m64n128k32_e4m3(low, a, b),
                _ => wgmma_m64n64k32_e4m3(first_half(low), a, b),
            }
        }
    }

    /// Registers per thread of the TMA rungs' producer warpgroup, one thread of which issues the
    /// copies...
    const PRODUCER_REGISTERS: u32 = 56;
    /// ...and of each consumer: 128 accumulators, and the fours regrouped for C's unaligned rows
    /// ([`crate::matmul_bf16::store`], which spilled at the launch's 168). The three warpgroups'
    /// together at most the launch's 3 × 168.
    const CONSUMER_REGISTERS: u32 = 224;
    use ptxkit::device::{
        block_idx, compiler_barrier, fma, grid_dim, lane_id, shfl_idx, sync_threads, thread_idx, trap, unrolled,
        unrolled_to,
    };
    use ptxkit::device::{cluster, mbarrier, tma};

    /// The kernel's body (see the module): with `TMA` and tensor maps, one producer thread copies
    /// by TMA from `maps` (the host always gives the TMA rungs maps; without them the kernel
    /// traps); else every producer thread by `cp.async`. With TMA the producer needs few registers,
    /// and hands the others to the consumers, which then store C's unaligned rows 16 bytes at a
    /// time ([`write_warpgroup`]'s `SHIFTED`); the `cp.async` rung keeps the launch's registers
    /// everywhere and stores such rows element by element.
    ///
    /// The tile is 128×`BN` ([`BN`], [`BN_NARROW`] or [`BN_NARROWEST`]), the ring of
    /// [`stages`]`(BN)` slots.
    ///
    /// C holds f32, or bf16 ([`Out`]); a bf16 C's runs of k meet in `partials` (one 16×`BN` block
    /// of f32 per counter, [`partials_per_counter`]) and are rounded into C by the last to arrive.
    ///
    /// # Safety
    /// The kernel's contract; `maps`, where not null, describes A and B; `arrivals` holds
    /// [`counters`] zeroed counters, and for a bf16 C `partials` as many blocks.
    #[inline(always)]
    pub unsafe fn run<const TMA: bool, const BN: u32, O: Out>(
        a: *const Bf16,
        b: *const Bf16,
        c: *mut O,
        (m, n, k): (u32, u32, u32),
        maps: *const TensorMaps,
        (arrivals, partials): (*mut u32, *mut f32),
    ) {
        // SAFETY: forwarded.
        unsafe { run_in::<Bf16Tiles, TMA, BN, O, 1, BM>((a, b, 1.0), c, (m, n, k), maps, (arrivals, partials)) }
    }

    /// As [`run`] for blocks in clusters of `CTAS` along x, each cluster taking items of
    /// `UNIT` = `CTAS`·[`BM`] rows (a tile per block, one above the other) and sharing B's part
    /// of every step: each block copies its own rows of A and `1 / CTAS` of B's atoms, these into
    /// every block of the cluster at once (TMA's multicast). A slot is refilled only when the
    /// consumers of every block of the cluster are done with it: each consumer warp arrives on
    /// the slot's *empty* barrier in each block. TMA only.
    ///
    /// The operands are `F`'s (TMA only for other formats than [`Bf16Tiles`]); each sum is
    /// multiplied by `scale`'s factor for its place on its way out (1 for bf16: the multiply
    /// folds away).
    ///
    /// # Safety
    /// As for [`run`]; the kernel is launched in clusters of `CTAS` (its launch bounds); `a` and
    /// `b` hold `F`'s elements, B transposed where `F` says.
    #[inline(always)]
    pub unsafe fn run_in<F: Multiply, const TMA: bool, const BN: u32, O: Out, const CTAS: u32, const UNIT: u32>(
        (a, b, scale): (*const F::Element, *const F::Element, impl Scale),
        c: *mut O,
        (m, n, k): (u32, u32, u32),
        maps: *const TensorMaps,
        (arrivals, partials): (*mut u32, *mut f32),
    ) {
        const {
            assert!(
                BN == super::BN || BN == BN_NARROW || BN == BN_NARROWEST,
                "the wgmma's N: 256, 128 or 64"
            );
            assert!(UNIT == CTAS * BM, "a cluster's rows: a tile per block");
            assert!(
                CTAS == 1 || (TMA && (BN / 64) % CTAS == 0),
                "clusters share B's atoms by TMA"
            );
            assert!(
                TMA || (F::STEP_K == BK && !F::B_TRANSPOSED),
                "the cp.async copies stage bf16 only"
            );
        };
        narrow_enough_for::<BN, _>(&scale);
        let stages = stages(BN);
        let slot_rows = slot_rows(BN);
        if TMA && maps.is_null() {
            trap();
        }
        let Ring { rows: ring, barriers } = Ring::carve();
        let tid = thread_idx().x;
        // Read from lane 0 so that the compiler knows every lane of a warp has the same: without
        // it the warpgroups' paths look divergent, and ptxas serialises the wgmmas (its warning
        // C7520), as CUTLASS's `canonical_warp_group_idx` avoids the same way.
        let group = shfl_idx(tid / WARPGROUP, 0);
        // The items this block computes ([`crate::matmul::tile_order`]): one (a grid of one block
        // per tile) or its share of the persistent grid's, whole tiles (in bands where C is wide),
        // runs of their k where the grid has more blocks than C has tiles, or of the last two
        // waves' tiles where the last would be part-empty.
        // Worked out by each warpgroup where it starts on its items, so that none of it is held
        // across the register hand-over (where ptxas would spill it).
        let work = || Work::<UNIT, BN, true>::new((m, n), k.div_ceil(F::STEP_K), grid_dim().x / CTAS);
        // The walk's index is the cluster's; the block's rows of its items are the rank's.
        let (block, rank) = if CTAS > 1 {
            (block_idx().x / CTAS, cluster::block_rank())
        } else {
            (block_idx().x, 0)
        };
        let base = shared_address(ring.element_ptr(0, 0));
        let skew = (1024 - base % 1024) % 1024 / ROW_BYTES;
        let first_row = |slot: u32| skew + slot * slot_rows;
        let full = |slot: u32| barriers.element_ptr(slot);
        let empty = |slot: u32| barriers.element_ptr(stages + slot);
        if tid == 0 {
            for slot in 0..stages {
                // SAFETY: the barriers' words, used by no one before the barrier below.
                unsafe {
                    // One arrival per fill by TMA (its bytes complete the phase), else every
                    // producer thread's...
                    mbarrier::init(full(slot), if TMA { 1 } else { WARPGROUP });
                    // ...and every consumer thread once per use, or in clusters every consumer warp
                    // of every block of the cluster.
                    mbarrier::init(
                        empty(slot),
                        if CTAS > 1 { CTAS * CONSUMER_WARPS } else { 2 * WARPGROUP },
                    );
                }
            }
            if CTAS > 1 {
                cluster::fence_barrier_init();
            }
        }
        if CTAS > 1 {
            // The other blocks' copies and arrivals reach this block's barriers only once they are
            // initialised.
            cluster::sync();
        } else {
            sync_threads();
        }
        // Fills of the ring so far, counted across items: fill g goes to slot g % stages, in
        // that slot's phase g / stages.
        let slot_of = |fill: u32| (fill % stages, (fill / stages) & 1);
        if group == 0 && TMA {
            registers_release::<PRODUCER_REGISTERS>();
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
                        // SAFETY (barriers): initialised above; (copies) the maps describe A and
                        // B, the boxes land inside the slot, 1024-byte aligned.
                        unsafe {
                            mbarrier::wait(empty(slot), phase ^ 1);
                            mbarrier::arrive_expect_tx(full(slot), slot_rows * ROW_BYTES);
                            let first = base + first_row(slot) * ROW_BYTES;
                            let k0 = step * F::STEP_K;
                            tma::load_2d(first, a_map, (k0, row0 + BM * rank), full(slot));
                            for atom in 0..BN / 64 {
                                // 64 rows of the slot each: k-rows of 64 columns, or (B
                                // transposed) 64 columns' rows of k.
                                let dst = first + (BM + 64 * atom) * ROW_BYTES;
                                let at = match F::B_TRANSPOSED {
                                    true => (k0, col0 + 64 * atom),
                                    false => (col0 + 64 * atom, k0),
                                };
                                if CTAS == 1 {
                                    tma::load_2d(dst, b_map, at, full(slot));
                                } else if atom % CTAS == rank {
                                    // Into the same slot of every block of the cluster, each
                                    // counting the bytes on its own barrier.
                                    tma::load_2d_multicast(dst, b_map, at, full(slot), ((1 << CTAS) - 1) as u16);
                                }
                            }
                        }
                        fill += 1;
                    }
                    work.advance(&mut walk);
                }
            }
            return;
        }
        if group == 0 {
            // The `cp.async` rung's producers.
            let mut fill = 0;
            let work = work();
            let mut walk = work.walk(block);
            while !work.done(&walk) {
                let Item { corner, steps, .. } = work.item(&walk);
                // Bf16 (the const assertion above): the casts change nothing.
                let ops = Operands::new(a.cast(), b.cast(), (m, n, k), corner);
                for step in steps.0..steps.1 {
                    let (slot, phase) = slot_of(fill);
                    // Wait until the consumers are done with the slot's last use (a fresh
                    // barrier passes the first round: the slots start empty).
                    // SAFETY (every barrier operation): initialised above.
                    unsafe { mbarrier::wait(empty(slot), phase ^ 1) };
                    // SAFETY: the kernel's contract; the slot within the ring.
                    unsafe { stage::<WARPGROUP, BM, BN, BK>(&ring, ops, tid, step, first_row(slot)) };
                    if ops.aligned {
                        unsafe { mbarrier::arrive_when_copies_land(full(slot)) };
                    } else {
                        // The plain stores, seen by the tensor cores' reads, then published.
                        fence_proxy_async();
                        unsafe { mbarrier::arrive(full(slot)) };
                    }
                    fill += 1;
                }
                work.advance(&mut walk);
            }
            return;
        }
        if TMA {
            registers_claim::<CONSUMER_REGISTERS>();
        }
        let consumer = group - 1;
        // A slot goes back to the producers once this thread's (or in clusters, this warp's)
        // wgmmas are done with it: in clusters lane r arrives on block r's barrier.
        let release = |slot: u32| {
            if CTAS == 1 {
                // SAFETY: initialised above.
                unsafe { mbarrier::arrive(empty(slot)) };
            } else {
                let lane = tid % WARP_SIZE;
                if lane < CTAS {
                    let peer = cluster::peer_address(shared_address(empty(slot)), lane);
                    // SAFETY: initialised before the cluster's barrier above; every block of
                    // the cluster waits for the others' consumers before it exits.
                    unsafe { mbarrier::arrive_in_peer(peer) };
                }
            }
        };
        // This warp's counter within a tile's, where the runs of k meet in C.
        let warp = 4 * consumer + (tid / WARP_SIZE) % 4;
        // The slot and phase of the next fill this warpgroup takes, and the slot of the one
        // before, counted along (a division by the ring's length a step otherwise).
        let (mut slot, mut phase, mut previous) = (0, 0, 0);
        let work = work();
        let mut walk = work.walk(block);
        while !work.done(&walk) {
            let this = work.item(&walk);
            let (row0, col0) = (this.corner.0 + BM * rank, this.corner.1);
            let (corner, at) = ((row0 + 64 * consumer, col0), (m, n));
            // This lane's first register's place in C (the `wgmma` accumulators' layout: register
            // 4·block + r is row `place_row + 8·(r / 2)`, column `place_col + 8·block + r % 2`).
            let (place_row, place_col) = (
                corner.0 + 16 * (warp % 4) + lane_id() / 4,
                corner.1 + 2 * (lane_id() % 4),
            );
            // Per-block factors: each step's sums land in `low`, and go, times their factors,
            // into the totals in `high`.
            let (mut low, mut high) = ([0.0f32; 64], [0.0f32; 64]);
            // Per-block factors are read a step before their step, their loads in flight while
            // that step's wgmmas run (two steps ahead ran slower: docs/perf-log.md, change 166).
            let factors_of = #[inline(always)]
            |step: u32| {
                [
                    scale.at_block(step, place_row, col0),
                    scale.at_block(step, place_row + 8, col0),
                ]
            };
            let mut next_factors = factors_of(this.steps.0);
            for step in this.steps.0..this.steps.1 {
                let factors = next_factors;
                if per_block(&scale) {
                    next_factors = factors_of(step + 1);
                }
                unsafe { mbarrier::wait(full(slot), phase) };
                if !TMA {
                    // The copies landed in the generic proxy; the wgmmas read through the async
                    // one. TMA's land in the async proxy: the barrier's phase is enough. (The
                    // fence waits for this thread's loads in flight: the next step's factors.)
                    fence_proxy_async();
                }
                let first = base + first_row(slot) * ROW_BYTES;
                let (a_rows, b_rows) = (first + 64 * consumer * ROW_BYTES, first + BM * ROW_BYTES);
                if per_block(&scale) {
                    low = [0.0; 64];
                }
                // The step's first chunk; the others are a constant number of bytes on (the
                // addresses stay within the descriptors' 14-bit field: shared memory is under
                // 256 KiB).
                let da = Descriptor::swizzle_128(a_rows, 16, 1024);
                let db = match F::B_TRANSPOSED {
                    // K-major, as A.
                    true => Descriptor::swizzle_128(b_rows, 16, 1024),
                    // 16 k-rows a chunk, 64-column atoms 64 rows apart.
                    false => Descriptor::swizzle_128(b_rows, 64 * ROW_BYTES, 1024),
                };
                wgmma_fence();
                unrolled::<{ BK / 16 }>(
                    #[inline(always)]
                    |kk| {
                        // 32 bytes of k a chunk: 16 bf16 or 32 FP8.
                        let b_chunk = if F::B_TRANSPOSED { 32 } else { 16 * ROW_BYTES };
                        F::multiply::<BN>((&mut low, &mut high), da.offset(32 * kk), db.offset(b_chunk * kk));
                    },
                );
                wgmma_commit();
                if per_block(&scale) {
                    // The step's sums (a step is a block of k; the tile's columns share their
                    // block's factors) into the totals, and its slot back to the producer.
                    wgmma_wait::<0>();
                    release(slot);
                    unrolled_to(
                        BN / 8,
                        #[inline(always)]
                        |block| {
                            unrolled::<4>(|r| {
                                let i = (4 * block + r) as usize;
                                high[i] = fma(low[i], factors[(r / 2) as usize], high[i]);
                            })
                        },
                    );
                } else {
                    // The previous step's group is done: its slot goes back to the producer.
                    wgmma_wait::<1>();
                    if step > this.steps.0 {
                        release(previous);
                    }
                }
                previous = slot;
                (slot, phase) = if slot + 1 == stages {
                    (0, phase ^ 1)
                } else {
                    (slot + 1, phase)
                };
            }
            if per_block(&scale) {
                low = high;
            } else {
                // The tile's last group, and its slot: then the accumulators are final, while the
                // producer already fills the ring for the next tile.
                wgmma_wait::<0>();
                release(previous);
            }
            // Each sum times its factor, in place (factors read as the stores need them held
            // too many registers).
            unrolled_to(
                BN / 8,
                #[inline(always)]
                |block| {
                    // Registers 4·block + r: two rows, eight apart, of two neighbouring columns
                    // (fewer than 32 blocks: written out whole, constant indices). Each block's
                    // factors read where they are used: hoisted, they spill.
                    compiler_barrier();
                    unrolled::<4>(|r| {
                        let (i, factor) = (
                            4 * block + r,
                            scale.at(place_row + 8 * (r / 2), place_col + 8 * block + r % 2),
                        );
                        match i < 64 {
                            true => low[i as usize] *= factor,
                            false => high[(i - 64) as usize] *= factor,
                        }
                    })
                },
            );
            let value = #[inline(always)]
            |i: u32| {
                if i < 64 {
                    low[i as usize]
                } else {
                    high[(i - 64) as usize]
                }
            };
            let counter = work.counter(&this, arrivals, CTAS * CONSUMER_WARPS, CONSUMER_WARPS * rank + warp);
            if O::ADDS || this.runs == 1 {
                // SAFETY: the kernel's contract (C holds m·n; `arrivals` the zeroed
                // [`counters`]), every lane of the warpgroup is here; no block takes a run 0
                // after a run that adds. A bf16 C is only stored to, its k in one run.
                unsafe {
                    meet_in_c_warp(
                        counter,
                        (this.run, this.runs),
                        #[inline(always)]
                        |adding| write_warpgroup::<BN, TMA, O>(c, at, corner, value, adding),
                    )
                };
            } else {
                // This warpgroup's 64×BN of partial sums: its warps' blocks, by their counters'
                // places.
                let place = (counter as usize - arrivals as usize) / size_of::<u32>();
                let group_place = place - (warp % 4) as usize;
                let per_counter = partials_per_counter(BN) as usize;
                let group = partials.wrapping_add(group_place * per_counter);
                let mine = partials.wrapping_add(place * per_counter);
                let rows = (corner.0 + 16 * (warp % 4), corner.1);
                // Only the group's rows inside C are summed (a few rows of A leave most of a
                // tile empty); a warp with none has nothing to meet, in any run.
                let group_rows = m.saturating_sub(corner.0).min(64);
                if rows.0 < m {
                    // SAFETY: as above; the partials hold a block per counter, 16-byte aligned.
                    unsafe {
                        meet_in_partials_warp(
                            counter,
                            (this.run, this.runs),
                            #[inline(always)]
                            |adding| write_warpgroup::<BN, false, f32>(group, (group_rows, BN), (0, 0), value, adding),
                            #[inline(always)]
                            || round_partials::<BN, O>(mine, c, at, rows),
                        )
                    };
                }
            }
            work.advance(&mut walk);
        }
        if CTAS > 1 {
            // The other blocks' consumers may still arrive on this block's barriers, and their
            // producers' copies land in its ring, until they are done: no block exits before.
            cluster::sync();
        }
    }
}

kernel_sm90a! {
    #[launch_bounds(Dim3::x(THREADS), 1)]
    /// `C = A·B` by warp-specialised `wgmma` (bf16 operands, f32 sums and output), 128×256 per
    /// block.
    pub unsafe fn matmul_bf16_specialized(a: *const ptxkit::device::mma::Bf16, b: *const ptxkit::device::mma::Bf16, c: *mut f32, m: u32, n: u32, k: u32, maps: *const super::TensorMaps, arrivals: *mut u32) {
        // SAFETY: the kernel's contract.
        unsafe { body::run::<false, BN, f32>(a, b, c, (m, n, k), maps, (arrivals, core::ptr::null_mut())) }
    }
}

kernel_sm90a! {
    #[launch_bounds(Dim3::x(THREADS), 1)]
    /// As [`matmul_bf16_tma`], each block taking tile after tile (the grid the host gives).
    pub unsafe fn matmul_bf16_persistent(a: *const ptxkit::device::mma::Bf16, b: *const ptxkit::device::mma::Bf16, c: *mut f32, m: u32, n: u32, k: u32, maps: *const super::TensorMaps, arrivals: *mut u32) {
        // SAFETY: the kernel's contract.
        unsafe { body::run::<true, BN, f32>(a, b, c, (m, n, k), maps, (arrivals, core::ptr::null_mut())) }
    }
}

kernel_sm90a! {
    #[launch_bounds(Dim3::x(THREADS), 1)]
    /// As [`matmul_bf16_specialized`], the producer copying by TMA where the host gives tensor
    /// maps.
    pub unsafe fn matmul_bf16_tma(a: *const ptxkit::device::mma::Bf16, b: *const ptxkit::device::mma::Bf16, c: *mut f32, m: u32, n: u32, k: u32, maps: *const super::TensorMaps, arrivals: *mut u32) {
        // SAFETY: the kernel's contract.
        unsafe { body::run::<true, BN, f32>(a, b, c, (m, n, k), maps, (arrivals, core::ptr::null_mut())) }
    }
}

kernel_sm90a! {
    #[launch_bounds(Dim3::x(THREADS), 1)]
    /// As [`matmul_bf16_persistent`] on 128×128 tiles, six slots in the ring.
    pub unsafe fn matmul_bf16_persistent_128x128(a: *const ptxkit::device::mma::Bf16, b: *const ptxkit::device::mma::Bf16, c: *mut f32, m: u32, n: u32, k: u32, maps: *const super::TensorMaps, arrivals: *mut u32) {
        // SAFETY: the kernel's contract.
        unsafe { body::run::<true, BN_NARROW, f32>(a, b, c, (m, n, k), maps, (arrivals, core::ptr::null_mut())) }
    }
}

kernel_sm90a! {
    #[launch_bounds(Dim3::x(THREADS), 1)]
    /// As [`matmul_bf16_persistent`] on 128×64 tiles, eight slots in the ring.
    pub unsafe fn matmul_bf16_persistent_128x64(a: *const ptxkit::device::mma::Bf16, b: *const ptxkit::device::mma::Bf16, c: *mut f32, m: u32, n: u32, k: u32, maps: *const super::TensorMaps, arrivals: *mut u32) {
        // SAFETY: the kernel's contract.
        unsafe { body::run::<true, BN_NARROWEST, f32>(a, b, c, (m, n, k), maps, (arrivals, core::ptr::null_mut())) }
    }
}

kernel_sm90a! {
    #[launch_bounds(Dim3::x(THREADS), 1, cluster = CLUSTER)]
    /// As [`matmul_bf16_persistent`], the blocks in pairs (clusters of two) that take two tiles
    /// one above the other and copy B's part of each step once for both.
    pub unsafe fn matmul_bf16_clustered(a: *const ptxkit::device::mma::Bf16, b: *const ptxkit::device::mma::Bf16, c: *mut f32, m: u32, n: u32, k: u32, maps: *const super::TensorMaps, arrivals: *mut u32) {
        // SAFETY: the kernel's contract; launched in clusters of CLUSTER.
        unsafe { body::run_in::<Bf16Tiles, true, BN, f32, CLUSTER, CLUSTER_ROWS>((a, b, 1.0), c, (m, n, k), maps, (arrivals, core::ptr::null_mut())) }
    }
}

kernel_sm90a! {
    #[launch_bounds(Dim3::x(THREADS), 1, cluster = CLUSTER)]
    /// As [`matmul_bf16_clustered`] on 128×128 tiles.
    pub unsafe fn matmul_bf16_clustered_128x128(a: *const ptxkit::device::mma::Bf16, b: *const ptxkit::device::mma::Bf16, c: *mut f32, m: u32, n: u32, k: u32, maps: *const super::TensorMaps, arrivals: *mut u32) {
        // SAFETY: as above.
        unsafe { body::run_in::<Bf16Tiles, true, BN_NARROW, f32, CLUSTER, CLUSTER_ROWS>((a, b, 1.0), c, (m, n, k), maps, (arrivals, core::ptr::null_mut())) }
    }
}

/// [`THREADS`] threads per block (a producer warpgroup and two consumers), one block per 128×256
/// tile of C; a 193 KiB ring, one block per SM.
pub const KERNEL: Kernel<MatmulBf16> = Kernel {
    code: matmul_bf16_specialized,
    block: Dim3::x(THREADS),
    shared: SharedMemory::opt_in(Ring::BYTES),
    grid: |p, _| Dim3::x(tiles::<BN>(p)),
};

/// As [`KERNEL`], the slots filled by TMA: the host passes tensor maps of A and B for shapes whose
/// rows are 16-byte multiples.
pub const KERNEL_TMA: Kernel<MatmulBf16> = Kernel {
    code: matmul_bf16_tma,
    ..KERNEL
};

/// As [`KERNEL_TMA`] on a persistent grid: the device's resident blocks (one per SM at 193 KiB
/// each) take the tiles in turn, so a block's producer fills the ring for its next
/// tile while its consumers store the last. Where C has fewer tiles than the device has places,
/// one block per run of k of each tile, runs of at least [`MIN_RUN`]; where the last wave of
/// tiles would be part-empty, the last two waves' tiles cut into runs too
/// ([`crate::matmul::tile_order::Work`]).
pub const KERNEL_PERSISTENT: Kernel<MatmulBf16> = Kernel {
    code: matmul_bf16_persistent,
    grid: persistent_grid::<BN>,
    ..KERNEL
};

/// As [`KERNEL_PERSISTENT`] on 128×128 tiles.
pub const KERNEL_PERSISTENT_128X128: Kernel<MatmulBf16> = Kernel {
    code: matmul_bf16_persistent_128x128,
    grid: persistent_grid::<BN_NARROW>,
    ..KERNEL
};

/// As [`KERNEL_PERSISTENT`] on 128×64 tiles.
pub const KERNEL_PERSISTENT_128X64: Kernel<MatmulBf16> = Kernel {
    code: matmul_bf16_persistent_128x64,
    grid: persistent_grid::<BN_NARROWEST>,
    ..KERNEL
};

/// As [`KERNEL_PERSISTENT`] in clusters of [`CLUSTER`] blocks: the blocks of a cluster take
/// tiles one above the other (items of [`CLUSTER_ROWS`] rows), each copying its own rows of A and
/// half of B's atoms into both, so the L2 serves B's part of a step once for two tiles.
pub const KERNEL_CLUSTERED: Kernel<MatmulBf16> = Kernel {
    code: matmul_bf16_clustered,
    grid: clustered_grid::<BN>,
    ..KERNEL
};

/// As [`KERNEL_CLUSTERED`] on 128×128 tiles.
pub const KERNEL_CLUSTERED_128X128: Kernel<MatmulBf16> = Kernel {
    code: matmul_bf16_clustered_128x128,
    grid: clustered_grid::<BN_NARROW>,
    ..KERNEL
};

/// Blocks per cluster of the clustered rungs.
pub const CLUSTER: u32 = 2;
/// Rows of C a cluster's item covers: a tile per block.
pub const CLUSTER_ROWS: u32 = CLUSTER * BM;

/// The clustered rungs' grid for tiles `BN` wide: [`persistent_grid`]'s over items of
/// [`CLUSTER_ROWS`] rows, a cluster per item or run of k, at most the clusters the device holds at
/// once ([`CLUSTER`] blocks each).
fn clustered_grid<const BN: u32>(p: &MatmulBf16, device: ptxkit::Occupancy) -> Dim3 {
    let items = p.m.div_ceil(CLUSTER_ROWS) * p.n.div_ceil(BN);
    let places = (device.resident_blocks / CLUSTER).max(1);
    let runs = splits(items, places, p.k, MIN_RUN);
    Dim3::x(CLUSTER * (items * runs).min(places))
}

/// The tile width of a clustered kernel of this module (`entry`): [`BN`] or [`BN_NARROW`];
/// `None` for the others.
#[cfg(not(target_arch = "nvptx64"))]
pub fn clustered_width(entry: &str) -> Option<u32> {
    width_among(&[(KERNEL_CLUSTERED, BN), (KERNEL_CLUSTERED_128X128, BN_NARROW)], entry)
}

/// The width paired with kernel `entry` among `tiles` (a family's tile kernels, each with its
/// tile's width); `None` where it is none of them.
#[cfg(not(target_arch = "nvptx64"))]
pub fn width_among<P: ptxkit::Problem>(tiles: &[(Kernel<P>, u32)], entry: &str) -> Option<u32> {
    tiles
        .iter()
        .find(|(kernel, _)| kernel.entry() == entry)
        .map(|&(_, width)| width)
}

/// The zeroed counters a launch of the clustered kernels (tiles `BN` wide) on `grid` needs: one
/// per consumer warp of each block of a cluster's item where the grid cuts k into runs.
pub const fn clustered_counters<const BN: u32>(p: &MatmulBf16, grid: Dim3) -> usize {
    Work::<CLUSTER_ROWS, BN, true>::new((p.m, p.n), p.k.div_ceil(BK), grid.x / CLUSTER)
        .counters(CLUSTER * CONSUMER_WARPS)
}

/// The persistent grid for tiles `BN` wide: a block per tile, or per run of k of each where the
/// tiles are fewer than the device's places, at most the device's resident blocks.
fn persistent_grid<const BN: u32>(p: &MatmulBf16, device: ptxkit::Occupancy) -> Dim3 {
    let runs = splits(tiles::<BN>(p), device.resident_blocks, p.k, MIN_RUN);
    Dim3::x(device.at_most_resident(tiles::<BN>(p) * runs))
}

/// How `auto` chooses among a product's persistent tiles: what a step of the narrower tiles
/// costs against the 128×256 tile's ([`TileRule::predicted_twentieths`]), and where the 128×256
/// tiles go in clusters ([`KERNEL_CLUSTERED`]) rather than alone ([`TileRule::clusters_pay`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileRule {
    /// A step of the 128×128 tile's time over the 128×256 tile's, in twentieths.
    pub narrow_step_twentieths: u32,
    /// A step of the 128×64 tile's time over the 128×256 tile's, in twentieths.
    pub narrowest_step_twentieths: u32,
    /// Steps of k ([`BK`] of the bf16 product of the same steps) from which clusters pay.
    pub clusters_min_steps: u32,
    /// Waves of 128×256 tiles (one per place) from which clusters pay.
    pub clusters_min_waves: u32,
}

impl TileRule {
    /// The busiest block's predicted time for `p` on a device of `places` resident blocks (one
    /// per SM), on 128×256 tiles ([`KERNEL_PERSISTENT`]), 128×128 ones
    /// ([`KERNEL_PERSISTENT_128X128`]) and 128×64 ones ([`KERNEL_PERSISTENT_128X64`]), in
    /// twentieths of a 128×256 tile's step: its steps and items ([`Work::busiest_steps`]), a
    /// narrower step costing what the rule says. More tiles fill more of the SMs where the wide
    /// tiles are few, and need fewer runs of k (whose meeting costs a round trip through the L2).
    #[cfg(not(target_arch = "nvptx64"))]
    pub fn predicted_twentieths(&self, p: &MatmulBf16, places: u32) -> [u64; 3] {
        let device = ptxkit::Occupancy {
            resident_blocks: places,
        };
        let steps = p.k.div_ceil(BK);
        let wide = Work::<BM, BN, true>::new((p.m, p.n), steps, persistent_grid::<BN>(p, device).x);
        let narrow = Work::<BM, BN_NARROW, true>::new((p.m, p.n), steps, persistent_grid::<BN_NARROW>(p, device).x);
        let narrowest =
            Work::<BM, BN_NARROWEST, true>::new((p.m, p.n), steps, persistent_grid::<BN_NARROWEST>(p, device).x);
        [
            u64::from(wide.busiest_steps()) * 20,
            u64::from(narrow.busiest_steps()) * u64::from(self.narrow_step_twentieths),
            u64::from(narrowest.busiest_steps()) * u64::from(self.narrowest_step_twentieths),
        ]
    }

    /// Whether `p`'s 128×256 tiles are predicted to run faster in clusters than alone on a
    /// device of `places` resident blocks: k long over many waves of them. A cluster's two
    /// blocks go in step and read B's part of each step once; where k or the waves are few the
    /// clustered tiles ran no faster, at times slower.
    #[cfg(not(target_arch = "nvptx64"))]
    pub fn clusters_pay(&self, p: &MatmulBf16, places: u32) -> bool {
        p.k.div_ceil(BK) >= self.clusters_min_steps
            && u64::from(tiles::<BN>(p)) >= u64::from(self.clusters_min_waves) * u64::from(places)
    }
}

/// The bf16 products' rule. A 128×128 step costs 13 twentieths of a 128×256 one (half the
/// products, but more of the copies' bytes and of the fixed costs for each) and a 128×64 step 11
/// (a quarter of the products, half the copies' bytes, the same fixed costs), fitted with
/// [`Work::busiest_steps`]'s costs to the model-shape suite (docs/perf-log.md, changes 147 and
/// 148). Clusters from 128 steps (a k of 8192) over 8 waves, where the tiles alone ran slowest
/// against cuBLAS (perhaps the blocks of a wave drift apart in k and the L2 no longer holds what
/// they share; not measured) (change 155).
pub const TILE_RULE: TileRule = TileRule {
    narrow_step_twentieths: 13,
    narrowest_step_twentieths: 11,
    clusters_min_steps: 128,
    clusters_min_waves: 8,
};

/// [`TILE_RULE`]'s predicted times for a bf16 product ([`TileRule::predicted_twentieths`]).
#[cfg(not(target_arch = "nvptx64"))]
pub fn predicted_twentieths(p: &MatmulBf16, places: u32) -> [u64; 3] {
    TILE_RULE.predicted_twentieths(p, places)
}

/// Whether a bf16 product's 128×256 tiles go in clusters ([`TILE_RULE`]).
#[cfg(not(target_arch = "nvptx64"))]
pub fn clusters_pay(p: &MatmulBf16, places: u32) -> bool {
    TILE_RULE.clusters_pay(p, places)
}

/// The tile width of a persistent kernel of this module (`entry`): [`BN`], [`BN_NARROW`] or
/// [`BN_NARROWEST`]; `None` for the others.
#[cfg(not(target_arch = "nvptx64"))]
pub fn persistent_width(entry: &str) -> Option<u32> {
    let tiles = [
        (KERNEL_PERSISTENT, BN),
        (KERNEL_PERSISTENT_128X128, BN_NARROW),
        (KERNEL_PERSISTENT_128X64, BN_NARROWEST),
    ];
    width_among(&tiles, entry)
}

/// The shortest run of k a tile is cut into: eight steps, twice the ring.
pub const MIN_RUN: u32 = 8 * BK;

/// Consumer warps per block: each holds its own rows of the tile, and meets the other runs' in C
/// on its own counter.
const CONSUMER_WARPS: u32 = 2 * WARPGROUP / WARP_SIZE;

/// f32 partial sums per counter where C is bf16 and the tile `bn` wide: a consumer warp's 16 rows
/// of a tile's columns.
pub const fn partials_per_counter(bn: u32) -> u32 {
    16 * bn
}

/// Tiles of C (128×`BN` each).
pub(crate) const fn tiles<const BN: u32>(p: &MatmulBf16) -> u32 {
    p.m.div_ceil(BM) * p.n.div_ceil(BN)
}

/// The zeroed counters a launch of these kernels (tiles `BN` wide) on `grid` needs: one per
/// consumer warp and tile where the grid cuts tiles' k into runs, none otherwise.
pub const fn counters<const BN: u32>(p: &MatmulBf16, grid: Dim3) -> usize {
    Work::<BM, BN, true>::new((p.m, p.n), p.k.div_ceil(BK), grid.x).counters(CONSUMER_WARPS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ptxkit::Occupancy;

    /// On 132 SMs the prediction takes the narrow tiles where C's wide ones are few (and the
    /// narrow ones gained 10–33 % there in run 2026-12-06 e), the wide ones where both fill the
    /// waves (the wide gained 15–30 %), and says so by the busiest block's steps.
    #[test]
    fn the_narrow_tiles_are_predicted_faster_where_the_wide_are_few() {
        let faster = |(m, n, k)| {
            let [wide, narrow, _] = predicted_twentieths(&MatmulBf16 { m, n, k }, 132);
            narrow < wide
        };
        for shape in [
            (128, 11008, 4096),
            (512, 4096, 4096),
            (128, 2304, 768),
            (1024, 1024, 1024),
            (16, 4096, 4096),
        ] {
            assert!(faster(shape), "{shape:?}");
        }
        for shape in [
            (8192, 8192, 8192),
            (2048, 11008, 4096),
            (512, 6144, 4096),
            (1024, 2304, 768),
        ] {
            assert!(!faster(shape), "{shape:?}");
        }
        // 512 × 4096 × 4096: the wide tiles' 64 in two runs of 32 steps (with the items' and the
        // meeting's costs, 64 steps), against the narrow tiles' 128 whole (80 narrow steps).
        assert_eq!(
            predicted_twentieths(
                &MatmulBf16 {
                    m: 512,
                    n: 4096,
                    k: 4096
                },
                132
            )[..2],
            [64 * 20, 80 * 13]
        );
    }

    /// The 128×64 tiles where even the 128×128 ones leave most SMs idle (and there ran 1.25–1.35×
    /// faster than them in run 2026-12-06 e, part 6); not where the 128×128 ones fill a wave.
    #[test]
    fn the_narrowest_tiles_are_predicted_fastest_for_the_smallest_products() {
        let fastest = |(m, n, k)| {
            let times = predicted_twentieths(&MatmulBf16 { m, n, k }, 132);
            (0..3).min_by_key(|&i| (times[i], core::cmp::Reverse(i))).unwrap()
        };
        for shape in [(128, 2304, 768), (128, 3072, 768), (1024, 1024, 1024)] {
            assert_eq!(fastest(shape), 2, "{shape:?}");
        }
        for shape in [(512, 4096, 4096), (128, 11008, 4096)] {
            assert_eq!(fastest(shape), 1, "{shape:?}");
        }
        assert_eq!(fastest((8192, 8192, 8192)), 0);
        assert_eq!(
            predicted_twentieths(
                &MatmulBf16 {
                    m: 128,
                    n: 2304,
                    k: 768
                },
                132
            ),
            [28 * 20, 28 * 13, 28 * 11]
        );
    }

    /// Clusters where k is long and the wide tiles fill many waves (8192 × 8192 × 28672 ran
    /// 1.2–1.5× faster in them, 8192³ up to 1.1×), not where either is short (2048 × 4096 × 4096
    /// and 12608 × 768 × 3072 ran slower in them: run 2026-12-07 j).
    #[test]
    fn clusters_pay_where_k_is_long_over_many_waves() {
        let pays = |(m, n, k)| clusters_pay(&MatmulBf16 { m, n, k }, 132);
        for shape in [(8192, 8192, 28672), (8192, 8192, 8192), (8192, 10240, 8192)] {
            assert!(pays(shape), "{shape:?}");
        }
        for shape in [
            (2048, 4096, 4096),
            (12608, 768, 3072),
            (12608, 4096, 1024),
            (512, 4096, 11008),
            (8192, 4096, 14336),
            (8192, 8192, 8192 - BK),
            (1, 1, 1),
        ] {
            assert!(!pays(shape), "{shape:?}");
        }
        // No overflow where the device's places are many.
        assert!(!clusters_pay(
            &MatmulBf16 {
                m: 8192,
                n: 8192,
                k: 8192
            },
            u32::MAX
        ));
    }

    /// On an H200's 132 places: C of few tiles gets one block per run of k, and counters for its
    /// warps; C of many tiles one block per place and none; the one-block-per-tile kernels never
    /// split.
    #[test]
    fn runs_of_k_where_tiles_are_few() {
        let h200 = Occupancy { resident_blocks: 132 };
        let grid = |kernel: &Kernel<MatmulBf16>, (m, n, k)| kernel.launch_shape(&MatmulBf16 { m, n, k }, h200).grid;
        // 16 tiles, k of 11008: 8 runs of 1376.
        let few = (16, 4096, 11008);
        assert_eq!(grid(&KERNEL_PERSISTENT, few), Dim3::x(128));
        assert_eq!(
            counters::<BN>(
                &MatmulBf16 {
                    m: 16,
                    n: 4096,
                    k: 11008
                },
                Dim3::x(128)
            ),
            16 * 8
        );
        assert_eq!(grid(&KERNEL_TMA, few), Dim3::x(16));
        assert_eq!(
            counters::<BN>(
                &MatmulBf16 {
                    m: 16,
                    n: 4096,
                    k: 11008
                },
                Dim3::x(16)
            ),
            0
        );
        // A short k is not cut below MIN_RUN.
        assert_eq!(grid(&KERNEL_PERSISTENT, (16, 4096, 2 * MIN_RUN - 1)), Dim3::x(16));
        // 512 tiles.
        assert_eq!(grid(&KERNEL_PERSISTENT, (4096, 4096, 4096)), Dim3::x(132));
        assert_eq!(
            counters::<BN>(
                &MatmulBf16 {
                    m: 4096,
                    n: 4096,
                    k: 4096
                },
                Dim3::x(132)
            ),
            0
        );
        // 160 tiles on 132 blocks: the last wave part-empty, so its 28 tiles are cut into runs,
        // with counters.
        let cut = MatmulBf16 {
            m: 512,
            n: 10240,
            k: 8192,
        };
        assert_eq!(grid(&KERNEL_PERSISTENT, (512, 10240, 8192)), Dim3::x(132));
        assert_eq!(counters::<BN>(&cut, Dim3::x(132)), 28 * 8);
    }

    /// The clustered rungs launch whole clusters of two, never more than the device holds at
    /// once (every block of a run of k must be resident for the runs to meet), a cluster per item
    /// of two tiles or per run of k of one; their counters are a warp's of each block's tile.
    #[test]
    fn clustered_grids_are_whole_pairs_within_the_device() {
        assert_eq!(matmul_bf16_clustered.bounds().cluster(), CLUSTER);
        assert_eq!(matmul_bf16_clustered_128x128.bounds().cluster(), CLUSTER);
        assert_eq!(matmul_bf16_persistent.bounds().cluster(), 1);
        for resident_blocks in [1, 2, 8, 130, 132, u32::MAX - 1] {
            let device = Occupancy { resident_blocks };
            for (m, n, k) in [
                (1, 1, 1),
                (512, 4096, 4096),
                (8192, 8192, 8192),
                (129, 300, 70000),
                (16, 4096, 11008),
            ] {
                let p = MatmulBf16 { m, n, k };
                for (kernel, width) in [(KERNEL_CLUSTERED, BN), (KERNEL_CLUSTERED_128X128, BN_NARROW)] {
                    let g = kernel.launch_shape(&p, device).grid;
                    assert!(
                        g.x.is_multiple_of(CLUSTER) && g.x >= CLUSTER,
                        "{m}×{n}×{k} on {resident_blocks}: {g:?}"
                    );
                    assert!(
                        g.x <= resident_blocks.max(CLUSTER),
                        "{m}×{n}×{k} on {resident_blocks}: {g:?}"
                    );
                    let items = m.div_ceil(CLUSTER_ROWS) * n.div_ceil(width);
                    assert!(g.x / CLUSTER <= items * k.div_ceil(MIN_RUN), "{m}×{n}×{k}: {g:?}");
                }
            }
        }
        // 512 × 4096 × 4096 on 132 places: 2 × 32 items of 256 × 128 on 64 clusters, k whole.
        let h100 = Occupancy { resident_blocks: 132 };
        let p = MatmulBf16 {
            m: 512,
            n: 4096,
            k: 4096,
        };
        let g = KERNEL_CLUSTERED_128X128.launch_shape(&p, h100).grid;
        assert_eq!(g, Dim3::x(128));
        assert_eq!(clustered_counters::<BN_NARROW>(&p, g), 0);
        // 16 rows: one item per 128 columns, k cut into runs that meet on a counter per warp of
        // both blocks.
        let p = MatmulBf16 {
            m: 16,
            n: 4096,
            k: 11008,
        };
        let g = KERNEL_CLUSTERED_128X128.launch_shape(&p, h100).grid;
        let runs = g.x / CLUSTER / 32;
        assert!(runs > 1 && g.x <= 132, "{g:?}");
        assert_eq!(clustered_counters::<BN_NARROW>(&p, g), 32 * 16);
    }
}
