//! The element types the row kernels read and write (the fused norms, [`crate::norm::residual`];
//! cross-entropy's logits and their gradient, [`crate::cross_entropy`]): f32, and bf16 as PyTorch's
//! bf16 kernels compute it (each value widened to f32, the arithmetic in f32, each output rounded
//! to bf16 once, to the nearest, ties to even).

use ptxkit::device::mma::{Bf16, round_pack_bf16x2};
use ptxkit::device::{Float4, GlobalSlice, GlobalSliceMut};

/// Elements of a row as f32, in 16-byte vectors of [`RowElement::LANES`] where the row allows.
pub trait RowElement: Copy + 'static {
    /// Elements in one 16-byte vector.
    const LANES: u32;

    fn to_f32(self) -> f32;

    /// `x` rounded to this type (nearest, ties to even).
    fn from_f32(x: f32) -> Self;

    /// The bits of a 16-byte vector of −∞ (as four f32 words).
    const RAW_NEG_INFINITY: [f32; 4];

    /// A 16-byte vector's bits (four f32 words, as loaded or staged) as its `LANES` values widened
    /// (slots past LANES 0).
    fn widen(raw: [f32; 4]) -> [f32; 8];

    /// Elements `i..i + LANES` of `src` in one 16-byte load, as bits.
    ///
    /// # Safety
    /// `i + LANES ≤ len`, element `i` 16-byte aligned.
    unsafe fn load_raw(src: GlobalSlice<Self>, i: u32) -> [f32; 4];

    /// The bits of the vector whose value k is `f(k, value k of raw)`, each rounded to this type:
    /// two values at a time for bf16, so that few are held at once.
    fn map_raw(raw: [f32; 4], f: impl FnMut(u32, f32) -> f32) -> [f32; 4];

    /// A vector's bits into elements `i..i + LANES` of `dst` in one 16-byte store.
    ///
    /// # Safety
    /// As for [`RowElement::load_raw`].
    unsafe fn store_raw(dst: GlobalSliceMut<Self>, i: u32, raw: [f32; 4]);

    /// Elements `i..i + LANES` of `src` in one 16-byte load, widened (slots past LANES 0).
    ///
    /// # Safety
    /// `i + LANES ≤ len`, element `i` 16-byte aligned.
    unsafe fn load_vector(src: GlobalSlice<Self>, i: u32) -> [f32; 8];

    /// `values[..LANES]` rounded into elements `i..i + LANES` of `dst` in one 16-byte store.
    ///
    /// # Safety
    /// As for [`RowElement::load_vector`].
    unsafe fn store_vector(dst: GlobalSliceMut<Self>, i: u32, values: [f32; 8]);
}

impl RowElement for f32 {
    const LANES: u32 = 4;

    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }

    #[inline(always)]
    fn from_f32(x: f32) -> f32 {
        x
    }

    const RAW_NEG_INFINITY: [f32; 4] = [f32::NEG_INFINITY; 4];

    #[inline(always)]
    fn widen([a, b, c, d]: [f32; 4]) -> [f32; 8] {
        [a, b, c, d, 0.0, 0.0, 0.0, 0.0]
    }

    #[inline(always)]
    unsafe fn load_raw(src: GlobalSlice<f32>, i: u32) -> [f32; 4] {
        // SAFETY: the caller's promise.
        unsafe { src.get4_unchecked(i) }.0
    }

    #[inline(always)]
    fn map_raw(raw: [f32; 4], mut f: impl FnMut(u32, f32) -> f32) -> [f32; 4] {
        [f(0, raw[0]), f(1, raw[1]), f(2, raw[2]), f(3, raw[3])]
    }

    #[inline(always)]
    unsafe fn store_raw(dst: GlobalSliceMut<f32>, i: u32, raw: [f32; 4]) {
        // SAFETY: the caller's promise.
        unsafe { dst.set4_unchecked(i, Float4(raw)) };
    }

    #[inline(always)]
    unsafe fn load_vector(src: GlobalSlice<f32>, i: u32) -> [f32; 8] {
        // SAFETY: the caller's promise.
        let Float4([a, b, c, d]) = unsafe { src.get4_unchecked(i) };
        [a, b, c, d, 0.0, 0.0, 0.0, 0.0]
    }

    #[inline(always)]
    unsafe fn store_vector(dst: GlobalSliceMut<f32>, i: u32, v: [f32; 8]) {
        // SAFETY: the caller's promise.
        unsafe { dst.set4_unchecked(i, Float4([v[0], v[1], v[2], v[3]])) };
    }
}

impl RowElement for Bf16 {
    const LANES: u32 = 8;

    #[inline(always)]
    fn to_f32(self) -> f32 {
        Bf16::to_f32(self)
    }

    #[inline(always)]
    fn from_f32(x: f32) -> Bf16 {
        Bf16::from_f32(x)
    }

    /// bf16's −∞ (0xff80) in both halves of each word.
    const RAW_NEG_INFINITY: [f32; 4] = [f32::from_bits(0xff80_ff80); 4];

    #[inline(always)]
    fn widen(words: [f32; 4]) -> [f32; 8] {
        let mut out = [0.0; 8];
        for (w, word) in words.iter().enumerate() {
            // The lower-numbered element in the low half: each half is the upper half of an f32.
            let bits = word.to_bits();
            out[2 * w] = f32::from_bits(bits << 16);
            out[2 * w + 1] = f32::from_bits(bits & 0xffff_0000);
        }
        out
    }

    #[inline(always)]
    unsafe fn load_raw(src: GlobalSlice<Bf16>, i: u32) -> [f32; 4] {
        // SAFETY: the caller's promise: eight bf16 from a 16-byte boundary are four aligned words.
        unsafe { src.tail(i).cast::<f32>().get4_unchecked(0u32) }.0
    }

    #[inline(always)]
    fn map_raw(raw: [f32; 4], mut f: impl FnMut(u32, f32) -> f32) -> [f32; 4] {
        core::array::from_fn(|w| {
            let bits = raw[w].to_bits();
            let k = 2 * w as u32;
            let low = f(k, f32::from_bits(bits << 16));
            let high = f(k + 1, f32::from_bits(bits & 0xffff_0000));
            f32::from_bits(round_pack_bf16x2(low, high))
        })
    }

    #[inline(always)]
    unsafe fn store_raw(dst: GlobalSliceMut<Bf16>, i: u32, raw: [f32; 4]) {
        // SAFETY: the caller's promise, as for the load.
        unsafe { dst.tail(i).cast::<f32>().set4_unchecked(0u32, Float4(raw)) };
    }

    #[inline(always)]
    unsafe fn load_vector(src: GlobalSlice<Bf16>, i: u32) -> [f32; 8] {
        // SAFETY: the caller's promise.
        Self::widen(unsafe { Self::load_raw(src, i) })
    }

    #[inline(always)]
    unsafe fn store_vector(dst: GlobalSliceMut<Bf16>, i: u32, v: [f32; 8]) {
        let words = core::array::from_fn(|w| f32::from_bits(round_pack_bf16x2(v[2 * w], v[2 * w + 1])));
        // SAFETY: the caller's promise, as for the load.
        unsafe { dst.tail(i).cast::<f32>().set4_unchecked(0u32, Float4(words)) };
    }
}
