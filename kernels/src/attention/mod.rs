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
//! keys at or before the query's position (the mask of a decoder). Both take head dimensions 64
//! and 128; [`ANY_DIM_FAMILY`] and [`ANY_DIM_CAUSAL_FAMILY`] take any multiple of 8 up to 128 on
//! the `mma.sync` rung (Phi's 80 and 96, diffusion models' 40).
//!
//! The backward pass (dQ, dK, dV) is [`backward`]'s two launches.
//!
//! Queries fewer than the keys go to [`decode`]
//! (flash-decoding: runs of keys on their own warps, [`combine`] weighing the runs into O):
//! [`DECODE_FAMILY`] and [`DECODE_CAUSAL_FAMILY`] on the problem [`Decode`].

pub mod backward;
pub mod combine;
pub mod decode;
pub mod flash;
pub mod overlapped;
pub mod specialized;
pub mod warpgroup;
pub mod wgmma;

use ptxkit::device::mma::Bf16;
use ptxkit::{Family, Problem};

/// The head dimensions the kernels are built for.
pub const DIMS: [u32; 2] = [64, 128];

/// The widest head [`ANY_DIM_FAMILY`] takes (any multiple of 8 up to it).
pub const MAX_ANY_DIM: u32 = 128;

/// The sizes of one attention: `heads` query heads (batch × heads), each with `seq` queries,
/// keys and values of `dim` elements; each `kv_group` consecutive query heads share one head of K
/// and V (grouped-query attention; 1: a head of K and V per query head). Q and O are
/// `[heads][seq][dim]`, K and V `[heads / kv_group][seq][dim]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attention {
    pub heads: u32,
    pub seq: u32,
    pub dim: u32,
    pub kv_group: u32,
}

impl Problem for Attention {
    /// `(q, k, v, o, lse, kv_group, seq, dim, maps)`: `lse` null, or `[heads][seq]` floats for
    /// each query row's log-sum-exp (log2 units of the scaled scores: what the backward pass
    /// reads); `maps` the tensor maps of Q, K and V for the TMA rung (null where there are none;
    /// the other rungs ignore it).
    type Args = (
        *const Bf16,
        *const Bf16,
        *const Bf16,
        *mut Bf16,
        *mut f32,
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

/// Every key, at any head dimension that is a multiple of 8 up to [`MAX_ANY_DIM`] (the rows
/// staged 64 or 128 wide, zeros past the dimension): `mma.sync` only, a family of its own so that
/// its sizes are its own.
pub const ANY_DIM_FAMILY: Family<Attention> = Family::new("attention_any_dim", &[flash::KERNEL_ANY_DIM]);

/// [`ANY_DIM_FAMILY`] with the causal mask.
pub const ANY_DIM_CAUSAL_FAMILY: Family<Attention> =
    Family::new("attention_any_dim_causal", &[flash::KERNEL_ANY_DIM_CAUSAL]);

/// Keys up to the query's own position, for queries fewer than the keys (SDPA's top-left mask).
pub const DECODE_FAMILY: Family<Decode> = Family::new("attention_decode", &[decode::KERNEL]);

/// [`DECODE_FAMILY`] with the causal mask.
pub const DECODE_CAUSAL_FAMILY: Family<Decode> = Family::new("attention_decode_causal", &[decode::KERNEL_CAUSAL]);

/// Flash-decoding's second pass, a family of its own so that its tests and timings are its own.
pub const COMBINE_FAMILY: Family<Decode> = Family::new("attention_decode_combine", &[combine::KERNEL]);

/// Attention of `queries` query rows per head over `keys` keys, K and V shared by groups of query
/// heads: Q and O `[batch][heads][queries][dim]`, K and V `[batch][heads_kv][keys][dim]`, bf16.
/// The query heads of a KV head are consecutive, so the problem is `kv_heads` (batch × heads_kv)
/// blocks of `rows` (group × queries) query rows, each over its KV head's keys. The keys a row may
/// attend to (all, or with the causal mask the first `queries`) are cut into `splits` runs of
/// `chunk` keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decode {
    pub kv_heads: u32,
    pub rows: u32,
    pub queries: u32,
    pub keys: u32,
    pub dim: u32,
    pub causal: bool,
    pub chunk: u32,
    pub splits: u32,
}

impl Problem for Decode {
    /// `(q, k, v, o, partial, kv_heads, rows, queries, keys, dim, chunk, splits)`: `partial` the
    /// runs' outputs and log-sum-exps ([`Decode::partial_len`] floats; unread with one run).
    type Args = (
        *const Bf16,
        *const Bf16,
        *const Bf16,
        *mut Bf16,
        *mut f32,
        u32,
        u32,
        u32,
        u32,
        u32,
        u32,
        u32,
    );
}

impl Decode {
    /// Keys a query row may attend to: all, or with the causal mask (top-left) the first
    /// `queries`.
    #[inline(always)]
    pub const fn visible_keys(&self) -> u32 {
        if self.causal && self.queries < self.keys {
            self.queries
        } else {
            self.keys
        }
    }

    /// Tiles of 16 query rows per KV head.
    #[inline(always)]
    pub const fn row_tiles(&self) -> u32 {
        self.rows.div_ceil(decode::ROWS)
    }

    /// Warps of the first pass: one per KV head, run and row tile.
    #[inline(always)]
    pub const fn warps(&self) -> u32 {
        self.kv_heads * self.splits * self.row_tiles()
    }

    /// Where the runs' log-sum-exps start in `partial`: after their outputs.
    #[inline(always)]
    pub const fn lse_at(&self) -> u32 {
        self.kv_heads * self.rows * self.splits * self.dim
    }

    /// Floats of `partial`: each row's output and log-sum-exp for each run; none with one run.
    pub const fn partial_len(&self) -> usize {
        if self.splits == 1 {
            0
        } else {
            self.kv_heads as usize * self.rows as usize * self.splits as usize * (self.dim as usize + 1)
        }
    }
}

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

/// [`log2_scale`] for head dimension `dim` staged `D` wide: the constant where they are equal (the
/// kernels at 64 and 128), else from `sqrt.rn` (the any-dimension kernels).
#[inline(always)]
pub(crate) fn log2_scale_of<const D: u32>(dim: u32) -> f32 {
    if dim == D {
        log2_scale(D)
    } else {
        core::f32::consts::LOG2_E * (1.0 / ptxkit::device::sqrt(dim as f32))
    }
}

/// Starts copying rows `first..first + rows` of a `[..][dim]` bf16 matrix into staged rows
/// `at..at + rows`, `D` wide, zeros from row `end` on and past column `dim` (a multiple of 8 up to
/// `D`): member `me`'s chunks of a group of `GROUP` threads (a block, or a warp) sharing the copy.
///
/// # Safety
/// `matrix` holds rows `..end` of dim elements, 16-byte aligned; the staged rows lie in `tiles`;
/// `me < GROUP`.
#[inline(always)]
pub(crate) unsafe fn stage_padded<const D: u32, const GROUP: u32>(
    tiles: &ptxkit::device::SharedMatrix<u32>,
    (matrix, dim): (*const Bf16, u32),
    (first, rows): (u32, u32),
    end: u32,
    (at, me): (u32, u32),
) {
    const CHUNK: u32 = 8;
    ptxkit::device::unrolled_to(rows * D / CHUNK / GROUP, |i| {
        let e = me + i * GROUP;
        let (r, c) = (e / (D / CHUNK), e % (D / CHUNK));
        let inside = first + r < end && c * CHUNK < dim;
        // SAFETY: the source is inside the matrix where read (rows below end, chunks below dim),
        // 16-byte aligned (dim, the chunk and the matrix are); the destination inside the tiles.
        unsafe {
            let src = if inside {
                matrix.add(((first + r) * dim + c * CHUNK) as usize)
            } else {
                matrix
            };
            tiles.copy4_async_zero_fill_unchecked(at + r, c * CHUNK / 2, src.cast::<u32>(), 4 * inside as u32);
        }
    });
}

/// The two PTX entries of a rung, every key and causal, with the rung's launch bounds, each running the rung's
/// `run::<D, CAUSAL>(q, k, v, o, lse, seq, kv_group, maps)` for the head dimension it is given (64 or 128: the
/// host checks it). `$kernel` is `kernel` or `kernel_sm90a`. The query heads are the grid's y;
/// `kv_group` of them share one head of K and V.
macro_rules! entries {
    ([$($bounds:tt)*], $kernel:ident, $($run:ident)::+, $(#[$all:meta])* $name:ident, $(#[$masked:meta])* $causal:ident) => {
        ptxkit::$kernel! {
            #[launch_bounds($($bounds)*)]
            $(#[$all])*
            pub unsafe fn $name(q: *const ptxkit::device::mma::Bf16, k: *const ptxkit::device::mma::Bf16, v: *const ptxkit::device::mma::Bf16, o: *mut ptxkit::device::mma::Bf16, lse: *mut f32, kv_group: u32, seq: u32, dim: u32, maps: *const $crate::attention::TensorMaps) {
                // SAFETY: the kernel's contract.
                unsafe {
                    if dim == 64 {
                        $($run)::+::<64, false>(q, k, v, o, lse, seq, kv_group, maps)
                    } else {
                        $($run)::+::<128, false>(q, k, v, o, lse, seq, kv_group, maps)
                    }
                }
            }
        }

        ptxkit::$kernel! {
            #[launch_bounds($($bounds)*)]
            $(#[$masked])*
            pub unsafe fn $causal(q: *const ptxkit::device::mma::Bf16, k: *const ptxkit::device::mma::Bf16, v: *const ptxkit::device::mma::Bf16, o: *mut ptxkit::device::mma::Bf16, lse: *mut f32, kv_group: u32, seq: u32, dim: u32, maps: *const $crate::attention::TensorMaps) {
                // SAFETY: the kernel's contract.
                unsafe {
                    if dim == 64 {
                        $($run)::+::<64, true>(q, k, v, o, lse, seq, kv_group, maps)
                    } else {
                        $($run)::+::<128, true>(q, k, v, o, lse, seq, kv_group, maps)
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
        if !DIMS.contains(&(dim as u32)) || dim > u32::MAX as usize {
            return Err(ptxkit::InvalidSize {
                problem: "attention",
                reason: format!(
                    "the head dimension must be 64 or 128 (got {dim}): the kernels are built for those \
                     (attention_any_dim takes any multiple of 8 up to {MAX_ANY_DIM})"
                ),
            });
        }
        Attention::checked(heads, seq, dim)
    }

    /// [`Attention::grouped`] for [`ANY_DIM_FAMILY`] and [`ANY_DIM_CAUSAL_FAMILY`]: `dim` any
    /// multiple of 8 from 8 to [`MAX_ANY_DIM`].
    pub fn any_dim(heads: usize, kv_group: usize, seq: usize, dim: usize) -> Result<Self, ptxkit::InvalidSize> {
        if !(dim.is_multiple_of(8) && (8..=MAX_ANY_DIM as usize).contains(&dim)) {
            return Err(ptxkit::InvalidSize {
                problem: "attention",
                reason: format!(
                    "the head dimension must be a multiple of 8 from 8 to {MAX_ANY_DIM} (got {dim}): rows are \
                     copied 16 bytes at a time and staged at most {MAX_ANY_DIM} wide"
                ),
            });
        }
        Attention::checked(heads, seq, dim)?.with_group(heads, kv_group)
    }

    /// Every check of [`Attention::new`] but the head dimension's.
    fn checked(heads: usize, seq: usize, dim: usize) -> Result<Self, ptxkit::InvalidSize> {
        let invalid = |reason: String| ptxkit::InvalidSize {
            problem: "attention",
            reason,
        };
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
            kv_group: 1,
        })
    }

    /// [`Attention::new`] with each `kv_group` consecutive query heads sharing a head of K and V:
    /// `kv_group` at least 1 and dividing `heads`.
    pub fn grouped(heads: usize, kv_group: usize, seq: usize, dim: usize) -> Result<Self, ptxkit::InvalidSize> {
        Attention::new(heads, seq, dim)?.with_group(heads, kv_group)
    }

    /// This problem with each `kv_group` consecutive query heads sharing a head of K and V.
    fn with_group(self, heads: usize, kv_group: usize) -> Result<Self, ptxkit::InvalidSize> {
        if kv_group == 0 || !heads.is_multiple_of(kv_group) {
            return Err(ptxkit::InvalidSize {
                problem: "attention",
                reason: format!(
                    "the query heads per KV head ({kv_group}) must divide the heads ({heads}): each KV head serves a \
                     group of query heads"
                ),
            });
        }
        Ok(Attention {
            kv_group: kv_group as u32,
            ..self
        })
    }

    /// Elements of each of Q and O.
    pub fn len(&self) -> usize {
        self.heads as usize * self.seq as usize * self.dim as usize
    }

    /// Elements of each of K and V.
    pub fn kv_len(&self) -> usize {
        self.len() / self.kv_group as usize
    }

    /// Heads of K and V.
    pub fn kv_heads(&self) -> u32 {
        self.heads / self.kv_group
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

#[cfg(not(target_arch = "nvptx64"))]
impl Decode {
    /// `batch` × `heads` query heads of `queries` rows over `batch` × `heads_kv` KV heads of `keys`
    /// keys, `dim` wide, the keys cut into runs for about `warps_wanted` warps in all (the device's
    /// resident warps, a few times over): no more runs than the keys have tiles, and runs long
    /// enough that their partial outputs cost at most an eighth of the bytes of K and V they read.
    /// Checks every extent (`dim` a multiple of 8 up to [`MAX_ANY_DIM`]: rows staged 64 or 128
    /// wide, zeros past it) and the kernels' 32-bit indexing.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        (batch, heads, heads_kv): (usize, usize, usize),
        queries: usize,
        keys: usize,
        dim: usize,
        causal: bool,
        warps_wanted: usize,
    ) -> Result<Self, ptxkit::InvalidSize> {
        let invalid = |reason: String| ptxkit::InvalidSize {
            problem: "attention_decode",
            reason,
        };
        if !(dim.is_multiple_of(8) && (8..=MAX_ANY_DIM as usize).contains(&dim)) {
            return Err(invalid(format!(
                "the head dimension must be a multiple of 8 from 8 to {MAX_ANY_DIM} (got {dim}): rows are copied 16 \
                 bytes at a time and staged at most {MAX_ANY_DIM} wide"
            )));
        }
        for (name, value) in [
            ("batch", batch),
            ("heads", heads),
            ("heads_kv", heads_kv),
            ("queries", queries),
            ("keys", keys),
        ] {
            if value == 0 {
                return Err(invalid(format!("{name} must be at least 1 (got 0)")));
            }
        }
        if !heads.is_multiple_of(heads_kv) {
            return Err(invalid(format!(
                "heads ({heads}) must be a multiple of heads_kv ({heads_kv}): each KV head serves a group of query heads"
            )));
        }
        let kv_heads = batch.checked_mul(heads_kv);
        let rows = (heads / heads_kv).checked_mul(queries);
        let too_big = |n: Option<usize>| n.is_none_or(|n| n > u32::MAX as usize);
        let q_len = kv_heads
            .zip(rows)
            .and_then(|(h, r)| h.checked_mul(r))
            .and_then(|n| n.checked_mul(dim));
        let kv_len = kv_heads
            .and_then(|h| h.checked_mul(keys))
            .and_then(|n| n.checked_mul(dim));
        if too_big(q_len) || too_big(kv_len) {
            return Err(invalid(format!(
                "Q (batch × heads × queries × dim = {batch} × {heads} × {queries} × {dim}) and K (batch × heads_kv × keys × dim = {batch} × {heads_kv} × {keys} × {dim}), each at most {} elements: the kernels index with 32 bits",
                u32::MAX
            )));
        }
        let (kv_heads, rows) = (kv_heads.unwrap() as u32, rows.unwrap() as u32);
        let mut problem = Decode {
            kv_heads,
            rows,
            queries: queries as u32,
            keys: keys as u32,
            dim: dim as u32,
            causal,
            chunk: 0,
            splits: 1,
        };
        let tiles = problem.visible_keys().div_ceil(decode::KEYS) as usize;
        let units = kv_heads as usize * problem.row_tiles() as usize;
        // A run's partial outputs (written and read back: 8 bytes per row and column) against its
        // K and V (4 bytes per key and column): at most an eighth when a run has 16·rows keys.
        let busy_rows = rows.min(decode::ROWS) as usize;
        let shortest = (16 * busy_rows).div_ceil(decode::KEYS as usize).max(1);
        let splits = warps_wanted.div_ceil(units).clamp(1, tiles.div_ceil(shortest).max(1));
        let run_tiles = tiles.div_ceil(splits);
        problem.chunk = (run_tiles * decode::KEYS as usize) as u32;
        problem.splits = tiles.div_ceil(run_tiles) as u32;
        if too_big(Some(problem.warps_wide())) || too_big(Some(problem.partial_len())) {
            return Err(invalid(format!(
                "{kv_heads} KV heads × {rows} rows in {} runs need more than 2^32 warps or partial sums",
                problem.splits
            )));
        }
        Ok(problem)
    }

    /// [`Decode::warps`] without overflow.
    fn warps_wide(&self) -> usize {
        self.kv_heads as usize * self.splits as usize * self.row_tiles() as usize
    }

    /// Elements of Q and of O.
    pub fn query_len(&self) -> usize {
        self.kv_heads as usize * self.rows as usize * self.dim as usize
    }

    /// Elements of K and of V.
    pub fn key_len(&self) -> usize {
        self.kv_heads as usize * self.keys as usize * self.dim as usize
    }

    /// Query heads per KV head.
    pub fn group(&self) -> u32 {
        self.rows / self.queries
    }

    /// Floating-point operations of the two products over the keys each row attends to (the
    /// causal mask's triangle counted as it is, not halved).
    pub fn flops(&self) -> f64 {
        let pairs: u64 = if self.causal {
            let q = self.queries as u64;
            let k = self.keys as u64;
            // Query i attends to min(i + 1, keys) keys.
            let full = q.min(k);
            full * (full + 1) / 2 + (q - full) * k
        } else {
            self.queries as u64 * self.keys as u64
        };
        4.0 * self.kv_heads as f64 * self.group() as f64 * pairs as f64 * self.dim as f64
    }

    /// Bytes the first pass must read and write: Q, K, V and O once.
    pub fn bytes(&self) -> f64 {
        2.0 * (2 * self.query_len() + 2 * self.kv_heads as usize * self.visible_keys() as usize * self.dim as usize)
            as f64
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
        assert!(reason(Attention::grouped(6, 4, 16, 64)).contains("(4) must divide the heads (6)"));
        assert!(reason(Attention::grouped(6, 0, 16, 64)).contains("(0)"));
        // Any multiple of 8 up to 128 for the any-dimension families, and nothing else.
        assert!(reason(Attention::new(2, 3, 96)).contains("attention_any_dim"));
        for dim in [0, 4, 100, 136] {
            assert!(reason(Attention::any_dim(2, 1, 3, dim)).contains(&format!("got {dim}")));
        }
        assert_eq!(Attention::any_dim(4, 2, 3, 40).unwrap().kv_len(), 2 * 3 * 40);
        assert!(reason(Attention::any_dim(6, 4, 16, 80)).contains("(4) must divide the heads (6)"));
        let grouped = Attention::grouped(8, 4, 3, 64).unwrap();
        assert_eq!(
            (grouped.len(), grouped.kv_len(), grouped.kv_heads()),
            (8 * 3 * 64, 2 * 3 * 64, 2)
        );
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

    #[test]
    fn decode_runs_cover_the_visible_keys_in_whole_tiles_and_stay_long_enough() {
        // One sequence of 4096 keys, GQA 32/8, one token: 8 KV heads of 4 rows; runs of at least
        // 64 keys (16 × 4 rows).
        let p = Decode::new((1, 32, 8), 1, 4096, 128, false, 1024).unwrap();
        assert_eq!((p.kv_heads, p.rows, p.row_tiles()), (8, 4, 1));
        assert_eq!(p.chunk % decode::KEYS, 0);
        assert!(p.chunk >= 64 && p.splits * p.chunk >= 4096 && (p.splits - 1) * p.chunk < 4096);
        assert_eq!(p.splits, 64);
        // Plenty of work already: one run.
        let p = Decode::new((16, 64, 8), 16, 4096, 128, false, 1024).unwrap();
        assert_eq!((p.splits, p.partial_len()), (1, 0));
        // The causal mask (top-left) leaves 3 keys to 3 queries: one tile.
        let p = Decode::new((1, 4, 4), 3, 100_000, 64, true, 1024).unwrap();
        assert_eq!((p.visible_keys(), p.splits, p.chunk), (3, 1, 32));
        // Every key in its own tile's run when asked for many warps.
        let p = Decode::new((1, 1, 1), 1, 65, 64, false, 1 << 20).unwrap();
        assert_eq!((p.splits, p.chunk), (3, 32));
        assert_eq!(p.partial_len(), 3 * 65);
        assert_eq!(p.lse_at(), 3 * 64);
    }

    #[test]
    fn decode_refuses_ungrouped_heads_zeros_other_dims_and_overflow_naming_the_value() {
        let reason = |r: Result<Decode, ptxkit::InvalidSize>| r.unwrap_err().reason;
        assert!(reason(Decode::new((1, 6, 4), 1, 8, 64, false, 1)).contains("multiple of heads_kv (4)"));
        assert!(reason(Decode::new((1, 4, 4), 0, 8, 64, false, 1)).contains("queries must be at least 1"));
        assert!(reason(Decode::new((1, 4, 4), 1, 0, 64, false, 1)).contains("keys must be at least 1"));
        for dim in [0, 4, 100, 136] {
            assert!(reason(Decode::new((1, 4, 4), 1, 8, dim, false, 1)).contains(&format!("got {dim}")));
        }
        assert_eq!(Decode::new((1, 4, 4), 1, 8, 96, false, 1).unwrap().dim, 96);
        assert!(reason(Decode::new((1, 8, 8), 1, 1 << 23, 128, false, 1)).contains("32 bits"));
        assert_eq!(Decode::new((2, 8, 2), 3, 5, 64, false, 1).unwrap().group(), 4);
    }

    #[test]
    fn decode_flops_count_the_top_left_triangle() {
        // 3 queries over 5 keys, causal: 1 + 2 + 3 pairs.
        let p = Decode::new((1, 1, 1), 3, 5, 64, true, 1).unwrap();
        assert_eq!(p.flops(), 4.0 * 6.0 * 64.0);
        // 7 queries over 5 keys: 1 + 2 + 3 + 4 + 5 + 5 + 5.
        let p = Decode::new((1, 1, 1), 7, 5, 64, true, 1).unwrap();
        assert_eq!(p.flops(), 4.0 * 25.0 * 64.0);
    }
}
