//! The kernels' PTX, one module per architecture, embedded at build time.

/// The PTX built for one architecture.
#[derive(Debug)]
pub struct EmbeddedPtx {
    /// `sm_XY`.
    pub arch: &'static str,
    pub compute_capability: (u32, u32),
    /// Built for exactly this capability (`sm_90a`): runs on it alone, and holds the kernels that
    /// only it can run.
    pub specific: bool,
    pub ptx: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/embedded_ptx.rs"));

/// The PTX for the device: the one built for exactly its compute capability's own instructions
/// where there is one (sm_90a on an H100 or H200), else the highest architecture not above its
/// capability (the driver compiles PTX for its own GPU, but not PTX that uses features it lacks).
pub fn for_compute_capability(major: u32, minor: u32) -> Option<&'static EmbeddedPtx> {
    let exact = EMBEDDED
        .iter()
        .find(|p| p.specific && p.compute_capability == (major, minor));
    exact.or_else(|| {
        EMBEDDED
            .iter()
            .filter(|p| !p.specific && p.compute_capability <= (major, minor))
            .max_by_key(|p| p.compute_capability)
    })
}

/// The `.version` line of a PTX module, e.g. "8.0": the driver must support this PTX ISA.
pub fn isa_version(ptx: &str) -> Option<&str> {
    ptx.lines()
        .find_map(|l| l.trim().strip_prefix(".version "))
        .map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_module_targets_its_arch_and_defines_every_kernel() {
        assert!(!EMBEDDED.is_empty());
        for module in EMBEDDED {
            assert!(
                module.ptx.contains(&format!(".target {}", module.arch)),
                "{} PTX has another .target",
                module.arch
            );
            for kernel in kernels::registry::kernels() {
                assert!(
                    module.ptx.contains(&format!(".entry {}(", kernel.entry)),
                    "{} PTX lacks the entry {}",
                    module.arch,
                    kernel.entry
                );
            }
        }
    }

    #[test]
    fn device_gets_the_newest_ptx_it_can_run() {
        assert_eq!(for_compute_capability(9, 0).map(|p| p.arch), Some("sm_90a"));
        assert_eq!(for_compute_capability(8, 9).map(|p| p.arch), Some("sm_80"));
        // sm_90a runs on compute capability 9.0 alone.
        assert_eq!(for_compute_capability(10, 0).map(|p| p.arch), Some("sm_80"));
        assert!(for_compute_capability(7, 5).is_none());
    }

    #[test]
    fn ptx_isa_version_is_read_from_the_module() {
        assert_eq!(isa_version(EMBEDDED[0].ptx), Some("8.0"));
    }
}
