//! The ways out of a warpgroup's `wgmma` accumulators into C, for the `wgmma` rungs: register i of
//! lane l in warp w of the group holds row `16·w + l / 4 + 8·((i % 4) / 2)`, column
//! `8·(i / 4) + 2·(l % 4) + i % 2` of the group's 64×N product (see [`ptxkit::device::wgmma`]).
// Only the sm_90a kernel bodies store with it; elsewhere the bodies are stubs.
#![cfg_attr(not(all(target_arch = "nvptx64", target_feature = "sm_90a")), allow(dead_code))]

use ptxkit::device::{WARP_SIZE, global_store, lane_id, red_add, thread_idx, unrolled, unrolled_to};

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
