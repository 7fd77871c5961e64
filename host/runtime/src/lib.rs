//! Launch Rust kernels from the host: the runtime of the `ptxkit` toolkit.
//!
//! * [`Gpu`]: a context and a stream on one device, and the PTX modules loaded on it. A kernel
//!   crate's PTX, built by `ptxkit-build` and defined here by [`include_kernels!`], loads with
//!   [`Gpu::load`]; its kernels then launch from that crate's module, whatever other module
//!   defines a kernel of the same name.
//! * [`Backend`]: where kernels run, the GPU or the CPU emulator, and the one launch path for both
//!   ([`Backend::launch`]): CUDA's limits checked, the arrays the launch uses tracked.
//! * [`array`](mod@array): what a launch takes as an array: host memory (the emulator), device memory, and
//!   [`ManagedBuffer`] (unified memory, both), each checked to be reachable from the backend.
//! * [`time_gpu`] and [`time_gpu_interleaved`]: CUDA-event timing; [`Nccl`], peer copies and
//!   [`Topology`] for several GPUs.
//!
//! ```no_run
//! use ptxkit_runtime::{Backend, Gpu};
//!
//! // In the crate whose build script ran `ptxkit_build::PtxBuilder::new("../my-kernels").embed()`:
//! // ptxkit_runtime::include_kernels!(my_kernels);
//! # struct MyKernels;
//! # impl ptxkit_runtime::KernelCrate for MyKernels {
//! #     const NAME: &'static str = "my_kernels";
//! #     const PTX: &'static [ptxkit_runtime::Ptx] = &[];
//! # }
//! # fn main() -> ptxkit_runtime::Result<()> {
//! let mut gpu = Gpu::open(None)?; // device 0, or the one $PTXKIT_DEVICE names
//! gpu.load::<MyKernels>()?;
//! let backend = Backend::Gpu(Box::new(gpu)); // or Backend::Emu: the same launches, on the CPU
//! # Ok(())
//! # }
//! ```

pub mod array;
mod backend;
mod counters;
mod devices;
mod error;
mod external;
mod gpu;
mod info;
mod launch;
mod managed;
mod managed_chunk;
mod module;
mod nccl;
mod nvml;
mod padded;
mod peer;
mod scratch;
mod tensor_map;
mod timing;

pub use array::{Array, Buffer, Element, Tracked, check_len};
pub use backend::{Backend, BackendChoice};
pub use counters::ZeroedCounters;
pub use devices::{
    DeviceList, MAX_DEVICES, PeerLink, Topology, TopologyDevice, can_access_peer, enable_peer_access, parse_devices,
};
pub use error::{Doing, Error, Result};
pub use external::{EXTERNAL_ALIGNMENT, ExternalArray, ExternalStream};
pub use gpu::{DEVICE_ENV, Gpu, device_from_env, is_available, named_device};
pub use info::{DeviceInfo, KernelOccupancy};
pub use managed::{ManagedBuffer, MemoryLocation};
pub use managed_chunk::ManagedChunk;
pub use module::{Function, KernelCrate, Module, Ptx};
pub use nccl::{Clique, NCCL_ENV, NVLS_ENV, Nccl};
pub use nvml::Link;
pub use padded::{PaddedCopies, Pitched, TMA_ALIGNMENT};
pub use peer::{CopyBy, PeerView, copy_between, exchange};
pub use scratch::{PartialSums, ScratchHold};
pub use tensor_map::{
    TensorMap, TensorMapCache, bf16_swizzled, bf16_swizzled_pitched, bf16_swizzled_stack, f32_swizzled,
    f32_swizzled_pitched, fp8_swizzled_pitched,
};
pub use timing::{MIN_WARMUP_MS, Timing, time_gpu, time_gpu_interleaved, time_once};
