//! Device memory of one GPU used from another: kernels reading it in place over the link
//! ([`PeerView`]), and copies between GPUs ([`copy_between`]). Each orders the two GPUs' streams both
//! ways, so that no GPU reads memory another has not finished writing, and no GPU writes or frees
//! memory another may still be reading.

use crate::array::{Array, Element, Tracked};
use crate::backend::Backend;
use crate::devices::{can_access_peer, enable_peer_access};
use crate::error::{Doing, Error, Result};
use crate::gpu::Gpu;
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};

/// `owner`'s device memory as an array for kernels on `reader`, read in place over the link
/// (NVLink or PCIe) without a copy. Made after the owner's pending work on it; while it lives, the
/// owner's later work waits for the reader's (it joins back when dropped).
pub struct PeerView<'a, T> {
    slice: &'a CudaSlice<T>,
    owner: &'a Gpu,
    reader: &'a Gpu,
}

impl<'a, T> PeerView<'a, T> {
    /// `slice`, device memory of `owner`, for kernels on `reader`: an error where the driver gives
    /// no peer access between the two (then copy it with [`copy_between`]).
    pub fn new(owner: &'a Gpu, slice: &'a CudaSlice<T>, reader: &'a Gpu) -> Result<Self> {
        if slice.context().cu_ctx() != owner.context().cu_ctx() {
            return Err(Error::WrongMemory {
                reason: format!("the slice is not device memory of device {}", owner.info().ordinal),
            });
        }
        if !reader.same_device(owner) {
            if !can_access_peer(reader, owner)? {
                return Err(Error::WrongMemory {
                    reason: format!(
                        "device {} cannot address device {}'s memory (no peer access between them): copy it instead",
                        reader.info().ordinal,
                        owner.info().ordinal
                    ),
                });
            }
            enable_peer_access(reader, owner)?;
        }
        reader
            .stream()
            .join(owner.stream())
            .doing(|| "ordering the reader after the owner".into())?;
        Ok(PeerView { slice, owner, reader })
    }
}

impl<T> Drop for PeerView<'_, T> {
    fn drop(&mut self) {
        // The owner's later writes (and the free) must wait for the reader's kernels. Where the
        // driver refuses the cross-stream wait, wait on the host instead.
        if self.owner.stream().join(self.reader.stream()).is_err() {
            let _ = self.reader.synchronize();
        }
    }
}

impl<T> Tracked for PeerView<'_, T> {}

// SAFETY: device memory of `len` elements, owned by the borrowed slice for 'a; reachable from the
// reader (peer access enabled, or the same device); the reader's stream waits for the owner's
// earlier work, and the owner's later work waits for the reader's (Drop). Launches on the reader's
// own stream only.
unsafe impl<T: Element> Array<T> for PeerView<'_, T> {
    fn len(&self) -> usize {
        self.slice.len()
    }

    fn address(&self, backend: &Backend) -> Result<u64> {
        match backend {
            Backend::Gpu(gpu)
                if gpu.external_stream().is_none()
                    && gpu.context().cu_ctx() == self.reader.context().cu_ctx()
                    && gpu.stream().cu_stream() == self.reader.stream().cu_stream() =>
            {
                let (address, _guard) = self.slice.device_ptr(self.slice.stream());
                Ok(address)
            }
            _ => Err(Error::WrongMemory {
                reason: format!(
                    "this peer view is for kernels on device {}'s own stream only",
                    self.reader.info().ordinal
                ),
            }),
        }
    }
}

/// Which GPU's copy engines run a copy between two GPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyBy {
    /// The source GPU pushes.
    Source,
    /// The destination GPU pulls.
    Destination,
}

/// Copies `len` elements from `src[src_at..]` on `from` to `dst[dst_at..]` on `to`, on the stream of
/// the GPU `by` names (asynchronous). Both GPUs' streams are ordered around it: the copy starts
/// after each one's earlier work, and each one's later work starts after the copy.
#[allow(clippy::too_many_arguments)]
pub fn copy_between<T: Element>(
    from: &Gpu,
    src: &CudaSlice<T>,
    src_at: usize,
    to: &Gpu,
    dst: &mut CudaSlice<T>,
    dst_at: usize,
    len: usize,
    by: CopyBy,
) -> Result<()> {
    check_copy(from, src, src_at, to, dst, dst_at, len)?;
    let (runner, other) = match by {
        CopyBy::Source => (from, to),
        CopyBy::Destination => (to, from),
    };
    join(runner, other)?;
    // SAFETY: checked above; both GPUs' earlier work is ordered before the copy (the join), later
    // work after it (below).
    unsafe { enqueue(from, src, src_at, to, dst, dst_at, len, runner)? };
    join(other, runner)
}

/// Both GPUs send at once: `a_src` (on `a`) into `b_dst` (on `b`), pushed by `a`, while `b_src`
/// into `a_dst`, pushed by `b`; whole arrays of one length. Ordered as [`copy_between`] is, with
/// the two copies free to overlap.
pub fn exchange<T: Element>(
    a: &Gpu,
    a_src: &CudaSlice<T>,
    a_dst: &mut CudaSlice<T>,
    b: &Gpu,
    b_src: &CudaSlice<T>,
    b_dst: &mut CudaSlice<T>,
) -> Result<()> {
    let len = a_src.len();
    check_copy(a, a_src, 0, b, b_dst, 0, len)?;
    check_copy(b, b_src, 0, a, a_dst, 0, len)?;
    join(a, b)?;
    join(b, a)?;
    // SAFETY: checked above; each GPU's earlier work is ordered before both copies (the joins),
    // later work after both (below).
    unsafe {
        enqueue(a, a_src, 0, b, b_dst, 0, len, a)?;
        enqueue(b, b_src, 0, a, a_dst, 0, len, b)?;
    }
    join(a, b)?;
    join(b, a)
}

/// `waiter`'s later work waits for everything queued on `other` so far.
fn join(waiter: &Gpu, other: &Gpu) -> Result<()> {
    waiter
        .stream()
        .join(other.stream())
        .doing(|| "ordering one GPU's stream after another's".into())
}

/// Both ranges inside their arrays, each array on the GPU named for it.
fn check_copy<T>(
    from: &Gpu,
    src: &CudaSlice<T>,
    src_at: usize,
    to: &Gpu,
    dst: &CudaSlice<T>,
    dst_at: usize,
    len: usize,
) -> Result<()> {
    let inside = |at: usize, have: usize| at.checked_add(len).is_some_and(|end| end <= have);
    if !inside(src_at, src.len()) || !inside(dst_at, dst.len()) {
        return Err(Error::InvalidInput {
            what: "a copy between GPUs".into(),
            reason: format!(
                "{len} elements from {src_at} of {} into {dst_at} of {}: out of range",
                src.len(),
                dst.len()
            ),
        });
    }
    if src.context().cu_ctx() != from.context().cu_ctx() || dst.context().cu_ctx() != to.context().cu_ctx() {
        return Err(Error::WrongMemory {
            reason: "a copy between GPUs needs each array on the GPU named for it".into(),
        });
    }
    Ok(())
}

/// Queues the copy on `runner`'s stream.
///
/// # Safety
/// The ranges passed [`check_copy`], and the caller orders both GPUs' other work on the two
/// arrays around the copy.
#[allow(clippy::too_many_arguments)]
unsafe fn enqueue<T: Element>(
    from: &Gpu,
    src: &CudaSlice<T>,
    src_at: usize,
    to: &Gpu,
    dst: &mut CudaSlice<T>,
    dst_at: usize,
    len: usize,
    runner: &Gpu,
) -> Result<()> {
    let bytes = len * size_of::<T>();
    let (src_ptr, _s) = src.device_ptr(src.stream());
    let dst_stream = dst.stream().clone();
    let (dst_ptr, _d) = dst.device_ptr_mut(&dst_stream);
    // SAFETY: the caller's contract.
    unsafe {
        cudarc::driver::sys::cuMemcpyPeerAsync(
            dst_ptr + (dst_at * size_of::<T>()) as u64,
            to.context().cu_ctx(),
            src_ptr + (src_at * size_of::<T>()) as u64,
            from.context().cu_ctx(),
            bytes,
            runner.stream().cu_stream(),
        )
    }
    .result()
    .doing(|| {
        format!(
            "copying {bytes} bytes from device {} to device {}",
            from.info().ordinal,
            to.info().ordinal
        )
    })
}
