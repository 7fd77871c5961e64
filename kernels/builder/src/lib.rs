//! Builds a kernel crate to PTX from a build script: rustc's `nvptx64-nvidia-cuda` target, one
//! module per GPU architecture, with the launch bounds its kernels declare, checked by ptxas where
//! one is found, embedded as constants for `ptxkit-runtime` to load.
//!
//! ```no_run
//! // The build script (build.rs) of the crate that launches the kernels:
//! if let Err(error) = ptxkit_build::PtxBuilder::new("../stencil-kernels").embed() {
//!     // One line for cargo's summary, the whole message above it.
//!     eprintln!("{error}");
//!     println!("cargo::error={}", error.summary());
//!     std::process::exit(1);
//! }
//! ```
//!
//! and in that crate, `ptxkit_runtime::include_kernels!(stencil_kernels);` defines
//! `StencilKernels`, which `Gpu::load::<StencilKernels>()` loads.
//!
//! The kernel crate needs a nightly toolchain with `rust-src` (the target's `core` is built from
//! source) and `#![cfg_attr(target_arch = "nvptx64", no_std)]`; nothing else.

pub mod arch;
mod build;
mod embed;
pub mod ptx;
pub mod ptxas;

pub use arch::{Arch, DEFAULT_ARCHS, HOPPER_PTX_ISA, PTX_ISA};
pub use build::{Built, BuiltPtx, LINE_INFO_ENV, PtxBuilder, PtxasCheck, TARGET, crate_name};
pub use embed::type_name;

use std::path::PathBuf;

/// Why a kernel crate did not build to PTX. Each message says what was wrong and what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kernel crate manifest {path}: {reason}")]
    Manifest { path: PathBuf, reason: String },
    #[error("cannot run {cargo}: {source}")]
    Spawn { cargo: String, source: std::io::Error },
    #[error(
        "building the kernels for {arch} failed ({status}).{}\n{stderr}",
        hint.map(|h| format!("\nhint: {h}")).unwrap_or_default()
    )]
    Compile {
        arch: Arch,
        status: std::process::ExitStatus,
        hint: Option<&'static str>,
        stderr: String,
    },
    #[error("the nested build for {arch} finished but wrote no PTX at {path}")]
    Missing { arch: Arch, path: PathBuf },
    #[error("the {arch} PTX: {problem}")]
    Ptx { arch: Arch, problem: ptx::PtxProblem },
    #[error("ptxas: {message}")]
    Ptxas { arch: Arch, message: String },
    #[error(
        "ptxas was asked for and none was found: set $PTXAS to its path, or put CUDA's bin folder on PATH (or in $CUDA_PATH)"
    )]
    NoPtxas,
    #[error("local memory (register spills or a stack frame) in: {}", .0.join(", "))]
    LocalMemory(Vec<String>),
    #[error("cannot write {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("PtxBuilder::embed runs in a build script (cargo sets OUT_DIR there); use PtxBuilder::build elsewhere")]
    NotInBuildScript,
}

impl Error {
    /// The message's first line, for `cargo::error=` (which takes one line).
    pub fn summary(&self) -> String {
        let text = self.to_string();
        text.lines().next().unwrap_or_default().to_string()
    }
}
