//! Several GPUs: opening a list of them, what connects each pair (peer access as the CUDA driver
//! reports it, NVLink or PCIe as NVML does), and peer access switched on where it is possible.

use crate::error::{Doing, Error, Result};
use crate::gpu::Gpu;
use crate::nvml::{Link, Nvml};
use cudarc::driver::CudaContext;
use cudarc::driver::sys::{self, CUdevice_P2PAttribute as P2p, CUresult};

/// `--devices`: a comma-separated list of device numbers ("0,1"), or "all".
pub fn parse_devices(text: &str) -> Result<DeviceList> {
    let text = text.trim();
    if text == "all" {
        return Ok(DeviceList::All);
    }
    let bad = |reason: String| Error::InvalidInput {
        what: "--devices".into(),
        reason,
    };
    let ordinals = text
        .split(',')
        .map(|part| {
            part.trim().parse::<usize>().map_err(|_| {
                bad(format!(
                    "'{part}' in '{text}' is not a device number; give e.g. 0,1 or all"
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    if ordinals.len() > MAX_DEVICES {
        return Err(bad(format!(
            "{} devices asked for; at most {MAX_DEVICES}",
            ordinals.len()
        )));
    }
    Ok(DeviceList::These(ordinals))
}

/// Devices one command may use at most (the largest host the project runs on has 8).
pub const MAX_DEVICES: usize = 16;

/// Which devices a multi-GPU command runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceList {
    /// Every device the driver sees.
    All,
    /// These, in this order. A device may repeat: its GPU then plays two parts (two streams of one
    /// context), which tests the splitting on a one-GPU machine but measures nothing about links.
    These(Vec<usize>),
}

impl Gpu {
    /// Every device the driver sees, in order; an error when there is none.
    pub fn open_all() -> Result<Vec<Gpu>> {
        Self::open_list(&DeviceList::All)
    }

    /// The devices of `list`, each opened as [`Gpu::open`] does, with peer access switched on
    /// between every pair of distinct devices that allows it.
    pub fn open_list(list: &DeviceList) -> Result<Vec<Gpu>> {
        // SAFETY: only tries to load the library.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::NoDriver);
        }
        let available = CudaContext::device_count().doing(|| "counting devices".into())? as usize;
        let ordinals = match list {
            DeviceList::All => (0..available).collect(),
            DeviceList::These(ordinals) => ordinals.clone(),
        };
        if ordinals.is_empty() {
            return Err(Error::NoSuchDevice {
                requested: 0,
                available,
            });
        }
        if let Some(&requested) = ordinals.iter().find(|&&o| o >= available) {
            return Err(Error::NoSuchDevice { requested, available });
        }
        let gpus = ordinals
            .iter()
            .map(|&o| Gpu::open(Some(o)))
            .collect::<Result<Vec<_>>>()?;
        for reader in &gpus {
            for owner in &gpus {
                if can_access_peer(reader, owner)? {
                    enable_peer_access(reader, owner)?;
                }
            }
        }
        Ok(gpus)
    }

    /// Whether this GPU and `other` are the same device (two handles on one context).
    pub fn same_device(&self, other: &Gpu) -> bool {
        self.context().cu_device() == other.context().cu_device()
    }

    /// The device's PCI address, e.g. "0000:18:00.0".
    pub fn pci_bus_id(&self) -> Result<String> {
        pci_bus_id(self.context().cu_device())
    }
}

/// The PCI address of `device`.
fn pci_bus_id(device: sys::CUdevice) -> Result<String> {
    let mut buffer = [0 as std::ffi::c_char; 32];
    // SAFETY: writes a NUL-terminated string of at most the given length.
    unsafe { sys::cuDeviceGetPCIBusId(buffer.as_mut_ptr(), buffer.len() as i32, device) }
        .result()
        .doing(|| "reading the PCI bus id".into())?;
    // SAFETY: the driver wrote a NUL-terminated string into the buffer.
    let id = unsafe { std::ffi::CStr::from_ptr(buffer.as_ptr()) };
    Ok(id.to_string_lossy().into_owned())
}

/// Whether kernels on `reader` can reach `owner`'s device memory (false for the same device: it
/// needs no peer access).
pub fn can_access_peer(reader: &Gpu, owner: &Gpu) -> Result<bool> {
    if reader.same_device(owner) {
        return Ok(false);
    }
    let mut can = 0;
    // SAFETY: writes one int.
    unsafe { sys::cuDeviceCanAccessPeer(&mut can, reader.context().cu_device(), owner.context().cu_device()) }
        .result()
        .doing(|| "asking whether peer access is possible".into())?;
    Ok(can != 0)
}

/// Lets kernels and copies on `reader` address `owner`'s device memory directly. Idempotent.
///
/// Two switches, because the owner's memory comes from two allocators: `cuCtxEnablePeerAccess`
/// covers `cuMemAlloc`'s memory, and the owner's memory pool (where cudarc's stream-ordered
/// `cuMemAllocAsync` takes it from) keeps its own access list, which peer access leaves alone: a
/// kernel reading pool memory of another GPU without it faults with an illegal address.
pub fn enable_peer_access(reader: &Gpu, owner: &Gpu) -> Result<()> {
    let doing = |what: &str| {
        format!(
            "{what} from device {} to device {}",
            reader.info().ordinal,
            owner.info().ordinal
        )
    };
    reader
        .context()
        .bind_to_thread()
        .doing(|| "binding the context".into())?;
    // SAFETY: a valid context of another device; flags must be 0.
    match unsafe { sys::cuCtxEnablePeerAccess(owner.context().cu_ctx(), 0) } {
        CUresult::CUDA_SUCCESS | CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {}
        other => other.result().doing(|| doing("enabling peer access"))?,
    }
    if !has_memory_pools(owner)? {
        return Ok(());
    }
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: a valid device handle and room for the pool's handle.
    unsafe { sys::cuDeviceGetMemPool(&mut pool, owner.context().cu_device()) }
        .result()
        .doing(|| doing("finding the memory pool"))?;
    let access = sys::CUmemAccessDesc {
        location: sys::CUmemLocation {
            type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id: reader.context().cu_device(),
        },
        flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    // SAFETY: the owner's pool and one access descriptor naming the reader's device.
    unsafe { sys::cuMemPoolSetAccess(pool, &access, 1) }
        .result()
        .doing(|| doing("opening the memory pool"))
}

/// Whether the device allocates from memory pools (and so cudarc's allocations come from one).
fn has_memory_pools(gpu: &Gpu) -> Result<bool> {
    let mut supported = 0;
    // SAFETY: a valid device handle and room for the answer.
    unsafe {
        sys::cuDeviceGetAttribute(
            &mut supported,
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
            gpu.context().cu_device(),
        )
    }
    .result()
    .doing(|| "asking whether the device has memory pools".into())?;
    Ok(supported != 0)
}

/// One device of a [`Topology`].
#[derive(Clone, Debug, serde::Serialize)]
pub struct TopologyDevice {
    pub ordinal: usize,
    pub name: String,
    pub pci_bus_id: String,
    /// Active NVLinks, where NVML answers.
    pub active_nvlinks: Option<u32>,
}

/// What connects one ordered pair of devices.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PeerLink {
    pub from: usize,
    pub to: usize,
    /// Kernels on `from` may address `to`'s memory (`cuDeviceCanAccessPeer`).
    pub peer_access: bool,
    /// The driver's relative performance rank of the link (0 is the best it knows).
    pub performance_rank: i32,
    /// Atomics over the link are native.
    pub native_atomics: bool,
    /// NVLink or PCIe, as NVML reports it; `None` where NVML could not say.
    pub link: Option<Link>,
}

/// Every device and every ordered pair of them.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Topology {
    pub devices: Vec<TopologyDevice>,
    pub pairs: Vec<PeerLink>,
    /// Why NVML gave no link types, where it did not.
    pub nvml_note: Option<String>,
}

impl Topology {
    /// The topology of `gpus`.
    pub fn of(gpus: &[Gpu]) -> Result<Topology> {
        let devices: Vec<(usize, sys::CUdevice)> = gpus
            .iter()
            .map(|g| (g.info().ordinal, g.context().cu_device()))
            .collect();
        Self::of_devices(&devices)
    }

    /// The topology of every device the driver sees, read from device handles alone (no context,
    /// no module load: what `host info` needs).
    pub fn of_all_devices() -> Result<Topology> {
        cudarc::driver::result::init().doing(|| "initialising the driver".into())?;
        let count = CudaContext::device_count().doing(|| "counting devices".into())?;
        let devices = (0..count)
            .map(|o| {
                cudarc::driver::result::device::get(o)
                    .map(|d| (o as usize, d))
                    .doing(|| format!("opening device {o}"))
            })
            .collect::<Result<Vec<_>>>()?;
        Self::of_devices(&devices)
    }

    /// The topology of `devices` (ordinal and handle each; a device listed twice has no pair
    /// with itself).
    fn of_devices(devices: &[(usize, sys::CUdevice)]) -> Result<Topology> {
        let nvml = Nvml::open();
        let nvml_note = nvml.as_ref().err().map(|e| e.to_string());
        let mut summaries = Vec::new();
        for &(ordinal, device) in devices {
            let pci_bus_id = pci_bus_id(device)?;
            let active_nvlinks = nvml.as_ref().ok().and_then(|n| n.active_nvlinks(&pci_bus_id).ok());
            summaries.push(TopologyDevice {
                ordinal,
                name: cudarc::driver::result::device::get_name(device).doing(|| "reading the device name".into())?,
                pci_bus_id,
                active_nvlinks,
            });
        }
        let mut pairs = Vec::new();
        for (i, &(from, a)) in devices.iter().enumerate() {
            for (j, &(to, b)) in devices.iter().enumerate() {
                if i == j || a == b {
                    continue;
                }
                let attribute = |attribute: P2p| -> Result<i32> {
                    let mut value = 0;
                    // SAFETY: writes one int.
                    unsafe { sys::cuDeviceGetP2PAttribute(&mut value, attribute, a, b) }
                        .result()
                        .doing(|| format!("reading {attribute:?}"))?;
                    Ok(value)
                };
                let link = nvml
                    .as_ref()
                    .ok()
                    .and_then(|n| n.link(&summaries[i].pci_bus_id, &summaries[j].pci_bus_id).ok());
                pairs.push(PeerLink {
                    from,
                    to,
                    peer_access: attribute(P2p::CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED)? != 0,
                    performance_rank: attribute(P2p::CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK)?,
                    native_atomics: attribute(P2p::CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED)? != 0,
                    link,
                });
            }
        }
        Ok(Topology {
            devices: summaries,
            pairs,
            nvml_note,
        })
    }

    /// As lines of text, for `host info`.
    pub fn describe(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for d in &self.devices {
            let links = d
                .active_nvlinks
                .map_or(String::new(), |n| format!(", {n} active NVLinks"));
            lines.push(format!(
                "device {}: {} at PCI {}{links}",
                d.ordinal, d.name, d.pci_bus_id
            ));
        }
        if self.devices.len() < 2 {
            lines.push("one device: no peers".into());
        }
        for p in &self.pairs {
            let link = p.link.as_ref().map_or("link type unknown".to_string(), Link::to_string);
            lines.push(format!(
                "{} -> {}: {}, peer access {}, performance rank {}, native atomics {}",
                p.from,
                p.to,
                link,
                if p.peer_access { "yes" } else { "no" },
                p.performance_rank,
                if p.native_atomics { "yes" } else { "no" },
            ));
        }
        if let Some(note) = &self.nvml_note {
            lines.push(format!("(no link types: {note})"));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_lists_parse_and_bad_ones_name_the_value() {
        assert_eq!(parse_devices("0,1").unwrap(), DeviceList::These(vec![0, 1]));
        assert_eq!(parse_devices(" 1 , 0 ").unwrap(), DeviceList::These(vec![1, 0]));
        assert_eq!(parse_devices("0,0").unwrap(), DeviceList::These(vec![0, 0]));
        assert_eq!(parse_devices("all").unwrap(), DeviceList::All);
        let error = parse_devices("0,x").unwrap_err().to_string();
        assert!(error.contains("'x'") && error.contains("--devices"), "{error}");
        assert!(parse_devices("").is_err());
        let many = vec!["0"; MAX_DEVICES + 1].join(",");
        assert!(parse_devices(&many).unwrap_err().to_string().contains("at most"));
    }
}
