//! The ways out of a warpgroup's `wgmma` accumulators into C, for the `wgmma` rungs: register i of
//! lane l in warp w of the group holds row `16·w + l / 4 + 8·((i % 4) / 2)`, column
//! `8·(i / 4) + 2·(l % 4) + i % 2` of the group's 64×N product (see [`ptxkit::device::wgmma`]).
//! C holds f32, or bf16 ([`Out`]): the same stores, each sum rounded on its way out.
// Only the sm_90a kernel bodies store with it; elsewhere the bodies are stubs.
#![cfg_attr(not(all(target_arch = "nvptx64", target_feature = "sm_90a")), allow(dead_code))]

use crate::matmul::output::Out;
use ptxkit::device::{WARP_SIZE, lane_id, opaque, shfl_idx, shfl_xor, thread_idx, unrolled, unrolled_to};

/// Whether element `at` of a C of `O` starts four elements' bytes ([`Out::put4`]'s alignment).
#[inline(always)]
fn aligned_four<O>(at: *const O) -> bool {
    (at as usize).is_multiple_of(4 * size_of::<O>())
}

/// Stores the 64×`N` product this thread's warpgroup holds, at rows from `row0` and columns from
/// `col0` of C (m×n), the parts inside C only; `value(i)` is this lane's accumulator register i.
///
/// # Safety
/// `c` holds m·n elements; every lane of the warpgroup calls it.
#[inline(always)]
pub unsafe fn store_warpgroup<const N: u32, O: Out>(
    c: *mut O,
    (m, n): (u32, u32),
    corner: (u32, u32),
    value: impl Fn(u32) -> f32,
) {
    // SAFETY: forwarded.
    unsafe { store::<N, false, true, O>(c, (m, n), corner, value, false) }
}

/// As [`store_warpgroup`], or where `adding` adding to C's elements (`red.global.add`): a later
/// run of k's sums meeting the first's ([`crate::matmul::k_runs::meet_in_c_warp`]). One loop for
/// both, the choice made per element: two loops of 128 stores cost the consumers their registers.
/// Rows not 16-byte aligned go 16 bytes at a time where `SHIFTED` ([`store_shifted`], which needs
/// more registers), else element by element.
///
/// # Safety
/// As for [`store_warpgroup`].
#[inline(always)]
pub unsafe fn write_warpgroup<const N: u32, const SHIFTED: bool, O: Out>(
    c: *mut O,
    (m, n): (u32, u32),
    corner: (u32, u32),
    value: impl Fn(u32) -> f32,
    adding: bool,
) {
    // SAFETY: forwarded.
    unsafe { store::<N, false, SHIFTED, O>(c, (m, n), corner, value, adding) }
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
    unsafe { store::<N, true, false, f32>(c, (m, n), corner, value, adding) }
}

/// The stores: product element (i, j) to C's (row0 + i, col0 + j), or where `TRANSPOSED` to
/// (row0 + j, col0 + i); added to C's element where `adding`; rows not 16-byte aligned
/// regrouped where `SHIFTED`.
///
/// # Safety
/// As for [`store_warpgroup`].
#[inline(always)]
unsafe fn store<const N: u32, const TRANSPOSED: bool, const SHIFTED: bool, O: Out>(
    c: *mut O,
    (m, n): (u32, u32),
    (row0, col0): (u32, u32),
    value: impl Fn(u32) -> f32,
    adding: bool,
) {
    if !TRANSPOSED {
        if n.is_multiple_of(4) && aligned_four(c) {
            // SAFETY: forwarded; C and its rows aligned to four elements, by the test.
            return unsafe { store_vectors::<N, O>(c, (m, n), (row0, col0), value, adding) };
        }
        if SHIFTED {
            // SAFETY: forwarded.
            return unsafe { store_shifted::<N, O>(c, (m, n), (row0, col0), value, adding) };
        }
    }
    // Element by element, from where the sums lie: the transposed (whose stores already fill
    // whole sectors), and unaligned rows where not `SHIFTED`.
    let lane = lane_id();
    let warp = (thread_idx().x / WARP_SIZE) % 4;
    let first = 16 * warp + lane / 4;
    unrolled_to(
        N / 8,
        #[inline(always)]
        |block| {
            // A transposed 128-row tile's rows worked out block by block where they are stored:
            // else LLVM works out all 32 before the first store, and they spill (at 256 rows it
            // does not, and this costs registers there).
            let row0 = if TRANSPOSED && N <= 128 { opaque(row0) } else { row0 };
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
                    unsafe { O::put(at, value(4 * block + r), adding) };
                }
            });
        },
    );
}

/// This lane's four consecutive columns of one row out of a pair of 8-column blocks: a quad's four
/// lanes hold two columns each of every block of a row, and over a pair of blocks lanes 2q and
/// 2q + 1 swap one pair by a shuffle so that each holds four. Lane q of a quad then holds columns
/// [`merged_column`]`(q)` to + 3 of the pair's 16; `half` picks the row (the lane's first, or 8
/// below).
#[inline(always)]
fn merged(value: &impl Fn(u32) -> f32, pair: u32, half: u32) -> [f32; 4] {
    let odd = lane_id() % 2 == 1;
    // Registers of block b for this half's row: 4·b + 2·half and the next.
    let at = |block: u32, e: u32| value(4 * block + 2 * half + e);
    let (x, y) = (
        [at(2 * pair, 0), at(2 * pair, 1)],
        [at(2 * pair + 1, 0), at(2 * pair + 1, 1)],
    );
    // The even lane keeps its first block's pair and takes its partner's; the odd lane keeps its
    // second block's and takes its partner's.
    let give = if odd { x } else { y };
    let got = [shfl_xor(give[0], 1), shfl_xor(give[1], 1)];
    if odd {
        [got[0], got[1], y[0], y[1]]
    } else {
        [x[0], x[1], got[0], got[1]]
    }
}

/// The first of the four columns [`merged`] gives lane `quad` of a quad, within a pair of blocks:
/// 0, 8, 4, 12.
#[inline(always)]
const fn merged_column(quad: u32) -> u32 {
    let odd = quad % 2;
    8 * odd + 2 * (quad - odd)
}

/// The untransposed stores, four elements at a time: after [`merged`], a warp's store writes 64
/// contiguous bytes of each of its 8 rows (32 of bf16; element stores wrote 16 scattered bytes of
/// each 32-byte sector, and cost four times the L2 requests); where `adding`, one
/// `red.global.add.v4.f32` instead.
///
/// # Safety
/// As for [`store_warpgroup`], and C and its rows (n a multiple of 4) aligned to four elements.
#[inline(always)]
unsafe fn store_vectors<const N: u32, O: Out>(
    c: *mut O,
    (m, n): (u32, u32),
    (row0, col0): (u32, u32),
    value: impl Fn(u32) -> f32,
    adding: bool,
) {
    const { assert!(N.is_multiple_of(16), "pairs of 8-column blocks") };
    let lane = lane_id();
    let warp = (thread_idx().x / WARP_SIZE) % 4;
    // This lane's first column within each pair of blocks, and how many of C's columns lie at or
    // past it: the pairs' addresses then differ by constants (immediate offsets, not 32 more
    // 64-bit registers), and their tests are compares against one value.
    let lane_col = col0 + merged_column(lane % 4);
    let cols_left = n.saturating_sub(lane_col);
    let top = row0 + 16 * warp + lane / 4;
    unrolled_to(
        N / 16,
        #[inline(always)]
        |pair| {
            unrolled::<2>(
                #[inline(always)]
                |half| {
                    let four = merged(&value, pair, half);
                    let (row, offset) = (top + 8 * half, 16 * pair);
                    if row < m && offset < cols_left {
                        let first = c
                            .wrapping_add((row * n + lane_col) as usize)
                            .wrapping_add(offset as usize);
                        // SAFETY: four elements inside C's row (n and the first's column are
                        // multiples of 4), aligned as four (C and its rows are); the callers are
                        // sm_90a kernels.
                        unsafe { O::put4(first, four, adding) };
                    }
                },
            );
        },
    );
}

/// The untransposed stores where C's rows are not all aligned to four elements (n not a multiple of
/// 4, or C itself not aligned: an LM head's odd vocabulary), still four at a time: each row's
/// columns are regrouped in fours from the row's first four-element boundary, h columns past the tile's
/// first (h of 0 to 3, the row's own). After [`merged`], the lane holding four columns from g
/// stores those from g + h: its own last 4 − h and the first h of the lane holding the next four
/// (the next pair's first four for the quad's last lane), one shuffle each. The tile's first h
/// columns of a row, and its last 4 − h, share 16 bytes with the neighbouring tiles' and go
/// element by element, as do fours that cross C's last column.
///
/// # Safety
/// As for [`store_warpgroup`].
#[inline(always)]
unsafe fn store_shifted<const N: u32, O: Out>(
    c: *mut O,
    (m, n): (u32, u32),
    (row0, col0): (u32, u32),
    value: impl Fn(u32) -> f32,
    adding: bool,
) {
    const { assert!(N.is_multiple_of(16), "pairs of 8-column blocks") };
    let lane = lane_id();
    let warp = (thread_idx().x / WARP_SIZE) % 4;
    let quad = lane % 4;
    let lane_col = col0 + merged_column(quad);
    // The quad's lanes hold fours 0, 2, 1, 3 of a pair (the bits of the lane swapped): the
    // lane holding the next four, and whether this lane's four come first in the pair (its
    // partner then wants the next pair's).
    let swap = |q: u32| (q >> 1) | ((q & 1) << 1);
    let next_lane = (lane & !3) + swap((swap(quad) + 1) % 4);
    let leads = quad == 0;
    let top = row0 + 16 * warp + lane / 4;
    unrolled::<2>(
        #[inline(always)]
        |half| {
            let row = top + 8 * half;
            let start = c.wrapping_add((row.wrapping_mul(n)) as usize);
            // Columns before the row's first four-element boundary (C's elements are aligned).
            let h = ((start as usize).wrapping_neg() / size_of::<O>() % 4) as u32;
            let inside = row < m;
            let mut own = merged(&value, 0, half);
            unrolled_to(
                N / 16,
                #[inline(always)]
                |pair| {
                    let last = pair + 1 == N / 16;
                    let ahead = if last { own } else { merged(&value, pair + 1, half) };
                    let send = if leads { ahead } else { own };
                    let got: [f32; 4] = core::array::from_fn(|e| shfl_idx(send[e], next_lane));
                    let first = lane_col + 16 * pair;
                    // SAFETY (every store below): inside C's row `row` < m, columns < n, by the
                    // tests; the fours at `first + h`, aligned as four by h's choice.
                    if inside && leads && pair == 0 {
                        // The tile's first h columns of the row.
                        unrolled::<4>(|e| {
                            if e < h && first + e < n {
                                unsafe { O::put(start.wrapping_add((first + e) as usize), own[e as usize], adding) };
                            }
                        });
                    }
                    if inside && last && quad == 3 && h > 0 {
                        // The tile's last 4 − h columns of the row.
                        unrolled::<4>(|e| {
                            if e >= h && first + e < n {
                                unsafe { O::put(start.wrapping_add((first + e) as usize), own[e as usize], adding) };
                            }
                        });
                    } else if inside {
                        let four = match h {
                            0 => own,
                            1 => [own[1], own[2], own[3], got[0]],
                            2 => [own[2], own[3], got[0], got[1]],
                            _ => [own[3], got[0], got[1], got[2]],
                        };
                        let at = first + h;
                        if at + 3 < n {
                            unsafe { O::put4(start.wrapping_add(at as usize), four, adding) };
                        } else {
                            unrolled::<4>(|e| {
                                if at + e < n {
                                    unsafe { O::put(start.wrapping_add((at + e) as usize), four[e as usize], adding) };
                                }
                            });
                        }
                    }
                    own = ahead;
                },
            );
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use ptxkit::device::mma::Bf16;
    use ptxkit::{Dim3, LaunchShape, kernel};

    /// Product element (i, j) of the tile at `corner`: a different, exactly representable value for
    /// each of C's elements.
    fn label((row, col): (u32, u32)) -> f32 {
        (row * 1024 + col + 1) as f32
    }

    /// What lane `lane` of warp `warp` holds in register i (the module's layout), labelled.
    fn held(corner: (u32, u32), warp: u32, lane: u32, i: u32) -> f32 {
        let (row, col) = (
            16 * warp + lane / 4 + 8 * ((i % 4) / 2),
            8 * (i / 4) + 2 * (lane % 4) + i % 2,
        );
        label((corner.0 + row, corner.1 + col))
    }

    macro_rules! probe {
        ($name:ident, $n:literal, $shifted:literal) => {
            kernel! {
                /// One warpgroup writes its 64×N tile at (row0, col0) of C (m×n), adding where `adding`.
                unsafe fn $name(c: *mut f32, m: u32, n: u32, row0: u32, col0: u32, adding: u32) {
                    let (warp, lane) = ((thread_idx().x / WARP_SIZE) % 4, lane_id());
                    let value = |i: u32| held((row0, col0), warp, lane, i);
                    // SAFETY: the test's C holds m·n f32.
                    unsafe { write_warpgroup::<$n, $shifted, f32>(c, (m, n), (row0, col0), value, adding != 0) }
                }
            }
        };
    }
    probe!(store_32, 32, true);
    probe!(store_256, 256, true);
    probe!(store_32_by_elements, 32, false);

    /// The bits of a bf16 C's element (row, col) (n ≤ 128, m ≤ 128): different for each, finite
    /// and normal.
    fn label_bf16((row, col): (u32, u32)) -> u16 {
        (0x3c00 + row * 128 + col) as u16
    }

    /// What a lane holds for a bf16 C: past [`label_bf16`]'s value by more than half its unit in
    /// the last place (2⁻⁸ + 2⁻¹⁰ of it), so that rounding to the nearest gives the next bf16
    /// up (truncating would give the label's own).
    fn held_bf16(corner: (u32, u32), warp: u32, lane: u32, i: u32) -> f32 {
        let (row, col) = (
            16 * warp + lane / 4 + 8 * ((i % 4) / 2),
            8 * (i / 4) + 2 * (lane % 4) + i % 2,
        );
        let label = Bf16(label_bf16((corner.0 + row, corner.1 + col))).to_f32();
        label * (1.0 + 1.0 / 256.0 + 1.0 / 1024.0)
    }

    macro_rules! probe_bf16 {
        ($name:ident, $shifted:literal) => {
            kernel! {
                /// One warpgroup writes its 64×32 tile at (row0, col0) of a bf16 C (m×n).
                unsafe fn $name(c: *mut Bf16, m: u32, n: u32, row0: u32, col0: u32) {
                    let (warp, lane) = ((thread_idx().x / WARP_SIZE) % 4, lane_id());
                    let value = |i: u32| held_bf16((row0, col0), warp, lane, i);
                    // SAFETY: the test's C holds m·n bf16.
                    unsafe { write_warpgroup::<32, $shifted, Bf16>(c, (m, n), (row0, col0), value, false) }
                }
            }
        };
    }
    probe_bf16!(store_32_bf16, true);
    probe_bf16!(store_32_bf16_by_elements, false);

    /// As [`check`] for a bf16 C starting `offset` bf16 past an 8-byte boundary: inside C and the
    /// tile each element the bf16 after its label, every other element untouched.
    fn check_bf16(shifted: bool, (m, n): (u32, u32), corner: (u32, u32), offset: usize) {
        const POISON: u16 = 0x7fc1;
        let len = (m * n) as usize + offset + 8;
        let mut storage = vec![[POISON; 4]; len.div_ceil(4)];
        let c = storage.as_mut_ptr().cast::<Bf16>().wrapping_add(offset);
        let shape = LaunchShape {
            grid: Dim3::x(1),
            block: Dim3::x(128),
            shared_bytes: 0,
        };
        let kernel = if shifted {
            store_32_bf16
        } else {
            store_32_bf16_by_elements
        };
        // SAFETY: C holds m·n bf16 from `c`, and more past them.
        unsafe { kernel.emulate(&shape, (c, m, n, corner.0, corner.1)) }.unwrap();
        let all = storage.as_flattened();
        let what = format!("bf16, shifted {shifted}, {m}×{n}, tile at {corner:?}, C {offset} bf16 past 8 bytes");
        for (at, &got) in all.iter().enumerate() {
            let element = at.checked_sub(offset).filter(|&e| e < (m * n) as usize);
            let expected = match element {
                Some(e) => {
                    let (row, col) = (e as u32 / n, e as u32 % n);
                    let inside = (corner.0..corner.0 + 64).contains(&row) && (corner.1..corner.1 + 32).contains(&col);
                    if inside { label_bf16((row, col)) + 1 } else { POISON }
                }
                None => POISON,
            };
            assert!(
                got == expected,
                "{what}: element {element:?} (storage {at}) {got:#x}, expected {expected:#x}"
            );
        }
    }

    /// A bf16 C at every alignment of its rows (n not a multiple of 4, C not 8-byte aligned) and
    /// the aligned case, tiles whole and cut, each sum rounded to the nearest.
    #[test]
    fn bf16_tiles_land_whole_and_rounded_at_every_alignment() {
        for n in [1, 2, 3, 5, 31, 32, 33, 34, 35, 63, 64, 67, 100] {
            for m in [1, 7, 64, 70] {
                for offset in 0..4 {
                    for shifted in [true, false] {
                        for col0 in (0..n).step_by(32) {
                            check_bf16(shifted, (m, n), (0, col0), offset);
                        }
                        if m > 64 {
                            check_bf16(shifted, (m, n), (64, 0), offset);
                        }
                    }
                }
            }
        }
    }

    #[derive(Clone, Copy)]
    #[repr(C, align(16))]
    struct Aligned([f32; 4]);

    /// Which probe: 32 or 256 columns regrouped, or 32 by elements where rows are unaligned.
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Probe {
        Narrow,
        Wide,
        Elements,
    }

    /// The tile written into a C that starts `offset` f32 past a 16-byte boundary, poisoned (or,
    /// adding, filled with 0.5) before: inside C and the tile each element exactly its label (plus
    /// 0.5), every other element untouched.
    fn check(probe: Probe, (m, n): (u32, u32), corner: (u32, u32), offset: usize, adding: bool) {
        let width = if probe == Probe::Wide { 256 } else { 32 };
        let before = if adding { 0.5 } else { f32::NAN };
        let len = (m * n) as usize + offset + 8;
        let mut storage = vec![Aligned([before; 4]); len.div_ceil(4)];
        let c = storage.as_mut_ptr().cast::<f32>().wrapping_add(offset);
        let shape = LaunchShape {
            grid: Dim3::x(1),
            block: Dim3::x(128),
            shared_bytes: 0,
        };
        let args = (c, m, n, corner.0, corner.1, adding as u32);
        let kernel = match probe {
            Probe::Narrow => store_32,
            Probe::Wide => store_256,
            Probe::Elements => store_32_by_elements,
        };
        // SAFETY: C holds m·n f32 from `c`, and more past them.
        unsafe { kernel.emulate(&shape, args) }.unwrap();
        let all = unsafe { core::slice::from_raw_parts(storage.as_ptr().cast::<f32>(), storage.len() * 4) };
        let what = format!("{probe:?}, {m}×{n}, tile at {corner:?}, C {offset} f32 past 16 bytes, adding {adding}");
        for (at, &got) in all.iter().enumerate() {
            let element = at.checked_sub(offset).filter(|&e| e < (m * n) as usize);
            let expected = match element {
                Some(e) => {
                    let (row, col) = (e as u32 / n, e as u32 % n);
                    let inside =
                        (corner.0..corner.0 + 64).contains(&row) && (corner.1..corner.1 + width).contains(&col);
                    if inside {
                        label((row, col)) + if adding { 0.5 } else { 0.0 }
                    } else {
                        before
                    }
                }
                None => before,
            };
            assert!(
                got.to_bits() == expected.to_bits(),
                "{what}: element {element:?} (storage {at}) {got}, expected {expected}"
            );
        }
    }

    /// Every row alignment (n not a multiple of 4, C not 16-byte aligned) and the aligned case,
    /// tiles whole and cut by C's last row and column, stored and added, regrouped and by
    /// elements.
    #[test]
    fn tiles_land_whole_at_every_alignment() {
        for n in [1, 2, 3, 5, 31, 32, 33, 34, 35, 63, 64, 67, 100] {
            for m in [1, 7, 64, 70] {
                for offset in 0..4 {
                    for adding in [false, true] {
                        for probe in [Probe::Narrow, Probe::Elements] {
                            for col0 in (0..n).step_by(32) {
                                check(probe, (m, n), (0, col0), offset, adding);
                            }
                            if m > 64 {
                                check(probe, (m, n), (64, 0), offset, adding);
                            }
                        }
                    }
                }
            }
        }
    }

    /// The kernels' width: 256 columns a tile, C a few tiles wide with an odd last one.
    #[test]
    fn wide_tiles_land_whole_at_every_alignment() {
        for (m, n) in [(64, 256), (65, 515), (3, 50257 % 1024 + 256)] {
            for offset in 0..4 {
                for adding in [false, true] {
                    for col0 in (0..n).step_by(256) {
                        check(Probe::Wide, (m, n), (0, col0), offset, adding);
                    }
                }
            }
        }
    }
}
