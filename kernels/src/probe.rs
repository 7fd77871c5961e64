//! A kernel that exercises the warp-level device layer (lane id, the four shuffles, the three
//! votes, sync_warp), so
//! that the emulator and the GPU can be checked against the same expected values.

use ptxkit::device::{
    WARP_SIZE, ballot, block_dim, block_idx, global_store, lane_id, match_any, shfl_down, shfl_idx, shfl_up, shfl_xor,
    sync_warp, thread_idx, unrolled, vote_all, vote_any,
};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};
use ptxkit::{Family, Problem};

/// Words each thread writes.
pub const WORDS_PER_THREAD: u32 = 10;

/// Two warps per block.
pub const BLOCK: u32 = 2 * WARP_SIZE;

/// A launch of `blocks` blocks of [`BLOCK`] threads, each writing [`WORDS_PER_THREAD`] words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WarpProbe {
    pub blocks: u32,
}

impl Problem for WarpProbe {
    /// `(out,)`.
    type Args = (*mut u32,);
}

#[cfg(not(target_arch = "nvptx64"))]
impl WarpProbe {
    /// At least one block, and an output within the 32-bit index range.
    pub fn new(blocks: usize) -> Result<Self, ptxkit::InvalidSize> {
        let words = (blocks as u64).checked_mul((BLOCK * WORDS_PER_THREAD) as u64);
        match words {
            Some(words) if blocks >= 1 && words <= u32::MAX as u64 => Ok(WarpProbe { blocks: blocks as u32 }),
            _ => Err(ptxkit::InvalidSize {
                problem: "warp probe",
                reason: format!(
                    "blocks = {blocks}: at least 1, and at most {} (a 32-bit index over the output)",
                    u32::MAX / (BLOCK * WORDS_PER_THREAD)
                ),
            }),
        }
    }

    pub fn threads(&self) -> u32 {
        self.blocks * BLOCK
    }

    /// Words of output.
    pub fn len(&self) -> usize {
        (self.threads() * WORDS_PER_THREAD) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.blocks == 0
    }
}

kernel! {
    /// With `g` the thread's global index, thread `g` writes to `out[g·WORDS_PER_THREAD ..]`: its
    /// lane id, `shfl_xor(g, 1)`, `shfl_down(g, 3)`, `shfl_up(g, 2)`, `shfl_idx(g, 5)`, and the sum
    /// of `g` over its warp by a butterfly of xor-shuffles; then `ballot(g % 3 == 0)`, `vote_all` of
    /// "my warp is even or I am not lane 7" and `vote_any(g % 61 == 0)` (as 0 or 1), and
    /// `match_any(g % 5)`.
    pub unsafe fn warp_probe(out: *mut u32) {
        let g = block_idx().x * block_dim().x + thread_idx().x;
        let mut sum = g;
        let mut mask = WARP_SIZE / 2;
        while mask > 0 {
            sum += shfl_xor(sum, mask);
            mask /= 2;
        }
        let lane = lane_id();
        let votes = [
            ballot(g.is_multiple_of(3)),
            vote_all((g / WARP_SIZE).is_multiple_of(2) || lane != 7) as u32,
            vote_any(g.is_multiple_of(61)) as u32,
            match_any(g % 5),
        ];
        let shuffles = [lane, shfl_xor(g, 1), shfl_down(g, 3), shfl_up(g, 2), shfl_idx(g, 5), sum];
        sync_warp();
        let words: [u32; WORDS_PER_THREAD as usize] = core::array::from_fn(|j| if j < 6 { shuffles[j] } else { votes[j - 6] });
        unrolled::<WORDS_PER_THREAD>(|j| {
            // SAFETY: the caller gives WORDS_PER_THREAD words per launched thread.
            unsafe { global_store(out.add((g * WORDS_PER_THREAD + j) as usize), words[j as usize]) };
        });
    }
}

/// [`BLOCK`] threads per block, `blocks` blocks.
pub const KERNEL: Kernel<WarpProbe> = Kernel {
    code: warp_probe,
    block: Dim3::x(BLOCK),
    shared: SharedMemory::NONE,
    grid: |p, _| Dim3::x(p.blocks),
};

/// The warp-level device layer, checked: the registry's list.
pub const FAMILY: Family<WarpProbe> = Family::new("warp_probe", &[KERNEL]);
