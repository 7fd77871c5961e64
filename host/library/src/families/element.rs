//! The element types as the host holds them (f32, and bf16 as its `u16` bits), for the families
//! whose kernels take either ([`kernels::element::RowElement`]).

use super::norm::SMALLEST_SUBNORMAL;
use kernels::element::RowElement;
use ptxkit::device::mma::Bf16;
use ptxkit::device::{GlobalSlice, GlobalSliceMut};

/// An element type as the host holds it: its bits in arrays, its values as f32.
pub trait HostElement: RowElement {
    type Bits: ptxkit_runtime::array::Element + cudarc::driver::DeviceRepr + Default + Copy;
    /// The relative error of rounding an f32 result to this type (0 for f32 itself).
    const ROUNDING: f64;
    /// The type's smallest subnormal: below the normal range a result rounds to a multiple of it.
    const SMALLEST: f64;
    /// NaN's bits: the poison of outputs.
    const NAN: Self::Bits;
    /// `x` rounded to this type, as bits.
    fn bits(x: f32) -> Self::Bits;
    /// The value of `bits`, exactly.
    fn value(bits: Self::Bits) -> f32;
    /// A view of bits as a view of elements.
    fn elements(view: GlobalSlice<Self::Bits>) -> GlobalSlice<Self>;
    /// The same, writable.
    fn elements_mut(view: GlobalSliceMut<Self::Bits>) -> GlobalSliceMut<Self>;
}

impl HostElement for f32 {
    type Bits = f32;
    const ROUNDING: f64 = 0.0;
    const SMALLEST: f64 = SMALLEST_SUBNORMAL;
    const NAN: f32 = f32::NAN;

    fn bits(x: f32) -> f32 {
        x
    }

    fn value(bits: f32) -> f32 {
        bits
    }

    fn elements(view: GlobalSlice<f32>) -> GlobalSlice<f32> {
        view
    }

    fn elements_mut(view: GlobalSliceMut<f32>) -> GlobalSliceMut<f32> {
        view
    }
}

impl HostElement for Bf16 {
    type Bits = u16;
    const ROUNDING: f64 = 1.0 / 256.0;
    /// 2^-133.
    const SMALLEST: f64 = 9.183549615799121e-41;
    const NAN: u16 = 0x7fc0;

    fn bits(x: f32) -> u16 {
        Bf16::from_f32(x).0
    }

    fn value(bits: u16) -> f32 {
        Bf16(bits).to_f32()
    }

    fn elements(view: GlobalSlice<u16>) -> GlobalSlice<Bf16> {
        // SAFETY: Bf16 is a transparent u16: the same size and alignment, every bit pattern valid.
        unsafe { view.cast() }
    }

    fn elements_mut(view: GlobalSliceMut<u16>) -> GlobalSliceMut<Bf16> {
        // SAFETY: as above.
        unsafe { view.cast() }
    }
}
