//! The bf16 ladders' rung for A of up to 16 rows on the tensor cores: A's rows are the 16-row side
//! of `mma.sync` m16n8k16 and B streams through once, read 16 bytes at a time.
//!
//! An `mma`'s B register holds two rows of k of one column, but B is stored with its columns
//! side by side: loaded as it sits, a register costs two 2-byte loads, half a sector each (the
//! TF32 form of [`crate::matmul::small_m_mma`], which ran slower than a 128-row tile here:
//! docs/perf-log.md, change 140). Here each lane loads 16 bytes, eight columns, from each of its
//! four rows of a step of k, and packs the halves of two rows into registers: column `j` of the
//! lane's eight is column `lane / 4` of `mma` tile `j`. So tile `j`'s column q is C's column
//! `8·q + j` of the warp's 64, and the sums a lane ends with are sixteen consecutive columns of
//! two rows, stored as they are.
//!
//! * A block takes a strip of [`COLUMNS`] columns and a run of k ([`crate::matmul::k_runs`]); each
//!   warp 64 of the strip's columns over the whole run, its own sums, so the warps never meet.
//! * A's fragments (16 rows, loaded by every warp) hit L1.
//! * A chunk of [`STEPS`] steps of k is loaded while the one before it is multiplied.
//! * Each warp's runs meet on a counter of their own ([`counters`]): in C itself where C is f32,
//!   in f32 partial sums where it is bf16, rounded into C by the last to arrive.
//!
//! Rows of A past 16 go to further blocks beside the same strip (grid x, the row group fastest).
//!
//! Not `auto`'s pick: B streams at 1.8–2.5 TB/s where k is cut into few runs, and short runs (n of
//! 4096) pay a block's start and its meeting for little of B, so the persistent tiles ran as fast
//! or faster at most of the model shapes' 16-row products (docs/perf-log.md, change 150). On
//! Hopper, [`super::swapped`] takes them.

use super::MatmulBf16;
use super::rounded::round_partials;
use crate::matmul::k_runs::{meet_in_c_warp, meet_in_partials_warp, run_of_k, splits_to_fill};
use crate::matmul::output::Out;
use crate::matmul::small_m::{MIN_RUN, aligned};
use ptxkit::device::mma::{Bf16, mma_bf16_m16n8k16};
use ptxkit::device::{block_idx, global_store, grid_dim, lane_id, load4, red_add, thread_idx, unrolled};
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory, kernel};

/// Rows of A per block: the `mma`'s.
pub const ROWS: u32 = 16;
/// Warps per block, side by side along the strip.
pub const WARPS: u32 = 8;
pub const THREADS: u32 = 32 * WARPS;
/// Columns of C per warp: eight lanes' 16-byte loads of B side by side.
pub const WARP_COLUMNS: u32 = 64;
/// Columns of C per block.
pub const COLUMNS: u32 = WARPS * WARP_COLUMNS;
/// `mma` steps (16 rows of k each) per chunk.
pub const STEPS: u32 = 4;
/// Rows of k per chunk: runs of k are whole chunks.
const CHUNK: u32 = 16 * STEPS;
/// The `mma` tiles (8 columns each) of a warp's columns.
const TILES: usize = (WARP_COLUMNS / 8) as usize;
/// A block's fixed cost (its start and its meeting) in rows of k, for [`splits_to_fill`].
pub const FIXED_ROWS: u32 = 256;
/// f32 partial sums per counter where C is bf16 and k is cut into runs: a warp's 16 rows × 64.
pub const PARTIALS_PER_COUNTER: u32 = ROWS * WARP_COLUMNS;

/// The rows of k of a step that a lane loads (as offsets from `2·(lane % 4)`): an `mma` B
/// register's two rows, then its second register's two.
const B_ROWS: [u32; 4] = [0, 1, 8, 9];

/// One chunk as loaded: A's fragments per step, and per step B's 16 bytes of each of the lane's
/// four rows ([`B_ROWS`]).
type Chunk = ([[u32; 4]; STEPS as usize], [[[u32; 4]; 4]; STEPS as usize]);

/// Where the block's lanes load and store: sizes, run, and this lane's first row of A and first
/// column of B.
#[derive(Clone, Copy)]
struct Place {
    m: u32,
    n: u32,
    k: u32,
    end: u32,
    row0: u32,
    col: u32,
}

/// This lane's chunk from `kk`: zeros past `end` where `TAIL` (else the chunk is whole), past m
/// and past n. `VECTOR`: B's rows 16-byte aligned and n a multiple of 8, A's pairs 4-byte aligned
/// (one load per register); else element by element.
///
/// # Safety
/// `a` and `b` hold m·k and k·n elements; `end` ≤ k; without `TAIL`, kk + [`CHUNK`] ≤ end.
#[inline(always)]
unsafe fn chunk_at<const VECTOR: bool, const TAIL: bool>(
    (a, b): (*const Bf16, *const Bf16),
    at: Place,
    kk: u32,
) -> Chunk {
    let Place {
        m,
        n,
        k,
        end,
        row0,
        col,
    } = at;
    let (group, member) = (lane_id() / 4, lane_id() % 4);
    let mut fa = [[0u32; 4]; STEPS as usize];
    let mut fb = [[[0u32; 4]; 4]; STEPS as usize];
    unrolled::<STEPS>(
        #[inline(always)]
        |s| {
            let step = kk + 16 * s + 2 * member;
            unrolled::<4>(
                #[inline(always)]
                |r| {
                    // A register r: row `group` (8 more where r is odd), k `2·member` and the next
                    // (8 more from r = 2).
                    let (row, at) = (row0 + group + 8 * (r % 2), step + 8 * (r / 2));
                    if row >= m {
                        return;
                    }
                    let first = a.wrapping_add(row as usize * k as usize + at as usize);
                    let slot = &mut fa[s as usize][r as usize];
                    if VECTOR && (!TAIL || at < end) {
                        // SAFETY: row < m, at + 1 < end ≤ k (end and at even): inside A, 4-byte aligned.
                        *slot = unsafe { *first.cast::<u32>() };
                    } else if !VECTOR {
                        unrolled::<2>(
                            #[inline(always)]
                            |e| {
                                if !TAIL || at + e < end {
                                    // SAFETY: row < m, at + e < end ≤ k: inside A.
                                    *slot |= (unsafe { *first.add(e as usize) }.0 as u32) << (16 * e);
                                }
                            },
                        );
                    }
                },
            );
            unrolled::<4>(
                #[inline(always)]
                |i| {
                    let row = step + B_ROWS[i as usize];
                    if TAIL && row >= end {
                        return;
                    }
                    let first = b.wrapping_add(row as usize * n as usize + col as usize);
                    let slot = &mut fb[s as usize][i as usize];
                    if VECTOR {
                        if col < n {
                            // SAFETY: row < end ≤ k, col + 8 ≤ n (n a multiple of 8): inside B,
                            // 16-byte aligned.
                            *slot = unsafe { load4(first.cast::<f32>()) }.0.map(f32::to_bits);
                        }
                    } else {
                        unrolled::<8>(
                            #[inline(always)]
                            |q| {
                                if col + q < n {
                                    // SAFETY: row < k, col + q < n: inside B.
                                    let x = unsafe { *first.add(q as usize) };
                                    slot[(q / 2) as usize] |= (x.0 as u32) << (16 * (q % 2));
                                }
                            },
                        );
                    }
                },
            );
        },
    );
    (fa, fb)
}

/// Column `j` of the lane's eight from two of its rows of B, `low` (the lower row of k) in the
/// low half: an `mma` B register of tile `j`.
#[inline(always)]
fn packed(low: [u32; 4], high: [u32; 4], j: u32) -> u32 {
    let (low, high) = (low[(j / 2) as usize], high[(j / 2) as usize]);
    if j.is_multiple_of(2) {
        (low & 0xffff) | (high << 16)
    } else {
        (low >> 16) | (high & 0xffff_0000)
    }
}

/// `acc += ` the chunk's products.
#[inline(always)]
fn multiply(acc: &mut [[f32; 4]; TILES], (fa, fb): Chunk) {
    unrolled::<STEPS>(
        #[inline(always)]
        |s| {
            let (fa, rows) = (fa[s as usize], fb[s as usize]);
            unrolled::<{ TILES as u32 }>(
                #[inline(always)]
                |j| {
                    let fragment = [packed(rows[0], rows[1], j), packed(rows[2], rows[3], j)];
                    acc[j as usize] = mma_bf16_m16n8k16(fa, fragment, acc[j as usize]);
                },
            );
        },
    );
}

/// The lane's sum at column `p` of its sixteen and row `half` of its two: tile `p % 8`'s column
/// `2·(lane % 4) + p / 8`.
#[inline(always)]
fn sum_at(acc: &[[f32; 4]; TILES], half: u32, p: u32) -> f32 {
    acc[(p % 8) as usize][(2 * half + p / 8) as usize]
}

/// `C = A·B` for A of up to 16 rows per block (the module's doc), C of f32 or bf16 ([`Out`]):
/// where C is bf16 and k is cut into runs, each warp's runs meet in its
/// [`PARTIALS_PER_COUNTER`] f32 of `partial_sums`.
///
/// # Safety
/// `a`, `b`, `c` hold m·k, k·n and m·n elements; where the grid is more than one deep, `arrivals`
/// holds [`counters`] zeroed counters and, for a bf16 C, `partial_sums` [`PARTIALS_PER_COUNTER`]
/// f32 per counter; the block has [`THREADS`] threads; the grid is [`grid`]'s.
#[inline(always)]
pub unsafe fn small_m16<C: Out>(
    (a, b, c): (*const Bf16, *const Bf16, *mut C),
    (m, n, k): (u32, u32, u32),
    (arrivals, partial_sums): (*mut u32, *mut f32),
) {
    let (begin, end, runs) = run_of_k::<CHUNK>(k);
    if begin == end {
        // Past k: not one of the runs (the whole block leaves).
        return;
    }
    let (lane, warp) = (lane_id(), thread_idx().x / 32);
    let groups = m.div_ceil(ROWS);
    let row0 = (block_idx().x % groups) * ROWS;
    let warp_col = (block_idx().x / groups) * COLUMNS + warp * WARP_COLUMNS;
    let at = Place {
        m,
        n,
        k,
        end,
        row0,
        col: warp_col + 8 * (lane / 4),
    };
    // The same for every thread of the launch.
    let vector = n.is_multiple_of(8) && k.is_multiple_of(2) && aligned(b, 16) && aligned(a, 4);
    // Two loops, so that the 16-byte one carries no test of the path.
    // SAFETY: forwarded from the caller.
    let acc = unsafe {
        if vector {
            stream::<true>((a, b), at, begin)
        } else {
            stream::<false>((a, b), at, begin)
        }
    };

    // The lane's sixteen columns of rows `lane / 4` and 8 more.
    let first_col = warp_col + 16 * (lane % 4);
    let rows = [row0 + lane / 4, row0 + lane / 4 + 8];
    let write_c = |adding: bool| {
        unrolled::<2>(
            #[inline(always)]
            |half| {
                let row = rows[half as usize];
                if row >= m {
                    return;
                }
                let line = c.wrapping_add(row as usize * n as usize + first_col as usize);
                unrolled::<4>(
                    #[inline(always)]
                    |q| {
                        let four = core::array::from_fn(|e| sum_at(&acc, half, 4 * q + e as u32));
                        let (first, at) = (line.wrapping_add(4 * q as usize), first_col + 4 * q);
                        // SAFETY: inside C (row < m, each column < n), aligned where stored as four.
                        unsafe {
                            if !adding && at + 3 < n && aligned(first, 4 * size_of::<C>()) {
                                C::put4(first, four, false);
                            } else {
                                for e in 0..4 {
                                    if at + e < n {
                                        C::put(first.wrapping_add(e as usize), four[e as usize], adding);
                                    }
                                }
                            }
                        }
                    },
                );
            },
        );
    };
    let place = ((block_idx().y * grid_dim().x + block_idx().x) * WARPS + warp) as usize;
    let arrived = arrivals.wrapping_add(place);
    let run = (block_idx().z, runs);
    if C::ADDS {
        // SAFETY: the warp's counter (the caller's promise); run 0's block starts before any
        // other run's (blocks start in order, run 0 the grid's first layer, all resident).
        unsafe { meet_in_c_warp(arrived, run, write_c) };
        return;
    }
    if runs == 1 {
        write_c(false);
        return;
    }
    let block = partial_sums.wrapping_add(place * PARTIALS_PER_COUNTER as usize);
    let write_partials = |adding: bool| {
        unrolled::<2>(
            #[inline(always)]
            |half| {
                let line = block.wrapping_add(((lane / 4 + 8 * half) * WARP_COLUMNS + 16 * (lane % 4)) as usize);
                unrolled::<16>(
                    #[inline(always)]
                    |p| {
                        let (at, value) = (line.wrapping_add(p as usize), sum_at(&acc, half, p));
                        // SAFETY: inside the warp's partials.
                        unsafe {
                            if adding {
                                red_add(at, value)
                            } else {
                                global_store(at, value)
                            }
                        }
                    },
                );
            },
        );
    };
    // SAFETY: the warp's partials, whole once every run has added (the meeting acquires them);
    // C holds m·n.
    let round = || unsafe { round_partials::<WARP_COLUMNS, C>(block, c, (m, n), (row0, warp_col)) };
    // SAFETY: as for `meet_in_c_warp` above; the partials the caller's.
    unsafe { meet_in_partials_warp(arrived, run, write_partials, round) }
}

/// The lane's sums over the run `begin..at.end`: whole chunks, the next loaded while the current
/// multiplies, then the short last one.
///
/// # Safety
/// As for [`small_m16`]; `VECTOR` only where its condition holds.
#[inline(always)]
unsafe fn stream<const VECTOR: bool>(ab: (*const Bf16, *const Bf16), at: Place, begin: u32) -> [[f32; 4]; TILES] {
    let end = at.end;
    let mut acc = [[0.0f32; 4]; TILES];
    let whole_end = begin + (end - begin) / CHUNK * CHUNK;
    let mut kk = begin;
    if kk < whole_end {
        // SAFETY: kk + CHUNK ≤ whole_end ≤ end ≤ k (the same below).
        let mut current = unsafe { chunk_at::<VECTOR, false>(ab, at, kk) };
        while kk + CHUNK < whole_end {
            let next = unsafe { chunk_at::<VECTOR, false>(ab, at, kk + CHUNK) };
            multiply(&mut acc, current);
            current = next;
            kk += CHUNK;
        }
        multiply(&mut acc, current);
        kk += CHUNK;
    }
    if kk < end {
        // The run's short last chunk (k's end).
        // SAFETY: kk < end ≤ k, every load past `end` skipped.
        multiply(&mut acc, unsafe { chunk_at::<VECTOR, true>(ab, at, kk) });
    }
    acc
}

/// The launch grid: a block per row group of 16 and strip of [`COLUMNS`] (x, the row group
/// fastest), k cut into the runs whose waves finish soonest ([`splits_to_fill`], z).
pub const fn grid((m, n, k): (u32, u32, u32), device: Occupancy) -> Dim3 {
    let tiles = m.div_ceil(ROWS) * n.div_ceil(COLUMNS);
    Dim3::new(
        tiles,
        1,
        splits_to_fill(tiles, device.resident_blocks, k, (MIN_RUN, FIXED_ROWS)),
    )
}

/// The shortest run is whole chunks.
const _: () = assert!(MIN_RUN.is_multiple_of(CHUNK));

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 1)]
    /// `C = A·B` for m ≤ 16 (more rows in more blocks) on the tensor cores: bf16 operands, A's
    /// rows as `mma.sync` m16n8k16's 16, B streamed once 16 bytes a load.
    pub unsafe fn matmul_bf16_small_m16(a: *const Bf16, b: *const Bf16, c: *mut f32, m: u32, n: u32, k: u32, maps: *const super::TensorMaps, arrivals: *mut u32) {
        // Plain loads: no tensor maps.
        let _ = maps;
        // SAFETY: forwarded from the kernel's contract; KERNEL launches the block and grid; an
        // f32 C's runs meet in C itself.
        unsafe { small_m16::<f32>((a, b, c), (m, n, k), (arrivals, core::ptr::null_mut())) }
    }
}

/// The tensor-core 16-row rung.
pub const KERNEL: Kernel<MatmulBf16> = Kernel {
    code: matmul_bf16_small_m16,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(0),
    grid: |p, device| grid((p.m, p.n, p.k), device),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{GUARD, assert_matches, poisoned, random_vec, rng};

    /// The rung on the emulator's 8 places, twice (the counters must be back at zero), C poisoned
    /// each time: the 16-byte path (whole chunks, a short last chunk, k cut into runs) and the
    /// element-wise one (n not a multiple of 8, k odd), one row and several row groups, a strip
    /// part past n: within the f32 sums' bound of the f64 product of the bf16 operands.
    #[test]
    fn every_path_and_edge_meets_in_poisoned_c() {
        let mut rng = rng();
        for (m, n, k) in [
            (1, 1, 1),
            (16, 512, 64),
            (16, 1024, 1024),
            (13, 520, 1000),
            (9, 77, 333),
            (5, 136, 31),
            (33, 130, 250),
        ] {
            let round = |v: Vec<f32>| v.into_iter().map(|x| Bf16::from_f32(x).to_f32()).collect::<Vec<_>>();
            let (a, b) = (round(random_vec(&mut rng, m * k)), round(random_vec(&mut rng, k * n)));
            let expected = crate::reference::matmul(&a, &b, m, n, k);
            let bits = |v: &[f32]| v.iter().map(|&x| Bf16::from_f32(x)).collect::<Vec<_>>();
            let (a, b) = (bits(&a), bits(&b));
            let problem = MatmulBf16::new(m, n, k).unwrap();
            let shape = KERNEL.launch_shape(&problem, Occupancy::EMULATOR);
            let mut arrivals = vec![0u32; super::super::arrivals_needed(&KERNEL, &problem, shape.grid)];
            let what = format!("{m}×{n}×{k}, grid {:?}", shape.grid);
            if k >= 1000 {
                assert!(shape.grid.z > 1, "{what}: k not cut");
            }
            for launch in 0..2 {
                let mut c = poisoned(m * n + GUARD);
                let args = (
                    a.as_ptr(),
                    b.as_ptr(),
                    c.as_mut_ptr(),
                    problem.m,
                    problem.n,
                    problem.k,
                    core::ptr::null(),
                    arrivals.as_mut_ptr(),
                );
                // SAFETY: A, B and C hold m·k, k·n and m·n elements; the counters the launch needs.
                unsafe { KERNEL.code.emulate(&shape, args) }.unwrap();
                assert_matches(&format!("{what}, launch {launch}"), &c, &expected);
                assert!(
                    arrivals.iter().all(|&count| count == 0),
                    "{what}: counters {arrivals:?}"
                );
            }
        }
    }
}
