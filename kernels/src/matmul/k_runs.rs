//! k split across the grid's depth: each block multiplies one run of k, and the runs' sums meet in
//! C. Shared by every kernel that splits k ([`super::split_k`], [`super::small_m`] and the small-m
//! rungs of the tensor-core ladders).
//!
//! **How the runs meet in C, without zeroing it first.** The block of run 0 stores its sums into
//! C, then signals its tile's counter in `arrivals`; the blocks of the other runs wait for that
//! signal and add theirs with `red.global.add.f32`; the last to arrive puts the counter back to
//! zero for the next launch. (Zeroing C before each product, the driver's memset and its gap on
//! the stream, had a cost of its own at 1024³: docs/perf-log.md, change 95.) The wait cannot
//! deadlock: run 0's blocks are the grid's first (z = 0), and the GPU starts blocks in order, so
//! a waiting block's run 0 has started (CUB's decoupled look-back scan relies on the same
//! order).
//!
//! The additions into C arrive in whatever order the blocks finish, so the result's last bits can
//! differ from run to run (within the same error bound: each element is still a sum of k
//! products).
//!
//! **Where C is not f32** (bf16, [`crate::matmul_bf16::rounded`]), the runs meet the same way in
//! f32 partial sums instead, and the last to arrive rounds the sums into C
//! ([`meet_in_partials_warp`]): C's elements are rounded once, from the whole sum.

use ptxkit::device::{
    atomic_add, block_idx, grid_dim, lane_id, load_acquire, shfl_idx, store_relaxed, sync_threads, sync_warp,
    thread_fence_acq_rel, thread_idx,
};

/// Block z's run of k, and how many blocks have a run: `gridDim.z` equal runs, multiples of
/// `STEP` (so that a kernel's steps stay inside a run), the last one short; empty past k.
#[inline(always)]
pub fn run_of_k<const STEP: u32>(k: u32) -> (u32, u32, u32) {
    run_among::<STEP>(k, block_idx().z, grid_dim().z)
}

/// [`run_of_k`] for run `run` of `runs`.
#[inline(always)]
const fn run_among<const STEP: u32>(k: u32, run: u32, runs: u32) -> (u32, u32, u32) {
    let chunk = k.div_ceil(runs).next_multiple_of(STEP);
    let begin = min(run.saturating_mul(chunk), k);
    (begin, min(begin.saturating_add(chunk), k), k.div_ceil(chunk))
}

const fn min(a: u32, b: u32) -> u32 {
    if a < b { a } else { b }
}

/// Ways to split k over `tiles` tiles of C when the device holds `resident_blocks` blocks at
/// once: as many as one wave of them holds, no run of k shorter than `min_run`, at least 1. One
/// split more would start a second wave for a few blocks, each as long as the first wave's:
/// rounding up (768 blocks for 660 places at 1024³ and on 8192×64×8192) left split-k well behind
/// its twin, which holds six blocks per SM to its five (measured: docs/perf-log.md, change 90).
pub const fn splits(tiles: u32, resident_blocks: u32, k: u32, min_run: u32) -> u32 {
    let one_wave = resident_blocks / tiles;
    let longest = k / min_run;
    let splits = if one_wave < longest { one_wave } else { longest };
    if splits < 1 { 1 } else { splits }
}

/// Ways to split k over `tiles` tiles of C for blocks that may run in several waves of
/// `resident_blocks`, a block's time its run's length plus a fixed cost of `fixed` rows of k
/// (its start, its meeting): the split with the fewest waves × that time, no run shorter than
/// `min_run`, at most 64, at least 1 (ties to fewer runs). [`splits`]' one wave leaves most SMs
/// idle where the tiles are a little more than half of the places (80 strips on 132 SMs).
pub const fn splits_to_fill(tiles: u32, resident_blocks: u32, k: u32, (min_run, fixed): (u32, u32)) -> u32 {
    let longest = k / min_run;
    let most = if longest < 64 { longest } else { 64 };
    if most <= 1 || tiles == 0 || resident_blocks == 0 {
        return 1;
    }
    let at = (tiles, resident_blocks, k, fixed);
    let (mut best, mut best_time) = (1, split_time(1, at));
    let mut s = 2;
    while s <= most {
        if split_time(s, at) < best_time {
            (best, best_time) = (s, split_time(s, at));
        }
        s += 1;
    }
    best
}

/// [`splits_to_fill`]'s time of `s` runs: the waves their blocks take, each a run and the fixed
/// cost long.
const fn split_time(s: u32, (tiles, resident_blocks, k, fixed): (u32, u32, u32, u32)) -> u64 {
    let waves = (tiles as u64 * s as u64).div_ceil(resident_blocks as u64);
    waves * (k.div_ceil(s) as u64 + fixed as u64)
}

/// Puts this block's sums for its tile of C (`store` writes them, `add` adds them with
/// `red.global.add`) together with the other runs' (the module's doc): `runs` blocks, one per
/// run of k, share the tile's counter in `arrivals`, indexed by the block's (x, y).
///
/// # Safety
/// Called by every thread of the block, `runs` as [`run_of_k`] gives it; where `runs` > 1,
/// `arrivals` holds a zeroed counter per tile (`gridDim.x · gridDim.y`), and no other launch uses
/// them meanwhile.
#[inline(always)]
pub unsafe fn meet_in_c(arrivals: *mut u32, runs: u32, store: impl FnOnce(), add: impl FnOnce()) {
    // SAFETY: forwarded.
    unsafe { meet_in_c_by(arrivals, runs, |adding| if adding { add() } else { store() }) }
}

/// [`meet_in_c`] with one `write(adding)` that stores the block's sums, or adds them where
/// `adding`: called once, so that its code (a large tile's epilogue) is there once.
///
/// # Safety
/// As for [`meet_in_c`].
#[inline(always)]
pub unsafe fn meet_in_c_by(arrivals: *mut u32, runs: u32, write: impl FnOnce(bool)) {
    // Read only where the grid is more than one deep (runs > 1), where `arrivals` has this
    // tile's counter.
    let arrived = arrivals.wrapping_add((block_idx().y * grid_dim().x + block_idx().x) as usize);
    let party = Party {
        first: thread_idx().x == 0,
        sync: sync_threads,
    };
    // SAFETY: forwarded; with one run, `meet` writes and returns without touching the counter.
    unsafe { meet(arrived, (block_idx().z, runs), party, write, false) };
}

/// As [`meet_in_c`] for one warp's part of a tile, where a persistent grid's warps each hold
/// their own rows of it: the runs of the part share the counter `arrived`. `write(adding)` stores
/// the warp's sums, or adds them where `adding`; it is called once, so that its code is there once.
///
/// # Safety
/// Called by every lane of the warp; where `runs` > 1, `arrived` a zeroed counter of this part
/// that only its `runs` warps (one per run) use in this launch, and run 0's warp is not behind a
/// waiting one (no block takes a run 0 after a run that adds, and the grid's blocks are all
/// resident).
#[inline(always)]
pub unsafe fn meet_in_c_warp(arrived: *mut u32, (run, runs): (u32, u32), write: impl FnOnce(bool)) {
    let party = Party {
        first: lane_id() == 0,
        sync: sync_warp,
    };
    // SAFETY: forwarded.
    unsafe { meet(arrived, (run, runs), party, write, false) };
}

/// As [`meet_in_c_warp`], the runs meeting in f32 partial sums (`write(adding)` stores or adds
/// there) instead of in C: the warp whose run arrives last, when every other run's sums have
/// reached the partials, calls `round` to round them into C (the module's doc). One run calls
/// `write(false)`, then `round`.
///
/// # Safety
/// As for [`meet_in_c_warp`].
#[inline(always)]
pub unsafe fn meet_in_partials_warp(
    arrived: *mut u32,
    (run, runs): (u32, u32),
    write: impl FnOnce(bool),
    round: impl FnOnce(),
) {
    let party = Party {
        first: lane_id() == 0,
        sync: sync_warp,
    };
    // SAFETY: forwarded.
    let last = unsafe { meet(arrived, (run, runs), party, write, true) };
    if shfl_idx(last as u32, 0) != 0 {
        // The other runs' additions, published before their arrivals, are seen by every lane.
        sync_warp();
        thread_fence_acq_rel();
        round();
    }
}

/// The threads that hold a part of C's sums for one run: one of them signals and waits for all,
/// `sync` their barrier.
struct Party<Sync: Fn()> {
    first: bool,
    sync: Sync,
}

/// Run 0 stores and signals; the others wait for the signal, add, and the last puts the counter
/// back to zero. One run stores and nothing else. Where `publishing`, each run's additions are
/// visible to the GPU before it arrives. Whether this party's run arrived last (or is the only
/// one), as the party's first thread knows it.
///
/// # Safety
/// As for [`meet_in_c_warp`], `arrived` the part's counter.
#[inline(always)]
unsafe fn meet(
    arrived: *mut u32,
    (run, runs): (u32, u32),
    party: Party<impl Fn()>,
    write: impl FnOnce(bool),
    publishing: bool,
) -> bool {
    let Party { first, sync } = party;
    let adding = run > 0;
    if adding {
        if first {
            // SAFETY: the part's counter, an aligned u32 of global memory. Run 0's party started
            // before this one (the module's doc).
            while unsafe { load_acquire(arrived) } == 0 {}
        }
        // The acquire above orders the whole party's additions after run 0's stores.
        sync();
    }
    write(adding);
    if runs == 1 {
        return true;
    }
    if !adding {
        // Every thread's stores are visible to the GPU before the signal goes out (a release:
        // the waiting runs acquire by `load_acquire`).
        thread_fence_acq_rel();
        sync();
        if first {
            // SAFETY: as above.
            unsafe { atomic_add(arrived, 1) };
        }
        // Run 0 arrives first: the others wait for it.
        return false;
    }
    if publishing {
        // A release, as run 0's: the last to arrive acquires after its atomic.
        thread_fence_acq_rel();
        sync();
    }
    // SAFETY: as above.
    let last = first && unsafe { atomic_add(arrived, 1) } == runs - 1;
    if last {
        // Every run's party adds 1 once (run 0's first); the last to arrive leaves the counter at
        // zero for the next launch.
        // SAFETY: as above.
        unsafe { store_relaxed(arrived, 0) };
    }
    last
}

/// The zeroed counters `arrivals` must hold for a launch of `kernel` on `grid`: where it is one of
/// `splitting` (the family's kernels that split k) and the grid is more than one deep, one per
/// block of the grid's first layer (a tile of C); none otherwise.
#[cfg(not(target_arch = "nvptx64"))]
pub fn counters<'a, P: ptxkit::Problem + 'a>(
    splitting: impl IntoIterator<Item = &'a ptxkit::Kernel<P>>,
    kernel: &ptxkit::Kernel<P>,
    grid: ptxkit::Dim3,
) -> usize {
    let splits = splitting.into_iter().any(|split| split.entry() == kernel.entry());
    if splits && grid.z > 1 {
        grid.x as usize * grid.y as usize
    } else {
        0
    }
}

/// As [`counters`] for kernels whose blocks' `warps` warps each meet their own part of a tile
/// ([`meet_in_c_warp`], [`meet_in_partials_warp`]): one per warp of the grid's first layer where
/// the grid is more than one deep, none otherwise.
#[cfg(not(target_arch = "nvptx64"))]
pub const fn warp_counters(grid: ptxkit::Dim3, warps: u32) -> usize {
    if grid.z > 1 {
        grid.x as usize * grid.y as usize * warps as usize
    } else {
        0
    }
}

/// Test support for the kernels that split k: `kernel` at m × n × k on the emulator's places,
/// launched twice, C poisoned each time and never zeroed (its NaNs stay unless run 0 stores before
/// the others add), the counters kept between the launches (each must leave them at zero); checked
/// against the f64 product. Returns the launch's grid.
#[cfg(test)]
pub(crate) fn check_runs_meet(
    kernel: &ptxkit::Kernel<super::Matmul>,
    (m, n, k): (usize, usize, usize),
) -> ptxkit::Dim3 {
    use crate::testing::{GUARD, assert_matches, poisoned, random_vec, rng};
    let mut rng = rng();
    let (a, b) = (random_vec(&mut rng, m * k), random_vec(&mut rng, k * n));
    let expected = crate::reference::matmul(&a, &b, m, n, k);
    let problem = super::Matmul::new(m, n, k).unwrap();
    let shape = kernel.launch_shape(&problem, ptxkit::Occupancy::EMULATOR);
    let mut arrivals = vec![0u32; super::arrivals_needed(kernel, shape.grid)];
    for launch in 0..2 {
        let mut c = poisoned(m * n + GUARD);
        let args = (
            a.as_ptr(),
            b.as_ptr(),
            c.as_mut_ptr(),
            problem.m,
            problem.n,
            problem.k,
            arrivals.as_mut_ptr(),
        );
        // SAFETY: A, B and C hold m·k, k·n and m·n elements; a zeroed counter per tile.
        unsafe { kernel.code.emulate(&shape, args) }.unwrap();
        let what = format!("{} at {m}×{n}×{k}, launch {launch}", kernel.entry());
        assert_matches(&what, &c, &expected);
        assert!(
            arrivals.iter().all(|&count| count == 0),
            "{what}: counters {arrivals:?}"
        );
    }
    shape.grid
}
