//! The library's kernels as PTX, one module per architecture: built by this crate's build script
//! with `ptxkit-build` and embedded, as any user's kernel crate is. `Kernels` loads them
//! (`Gpu::load::<Kernels>()`).

ptxkit_runtime::include_kernels!(kernels);

#[cfg(test)]
mod tests {
    use super::*;
    use ptxkit_runtime::{KernelCrate, Ptx};

    #[test]
    fn every_embedded_module_targets_its_arch_and_defines_every_kernel() {
        assert!(!Kernels::PTX.is_empty());
        assert_eq!(Kernels::NAME, "kernels");
        for module in Kernels::PTX {
            assert!(
                module.text.contains(&format!(".target {}", module.arch)),
                "{} PTX has another .target",
                module.arch
            );
            for kernel in kernels::registry::kernels() {
                assert!(
                    module.text.contains(&format!(".entry {}(", kernel.entry)),
                    "{} PTX lacks the entry {}",
                    module.arch,
                    kernel.entry
                );
            }
        }
    }

    #[test]
    fn the_library_runs_from_sm_80_up_and_sm_90a_on_hopper() {
        assert_eq!(Ptx::for_device(Kernels::PTX, 9, 0).map(|p| p.arch), Some("sm_90a"));
        assert_eq!(Ptx::for_device(Kernels::PTX, 8, 9).map(|p| p.arch), Some("sm_80"));
        assert_eq!(Ptx::isa_version(Kernels::PTX[0].text), Some("8.0"));
    }
}
