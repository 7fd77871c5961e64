//! Tile profiles: for one device, each tile configuration's median time at each measured shape,
//! written by `host autotune` and read by the chooser ([`super::choice`]) before its occupancy
//! rule. The repository carries the profiles of the devices it was tuned on
//! (`host/library/profiles/`), and a device without a shape near in its own borrows from a carried
//! profile of a device with its SMs ([`Profile::is_sibling`]); `KERNELS_TILE_PROFILE` names another
//! file, which then takes precedence.

use super::Size;
use ptxkit_runtime::DeviceInfo;
use ptxkit_runtime::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The environment variable that names a profile file to use instead of the carried ones.
pub const PROFILE_VARIABLE: &str = "KERNELS_TILE_PROFILE";

/// Profiles built into the binary: (file name, contents). The H200's: matmul from `host autotune
/// --family matmul`, conv2d from `host autotune --family conv2d` (docs/perf-log.md, changes 90 and
/// 37). The H100's: matmul from `host autotune --family matmul --models` (change 144).
const CARRIED: &[(&str, &str)] = &[
    (
        "nvidia-h200-sm90.json",
        include_str!("../../profiles/nvidia-h200-sm90.json"),
    ),
    (
        "nvidia-h100-sm90.json",
        include_str!("../../profiles/nvidia-h100-sm90.json"),
    ),
];

/// How far a profiled shape may be from the asked one, per extent, to stand in for it.
pub const NEAREST_FACTOR: f64 = 2.0;

/// One device's measurements.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Profile {
    /// The device's name as the driver reports it.
    pub device: String,
    pub compute_capability: (i32, i32),
    /// Its SMs (absent in profiles written before they were recorded).
    #[serde(default)]
    pub sms: Option<u32>,
    /// When and how it was measured (date, warm-up and runs).
    pub measured: String,
    pub shapes: Vec<Shape>,
}

/// Every configuration of one family at one shape.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Shape {
    pub family: String,
    pub size: [usize; 3],
    /// Median milliseconds per configuration (entry name).
    pub medians_ms: BTreeMap<String, f64>,
}

impl Shape {
    /// The fastest configuration and its median.
    pub fn fastest(&self) -> Option<(&str, f64)> {
        self.medians_ms
            .iter()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(entry, &ms)| (entry.as_str(), ms))
    }

    /// Those of `entries` not timed here (configurations added after the profile was made).
    pub fn untimed<'e>(&self, entries: &[&'e str]) -> Vec<&'e str> {
        entries
            .iter()
            .copied()
            .filter(|e| !self.medians_ms.contains_key(*e))
            .collect()
    }
}

/// What the profile says for one family and shape.
pub struct Lookup<'a> {
    pub shape: &'a Shape,
    /// Whether the profiled shape is the asked one (else the nearest within [`NEAREST_FACTOR`]).
    pub exact: bool,
}

impl Profile {
    /// Whether it was measured on `info`'s device.
    pub fn fits(&self, info: &DeviceInfo) -> bool {
        self.device == info.name && self.compute_capability == info.compute_capability
    }

    /// Whether it was measured on another device of `info`'s compute capability and SM count (an
    /// H100 for an H200: the same SMs, other memory), whose timings stand in where the device's
    /// own profile has no shape near.
    pub fn is_sibling(&self, info: &DeviceInfo) -> bool {
        !self.fits(info) && self.compute_capability == info.compute_capability && self.sms == Some(info.sm_count)
    }

    /// The profiled shape of `family` at `size`, or the nearest one (by the sum of the extents'
    /// log ratios) with every extent within [`NEAREST_FACTOR`] of the asked one.
    pub fn lookup(&self, family: &str, size: Size) -> Option<Lookup<'_>> {
        let distance = |shape: &Shape| -> Option<f64> {
            let mut total = 0.0;
            for (&profiled, &asked) in shape.size.iter().zip(&size.0) {
                let ratio = (profiled.max(1) as f64 / asked.max(1) as f64).ln().abs();
                if ratio > NEAREST_FACTOR.ln() + 1e-12 {
                    return None;
                }
                total += ratio;
            }
            Some(total)
        };
        self.shapes
            .iter()
            .filter(|s| s.family == family && !s.medians_ms.is_empty())
            .filter_map(|s| distance(s).map(|d| (s, d)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(shape, d)| Lookup { shape, exact: d == 0.0 })
    }

    /// Parses a profile, naming `origin` in the error.
    pub fn parse(text: &str, origin: &str) -> Result<Profile> {
        serde_json::from_str(text).map_err(|e| Error::InvalidInput {
            what: format!("tile profile {origin}"),
            reason: format!("{e}; write one with `host autotune --out FILE`"),
        })
    }

    /// Reads the profile at `path`: at most [`MAX_PROFILE_BYTES`], counted as read (a device such
    /// as `/dev/zero` reports no size).
    pub fn read(path: &Path) -> Result<Profile> {
        use std::io::Read as _;
        let unreadable = |reason: String| Error::InvalidInput {
            what: format!("tile profile {}", path.display()),
            reason,
        };
        let mut text = String::new();
        std::fs::File::open(path)
            .and_then(|file| file.take(MAX_PROFILE_BYTES + 1).read_to_string(&mut text))
            .map_err(|e| unreadable(format!("cannot read it: {e}")))?;
        if text.len() as u64 > MAX_PROFILE_BYTES {
            return Err(unreadable(format!(
                "it is longer than {} MiB, which no profile is; write one with `host autotune --out FILE`",
                MAX_PROFILE_BYTES >> 20
            )));
        }
        Profile::parse(&text, &path.display().to_string())
    }
}

/// The longest profile read: every family's every shape fits in far less.
pub const MAX_PROFILE_BYTES: u64 = 16 << 20;

/// The profile the file `KERNELS_TILE_PROFILE` names, when it is set: an error if it cannot be
/// read or parsed, whatever the backend, so that a mistyped path never goes unnoticed.
pub fn from_variable() -> Result<Option<Profile>> {
    std::env::var_os(PROFILE_VARIABLE)
        .map(|path| Profile::read(Path::new(&path)))
        .transpose()
}

/// The profiles for `info`'s device, in the order the chooser asks them: the file
/// `KERNELS_TILE_PROFILE` names alone (an error if it cannot be read or is for another device);
/// else the carried ones measured on this device, then those measured on a device of its compute
/// capability and SM count ([`Profile::is_sibling`]). Parsed once per process.
pub fn for_device(info: &DeviceInfo) -> Result<Vec<Profile>> {
    if let Some(profile) = from_variable()? {
        let path = std::env::var_os(PROFILE_VARIABLE).unwrap_or_default();
        if !profile.fits(info) {
            return Err(Error::InvalidInput {
                what: format!("{PROFILE_VARIABLE}={}", Path::new(&path).display()),
                reason: format!(
                    "it was measured on {} (compute capability {}.{}), this is {} ({}.{}); unset it or run `host autotune`",
                    profile.device,
                    profile.compute_capability.0,
                    profile.compute_capability.1,
                    info.name,
                    info.compute_capability.0,
                    info.compute_capability.1
                ),
            });
        }
        return Ok(vec![profile]);
    }
    carried_for(info)
}

/// The carried profiles for `info`'s device: those measured on it, then its siblings'.
fn carried_for(info: &DeviceInfo) -> Result<Vec<Profile>> {
    let carried = carried()?;
    let own = carried.iter().filter(|p| p.fits(info));
    let siblings = carried.iter().filter(|p| p.is_sibling(info));
    Ok(own.chain(siblings).cloned().collect())
}

/// The carried profiles, parsed once.
fn carried() -> Result<&'static [Profile]> {
    static PARSED: std::sync::OnceLock<Vec<Profile>> = std::sync::OnceLock::new();
    if let Some(parsed) = PARSED.get() {
        return Ok(parsed);
    }
    let parsed = CARRIED
        .iter()
        .map(|(name, text)| Profile::parse(text, name))
        .collect::<Result<Vec<_>>>()?;
    Ok(PARSED.get_or_init(|| parsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(family: &str, size: [usize; 3], medians: &[(&str, f64)]) -> Shape {
        Shape {
            family: family.into(),
            size,
            medians_ms: medians.iter().map(|&(e, ms)| (e.to_string(), ms)).collect(),
        }
    }

    fn profile() -> Profile {
        Profile {
            device: "GPU".into(),
            compute_capability: (9, 0),
            sms: Some(132),
            measured: "test".into(),
            shapes: vec![
                shape("matmul", [1024, 1024, 1024], &[("small", 0.05), ("large", 0.09)]),
                shape("matmul", [4096, 4096, 4096], &[("small", 3.9), ("large", 3.3)]),
                shape("conv2d", [1024, 1024, 1024], &[("v4", 1.0)]),
            ],
        }
    }

    #[test]
    fn the_exact_shape_gives_its_fastest_configuration() {
        let p = profile();
        let found = p.lookup("matmul", Size([4096, 4096, 4096])).expect("profiled");
        assert!(found.exact);
        assert_eq!(found.shape.fastest(), Some(("large", 3.3)));
    }

    #[test]
    fn a_shape_names_the_configurations_it_has_not_timed() {
        let p = profile();
        let found = p.lookup("matmul", Size([1024, 1024, 1024])).expect("profiled");
        assert_eq!(found.shape.untimed(&["small", "split", "large"]), vec!["split"]);
        assert!(found.shape.untimed(&["small", "large"]).is_empty());
    }

    #[test]
    fn a_near_shape_borrows_the_nearest_and_says_so() {
        let p = profile();
        let found = p
            .lookup("matmul", Size([1000, 1100, 900]))
            .expect("within a factor of 2");
        assert!(!found.exact);
        assert_eq!(found.shape.size, [1024, 1024, 1024]);
    }

    #[test]
    fn a_far_shape_or_another_family_finds_nothing() {
        let p = profile();
        assert!(p.lookup("matmul", Size([64, 8192, 8192])).is_none());
        assert!(p.lookup("transpose", Size([1024, 1024, 1024])).is_none());
    }

    #[test]
    fn a_malformed_profile_is_an_error_that_says_how_to_make_one() {
        let error = Profile::parse("{", "test.json").unwrap_err().to_string();
        assert!(error.contains("host autotune"), "{error}");
    }

    /// A device's figures, of which only the name, compute capability and SMs matter here.
    fn sibling_info(name: &str, compute_capability: (i32, i32), sm_count: u32) -> DeviceInfo {
        DeviceInfo {
            ordinal: 0,
            name: name.into(),
            compute_capability,
            sm_count,
            max_threads_per_sm: 2048,
            shared_per_sm: 233_472,
            shared_per_block: 49_152,
            shared_per_block_optin: 232_448,
            registers_per_sm: 65_536,
            l2_bytes: 52_428_800,
            memory_total: 0,
            memory_free: 0,
            driver_cuda_version: "13.0".into(),
            bindings_cuda_version: "13.0",
            managed_memory: true,
            concurrent_managed_access: true,
            pageable_memory_access: false,
        }
    }

    #[test]
    fn a_device_of_the_same_sms_and_compute_capability_is_a_sibling() {
        let p = profile();
        let info = sibling_info;
        assert!(p.fits(&info("GPU", (9, 0), 132)) && !p.is_sibling(&info("GPU", (9, 0), 132)));
        assert!(p.is_sibling(&info("Other", (9, 0), 132)));
        assert!(!p.is_sibling(&info("Other", (9, 0), 114)));
        assert!(!p.is_sibling(&info("Other", (8, 0), 132)));
        let unrecorded = Profile { sms: None, ..profile() };
        assert!(!unrecorded.is_sibling(&info("Other", (9, 0), 132)));
    }

    #[test]
    fn a_device_asks_its_own_profile_first_then_its_siblings() {
        let mut info = sibling_info("NVIDIA H200", (9, 0), 132);
        let devices =
            |info: &DeviceInfo| -> Vec<String> { carried_for(info).unwrap().into_iter().map(|p| p.device).collect() };
        assert_eq!(devices(&info), ["NVIDIA H200", "NVIDIA H100 80GB HBM3"]);
        info.name = "NVIDIA H100 80GB HBM3".into();
        assert_eq!(devices(&info), ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]);
        let pcie = sibling_info("NVIDIA H100 PCIe", (9, 0), 114);
        assert_eq!(devices(&pcie), Vec::<String>::new(), "114 SMs: no sibling");
    }

    #[test]
    fn the_carried_profiles_parse() {
        for (name, text) in CARRIED {
            Profile::parse(text, name).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}
