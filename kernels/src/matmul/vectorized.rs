//! The 2D register-blocked kernel with 16-byte accesses: each thread stages one float4 of A's slice
//! and one of B's per step (LDG.128), stores B's whole (STS.128) and A's transposed, and reads its
//! column of 8 and row of 8 as two 16-byte loads each (LDS.128): 4 shared loads per 64 fused
//! multiply-adds instead of 16.
//!
//! The 16-byte path needs k and n multiples of 4 and 16-byte aligned matrices (then every row of A
//! and B starts on a 16-byte boundary, and a float4 along a row lies wholly inside the matrix or
//! wholly outside); any other shape stages one element at a time, as [`super::register_2d`]. The
//! shared-memory reads are 16 bytes on both paths: the slices' rows are 16-byte aligned.

use super::Matmul;
use super::register_2d::{
    BK, BM, BN, Block, Slices, THREADS, TM, TN, add_outer_product, block_origin, stage_scalar, tile_origin,
    write_scalar,
};
use ptxkit::device::{Float4, is_aligned4, load4, store4, sync_threads, thread_idx, unrolled};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};

const _: () = assert!(
    BM * BK / 4 == THREADS && BK * BN / 4 == THREADS,
    "one float4 of each slice per thread"
);

/// Stages the step's slices with one 16-byte load of each per thread: A's float4 `t` is row t / 2,
/// k columns 4·(t % 2)..+3 (stored transposed: four scalar stores, 32 banks per warp); B's float4 `t`
/// is row t / 32, columns 4·(t % 32)..+3 (one 16-byte store).
///
/// # Safety
/// As for [`stage_scalar`], and k, n multiples of 4 with `a`, `b` 16-byte aligned.
#[inline(always)]
unsafe fn stage_vector(
    Slices { a: a_slice, b: b_slice }: Slices,
    (a, b): (*const f32, *const f32),
    (m, n, k): (u32, u32, u32),
    k0: u32,
) {
    let t = thread_idx().x;
    let (tile_row, tile_col) = tile_origin();
    let (row, kk) = (t / (BK / 4), 4 * (t % (BK / 4)));
    let (global_row, global_k) = (tile_row + row, k0 + kk);
    let four = if global_row < m && global_k < k {
        // SAFETY: inside A; k is a multiple of 4, so the float4 lies inside the row, aligned.
        unsafe { load4(a.add((global_row * k + global_k) as usize)) }
    } else {
        Float4([0.0; 4])
    };
    unrolled::<4>(|j| {
        // SAFETY: kk + j < BK, row < BM.
        unsafe { a_slice.set_unchecked(kk + j, row, four.0[j as usize]) }
    });
    let (kk, col) = (t / (BN / 4), 4 * (t % (BN / 4)));
    let (global_k, global_col) = (k0 + kk, tile_col + col);
    let four = if global_k < k && global_col < n {
        // SAFETY: inside B; n is a multiple of 4, so the float4 lies inside the row, aligned.
        unsafe { load4(b.add((global_k * n + global_col) as usize)) }
    } else {
        Float4([0.0; 4])
    };
    // SAFETY: kk < BK, col + 4 ≤ BN, col a multiple of 4 in a dense row of 128: 16-byte aligned.
    unsafe { b_slice.set4_unchecked(kk, col, four) };
}

/// Writes the thread's block to C, 16 bytes at a time (n a multiple of 4, c aligned: a float4 of a
/// row lies wholly inside C or wholly outside).
///
/// # Safety
/// `c` holds m·n elements, 16-byte aligned, and n is a multiple of 4.
#[inline(always)]
unsafe fn write_vector(c: *mut f32, acc: &Block, (m, n): (u32, u32)) {
    let (tile_row, tile_col) = tile_origin();
    let (row0, col0) = block_origin();
    unrolled::<TM>(|i| {
        let global_row = tile_row + row0 + i;
        unrolled::<{ TN / 4 }>(|h| {
            let global_col = tile_col + col0 + 4 * h;
            if global_row < m && global_col < n {
                let four = Float4(core::array::from_fn(|j| acc[i as usize][4 * h as usize + j]));
                // SAFETY: inside C, aligned (see above).
                unsafe { store4(c.add((global_row * n + global_col) as usize), four) };
            }
        });
    });
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 2)]
    /// `C = A·B`, a 128×128 tile per block, an 8×8 block per thread, 16-byte accesses.
    pub unsafe fn matmul_vectorized(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, _arrivals: *mut u32) {
        let slices = Slices::carve();
        let (row0, col0) = block_origin();
        // The same for every thread of the launch: one path, one set of barriers.
        let vector = k.is_multiple_of(4) && n.is_multiple_of(4) && is_aligned4(a) && is_aligned4(b) && is_aligned4(c);
        let mut acc: Block = [[0.0; TN as usize]; TM as usize];
        for step in 0..k.div_ceil(BK) {
            // SAFETY: forwarded from the kernel's contract (and the shape check above for the
            // vector path); KERNEL launches THREADS threads; the slices are free.
            unsafe {
                if vector {
                    stage_vector(slices, (a, b), (m, n, k), step * BK);
                } else {
                    stage_scalar(slices, (a, b), (m, n, k), step * BK);
                }
            }
            // The slices are complete before anyone reads them...
            sync_threads();
            for kk in 0..BK {
                // SAFETY: kk < BK; row0 and col0 are multiples of 8, the slices' pitches (132 and
                // 128) multiples of 4 and their starts 16-byte aligned: every read is an aligned
                // float4 inside its row.
                let (column, row) = unsafe {
                    let (a0, a1) = (slices.a.get4_unchecked(kk, row0), slices.a.get4_unchecked(kk, row0 + 4));
                    let (b0, b1) = (slices.b.get4_unchecked(kk, col0), slices.b.get4_unchecked(kk, col0 + 4));
                    (join(a0, a1), join(b0, b1))
                };
                add_outer_product(&mut acc, &column, &row);
            }
            // ...and everyone has read them before the next step overwrites them.
            sync_threads();
        }
        // SAFETY: C holds m·n elements (aligned, n a multiple of 4, on the vector path).
        unsafe {
            if vector {
                write_vector(c, &acc, (m, n));
            } else {
                write_scalar(c, &acc, (m, n));
            }
        }
    }
}

/// Two float4 as eight floats.
#[inline(always)]
fn join(low: Float4, high: Float4) -> [f32; 8] {
    core::array::from_fn(|i| if i < 4 { low.0[i] } else { high.0[i - 4] })
}

/// One block of 256 threads per 128×128 tile of C, the slices of [`super::register_2d`]; two
/// blocks per SM (at most 128 registers: left alone, ptxas takes 167 and one block fits).
pub const KERNEL: Kernel<Matmul> = Kernel {
    code: matmul_vectorized,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(Slices::BYTES),
    grid: |p, _| Dim3::xy(p.n.div_ceil(BN), p.m.div_ceil(BM)),
};
