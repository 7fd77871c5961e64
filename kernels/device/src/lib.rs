//! Write CUDA kernels in Rust: what a kernel crate depends on, and nothing else.
//!
//! * [`device`]: CUDA's names for what a kernel body calls (`thread_idx()`, `sync_threads()`,
//!   shuffles, shared-memory views, atomics, `cp.async`, the tensor cores' `mma.sync`, Hopper's
//!   `wgmma` and TMA). On `nvptx64-nvidia-cuda` each is a PTX instruction or special register.
//! * [`kernel!`] and [`shared_memory!`]: one kernel body, two forms. On nvptx64 an
//!   `extern "ptx-kernel"` entry point; on the host the same body runs on the CPU emulator
//!   ([`emu`]), which reports races in shared and global memory, reads of shared memory nobody
//!   wrote, out-of-bounds indices and barrier bugs with the threads, the element and your source
//!   lines, with the blocks in any order ([`emu::Schedule`]).
//! * [`Kernel`], [`Family`], [`Problem`], [`LaunchBounds`], [`SharedMemory`]: a kernel with its
//!   launch (block, shared bytes, grid), checked against CUDA's limits at compile time.
//!
//! A kernel crate needs one crate attribute, `#![cfg_attr(target_arch = "nvptx64", no_std)]`;
//! this crate brings the panic handler and the unstable features the macros expand to. Build it
//! to PTX with `ptxkit-build` and launch it with `ptxkit-runtime`; its tests run on the emulator
//! with a plain `cargo test`.
//!
//! ```
//! use ptxkit::device::{GlobalSlice, GlobalSliceMut, block_dim, block_idx, thread_idx};
//! use ptxkit::{Dim3, LaunchShape, kernel};
//!
//! kernel! {
//!     /// out[i] = a·x[i] + y[i]
//!     pub unsafe fn saxpy(a: f32, x: GlobalSlice<f32>, y: GlobalSlice<f32>, out: GlobalSliceMut<f32>) {
//!         let i = block_idx().x * block_dim().x + thread_idx().x;
//!         if (i as usize) < out.len() {
//!             out.set(i, a * x.get(i) + y.get(i));
//!         }
//!     }
//! }
//!
//! let (x, y, mut out) = ([1.0f32, 2.0, 3.0], [10.0f32; 3], [f32::NAN; 3]);
//! let launch = LaunchShape { grid: Dim3::x(1), block: Dim3::x(4), shared_bytes: 0 };
//! let args = (2.0, GlobalSlice::new(&x), GlobalSlice::new(&y), GlobalSliceMut::new(&mut out));
//! // SAFETY: the views are of arrays that outlive the launch.
//! unsafe { saxpy.emulate(&launch, args) }.unwrap();
//! assert_eq!(out, [12.0, 14.0, 16.0]);
//! ```
#![cfg_attr(target_arch = "nvptx64", no_std)]
// The macros expand to `extern "ptx-kernel"` entries in the kernel crate; with this, that crate
// needs no feature attribute of its own.
#![feature(allow_internal_unstable)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        stdarch_nvptx,
        asm_experimental_arch,
        core_intrinsics,
        gpu_intrinsics,
        gpu_launch_sized_workgroup_mem
    )
)]
#![allow(internal_features)]

pub mod device;
#[cfg(not(target_arch = "nvptx64"))]
pub mod emu;
pub mod family;
mod kernel_macro;
pub mod launch;
pub mod params;

#[cfg(not(target_arch = "nvptx64"))]
pub use family::{AnyFamily, InvalidSize};
pub use family::{Family, Kernel, KernelFn, KernelInfo, LaunchBounds, Occupancy, Problem, SharedMemory};
pub use launch::{Dim3, LaunchShape};
pub use params::{KernelParam, Param, Params};

/// A kernel crate's panic handler: with `-Cpanic=immediate-abort` (the builder's flag) every panic
/// site is an inline trap, so this is never reached; a kernel crate must not define its own.
#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::intrinsics::abort()
}
