//! Rung 4: the row held in registers between the statistics and the outputs, each element read
//! from global memory once and written once, with no shared-memory copy of the row. Up to
//! [`WARP_COLS`] columns a warp takes a row (eight rows per block, no barrier at all); up to
//! [`BLOCK_COLS`] the block takes one; longer rows are read twice, as in the online rung.
//!
//! With every element in registers the statistics need no running rescale: each thread's maximum,
//! the group's maximum, then e^(x − maximum) in place of x and the group's sum of those: one e^x
//! per element, and one division per row (the outputs are multiplied by the sum's reciprocal).
//! Each thread's loads are all issued before any is used (up to eight 16-byte loads in flight per
//! thread).

use super::online::{Pairs, online_row};
use super::{Softmax, THREADS, WARPS, block_max, block_sum, row_views};
use crate::reduce::{Max, Sum, warp_combine};
use ptxkit::device::{
    Float4, GlobalSlice, GlobalSliceMut, WARP_SIZE, block_idx, exp, is_aligned4, thread_idx, unrolled,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};

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

kernel! {
    /// Warp w of block b: the softmax of row 8b + w (rows up to WARP_COLS); block b: the softmax
    /// of row b (longer rows).
    pub unsafe fn softmax_registers(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, rows: u32, cols: u32) {
        let Pairs { maxes, sums } = Pairs::carve();
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

/// 256 threads per block: eight rows per block up to [`WARP_COLS`] columns, one row per block
/// beyond.
pub const KERNEL: Kernel<Softmax> = Kernel {
    code: softmax_registers,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Pairs::BYTES),
    grid: |p, _| {
        Dim3::x(if by_warp(p.cols) {
            p.rows.div_ceil(WARPS)
        } else {
            p.rows
        })
    },
};
