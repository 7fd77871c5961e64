//! Rung 4: the row held in registers between the statistics and the outputs, each element read
//! from global memory once and written once, with no shared-memory copy of the row. Up to
//! [`NARROW_COLS`] columns a group of [`group_lanes`] lanes takes a row (a warp several rows at
//! once, and row after row: a block of eight warps per row or two took so little work that the
//! GPU spent its time starting blocks); up to [`WARP_COLS`] columns a warp takes a row (eight rows
//! per block, no barrier at all); up to [`BLOCK_COLS`] the block takes one; longer rows are read
//! twice, as in the online rung.
//!
//! With every element in registers the statistics need no running rescale: each thread's maximum,
//! the group's maximum, then e^(x − maximum) in place of x and the group's sum of those: one e^x
//! per element, and one division per row (the outputs are multiplied by the sum's reciprocal).
//! Each thread's loads are all issued before any is used (up to eight 16-byte loads in flight per
//! thread).

use super::online::{Pairs, online_row};
use super::{Softmax, THREADS, WARPS, block_max, block_sum, row_views};
use crate::reduce::{Max, Sum, group_combine, warp_combine};
use ptxkit::device::{
    Float4, GlobalSlice, GlobalSliceMut, WARP_SIZE, block_idx, exp, grid_dim, is_aligned4, thread_idx, unrolled,
};
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory, kernel};

/// 16-byte vectors each thread holds.
pub const VECTORS: u32 = 8;
/// Elements each thread holds.
pub const SLOTS: u32 = 4 * VECTORS;
/// The longest row a warp takes.
pub const WARP_COLS: u32 = WARP_SIZE * SLOTS;
/// The longest row held in registers (a block per row).
pub const BLOCK_COLS: u32 = THREADS * SLOTS;

/// Whether rows of `cols` go one to a warp.
pub const fn by_warp(cols: u32) -> bool {
    cols <= WARP_COLS
}

/// The most 16-byte vectors a thread holds in [`row_in_registers`].
pub const MAX_VECTORS: u32 = 16;

/// 16-byte vectors' worth of a narrow row each lane holds.
pub const NARROW_VECTORS: u32 = 2;
/// The widest row a group of fewer than 32 lanes takes: 16 lanes of [`NARROW_VECTORS`].
pub const NARROW_COLS: u32 = 16 * 4 * NARROW_VECTORS;

/// The lanes that take a row of `cols` ≤ [`NARROW_COLS`] columns: the fewest (a power of two) that
/// hold it at [`NARROW_VECTORS`] vectors' worth a lane.
pub const fn group_lanes(cols: u32) -> u32 {
    cols.div_ceil(4 * NARROW_VECTORS).next_power_of_two()
}

/// The softmax of the row `src` into `dst`, held in registers: this thread holds `V` (at most
/// [`MAX_VECTORS`]) 16-byte vectors' worth of the columns of member `me` of a `group` of threads
/// (cols ≤ 4·`V`·`group`), and `max_of` and `sum_of` combine a value over the group (every member
/// calls each once).
///
/// # Safety
/// `src` and `dst` hold `cols` elements.
#[inline(always)]
pub(super) unsafe fn row_in_registers<const V: u32>(
    (src, dst): (GlobalSlice<f32>, GlobalSliceMut<f32>),
    cols: u32,
    (me, group): (u32, u32),
    max_of: impl FnOnce(f32) -> f32,
    sum_of: impl FnOnce(f32) -> f32,
) {
    // Tested once, here: each path is its own copy of the body, so the vector one carries none
    // of the scalar path's per-element `c < cols` predicates (kept live to the stores, they cost
    // registers and bit-packing instructions in the SASS: docs/perf-log.md, change 25).
    let vector = cols.is_multiple_of(4) && is_aligned4(src.as_ptr()) && is_aligned4(dst.as_mut_ptr());
    // SAFETY: forwarded; the vector path is taken only with both rows 16-byte aligned and
    // cols a multiple of 4.
    unsafe { row_in_registers_as::<V>((src, dst), cols, (me, group), vector, max_of, sum_of) }
}

/// [`row_in_registers`] with the path given: by 16-byte vectors (`vector`: both rows 16-byte
/// aligned, `cols` a multiple of 4) or by elements. A warp whose groups take several rows takes
/// one path for all of them, so that their shuffles meet.
///
/// # Safety
/// As for [`row_in_registers`]; with `vector`, `src` and `dst` are 16-byte aligned and `cols` is
/// a multiple of 4.
#[inline(always)]
unsafe fn row_in_registers_as<const V: u32>(
    (src, dst): (GlobalSlice<f32>, GlobalSliceMut<f32>),
    cols: u32,
    (me, group): (u32, u32),
    vector: bool,
    max_of: impl FnOnce(f32) -> f32,
    sum_of: impl FnOnce(f32) -> f32,
) {
    // SAFETY: forwarded.
    unsafe {
        if vector {
            row_body::<V, true>((src, dst), cols, (me, group), max_of, sum_of)
        } else {
            row_body::<V, false>((src, dst), cols, (me, group), max_of, sum_of)
        }
    }
}

/// [`row_in_registers`] by 16-byte vectors (`VECTOR`) or by single elements.
///
/// # Safety
/// As for [`row_in_registers`]; with `VECTOR`, `src` and `dst` are 16-byte aligned and `cols` is a
/// multiple of 4.
#[inline(always)]
unsafe fn row_body<const V: u32, const VECTOR: bool>(
    (src, dst): (GlobalSlice<f32>, GlobalSliceMut<f32>),
    cols: u32,
    (me, group): (u32, u32),
    max_of: impl FnOnce(f32) -> f32,
    sum_of: impl FnOnce(f32) -> f32,
) {
    const { assert!(V <= MAX_VECTORS) };
    // Slot (j, k) of this thread is column 4·(me + group·j) + k (vector) or me + group·(4j + k);
    // slots past the row hold −∞ and are left out of the sum. Every index is a constant once
    // unrolled, so the slots are registers (the unused ones vanish).
    let column = |j: u32, k: u32| me + group * (4 * j + k);
    // Whether vector j of this thread is inside the row (vector path), for the loads; the later
    // phases test its first column instead (the same test, cols being a multiple of 4). Written
    // apart, it is computed again there: one shared result was kept in eight predicates across
    // the reductions, which ptxas packed into a register, holding back two of the loads.
    let holds = |j: u32| me + group * j < cols / 4;
    let still_holds = |j: u32| 4 * (me + group * j) < cols;
    // Addresses as this thread's first column plus each slot's distance from it, widened
    // apart: with `group` a constant, one address and an immediate offset per slot (the column
    // widened whole costs a 64-bit address per slot).
    let first = if VECTOR { 4 * me } else { me } as usize;
    let (src, dst) = (src.tail(first), dst.tail(first));
    let offset = |j: u32, k: u32| (if VECTOR { 4 * group * j } else { group * (4 * j + k) }) as usize;
    let mut x = [[f32::NEG_INFINITY; 4]; MAX_VECTORS as usize];
    unrolled::<V>(|j| {
        if VECTOR {
            if holds(j) {
                // SAFETY: float4 me + group·j is inside the row, 16-byte aligned.
                x[j as usize] = unsafe { src.get4_unchecked(offset(j, 0)) }.0;
            }
        } else {
            unrolled::<4>(|k| {
                if column(j, k) < cols {
                    // SAFETY: the column is inside the row.
                    x[j as usize][k as usize] = unsafe { src.get_unchecked(offset(j, k)) };
                }
            });
        }
    });
    let mut m = f32::NEG_INFINITY;
    unrolled::<V>(|j| {
        unrolled::<4>(|k| {
            m = if x[j as usize][k as usize] > m {
                x[j as usize][k as usize]
            } else {
                m
            }
        })
    });
    let m = max_of(m);
    // e^(x − m) in place. Vector slots past the row are skipped a vector at a time (short rows
    // leave most of them empty); on the scalar path every slot is taken, the empty ones' −∞ giving
    // e^x = 0 (a predicate per slot would cost more registers than the exponentials cost time).
    let mut sum = 0.0f32;
    unrolled::<V>(|j| {
        if !VECTOR || still_holds(j) {
            unrolled::<4>(|k| {
                let e = exp(x[j as usize][k as usize] - m);
                x[j as usize][k as usize] = e;
                sum += e;
            })
        }
    });
    let scale = 1.0 / sum_of(sum);
    unrolled::<V>(|j| {
        if VECTOR {
            if still_holds(j) {
                let four = Float4(x[j as usize].map(|e| e * scale));
                // SAFETY: as for the loads.
                unsafe { dst.set4_unchecked(offset(j, 0), four) };
            }
        } else {
            unrolled::<4>(|k| {
                if column(j, k) < cols {
                    // SAFETY: the column is inside the row.
                    unsafe { dst.at_unchecked(offset(j, k)).set(x[j as usize][k as usize] * scale) };
                }
            });
        }
    });
}

/// Rows of `cols` ≤ [`NARROW_COLS`] by groups of `G` lanes: each warp takes 32 / `G` rows at a
/// time, its batches of rows a grid's warps apart.
///
/// # Safety
/// `input` and `output` hold `rows × cols` elements; `G` is [`group_lanes`]`(cols)`; the block has
/// [`THREADS`] threads.
#[inline(always)]
unsafe fn narrow_rows<const G: u32>((input, output): (GlobalSlice<f32>, GlobalSliceMut<f32>), rows: u32, cols: u32) {
    let t = thread_idx().x;
    let lane = t % WARP_SIZE;
    let per_warp = WARP_SIZE / G;
    let batches = rows.div_ceil(per_warp);
    // Every row starts on a 16-byte boundary or none does: one path for the whole grid.
    let vector = cols.is_multiple_of(4) && is_aligned4(input.as_ptr()) && is_aligned4(output.as_mut_ptr());
    let mut batch = block_idx().x * WARPS + t / WARP_SIZE;
    // Uniform over the warp, whose lanes meet in the shuffles.
    while batch < batches {
        // Wide, as the last batch's groups may count past u32 (rows near 2^32).
        let row = batch as usize * per_warp as usize + (lane / G) as usize;
        // A group past the last row takes that row with no columns: it loads and stores nothing
        // but still meets its warp's shuffles.
        let (row, width) = if row < rows as usize {
            (row, cols)
        } else {
            (rows as usize - 1, 0)
        };
        // SAFETY: the row is inside the matrix; a width of 0 touches none of it; `vector` holds
        // for every row alike.
        unsafe {
            row_in_registers_as::<NARROW_VECTORS>(
                row_views((input, output), row * cols as usize, cols),
                width,
                (lane % G, G),
                vector,
                group_combine::<Max, G>,
                group_combine::<Sum, G>,
            )
        };
        batch += grid_dim().x * WARPS;
    }
}

kernel! {
    /// Rows up to NARROW_COLS: warps taking a batch of rows by groups of lanes, batch after batch;
    /// warp w of block b: the softmax of row 8b + w (rows up to WARP_COLS); block b: the softmax
    /// of row b (longer rows).
    pub unsafe fn softmax_registers(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, rows: u32, cols: u32) {
        let Pairs { maxes, sums } = Pairs::carve();
        if cols <= NARROW_COLS {
            // One body per group size, its shuffles and slots constants.
            // SAFETY: forwarded from the kernel's contract; G is group_lanes(cols).
            unsafe {
                match group_lanes(cols) {
                    1 => narrow_rows::<1>((input, output), rows, cols),
                    2 => narrow_rows::<2>((input, output), rows, cols),
                    4 => narrow_rows::<4>((input, output), rows, cols),
                    8 => narrow_rows::<8>((input, output), rows, cols),
                    _ => narrow_rows::<16>((input, output), rows, cols),
                }
            }
            return;
        }
        if cols > BLOCK_COLS {
            // SAFETY: forwarded from the kernel's contract; KERNEL launches THREADS threads.
            unsafe { online_row::<THREADS, WARPS>((maxes, sums), input, output, block_idx().x, cols) };
            return;
        }
        let t = thread_idx().x;
        // Each path calls the body with its group size a constant: every slot's column is then
        // me plus a constant, an immediate offset from one address (with the group chosen at run
        // time, the scalar path kept all 32 slots' 64-bit addresses live: 168 registers).
        if by_warp(cols) {
            let row = block_idx().x * WARPS + t / WARP_SIZE;
            // Only a whole warp leaves here (its lanes share the row); the warp path has no
            // barrier.
            if row >= rows {
                return;
            }
            let base = row as usize * cols as usize;
            // SAFETY: the row is inside the matrix.
            unsafe {
                row_in_registers::<VECTORS>(
                    row_views((input, output), base, cols),
                    cols,
                    (t % WARP_SIZE, WARP_SIZE),
                    warp_combine::<Max>,
                    warp_combine::<Sum>,
                )
            };
        } else {
            let row = block_idx().x;
            // The whole block leaves together (a grid larger than KERNEL's).
            if row >= rows {
                return;
            }
            let base = row as usize * cols as usize;
            // SAFETY: the row is inside the matrix; the block has THREADS threads, all calling
            // both reductions (the path depends on cols alone).
            unsafe {
                row_in_registers::<VECTORS>(
                    row_views((input, output), base, cols),
                    cols,
                    (t, THREADS),
                    |m| block_max::<WARPS>(maxes, m),
                    |s| block_sum::<WARPS>(sums, s),
                )
            };
        }
    }
}

/// Blocks for rows of `cols` ≤ [`NARROW_COLS`]: a warp per batch of rows, up to the blocks the
/// GPU holds at once (the warps then go round again).
pub const fn narrow_grid(rows: u32, cols: u32, device: Occupancy) -> u32 {
    device.at_most_resident(rows.div_ceil(WARP_SIZE / group_lanes(cols)).div_ceil(WARPS))
}

/// 256 threads per block: batches of rows by groups of lanes up to [`NARROW_COLS`] columns, eight
/// rows per block up to [`WARP_COLS`], one row per block beyond.
pub const KERNEL: Kernel<Softmax> = Kernel {
    code: softmax_registers,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Pairs::BYTES),
    grid: |p, device| {
        Dim3::x(if p.cols <= NARROW_COLS {
            narrow_grid(p.rows, p.cols, device)
        } else if by_warp(p.cols) {
            p.rows.div_ceil(WARPS)
        } else {
            p.rows
        })
    },
};
