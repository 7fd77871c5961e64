//! Products with A of up to 16 rows on the tensor cores: A's rows are the 16-row side of
//! `mma.sync` m16n8k8 on TF32, and B streams through once. [`super::small_m`] multiplies on the
//! CUDA cores, where sixteen rows cost sixteen multiply-adds per element of B and twice B's reads
//! (two row groups of eight); here they cost one `mma` per 8 columns and [`MmaOperands::K`] rows
//! of B, whatever the rows. The TF32 ladder's rung (`matmul_tc_small_m16`); the bf16 ladders'
//! packs two rows of B into a register and reads B 16 bytes at a time
//! ([`crate::matmul_bf16::small_m16`]).
//!
//! * A block takes a strip of [`COLUMNS`] columns and a run of k ([`super::k_runs`], enough runs
//!   that one wave fills the GPU); each warp takes 8 × [`TILES`] of the strip's columns over the
//!   whole run, so the warps never meet.
//! * No shared memory: each lane loads its fragments of B straight from global memory, element
//!   by element (a TF32 register holds one element of B, row lane % 4 and 4 more, column
//!   lane / 4), so a warp's load covers whole 32-byte sectors of four rows. A's fragments (16
//!   rows, loaded by every warp) hit L1.
//! * A chunk of [`STEPS`] `mma` steps of k is loaded while the one before it is multiplied.
//!
//! Rows of A past 16 go to further blocks beside the same strip (grid x, the row group fastest,
//! as [`super::small_m`]), each reading B again (from L2 where the groups run together).

use super::k_runs::{meet_in_c, run_of_k};
use super::small_m::MIN_RUN;
use ptxkit::device::mma::{accumulator_position, mma_tf32_m16n8k8, tf32_a_position, tf32_b_position};
use ptxkit::device::{block_idx, global_store, lane_id, red_add, thread_idx, unrolled};
use ptxkit::{Dim3, Occupancy};

/// Rows of A per block: the `mma`'s.
pub const ROWS: u32 = 16;
/// Warps per block, side by side along the strip.
pub const WARPS: u32 = 8;
pub const THREADS: u32 = 32 * WARPS;
/// 8-column tiles of C per warp.
pub const TILES: u32 = 4;
/// Columns of C per block.
pub const COLUMNS: u32 = WARPS * TILES * 8;
/// `mma` steps per chunk.
pub const STEPS: u32 = 2;

/// How a ladder's operands enter the `mma`: the element, the k of one `mma`, and where each
/// element of a lane's fragments sits.
pub trait MmaOperands {
    type Element: Copy;
    /// Rows of k per `mma`.
    const K: u32;
    /// Elements per 32-bit register of a fragment.
    const PER_REGISTER: u32;
    /// An element's bits, placed as element `e` of a register.
    fn bits(x: Self::Element, e: u32) -> u32;
    /// Row and column of element `e` of A-register `r` of `lane`.
    fn a_position(lane: u32, r: u32, e: u32) -> (u32, u32);
    /// Row (k) and column of element `e` of B-register `r` of `lane`.
    fn b_position(lane: u32, r: u32, e: u32) -> (u32, u32);
    /// `D = A·B + C` on the warp's fragments.
    fn mma(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4];
}

/// f32 operands read as TF32 (the tensor cores ignore the low 13 mantissa bits): m16n8k8.
pub struct Tf32Mma;

impl MmaOperands for Tf32Mma {
    type Element = f32;
    const K: u32 = 8;
    const PER_REGISTER: u32 = 1;
    #[inline(always)]
    fn bits(x: f32, _e: u32) -> u32 {
        x.to_bits()
    }
    #[inline(always)]
    fn a_position(lane: u32, r: u32, _e: u32) -> (u32, u32) {
        tf32_a_position(lane, r)
    }
    #[inline(always)]
    fn b_position(lane: u32, r: u32, _e: u32) -> (u32, u32) {
        tf32_b_position(lane, r)
    }
    #[inline(always)]
    fn mma(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
        mma_tf32_m16n8k8(a, b, c)
    }
}

/// One chunk's fragments: A's (per step), B's (per step and tile).
type Chunk = ([[u32; 4]; STEPS as usize], [[[u32; 2]; TILES as usize]; STEPS as usize]);

/// This lane's fragments of the chunk from `kk`: zeros past `end` where `TAIL` (else the chunk is
/// whole), past m (`rows_in`: A's rows lane / 4 and 8 more) and past n (`cols_in`: B's column
/// lane / 4 of each tile).
///
/// # Safety
/// `a` and `b` hold m·k and k·n elements; `end` ≤ k; without `TAIL`, kk + [`STEPS`]·K ≤ end.
#[inline(always)]
unsafe fn chunk_at<O: MmaOperands, const TAIL: bool>(
    (a, b): (*const O::Element, *const O::Element),
    (n, k, kk, end): (u32, u32, u32, u32),
    (row0, col0): (u32, u32),
    (rows_in, cols_in): ([bool; 2], [bool; TILES as usize]),
) -> Chunk {
    let lane = lane_id();
    let mut fa = [[0u32; 4]; STEPS as usize];
    let mut fb = [[[0u32; 2]; TILES as usize]; STEPS as usize];
    unrolled::<STEPS>(
        #[inline(always)]
        |s| {
            unrolled::<4>(
                #[inline(always)]
                |r| {
                    unrolled_to_per_register::<O>(
                        #[inline(always)]
                        |e| {
                            let (row, col) = O::a_position(lane, r, e);
                            let at = kk + s * O::K + col;
                            // Register r holds row lane / 4, and 8 more where r is odd (both shapes).
                            if rows_in[(r % 2) as usize] && (!TAIL || at < end) {
                                // SAFETY: row0 + row < m and at < k: inside A.
                                let x = unsafe { *a.add((row0 + row) as usize * k as usize + at as usize) };
                                fa[s as usize][r as usize] |= O::bits(x, e);
                            }
                        },
                    );
                },
            );
            unrolled::<2>(
                #[inline(always)]
                |r| {
                    unrolled_to_per_register::<O>(
                        #[inline(always)]
                        |e| {
                            let (row, col) = O::b_position(lane, r, e);
                            let at = kk + s * O::K + row;
                            if !TAIL || at < end {
                                let line = at as usize * n as usize + (col0 + col) as usize;
                                unrolled::<TILES>(
                                    #[inline(always)]
                                    |t| {
                                        if cols_in[t as usize] {
                                            // SAFETY: at < k and col0 + col + 8t < n: inside B.
                                            let x = unsafe { *b.add(line + 8 * t as usize) };
                                            fb[s as usize][t as usize][r as usize] |= O::bits(x, e);
                                        }
                                    },
                                );
                            }
                        },
                    );
                },
            );
        },
    );
    (fa, fb)
}

/// Calls `f(e)` for each element `e` of a fragment register.
#[inline(always)]
fn unrolled_to_per_register<O: MmaOperands>(f: impl FnMut(u32)) {
    ptxkit::device::unrolled_to(O::PER_REGISTER, f);
}

/// `C = A·B` for A of up to 16 rows per block (the module's doc).
///
/// # Safety
/// `a`, `b`, `c` hold m·k, k·n and m·n elements; where the grid is more than one deep, `arrivals`
/// holds a zeroed counter per block of the grid's first layer; the block has [`THREADS`] threads;
/// the grid is [`grid`]'s.
#[inline(always)]
pub unsafe fn small_m_mma<O: MmaOperands>(
    (a, b, c): (*const O::Element, *const O::Element, *mut f32),
    (m, n, k): (u32, u32, u32),
    arrivals: *mut u32,
) {
    let chunk = STEPS * O::K;
    let (begin, end, runs) = run_of_k_for::<O>(k);
    if begin == end {
        // Past k: not one of the runs (the whole block leaves).
        return;
    }
    let lane = lane_id();
    let groups = m.div_ceil(ROWS);
    let row0 = (block_idx().x % groups) * ROWS;
    let col0 = (block_idx().x / groups) * COLUMNS + (thread_idx().x / 32) * TILES * 8;
    // Which of this lane's rows of A (lane / 4 and 8 more) and columns of B (one per tile) exist.
    let rows_in = [row0 + lane / 4 < m, row0 + lane / 4 + 8 < m];
    let cols_in: [bool; TILES as usize] = core::array::from_fn(|t| col0 + 8 * t as u32 + lane / 4 < n);
    let at = |kk: u32| (n, k, kk, end);
    let mut acc = [[0.0f32; 4]; TILES as usize];
    let multiply = #[inline(always)]
    |acc: &mut [[f32; 4]; TILES as usize], (fa, fb): Chunk| {
        unrolled::<STEPS>(
            #[inline(always)]
            |s| {
                unrolled::<TILES>(
                    #[inline(always)]
                    |t| {
                        let (s, t) = (s as usize, t as usize);
                        acc[t] = O::mma(fa[s], fb[s][t], acc[t]);
                    },
                )
            },
        );
    };
    let whole_end = begin + (end - begin) / chunk * chunk;
    let mut kk = begin;
    if kk < whole_end {
        // SAFETY: kk + chunk ≤ whole_end ≤ end ≤ k (the same below).
        let mut current = unsafe { chunk_at::<O, false>((a, b), at(kk), (row0, col0), (rows_in, cols_in)) };
        while kk + chunk < whole_end {
            let next = unsafe { chunk_at::<O, false>((a, b), at(kk + chunk), (row0, col0), (rows_in, cols_in)) };
            multiply(&mut acc, current);
            current = next;
            kk += chunk;
        }
        multiply(&mut acc, current);
        kk += chunk;
    }
    if kk < end {
        // The run's short last chunk (k's end).
        // SAFETY: kk < end ≤ k, every load past `end` skipped.
        let tail = unsafe { chunk_at::<O, true>((a, b), at(kk), (row0, col0), (rows_in, cols_in)) };
        multiply(&mut acc, tail);
    }

    let place = (m, n, row0, col0);
    // SAFETY: every output lies inside C; `arrivals` as the caller gives it, one counter per
    // block of the first layer (its x).
    unsafe {
        meet_in_c(
            arrivals,
            runs,
            // SAFETY: inside C.
            || each_output(place, &acc, |i, value| global_store(c.add(i), value)),
            // SAFETY: inside C.
            || each_output(place, &acc, |i, value| red_add(c.add(i), value)),
        )
    }
}

/// This block's run of k: whole chunks of `STEPS` `mma`s (TF32's 16 rows, bf16's 32).
#[inline(always)]
fn run_of_k_for<O: MmaOperands>(k: u32) -> (u32, u32, u32) {
    if O::K == 8 {
        run_of_k::<{ STEPS * 8 }>(k)
    } else {
        run_of_k::<{ STEPS * 16 }>(k)
    }
}

/// Calls `out(index in C, sum)` for each of this lane's sums inside C.
#[inline(always)]
fn each_output(
    (m, n, row0, col0): (u32, u32, u32, u32),
    acc: &[[f32; 4]; TILES as usize],
    mut out: impl FnMut(usize, f32),
) {
    let lane = lane_id();
    unrolled::<TILES>(
        #[inline(always)]
        |t| {
            unrolled::<4>(
                #[inline(always)]
                |r| {
                    let (row, col) = accumulator_position(lane, r);
                    let (row, col) = (row0 + row, col0 + 8 * t + col);
                    if row < m && col < n {
                        out(row as usize * n as usize + col as usize, acc[t as usize][r as usize]);
                    }
                },
            )
        },
    );
}

/// The launch grid: a block per row group of 16 and strip of [`COLUMNS`] (x, the row group
/// fastest), k split so that one wave of the device's resident blocks is full (z).
pub const fn grid((m, n, k): (u32, u32, u32), device: Occupancy) -> Dim3 {
    super::small_m::grid((m, n, k), ROWS, COLUMNS, device)
}

/// The shortest run of k: the CUDA-core rungs' ([`MIN_RUN`]), a whole number of chunks of both
/// operand types.
const _: () = assert!(MIN_RUN.is_multiple_of(STEPS * 16));
