//! GPU architectures the PTX is built for.

use std::fmt;
use std::str::FromStr;

/// A compute capability, written `sm_XY` as nvcc and ptxas write it; `sm_XYa` for its
/// architecture-specific form (Hopper's `wgmma`), whose PTX runs on exactly that capability.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Arch {
    pub major: u32,
    pub minor: u32,
    /// The `a` suffix: this capability's own instructions, not forward-compatible.
    pub specific: bool,
}

/// Built by default and embedded in the host: sm_80 for Ampere (A100) and every GPU after it but
/// Hopper, and Hopper's architecture-specific form for the H100 and H200, the one module that
/// holds the `wgmma` kernels. (Plain sm_90 PTX would differ from sm_80's only in its `.target`:
/// no kernel uses an sm_90 feature outside the `a` form.)
pub const DEFAULT_ARCHS: &[Arch] = &[Arch::new(8, 0), Arch::specific(9, 0)];

/// PTX ISA version the builds before Hopper target: 8.0 runs on drivers from CUDA 12.0 on.
pub const PTX_ISA: &str = "ptx80";

/// PTX ISA version from Hopper on: 8.1, for the vector `red.global.add` (runs of k meeting in C
/// four sums at a time); drivers from CUDA 12.1 on.
pub const HOPPER_PTX_ISA: &str = "ptx81";

/// The compute capabilities NVIDIA has made from [`Arch::OLDEST`] on, as ptxas names them, and
/// those of them with an architecture-specific (`a`) form.
const KNOWN: [(u32, u32); 13] = [
    (7, 0),
    (7, 2),
    (7, 5),
    (8, 0),
    (8, 6),
    (8, 7),
    (8, 9),
    (9, 0),
    (10, 0),
    (10, 1),
    (10, 3),
    (12, 0),
    (12, 1),
];

impl Arch {
    /// Oldest architecture the kernels support: `bar.warp.sync` and `shfl.sync` need sm_70.
    pub const OLDEST: Arch = Arch::new(7, 0);

    /// Whether a GPU of this architecture exists (an `a` form from Hopper on).
    fn exists(self) -> bool {
        KNOWN.contains(&(self.major, self.minor)) && (!self.specific || self.major >= 9)
    }

    /// `sm_XY`.
    pub const fn new(major: u32, minor: u32) -> Arch {
        Arch {
            major,
            minor,
            specific: false,
        }
    }

    /// `sm_XYa`.
    pub const fn specific(major: u32, minor: u32) -> Arch {
        Arch {
            major,
            minor,
            specific: true,
        }
    }

    /// The PTX ISA version this architecture's build targets ([`PTX_ISA`], [`HOPPER_PTX_ISA`]).
    pub const fn ptx_isa(self) -> &'static str {
        if self.major >= 9 { HOPPER_PTX_ISA } else { PTX_ISA }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let suffix = if self.specific { "a" } else { "" };
        write!(f, "sm_{}{}{suffix}", self.major, self.minor)
    }
}

impl FromStr for Arch {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || format!("'{text}' is not an architecture like sm_80, sm_90 or sm_90a");
        let digits = text.trim().strip_prefix("sm_").ok_or_else(bad)?;
        let (digits, specific) = match digits.strip_suffix('a') {
            Some(digits) => (digits, true),
            None => (digits, false),
        };
        if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let (major, minor) = digits.split_at(digits.len() - 1);
        let arch = Arch {
            major: major.parse().map_err(|_| bad())?,
            minor: minor.parse().map_err(|_| bad())?,
            specific,
        };
        if arch < Arch::OLDEST {
            return Err(format!(
                "{arch} is too old: the kernels need {} or newer (warp-synchronous shuffles)",
                Arch::OLDEST
            ));
        }
        if !arch.exists() {
            let known: Vec<String> = KNOWN
                .iter()
                .map(|&(major, minor)| Arch::new(major, minor).to_string())
                .collect();
            return Err(format!(
                "{arch} is no GPU architecture ptxas knows: give one of {} (with `a` from sm_90 on, as sm_90a)",
                known.join(", ")
            ));
        }
        Ok(arch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_parses_and_prints_as_sm_xy() {
        let arch: Arch = "sm_90".parse().unwrap();
        assert_eq!(arch, Arch::new(9, 0));
        assert_eq!(arch.to_string(), "sm_90");
        assert_eq!("sm_120".parse::<Arch>().unwrap(), Arch::new(12, 0));
        let specific: Arch = "sm_90a".parse().unwrap();
        assert_eq!(specific, Arch::specific(9, 0));
        assert_eq!(specific.to_string(), "sm_90a");
    }

    #[test]
    fn arch_rejects_malformed_and_too_old_names() {
        for bad in [
            "90",
            "sm_",
            "sm_9",
            "sm_9x",
            "compute_90",
            "sm_61",
            "sm_90aa",
            "sm_a",
            "sm_999",
            "sm_91",
            "sm_80a",
        ] {
            assert!(bad.parse::<Arch>().is_err(), "{bad} was accepted");
        }
    }
}
