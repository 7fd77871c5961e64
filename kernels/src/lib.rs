//! GPU kernels written in Rust, one source for two targets.
//!
//! * On `nvptx64-nvidia-cuda` the crate is `no_std`: every kernel is an `extern "ptx-kernel"` entry
//!   point and a panic traps (the PTX builder compiles `core` with `-Cpanic=immediate-abort`).
//! * On the host the same kernel bodies run on a CPU emulator ([`emu`]): a launch runs the grid block by
//!   block, each block's threads as OS threads sharing that block's shared memory.
//!
//! Kernels are written with the [`kernel!`] macro and the device layer in [`device`]. Each kernel
//! module declares one [`Kernel`] value (its code, block shape, shared memory and grid), each family
//! lists its kernels, and the [`registry`] lists the families: the host, the emulator, the tests, the
//! benches and the PTX builder all read them from there.
#![cfg_attr(target_arch = "nvptx64", no_std)]
// `#[inline(always)]` on the closures that hold a kernel's accumulators: a closure the inliner leaves
// out of line takes them by reference, which puts them in local memory.
#![feature(stmt_expr_attributes)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        abi_ptx,
        stdarch_nvptx,
        asm_experimental_arch,
        core_intrinsics,
        gpu_intrinsics,
        gpu_launch_sized_workgroup_mem
    )
)]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]

pub mod banks;
pub mod device;
#[cfg(not(target_arch = "nvptx64"))]
pub mod emu;
pub mod family;
mod kernel_macro;
pub mod launch;
pub mod params;
#[cfg(not(target_arch = "nvptx64"))]
pub mod registry;

pub mod atomic_probe;
pub mod attention;
pub mod conv2d;
pub mod elementwise;
pub mod gather;
pub mod histogram;
pub mod histogram_f32;
pub mod matmul;
pub mod matmul_bf16;
pub mod matmul_tc;
pub mod mma_probe;
pub mod probe;
pub mod reduce;
#[cfg(not(target_arch = "nvptx64"))]
pub mod reference;
pub mod rows;
pub mod scan;
pub mod shared_mem_add;
pub mod softmax;
#[cfg(not(target_arch = "nvptx64"))]
pub mod testing;
pub mod transpose;
pub mod vec_add;

#[cfg(not(target_arch = "nvptx64"))]
pub use family::{AnyFamily, InvalidSize};
pub use family::{Family, Kernel, KernelFn, KernelInfo, LaunchBounds, Problem, SharedMemory, Source};
pub use launch::{Dim3, LaunchShape};
pub use params::Params;

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // Unreachable in practice: with -Cpanic=immediate-abort every panic site is an inline trap.
    core::intrinsics::abort()
}
