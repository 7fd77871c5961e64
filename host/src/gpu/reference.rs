//! CUDA C references of the Rust kernels (`benches/reference/*.cu`), compiled by nvcc to PTX and
//! launched through the same host code, so that Rust and CUDA C are timed like for like.

use super::Gpu;
use crate::error::{Doing, HostError, Result};
use cudarc::driver::{CudaFunction, CudaModule};
use std::path::Path;
use std::sync::Arc;

/// Suffix of a CUDA C reference's entry name: `vec_add` in Rust is `vec_add_cuda` in CUDA C.
pub const ENTRY_SUFFIX: &str = "_cuda";

pub struct CudaReference {
    functions: Vec<(String, CudaFunction)>,
    _modules: Vec<Arc<CudaModule>>,
}

impl CudaReference {
    /// The CUDA C counterpart of the Rust kernel `rust_entry`.
    pub fn function(&self, rust_entry: &str) -> Result<&CudaFunction> {
        let name = format!("{rust_entry}{ENTRY_SUFFIX}");
        self.functions
            .iter()
            .find(|(entry, _)| *entry == name)
            .map(|(_, f)| f)
            .ok_or_else(|| HostError::InvalidInput {
                kernel: "cuda-c",
                reason: format!("no CUDA C reference named {name} was loaded"),
            })
    }

    pub fn has(&self, rust_entry: &str) -> bool {
        self.function(rust_entry).is_ok()
    }
}

impl Gpu {
    /// Loads every `*.ptx` in `dir` and each `<kernel>_cuda` entry in it.
    pub fn load_cuda_reference(&self, dir: &Path) -> Result<CudaReference> {
        let unreadable = |e: std::io::Error| HostError::InvalidInput {
            kernel: "cuda-c",
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
            for entry in entry_names(&text).filter(|e| e.ends_with(ENTRY_SUFFIX)) {
                let function = module
                    .load_function(entry)
                    .doing(|| format!("loading {entry} from {}", path.display()))?;
                functions.push((entry.to_string(), function));
            }
            modules.push(module);
        }
        if functions.is_empty() {
            return Err(HostError::InvalidInput {
                kernel: "cuda-c",
                reason: format!("{} holds no PTX with *{ENTRY_SUFFIX} entries", dir.display()),
            });
        }
        Ok(CudaReference {
            functions,
            _modules: modules,
        })
    }
}

/// `.entry NAME(` lines of a PTX module, as nvcc writes them.
fn entry_names(ptx: &str) -> impl Iterator<Item = &str> {
    ptx.lines().filter_map(|line| {
        let rest = line.trim_start().strip_prefix(".visible .entry ")?;
        rest.split(['(', ' ']).next()
    })
}
