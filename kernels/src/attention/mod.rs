//! Fused attention forward, one head at a time: `O = softmax(Q·Kᵀ/√d)·V` in one kernel, without
//! the seq×seq matrix of scores ever reaching global memory. Q, K, V and O are bf16, row-major
//! `[heads][seq][dim]` (PyTorch's `(batch, heads, seq, dim)` with batch·heads as `heads`); the sums
//! are f32. Each block owns a tile of query rows and streams K and V through shared memory a tile
//! of keys at a time, keeping the running maximum and sum of each row's softmax in registers
//! (online softmax): the scores of a tile are rescaled into the output as the maximum grows.
//!
//! * [`flash`]: `mma.sync` m16n8k16, four warps of 16 query rows, K and V double-buffered by
//!   `cp.async` (sm_80 and later, and the emulator).
//! * [`wgmma`]: Hopper's warpgroup multiply, the scores' accumulators turned into the registers of
//!   the second product (sm_90a, GPU only; what it shares with the next rung in [`warpgroup`]).
//! * [`overlapped`]: the same with each warpgroup's softmax overlapped with its products (sm_90a).
//! * [`specialized`]: rung 2's warpgroups fed by a producer warp's TMA copies through `mbarrier`s,
//!   no block-wide barrier in the loop (sm_90a).
//!
//! Two families share the kernels' code: [`FAMILY`] attends to every key, [`CAUSAL_FAMILY`] to the
//! keys at or before the query's position (the mask of a decoder).

pub mod flash;
pub mod overlapped;
pub mod specialized;
pub mod warpgroup;
pub mod wgmma;

use ptxkit::device::mma::Bf16;
use ptxkit::{Family, Problem};

/// The head dimensions the kernels are built for.
pub const DIMS: [u32; 2] = [64, 128];

/// The sizes of one attention: `heads` independent heads (batch × heads), each with `seq` queries,
/// keys and values of `dim` elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attention {
    pub heads: u32,
    pub seq: u32,
    pub dim: u32,
}

impl Problem for Attention {
    /// `(q, k, v, o, heads, seq, dim, maps)`: `maps` the tensor maps of Q, K and V for the TMA
    /// rung (null where there are none; the other rungs ignore it).
    type Args = (
        *const Bf16,
        *const Bf16,
        *const Bf16,
        *mut Bf16,
        u32,
        u32,
        u32,
        *const TensorMaps,
    );
}

/// The tensor maps of Q, K and V that [`specialized`] copies tiles by: 128 opaque bytes each, made
/// by the host (`cuTensorMapEncodeTiled` over `[heads][seq][dim]`, the 128-byte swizzle, boxes of
/// [`specialized::BOX`]) and kept in global memory.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(128))]
pub struct TensorMaps {
    pub q: [u64; 16],
    pub k: [u64; 16],
    pub v: [u64; 16],
}

/// Every key: the encoder's attention.
pub const FAMILY: Family<Attention> = Family::new(
    "attention",
    &[
        flash::KERNEL,
        wgmma::KERNEL,
        overlapped::KERNEL,
        specialized::KERNEL,
        specialized::KERNEL_REBALANCED,
    ],
);

/// Keys up to the query's own position.
pub const CAUSAL_FAMILY: Family<Attention> = Family::new(
    "attention_causal",
    &[
        flash::KERNEL_CAUSAL,
        wgmma::KERNEL_CAUSAL,
        overlapped::KERNEL_CAUSAL,
        specialized::KERNEL_CAUSAL,
        specialized::KERNEL_CAUSAL_REBALANCED,
    ],
);

/// The scores' scale 1/√dim, times log2(e): the kernels take 2^x of scaled scores where the
/// softmax takes e^x of plain ones. (`core` has no square root; the dims are [`DIMS`].)
#[inline(always)]
pub(crate) const fn log2_scale(dim: u32) -> f32 {
    let inverse_root = if dim == 64 {
        0.125
    } else {
        core::f32::consts::FRAC_1_SQRT_2 / 8.0
    };
    core::f32::consts::LOG2_E * inverse_root
}

/// The two PTX entries of a rung, every key and causal, with the rung's launch bounds, each running the rung's
/// `run::<D, CAUSAL>(q, k, v, o, seq, maps)` for the head dimension it is given (64 or 128: the
/// host checks it). `$kernel` is `kernel` or `kernel_sm90a`.
macro_rules! entries {
    ([$($bounds:tt)*], $kernel:ident, $($run:ident)::+, $(#[$all:meta])* $name:ident, $(#[$masked:meta])* $causal:ident) => {
        ptxkit::$kernel! {
            #[launch_bounds($($bounds)*)]
            $(#[$all])*
            pub unsafe fn $name(q: *const ptxkit::device::mma::Bf16, k: *const ptxkit::device::mma::Bf16, v: *const ptxkit::device::mma::Bf16, o: *mut ptxkit::device::mma::Bf16, heads: u32, seq: u32, dim: u32, maps: *const $crate::attention::TensorMaps) {
                // The heads are the grid's y.
                let _ = heads;
                // SAFETY: the kernel's contract.
                unsafe {
                    if dim == 64 {
                        $($run)::+::<64, false>(q, k, v, o, seq, maps)
                    } else {
                        $($run)::+::<128, false>(q, k, v, o, seq, maps)
                    }
                }
            }
        }

        ptxkit::$kernel! {
            #[launch_bounds($($bounds)*)]
            $(#[$masked])*
            pub unsafe fn $causal(q: *const ptxkit::device::mma::Bf16, k: *const ptxkit::device::mma::Bf16, v: *const ptxkit::device::mma::Bf16, o: *mut ptxkit::device::mma::Bf16, heads: u32, seq: u32, dim: u32, maps: *const $crate::attention::TensorMaps) {
                let _ = heads;
                // SAFETY: the kernel's contract.
                unsafe {
                    if dim == 64 {
                        $($run)::+::<64, true>(q, k, v, o, seq, maps)
                    } else {
                        $($run)::+::<128, true>(q, k, v, o, seq, maps)
                    }
                }
            }
        }
    };
}
use entries;

/// The block of query rows a block of a causal grid works on: the last first, so that the blocks
/// with the most keys start before those with the fewest.
#[inline(always)]
pub(crate) fn query_block(causal: bool, block: u32, blocks: u32) -> u32 {
    if causal { blocks - 1 - block } else { block }
}

/// The number of key tiles of `keys` keys that query rows `first..first + rows` attend to.
#[inline(always)]
pub(crate) fn key_tiles(causal: bool, seq: u32, first: u32, rows: u32, keys: u32) -> u32 {
    let all = seq.div_ceil(keys);
    if causal {
        all.min((first + rows).div_ceil(keys))
    } else {
        all
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl Attention {
    /// `heads` and `seq` at least 1, `dim` one of [`DIMS`], every tensor within the 32-bit
    /// element count the kernels index, and `heads` within a grid's 65 535 rows.
    pub fn new(heads: usize, seq: usize, dim: usize) -> Result<Self, ptxkit::InvalidSize> {
        let invalid = |reason: String| ptxkit::InvalidSize {
            problem: "attention",
            reason,
        };
        if !DIMS.contains(&(dim as u32)) || dim > u32::MAX as usize {
            return Err(invalid(format!(
                "the head dimension must be 64 or 128 (got {dim}): the kernels are built for those"
            )));
        }
        if heads == 0 || seq == 0 {
            return Err(invalid(format!(
                "heads and seq must be at least 1 (got {heads} and {seq})"
            )));
        }
        if heads > ptxkit::launch::MAX_GRID_DIM_YZ as usize {
            return Err(invalid(format!(
                "at most {} heads (got {heads}): they are the grid's y",
                ptxkit::launch::MAX_GRID_DIM_YZ
            )));
        }
        let elements = heads.checked_mul(seq).and_then(|n| n.checked_mul(dim));
        if elements.is_none_or(|n| n > u32::MAX as usize) {
            return Err(invalid(format!(
                "heads × seq × dim = {heads} × {seq} × {dim} is more than the kernels' 32-bit index \
                 range ({} elements)",
                u32::MAX
            )));
        }
        Ok(Attention {
            heads: heads as u32,
            seq: seq as u32,
            dim: dim as u32,
        })
    }

    /// Elements of each of Q, K, V and O.
    pub fn len(&self) -> usize {
        self.heads as usize * self.seq as usize * self.dim as usize
    }

    /// Whether there is nothing to compute (never: [`Attention::new`] refuses it).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Floating-point operations: the two products, 4·seq²·dim per head; half of that with the
    /// causal mask (the convention of FlashAttention's and PyTorch's benchmarks).
    pub fn flops(&self, causal: bool) -> f64 {
        let full = 4.0 * self.heads as f64 * (self.seq as f64).powi(2) * self.dim as f64;
        if causal { full / 2.0 } else { full }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_refuses_other_head_dims_empty_problems_and_overflow_naming_the_value() {
        let reason = |r: Result<Attention, ptxkit::InvalidSize>| r.unwrap_err().reason;
        assert!(reason(Attention::new(1, 1, 96)).contains("got 96"));
        assert!(reason(Attention::new(0, 16, 64)).contains("got 0"));
        assert!(reason(Attention::new(65_536, 1, 64)).contains("65536"));
        assert!(reason(Attention::new(1 << 10, 1 << 15, 128)).contains("32-bit"));
        assert_eq!(Attention::new(2, 3, 128).unwrap().len(), 768);
    }

    #[test]
    fn causal_grids_start_with_the_longest_blocks_and_stop_at_the_diagonal() {
        assert_eq!(query_block(true, 0, 4), 3);
        assert_eq!(query_block(false, 0, 4), 0);
        // Rows 64..128 of a 1000-key head see keys up to 127: two 64-key tiles, all 16 without.
        assert_eq!(key_tiles(true, 1000, 64, 64, 64), 2);
        assert_eq!(key_tiles(false, 1000, 64, 64, 64), 16);
        // The last block of a 130-row head is cut at seq.
        assert_eq!(key_tiles(true, 130, 128, 64, 64), 3);
    }
}
