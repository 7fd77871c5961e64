//! The CUDA C twins of the Rust kernels (`benches/reference/cuda_c/*.cu`), compiled by nvcc to PTX
//! on the GPU runner and loaded as the module [`CUDA_C_MODULE`], so that each launches through the
//! same checked path as its Rust kernel and Rust and CUDA C are timed like for like.

use kernels::registry::CUDA_C_ENTRY_SUFFIX;
use kernels::source::CUDA_C_MODULE;
use ptxkit_runtime::{Error, Gpu, Result};
use std::path::Path;

/// Loads every `*.ptx` in `dir`, each `<kernel>_cuda` entry as the twin of the Rust `<kernel>`;
/// from then on kernels launch from [`Source::CudaC`](kernels::Source::CudaC) too. Returns how
/// many twins it loaded.
pub fn load_cuda_c(gpu: &mut Gpu, dir: &Path) -> Result<usize> {
    let unreadable = |e: std::io::Error| Error::InvalidInput {
        what: "--cuda-c".into(),
        reason: format!("cannot read the CUDA C PTX folder {}: {e}", dir.display()),
    };
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .map_err(unreadable)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
        .collect();
    paths.sort();
    let mut twins = 0;
    for path in paths {
        let text = std::fs::read_to_string(&path).map_err(unreadable)?;
        twins += ptxkit_build::ptx::entry_names(&text)
            .iter()
            .filter(|e| e.ends_with(CUDA_C_ENTRY_SUFFIX))
            .count();
        gpu.load_ptx(CUDA_C_MODULE, &text, |entry| {
            entry.strip_suffix(CUDA_C_ENTRY_SUFFIX).map(str::to_string)
        })?;
    }
    if twins == 0 {
        return Err(Error::InvalidInput {
            what: "--cuda-c".into(),
            reason: format!("{} holds no PTX with *{CUDA_C_ENTRY_SUFFIX} entries", dir.display()),
        });
    }
    Ok(twins)
}
