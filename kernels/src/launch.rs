//! Launch geometry shared by the GPU host code, the emulator and the PTX builder.

/// A CUDA `dim3`: a grid or block extent, or a thread or block index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

impl Dim3 {
    pub const fn new(x: u32, y: u32, z: u32) -> Self {
        Dim3 { x, y, z }
    }

    pub const fn x(x: u32) -> Self {
        Dim3 { x, y: 1, z: 1 }
    }

    pub const fn xy(x: u32, y: u32) -> Self {
        Dim3 { x, y, z: 1 }
    }

    /// Number of elements (threads in a block, blocks in a grid), widened so it cannot overflow.
    pub const fn volume(self) -> u64 {
        self.x as u64 * self.y as u64 * self.z as u64
    }
}

// Host-only: on nvptx64 it would pull core::fmt into the PTX, which has no definition of it there.
#[cfg(not(target_arch = "nvptx64"))]
impl core::fmt::Display for Dim3 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "({}, {}, {})", self.x, self.y, self.z)
    }
}

/// Everything a launch needs besides the arguments: grid, block and dynamic shared bytes per block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchShape {
    pub grid: Dim3,
    pub block: Dim3,
    pub shared_bytes: u32,
}

/// A kernel entry point as the PTX names it, with its fixed block shape and shared bytes per block.
#[derive(Clone, Copy, Debug)]
pub struct KernelInfo {
    /// The `.entry` name in the PTX.
    pub entry: &'static str,
    pub block: Dim3,
    /// Dynamic shared memory per block (all of a kernel's shared memory is dynamic).
    pub shared_bytes: u32,
}

impl KernelInfo {
    /// The launch of this kernel over `grid` blocks.
    pub const fn over(&self, grid: Dim3) -> LaunchShape {
        LaunchShape {
            grid,
            block: self.block,
            shared_bytes: self.shared_bytes,
        }
    }
}
