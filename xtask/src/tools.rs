//! The CUDA tools this workspace fetches for machines without a CUDA install: ptxas from PyPI's
//! `nvidia-cuda-nvcc-cu12` wheel (`cargo xtask setup`), unpacked under the target folder.

use std::path::{Path, PathBuf};

/// The wheel that carries ptxas.
pub const NVCC_WHEEL: &str = "nvidia-cuda-nvcc-cu12==12.9.86";

/// Where `cargo xtask setup` unpacks the wheel, under the target folder.
pub fn tools_dir(target_dir: &Path) -> PathBuf {
    target_dir.join("tools").join("cuda-nvcc")
}

/// ptxas inside the unpacked wheel.
pub fn wheel_ptxas(target_dir: &Path) -> PathBuf {
    tools_dir(target_dir).join("nvidia/cuda_nvcc/bin/ptxas")
}

/// The ptxas the builder finds (`$PTXAS`, `PATH`, `$CUDA_PATH`, `/usr/local/cuda`), else the one
/// `cargo xtask setup` unpacked; with where it came from.
pub fn find_ptxas(target_dir: &Path) -> Option<(PathBuf, &'static str)> {
    ptxkit_build::ptxas::find_ptxas().or_else(|| {
        let wheel = wheel_ptxas(target_dir);
        wheel.is_file().then_some((wheel, "cargo xtask setup"))
    })
}
