//! Kernels that run the tensor cores' `mma.sync` once per warp on tiles read from global memory,
//! each lane loading and storing exactly the elements the fragment tables of [`ptxkit::device::mma`]
//! give it: the GPU suite checks those tables against the hardware, the emulator suite the
//! emulator's form of the instruction, both against one f64 reference.
//!
//! Per tile (one warp each): A as 128 words, B as 64 words, C and D as 128 f32 each.
//! * bf16 (m16n8k16): A 16×16 row-major, two bf16 per word (columns 2j and 2j + 1 of a row); B
//!   16×8 stored column by column, two bf16 per word (rows 2j and 2j + 1 of a column).
//! * f16 (m16n8k16): as bf16, two halves per word.
//! * tf32 (m16n8k8): A 16×8 row-major, B 8×8 column by column, one element per word.
//! * C and D: 16×8 f32 row-major.
//!
//! Three more kernels run the bf16 tile through shared memory and `ldmatrix`: A as it is stored, B
//! turned k-major (the layout a GEMM stages B in), both read back into fragments by `ldmatrix`,
//! B by its transposing form, four, two and one matrix per instruction. The same check then covers
//! the six `ldmatrix` forms.

use ptxkit::device::mma::{
    accumulator_position, bf16_a_position, bf16_b_position, mma_bf16_m16n8k16, mma_f16_m16n8k16, mma_tf32_m16n8k8,
    tf32_a_position, tf32_b_position,
};
use ptxkit::device::{
    MatrixLayout, SharedMatrix, WARP_SIZE, block_dim, block_idx, global_store, lane_id, sync_threads, thread_idx,
    unrolled, unrolled_to,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};
use ptxkit::{Family, Problem};

/// Words of A per tile.
pub const A_WORDS: u32 = 128;
/// Words of B per tile.
pub const B_WORDS: u32 = 64;
/// f32 of C (and of D) per tile.
pub const C_LEN: u32 = 128;
/// Two warps per block, a tile each.
pub const BLOCK: u32 = 2 * WARP_SIZE;

/// `blocks` blocks of two warps: `2·blocks` tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmaProbe {
    pub blocks: u32,
}

impl Problem for MmaProbe {
    /// `(a, b, c, d)`.
    type Args = (*const u32, *const u32, *const f32, *mut f32);
}

#[cfg(not(target_arch = "nvptx64"))]
impl MmaProbe {
    /// At least one block, and arrays within the 32-bit index range.
    pub fn new(blocks: usize) -> Result<Self, ptxkit::InvalidSize> {
        let words = (blocks as u64).checked_mul(2 * C_LEN as u64);
        match words {
            Some(words) if blocks >= 1 && words <= u32::MAX as u64 => Ok(MmaProbe { blocks: blocks as u32 }),
            _ => Err(ptxkit::InvalidSize {
                problem: "mma probe",
                reason: format!(
                    "blocks = {blocks}: at least 1, and at most {} (a 32-bit index over the arrays)",
                    u32::MAX / (2 * C_LEN)
                ),
            }),
        }
    }

    pub fn tiles(&self) -> u32 {
        2 * self.blocks
    }
}

/// This warp's tile.
#[inline(always)]
fn tile() -> u32 {
    (block_idx().x * block_dim().x + thread_idx().x) / WARP_SIZE
}

/// Stores this lane's four elements of D.
///
/// # Safety
/// `d` holds the tile's [`C_LEN`] f32.
#[inline(always)]
unsafe fn store_d(d: *mut f32, lane: u32, values: [f32; 4]) {
    unrolled::<4>(|r| {
        let (row, col) = accumulator_position(lane, r);
        // SAFETY: row < 16, col < 8: inside the tile.
        unsafe { global_store(d.add((row * 8 + col) as usize), values[r as usize]) };
    });
}

/// This lane's four elements of C.
///
/// # Safety
/// `c` holds the tile's [`C_LEN`] f32.
#[inline(always)]
unsafe fn load_c(c: *const f32, lane: u32) -> [f32; 4] {
    core::array::from_fn(|r| {
        let (row, col) = accumulator_position(lane, r as u32);
        // SAFETY: inside the tile.
        unsafe { *c.add((row * 8 + col) as usize) }
    })
}

/// Warp w: `D_w = A_w·B_w + C_w` by `mma`, an m16n8k16 on two 16-bit elements per word.
///
/// # Safety
/// The kernel's contract: the arrays hold every launched warp's tile.
#[inline(always)]
unsafe fn probe_m16n8k16(
    (a, b, c, d): (*const u32, *const u32, *const f32, *mut f32),
    mma: fn([u32; 4], [u32; 2], [f32; 4]) -> [f32; 4],
) {
    let (t, lane) = (tile(), lane_id());
    // SAFETY (every access): the caller gives the arrays of every launched warp's tile.
    let (a, b) = unsafe { (a.add((t * A_WORDS) as usize), b.add((t * B_WORDS) as usize)) };
    let fa: [u32; 4] = core::array::from_fn(|r| {
        let (row, col) = bf16_a_position(lane, r as u32, 0);
        unsafe { *a.add((row * 8 + col / 2) as usize) }
    });
    let fb: [u32; 2] = core::array::from_fn(|r| {
        let (k, n) = bf16_b_position(lane, r as u32, 0);
        unsafe { *b.add((n * 8 + k / 2) as usize) }
    });
    let fc = unsafe { load_c(c.add((t * C_LEN) as usize), lane) };
    let fd = mma(fa, fb, fc);
    unsafe { store_d(d.add((t * C_LEN) as usize), lane, fd) };
}

kernel! {
    /// Warp w: `D_w = A_w·B_w + C_w` by `mma.sync.m16n8k16` on bf16.
    pub unsafe fn mma_probe_bf16(a: *const u32, b: *const u32, c: *const f32, d: *mut f32) {
        // SAFETY: the kernel's contract.
        unsafe { probe_m16n8k16((a, b, c, d), mma_bf16_m16n8k16) }
    }
}

kernel! {
    /// Warp w: `D_w = A_w·B_w + C_w` by `mma.sync.m16n8k16` on halves (f16).
    pub unsafe fn mma_probe_f16(a: *const u32, b: *const u32, c: *const f32, d: *mut f32) {
        // SAFETY: the kernel's contract.
        unsafe { probe_m16n8k16((a, b, c, d), mma_f16_m16n8k16) }
    }
}

kernel! {
    /// Warp w: `D_w = A_w·B_w + C_w` by `mma.sync.m16n8k8` on tf32.
    pub unsafe fn mma_probe_tf32(a: *const u32, b: *const u32, c: *const f32, d: *mut f32) {
        let (t, lane) = (tile(), lane_id());
        // SAFETY (every access): the caller gives the arrays of every launched warp's tile.
        let (a, b) = unsafe { (a.add((t * A_WORDS) as usize), b.add((t * B_WORDS) as usize)) };
        let fa: [u32; 4] = core::array::from_fn(|r| {
            let (row, col) = tf32_a_position(lane, r as u32);
            unsafe { *a.add((row * 8 + col) as usize) }
        });
        let fb: [u32; 2] = core::array::from_fn(|r| {
            let (k, n) = tf32_b_position(lane, r as u32);
            unsafe { *b.add((n * 8 + k) as usize) }
        });
        let fc = unsafe { load_c(c.add((t * C_LEN) as usize), lane) };
        let fd = mma_tf32_m16n8k8(fa, fb, fc);
        unsafe { store_d(d.add((t * C_LEN) as usize), lane, fd) };
    }
}

shared_memory! {
    /// Each warp's tile staged for `ldmatrix`: A's 16 rows of 8 words, B's 16 k-rows of 4 words
    /// (two bf16 columns per word), the warps' tiles one below the other.
    pub struct Staged {
        pub a: SharedMatrix<u32> = MatrixLayout::dense(2 * 16, 8),
        pub b: SharedMatrix<u32> = MatrixLayout::dense(2 * 16, 4),
    }
}

/// Warp w: `D_w = A_w·B_w + C_w` by `mma.sync.m16n8k16` on bf16, the fragments read from shared
/// memory by `ldmatrix` `WIDTH` matrices at a time (A) and by `ldmatrix.trans` (B, staged k-major:
/// two x1 loads, one x2, or one x4 of which two registers are used).
///
/// # Safety
/// The kernel's contract: the arrays hold every launched warp's tile.
#[inline(always)]
unsafe fn probe_ldmatrix<const WIDTH: usize>((a, b, c, d): (*const u32, *const u32, *const f32, *mut f32)) {
    let Staged { a: a_tile, b: b_tile } = Staged::carve();
    let (t, lane) = (tile(), lane_id());
    let base = 16 * (thread_idx().x / WARP_SIZE);
    // SAFETY (every global access): the caller gives the arrays of every launched warp's tile;
    // (every shared access) rows below 32, words below 8 and 4.
    let (a, b) = unsafe { (a.add((t * A_WORDS) as usize), b.add((t * B_WORDS) as usize)) };
    unrolled::<4>(|i| {
        let word = lane + 32 * i;
        unsafe { a_tile.set_unchecked(base + word / 8, word % 8, *a.add(word as usize)) };
    });
    // B's word (k, j) holds columns 2j and 2j + 1 of row k; the input holds B column by column.
    unrolled::<2>(|i| {
        let word = lane + 32 * i;
        let (k, j) = (word / 4, word % 4);
        let half = |n: u32| (unsafe { *b.add((n * 8 + k / 2) as usize) } >> (16 * (k % 2))) & 0xffff;
        unsafe { b_tile.set_unchecked(base + k, j, half(2 * j) | (half(2 * j + 1) << 16)) };
    });
    sync_threads();
    // A's matrix m (of 4) is rows 8·(m % 2), words 4·(m / 2); a load of WIDTH takes matrices
    // first..first + WIDTH, lane l giving row l % 8 of matrix first + (l / 8) % WIDTH (the lanes past
    // 8·WIDTH repeat rows: their addresses are not read).
    let r = lane % 8;
    let mut fa = [0u32; 4];
    unrolled_to(4 / WIDTH as u32, |load| {
        let first = load * WIDTH as u32;
        let m = first + (lane / 8) % WIDTH as u32;
        let registers = unsafe { a_tile.load_matrices::<WIDTH>(base + r + 8 * (m % 2), 4 * (m / 2)) };
        unrolled_to(WIDTH as u32, |i| fa[(first + i) as usize] = registers[i as usize]);
    });
    // B's two matrices at k 0 and 8.
    let fb: [u32; 2] = if WIDTH == 1 {
        [0, 8].map(|k| unsafe { b_tile.load_matrices_trans::<1>(base + r + k, 0) }[0])
    } else if WIDTH == 2 {
        unsafe { b_tile.load_matrices_trans::<2>(base + r + 8 * ((lane / 8) % 2), 0) }
    } else {
        let [b0, b1, _, _] = unsafe { b_tile.load_matrices_trans::<4>(base + r + 8 * ((lane / 8) % 2), 0) };
        [b0, b1]
    };
    let fc = unsafe { load_c(c.add((t * C_LEN) as usize), lane) };
    let fd = mma_bf16_m16n8k16(fa, fb, fc);
    unsafe { store_d(d.add((t * C_LEN) as usize), lane, fd) };
}

kernel! {
    /// Warp w: `D_w = A_w·B_w + C_w` by `mma.sync.m16n8k16` on bf16, the fragments read from
    /// shared memory by `ldmatrix` x4 (A) and `ldmatrix.x4.trans` (B, staged k-major).
    pub unsafe fn mma_probe_bf16_ldmatrix(a: *const u32, b: *const u32, c: *const f32, d: *mut f32) {
        // SAFETY: the kernel's contract.
        unsafe { probe_ldmatrix::<4>((a, b, c, d)) }
    }
}

kernel! {
    /// As [`mma_probe_bf16_ldmatrix`] with `ldmatrix` x2 and x2.trans.
    pub unsafe fn mma_probe_bf16_ldmatrix_x2(a: *const u32, b: *const u32, c: *const f32, d: *mut f32) {
        // SAFETY: the kernel's contract.
        unsafe { probe_ldmatrix::<2>((a, b, c, d)) }
    }
}

kernel! {
    /// As [`mma_probe_bf16_ldmatrix`] with `ldmatrix` x1 and x1.trans.
    pub unsafe fn mma_probe_bf16_ldmatrix_x1(a: *const u32, b: *const u32, c: *const f32, d: *mut f32) {
        // SAFETY: the kernel's contract.
        unsafe { probe_ldmatrix::<1>((a, b, c, d)) }
    }
}

/// bf16 m16n8k16, [`BLOCK`] threads per block.
pub const KERNEL_BF16: Kernel<MmaProbe> = Kernel {
    code: mma_probe_bf16,
    block: Dim3::x(BLOCK),
    shared: SharedMemory::NONE,
    grid: |p, _| Dim3::x(p.blocks),
};

/// f16 m16n8k16, [`BLOCK`] threads per block.
pub const KERNEL_F16: Kernel<MmaProbe> = Kernel {
    code: mma_probe_f16,
    ..KERNEL_BF16
};

/// tf32 m16n8k8, [`BLOCK`] threads per block.
pub const KERNEL_TF32: Kernel<MmaProbe> = Kernel {
    code: mma_probe_tf32,
    block: Dim3::x(BLOCK),
    shared: SharedMemory::NONE,
    grid: |p, _| Dim3::x(p.blocks),
};

/// bf16 m16n8k16 through shared memory and `ldmatrix`, [`BLOCK`] threads per block.
pub const KERNEL_BF16_LDMATRIX: Kernel<MmaProbe> = Kernel {
    code: mma_probe_bf16_ldmatrix,
    block: Dim3::x(BLOCK),
    shared: SharedMemory::of(Staged::BYTES),
    grid: |p, _| Dim3::x(p.blocks),
};

/// bf16 through shared memory and `ldmatrix` x2, [`BLOCK`] threads per block.
pub const KERNEL_BF16_LDMATRIX_X2: Kernel<MmaProbe> = Kernel {
    code: mma_probe_bf16_ldmatrix_x2,
    ..KERNEL_BF16_LDMATRIX
};

/// bf16 through shared memory and `ldmatrix` x1, [`BLOCK`] threads per block.
pub const KERNEL_BF16_LDMATRIX_X1: Kernel<MmaProbe> = Kernel {
    code: mma_probe_bf16_ldmatrix_x1,
    ..KERNEL_BF16_LDMATRIX
};

/// The tensor cores' `mma.sync`, checked: the registry's list.
pub const FAMILY: Family<MmaProbe> = Family::new(
    "mma_probe",
    &[
        KERNEL_BF16,
        KERNEL_F16,
        KERNEL_TF32,
        KERNEL_BF16_LDMATRIX,
        KERNEL_BF16_LDMATRIX_X2,
        KERNEL_BF16_LDMATRIX_X1,
    ],
);
