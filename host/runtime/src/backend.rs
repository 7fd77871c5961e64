//! Where kernels run, and the one launch path for both places: the GPU (through cudarc) or the CPU
//! emulator, generic over the problem a kernel solves.

use crate::array::Tracked;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::module::KernelCrate;
use ptxkit::{Dim3, Kernel, KernelFn, LaunchShape, Occupancy, Params, Problem};

/// Where kernels run.
pub enum Backend {
    Gpu(Box<Gpu>),
    /// The CPU emulator: the same kernel source, every thread of every block run for real.
    Emu,
}

/// Which backend to open ([`Backend::choose`]); parsed from `auto`, `gpu` or `emu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendChoice {
    /// The GPU when the machine has an NVIDIA driver and a GPU, else the CPU emulator.
    Auto,
    /// The GPU; an error when there is none.
    Gpu,
    /// The CPU emulator.
    Emu,
}

impl BackendChoice {
    /// Every choice, as [`std::str::FromStr`] spells it.
    pub const NAMES: [&'static str; 3] = ["auto", "gpu", "emu"];
}

impl std::str::FromStr for BackendChoice {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        match text {
            "auto" => Ok(BackendChoice::Auto),
            "gpu" => Ok(BackendChoice::Gpu),
            "emu" => Ok(BackendChoice::Emu),
            other => Err(format!("'{other}' is not a backend: give auto, gpu or emu")),
        }
    }
}

impl Backend {
    /// The backend `choice` asks for; with `Auto`, also the notice to print when it falls back.
    /// `Auto` falls back to the emulator only when there is no driver or no GPU at all, and only
    /// when no device was named (`device`, or `$PTXKIT_DEVICE`): a bad device number is an error,
    /// not a reason to emulate, and so is a device named for `Emu`.
    pub fn choose(choice: BackendChoice, device: Option<usize>) -> Result<(Backend, Option<String>)> {
        let named = crate::gpu::named_device(device)?;
        let gpu = || Gpu::open(device).map(|gpu| Backend::Gpu(Box::new(gpu)));
        match choice {
            BackendChoice::Gpu => Ok((gpu()?, None)),
            BackendChoice::Emu => match named {
                Some(named) => Err(Error::DeviceOnEmulator { named }),
                None => Ok((Backend::Emu, None)),
            },
            BackendChoice::Auto => match gpu() {
                Ok(backend) => Ok((backend, None)),
                Err(why @ (Error::NoDriver | Error::NoSuchDevice { available: 0, .. })) if named.is_none() => Ok((
                    Backend::Emu,
                    Some(format!(
                        "note: no GPU ({why}); running on the CPU emulator at reduced sizes. Times are the emulator's, not a GPU's."
                    )),
                )),
                Err(other) => Err(other),
            },
        }
    }

    /// "gpu" or "emu", as reports name it.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Gpu(_) => "gpu",
            Backend::Emu => "emu",
        }
    }

    pub fn gpu(&self) -> Option<&Gpu> {
        match self {
            Backend::Gpu(gpu) => Some(gpu),
            Backend::Emu => None,
        }
    }

    /// Loads kernel crate `K` on the GPU (nothing to do on the emulator, which runs every kernel
    /// from its source).
    pub fn load<K: KernelCrate>(&mut self) -> Result<()> {
        match self {
            Backend::Gpu(gpu) => gpu.load::<K>().map(|_| ()),
            Backend::Emu => Ok(()),
        }
    }

    /// Whether Hopper's architecture-specific kernels (`kernel_sm90a!`) run here: on a GPU of
    /// compute capability 9.0, from the sm_90a PTX.
    pub fn runs_sm90a(&self) -> bool {
        matches!(self, Backend::Gpu(gpu) if gpu.runs_sm90a())
    }

    /// Whether kernel `entry` of crate `krate` can run here, from its crate's module or from the
    /// module `from` names: on the emulator, only from its crate (and not the sm_90a-only ones);
    /// on a GPU, where that module is loaded and defines it (the sm_90a-only ones from sm_90a PTX).
    pub fn has(&self, krate: &str, entry: &str, sm90a_only: bool, from: Option<&str>) -> bool {
        match self {
            Backend::Emu => from.is_none() && !sm90a_only,
            Backend::Gpu(gpu) => gpu.function(krate, entry, from).is_ok_and(|function| {
                let hopper = match from {
                    None => function.arch() == Some("sm_90a"),
                    Some(_) => gpu.runs_sm90a(),
                };
                !sm90a_only || hopper
            }),
        }
    }

    /// Launches `kernel` for `problem` with `args`, then marks every array in `used` as in use by
    /// the launch. On the emulator the launch has finished when this returns; on the GPU it is
    /// queued on the GPU's stream, from the module of the kernel's crate.
    ///
    /// The launch shape is checked against CUDA's limits first. If marking an array fails, the
    /// others are still marked, and the GPU's stream is drained so that no array is left in use
    /// untracked.
    ///
    /// # Safety
    /// Every pointer in `args` comes from [`Array::address`](crate::array::Array::address) (or
    /// `address_mut` for what the kernel writes) on this backend, of an array listed in `used` that
    /// holds at least as many elements as `kernel` touches for `problem`.
    pub unsafe fn launch<P: Problem>(
        &self,
        kernel: &Kernel<P>,
        problem: &P,
        args: P::Args,
        used: &[&dyn Tracked],
    ) -> Result<()> {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.launch_from(None, kernel, problem, args, used) }
    }

    /// As [`Backend::launch`], with the kernel's function from the module `from` names (one
    /// [`Gpu::load_ptx`] loaded: the same kernel compiled by nvcc, say) where it is `Some`.
    ///
    /// # Safety
    /// As for [`Backend::launch`].
    pub unsafe fn launch_from<P: Problem>(
        &self,
        from: Option<&str>,
        kernel: &Kernel<P>,
        problem: &P,
        args: P::Args,
        used: &[&dyn Tracked],
    ) -> Result<()> {
        let shape = self.launch_shape_from(from, kernel, problem)?;
        // SAFETY: forwarded from this function's contract.
        unsafe { self.launch_fn(from, &kernel.code, &shape, args, used) }
    }

    /// The grid, block and shared bytes a launch of `kernel` for `problem` runs here: its grid
    /// given this backend's [`Occupancy`] of it.
    pub fn launch_shape<P: Problem>(&self, kernel: &Kernel<P>, problem: &P) -> Result<LaunchShape> {
        self.launch_shape_from(None, kernel, problem)
    }

    /// As [`Backend::launch_shape`], for a launch from the module `from` names.
    pub fn launch_shape_from<P: Problem>(
        &self,
        from: Option<&str>,
        kernel: &Kernel<P>,
        problem: &P,
    ) -> Result<LaunchShape> {
        if !kernel.grid_reads_device(problem) {
            return Ok(kernel.launch_shape(problem, Occupancy::ONE));
        }
        let occupancy = self.occupancy(&kernel.code, kernel.block, kernel.shared.bytes(), from)?;
        Ok(kernel.launch_shape(problem, occupancy))
    }

    /// What a grid may read of this backend for kernel `code` at `block` threads and
    /// `shared_bytes`: on a GPU, the blocks of it the device holds at once, measured on the
    /// kernel's own function (a twin launched `from` another module runs the grid of the kernel
    /// it stands for, so that both do the same work); on the emulator, [`Occupancy::EMULATOR`].
    pub fn occupancy<A: Params>(
        &self,
        code: &KernelFn<A>,
        block: Dim3,
        shared_bytes: u32,
        from: Option<&str>,
    ) -> Result<Occupancy> {
        Ok(match self {
            Backend::Emu => Occupancy::EMULATOR,
            Backend::Gpu(gpu) => Occupancy {
                resident_blocks: gpu.resident_blocks((code.krate(), code.entry()), block, shared_bytes, from)?,
            },
        })
    }

    /// Launches a kernel function over `shape`, checked as [`Backend::launch`] does: for kernels
    /// without a [`Kernel`] value, whose launch shape the caller works out.
    ///
    /// # Safety
    /// As for [`Backend::launch`], for the elements the launch over `shape` touches.
    pub unsafe fn launch_fn<A: Params>(
        &self,
        from: Option<&str>,
        code: &KernelFn<A>,
        shape: &LaunchShape,
        args: A,
        used: &[&dyn Tracked],
    ) -> Result<()> {
        let entry = code.entry();
        if let Some(bounded) = code.bounds().block()
            && bounded != shape.block
        {
            return Err(Error::InvalidInput {
                what: entry.to_string(),
                reason: format!(
                    "its #[launch_bounds] are for blocks of {bounded}, and the launch asks for {}: a block beyond the bounds fails to launch",
                    shape.block
                ),
            });
        }
        let cluster = code.bounds().cluster();
        if !shape.grid.x.is_multiple_of(cluster) {
            return Err(Error::InvalidInput {
                what: entry.to_string(),
                reason: format!(
                    "it runs in clusters of {cluster} blocks along x, and the launch asks for a grid of {}: the grid's x must be a multiple of the cluster",
                    shape.grid
                ),
            });
        }
        shape.check().map_err(|reason| Error::InvalidInput {
            what: entry.to_string(),
            reason,
        })?;
        match self {
            Backend::Emu => {
                if let Some(module) = from {
                    return Err(Error::Unavailable {
                        what: format!("{entry} from {module}"),
                        reason: "the emulator runs kernels from their Rust source only".into(),
                    });
                }
                if code.sm90a_only() {
                    return Err(Error::NeedsSm90a {
                        entry: entry.to_string(),
                        backend: "the CPU emulator".into(),
                    });
                }
                // SAFETY: forwarded from this function's contract.
                unsafe { code.emulate(shape, args) }?;
                Ok(())
            }
            Backend::Gpu(gpu) => {
                let function = gpu.function(code.krate(), entry, from)?;
                if code.sm90a_only() && from.is_none() && function.arch() != Some("sm_90a") {
                    return Err(Error::NeedsSm90a {
                        entry: entry.to_string(),
                        backend: format!("this GPU ({} PTX loaded)", function.arch().unwrap_or("other")),
                    });
                }
                // SAFETY: forwarded from this function's contract.
                unsafe { gpu.launch(&function, entry, shape, args) }?;
                self.mark_used(used)
            }
        }
    }

    /// Marks every array as used by the launch just queued; on a failure, drains the stream.
    fn mark_used(&self, used: &[&dyn Tracked]) -> Result<()> {
        let mut first_error = None;
        for array in used {
            if let Err(error) = array.launched(self) {
                first_error.get_or_insert(error);
            }
        }
        match (first_error, self) {
            (None, _) => Ok(()),
            (Some(error), Backend::Gpu(gpu)) => {
                // An array that could not be marked would look idle while the kernel uses it.
                gpu.synchronize()?;
                Err(error)
            }
            (Some(error), Backend::Emu) => Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// Counts how often it is marked; fails when told to.
    struct Probe {
        marked: Cell<u32>,
        fails: bool,
    }

    impl Tracked for Probe {
        fn launched(&self, _backend: &Backend) -> Result<()> {
            self.marked.set(self.marked.get() + 1);
            if self.fails {
                return Err(Error::ManagedBusy);
            }
            Ok(())
        }
    }

    ptxkit::kernel! {
        #[launch_bounds(ptxkit::Dim3::x(32), 1, cluster = 2)]
        /// Does nothing, in clusters of two.
        pub unsafe fn paired(n: u32) {
            let _ = n;
        }
    }

    /// A kernel launched in clusters takes only whole clusters along x, refused before it runs;
    /// whole ones run (the emulator, which has no clusters, runs the blocks as they are).
    #[test]
    fn a_clustered_kernel_takes_whole_clusters() {
        let shape = |x| LaunchShape {
            grid: ptxkit::Dim3::x(x),
            block: ptxkit::Dim3::x(32),
            shared_bytes: 0,
        };
        // SAFETY: the kernel touches no memory.
        let odd = unsafe { Backend::Emu.launch_fn(None, &paired, &shape(3), (7,), &[]) };
        match odd {
            Err(Error::InvalidInput { what, reason }) => {
                assert_eq!(what, "paired");
                assert!(reason.contains("clusters of 2"), "{reason}");
            }
            other => panic!("a grid of 3 in clusters of 2: {other:?}"),
        }
        // SAFETY: as above.
        unsafe { Backend::Emu.launch_fn(None, &paired, &shape(4), (7,), &[]) }.unwrap();
    }

    #[test]
    fn a_failure_to_mark_one_array_still_marks_the_others() {
        let probes = [false, true, false].map(|fails| Probe {
            marked: Cell::new(0),
            fails,
        });
        let used: Vec<&dyn Tracked> = probes.iter().map(|p| p as &dyn Tracked).collect();
        assert!(matches!(Backend::Emu.mark_used(&used), Err(Error::ManagedBusy)));
        assert!(probes.iter().all(|p| p.marked.get() == 1));
    }
}
