//! Device memory a launch uses for itself and leaves behind: the row-padded copies of the TMA
//! kernels' operands ([`Gpu::padded_copies`]), the f32 partial sums of a product whose runs of k
//! meet before they are rounded ([`Backend::partial_sums`]). One buffer per stream and purpose (as
//! the zeroed counters), grown on demand and kept while the GPU is open, so that its address stays
//! the same from call to call; while a launch's hold on it lives, no other launch on the stream
//! can take it.

use crate::backend::Backend;
use crate::error::{Doing, Error, Result};
use crate::gpu::Gpu;
use cudarc::driver::sys;
use cudarc::driver::{CudaSlice, DevicePtr};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The scratch of each stream, by its handle; shared with the GPU's external-stream views.
#[derive(Default)]
pub(crate) struct StreamScratch(Mutex<HashMap<usize, CudaSlice<u8>>>);

/// A launch's hold on its stream's scratch: its address, and the lock that keeps every other
/// launch on the stream off it until this one is enqueued (a later use is then ordered after it).
pub struct ScratchHold<'g> {
    _lock: MutexGuard<'g, HashMap<usize, CudaSlice<u8>>>,
    address: u64,
}

impl ScratchHold<'_> {
    /// The scratch's device address, 256-byte aligned.
    pub fn address(&self) -> u64 {
        self.address
    }
}

impl Gpu {
    /// At least `bytes` of `scratch` for the launch stream. Before a stream's scratch grows, the
    /// stream is waited for (a launch may still use the old one); during a CUDA graph capture it
    /// cannot grow, and `what` (the launch that needs it) is named in the error.
    pub(crate) fn hold_scratch<'g>(
        &self,
        scratch: &'g StreamScratch,
        bytes: u64,
        what: &str,
    ) -> Result<ScratchHold<'g>> {
        let mut streams = scratch.0.lock().unwrap_or_else(PoisonError::into_inner);
        let key = self.launch_stream() as usize;
        if streams.get(&key).is_none_or(|s| (s.len() as u64) < bytes) {
            if self.capturing()? {
                // Allocating, and waiting for the stream, are what a capture forbids.
                return Err(Error::InvalidInput {
                    what: "a launch during a CUDA graph capture".into(),
                    reason: format!(
                        "{what} needs {bytes} bytes of scratch, more than this stream has yet; call the operation once on arrays of the same shapes before capturing"
                    ),
                });
            }
            if streams.remove(&key).is_some() {
                self.synchronize_launch_stream()?;
            }
            // SAFETY: bytes; the launches that use the scratch write what they read of it.
            let buffer = unsafe { self.stream.alloc::<u8>(bytes as usize) }
                .doing(|| format!("allocating {bytes} bytes of scratch for {what}"))?;
            if self.external.is_some() {
                // Allocated on the GPU's own stream: done before the external stream uses it.
                self.synchronize()?;
            }
            streams.insert(key, buffer);
        }
        let address = {
            let (address, _guard) = streams[&key].device_ptr(&self.stream);
            address
        };
        Ok(ScratchHold {
            _lock: streams,
            address,
        })
    }

    /// Waits for the stream launches go to.
    fn synchronize_launch_stream(&self) -> Result<()> {
        // SAFETY: the stream is this GPU's or the live external one.
        unsafe { sys::cuStreamSynchronize(self.launch_stream()) }
            .result()
            .doing(|| "waiting for the stream before its scratch grows".into())
    }
}

/// f32 partial sums for one launch on a [`Backend`]: the GPU's per stream, or on the emulator a
/// buffer of its own, kept until this value is dropped. Their contents are whatever an earlier
/// launch left: a launch writes each sum before it reads it. Null where none were asked for.
pub struct PartialSums<'b> {
    address: *mut f32,
    _hold: Option<ScratchHold<'b>>,
    _emulated: Vec<f32>,
}

impl PartialSums<'_> {
    /// The sums' address on the backend they were made for (null where there are none).
    pub fn as_ptr(&self) -> *mut f32 {
        self.address
    }
}

impl Backend {
    /// At least `len` f32 of partial sums for one launch (none where `len` is 0), held until the
    /// value is dropped: drop it once the launch is enqueued.
    pub fn partial_sums(&self, len: usize) -> Result<PartialSums<'_>> {
        let mut sums = PartialSums {
            address: std::ptr::null_mut(),
            _hold: None,
            _emulated: Vec::new(),
        };
        match self {
            _ if len == 0 => {}
            Backend::Gpu(gpu) => {
                let hold = gpu.hold_scratch(&gpu.partials, 4 * len as u64, "the partial sums of a product")?;
                sums.address = hold.address() as *mut f32;
                sums._hold = Some(hold);
            }
            Backend::Emu => {
                sums._emulated = vec![f32::NAN; len];
                sums.address = sums._emulated.as_mut_ptr();
            }
        }
        Ok(sums)
    }
}
