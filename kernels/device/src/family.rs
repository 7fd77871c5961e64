//! What the registry holds: kernels grouped into families by the problem they solve.
//!
//! * [`KernelFn`]: what [`kernel!`](crate::kernel) makes of a kernel function: its PTX entry name,
//!   its parameter list as a type, and (on the host) its emulator form.
//! * [`Problem`]: what a family of kernels computes, with the parameter list all of them take.
//! * [`Kernel`]: one registered kernel: its code, block shape, shared memory and how its grid follows
//!   from the problem. Each kernel module declares one (`pub const KERNEL`).
//! * [`Family`]: the kernels that solve one problem, in order (the ladder a reader follows).
//!
//! Every value here is a `const`, and the limits CUDA puts on a launch are checked when the family
//! is built, at compile time.

use crate::launch::{DEFAULT_SHARED_BYTES_PER_BLOCK, Dim3, LaunchShape, MAX_BLOCK_DIM_Z, MAX_SHARED_BYTES_PER_BLOCK};
use crate::params::Params;

/// A kernel function as [`kernel!`](crate::kernel) defines it: the PTX entry `entry` of the kernel
/// crate `krate`, taking the parameters `A`, with its launch bounds; on the host, also the same
/// body on the emulator.
pub struct KernelFn<A> {
    krate: &'static str,
    entry: &'static str,
    bounds: LaunchBounds,
    /// Made by [`kernel_sm90a!`](crate::kernel_sm90a): runs only from the sm_90a PTX.
    sm90a_only: bool,
    #[cfg(not(target_arch = "nvptx64"))]
    emulate: unsafe fn(&LaunchShape, A) -> Result<(), crate::emu::EmuError>,
    #[cfg(target_arch = "nvptx64")]
    _args: core::marker::PhantomData<fn() -> A>,
}

impl<A> Clone for KernelFn<A> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<A> Copy for KernelFn<A> {}

impl<A> KernelFn<A> {
    /// Made by `kernel!`: `entry` is the function's own name, `krate` the crate it is written in.
    #[doc(hidden)]
    #[cfg(not(target_arch = "nvptx64"))]
    pub const fn new(
        krate: &'static str,
        entry: &'static str,
        bounds: LaunchBounds,
        emulate: unsafe fn(&LaunchShape, A) -> Result<(), crate::emu::EmuError>,
    ) -> Self {
        KernelFn {
            krate,
            entry,
            bounds,
            sm90a_only: false,
            emulate,
        }
    }

    #[doc(hidden)]
    #[cfg(target_arch = "nvptx64")]
    pub const fn new(krate: &'static str, entry: &'static str, bounds: LaunchBounds) -> Self {
        KernelFn {
            krate,
            entry,
            bounds,
            sm90a_only: false,
            _args: core::marker::PhantomData,
        }
    }

    /// Made by `kernel_sm90a!`: as [`KernelFn::new`], marked as needing the sm_90a PTX.
    #[doc(hidden)]
    pub const fn sm90a(self) -> Self {
        KernelFn {
            sm90a_only: true,
            ..self
        }
    }

    /// Whether only the sm_90a PTX (Hopper's architecture-specific instructions: `wgmma`) runs
    /// it: the other PTX modules hold a stub that traps, and the emulator does not run it.
    pub const fn sm90a_only(&self) -> bool {
        self.sm90a_only
    }

    /// The `.entry` name in the PTX: the kernel function's name.
    pub const fn entry(&self) -> &'static str {
        self.entry
    }

    /// The crate the kernel is written in (as Rust names it, `stencil_kernels`): the runtime
    /// launches it from that crate's PTX, whatever other modules define an entry of its name.
    pub const fn krate(&self) -> &'static str {
        self.krate
    }

    /// Its `#[launch_bounds(..)]`, or [`LaunchBounds::NONE`].
    pub const fn bounds(&self) -> LaunchBounds {
        self.bounds
    }

    /// Runs the kernel on the CPU emulator over `shape`'s grid.
    ///
    /// # Safety
    /// As for a GPU launch: the pointers in `args` are valid for every element the launch touches,
    /// for the whole launch, and threads do not race on what they write.
    #[cfg(not(target_arch = "nvptx64"))]
    pub unsafe fn emulate(&self, shape: &LaunchShape, args: A) -> Result<(), crate::emu::EmuError> {
        // SAFETY: forwarded from this function's contract.
        unsafe { (self.emulate)(shape, args) }
    }
}

/// What a family of kernels computes: the problem's sizes (the implementing type), and the
/// parameter list every kernel of the family takes.
pub trait Problem: Copy + 'static {
    /// The kernels' parameters, in order: pointers first, then sizes, as the kernels declare them.
    type Args: Params;
}

/// Dynamic shared memory per block. Sizes above the 48 KiB every GPU gives by default must be asked
/// for with [`SharedMemory::opt_in`], so that a kernel never needs it by accident.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedMemory {
    bytes: u32,
}

impl SharedMemory {
    pub const NONE: SharedMemory = SharedMemory { bytes: 0 };

    /// `bytes` of dynamic shared memory, at most 48 KiB (checked at compile time).
    pub const fn of(bytes: u32) -> Self {
        assert!(
            bytes <= DEFAULT_SHARED_BYTES_PER_BLOCK,
            "more than 48 KiB of shared memory per block: use SharedMemory::opt_in"
        );
        SharedMemory { bytes }
    }

    /// More than 48 KiB, up to compute capability 9.0's 227 KiB: the host raises the kernel's limit
    /// before launching, and refuses devices that allow less.
    pub const fn opt_in(bytes: u32) -> Self {
        assert!(
            bytes <= MAX_SHARED_BYTES_PER_BLOCK,
            "more shared memory per block than any GPU allows (227 KiB)"
        );
        SharedMemory { bytes }
    }

    pub const fn bytes(self) -> u32 {
        self.bytes
    }
}

/// One registered kernel: everything a launch of it needs besides its arguments.
pub struct Kernel<P: Problem> {
    /// The function, as `kernel!` made it.
    pub code: KernelFn<P::Args>,
    /// Threads per block.
    pub block: Dim3,
    /// Dynamic shared memory per block: the `BYTES` of the kernel's
    /// [`shared_memory!`](crate::shared_memory) layout, so that launch and kernel cannot disagree.
    pub shared: SharedMemory,
    /// Blocks for a problem on the device it launches on: most kernels read only the problem; a
    /// persistent or split kernel sizes its grid by the [`Occupancy`] the launch measures.
    pub grid: fn(&P, Occupancy) -> Dim3,
}

/// What a launch knows of the device for the kernel it launches, for grids that depend on it (a
/// persistent grid of every resident block, a split that fills one wave): measured by the runtime
/// when it launches, so no caller fills it in. A grid that reads it gives at least as many blocks
/// for more resident blocks; the runtime measures it only where the grid at [`Occupancy::ONE`]
/// and at [`Occupancy::UNLIMITED`] differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Occupancy {
    /// Blocks of this kernel the device holds at once: SMs × the blocks one SM holds at the
    /// kernel's registers, shared memory and threads. At least 1.
    pub resident_blocks: u32,
}

impl Occupancy {
    /// The emulator's: enough blocks for several to run at once and for each persistent block to
    /// take several tiles.
    pub const EMULATOR: Occupancy = Occupancy { resident_blocks: 8 };

    /// A device that holds every block at once: a persistent grid has a block per tile. For
    /// counting tiles, and for grids that do not depend on the device.
    pub const UNLIMITED: Occupancy = Occupancy {
        resident_blocks: u32::MAX,
    };

    /// One resident block: a device-dependent grid at its smallest (one persistent block, k not
    /// split). For checks of a problem's extents before any device is known.
    pub const ONE: Occupancy = Occupancy { resident_blocks: 1 };

    /// The grid of a kernel whose blocks go round over `wanted` items: a block per item, at most
    /// the blocks the device holds at once.
    pub const fn at_most_resident(self, wanted: u32) -> u32 {
        if wanted < self.resident_blocks {
            wanted
        } else {
            self.resident_blocks
        }
    }
}

/// The most blocks a cluster holds on every GPU that has clusters (sm_90).
pub const MAX_PORTABLE_CLUSTER: u32 = 8;

/// CUDA's `__launch_bounds__` of a kernel (`#[launch_bounds(block, blocks_per_sm)]` in
/// [`kernel!`](crate::kernel)): the block it is launched with, and how many of them ptxas must fit
/// on one SM, capping registers to get there.
///
/// `#[launch_bounds(block, blocks_per_sm, cluster = n)]` also launches the blocks in clusters of
/// `n` along x (CUDA's `__cluster_dims__(n, 1, 1)`), whose shared memory and barriers each other's
/// threads reach (`ptxkit::device::cluster`, sm_90a): the grid's x a multiple of `n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchBounds {
    block: Dim3,
    min_blocks_per_sm: u32,
    cluster: u32,
}

impl LaunchBounds {
    /// No bound: ptxas chooses the registers.
    pub const NONE: LaunchBounds = LaunchBounds {
        block: Dim3::new(0, 0, 0),
        min_blocks_per_sm: 0,
        cluster: 1,
    };

    /// At least `blocks_per_sm` resident blocks of `block` threads per SM.
    pub const fn new(block: Dim3, blocks_per_sm: u32) -> Self {
        assert!(blocks_per_sm >= 1, "launch bounds: at least one block per SM");
        assert!(
            block.x >= 1 && block.y >= 1 && block.z >= 1,
            "launch bounds: a block extent is zero"
        );
        assert!(
            block.volume() <= crate::launch::MAX_THREADS_PER_BLOCK,
            "launch bounds: more than 1024 threads per block"
        );
        LaunchBounds {
            block,
            min_blocks_per_sm: blocks_per_sm,
            cluster: 1,
        }
    }

    /// These bounds, the blocks launched in clusters of `ctas` along x.
    pub const fn clustered(self, ctas: u32) -> Self {
        assert!(
            ctas >= 1 && ctas <= MAX_PORTABLE_CLUSTER,
            "launch bounds: a cluster of 1 to 8 blocks"
        );
        LaunchBounds { cluster: ctas, ..self }
    }

    /// Blocks per cluster along x: 1 for a kernel launched without clusters.
    pub const fn cluster(self) -> u32 {
        self.cluster
    }

    /// The blocks per SM, if bounded.
    pub const fn blocks(self) -> Option<u32> {
        if self.min_blocks_per_sm == 0 {
            None
        } else {
            Some(self.min_blocks_per_sm)
        }
    }

    /// The block the kernel is bounded to, if bounded.
    pub const fn block(self) -> Option<Dim3> {
        if self.min_blocks_per_sm == 0 {
            None
        } else {
            Some(self.block)
        }
    }

    /// The record `kernel!` leaves in the PTX for the builder: block x, y, z, blocks per SM,
    /// blocks per cluster.
    #[doc(hidden)]
    pub const fn record(self) -> [u32; 5] {
        [
            self.block.x,
            self.block.y,
            self.block.z,
            self.min_blocks_per_sm,
            self.cluster,
        ]
    }
}

impl<P: Problem> Kernel<P> {
    pub const fn entry(&self) -> &'static str {
        self.code.entry()
    }

    /// Grid, block and shared bytes for `problem` on a device where `occupancy` holds (the
    /// runtime's `Backend::launch_shape` measures it).
    pub fn launch_shape(&self, problem: &P, occupancy: Occupancy) -> LaunchShape {
        LaunchShape {
            grid: (self.grid)(problem, occupancy),
            block: self.block,
            shared_bytes: self.shared.bytes(),
        }
    }

    /// Whether `problem`'s grid depends on the device: whether it differs between
    /// [`Occupancy::ONE`] and [`Occupancy::UNLIMITED`]. Only then does a launch measure the
    /// occupancy (most grids cost no query).
    pub fn grid_reads_device(&self, problem: &P) -> bool {
        (self.grid)(problem, Occupancy::ONE) != (self.grid)(problem, Occupancy::UNLIMITED)
    }

    /// Runs the kernel on the CPU emulator for `problem`, over the grid it has there
    /// ([`Occupancy::EMULATOR`]).
    ///
    /// # Safety
    /// As for [`KernelFn::emulate`]: the pointers in `args` are valid for every element the launch
    /// touches, and threads do not race on what they write.
    #[cfg(not(target_arch = "nvptx64"))]
    pub unsafe fn emulate(&self, problem: &P, args: P::Args) -> Result<(), crate::emu::EmuError> {
        // SAFETY: forwarded from this function's contract.
        unsafe {
            self.code
                .emulate(&self.launch_shape(problem, Occupancy::EMULATOR), args)
        }
    }

    /// What the PTX checks, `host info` and the emulator's reports need to know of it.
    pub const fn info(&self, family: &'static str) -> KernelInfo {
        KernelInfo {
            krate: self.code.krate(),
            entry: self.entry(),
            family,
            block: self.block,
            shared_bytes: self.shared.bytes(),
            min_blocks_per_sm: self.code.bounds().blocks(),
            sm90a_only: self.code.sm90a_only(),
        }
    }

    /// CUDA's limits on the block, checked at compile time by [`Family::new`].
    const fn check_block(&self) {
        let b = self.block;
        assert!(b.x >= 1 && b.y >= 1 && b.z >= 1, "a block extent is zero");
        assert!(
            b.volume() <= crate::launch::MAX_THREADS_PER_BLOCK,
            "more than 1024 threads per block"
        );
        assert!(b.z <= MAX_BLOCK_DIM_Z, "blockDim.z above 64");
        if let Some(bounded) = self.code.bounds().block() {
            assert!(
                bounded.x == b.x && bounded.y == b.y && bounded.z == b.z,
                "the Kernel's block differs from the block in its kernel's #[launch_bounds]"
            );
        }
    }
}

/// The kernels that solve one problem: the variants a reader compares, in ladder order.
pub struct Family<P: Problem> {
    /// The family's name: `host <name>` runs it, reports group by it.
    pub name: &'static str,
    pub kernels: &'static [Kernel<P>],
}

impl<P: Problem> Family<P> {
    /// Checks every kernel's block against CUDA's limits; used in a `const`, so at compile time.
    pub const fn new(name: &'static str, kernels: &'static [Kernel<P>]) -> Self {
        assert!(!kernels.is_empty(), "a family needs at least one kernel");
        let mut i = 0;
        while i < kernels.len() {
            kernels[i].check_block();
            i += 1;
        }
        Family { name, kernels }
    }
}

/// A kernel as the PTX checks, `host info` and reports see it, whatever its problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelInfo {
    /// The crate it is written in ([`KernelFn::krate`]).
    pub krate: &'static str,
    /// The `.entry` name in the PTX.
    pub entry: &'static str,
    /// The family it belongs to.
    pub family: &'static str,
    pub block: Dim3,
    /// Dynamic shared memory per block (all of a kernel's shared memory is dynamic).
    pub shared_bytes: u32,
    /// Its launch bound, where it has one.
    pub min_blocks_per_sm: Option<u32>,
    /// Runs only from the sm_90a PTX ([`KernelFn::sm90a_only`]).
    pub sm90a_only: bool,
}

/// A family seen without its problem type, so that the registry can list families of all problems.
#[cfg(not(target_arch = "nvptx64"))]
pub trait AnyFamily: Sync {
    fn name(&self) -> &'static str;
    fn kernel_infos(&self) -> Vec<KernelInfo>;
}

#[cfg(not(target_arch = "nvptx64"))]
impl<P: Problem> AnyFamily for Family<P> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn kernel_infos(&self) -> Vec<KernelInfo> {
        self.kernels.iter().map(|k| k.info(self.name)).collect()
    }
}

/// A problem size no kernel of the family can run: zero, or beyond the kernels' 32-bit indices.
#[cfg(not(target_arch = "nvptx64"))]
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid {problem} size: {reason}")]
pub struct InvalidSize {
    pub problem: &'static str,
    pub reason: String,
}
