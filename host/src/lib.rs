//! The host side: launches the Rust kernels on the GPU (through cudarc) or on the CPU emulator,
//! with device and managed memory, CUDA-event timing, and the demos behind the `host` binary.
//!
//! * [`backend`]: where kernels run, and the one launch path for both places.
//! * [`array`]: what a launch takes as an array (host, device or managed memory).
//! * [`families`]: per family, the safe launch (the problem's argument checks), inputs, reference
//!   check and sizes; tests, demos, benches and the sanitizer sweep iterate them.
//! * [`gpu`]: the device, its limits, managed memory, cuBLAS, the CUDA C twins, event timing.
//! * [`demos`]: what the `host` binary prints.
//!
//! ```no_run
//! # fn main() -> host::Result<()> {
//! # let (m, n, k) = (64, 48, 32);
//! # let (a_host, b_host) = (vec![1.0f32; m * k], vec![1.0f32; k * n]);
//! use host::families::matmul;
//! use host::{Backend, gpu::Gpu};
//! use kernels::matmul::{Matmul, tiled};
//! use kernels::Source;
//!
//! let gpu = Gpu::open(None)?; // device 0, or the one $KERNELS_DEVICE names
//! let (a, b) = (gpu.upload(&a_host)?, gpu.upload(&b_host)?);
//! let mut c = gpu.upload(&vec![f32::NAN; m * n])?;
//! let backend = Backend::Gpu(Box::new(gpu)); // or Backend::Emu, with Vec<f32> arrays
//! let problem = Matmul::new(m, n, k)?; // sizes no kernel can run are refused here
//! matmul::launch(&backend, &tiled::KERNEL, Source::Rust, &problem, &a, &b, &mut c)?;
//! # Ok(())
//! # }
//! ```

pub mod array;
pub mod backend;
pub mod demos;
pub mod error;
pub mod families;
pub mod gpu;
pub mod ptx;

pub use backend::{Backend, BackendChoice};
pub use error::{HostError, Result};
