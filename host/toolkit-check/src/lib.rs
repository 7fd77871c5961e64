//! The check's kernel crate as its host sees it: `ToolkitCheckKernels`, its PTX with line
//! information, built by this crate's build script.

ptxkit_runtime::include_kernels!(toolkit_check_kernels);
