//! The value types that shared memory and warp shuffles move.

mod sealed {
    pub trait Sealed {}
}

/// A 32-bit value a warp shuffle can move (`shfl.sync.*.b32`).
pub trait WarpWord: Copy + sealed::Sealed {
    fn to_bits(self) -> u32;
    fn from_bits(bits: u32) -> Self;
}

impl WarpWord for u32 {
    #[inline(always)]
    fn to_bits(self) -> u32 {
        self
    }
    #[inline(always)]
    fn from_bits(bits: u32) -> Self {
        bits
    }
}

impl WarpWord for i32 {
    #[inline(always)]
    fn to_bits(self) -> u32 {
        self as u32
    }
    #[inline(always)]
    fn from_bits(bits: u32) -> Self {
        bits as i32
    }
}

impl WarpWord for f32 {
    #[inline(always)]
    fn to_bits(self) -> u32 {
        f32::to_bits(self)
    }
    #[inline(always)]
    fn from_bits(bits: u32) -> Self {
        f32::from_bits(bits)
    }
}

/// A value that shared-memory views hold: 4, 8 or 16 bytes, naturally aligned. (Sealed: the
/// emulator's shadow tracks shared memory in 4-byte words.)
pub trait SharedWord: Copy + sealed::Sealed {}

macro_rules! shared_word {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl SharedWord for $t {}
    )*};
}

shared_word!(u32, i32, f32, u64, i64, f64, super::Float4);

/// A 4-byte shared word: what `cp.async` moves four of at a time, and what a pair of bf16 or a
/// tf32 operand travels in.
pub trait Word32: SharedWord {}

impl Word32 for u32 {}
impl Word32 for i32 {}
impl Word32 for f32 {}
