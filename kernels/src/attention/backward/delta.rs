//! The `wgmma` backward pass's first launch where the forward saved each row's lse (the forward
//! kernels' `lse` output, in `stats` ahead of the pass): each query row's Δ = Σ dO·O, and its f32
//! sums of dQ zeroed, without recomputing any score. A row is 16 lanes, each reading 8 columns of
//! O and dO (16 bytes each) and zeroing its 8 sums; any head dimension that is a multiple of 8 up
//! to 128.

use super::{AttentionBackward, MAX_DIM, sums_at};
use ptxkit::device::mma::Bf16;
use ptxkit::device::{Float4, block_idx, global_store, grid_dim, load4, shfl_xor, store4, thread_idx, unrolled};
use ptxkit::{Dim3, Kernel, Occupancy, SharedMemory};

/// Threads per block.
pub const THREADS: u32 = 256;
/// Columns per lane: one 16-byte chunk of bf16.
const CHUNK: u32 = 8;
/// Lanes per row: a chunk each of the widest head.
const LANES: u32 = MAX_DIM / CHUNK;
/// Query rows per block.
pub const ROWS: u32 = THREADS / LANES;

/// Bit-exact bf16 of a pair as f32s.
#[inline(always)]
fn unpack(pair: u32) -> (f32, f32) {
    (f32::from_bits(pair << 16), f32::from_bits(pair & 0xffff_0000))
}

/// The body: rows `ROWS·block_idx().x ..` of head `block_idx().y`.
///
/// # Safety
/// `o` and `d_o` hold heads·seq·dim bf16, 16-byte aligned; `stats` holds
/// [`AttentionBackward::stats_len`] floats; `dim` a multiple of 8 up to [`MAX_DIM`].
#[inline(always)]
unsafe fn run(o: *const Bf16, d_o: *const Bf16, stats: *mut f32, (heads, seq, dim): (u32, u32, u32)) {
    let tid = thread_idx().x;
    let (position, chunk) = (block_idx().x * ROWS + tid / LANES, tid % LANES);
    let row = block_idx().y * seq + position;
    let mut sum = 0.0f32;
    if position < seq && chunk * CHUNK < dim {
        let at = (row * dim + chunk * CHUNK) as usize;
        // SAFETY: the row inside the head and the chunk inside dim: inside O, dO and the sums (a multiple
        // of four floats on, as `at` is of eight), 16-byte aligned.
        unsafe {
            let (a, b) = (load4(o.add(at).cast::<f32>()).0, load4(d_o.add(at).cast::<f32>()).0);
            unrolled::<4>(|i| {
                let ((o0, o1), (g0, g1)) = (unpack(a[i as usize].to_bits()), unpack(b[i as usize].to_bits()));
                sum += o0 * g0 + o1 * g1;
            });
            let sums = stats.add(sums_at(heads, seq) + at);
            store4(sums, Float4([0.0; 4]));
            store4(sums.add(4), Float4([0.0; 4]));
        }
    }
    // The row's 16 lanes (a half warp) add their shares.
    let sum = sum + shfl_xor(sum, 8);
    let sum = sum + shfl_xor(sum, 4);
    let sum = sum + shfl_xor(sum, 2);
    let sum = sum + shfl_xor(sum, 1);
    if chunk == 0 && position < seq {
        // SAFETY: the row's Δ inside `stats`, after every row's lse.
        unsafe { global_store(stats.add((heads * seq + row) as usize), sum) };
    }
}

ptxkit::kernel! {
    #[launch_bounds(ptxkit::Dim3::x(THREADS), 4)]
    /// Attention's backward on `wgmma`, first launch after a forward that saved each row's lse:
    /// each row's Δ, its sums of dQ zeroed.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn attention_backward_delta(
        q: *const Bf16, k: *const Bf16, v: *const Bf16, o: *const Bf16, d_o: *const Bf16,
        dq: *mut Bf16, dk: *mut Bf16, dv: *mut Bf16, stats: *mut f32, kv_group: u32, seq: u32, dim: u32,
    ) {
        let _ = (q, k, v, dq, dk, dv, kv_group);
        // SAFETY: the kernel's contract; the grid's y is the heads.
        unsafe { run(o, d_o, stats, (grid_dim().y, seq, dim)) }
    }
}

/// A block per [`ROWS`] query rows of each head (y).
fn grid(p: &AttentionBackward, _: Occupancy) -> Dim3 {
    Dim3::xy(p.0.seq.div_ceil(ROWS), p.0.heads)
}

/// [`THREADS`] threads per block, no shared memory.
pub const KERNEL: Kernel<AttentionBackward> = Kernel {
    code: attention_backward_delta,
    block: Dim3::x(THREADS),
    shared: SharedMemory::NONE,
    grid,
};
