//! The PTX builder and the ptxas checks, shared by `cargo xtask` and `host/build.rs`.

pub mod arch;
pub mod bench_results;
pub mod ptx_build;
pub mod ptxas;

pub use arch::{Arch, DEFAULT_ARCHS};
pub use ptx_build::{PtxBuild, PtxBuildError};
