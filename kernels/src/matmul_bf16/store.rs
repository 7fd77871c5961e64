//! The ways out of a warpgroup's `wgmma` accumulators into C, for the `wgmma` rungs: register i of
//! lane l in warp w of the group holds row `16·w + l / 4 + 8·((i % 4) / 2)`, column
//! `8·(i / 4) + 2·(l % 4) + i % 2` of the group's 64×N product (see [`ptxkit::device::wgmma`]).
// Only the sm_90a kernel bodies store with it; elsewhere the bodies are stubs.
#![cfg_attr(not(all(target_arch = "nvptx64", target_feature = "sm_90a")), allow(dead_code))]

use ptxkit::device::{
    Float4, WARP_SIZE, global_store, is_aligned4, lane_id, red_add, red_add4, shfl_xor, store4, thread_idx, unrolled,
    unrolled_to,
};

/// Stores the 64×`N` product this thread's warpgroup holds, at rows from `row0` and columns from
/// `col0` of C (m×n), the parts inside C only; `value(i)` is this lane's accumulator register i.
///
/// # Safety
/// `c` holds m·n f32; every lane of the warpgroup calls it.
#[inline(always)]
pub unsafe fn store_warpgroup<const N: u32>(
    c: *mut f32,
    (m, n): (u32, u32),
    corner: (u32, u32),
    value: impl Fn(u32) -> f32,
) {
    // SAFETY: forwarded.
    unsafe { store::<N, false>(c, (m, n), corner, value, false) }
}

/// As [`store_warpgroup`], or where `adding` adding to C's elements (`red.global.add`): a later
/// run of k's sums meeting the first's ([`crate::matmul::k_runs::meet_in_c_warp`]). One loop for
/// both, the choice made per element: two loops of 128 stores cost the consumers their registers.
///
/// # Safety
/// As for [`store_warpgroup`].
#[inline(always)]
pub unsafe fn write_warpgroup<const N: u32>(
    c: *mut f32,
    (m, n): (u32, u32),
    corner: (u32, u32),
    value: impl Fn(u32) -> f32,
    adding: bool,
) {
    // SAFETY: forwarded.
    unsafe { store::<N, false>(c, (m, n), corner, value, adding) }
}

/// As [`write_warpgroup`] for a warpgroup that holds the transpose of its part of C (the
/// operands' roles swapped): product row i and column j go to C's row `row0 + j` and column
/// `col0 + i`. A warp's store then writes 8 consecutive columns of 4 rows: four whole 32-byte
/// sectors.
///
/// # Safety
/// As for [`store_warpgroup`].
#[inline(always)]
pub unsafe fn write_warpgroup_transposed<const N: u32>(
    c: *mut f32,
    (m, n): (u32, u32),
    corner: (u32, u32),
    value: impl Fn(u32) -> f32,
    adding: bool,
) {
    // SAFETY: forwarded.
    unsafe { store::<N, true>(c, (m, n), corner, value, adding) }
}

/// The stores: product element (i, j) to C's (row0 + i, col0 + j), or where `TRANSPOSED` to
/// (row0 + j, col0 + i); added to C's element where `adding`.
///
/// # Safety
/// As for [`store_warpgroup`].
#[inline(always)]
unsafe fn store<const N: u32, const TRANSPOSED: bool>(
    c: *mut f32,
    (m, n): (u32, u32),
    (row0, col0): (u32, u32),
    value: impl Fn(u32) -> f32,
    adding: bool,
) {
    if !TRANSPOSED && n.is_multiple_of(4) && is_aligned4(c) {
        // SAFETY: forwarded; C and its rows 16-byte aligned, by the test.
        return unsafe { store_vectors::<N>(c, (m, n), (row0, col0), value, adding) };
    }
    // Element by element, from where the sums lie: rows not 16-byte aligned, and the transposed
    // (whose stores already fill whole sectors).
    let lane = lane_id();
    let warp = (thread_idx().x / WARP_SIZE) % 4;
    let first = 16 * warp + lane / 4;
    unrolled_to(
        N / 8,
        #[inline(always)]
        |block| {
            unrolled::<4>(|r| {
                // Register 4·block + r: product row i, column j.
                let (i, j) = (first + 8 * (r / 2), 8 * block + 2 * (lane % 4) + r % 2);
                let (row, col) = if TRANSPOSED {
                    (row0 + j, col0 + i)
                } else {
                    (row0 + i, col0 + j)
                };
                if row < m && col < n {
                    let at = c.wrapping_add((row * n + col) as usize);
                    // SAFETY: inside C (m×n), by the test above.
                    unsafe {
                        if adding {
                            red_add(at, value(4 * block + r))
                        } else {
                            global_store(at, value(4 * block + r))
                        }
                    };
                }
            });
        },
    );
}

/// The untransposed stores, 16 bytes at a time. A quad's four lanes hold two columns each of
/// every 8-column block of a row; over a pair of blocks, lanes 2q and 2q + 1 swap one pair by a
/// shuffle so that each holds four consecutive columns, and a warp's store writes 64 contiguous
/// bytes of each of its 8 rows (element stores wrote 16 scattered bytes of each 32-byte sector, and
/// cost four times the L2 requests); where `adding`, one `red.global.add.v4.f32` instead.
///
/// # Safety
/// As for [`store_warpgroup`], and C and its rows (n a multiple of 4) 16-byte aligned.
#[inline(always)]
unsafe fn store_vectors<const N: u32>(
    c: *mut f32,
    (m, n): (u32, u32),
    (row0, col0): (u32, u32),
    value: impl Fn(u32) -> f32,
    adding: bool,
) {
    const { assert!(N.is_multiple_of(16), "pairs of 8-column blocks") };
    let lane = lane_id();
    let warp = (thread_idx().x / WARP_SIZE) % 4;
    let odd = (lane % 2) as u32;
    // This lane's first column within each pair of blocks, and how many of C's columns lie at or
    // past it: the pairs' addresses then differ by constants (immediate offsets, not 32 more
    // 64-bit registers), and their tests are compares against one value.
    let lane_col = col0 + 8 * odd + 2 * (lane % 4 - odd);
    let cols_left = n.saturating_sub(lane_col);
    let top = row0 + 16 * warp + lane / 4;
    unrolled_to(
        N / 16,
        #[inline(always)]
        |pair| {
            unrolled::<2>(
                #[inline(always)]
                |half| {
                    // Registers of block b for this half's row: 4·b + 2·half and the next.
                    let at = |block: u32, e: u32| value(4 * block + 2 * half + e);
                    let (x, y) = (
                        [at(2 * pair, 0), at(2 * pair, 1)],
                        [at(2 * pair + 1, 0), at(2 * pair + 1, 1)],
                    );
                    // The even lane keeps its first block's pair and takes its partner's; the odd
                    // lane keeps its second block's and takes its partner's.
                    let give = if odd == 1 { x } else { y };
                    let got = [shfl_xor(give[0], 1), shfl_xor(give[1], 1)];
                    let four = if odd == 1 {
                        [got[0], got[1], y[0], y[1]]
                    } else {
                        [x[0], x[1], got[0], got[1]]
                    };
                    let (row, offset) = (top + 8 * half, 16 * pair);
                    if row < m && offset < cols_left {
                        let first = c
                            .wrapping_add((row * n + lane_col) as usize)
                            .wrapping_add(offset as usize);
                        // SAFETY: four elements inside C's row (n and the first's column are
                        // multiples of 4), 16-byte aligned (C and its rows are); the callers are
                        // sm_90a kernels.
                        unsafe {
                            if adding {
                                red_add4(first, Float4(four))
                            } else {
                                store4(first, Float4(four))
                            }
                        };
                    }
                },
            );
        },
    );
}
