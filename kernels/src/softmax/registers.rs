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
const SLOTS: u32 = 4 * VECTORS;
/// The longest row a warp takes.
pub const WARP_COLS: u32 = WARP_SIZE * SLOTS;
/// The longest row held in registers (a block per row).
pub const BLOCK_COLS: u32 = THREADS * SLOTS;

/// Whether rows of `cols` go one to a warp.
pub const fn by_warp(cols: u32) -> bool {
    cols <= WARP_COLS
}

kernel! {
    /// Warp w of block b: the softmax of row 8b + w (rows up to WARP_COLS); block b: the softmax
    /// of row b (longer rows).
    pub unsafe fn softmax_registers(input: *const f32, output: *mut f32, rows: u32, cols: u32) {
        let pairs = Pairs::carve();
        if cols > BLOCK_COLS {
            // SAFETY: forwarded from the kernel's contract; KERNEL launches THREADS threads.
            unsafe { online_row(pairs, input, output, block_idx().x, cols) };
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
        let (src, dst) = (input.wrapping_add(base), output.wrapping_add(base));
        let vector = cols.is_multiple_of(4) && is_aligned4(src) && is_aligned4(dst);
        // Slot s of this thread is column 4·(me + group·(s / 4)) + s % 4 (vector) or me + group·s;
        // slots past the row hold −∞ and are left out of the sum.
        let holds = |s: u32| {
            if vector {
                me + group * (s / 4) < cols / 4
            } else {
                me + group * s < cols
            }
        };
        let mut x = [f32::NEG_INFINITY; SLOTS as usize];
        if vector {
            unrolled::<VECTORS>(|j| {
                let q = me + group * j;
                if q < cols / 4 {
                    // SAFETY: float4 q is inside the row, 16-byte aligned.
                    let Float4(four) = unsafe { load4(src.add(4 * q as usize)) };
                    unrolled::<4>(|k| x[(4 * j + k) as usize] = four[k as usize]);
                }
            });
        } else {
            unrolled::<SLOTS>(|s| {
                let c = me + group * s;
                if c < cols {
                    // SAFETY: c < cols, inside the row.
                    x[s as usize] = unsafe { *src.add(c as usize) };
                }
            });
        }
        let mut m = f32::NEG_INFINITY;
        unrolled::<SLOTS>(|s| m = if x[s as usize] > m { x[s as usize] } else { m });
        // SAFETY (both reductions): the block has THREADS threads, and the branch is the same for
        // every thread of the block (it depends on cols alone).
        let m = if warp_rows { warp_combine::<Max>(m) } else { unsafe { block_max(pairs.maxes, m) } };
        let mut sum = 0.0f32;
        unrolled::<SLOTS>(|s| {
            if holds(s) {
                x[s as usize] = exp(x[s as usize] - m);
                sum += x[s as usize];
            }
        });
        let sum = if warp_rows { warp_combine::<Sum>(sum) } else { unsafe { block_sum(pairs.sums, sum) } };
        let scale = 1.0 / sum;
        if vector {
            unrolled::<VECTORS>(|j| {
                let q = me + group * j;
                if q < cols / 4 {
                    let four = Float4(core::array::from_fn(|k| x[4 * j as usize + k] * scale));
                    // SAFETY: as for the loads.
                    unsafe { store4(dst.add(4 * q as usize), four) };
                }
            });
        } else {
            unrolled::<SLOTS>(|s| {
                let c = me + group * s;
                if c < cols {
                    // SAFETY: c < cols, inside the row.
                    unsafe { global_store(dst.add(c as usize), x[s as usize] * scale) };
                }
            });
        }
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
