//! Kernels a user might write, each for one thing the toolkit promises a kernel crate of its own.
#![cfg_attr(target_arch = "nvptx64", no_std)]

use ptxkit::device::{block_dim, block_idx, global_store, thread_idx};
use ptxkit::{Dim3, Param, kernel};

/// Threads per block of every kernel here.
pub const BLOCK: u32 = 128;

#[inline(always)]
fn index() -> u32 {
    block_idx().x * block_dim().x + thread_idx().x
}

kernel! {
    /// `out[i] = a[i] - b[i]`: named as the library's `vec_add` (which adds), to show that each
    /// crate's kernel launches from its own crate's module.
    pub unsafe fn vec_add(a: *const f32, b: *const f32, out: *mut f32, n: u32) {
        let i = index();
        if i < n {
            // SAFETY: i < n; the caller gives n elements behind each pointer.
            unsafe { global_store(out.add(i as usize), *a.add(i as usize) - *b.add(i as usize)) };
        }
    }
}

/// An affine map, passed to [`affine`] by value.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Affine {
    pub scale: f32,
    pub n: u32,
    pub offset: f64,
    pub input: *const f32,
}

// SAFETY: repr(C) of numbers and a pointer: the same bytes on the host and on nvptx64; `input` is
// device memory where the kernel runs on a GPU (the launch's contract).
unsafe impl Param for Affine {}

kernel! {
    /// `out[i] = input[i] · scale + offset`, the map given by value.
    pub unsafe fn affine(out: *mut f32, map: Affine) {
        let i = index();
        if i < map.n {
            // SAFETY: i < n; the caller gives n elements at `input` and `out`.
            let x = unsafe { *map.input.add(i as usize) };
            unsafe { global_store(out.add(i as usize), (x as f64 * map.scale as f64 + map.offset) as f32) };
        }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(BLOCK), 4)]
    /// `out[i] = i`, with launch bounds: BLOCK threads, four blocks per SM.
    pub unsafe fn bounded(out: *mut u32, n: u32) {
        let i = index();
        if i < n {
            // SAFETY: i < n.
            unsafe { global_store(out.add(i as usize), i) };
        }
    }
}

/// What [`fill`] writes: any number, as written by one thread.
pub trait Filled: Copy {
    fn of_index(i: u32) -> Self;
}

impl Filled for f32 {
    #[inline(always)]
    fn of_index(i: u32) -> Self {
        i as f32 * 0.5
    }
}

impl Filled for u64 {
    #[inline(always)]
    fn of_index(i: u32) -> Self {
        (i as u64) << 33
    }
}

kernel! {
    /// `out[i] = T::of_index(i) + EXTRA`, for each instance's type.
    pub unsafe fn fill<T: Filled + core::ops::Add<Output = T>, const EXTRA: u32>(out: *mut T, n: u32) {
        let i = index();
        if i < n {
            // SAFETY: i < n.
            unsafe { global_store(out.add(i as usize), T::of_index(i) + T::of_index(EXTRA)) };
        }
    }
    instances {
        /// f32 halves, 3 more.
        pub fill_f32 = <f32, 6>;
        #[launch_bounds(Dim3::x(BLOCK), 2)]
        /// u64 multiples of 2^33.
        pub fill_u64 = <u64, 0>;
    }
}

kernel! {
    /// Thread 0 of each block prints its block and `n`.
    pub unsafe fn hello(n: u32) {
        if thread_idx().x == 0 {
            ptxkit::printf!("hello from block %u of %u, n = %u, %s\n", block_idx().x, ptxkit::device::grid_dim().x, n, c"from Rust");
        }
    }
}

kernel! {
    /// Writes `out[n]`, one element past the end: the bug compute-sanitizer must name by its
    /// Rust source line.
    pub unsafe fn past_the_end(out: *mut u32, n: u32) {
        if index() == 0 {
            // SAFETY: deliberately none: this store is the bug.
            unsafe { *out.add(n as usize) = 1 };
        }
    }
}
