//! Launch geometry shared by the GPU host code, the emulator and the PTX builder, and CUDA's limits
//! on it.

/// A CUDA `dim3`: a grid or block extent, or a thread or block index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

impl Dim3 {
    #[inline]
    pub const fn new(x: u32, y: u32, z: u32) -> Self {
        Dim3 { x, y, z }
    }

    #[inline]
    pub const fn x(x: u32) -> Self {
        Dim3 { x, y: 1, z: 1 }
    }

    #[inline]
    pub const fn xy(x: u32, y: u32) -> Self {
        Dim3 { x, y, z: 1 }
    }

    /// Number of elements (threads in a block, blocks in a grid), widened so it cannot overflow.
    #[inline]
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

/// Threads per warp on every NVIDIA GPU so far.
pub const WARP_SIZE: u32 = 32;

/// Most threads in one block (every CUDA GPU since compute capability 2.0).
pub const MAX_THREADS_PER_BLOCK: u64 = 1024;
/// Largest `blockDim.z`.
pub const MAX_BLOCK_DIM_Z: u32 = 64;
/// Largest `gridDim.x`.
pub const MAX_GRID_DIM_X: u32 = i32::MAX as u32;
/// Largest `gridDim.y` and `gridDim.z`.
pub const MAX_GRID_DIM_YZ: u32 = 65_535;
/// Dynamic shared memory a block may use without opting in (every GPU since compute capability 2.0).
pub const DEFAULT_SHARED_BYTES_PER_BLOCK: u32 = 48 * 1024;
/// Most dynamic shared memory one block may opt in to: compute capability 9.0's maximum. The host
/// also checks the device's own limit before launching.
pub const MAX_SHARED_BYTES_PER_BLOCK: u32 = 227 * 1024;

#[cfg(not(target_arch = "nvptx64"))]
impl LaunchShape {
    /// Whether CUDA can launch this shape at all; the reason, naming the value, where it cannot.
    pub fn check(&self) -> Result<(), String> {
        let LaunchShape {
            grid,
            block,
            shared_bytes,
        } = *self;
        if block.volume() == 0 || grid.volume() == 0 {
            return Err(format!("grid {grid} and block {block} must have no zero extent"));
        }
        if block.volume() > MAX_THREADS_PER_BLOCK {
            return Err(format!(
                "block {block} has {} threads; at most {MAX_THREADS_PER_BLOCK} are allowed",
                block.volume()
            ));
        }
        if block.z > MAX_BLOCK_DIM_Z {
            return Err(format!("block {block}: blockDim.z is at most {MAX_BLOCK_DIM_Z}"));
        }
        if grid.x > MAX_GRID_DIM_X || grid.y > MAX_GRID_DIM_YZ || grid.z > MAX_GRID_DIM_YZ {
            return Err(format!(
                "grid {grid} is too large: gridDim.x is at most {MAX_GRID_DIM_X} and gridDim.y and .z at most {MAX_GRID_DIM_YZ}"
            ));
        }
        if shared_bytes > MAX_SHARED_BYTES_PER_BLOCK {
            return Err(format!(
                "{shared_bytes} bytes of shared memory per block; at most {MAX_SHARED_BYTES_PER_BLOCK} are allowed"
            ));
        }
        Ok(())
    }
}
