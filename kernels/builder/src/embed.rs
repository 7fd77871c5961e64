//! The Rust file a build script includes: the kernel crate's PTX as constants, typed by a unit
//! struct that names the crate (`stencil_kernels` → `StencilKernels`), for `ptxkit-runtime` to load.

use crate::arch::Arch;
use std::path::PathBuf;

/// `stencil_kernels` → `StencilKernels`.
pub fn type_name(crate_name: &str) -> String {
    crate_name
        .split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or(String::new(), |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}

/// The file's text for kernel crate `name`: one `ptxkit_runtime::Ptx` per architecture and PTX
/// file, in the order given, each with its PTX by `include_str!`.
pub fn rust_source(name: &str, ptx: &[(Arch, PathBuf)]) -> String {
    let ty = type_name(name);
    let archs: Vec<String> = ptx.iter().map(|(arch, _)| arch.to_string()).collect();
    let mut modules = String::new();
    for (arch, path) in ptx {
        let arch = *arch;
        modules += &format!(
            "        ::ptxkit_runtime::Ptx {{ arch: \"{arch}\", compute_capability: ({}, {}), specific: {}, text: include_str!({:?}) }},\n",
            arch.major,
            arch.minor,
            arch.specific,
            path.display().to_string()
        );
    }
    format!(
        "// Written by ptxkit-build from the kernel crate `{name}`: do not edit.\n\
         /// The kernel crate `{name}`, built to PTX for {archs}: load it with `Gpu::load::<{ty}>()`.\n\
         pub struct {ty};\n\n\
         impl ::ptxkit_runtime::KernelCrate for {ty} {{\n    \
             const NAME: &'static str = \"{name}\";\n    \
             const PTX: &'static [::ptxkit_runtime::Ptx] = &[\n{modules}    ];\n\
         }}\n",
        archs = archs.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_type_is_the_crate_name_in_camel_case() {
        assert_eq!(type_name("stencil_kernels"), "StencilKernels");
        assert_eq!(type_name("kernels"), "Kernels");
        assert_eq!(type_name("my__odd_name2"), "MyOddName2");
    }
}
