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
use super::{Softmax, THREADS, WARPS, block_max, block_sum};
use crate::device::{
    Float4, WARP_SIZE, block_idx, exp, global_store, is_aligned4, lane_id, load4, store4, thread_idx, unrolled,
};
use crate::reduce::{Max, Sum, warp_combine};
use crate::{Dim3, Kernel, LaunchBounds, SharedMemory, kernel};

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

/// The softmax of the row at `src` into `dst`, held in registers: this thread holds `V` (at most
/// [`MAX_VECTORS`]) 16-byte vectors' worth of the columns of member `me` of a `group` of threads
/// (cols ≤ 4·`V`·`group`), and `max_of` and `sum_of` combine a value over the group (every member
/// calls each once).
///
/// # Safety
/// `src` and `dst` hold `cols` elements.
#[inline(always)]
pub(super) unsafe fn row_in_registers<const V: u32>(
    (src, dst): (*const f32, *mut f32),
    cols: u32,
    (me, group): (u32, u32),
    max_of: impl FnOnce(f32) -> f32,
    sum_of: impl FnOnce(f32) -> f32,
) {
    const { assert!(V <= MAX_VECTORS) };
    let vector = cols.is_multiple_of(4) && is_aligned4(src) && is_aligned4(dst);
    // Slot (j, k) of this thread is column 4·(me + group·j) + k (vector) or me + group·(4j + k);
    // slots past the row hold −∞ and are left out of the sum. Every index is a constant once
    // unrolled, so the slots are registers (the unused ones vanish).
    let column = |j: u32, k: u32| {
        if vector {
            4 * (me + group * j) + k
        } else {
            me + group * (4 * j + k)
        }
    };
    let mut x = [[f32::NEG_INFINITY; 4]; MAX_VECTORS as usize];
    unrolled::<V>(|j| {
        if vector {
            let q = me + group * j;
            if q < cols / 4 {
                // SAFETY: float4 q is inside the row, 16-byte aligned.
                x[j as usize] = unsafe { load4(src.add(4 * q as usize)) }.0;
            }
        } else {
            unrolled::<4>(|k| {
                let c = column(j, k);
                if c < cols {
                    // SAFETY: c < cols, inside the row.
                    x[j as usize][k as usize] = unsafe { *src.add(c as usize) };
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
        if !vector || me + group * j < cols / 4 {
            unrolled::<4>(|k| {
                let e = exp(x[j as usize][k as usize] - m);
                x[j as usize][k as usize] = e;
                sum += e;
            })
        }
    });
    let scale = 1.0 / sum_of(sum);
    unrolled::<V>(|j| {
        if vector {
            let q = me + group * j;
            if q < cols / 4 {
                let four = Float4(x[j as usize].map(|e| e * scale));
                // SAFETY: as for the loads.
                unsafe { store4(dst.add(4 * q as usize), four) };
            }
        } else {
            unrolled::<4>(|k| {
                let c = column(j, k);
                if c < cols {
                    // SAFETY: c < cols, inside the row.
                    unsafe { global_store(dst.add(c as usize), x[j as usize][k as usize] * scale) };
                }
            });
        }
    });
}

kernel! {
    /// Warp w of block b: the softmax of row 8b + w (rows up to WARP_COLS); block b: the softmax
    /// of row b (longer rows).
    pub unsafe fn softmax_registers(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        let Pairs { maxes, sums } = Pairs::carve();
        if cols > BLOCK_COLS {
            // SAFETY: forwarded from the kernel's contract; KERNEL launches THREADS threads.
            unsafe { online_row::<THREADS, WARPS>((maxes, sums), input, output, block_idx().x, cols) };
            return;
        }
        let t = thread_idx().x;
        let warp_rows = by_warp(cols);
        let (row, me, group) = if warp_rows {
            (block_idx().x * WARPS + t / WARP_SIZE, lane_id(), WARP_SIZE)
        } else {
            (block_idx().x, t, THREADS)
        };
        // Only a whole warp leaves here (its lanes share the row), and only on the warp path,
        // which has no barrier.
        if row >= rows {
            return;
        }
        let base = row as usize * cols as usize;
        // SAFETY (the row and both reductions): the row is inside the matrix; the block has
        // THREADS threads, and the reduction's kind is the same for every thread of the block (it
        // depends on cols alone).
        unsafe {
            row_in_registers::<VECTORS>(
                (input.wrapping_add(base), output.wrapping_add(base)),
                cols,
                (me, group),
                |m| if warp_rows { warp_combine::<Max>(m) } else { block_max::<WARPS>(maxes, m) },
                |s| if warp_rows { warp_combine::<Sum>(s) } else { block_sum::<WARPS>(sums, s) },
            )
        };
    }
}

/// 256 threads per block: eight rows per block up to [`WARP_COLS`] columns, one row per block
/// beyond.
pub const KERNEL: Kernel<Softmax> = Kernel {
    code: softmax_registers,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Pairs::BYTES),
    grid: |p| {
        Dim3::x(if by_warp(p.cols) {
            p.rows.div_ceil(WARPS)
        } else {
            p.rows
        })
    },
    bounds: LaunchBounds::NONE,
};
