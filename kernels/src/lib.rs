//! The project's kernel library: each family's kernels, one idea per file, written with the device
//! crate ([`ptxkit`]) as any user's kernel crate is.
//!
//! Each kernel module declares one [`Kernel`](ptxkit::Kernel) value (its code, block shape, shared
//! memory and grid), each family lists its kernels, and the [`registry`] lists the families: the
//! host, the tests, the benches and the PTX checks all read them from there. [`reference`] holds
//! the f64 CPU references and their tolerances.
#![cfg_attr(target_arch = "nvptx64", no_std)]
// `#[inline(always)]` on the closures that hold a kernel's accumulators: a closure the inliner leaves
// out of line takes them by reference, which puts them in local memory.
#![feature(stmt_expr_attributes)]

pub mod banks;
#[cfg(not(target_arch = "nvptx64"))]
pub mod bench_results;
#[cfg(not(target_arch = "nvptx64"))]
pub mod registry;
#[cfg(not(target_arch = "nvptx64"))]
pub mod size;
pub mod source;

pub mod atomic_probe;
pub mod attention;
pub mod conv2d;
pub mod cross_entropy;
pub mod element;
pub mod elementwise;
pub mod gather;
pub mod histogram;
pub mod histogram_f32;
mod inlined;
pub mod matmul;
pub mod matmul_bf16;
pub mod matmul_fp8;
pub mod matmul_tc;
pub mod mma_probe;
pub mod norm;
pub mod probe;
pub mod quantize_fp8;
pub mod reduce;
#[cfg(not(target_arch = "nvptx64"))]
pub mod reference;
pub mod rows;
pub mod scan;
pub mod shared_mem_add;
pub mod softmax;
#[cfg(not(target_arch = "nvptx64"))]
pub mod special_values;
#[cfg(not(target_arch = "nvptx64"))]
pub mod testing;
pub mod transpose;
pub mod vec_add;

pub use source::Source;
