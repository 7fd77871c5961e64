//! The host side: launches the Rust kernels on the GPU (through cudarc) or on the CPU emulator,
//! with device and managed memory, CUDA-event timing, and the demos behind the `host` binary.
//!
//! * [`backend`]: where kernels run, and the one launch path for both places.
//! * [`array`]: what a launch takes as an array (host, device or managed memory).
//! * [`families`]: per family, the safe launch (the problem's argument checks), inputs, reference
//!   check and sizes; tests, demos, benches and the sanitizer sweep iterate them.
//! * [`gpu`]: the device, its limits, managed memory, cuBLAS, the CUDA C twins, event timing.
//! * [`demos`]: what the `host` binary prints.

pub mod array;
pub mod backend;
pub mod demos;
pub mod error;
pub mod families;
pub mod gpu;
pub mod ptx;

pub use backend::{Backend, BackendChoice};
pub use error::{HostError, Result};
