//! GPU architectures the PTX is built for.

use std::fmt;
use std::str::FromStr;

/// A compute capability, written `sm_XY` as nvcc and ptxas write it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Arch {
    pub major: u32,
    pub minor: u32,
}

/// Built by default and embedded in the host: Ampere (A100) and Hopper (H100, H200).
pub const DEFAULT_ARCHS: &[Arch] = &[Arch { major: 8, minor: 0 }, Arch { major: 9, minor: 0 }];

/// PTX ISA version every build targets: 8.0 runs on drivers from CUDA 12.0 on and covers sm_90.
pub const PTX_ISA: &str = "ptx80";

impl Arch {
    /// Oldest architecture the kernels support: `bar.warp.sync` and `shfl.sync` need sm_70.
    pub const OLDEST: Arch = Arch { major: 7, minor: 0 };
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}{}", self.major, self.minor)
    }
}

impl FromStr for Arch {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || format!("'{text}' is not an architecture like sm_80 or sm_90");
        let digits = text.trim().strip_prefix("sm_").ok_or_else(bad)?;
        if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let (major, minor) = digits.split_at(digits.len() - 1);
        let arch = Arch {
            major: major.parse().map_err(|_| bad())?,
            minor: minor.parse().map_err(|_| bad())?,
        };
        if arch < Arch::OLDEST {
            return Err(format!(
                "{arch} is too old: the kernels need {} or newer (warp-synchronous shuffles)",
                Arch::OLDEST
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
        assert_eq!(arch, Arch { major: 9, minor: 0 });
        assert_eq!(arch.to_string(), "sm_90");
        assert_eq!("sm_120".parse::<Arch>().unwrap(), Arch { major: 12, minor: 0 });
    }

    #[test]
    fn arch_rejects_malformed_and_too_old_names() {
        for bad in ["90", "sm_", "sm_9", "sm_9x", "compute_90", "sm_61"] {
            assert!(bad.parse::<Arch>().is_err(), "{bad} was accepted");
        }
    }
}
