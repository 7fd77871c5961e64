//! Rung 1: `mma.sync` fed by `ldmatrix`, the operands staged by `cp.async` four steps ahead. A
//! block of four warps computes a 128×128 tile of C, each warp a 64×64 quarter as 4×8 tensor-core
//! tiles of 16×8 (128 f32 accumulators per lane). Per step of 32 along k the block stages A's
//! 128×32 and B's 32×128 in shared memory, bf16 pairs in 32-bit words; four such stages form a
//! ring, so three steps' copies are in flight while one is multiplied, behind one barrier per step.
//!
//! Fragments come from shared memory by `ldmatrix` (A) and `ldmatrix.trans` (B, staged k-major as
//! it is in memory): a 16×16 piece in one instruction per lane. Each row is padded by 16 bytes
//! (A's 80 bytes apart, B's 272), so the eight rows one `ldmatrix` matrix reads fall on eight
//! different 16-byte bank groups: no bank conflict.
//!
//! The copies need 16-byte rows: k and n multiples of 8, the matrices 16-byte aligned. Other
//! shapes stage the same tiles with plain loads and stores (correct, without the overlap).

use super::MatmulBf16;
use crate::matmul::output::Out;
use ptxkit::device::mma::{Bf16, accumulator_position, mma_bf16_m16n8k16};
use ptxkit::device::{
    MatrixLayout, SharedMatrix, WARP_SIZE, async_copy_commit, async_copy_wait, block_idx, lane_id, sync_threads,
    thread_idx, unrolled,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel, shared_memory};

/// Rows of C per block.
pub const BM: u32 = 128;
/// Columns of C per block.
pub const BN: u32 = 128;
/// The k of one step (two tensor-core k16 steps).
pub const BK: u32 = 32;
/// Steps staged at once: one multiplied, three in flight.
pub const STAGES: u32 = 4;
/// Four warps, 2×2 over the block's tile.
pub const THREADS: u32 = 4 * WARP_SIZE;
/// A warp's tile: 64×64.
const WM: u32 = BM / 2;
const WN: u32 = BN / 2;
/// Tensor-core tiles per warp: 4 down (16 rows each), 8 across (8 columns each).
const MI: usize = (WM / 16) as usize;
const NI: usize = (WN / 8) as usize;
/// bf16 per 16-byte chunk, the unit of a copy and of an `ldmatrix` row.
const CHUNK: u32 = 8;
/// Chunks of A's and of B's stage per thread.
const A_CHUNKS: u32 = BM * BK / CHUNK / THREADS;
const B_CHUNKS: u32 = BK * BN / CHUNK / THREADS;
/// Padding of each staged row, in words: 16 bytes.
const PAD: u32 = 4;

/// A's ring: `STAGES` slices of BM rows × BK bf16, rows 80 bytes apart.
const A_LAYOUT: MatrixLayout = MatrixLayout {
    rows: STAGES * BM,
    cols: BK / 2,
    pitch: BK / 2 + PAD,
};
/// B's ring: `STAGES` slices of BK rows × BN bf16, rows 272 bytes apart.
const B_LAYOUT: MatrixLayout = MatrixLayout {
    rows: STAGES * BK,
    cols: BN / 2,
    pitch: BN / 2 + PAD,
};

shared_memory! {
    /// The rings of A's and B's slices, bf16 pairs.
    pub struct Rings {
        pub a: SharedMatrix<u32> = A_LAYOUT,
        pub b: SharedMatrix<u32> = B_LAYOUT,
    }
}

/// Element `at` of a matrix, or zero past its `len` elements (the staging of unaligned shapes).
///
/// # Safety
/// `matrix` holds `len` elements.
#[inline(always)]
unsafe fn element_or_zero(matrix: *const Bf16, at: u32, inside: bool) -> u32 {
    // SAFETY: read only where inside, by the caller's promise.
    if inside {
        unsafe { (*matrix.add(at as usize)).0 as u32 }
    } else {
        0
    }
}

/// The operands, their sizes, and the block's corner of C.
#[derive(Clone, Copy)]
struct Operands {
    a: *const Bf16,
    b: *const Bf16,
    m: u32,
    n: u32,
    k: u32,
    row0: u32,
    col0: u32,
    /// Whether 16-byte copies can move the rows (see the module's last paragraph).
    aligned: bool,
}

/// Stages step `step` of A and B into ring slot `slot`: this thread's chunks, zeros outside the
/// matrices.
///
/// # Safety
/// A and B hold m·k and k·n elements; `slot < STAGES`; every thread of the block calls it with
/// its own `tid`.
#[inline(always)]
unsafe fn stage(rings: &Rings, ops: Operands, tid: u32, step: u32, slot: u32) {
    let Operands {
        a,
        b,
        m,
        n,
        k,
        row0,
        col0,
        aligned,
    } = ops;
    let (a_ring, b_ring) = (&rings.a, &rings.b);
    let k0 = step * BK;
    unrolled::<A_CHUNKS>(|i| {
        let e = tid + i * THREADS;
        let (r, chunk) = (e / (BK / CHUNK), e % (BK / CHUNK));
        let (row, at) = (row0 + r, k0 + CHUNK * chunk);
        let (slot_row, word) = (slot * BM + r, chunk * CHUNK / 2);
        if aligned {
            // With k a multiple of 8 a chunk is wholly inside A or wholly outside.
            let inside = row < m && at < k;
            // SAFETY: the source is inside A where read, 16-byte aligned (k, the chunk
            // and A are); the slot row below STAGES·BM, the words below BK / 2.
            unsafe {
                let src = if inside { a.add((row * k + at) as usize) } else { a };
                a_ring.copy4_async_zero_fill_unchecked(slot_row, word, src.cast::<u32>(), 4 * inside as u32);
            }
        } else {
            unrolled::<4>(|w| {
                let at = at + 2 * w;
                // SAFETY: each element read only inside A; the word inside the slot.
                unsafe {
                    let low = element_or_zero(a, row * k + at, row < m && at < k);
                    let high = element_or_zero(a, row * k + at + 1, row < m && at + 1 < k);
                    a_ring.set_unchecked(slot_row, word + w, low | (high << 16));
                }
            });
        }
    });
    unrolled::<B_CHUNKS>(|i| {
        let e = tid + i * THREADS;
        let (r, chunk) = (e / (BN / CHUNK), e % (BN / CHUNK));
        let (at, column) = (k0 + r, col0 + CHUNK * chunk);
        let (slot_row, word) = (slot * BK + r, chunk * CHUNK / 2);
        if aligned {
            let inside = at < k && column < n;
            // SAFETY: as for A, with B (k×n) and n a multiple of 8.
            unsafe {
                let src = if inside { b.add((at * n + column) as usize) } else { b };
                b_ring.copy4_async_zero_fill_unchecked(slot_row, word, src.cast::<u32>(), 4 * inside as u32);
            }
        } else {
            unrolled::<4>(|w| {
                let column = column + 2 * w;
                // SAFETY: as for A.
                unsafe {
                    let low = element_or_zero(b, at * n + column, at < k && column < n);
                    let high = element_or_zero(b, at * n + column + 1, at < k && column + 1 < n);
                    b_ring.set_unchecked(slot_row, word + w, low | (high << 16));
                }
            });
        }
    });
}

/// The kernel's body, C of f32 or rounded to bf16 ([`Out`]).
///
/// # Safety
/// A, B and C hold m·k, k·n and m·n elements; launched as [`KERNEL`] is.
#[inline(always)]
pub(crate) unsafe fn run<O: Out>(a: *const Bf16, b: *const Bf16, c: *mut O, (m, n, k): (u32, u32, u32)) {
    let rings = Rings::carve();
    let (a_ring, b_ring) = (&rings.a, &rings.b);
    let (tid, lane) = (thread_idx().x, lane_id());
    let warp = tid / WARP_SIZE;
    let (row0, col0) = (block_idx().y * BM, block_idx().x * BN);
    let (warp_row, warp_col) = ((warp / 2) * WM, (warp % 2) * WN);
    let aligned = k.is_multiple_of(CHUNK)
        && n.is_multiple_of(CHUNK)
        && (a as usize).is_multiple_of(16)
        && (b as usize).is_multiple_of(16);
    let ops = Operands {
        a,
        b,
        m,
        n,
        k,
        row0,
        col0,
        aligned,
    };
    let steps = k.div_ceil(BK);
    // Fill all but one slot; every step then commits one group (empty past the end), so that
    // waiting for all but STAGES - 2 groups always means "this step's slices have landed".
    for step in 0..STAGES - 1 {
        if step < steps {
            // SAFETY: the kernel's contract; step < STAGES.
            unsafe { stage(&rings, ops, tid, step, step) };
        }
        async_copy_commit();
    }
    let mut acc = [[[0.0f32; 4]; NI]; MI];
    // Lane l gives row l % 8 of ldmatrix matrix l / 8: matrices at rows +0 and +8 (A) or k +0
    // and +8 (B), then at words +0 and +4 (8 bf16 along k for A, along n for B).
    let (ld_row, ld_word) = (lane % 8 + 8 * ((lane / 8) % 2), 4 * (lane / 16));
    for step in 0..steps {
        async_copy_wait::<{ STAGES - 2 }>();
        // This step's slices are whole, and every warp is done with the slot refilled next.
        sync_threads();
        let next = step + STAGES - 1;
        if next < steps {
            // SAFETY: as above.
            unsafe { stage(&rings, ops, tid, next, next % STAGES) };
        }
        async_copy_commit();
        let slot = step % STAGES;
        for kk in 0..BK / 16 {
            // SAFETY (ldmatrix): rows below STAGES·BM and STAGES·BK, words + 4 within the
            // rows, every address 16-byte aligned (pitches and words multiples of 4).
            let fa: [[u32; 4]; MI] = core::array::from_fn(|mi| unsafe {
                a_ring.load_matrices_x4(slot * BM + warp_row + 16 * mi as u32 + ld_row, 8 * kk + ld_word)
            });
            let fb: [[u32; 4]; NI / 2] = core::array::from_fn(|p| unsafe {
                b_ring.load_matrices_x4_trans(slot * BK + 16 * kk + ld_row, (warp_col + 16 * p as u32) / 2 + ld_word)
            });
            unrolled::<{ MI as u32 }>(|mi| {
                unrolled::<{ NI as u32 }>(|ni| {
                    let (mi, ni) = (mi as usize, ni as usize);
                    let pair = &fb[ni / 2];
                    let b = [pair[2 * (ni % 2)], pair[2 * (ni % 2) + 1]];
                    acc[mi][ni] = mma_bf16_m16n8k16(fa[mi], b, acc[mi][ni]);
                });
            });
        }
    }
    unrolled::<{ MI as u32 }>(
        #[inline(always)]
        |mi| {
            unrolled::<{ NI as u32 }>(|ni| {
                unrolled::<4>(|r| {
                    let (row, col) = accumulator_position(lane, r);
                    let (row, col) = (row0 + warp_row + 16 * mi + row, col0 + warp_col + 8 * ni + col);
                    if row < m && col < n {
                        // SAFETY: inside C (m×n).
                        unsafe {
                            O::put(
                                c.add((row * n + col) as usize),
                                acc[mi as usize][ni as usize][r as usize],
                                false,
                            )
                        };
                    }
                });
            });
        },
    );
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), 2)]
    /// `C = A·B` on the tensor cores (bf16 operands, f32 sums and output), 128×128 per block.
    pub unsafe fn matmul_bf16_pipelined(a: *const Bf16, b: *const Bf16, c: *mut f32, m: u32, n: u32, k: u32, maps: *const super::TensorMaps, arrivals: *mut u32) {
        // The small-m rung's counters: unused here.
        let _ = arrivals;
        // Copies by cp.async: no tensor maps.
        let _ = maps;
        // SAFETY: the kernel's contract; KERNEL launches the block and grid.
        unsafe { run::<f32>(a, b, c, (m, n, k)) }
    }
}

/// [`THREADS`] threads per block, one block per 128×128 tile of C; 74 KiB of rings.
pub const KERNEL: Kernel<MatmulBf16> = Kernel {
    code: matmul_bf16_pipelined,
    block: Dim3::x(THREADS),
    shared: SharedMemory::opt_in(Rings::BYTES),
    grid: |p, _| Dim3::xy(p.n.div_ceil(BN), p.m.div_ceil(BM)),
};
