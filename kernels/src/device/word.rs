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

/// The raw storage of a [`SharedWord`]: `u32` or `u64`. On the emulator each shared-memory access
/// is a relaxed atomic of that width, so a racy kernel gives wrong numbers, never undefined behaviour.
pub trait SharedBits: Copy + sealed::Sealed {
    /// # Safety
    /// `ptr` is valid and aligned for `Self`.
    #[cfg(not(target_arch = "nvptx64"))]
    unsafe fn load_relaxed(ptr: *const Self) -> Self;
    /// # Safety
    /// `ptr` is valid and aligned for `Self`.
    #[cfg(not(target_arch = "nvptx64"))]
    unsafe fn store_relaxed(ptr: *mut Self, value: Self);
}

macro_rules! shared_bits {
    ($($t:ty => $atomic:ty;)*) => {$(
        impl SharedBits for $t {
            #[cfg(not(target_arch = "nvptx64"))]
            unsafe fn load_relaxed(ptr: *const Self) -> Self {
                // SAFETY: the caller passes a valid, aligned pointer.
                unsafe { <$atomic>::from_ptr(ptr.cast_mut()) }.load(core::sync::atomic::Ordering::Relaxed)
            }
            #[cfg(not(target_arch = "nvptx64"))]
            unsafe fn store_relaxed(ptr: *mut Self, value: Self) {
                // SAFETY: the caller passes a valid, aligned pointer.
                unsafe { <$atomic>::from_ptr(ptr) }.store(value, core::sync::atomic::Ordering::Relaxed)
            }
        }
    )*};
}

shared_bits! {
    u32 => core::sync::atomic::AtomicU32;
    u64 => core::sync::atomic::AtomicU64;
}

/// A value that shared-memory views hold: 4 or 8 bytes, naturally aligned.
pub trait SharedWord: Copy + sealed::Sealed {
    /// Stored as these bits.
    type Bits: SharedBits;
    fn to_bits(self) -> Self::Bits;
    fn from_bits(bits: Self::Bits) -> Self;
}

macro_rules! shared_word {
    ($($t:ty => $bits:ty, $to:expr, $from:expr;)*) => {$(
        impl sealed::Sealed for $t {}
        impl SharedWord for $t {
            type Bits = $bits;
            #[inline(always)]
            fn to_bits(self) -> $bits {
                $to(self)
            }
            #[inline(always)]
            fn from_bits(bits: $bits) -> Self {
                $from(bits)
            }
        }
    )*};
}

shared_word! {
    u32 => u32, |v| v, |b| b;
    i32 => u32, |v: i32| v as u32, |b: u32| b as i32;
    f32 => u32, f32::to_bits, f32::from_bits;
    u64 => u64, |v| v, |b| b;
    i64 => u64, |v: i64| v as u64, |b: u64| b as i64;
    f64 => u64, f64::to_bits, f64::from_bits;
}
