//! What links two GPUs, as the driver's management library (NVML, `libnvidia-ml.so.1`, installed
//! with every NVIDIA driver) reports it: NVLink, or the PCIe path between them. The CUDA driver API
//! says whether peer access works and ranks its performance, but not over which link.

use crate::error::{Error, Result};
use std::ffi::{CString, c_char, c_int, c_uint, c_void};

type Device = *mut c_void;
type Init = unsafe extern "C" fn() -> c_int;
type Shutdown = unsafe extern "C" fn() -> c_int;
type HandleByPciBusId = unsafe extern "C" fn(bus_id: *const c_char, device: *mut Device) -> c_int;
type P2pStatus = unsafe extern "C" fn(a: Device, b: Device, caps_index: c_int, status: *mut c_int) -> c_int;
type CommonAncestor = unsafe extern "C" fn(a: Device, b: Device, level: *mut c_int) -> c_int;
type NvLinkState = unsafe extern "C" fn(device: Device, link: c_uint, active: *mut c_int) -> c_int;

/// `NVML_P2P_CAPS_INDEX_NVLINK`: "are the two connected by NVLink".
const CAPS_INDEX_NVLINK: c_int = 2;
/// `NVML_P2P_STATUS_OK`.
const STATUS_OK: c_int = 0;
/// `NVML_NVLINK_MAX_LINKS` (18 on Hopper).
const MAX_LINKS: c_uint = 18;

/// How two GPUs are connected.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Link {
    /// NVLink, directly or through NVSwitch.
    NvLink,
    /// PCIe only, through the named part of the topology (NVML's common ancestor).
    Pcie(&'static str),
    /// The same GPU.
    Same,
}

impl std::fmt::Display for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Link::NvLink => write!(f, "NVLink"),
            Link::Pcie(path) => write!(f, "PCIe ({path})"),
            Link::Same => write!(f, "same GPU"),
        }
    }
}

/// NVML, initialised; shut down when dropped.
pub struct Nvml {
    shutdown: Shutdown,
    handle_by_pci_bus_id: HandleByPciBusId,
    p2p_status: P2pStatus,
    common_ancestor: CommonAncestor,
    nvlink_state: NvLinkState,
    _library: libloading::Library,
}

fn failed(doing: &str, message: String) -> Error {
    Error::Library {
        library: "NVML",
        doing: doing.to_string(),
        message,
    }
}

fn check(code: c_int, doing: &str) -> Result<()> {
    match code {
        0 => Ok(()),
        code => Err(failed(doing, format!("NVML error {code}"))),
    }
}

impl Nvml {
    /// Loads and initialises NVML; an error where the driver has none (no NVIDIA driver).
    pub fn open() -> Result<Nvml> {
        // SAFETY: loading the driver's own library runs only its initialisers.
        let library = unsafe { libloading::Library::new("libnvidia-ml.so.1") }.map_err(|e| {
            failed(
                "loading libnvidia-ml.so.1",
                format!("{e}: it comes with the NVIDIA driver"),
            )
        })?;
        // SAFETY: each symbol is read with the signature nvml.h gives it.
        let nvml = unsafe {
            let symbol = |name: &[u8]| {
                library
                    .get::<*const c_void>(name)
                    .map(|s| *s)
                    .map_err(|e| failed("finding an NVML function", e.to_string()))
            };
            let init: Init = std::mem::transmute(symbol(b"nvmlInit_v2\0")?);
            check(init(), "initialising")?;
            Nvml {
                shutdown: std::mem::transmute::<*const c_void, Shutdown>(symbol(b"nvmlShutdown\0")?),
                handle_by_pci_bus_id: std::mem::transmute::<*const c_void, HandleByPciBusId>(symbol(
                    b"nvmlDeviceGetHandleByPciBusId_v2\0",
                )?),
                p2p_status: std::mem::transmute::<*const c_void, P2pStatus>(symbol(b"nvmlDeviceGetP2PStatus\0")?),
                common_ancestor: std::mem::transmute::<*const c_void, CommonAncestor>(symbol(
                    b"nvmlDeviceGetTopologyCommonAncestor\0",
                )?),
                nvlink_state: std::mem::transmute::<*const c_void, NvLinkState>(symbol(b"nvmlDeviceGetNvLinkState\0")?),
                _library: library,
            }
        };
        Ok(nvml)
    }

    fn device(&self, pci_bus_id: &str) -> Result<Device> {
        let id =
            CString::new(pci_bus_id).map_err(|_| failed("finding a device", format!("bad bus id {pci_bus_id}")))?;
        let mut device: Device = std::ptr::null_mut();
        // SAFETY: a NUL-terminated string and one handle written.
        check(
            unsafe { (self.handle_by_pci_bus_id)(id.as_ptr(), &mut device) },
            &format!("finding the device at PCI {pci_bus_id}"),
        )?;
        Ok(device)
    }

    /// The link between the GPUs at PCI bus ids `a` and `b`.
    pub fn link(&self, a: &str, b: &str) -> Result<Link> {
        if a == b {
            return Ok(Link::Same);
        }
        let (da, db) = (self.device(a)?, self.device(b)?);
        let mut status = -1;
        // SAFETY: two handles NVML gave, one int written.
        check(
            unsafe { (self.p2p_status)(da, db, CAPS_INDEX_NVLINK, &mut status) },
            "reading the NVLink status",
        )?;
        if status == STATUS_OK {
            return Ok(Link::NvLink);
        }
        let mut level = -1;
        // SAFETY: as above.
        check(
            unsafe { (self.common_ancestor)(da, db, &mut level) },
            "reading the PCIe topology",
        )?;
        Ok(Link::Pcie(match level {
            0 => "same board",
            10 => "one PCIe switch",
            20 => "several PCIe switches",
            30 => "one host bridge",
            40 => "one NUMA node",
            _ => "across NUMA nodes",
        }))
    }

    /// Active NVLinks of the GPU at PCI bus id `id`.
    pub fn active_nvlinks(&self, id: &str) -> Result<u32> {
        let device = self.device(id)?;
        let mut active = 0;
        for link in 0..MAX_LINKS {
            let mut state = 0;
            // SAFETY: a handle NVML gave, one int written; links past the device's count answer an
            // error, which counts as inactive.
            if unsafe { (self.nvlink_state)(device, link, &mut state) } == 0 && state != 0 {
                active += 1;
            }
        }
        Ok(active)
    }
}

impl Drop for Nvml {
    fn drop(&mut self) {
        // SAFETY: paired with the successful nvmlInit_v2 in `open`.
        let _ = unsafe { (self.shutdown)() };
    }
}
