//! Which compilation of a registered kernel runs: the Rust kernel, or its CUDA C twin.

/// Which compilation of a registered kernel: the Rust kernel, or its CUDA C twin in
/// `benches/reference/cuda_c/` (named `<entry>_cuda`), compiled by nvcc.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum Source {
    Rust,
    CudaC,
}

/// The module the CUDA C twins are loaded as on a GPU: [`Source::CudaC`] launches from it.
pub const CUDA_C_MODULE: &str = "cuda_c";

#[cfg(not(target_arch = "nvptx64"))]
impl Source {
    pub const ALL: [Source; 2] = [Source::Rust, Source::CudaC];

    /// The module a launch from this source takes the kernel's function from: its own crate's
    /// (`None`) for Rust, [`CUDA_C_MODULE`] for CUDA C.
    pub fn module(self) -> Option<&'static str> {
        match self {
            Source::Rust => None,
            Source::CudaC => Some(CUDA_C_MODULE),
        }
    }

    /// "rust" or "cuda_c", as files and JSON name it.
    pub fn label(self) -> &'static str {
        match self {
            Source::Rust => "rust",
            Source::CudaC => "cuda_c",
        }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl core::fmt::Display for Source {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Source::Rust => "Rust",
            Source::CudaC => "CUDA C",
        })
    }
}
