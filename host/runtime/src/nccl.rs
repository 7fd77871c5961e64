//! NCCL, NVIDIA's collective library, for the step where GPUs combine their results (an all-reduce
//! of partial sums): an existing engine rather than a home-made one. The types are cudarc's NCCL
//! bindings; the library is found and loaded here, because cudarc's loader looks only for names
//! (`libnccl.so`, `libnccl.so.13`, …) that PyTorch's NCCL wheel, the copy most machines have, does
//! not use: it ships `libnccl.so.2`.
//!
//! NVLink multicast (NVLS) stays off: on shared hosts a program that uses it can put the GPUs out
//! of service. [`Nccl::load`] sets `NCCL_NVLS_ENABLE=0` before the library initialises and refuses
//! to run where it is set to anything else; nothing here creates multicast objects.

use crate::error::{Doing, Error, Result};
use crate::gpu::Gpu;
use cudarc::driver::CudaSlice;
use cudarc::driver::DevicePtrMut;
use cudarc::nccl::sys::{ncclComm_t, ncclDataType_t, ncclRedOp_t};
use std::ffi::{CStr, c_char, c_int, c_void};
use std::path::PathBuf;

/// Environment variable naming the NCCL library to load (a path), before any search.
pub const NCCL_ENV: &str = "KERNELS_NCCL";
/// NCCL's switch for NVLink multicast; must be 0 here.
pub const NVLS_ENV: &str = "NCCL_NVLS_ENABLE";

type GetVersion = unsafe extern "C" fn(version: *mut c_int) -> c_int;
type CommInitAll = unsafe extern "C" fn(comms: *mut ncclComm_t, ndev: c_int, devices: *const c_int) -> c_int;
type CommDestroy = unsafe extern "C" fn(comm: ncclComm_t) -> c_int;
type AllReduce = unsafe extern "C" fn(
    send: *const c_void,
    receive: *mut c_void,
    count: usize,
    datatype: ncclDataType_t,
    op: ncclRedOp_t,
    comm: ncclComm_t,
    stream: *mut c_void,
) -> c_int;
type Group = unsafe extern "C" fn() -> c_int;
type ErrorString = unsafe extern "C" fn(result: c_int) -> *const c_char;

/// The NCCL library, loaded.
pub struct Nccl {
    pub path: PathBuf,
    /// e.g. 22803 for 2.28.3.
    pub version: i32,
    comm_init_all: CommInitAll,
    comm_destroy: CommDestroy,
    all_reduce: AllReduce,
    group_start: Group,
    group_end: Group,
    error_string: ErrorString,
    _library: libloading::Library,
}

fn failed(doing: &str, message: String) -> Error {
    Error::Library {
        library: "NCCL",
        doing: doing.to_string(),
        message,
    }
}

/// Where PyTorch's NCCL wheel puts the library, below a Python environment's site-packages.
const WHEEL_DIR: &str = "nvidia/nccl/lib";
const SONAMES: [&str; 2] = ["libnccl.so.2", "libnccl.so"];

/// Places NCCL may be, in order: `$KERNELS_NCCL`; the loader's own search (LD_LIBRARY_PATH, the
/// system's libraries); PyTorch's NCCL wheel in the Python on PATH and in virtual environments
/// under /opt and $VIRTUAL_ENV.
fn candidates() -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    if let Some(path) = std::env::var_os(NCCL_ENV) {
        return vec![PathBuf::from(path)];
    }
    found.extend(SONAMES.iter().map(PathBuf::from));
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Some(venv) = std::env::var_os("VIRTUAL_ENV") {
        roots.push(PathBuf::from(venv));
    }
    if let Ok(entries) = std::fs::read_dir("/opt") {
        roots.extend(entries.flatten().map(|e| e.path().join(".venv")));
    }
    roots.push(PathBuf::from("/usr/local"));
    roots.push(PathBuf::from("/usr"));
    for root in roots {
        let Ok(entries) = std::fs::read_dir(root.join("lib")) else {
            continue;
        };
        for python in entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
        {
            for packages in ["site-packages", "dist-packages"] {
                found.push(python.path().join(packages).join(WHEEL_DIR).join(SONAMES[0]));
            }
        }
    }
    // The Python on PATH, asked where its nvidia.nccl package lives.
    if let Ok(output) = std::process::Command::new("python3")
        .args(["-c", "import nvidia.nccl as n; print(list(n.__path__)[0])"])
        .stderr(std::process::Stdio::null())
        .output()
        && output.status.success()
    {
        let dir = String::from_utf8_lossy(&output.stdout).trim().to_string();
        found.push(PathBuf::from(dir).join("lib").join(SONAMES[0]));
    }
    found
}

/// NVLink multicast off before NCCL initialises; an error where someone turned it on.
fn keep_multicast_off() -> Result<()> {
    match std::env::var(NVLS_ENV) {
        Ok(value) if value.trim() == "0" => Ok(()),
        Ok(value) => Err(Error::InvalidInput {
            what: NVLS_ENV.into(),
            reason: format!(
                "it is '{value}'; NVLink multicast must stay off on shared hosts (it can put their GPUs out of service): unset it or set it to 0"
            ),
        }),
        Err(_) => {
            // SAFETY: std's environment lock orders this against every other Rust access; NCCL,
            // which reads it, is not loaded yet, and the CUDA driver does not read this variable.
            unsafe { std::env::set_var(NVLS_ENV, "0") };
            Ok(())
        }
    }
}

impl Nccl {
    /// Finds and loads NCCL (see `candidates`); a clear error naming where it looked when it
    /// is nowhere.
    pub fn load() -> Result<Nccl> {
        keep_multicast_off()?;
        let tried = candidates();
        let (path, library) = tried
            .iter()
            .find_map(|path| {
                // SAFETY: loading NCCL runs only its initialisers.
                unsafe { libloading::Library::new(path) }.ok().map(|l| (path.clone(), l))
            })
            .ok_or_else(|| {
                failed(
                    "loading libnccl",
                    format!(
                        "not found (tried {}): install PyTorch's NCCL (pip install nvidia-nccl-cu13) or set {NCCL_ENV} to the library's path",
                        tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
                    ),
                )
            })?;
        // SAFETY: each symbol is read with the signature nccl.h gives it.
        unsafe {
            let symbol = |name: &[u8]| {
                library
                    .get::<*const c_void>(name)
                    .map(|s| *s)
                    .map_err(|e| failed("finding an NCCL function", e.to_string()))
            };
            let get_version: GetVersion = std::mem::transmute(symbol(b"ncclGetVersion\0")?);
            let mut version = 0;
            if get_version(&mut version) != 0 {
                return Err(failed("reading the version", format!("{}", path.display())));
            }
            Ok(Nccl {
                path,
                version,
                comm_init_all: std::mem::transmute::<*const c_void, CommInitAll>(symbol(b"ncclCommInitAll\0")?),
                comm_destroy: std::mem::transmute::<*const c_void, CommDestroy>(symbol(b"ncclCommDestroy\0")?),
                all_reduce: std::mem::transmute::<*const c_void, AllReduce>(symbol(b"ncclAllReduce\0")?),
                group_start: std::mem::transmute::<*const c_void, Group>(symbol(b"ncclGroupStart\0")?),
                group_end: std::mem::transmute::<*const c_void, Group>(symbol(b"ncclGroupEnd\0")?),
                error_string: std::mem::transmute::<*const c_void, ErrorString>(symbol(b"ncclGetErrorString\0")?),
                _library: library,
            })
        }
    }

    /// "2.28.3".
    pub fn version_text(&self) -> String {
        let v = self.version;
        format!("{}.{}.{}", v / 10000, v / 100 % 100, v % 100)
    }

    fn check(&self, code: c_int, doing: &str) -> Result<()> {
        if code == 0 {
            return Ok(());
        }
        // SAFETY: NCCL returns a static string for any code.
        let text = unsafe { CStr::from_ptr((self.error_string)(code)) };
        Err(failed(doing, format!("{} (code {code})", text.to_string_lossy())))
    }
}

/// One communicator per GPU of a single process (`ncclCommInitAll`), for collectives on the GPUs'
/// own streams.
pub struct Clique<'a> {
    nccl: &'a Nccl,
    gpus: Vec<&'a Gpu>,
    comms: Vec<ncclComm_t>,
}

impl<'a> Clique<'a> {
    /// A communicator for each of `gpus`, which must be distinct devices.
    pub fn new(nccl: &'a Nccl, gpus: &[&'a Gpu]) -> Result<Clique<'a>> {
        let ordinals: Vec<c_int> = gpus.iter().map(|g| g.info().ordinal as c_int).collect();
        for (i, o) in ordinals.iter().enumerate() {
            if ordinals[..i].contains(o) {
                return Err(Error::InvalidInput {
                    what: "--devices".into(),
                    reason: format!("device {o} appears twice; NCCL needs each GPU once"),
                });
            }
        }
        let mut comms: Vec<ncclComm_t> = vec![std::ptr::null_mut(); gpus.len()];
        // SAFETY: room for one communicator per device, and the list of their ordinals.
        let code = unsafe { (nccl.comm_init_all)(comms.as_mut_ptr(), ordinals.len() as c_int, ordinals.as_ptr()) };
        nccl.check(code, &format!("creating communicators on devices {ordinals:?}"))?;
        Ok(Clique {
            nccl,
            gpus: gpus.to_vec(),
            comms,
        })
    }

    /// Sums `buffers[g]` (on GPU g, all of one length) elementwise across the GPUs, in place: each
    /// ends holding the total. Queued on each GPU's stream.
    pub fn all_reduce_sum(&self, buffers: &mut [CudaSlice<f32>]) -> Result<()> {
        if buffers.len() != self.gpus.len() {
            return Err(Error::InvalidInput {
                what: "an all-reduce".into(),
                reason: format!("{} buffers for {} GPUs", buffers.len(), self.gpus.len()),
            });
        }
        let len = buffers[0].len();
        for (g, (buffer, gpu)) in buffers.iter().zip(&self.gpus).enumerate() {
            if buffer.len() != len || buffer.context().cu_ctx() != gpu.context().cu_ctx() {
                return Err(Error::InvalidInput {
                    what: "an all-reduce".into(),
                    reason: format!("buffer {g} is not {len} floats on device {}", gpu.info().ordinal),
                });
            }
        }
        // SAFETY: no arguments.
        self.nccl
            .check(unsafe { (self.nccl.group_start)() }, "starting a group")?;
        let mut queued = Ok(());
        for ((buffer, gpu), &comm) in buffers.iter_mut().zip(&self.gpus).zip(&self.comms) {
            gpu.context().bind_to_thread().doing(|| "binding the context".into())?;
            let (address, _guard) = buffer.device_ptr_mut(gpu.stream());
            // SAFETY: `len` floats on this GPU (checked), in place; queued on the GPU's own stream,
            // which orders it after earlier work on the buffer and before later work.
            let code = unsafe {
                (self.nccl.all_reduce)(
                    address as *const c_void,
                    address as *mut c_void,
                    len,
                    ncclDataType_t::ncclFloat32,
                    ncclRedOp_t::ncclSum,
                    comm,
                    gpu.stream().cu_stream().cast(),
                )
            };
            if queued.is_ok() {
                queued = self.nccl.check(code, "queueing an all-reduce");
            }
        }
        // SAFETY: closes the group opened above, whatever happened inside it.
        let ended = self
            .nccl
            .check(unsafe { (self.nccl.group_end)() }, "running the all-reduce");
        queued.and(ended)
    }
}

impl Drop for Clique<'_> {
    fn drop(&mut self) {
        for gpu in &self.gpus {
            let _ = gpu.synchronize();
        }
        for &comm in &self.comms {
            // SAFETY: created by ncclCommInitAll, its work finished (above).
            let _ = unsafe { (self.nccl.comm_destroy)(comm) };
        }
    }
}
