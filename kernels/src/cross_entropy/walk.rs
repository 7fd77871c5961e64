//! A row walked by the threads of a block, 16 bytes a load where the row allows: the elements
//! before the row's first 16-byte boundary one each, the aligned middle a vector at a time (four
//! f32 or eight bf16, [`RowElement::LANES`]), the few past it one each. A row of logits starts
//! wherever `r · cols` puts it (a vocabulary of 50257 words is odd), so the middle is found from
//! the address, not assumed. Values are read as f32 whatever the element type, and written
//! rounded to it.

use crate::element::RowElement;
use ptxkit::device::{GlobalSlice, GlobalSliceMut};

/// The row of `cols` elements of `E` at `ptr` as (head, vectors): `head` elements (fewer than
/// `E::LANES`) before its first 16-byte boundary, then `vectors` aligned vectors of `E::LANES`; the
/// rest, fewer than `E::LANES`, after.
#[inline(always)]
pub fn split<E: RowElement>(ptr: *const E, cols: u32) -> (u32, u32) {
    let lanes = E::LANES;
    let offset = ((ptr as usize / core::mem::size_of::<E>()) % lanes as usize) as u32;
    let head = ((lanes - offset) % lanes).min(cols);
    (head, (cols - head) / lanes)
}

/// Calls `visit(c, x)` with element c of `row` for this thread's share (`t` of `T` threads): each
/// element of the row is visited by exactly one thread of the block.
///
/// # Safety
/// `row` holds `cols` elements; `t < T`, `T ≥ E::LANES`.
#[inline(always)]
pub unsafe fn read_row<E: RowElement, const T: u32>(
    row: GlobalSlice<E>,
    cols: u32,
    t: u32,
    mut visit: impl FnMut(u32, f32),
) {
    let (head, vectors) = split(row.as_ptr(), cols);
    if t < head {
        // SAFETY: t < head ≤ cols.
        visit(t, unsafe { row.get_unchecked(t) }.to_f32());
    }
    let mut v = t;
    while v < vectors {
        let c = head + E::LANES * v;
        // SAFETY: c + LANES ≤ head + LANES·vectors ≤ cols, and element c is on a 16-byte boundary.
        let x = unsafe { E::load_vector(row, c) };
        for k in 0..E::LANES {
            visit(c + k, x[k as usize]);
        }
        v += T;
    }
    let c = head + E::LANES * vectors + t;
    if c < cols {
        // SAFETY: c < cols.
        visit(c, unsafe { row.get_unchecked(c) }.to_f32());
    }
}

/// Writes `f(c, x)` to element c of `dst` for each element x of `src` in this thread's share (`t`
/// of `T` threads), by 16-byte loads and stores where both rows sit alike against 16-byte
/// boundaries, one element at a time otherwise.
///
/// # Safety
/// `src` and `dst` hold `cols` elements; `t < T`, `T ≥ E::LANES`.
#[inline(always)]
pub unsafe fn map_row<E: RowElement, const T: u32>(
    src: GlobalSlice<E>,
    dst: GlobalSliceMut<E>,
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
            unsafe { map_one(src, dst, c, &mut f) };
            c += T;
        }
        return;
    }
    let (head, vectors) = split(src.as_ptr(), cols);
    if t < head {
        // SAFETY: t < head ≤ cols.
        unsafe { map_one(src, dst, t, &mut f) };
    }
    let mut v = t;
    while v < vectors {
        let c = head + E::LANES * v;
        // SAFETY: c + LANES ≤ cols; element c of both rows is on a 16-byte boundary (they sit
        // alike).
        let mut x = unsafe { E::load_vector(src, c) };
        for k in 0..E::LANES {
            x[k as usize] = f(c + k, x[k as usize]);
        }
        // SAFETY: as above.
        unsafe { E::store_vector(dst, c, x) };
        v += T;
    }
    let c = head + E::LANES * vectors + t;
    if c < cols {
        // SAFETY: c < cols.
        unsafe { map_one(src, dst, c, &mut f) };
    }
}

/// Element c of `dst` from element c of `src`, one at a time.
///
/// # Safety
/// `c` is inside both rows.
#[inline(always)]
unsafe fn map_one<E: RowElement>(
    src: GlobalSlice<E>,
    dst: GlobalSliceMut<E>,
    c: u32,
    f: &mut impl FnMut(u32, f32) -> f32,
) {
    // SAFETY: the caller's promise.
    unsafe { dst.set_unchecked(c, E::from_f32(f(c, src.get_unchecked(c).to_f32()))) }
}

/// Writes `value` to every element of `dst` in this thread's share (`t` of `T` threads).
///
/// # Safety
/// `dst` holds `cols` elements; `t < T`, `T ≥ E::LANES`.
#[inline(always)]
pub unsafe fn fill_row<E: RowElement, const T: u32>(dst: GlobalSliceMut<E>, cols: u32, t: u32, value: f32) {
    let (head, vectors) = split(dst.as_mut_ptr().cast_const(), cols);
    let element = E::from_f32(value);
    if t < head {
        // SAFETY: t < head ≤ cols.
        unsafe { dst.set_unchecked(t, element) };
    }
    let mut v = t;
    while v < vectors {
        // SAFETY: as in `map_row`.
        unsafe { E::store_vector(dst, head + E::LANES * v, [value; 8]) };
        v += T;
    }
    let c = head + E::LANES * vectors + t;
    if c < cols {
        // SAFETY: c < cols.
        unsafe { dst.set_unchecked(c, element) };
    }
}

#[cfg(test)]
mod tests {
    use super::split;
    use crate::element::RowElement;
    use ptxkit::device::mma::Bf16;

    fn covers<E: RowElement>() {
        let (base, size, lanes) = (0x1000usize, core::mem::size_of::<E>(), E::LANES as usize);
        for offset in 0..lanes {
            for cols in 0..3 * lanes as u32 {
                let (head, vectors) = split((base + size * offset) as *const E, cols);
                assert!(head <= cols && (head as usize) < lanes, "offset {offset}, cols {cols}");
                assert!(head + E::LANES * vectors <= cols && cols - head - E::LANES * vectors < E::LANES);
                if cols as usize >= lanes - offset % lanes {
                    assert_eq!(
                        (base + size * (offset + head as usize)) % 16,
                        0,
                        "offset {offset}, cols {cols}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_split_covers_the_row_from_its_first_boundary() {
        covers::<f32>();
        covers::<Bf16>();
    }
}
