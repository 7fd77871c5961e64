//! A row walked by the threads of a block, 16 bytes a load where the row allows: the elements
//! before the row's first 16-byte boundary one each, the aligned middle four at a time, the few
//! past it one each. A row of logits starts wherever `r · cols` puts it (a vocabulary of 50257
//! words is odd), so the middle is found from the address, not assumed.

use ptxkit::device::{Float4, GlobalSlice, GlobalSliceMut};

/// The row of `cols` elements at `ptr` as (head, vectors): `head` elements (0 to 3) before its
/// first 16-byte boundary, then `vectors` aligned groups of four; the rest, fewer than four, after.
#[inline(always)]
pub fn split(ptr: *const f32, cols: u32) -> (u32, u32) {
    let offset = ((ptr as usize / 4) % 4) as u32;
    let head = ((4 - offset) % 4).min(cols);
    (head, (cols - head) / 4)
}

/// Calls `visit(c, x)` with element c of `row` for this thread's share (`t` of `T` threads): each
/// element of the row is visited by exactly one thread of the block.
///
/// # Safety
/// `row` holds `cols` elements; `t < T`, `T ≥ 4`.
#[inline(always)]
pub unsafe fn read_row<const T: u32>(row: GlobalSlice<f32>, cols: u32, t: u32, mut visit: impl FnMut(u32, f32)) {
    let (head, vectors) = split(row.as_ptr(), cols);
    if t < head {
        // SAFETY: t < head ≤ cols.
        visit(t, unsafe { row.get_unchecked(t) });
    }
    let mut v = t;
    while v < vectors {
        let c = head + 4 * v;
        // SAFETY: c + 4 ≤ head + 4·vectors ≤ cols, and element c is on a 16-byte boundary.
        let Float4(x) = unsafe { row.get4_unchecked(c) };
        visit(c, x[0]);
        visit(c + 1, x[1]);
        visit(c + 2, x[2]);
        visit(c + 3, x[3]);
        v += T;
    }
    let c = head + 4 * vectors + t;
    if c < cols {
        // SAFETY: c < cols.
        visit(c, unsafe { row.get_unchecked(c) });
    }
}

/// Writes `f(c, x)` to element c of `dst` for each element x of `src` in this thread's share (`t`
/// of `T` threads), by 16-byte loads and stores where both rows sit alike against 16-byte
/// boundaries, one element at a time otherwise.
///
/// # Safety
/// `src` and `dst` hold `cols` elements; `t < T`, `T ≥ 4`.
#[inline(always)]
pub unsafe fn map_row<const T: u32>(
    src: GlobalSlice<f32>,
    dst: GlobalSliceMut<f32>,
    cols: u32,
    t: u32,
    mut f: impl FnMut(u32, f32) -> f32,
) {
    if !(src.as_ptr() as usize)
        .wrapping_sub(dst.as_mut_ptr() as usize)
        .is_multiple_of(16)
    {
        let mut c = t;
        while c < cols {
            // SAFETY: c < cols.
            unsafe { dst.set_unchecked(c, f(c, src.get_unchecked(c))) };
            c += T;
        }
        return;
    }
    let (head, vectors) = split(src.as_ptr(), cols);
    if t < head {
        // SAFETY: t < head ≤ cols.
        unsafe { dst.set_unchecked(t, f(t, src.get_unchecked(t))) };
    }
    let mut v = t;
    while v < vectors {
        let c = head + 4 * v;
        // SAFETY: c + 4 ≤ cols; element c of both rows is on a 16-byte boundary (they sit alike).
        let Float4(x) = unsafe { src.get4_unchecked(c) };
        let y = Float4([f(c, x[0]), f(c + 1, x[1]), f(c + 2, x[2]), f(c + 3, x[3])]);
        // SAFETY: as above.
        unsafe { dst.set4_unchecked(c, y) };
        v += T;
    }
    let c = head + 4 * vectors + t;
    if c < cols {
        // SAFETY: c < cols.
        unsafe { dst.set_unchecked(c, f(c, src.get_unchecked(c))) };
    }
}

/// Writes `value` to every element of `dst` in this thread's share (`t` of `T` threads).
///
/// # Safety
/// `dst` holds `cols` elements; `t < T`, `T ≥ 4`.
#[inline(always)]
pub unsafe fn fill_row<const T: u32>(dst: GlobalSliceMut<f32>, cols: u32, t: u32, value: f32) {
    let (head, vectors) = split(dst.as_mut_ptr(), cols);
    if t < head {
        // SAFETY: t < head ≤ cols.
        unsafe { dst.set_unchecked(t, value) };
    }
    let mut v = t;
    while v < vectors {
        // SAFETY: as in `map_row`.
        unsafe { dst.set4_unchecked(head + 4 * v, Float4([value; 4])) };
        v += T;
    }
    let c = head + 4 * vectors + t;
    if c < cols {
        // SAFETY: c < cols.
        unsafe { dst.set_unchecked(c, value) };
    }
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn the_split_covers_the_row_from_its_first_boundary() {
        let base = 0x1000usize;
        for offset in 0..4usize {
            for cols in 0..12u32 {
                let (head, vectors) = split((base + 4 * offset) as *const f32, cols);
                assert!(head <= cols && head < 4, "offset {offset}, cols {cols}");
                assert!(head + 4 * vectors <= cols && cols - head - 4 * vectors < 4);
                if cols as usize >= 4 - offset % 4 {
                    assert_eq!(
                        (base + 4 * offset + 4 * head as usize) % 16,
                        0,
                        "offset {offset}, cols {cols}"
                    );
                }
            }
        }
    }
}
