//! The host side: launches the Rust kernels on the GPU (through cudarc) or on the CPU emulator,
//! with device and managed memory, CUDA-event timing, and the demos behind the `host` binary.

pub mod demos;
pub mod emu;
pub mod error;
pub mod gpu;
pub mod ptx;
pub mod validate;

pub use error::{HostError, Result};
