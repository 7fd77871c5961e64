//! The CUDA C twins of the Rust kernels (`benches/reference/cuda_c/*.cu`), compiled by nvcc to PTX on the GPU
//! runner and launched through the same host code, so that Rust and CUDA C are timed like for like.

use super::Gpu;
use crate::error::{Doing, HostError, Result};
use cudarc::driver::{CudaFunction, CudaModule};
use std::path::Path;
use std::sync::Arc;

/// Suffix of a CUDA C twin's entry name: `vec_add` in Rust is `vec_add_cuda` in CUDA C.
pub use kernels::registry::CUDA_C_ENTRY_SUFFIX as ENTRY_SUFFIX;

/// The CUDA C twins loaded on one GPU, by the Rust entry name they stand beside.
pub struct CudaC {
    functions: Vec<(String, CudaFunction)>,
    _modules: Vec<Arc<CudaModule>>,
}

impl CudaC {
    /// The CUDA C twin of the Rust kernel `rust_entry`.
    pub fn function(&self, rust_entry: &str) -> Option<&CudaFunction> {
        self.functions
            .iter()
            .find(|(entry, _)| entry == rust_entry)
            .map(|(_, f)| f)
    }

    pub fn has(&self, rust_entry: &str) -> bool {
        self.function(rust_entry).is_some()
    }

    /// The Rust entry names that have a twin.
    pub fn entries(&self) -> impl Iterator<Item = &str> {
        self.functions.iter().map(|(entry, _)| entry.as_str())
    }
}

impl Gpu {
    /// Loads every `*.ptx` in `dir` and each `<kernel>_cuda` entry in it; from then on kernels can be
    /// launched from [`Source::CudaC`](kernels::Source::CudaC).
    pub fn load_cuda_c(&mut self, dir: &Path) -> Result<()> {
        let unreadable = |e: std::io::Error| HostError::InvalidInput {
            what: "--cuda-c".into(),
            reason: format!("cannot read the CUDA C PTX folder {}: {e}", dir.display()),
        };
        let mut functions = Vec::new();
        let mut modules = Vec::new();
        let mut paths: Vec<_> = std::fs::read_dir(dir)
            .map_err(unreadable)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
            .collect();
        paths.sort();
        for path in paths {
            let text = std::fs::read_to_string(&path).map_err(unreadable)?;
            let module = self
                .context()
                .load_module(cudarc::nvrtc::Ptx::from_src(text.clone()))
                .doing(|| format!("loading {}", path.display()))?;
            for entry in xtask::ptx_build::entry_names(&text) {
                let Some(rust_entry) = entry.strip_suffix(ENTRY_SUFFIX) else {
                    continue;
                };
                let function = module
                    .load_function(&entry)
                    .doing(|| format!("loading {entry} from {}", path.display()))?;
                functions.push((rust_entry.to_string(), function));
            }
            modules.push(module);
        }
        if functions.is_empty() {
            return Err(HostError::InvalidInput {
                what: "--cuda-c".into(),
                reason: format!("{} holds no PTX with *{ENTRY_SUFFIX} entries", dir.display()),
            });
        }
        self.cuda_c = Some(CudaC {
            functions,
            _modules: modules,
        });
        Ok(())
    }
}
