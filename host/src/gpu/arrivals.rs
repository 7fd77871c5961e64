//! Split-k's arrival counters (`kernels::matmul::split_k`): a zeroed u32 per tile of C, which every
//! split launch leaves at zero again. One buffer per stream the GPU launches on, so launches that
//! may run at once (on different streams) never share a counter; made at a stream's first split
//! launch and kept while the GPU is open. (A handle a destroyed stream leaves behind and a new one
//! takes finds the counters at zero: every launch leaves them so.)

use super::Gpu;
use crate::error::{HostError, Result};
use cudarc::driver::{CudaSlice, DevicePtr};
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::{Mutex, PoisonError};

/// The counters of each stream, by its handle; shared with the GPU's external-stream views.
#[derive(Default)]
pub(super) struct Arrivals(Mutex<HashMap<usize, CudaSlice<u32>>>);

impl Gpu {
    /// Counters one split launch may use at most: as many as blocks the device can hold at once
    /// (a block of one warp per warp slot). A launch splits k only where one wave of its blocks
    /// covers every tile at least twice, so it never needs more.
    fn arrivals_capacity(&self) -> usize {
        self.info.sm_count as usize * (self.info.max_threads_per_sm as usize / 32)
    }

    /// The device address of at least `len` zeroed split-k counters for launches on this GPU's
    /// launch stream (its own, or the external one it was made for).
    pub fn split_arrivals(&self, len: usize) -> Result<u64> {
        let capacity = self.arrivals_capacity();
        if len > capacity {
            return Err(HostError::InvalidInput {
                what: "split-k".into(),
                reason: format!(
                    "a launch splitting k over {len} tiles of C, more than the {capacity} blocks this GPU holds at once: k is split only where one wave covers every tile twice (set the problem's places with problem_for)"
                ),
            });
        }
        let mut streams = self.arrivals.0.lock().unwrap_or_else(PoisonError::into_inner);
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
