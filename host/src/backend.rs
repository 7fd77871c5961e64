//! Where kernels run, and the one launch path for both places: the GPU (through cudarc) or the CPU
//! emulator, generic over the problem a kernel solves.

use crate::array::Tracked;
use crate::error::{HostError, Result};
use crate::gpu::Gpu;
use kernels::{Kernel, Problem, Source};

/// Where kernels run.
pub enum Backend {
    Gpu(Box<Gpu>),
    /// The CPU emulator: the same kernel source, every thread of every block run for real.
    Emu,
}

/// `--backend`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendChoice {
    /// The GPU when the machine has an NVIDIA driver and a GPU, else the CPU emulator.
    Auto,
    /// The GPU; an error when there is none.
    Gpu,
    /// The CPU emulator.
    Emu,
}

impl Backend {
    /// The backend `choice` asks for; with `Auto`, also the notice to print when it falls back.
    /// `Auto` falls back to the emulator only when there is no driver or no GPU at all, and only
    /// when no device was asked for: a bad device number is an error, not a reason to emulate.
    pub fn choose(choice: BackendChoice, device: Option<usize>) -> Result<(Backend, Option<String>)> {
        let gpu = || Gpu::open(device).map(|gpu| Backend::Gpu(Box::new(gpu)));
        match choice {
            BackendChoice::Gpu => Ok((gpu()?, None)),
            BackendChoice::Emu => Ok((Backend::Emu, None)),
            BackendChoice::Auto => {
                let device_asked = device.is_some() || std::env::var_os(crate::gpu::DEVICE_ENV).is_some();
                match gpu() {
                    Ok(backend) => Ok((backend, None)),
                    Err(why @ (HostError::NoDriver | HostError::NoSuchDevice { available: 0, .. }))
                        if !device_asked =>
                    {
                        Ok((
                            Backend::Emu,
                            Some(format!(
                                "note: no GPU ({why}); running on the CPU emulator at reduced sizes. Times are the emulator's, not a GPU's."
                            )),
                        ))
                    }
                    Err(other) => Err(other),
                }
            }
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

    /// Whether the sm_90a PTX is loaded here, and with it the kernels only it runs (`wgmma`).
    pub fn runs_sm90a(&self) -> bool {
        matches!(self, Backend::Gpu(gpu) if gpu.ptx_arch() == "sm_90a")
    }

    /// Whether `source` of `kernel` can run here: Rust everywhere (but the sm_90a-only kernels, on
    /// the sm_90a PTX alone), CUDA C on a GPU that loaded it.
    pub fn has(&self, entry: &str, source: Source) -> bool {
        let sm90a_only = kernels::registry::find(entry).is_some_and(|k| k.sm90a_only);
        if sm90a_only && !self.runs_sm90a() {
            return false;
        }
        match (self, source) {
            (_, Source::Rust) => true,
            (Backend::Gpu(gpu), Source::CudaC) => gpu.cuda_c().is_some_and(|c| c.has(entry)),
            (Backend::Emu, Source::CudaC) => false,
        }
    }

    /// Launches `kernel` compiled from `source` for `problem` with `args`, then marks every array in
    /// `used` as in use by the launch. On the emulator the launch has finished when this returns;
    /// on the GPU it is queued on the GPU's stream.
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
        source: Source,
        problem: &P,
        args: P::Args,
        used: &[&dyn Tracked],
    ) -> Result<()> {
        let entry = kernel.entry();
        if kernel.code.sm90a_only() && !self.runs_sm90a() {
            let backend = match self {
                Backend::Emu => "the CPU emulator".to_string(),
                Backend::Gpu(gpu) => format!("this GPU ({} PTX loaded)", gpu.ptx_arch()),
            };
            return Err(HostError::NeedsSm90a { entry, backend });
        }
        let shape = kernel.launch_shape(problem);
        shape.check().map_err(|reason| HostError::InvalidInput {
            what: entry.to_string(),
            reason,
        })?;
        match self {
            Backend::Emu => {
                if source != Source::Rust {
                    return Err(HostError::SourceUnavailable {
                        entry,
                        compiled_from: source,
                    });
                }
                // SAFETY: forwarded from this function's contract.
                unsafe { kernel.code.emulate(&shape, args) }?;
                Ok(())
            }
            Backend::Gpu(gpu) => {
                // SAFETY: forwarded from this function's contract.
                unsafe { gpu.launch(entry, source, &shape, args) }?;
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
                return Err(HostError::ManagedBusy);
            }
            Ok(())
        }
    }

    #[test]
    fn a_failure_to_mark_one_array_still_marks_the_others() {
        let probes = [false, true, false].map(|fails| Probe {
            marked: Cell::new(0),
            fails,
        });
        let used: Vec<&dyn Tracked> = probes.iter().map(|p| p as &dyn Tracked).collect();
        assert!(matches!(Backend::Emu.mark_used(&used), Err(HostError::ManagedBusy)));
        assert!(probes.iter().all(|p| p.marked.get() == 1));
    }
}
