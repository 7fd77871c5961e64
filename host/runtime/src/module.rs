//! PTX modules on a GPU: a kernel crate's (what `ptxkit-build` embeds, typed by the crate), or any
//! PTX text under a name of its own (nvcc's, for comparison). Kernels are found in the module of
//! the crate they are written in, so two crates may each have a kernel `vec_add`.

use crate::error::{Doing, Error, Result};
use crate::gpu::Gpu;
use cudarc::driver::sys;
use std::collections::HashMap;
use std::ffi::{CString, c_void};
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

/// One architecture's PTX of a kernel crate, as `ptxkit-build` embeds it.
#[derive(Debug)]
pub struct Ptx {
    /// `sm_XY`, or `sm_XYa` for the architecture-specific form.
    pub arch: &'static str,
    pub compute_capability: (u32, u32),
    /// Built for exactly this capability (`sm_90a`): runs on it alone, and holds the kernels that
    /// only it can run.
    pub specific: bool,
    pub text: &'static str,
}

impl Ptx {
    /// The PTX for a device of compute capability `major.minor`: the one built for exactly its
    /// own instructions where there is one (sm_90a on an H100 or H200), else the highest
    /// architecture not above its capability (the driver compiles PTX for its own GPU, but not
    /// PTX that uses features it lacks).
    pub fn for_device(modules: &'static [Ptx], major: u32, minor: u32) -> Option<&'static Ptx> {
        let exact = modules
            .iter()
            .find(|p| p.specific && p.compute_capability == (major, minor));
        exact.or_else(|| {
            modules
                .iter()
                .filter(|p| !p.specific && p.compute_capability <= (major, minor))
                .max_by_key(|p| p.compute_capability)
        })
    }

    /// The `.version` line of a PTX text, e.g. "8.0": the driver must support this PTX ISA.
    pub fn isa_version(text: &str) -> Option<&str> {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(".version "))
            .map(str::trim)
    }
}

/// A kernel crate built to PTX: what `ptxkit_build::PtxBuilder::embed` defines for it
/// (`include_kernels!`).
pub trait KernelCrate: 'static {
    /// The crate's name as Rust spells it: what its kernels' [`KernelFn::krate`](ptxkit::KernelFn::krate) say.
    const NAME: &'static str;
    /// One module per architecture.
    const PTX: &'static [Ptx];
}

/// Defines the [`KernelCrate`] type that `ptxkit_build::PtxBuilder::embed` wrote for a kernel
/// crate (`StencilKernels` for `stencil_kernels`): `include_kernels!(stencil_kernels);`.
#[macro_export]
macro_rules! include_kernels {
    ($crate_name:ident) => {
        include!(concat!(env!("OUT_DIR"), "/", stringify!($crate_name), ".rs"));
    };
}

/// A loaded module: a kernel crate's for this device, or PTX loaded under a name (several PTX
/// modules may share one name, as the files of one compiler's output do).
pub(crate) struct LoadedModule {
    /// The kernel crate's name, or the name it was loaded under.
    pub name: String,
    /// Loaded by [`Gpu::load`] from a kernel crate (else by [`Gpu::load_ptx`]).
    pub from_crate: bool,
    /// The architecture of the PTX loaded (`sm_90a`), where known.
    pub arch: Option<&'static str>,
    /// Entry names as launches ask for them, with their functions.
    pub functions: Vec<(String, sys::CUfunction)>,
    /// Resident blocks on the device measured so far, by function (its handle's address), threads
    /// and shared bytes ([`Gpu::resident_blocks`]).
    pub resident: Mutex<HashMap<(usize, u32, u32), u32>>,
    handle: sys::CUmodule,
    ctx: Arc<cudarc::driver::CudaContext>,
}

// SAFETY: module and function handles are driver objects usable from any thread of the process.
unsafe impl Send for LoadedModule {}
unsafe impl Sync for LoadedModule {}

impl Drop for LoadedModule {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: the handle came from cuModuleLoadDataEx and is unloaded once; its functions
            // are not used after (every Function holds the module alive).
            let _ = unsafe { sys::cuModuleUnload(self.handle) };
        }
    }
}

impl LoadedModule {
    pub fn function(&self, entry: &str) -> Option<sys::CUfunction> {
        self.functions.iter().find(|(e, _)| e == entry).map(|(_, f)| *f)
    }
}

/// The handle of a loaded kernel crate's module, typed by the crate.
pub struct Module<K: KernelCrate> {
    arch: &'static str,
    entries: Vec<String>,
    _crate: PhantomData<K>,
}

impl<K: KernelCrate> Module<K> {
    /// The architecture of the PTX the driver loaded for this device.
    pub fn arch(&self) -> &'static str {
        self.arch
    }

    /// The kernels it holds (their entry names).
    pub fn entries(&self) -> &[String] {
        &self.entries
    }
}

/// A kernel's function on a GPU, and the module that keeps it loaded.
pub struct Function {
    pub(crate) handle: sys::CUfunction,
    pub(crate) module: Arc<LoadedModule>,
}

impl Function {
    /// The name of the module it is in.
    pub fn module(&self) -> &str {
        &self.module.name
    }

    /// The architecture of that module's PTX, where known.
    pub fn arch(&self) -> Option<&'static str> {
        self.module.arch
    }

    /// The raw driver handle, valid while this `Function` lives.
    pub fn cu_function(&self) -> sys::CUfunction {
        self.handle
    }

    /// A function attribute (`CU_FUNC_ATTRIBUTE_NUM_REGS`, …).
    pub fn attribute(&self, attribute: sys::CUfunction_attribute) -> Result<i32> {
        let mut value = 0;
        // SAFETY: writes one int; the handle is live while the module is.
        unsafe { sys::cuFuncGetAttribute(&mut value, attribute, self.handle) }
            .result()
            .doing(|| format!("reading an attribute of a kernel of {}", self.module.name))?;
        Ok(value)
    }

    /// Sets a function attribute (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`, …).
    pub fn set_attribute(&self, attribute: sys::CUfunction_attribute, value: i32) -> Result<()> {
        // SAFETY: the handle is live while the module is.
        unsafe { sys::cuFuncSetAttribute(self.handle, attribute, value) }
            .result()
            .doing(|| format!("setting an attribute of a kernel of {}", self.module.name))
    }

    /// The CTAs per cluster its PTX requires (`.reqnctapercluster`, along x: the only way
    /// `kernel!` clusters them), 1 where it requires none.
    pub fn cluster_width(&self) -> Result<u32> {
        let width = self.attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH)?;
        Ok(width.max(1) as u32)
    }

    /// Clusters of `width` blocks the device holds at once at `threads` per block and
    /// `shared_bytes` of dynamic shared memory: fewer than SMs / `width` where a GPC's SMs do
    /// not pair up.
    pub fn max_active_clusters(&self, threads: u32, shared_bytes: u32, width: u32) -> Result<u32> {
        let config = sys::CUlaunchConfig {
            gridDimX: width,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: threads,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: shared_bytes,
            hStream: std::ptr::null_mut(),
            attrs: std::ptr::null_mut(),
            numAttrs: 0,
        };
        let mut clusters = 0;
        // SAFETY: reads the config, writes one int; the handle is live while the module is. The
        // function's own cluster size applies (the config names none).
        unsafe { sys::cuOccupancyMaxActiveClusters(&mut clusters, self.handle, &config) }
            .result()
            .doing(|| {
                format!(
                    "computing the clusters of a kernel of {} the device holds",
                    self.module.name
                )
            })?;
        Ok(clusters as u32)
    }

    /// Resident blocks per SM at `threads` per block and `shared_bytes` of dynamic shared memory.
    pub fn max_active_blocks_per_sm(&self, threads: u32, shared_bytes: u32) -> Result<u32> {
        let mut blocks = 0;
        // SAFETY: writes one int; the handle is live while the module is.
        unsafe {
            sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut blocks,
                self.handle,
                threads as i32,
                shared_bytes as usize,
            )
        }
        .result()
        .doing(|| format!("computing the occupancy of a kernel of {}", self.module.name))?;
        Ok(blocks as u32)
    }
}

/// Bytes of the driver's JIT log kept when a module does not load.
const JIT_LOG_BYTES: usize = 16 << 10;

impl Gpu {
    /// Loads kernel crate `K`'s PTX for this device; afterwards its kernels launch here. Loading a
    /// crate that is loaded already changes nothing.
    pub fn load<K: KernelCrate>(&mut self) -> Result<Module<K>> {
        let (major, minor) = self.info().compute_capability;
        let ptx = Ptx::for_device(K::PTX, major as u32, minor as u32).ok_or_else(|| Error::NoPtxForDevice {
            krate: K::NAME,
            major,
            minor,
            built: K::PTX.iter().map(|p| p.arch).collect::<Vec<_>>().join(", "),
        })?;
        if let Some(loaded) = self.loaded(K::NAME).next() {
            if !loaded.from_crate {
                return Err(Error::InvalidInput {
                    what: format!("kernel crate {}", K::NAME),
                    reason: "PTX was loaded under that name with Gpu::load_ptx already".into(),
                });
            }
            return Ok(Module {
                arch: loaded.arch.unwrap_or(ptx.arch),
                entries: loaded.functions.iter().map(|(e, _)| e.clone()).collect(),
                _crate: PhantomData,
            });
        }
        let entries = ptxkit_build::ptx::entry_names(ptx.text);
        let module = self.load_text(K::NAME, true, Some(ptx.arch), ptx.text, &entries, |e| {
            Some(e.to_string())
        })?;
        Ok(Module {
            arch: ptx.arch,
            entries: module.functions.iter().map(|(e, _)| e.clone()).collect(),
            _crate: PhantomData,
        })
    }

    /// Loads PTX text under `name`, for launches that name it ([`Backend::launch_from`](crate::Backend::launch_from)):
    /// each `.entry` for which `rename` gives a name is launched under that name (nvcc's twin
    /// `vec_add_cuda` of a Rust `vec_add`, say). Several texts may be loaded under one name;
    /// refused where a kernel crate of that name is loaded, and where a module of that name
    /// already defines one of the names.
    pub fn load_ptx(&mut self, name: &str, text: &str, rename: impl Fn(&str) -> Option<String>) -> Result<()> {
        let entries = ptxkit_build::ptx::entry_names(text);
        for module in self.loaded(name) {
            if module.from_crate {
                return Err(Error::InvalidInput {
                    what: format!("module {name}"),
                    reason: "a kernel crate of that name is loaded on this GPU".into(),
                });
            }
            if let Some(twice) = entries
                .iter()
                .filter_map(|e| rename(e))
                .find(|e| module.function(e).is_some())
            {
                return Err(Error::Ambiguous {
                    entry: twice,
                    modules: format!("two PTX texts loaded as {name}"),
                });
            }
        }
        self.load_text(name, false, None, text, &entries, rename).map(|_| ())
    }

    fn load_text(
        &mut self,
        name: &str,
        from_crate: bool,
        arch: Option<&'static str>,
        text: &str,
        entries: &[String],
        rename: impl Fn(&str) -> Option<String>,
    ) -> Result<Arc<LoadedModule>> {
        self.context().bind_to_thread().doing(|| "binding the context".into())?;
        let source = CString::new(text).map_err(|_| Error::InvalidInput {
            what: format!("the PTX of {name}"),
            reason: "it holds a NUL byte: it is not PTX text".into(),
        })?;
        let mut log = vec![0u8; JIT_LOG_BYTES];
        let line_info = text.contains("\t.loc\t");
        let mut options = vec![
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        // An option's value travels in a pointer-sized slot: a buffer's address, or an integer.
        let mut values: Vec<*mut c_void> =
            vec![log.as_mut_ptr().cast(), std::ptr::without_provenance_mut(JIT_LOG_BYTES)];
        if line_info {
            // So that compute-sanitizer and Nsight name the source lines the PTX's `.loc` give.
            options.push(sys::CUjit_option::CU_JIT_GENERATE_LINE_INFO);
            values.push(std::ptr::without_provenance_mut(1));
        }
        let mut handle = std::ptr::null_mut();
        // SAFETY: `source` is NUL-terminated text; the option values are what each option takes
        // (a buffer and its size as a pointer-sized integer, an int flag), alive for the call.
        let loaded = unsafe {
            sys::cuModuleLoadDataEx(
                &mut handle,
                source.as_ptr().cast(),
                options.len() as u32,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        }
        .result();
        if let Err(source) = loaded {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            return Err(Error::PtxLoad {
                module: name.to_string(),
                arch: arch.unwrap_or("?"),
                isa: Ptx::isa_version(text).unwrap_or("?").to_string(),
                log: String::from_utf8_lossy(&log[..end]).trim().to_string(),
                source,
            });
        }
        let mut module = LoadedModule {
            name: name.to_string(),
            from_crate,
            arch,
            functions: Vec::new(),
            resident: Mutex::default(),
            handle,
            ctx: self.context().clone(),
        };
        for entry in entries {
            let Some(launched_as) = rename(entry) else { continue };
            let c_entry = CString::new(entry.as_str()).map_err(|_| Error::InvalidInput {
                what: format!("the PTX of {name}"),
                reason: format!("the entry name {entry:?} holds a NUL byte"),
            })?;
            let mut function = std::ptr::null_mut();
            // SAFETY: writes one handle; the module is loaded and the name NUL-terminated.
            unsafe { sys::cuModuleGetFunction(&mut function, module.handle, c_entry.as_ptr()) }
                .result()
                .doing(|| format!("loading kernel {entry} from {name}"))?;
            module.functions.push((launched_as, function));
        }
        let module = Arc::new(module);
        let mut modules = (*self.modules).clone();
        modules.push(module.clone());
        self.modules = Arc::new(modules);
        Ok(module)
    }

    /// The modules loaded under `name` (a kernel crate's name: one).
    pub(crate) fn loaded(&self, name: &str) -> impl Iterator<Item = &Arc<LoadedModule>> {
        self.modules.iter().filter(move |m| m.name == name)
    }

    /// The names of the loaded modules, each once, as errors list them.
    pub fn loaded_modules(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for module in self.modules.iter() {
            if !names.contains(&module.name.as_str()) {
                names.push(&module.name);
            }
        }
        names
    }

    /// Whether a module named `name` is loaded.
    pub fn has_module(&self, name: &str) -> bool {
        self.loaded(name).next().is_some()
    }

    /// The function `entry` of kernel crate `krate`, from that crate's module, or from the module
    /// `from` names instead (loaded with [`Gpu::load_ptx`]).
    pub fn function(&self, krate: &str, entry: &str, from: Option<&str>) -> Result<Function> {
        let name = from.unwrap_or(krate);
        if !self.has_module(name) {
            return Err(Error::NotLoaded {
                entry: entry.to_string(),
                module: name.to_string(),
                loaded: self.loaded_modules().join(", "),
            });
        }
        self.loaded(name)
            .find_map(|module| {
                module.function(entry).map(|handle| Function {
                    handle,
                    module: module.clone(),
                })
            })
            .ok_or_else(|| Error::NoEntry {
                entry: entry.to_string(),
                module: name.to_string(),
            })
    }

    /// The function named `entry` in whichever loaded module defines it: for launches by name
    /// alone. Refused where two modules define it, and where none does.
    pub fn function_by_name(&self, entry: &str) -> Result<Function> {
        let mut found = self.modules.iter().filter(|m| m.function(entry).is_some());
        let (Some(first), second) = (found.next(), found.next()) else {
            return Err(Error::NotLoaded {
                entry: entry.to_string(),
                module: "any module".into(),
                loaded: self.loaded_modules().join(", "),
            });
        };
        if let Some(second) = second {
            return Err(Error::Ambiguous {
                entry: entry.to_string(),
                modules: format!("{} and {}", first.name, second.name),
            });
        }
        self.function(&first.name, entry, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static BUILT: &[Ptx] = &[
        Ptx {
            arch: "sm_80",
            compute_capability: (8, 0),
            specific: false,
            text: ".version 8.0\n.target sm_80\n",
        },
        Ptx {
            arch: "sm_90a",
            compute_capability: (9, 0),
            specific: true,
            text: ".version 8.0\n.target sm_90a\n",
        },
    ];

    #[test]
    fn device_gets_the_newest_ptx_it_can_run() {
        assert_eq!(Ptx::for_device(BUILT, 9, 0).map(|p| p.arch), Some("sm_90a"));
        assert_eq!(Ptx::for_device(BUILT, 8, 9).map(|p| p.arch), Some("sm_80"));
        // sm_90a runs on compute capability 9.0 alone.
        assert_eq!(Ptx::for_device(BUILT, 10, 0).map(|p| p.arch), Some("sm_80"));
        assert!(Ptx::for_device(BUILT, 7, 5).is_none());
    }

    #[test]
    fn ptx_isa_version_is_read_from_the_module() {
        assert_eq!(Ptx::isa_version(BUILT[0].text), Some("8.0"));
    }
}
