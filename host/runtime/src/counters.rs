//! Zeroed u32 counters for kernels that count the blocks arriving somewhere (a last-block
//! reduction, the library's split-k: one counter per tile of C) and leave them at zero again.
//! One buffer per stream the GPU launches on, so launches that may run at once (on different
//! streams) never share a counter; made at a stream's first use and kept while the GPU is open.
//! (A handle a destroyed stream leaves behind and a new one takes finds the counters at zero:
//! every launch leaves them so.)

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
