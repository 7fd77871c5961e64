//! Zeroed u32 counters for kernels that count the blocks arriving somewhere (a last-block
//! reduction, the library's split-k: one counter per tile of C) and leave them at zero again.
//! One buffer per stream the GPU launches on, so launches that may run at once (on different
//! streams) never share a counter; made at a stream's first use and kept while the GPU is open.
//! (A handle a destroyed stream leaves behind and a new one takes finds the counters at zero:
//! every launch leaves them so.)

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use cudarc::driver::{CudaSlice, DevicePtr};
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::{Mutex, PoisonError};

/// The counters of each stream, by its handle; shared with the GPU's external-stream views.
#[derive(Default)]
pub(crate) struct Counters(Mutex<HashMap<usize, CudaSlice<u32>>>);

impl Gpu {
    /// Counters one launch may use at most: as many as blocks the device can hold at once (a
    /// block of one warp per warp slot).
    pub fn counters_capacity(&self) -> usize {
        self.info.sm_count as usize * (self.info.max_threads_per_sm as usize / 32)
    }

    /// The device address of at least `len` zeroed u32 counters for launches on this GPU's launch
    /// stream (its own, or the external one it was made for), which each launch must leave at
    /// zero. At most [`Gpu::counters_capacity`].
    pub fn zeroed_counters(&self, len: usize) -> Result<u64> {
        let capacity = self.counters_capacity();
        if len > capacity {
            return Err(Error::InvalidInput {
                what: "zeroed counters".into(),
                reason: format!(
                    "{len} counters for one launch, more than the {capacity} blocks this GPU holds at once"
                ),
            });
        }
        let mut streams = self.counters.0.lock().unwrap_or_else(PoisonError::into_inner);
        let counters = match streams.entry(self.launch_stream() as usize) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => {
                let counters = self.zeros::<u32>(capacity)?;
                if self.external.is_some() {
                    // Zeroed on the GPU's own stream: done before the external stream's launch uses them.
                    self.synchronize()?;
                }
                entry.insert(counters)
            }
        };
        let (address, _guard) = counters.device_ptr(&self.stream);
        Ok(address)
    }
}

/// Zeroed u32 counters for one launch on a [`Backend`], which the launch leaves at zero: the GPU's
/// per stream ([`Gpu::zeroed_counters`]), or on the emulator a buffer of its own, kept until this
/// value is dropped (the emulator's launch has finished when it returns). None where `len` is 0.
pub struct ZeroedCounters {
    address: *mut u32,
    _emulated: Vec<u32>,
}

impl ZeroedCounters {
    /// The counters' address on the backend they were made for (null where there are none).
    pub fn as_ptr(&self) -> *mut u32 {
        self.address
    }
}

impl Backend {
    /// `len` zeroed u32 counters for the next launch here (at most [`Gpu::counters_capacity`] on
    /// a GPU), which that launch must leave at zero.
    pub fn zeroed_counters(&self, len: usize) -> Result<ZeroedCounters> {
        let mut emulated = Vec::new();
        let address = match self {
            _ if len == 0 => std::ptr::null_mut(),
            Backend::Gpu(gpu) => gpu.zeroed_counters(len)? as *mut u32,
            Backend::Emu => {
                emulated.resize(len, 0u32);
                emulated.as_mut_ptr()
            }
        };
        Ok(ZeroedCounters {
            address,
            _emulated: emulated,
        })
    }
}
