//! Products with few rows in A: a model decoding a token or a few per sequence (m = 1–16). Each
//! element of B then takes part in at most m multiply-adds, so the product can run no faster than
//! B can be read, and the tiled kernels, whose tiles hold 64 or 128 rows of A, leave most of
//! their work and most of the GPU idle. Here B streams through once, at the copy ceiling's pace:
//!
//! * a block takes a strip of 32·W columns (each lane a 16-byte load of W columns per row of B) and
//!   a run of k ([`super::k_runs`]), enough runs that one wave of blocks fills the GPU;
//! * its eight warps take the run's rows four at a time, loading the next four, and A's values at
//!   them, before multiplying the current ones (A's loads hit L1 but wait as long as B's: loaded
//!   inside the step, each row of A cost a wait, and the time grew with m); each lane multiplies
//!   its W columns by MR rows of A (the same bytes for every lane: a broadcast) and keeps MR × W
//!   sums;
//! * the warps' sums meet in shared memory (halving, in warp order), the runs' in C.
//!
//! Rows of A past MR go to further blocks beside the same strip (grid x, the row group fastest,
//! so that their reads of the strip meet in L2). MR is 1, 4 or 8: the sums and the step of A a
//! lane holds grow with it, and fewer blocks reside (one row: three or four per SM; eight: one),
//! so each m takes the fewest rows that hold it (at 16, ptxas spilled). How the operands are
//! read, f32 as given, f32 cut to TF32, or bf16, is the [`Operands`] parameter: the same body
//! serves the three ladders.

use super::Matmul;
use super::k_runs::{meet_in_c, meet_in_partials_warp, run_of_k, splits};
use super::output::Out;
use ptxkit::device::mma::Bf16;
use ptxkit::device::{
    DynamicShared, block_idx, fma, global_store, grid_dim, lane_id, load4, load4_l2, red_add, sync_threads, thread_idx,
    unrolled, unrolled_to,
};
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory, kernel};

/// Warps per block, all on the same strip of columns.
pub const WARPS: u32 = 8;
pub const THREADS: u32 = 32 * WARPS;
/// Rows of B a warp takes per step.
pub(super) const STEP: u32 = 4;
/// Rows of B the block's warps take per step together: runs of k are multiples of it.
pub const BLOCK_STEP: u32 = WARPS * STEP;
/// The shortest run of k worth a block: below it the block's fixed costs (the warps' meeting, the
/// additions into C) outweigh its share of B.
pub const MIN_RUN: u32 = 128;

/// How a ladder reads its operands: the element in memory, and its value in the product.
pub trait Operands {
    type Element: Copy;
    /// Elements of B in one 16-byte load: a lane's columns.
    const PER_LOAD: u32;
    /// Element `q` of 16 bytes loaded from B, as the product reads it.
    fn widen(raw: [u32; 4], q: u32) -> f32;
    /// Puts element `x` where element `q` of a 16-byte load from B would be.
    fn place(raw: &mut [u32; 4], q: u32, x: Self::Element);
    /// One element, as the product reads it.
    fn value(x: Self::Element) -> f32;
    /// Four consecutive elements from `ptr`, as the product reads them.
    ///
    /// # Safety
    /// `ptr` is aligned to four elements and valid for reads of four.
    unsafe fn four(ptr: *const Self::Element) -> [f32; 4];
}

/// f32 operands as given (the f32 ladder).
pub struct F32;
/// f32 operands cut to TF32 as the tensor cores read them: the low 13 mantissa bits dropped (the
/// TF32 ladder, whose results are checked against the product of the operands so read).
pub struct Tf32;
/// bf16 operands, each exact in f32 (the bf16 ladder).
pub struct Bf16s;

const TF32_MASK: u32 = !0x1fff;

impl Operands for F32 {
    type Element = f32;
    const PER_LOAD: u32 = 4;
    #[inline(always)]
    fn widen(raw: [u32; 4], q: u32) -> f32 {
        f32::from_bits(raw[q as usize])
    }
    #[inline(always)]
    fn place(raw: &mut [u32; 4], q: u32, x: f32) {
        raw[q as usize] = x.to_bits();
    }
    #[inline(always)]
    fn value(x: f32) -> f32 {
        x
    }
    #[inline(always)]
    unsafe fn four(ptr: *const f32) -> [f32; 4] {
        // SAFETY: forwarded from the caller.
        unsafe { load4(ptr) }.0
    }
}

impl Operands for Tf32 {
    type Element = f32;
    const PER_LOAD: u32 = 4;
    #[inline(always)]
    fn widen(raw: [u32; 4], q: u32) -> f32 {
        f32::from_bits(raw[q as usize] & TF32_MASK)
    }
    #[inline(always)]
    fn place(raw: &mut [u32; 4], q: u32, x: f32) {
        raw[q as usize] = x.to_bits();
    }
    #[inline(always)]
    fn value(x: f32) -> f32 {
        f32::from_bits(x.to_bits() & TF32_MASK)
    }
    #[inline(always)]
    unsafe fn four(ptr: *const f32) -> [f32; 4] {
        // SAFETY: forwarded from the caller.
        unsafe { load4(ptr) }.0.map(Self::value)
    }
}

impl Operands for Bf16s {
    type Element = Bf16;
    const PER_LOAD: u32 = 8;
    #[inline(always)]
    fn widen(raw: [u32; 4], q: u32) -> f32 {
        let pair = raw[(q / 2) as usize];
        // Element 2i is the low half of word i (little-endian), 2i + 1 the high half.
        f32::from_bits(if q.is_multiple_of(2) {
            pair << 16
        } else {
            pair & 0xffff_0000
        })
    }
    #[inline(always)]
    fn place(raw: &mut [u32; 4], q: u32, x: Bf16) {
        raw[(q / 2) as usize] |= (x.0 as u32) << (16 * (q % 2));
    }
    #[inline(always)]
    fn value(x: Bf16) -> f32 {
        x.to_f32()
    }
    #[inline(always)]
    unsafe fn four(ptr: *const Bf16) -> [f32; 4] {
        // SAFETY: forwarded from the caller: four bf16, 8-byte aligned.
        let pairs = unsafe { ptr.cast::<u64>().read() };
        [0, 16, 32, 48].map(|shift| Bf16((pairs >> shift) as u16).to_f32())
    }
}

/// 16 bytes of B from `ptr` as four words.
///
/// # Safety
/// `ptr` is 16-byte aligned and valid for reads of 16 bytes.
#[inline(always)]
unsafe fn load_raw<E>(ptr: *const E) -> [u32; 4] {
    // SAFETY: forwarded from the caller.
    unsafe { load4(ptr.cast::<f32>()) }.0.map(f32::to_bits)
}

/// Whether `ptr` is aligned to `bytes`.
#[inline(always)]
pub(crate) fn aligned<E>(ptr: *const E, bytes: usize) -> bool {
    (ptr as usize).is_multiple_of(bytes)
}

/// This lane's row of B at `row`: the 16 bytes of its W columns from `col` (zeros past n), in one
/// load where `vector`, else element by element.
///
/// # Safety
/// `b` holds k·n elements and `row` < k.
#[inline(always)]
pub(super) unsafe fn row_of_b<O: Operands, const W: usize>(
    b: *const O::Element,
    (n, row, col): (u32, u32, u32),
    vector: bool,
) -> [u32; 4] {
    let mut raw = [0; 4];
    if vector {
        if col < n {
            // SAFETY: n is a multiple of W and B 16-byte aligned, so the lane's W elements are one
            // aligned 16-byte chunk inside B's row.
            raw = unsafe { load_raw(b.add((row * n + col) as usize)) };
        }
    } else {
        unrolled_to(W as u32, |q| {
            if col + q < n {
                // SAFETY: inside B.
                O::place(&mut raw, q, unsafe { *b.add((row * n + col + q) as usize) });
            }
        });
    }
    raw
}

/// A's values at row `row` for the four k from `kk` (zeros past `end`): one load where `vector`.
///
/// # Safety
/// `a` holds m·k elements, `row` < m, and `end` ≤ k.
#[inline(always)]
unsafe fn four_of_a<O: Operands>(
    a: *const O::Element,
    (k, row, kk, end): (u32, u32, u32, u32),
    vector: bool,
) -> [f32; 4] {
    let at = (row * k + kk) as usize;
    if vector {
        // SAFETY: k and kk multiples of 4 and A aligned to four elements, and kk < end ≤ k: the four
        // lie inside A's row.
        return unsafe { O::four(a.add(at)) };
    }
    let mut values = [0.0; 4];
    unrolled::<4>(|u| {
        if kk + u < end {
            // SAFETY: inside A's row.
            values[u as usize] = O::value(unsafe { *a.add(at + u as usize) });
        }
    });
    values
}

/// This warp's sums over its rows of the run `begin..end`: MR rows of A from `row0`, W columns
/// of B from `col`. `VECTOR`: k and n multiples of 4 and W, A and B aligned, so every row of B
/// is whole 16-byte loads and every four of A one load, and no step runs past the run's end.
///
/// # Safety
/// `a` and `b` hold m·k and k·n elements; `end` ≤ k is k or a multiple of [`BLOCK_STEP`].
#[inline(always)]
#[allow(clippy::type_complexity)]
unsafe fn stream<O: Operands, const MR: usize, const W: usize, const VECTOR: bool>(
    (a, b): (*const O::Element, *const O::Element),
    ((m, n, k), (begin, end), (row0, col, warp)): ((u32, u32, u32), (u32, u32), (u32, u32, u32)),
) -> [[f32; W]; MR] {
    let mut acc = [[0.0f32; W]; MR];
    // A step's operands: four rows of B at this lane's columns, and A's values at those four k in
    // each of the MR rows (zeros past m), both loaded a step ahead of their use (the module's doc).
    let step_at = |kk: u32| {
        let mut rows = [[0u32; 4]; STEP as usize];
        unrolled::<STEP>(|u| {
            if VECTOR || kk + u < end {
                // SAFETY: kk + u < end ≤ k (on the 16-byte path, kk and end are multiples of 4):
                // a row of B.
                rows[u as usize] = unsafe { row_of_b::<O, W>(b, (n, kk + u, col), VECTOR) };
            }
        });
        let mut fours = [[0.0f32; 4]; MR];
        unrolled_to(MR as u32, |r| {
            if row0 + r < m {
                // SAFETY: row0 + r < m, kk < end ≤ k.
                fours[r as usize] = unsafe { four_of_a::<O>(a, (k, row0 + r, kk, end), VECTOR) };
            }
        });
        (rows, fours)
    };
    let mut kk = begin + warp * STEP;
    let mut next = if kk < end {
        step_at(kk)
    } else {
        ([[0; 4]; STEP as usize], [[0.0; 4]; MR])
    };
    while kk < end {
        let (rows, fours) = next;
        let after = kk + BLOCK_STEP;
        if after < end {
            next = step_at(after);
        }
        unrolled_to(MR as u32, |r| {
            unrolled::<STEP>(|u| {
                unrolled_to(W as u32, |q| {
                    let b = O::widen(rows[u as usize], q);
                    let (r, u, q) = (r as usize, u as usize, q as usize);
                    acc[r][q] = fma(fours[r][u], b, acc[r][q]);
                });
            });
        });
        kk = after;
    }
    acc
}

/// `C = A·B` for MR rows of A per block (the module's doc), W columns per lane.
///
/// # Safety
/// `a`, `b`, `c` hold m·k, k·n and m·n elements; where the grid is more than one deep, `arrivals`
/// holds a zeroed counter per block of the grid's first layer; the block has [`THREADS`] threads
/// and [`shared_bytes`]`(MR, W)` of dynamic shared memory; the grid is [`grid`]'s.
#[inline(always)]
pub unsafe fn small_m<O: Operands, const MR: usize, const W: usize>(
    (a, b, c): (*const O::Element, *const O::Element, *mut f32),
    (m, n, k): (u32, u32, u32),
    arrivals: *mut u32,
) {
    // SAFETY: forwarded; an f32 C's runs meet in C itself.
    unsafe { small_m_into::<O, MR, W, f32>((a, b, c), (m, n, k), (arrivals, core::ptr::null_mut())) }
}

/// [`small_m`] into a C of f32 or bf16 ([`Out`]): where C is not f32 and k is cut into runs, the
/// runs meet in `partial_sums` (a block of [`partials_per_block`] f32 per block of the grid's first
/// layer) and the last to arrive rounds the sums into C.
///
/// # Safety
/// As for [`small_m`]; for a C that is not f32 and a grid more than one deep, `partial_sums` holds
/// a block per counter.
#[inline(always)]
pub unsafe fn small_m_into<O: Operands, const MR: usize, const W: usize, C: Out>(
    (a, b, c): (*const O::Element, *const O::Element, *mut C),
    (m, n, k): (u32, u32, u32),
    (arrivals, partial_sums): (*mut u32, *mut f32),
) {
    const { assert!(W as u32 == O::PER_LOAD) };
    let (begin, end, runs) = run_of_k::<BLOCK_STEP>(k);
    if begin == end {
        // Past k: not one of the runs (the whole block leaves).
        return;
    }
    let element = core::mem::size_of::<O::Element>();
    // The same for every thread of the launch.
    let vector = k.is_multiple_of(4) && n.is_multiple_of(W as u32) && aligned(a, 4 * element) && aligned(b, 16);
    let groups = m.div_ceil(MR as u32);
    let row0 = (block_idx().x % groups) * MR as u32;
    let col = (block_idx().x / groups) * 32 * W as u32 + lane_id() * W as u32;
    let warp = thread_idx().x / 32;
    let at = ((m, n, k), (begin, end), (row0, col, warp));
    // Two loops, so that the 16-byte one carries no test of the path.
    // SAFETY: forwarded from the caller.
    let acc = unsafe {
        if vector {
            stream::<O, MR, W, true>((a, b), at)
        } else {
            stream::<O, MR, W, false>((a, b), at)
        }
    };

    // SAFETY: forwarded from the caller.
    unsafe { finish::<MR, W, C>(acc, (m, n, row0, col, warp), runs, (c, arrivals, partial_sums)) }
}

/// The block's warps' sums, `acc` of each, meet and go into C: the warps' in shared memory (halving,
/// in warp order), the runs' of k in C or, where C is not f32, in `partial_sums`.
///
/// # Safety
/// As for [`small_m_into`], whose grid and shared memory the block has; `runs` as
/// [`run_of_k`] gives it; `row0` and `col` this block's and lane's first row and column.
#[inline(always)]
pub(super) unsafe fn finish<const MR: usize, const W: usize, C: Out>(
    mut acc: [[f32; W]; MR],
    (m, n, row0, col, warp): (u32, u32, u32, u32, u32),
    runs: u32,
    (c, arrivals, partial_sums): (*mut C, *mut u32, *mut f32),
) {
    // The warps' sums meet in warp 0: the upper half stores, the lower half adds, halving.
    let partials = DynamicShared::new().slice::<f32>(shared_floats(MR, W));
    let lane = lane_id();
    let slot = |half_warp: u32, r: u32, q: u32| ((half_warp * MR as u32 + r) * W as u32 + q) * 32 + lane;
    let mut half = WARPS / 2;
    while half > 0 {
        if warp >= half && warp < 2 * half {
            unrolled_to(MR as u32, |r| {
                unrolled_to(W as u32, |q| {
                    partials.set(slot(warp - half, r, q), acc[r as usize][q as usize])
                })
            });
        }
        sync_threads();
        if warp < half {
            unrolled_to(MR as u32, |r| {
                unrolled_to(W as u32, |q| {
                    acc[r as usize][q as usize] += partials.get(slot(warp, r, q))
                })
            });
        }
        sync_threads();
        half /= 2;
    }

    let lead = warp == 0;
    let at = (m, n, row0, col);
    if C::ADDS {
        // SAFETY: every output lies inside C; `arrivals` as the caller gives it, one counter per
        // block of the first layer (its x).
        unsafe {
            meet_in_c(
                arrivals,
                runs,
                // SAFETY: inside C.
                || each_output(lead, at, &acc, |i, value| C::put(c.add(i), value, false)),
                // SAFETY: inside C.
                || each_output(lead, at, &acc, |i, value| C::put(c.add(i), value, true)),
            )
        };
        return;
    }
    // Warp 0 holds the block's sums: it meets the other runs' alone.
    if !lead {
        return;
    }
    if runs == 1 {
        // SAFETY: inside C.
        each_output(lead, at, &acc, |i, value| unsafe { C::put(c.add(i), value, false) });
        return;
    }
    let place = (block_idx().y * grid_dim().x + block_idx().x) as usize;
    // This lane's W sums of each of the MR rows in the block's partials.
    let mine = partial_sums.wrapping_add(place * partials_per_block(MR, W) as usize + lane as usize * W);
    let slot = |r: u32, q: u32| mine.wrapping_add((r * 32 * W as u32 + q) as usize);
    let write = |adding: bool| {
        unrolled_to(MR as u32, |r| {
            unrolled_to(W as u32, |q| {
                let value = acc[r as usize][q as usize];
                // SAFETY: inside the block's partials.
                unsafe {
                    if adding {
                        red_add(slot(r, q), value)
                    } else {
                        global_store(slot(r, q), value)
                    }
                }
            })
        })
    };
    let round = || {
        // Every sum loaded before any is stored, 16 bytes at a time past the L1 (other SMs added
        // them): one wait for the L2.
        let mut sums = [[0.0f32; W]; MR];
        unrolled_to(MR as u32, |r| {
            unrolled_to(W as u32 / 4, |v| {
                // SAFETY: inside the block's partials, whole once every run has added; 16-byte
                // aligned (the partials are, and W a multiple of 4).
                let four = unsafe { load4_l2(slot(r, 4 * v)) }.0;
                sums[r as usize][4 * v as usize..4 * v as usize + 4].copy_from_slice(&four);
            })
        });
        // SAFETY: inside C.
        each_output(lead, at, &sums, |i, value| unsafe { C::put(c.add(i), value, false) });
    };
    // SAFETY: the block's counter and partials (the caller's promise); run 0's warp 0 starts
    // before any other run's (blocks start in order, run 0 the grid's first layer).
    unsafe { meet_in_partials_warp(arrivals.wrapping_add(place), (block_idx().z, runs), write, round) }
}

/// f32 partial sums per block where C is not f32 and k is cut into runs: MR rows of the block's
/// 32·W columns.
pub const fn partials_per_block(mr: usize, w: usize) -> u32 {
    (mr * 32 * w) as u32
}

/// Calls `out(index in C, sum)` for each of the block's sums inside C, in warp 0 (`lead`), which
/// holds them after the warps met.
#[inline(always)]
fn each_output<const MR: usize, const W: usize>(
    lead: bool,
    (m, n, row0, col): (u32, u32, u32, u32),
    acc: &[[f32; W]; MR],
    mut out: impl FnMut(usize, f32),
) {
    if !lead {
        return;
    }
    unrolled_to(MR as u32, |r| {
        let row = row0 + r;
        unrolled_to(W as u32, |q| {
            if row < m && col + q < n {
                out((row * n + col + q) as usize, acc[r as usize][q as usize]);
            }
        });
    });
}

/// Floats of shared memory the warps meet in: half the warps' MR × W sums per lane.
pub const fn shared_floats(mr: usize, w: usize) -> u32 {
    (WARPS / 2) * (mr * w) as u32 * 32
}

/// Bytes of dynamic shared memory a block of MR rows and W columns per lane needs.
pub const fn shared_bytes(mr: usize, w: usize) -> u32 {
    4 * shared_floats(mr, w)
}

/// The launch grid for MR rows of A per block and `columns` columns per block: a block per row
/// group and strip (x), k split ([`splits`]) so that one wave of the device's resident blocks is
/// full (z).
pub const fn grid((m, n, k): (u32, u32, u32), mr: u32, columns: u32, device: Occupancy) -> Dim3 {
    let tiles = m.div_ceil(mr) * n.div_ceil(columns);
    Dim3::new(tiles, 1, splits(tiles, device.resident_blocks, k, MIN_RUN))
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 4)]
    /// `C = A·B` for m = 1 (more rows in more blocks): f32 operands, one row of A per block.
    pub unsafe fn matmul_small_m1(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, arrivals: *mut u32) {
        // SAFETY: forwarded from the kernel's contract; KERNEL_M1 launches the block and grid.
        unsafe { small_m::<F32, 1, 4>((a, b, c), (m, n, k), arrivals) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 2)]
    /// `C = A·B` for m ≤ 4 (more rows in more blocks): f32 operands, four rows of A per block.
    pub unsafe fn matmul_small_m4(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, arrivals: *mut u32) {
        // SAFETY: as above; KERNEL_M4 launches the block and grid.
        unsafe { small_m::<F32, 4, 4>((a, b, c), (m, n, k), arrivals) }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 1)]
    /// `C = A·B` for m ≤ 8 (more rows in more blocks): f32 operands, eight rows of A per block.
    pub unsafe fn matmul_small_m8(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, arrivals: *mut u32) {
        // SAFETY: as above; KERNEL_M8 launches the block and grid.
        unsafe { small_m::<F32, 8, 4>((a, b, c), (m, n, k), arrivals) }
    }
}

/// The launch of an f32 small-m kernel with MR rows of A per block.
const fn config<const MR: usize>(code: ptxkit::KernelFn<<Matmul as ptxkit::Problem>::Args>) -> Kernel<Matmul> {
    Kernel {
        code,
        block: Dim3::x(THREADS),
        shared: SharedMemory::of(shared_bytes(MR, 4)),
        grid: |p, device| grid((p.m, p.n, p.k), MR as u32, 32 * 4, device),
    }
}

/// One row of A per block.
pub const KERNEL_M1: Kernel<Matmul> = config::<1>(matmul_small_m1);
/// Four rows of A per block.
pub const KERNEL_M4: Kernel<Matmul> = config::<4>(matmul_small_m4);
/// Eight rows of A per block.
pub const KERNEL_M8: Kernel<Matmul> = config::<8>(matmul_small_m8);
/// The f32 small-m kernels.
pub const KERNELS: [Kernel<Matmul>; 3] = [KERNEL_M1, KERNEL_M4, KERNEL_M8];

/// The rows of A each small-m kernel takes per block, fewest first (each ladder's `KERNELS` in
/// this order).
pub const ROWS: [u32; 3] = [1, 4, 8];

/// The most rows of A for which `auto` takes the f32 small-m kernels; from there
/// [`super::small_m16`] (up to sixteen they ran ahead of every tile, docs/perf-log.md, change 112;
/// two row groups of eight lost to one of sixteen, change 149).
pub const MAX_ROWS: u32 = 8;

/// Which small-m kernel (index into [`ROWS`]) `auto` takes for m rows in a ladder that takes them
/// up to `max_rows`: the fewest rows per block that hold m in one row group, else the most (several
/// groups); `None` past `max_rows`.
pub fn for_rows(m: u32, max_rows: u32) -> Option<usize> {
    if m > max_rows {
        return None;
    }
    Some(ROWS.iter().position(|&rows| m <= rows).unwrap_or(ROWS.len() - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kernel on the emulator's 8 places, twice (the counters must be back at zero), C
    /// poisoned: the 16-byte paths and the element-wise ones (n not a multiple of 4, k odd), one
    /// row and several row groups, k split and not.
    #[test]
    fn every_row_count_and_edge_meets_in_poisoned_c() {
        for shape in [
            (1, 1, 1),
            (1, 128, 1024),
            (3, 129, 1000),
            (8, 256, 517),
            (9, 100, 300),
            (16, 131, 64),
        ] {
            for kernel in KERNELS {
                crate::matmul::k_runs::check_runs_meet(&kernel, shape);
            }
        }
    }

    #[test]
    fn k_splits_until_one_wave_is_full_and_no_run_is_short() {
        let device = Occupancy { resident_blocks: 396 };
        // 1 × 4096 × 4096 in 128-column strips: 32 tiles, 12 runs of 352 rows.
        let shape = grid((1, 4096, 4096), 4, 128, device);
        assert_eq!((shape.x, shape.z), (32, 12));
        // GPT-2's projection at one token: 6 strips, k = 3072 allows 24 runs of 128.
        let shape = grid((1, 768, 3072), 4, 128, device);
        assert_eq!((shape.x, shape.z), (6, 24));
        // Two row groups of 8 for 16 rows, beside each other in x.
        let shape = grid((16, 4096, 4096), 8, 128, device);
        assert_eq!((shape.x, shape.z), (64, 6));
        // A vocabulary-wide strip count fills the wave unsplit.
        let shape = grid((1, 128_256, 4096), 4, 128, device);
        assert_eq!((shape.x, shape.z), (1002, 1));
    }
}
