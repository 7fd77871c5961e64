//! Attention's backward pass: dQ, dK and dV from Q, K, V, the forward's O and the output's
//! gradient dO (bf16, f32 sums), in FlashAttention-2's formulation without atomics:
//!
//! * [`query`]: a block per 64 query rows. It computes each row's Δ = Σ dO·O and, from a first pass
//!   over the keys, its log-sum-exp; a second pass recomputes P = e^(S − lse), dP = dO·Vᵀ,
//!   dS = P ∘ (dP − Δ) and sums dQ = dS·K/√d. Each row's lse and Δ go out for the second launch.
//! * [`keys`]: a block per 64 keys of one KV head, over every query row of the query heads that
//!   share it: dV = Pᵀ·dO and dK = dSᵀ·Q/√d, from the rows' lse and Δ.
//!
//! Where the forward saved each row's lse in `stats`, [`query`]'s saved form skips the first pass.
//!
//! On sm_90a the pass is three launches on `wgmma` instead, FlashAttention-3's formulation:
//!
//! * [`statistics_wgmma`]: each row's lse from a pass over the keys with the forward's first
//!   product, its Δ, its f32 sums of dQ zeroed ([`statistics`]: the same from [`query`]'s block
//!   without dQ, on `mma.sync`);
//! * [`wgmma`]: a block per 128 keys of one KV head: dK and dV, and its share of dQ = dS·K/√d
//!   added into the sums (`red.global.add`), so the scores are computed once;
//! * [`finish`]: dQ from the sums.
//!
//! Where the forward saved each row's lse (its kernels' `lse` output, written into `stats` ahead
//! of the pass), [`delta`] takes the statistics' place: Δ and the sums zeroed, no score
//! recomputed.
//!
//! Q, dO and dQ are `[heads][seq][dim]`, K, V, dK and dV `[heads / kv_group][seq][dim]`, and
//! `stats` [`AttentionBackward::stats_len`] floats: the lse of each query row (log2 units of the
//! scaled scores, as the forward kernels keep them), then its Δ, then (from [`sums_at`]) the
//! `wgmma` launches' f32 sums of dQ, `[heads][seq][dim]`. The causal mask is the forward's.
//! The two-launch pass is `mma.sync` throughout (sm_80 and later, and the emulator).

pub mod delta;
pub mod finish;
pub mod keys;
pub mod query;
pub mod statistics;
pub mod statistics_wgmma;
pub mod wgmma;

use super::Attention;
use ptxkit::device::mma::{Bf16, mma_bf16_m16n8k16, round_pack_bf16x2};
use ptxkit::device::{MatrixLayout, SharedMatrix, unrolled_to};
use ptxkit::{Family, Problem};

/// The backward pass of one [`Attention`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttentionBackward(pub Attention);

impl Problem for AttentionBackward {
    /// `(q, k, v, o, d_o, dq, dk, dv, stats, kv_group, seq, dim)`.
    type Args = (
        *const Bf16,
        *const Bf16,
        *const Bf16,
        *const Bf16,
        *const Bf16,
        *mut Bf16,
        *mut Bf16,
        *mut Bf16,
        *mut f32,
        u32,
        u32,
        u32,
    );
}

impl AttentionBackward {
    /// Floats of `stats`: each query row's lse and Δ, then the f32 sums of dQ.
    pub fn stats_len(&self) -> usize {
        sums_at(self.0.heads, self.0.seq) + self.0.heads as usize * self.0.seq as usize * self.0.dim as usize
    }
}

/// Where the sums of dQ start in `stats`: after every row's lse and Δ, at a multiple of four
/// floats (16 bytes).
#[inline(always)]
pub const fn sums_at(heads: u32, seq: u32) -> usize {
    (2 * heads as usize * seq as usize).next_multiple_of(4)
}

/// The first launch: dQ, and each row's lse and Δ.
pub const QUERY_FAMILY: Family<AttentionBackward> = Family::new("attention_backward", &[query::KERNEL]);

/// [`QUERY_FAMILY`] with the causal mask.
pub const QUERY_CAUSAL_FAMILY: Family<AttentionBackward> =
    Family::new("attention_backward_causal", &[query::KERNEL_CAUSAL]);

/// [`QUERY_FAMILY`] after a forward that saved each row's lse in `stats`: dQ and each row's Δ.
pub const QUERY_SAVED_FAMILY: Family<AttentionBackward> =
    Family::new("attention_backward_query_saved", &[query::KERNEL_SAVED]);

/// [`QUERY_SAVED_FAMILY`] with the causal mask.
pub const QUERY_SAVED_CAUSAL_FAMILY: Family<AttentionBackward> =
    Family::new("attention_backward_query_saved_causal", &[query::KERNEL_SAVED_CAUSAL]);

/// The second launch: dK and dV.
pub const KEYS_FAMILY: Family<AttentionBackward> = Family::new("attention_backward_keys", &[keys::KERNEL]);

/// [`KEYS_FAMILY`] with the causal mask.
pub const KEYS_CAUSAL_FAMILY: Family<AttentionBackward> =
    Family::new("attention_backward_keys_causal", &[keys::KERNEL_CAUSAL]);

/// The `wgmma` pass's first launch: each row's lse and Δ, the sums of dQ zeroed.
pub const STATISTICS_FAMILY: Family<AttentionBackward> =
    Family::new("attention_backward_statistics", &[statistics::KERNEL]);

/// [`STATISTICS_FAMILY`] with the causal mask.
pub const STATISTICS_CAUSAL_FAMILY: Family<AttentionBackward> =
    Family::new("attention_backward_statistics_causal", &[statistics::KERNEL_CAUSAL]);

/// [`STATISTICS_FAMILY`] on `wgmma` (sm_90a; head dimensions 64 and 128): the `wgmma` pass's
/// first launch there.
pub const STATISTICS_WGMMA_FAMILY: Family<AttentionBackward> =
    Family::new("attention_backward_statistics_wgmma", &[statistics_wgmma::KERNEL]);

/// [`STATISTICS_WGMMA_FAMILY`] with the causal mask.
pub const STATISTICS_WGMMA_CAUSAL_FAMILY: Family<AttentionBackward> = Family::new(
    "attention_backward_statistics_wgmma_causal",
    &[statistics_wgmma::KERNEL_CAUSAL],
);

/// The `wgmma` pass's second launch: dK, dV and the sums of dQ (head dimensions 64 and 128).
pub const WGMMA_FAMILY: Family<AttentionBackward> = Family::new("attention_backward_wgmma", &[wgmma::KERNEL]);

/// [`WGMMA_FAMILY`] with the causal mask.
pub const WGMMA_CAUSAL_FAMILY: Family<AttentionBackward> =
    Family::new("attention_backward_wgmma_causal", &[wgmma::KERNEL_CAUSAL]);

/// The `wgmma` pass's first launch after a forward that saved each row's lse in `stats`: Δ, the
/// sums of dQ zeroed (any head dimension).
pub const DELTA_FAMILY: Family<AttentionBackward> = Family::new("attention_backward_delta", &[delta::KERNEL]);

/// The `wgmma` pass's last launch: dQ from its sums.
pub const FINISH_FAMILY: Family<AttentionBackward> = Family::new("attention_backward_finish", &[finish::KERNEL]);

/// Rows (queries or keys) a block owns, 16 per warp.
pub const ROWS: u32 = 64;
/// Rows per streamed tile.
pub const TILE: u32 = 64;
/// Four warps.
pub const THREADS: u32 = 128;
/// The widest head.
const MAX_DIM: u32 = 128;
/// Words per staged row: the widest head in bf16 pairs plus 16 bytes (eight rows of an `ldmatrix`
/// on eight bank groups).
const PITCH: u32 = MAX_DIM / 2 + 4;

/// The staged rows' layout: `rows` rows of the widest head.
const fn layout(rows: u32) -> MatrixLayout {
    MatrixLayout {
        rows,
        cols: MAX_DIM / 2,
        pitch: PITCH,
    }
}

/// Starts copying rows `first..first + TILE` of a `[seq][dim]` matrix into staged rows `at..`, `D`
/// wide, zeros past `seq` and past `dim`: [`super::flash::stage_narrower`], whose layout and block
/// these are (at `dim` = `D` the kernels' own staging, as before other dims were taken).
///
/// # Safety
/// `matrix` holds seq·dim elements, 16-byte aligned; the staged rows lie in `tiles`.
#[inline(always)]
unsafe fn stage<const D: u32>(
    tiles: &SharedMatrix<u32>,
    (matrix, dim): (*const Bf16, u32),
    seq: u32,
    first: u32,
    at: u32,
) {
    // SAFETY: forwarded.
    unsafe { super::flash::stage_narrower::<D>(tiles, (matrix, dim), seq, (first, TILE), at) }
}

const _: () = assert!(THREADS == super::flash::THREADS && PITCH == super::flash::PITCH);

/// The scores' scale in log2 units (see [`super::log2_scale_of`]), and the plain 1/√d of the
/// gradients of Q and K.
#[inline(always)]
fn scales<const D: u32>(dim: u32) -> (f32, f32) {
    let log2 = super::log2_scale_of::<D>(dim);
    (log2, log2 / core::f32::consts::LOG2_E)
}

/// The two PTX entries of a launch, every key and causal, each running `run::<D, CAUSAL>` for the
/// head dimension it is given: at 64 and 128 with the dimension a constant (their code as before
/// other dims were taken), any other multiple of 8 staged 64 or 128 wide.
macro_rules! backward_entries {
    ($run:ident, $(#[$all:meta])* $name:ident, $(#[$masked:meta])* $causal:ident) => {
        $crate::attention::backward::backward_entries!(@one $run, false, $(#[$all])* $name);
        $crate::attention::backward::backward_entries!(@one $run, true, $(#[$masked])* $causal);
    };
    (@one $run:ident, $flag:literal, $(#[$doc:meta])* $name:ident) => {
        ptxkit::kernel! {
            #[launch_bounds(ptxkit::Dim3::x(super::THREADS), 1)]
            $(#[$doc])*
            #[allow(clippy::too_many_arguments)]
            pub unsafe fn $name(
                q: *const Bf16, k: *const Bf16, v: *const Bf16, o: *const Bf16, d_o: *const Bf16,
                dq: *mut Bf16, dk: *mut Bf16, dv: *mut Bf16, stats: *mut f32, kv_group: u32, seq: u32, dim: u32,
            ) {
                let arrays = super::Arrays { q, k, v, o, d_o, dq, dk, dv, stats };
                // SAFETY: the kernel's contract (dim a multiple of 8 up to 128).
                unsafe {
                    match dim {
                        64 => $run::<64, $flag>(arrays, kv_group, seq, 64),
                        128 => $run::<128, $flag>(arrays, kv_group, seq, 128),
                        narrow if narrow < 64 => $run::<64, $flag>(arrays, kv_group, seq, narrow),
                        wide => $run::<128, $flag>(arrays, kv_group, seq, wide),
                    }
                }
            }
        }
    };
}
pub(crate) use backward_entries;

/// The launches' arrays (see the module).
#[derive(Clone, Copy)]
pub(crate) struct Arrays {
    pub q: *const Bf16,
    pub k: *const Bf16,
    pub v: *const Bf16,
    pub o: *const Bf16,
    pub d_o: *const Bf16,
    pub dq: *mut Bf16,
    pub dk: *mut Bf16,
    pub dv: *mut Bf16,
    pub stats: *mut f32,
}

/// The lanes' `ldmatrix` rows and words (lane l gives row l % 8 of matrix l / 8): for an A
/// fragment (rows +0, +8, then columns +8), and for the B fragments of two 8-row tiles (rows +0 at
/// columns +0 and +8, then rows +8).
#[inline(always)]
fn lanes() -> ((u32, u32), (u32, u32)) {
    let lane = ptxkit::device::lane_id();
    (
        (lane % 8 + 8 * ((lane / 8) % 2), 4 * (lane / 16)),
        (lane % 8 + 8 * (lane / 16), 4 * ((lane / 8) % 2)),
    )
}

/// The products of 16 rows (the A fragments `a`, over D) and the 16 staged rows from `b_at` (the
/// B fragments, by plain `ldmatrix`): two 16×8 tiles.
///
/// # Safety
/// The staged rows lie in `tiles`.
#[inline(always)]
unsafe fn rows_by_rows<const D: u32>(tiles: &SharedMatrix<u32>, a: [[u32; 4]; 8], b_at: u32) -> [[f32; 4]; 2] {
    let (_, (k_row, k_word)) = lanes();
    let mut s = [[0.0f32; 4]; 2];
    unrolled_to(D / 16, |kk| {
        // SAFETY (ldmatrix): staged rows, words + 4 within D / 2, aligned.
        let pair = unsafe { tiles.load_matrices_x4(b_at + k_row, 8 * kk + k_word) };
        s[0] = mma_bf16_m16n8k16(a[kk as usize], [pair[0], pair[1]], s[0]);
        s[1] = mma_bf16_m16n8k16(a[kk as usize], [pair[2], pair[3]], s[1]);
    });
    s
}

/// [`rows_by_rows`] with the A fragments read from the 16 staged rows from `a_at` as they are
/// needed (four registers live, not 32).
///
/// # Safety
/// The staged rows lie in `tiles`.
#[inline(always)]
unsafe fn staged_by_rows<const D: u32>(tiles: &SharedMatrix<u32>, a_at: u32, b_at: u32) -> [[f32; 4]; 2] {
    let ((a_row, a_word), (k_row, k_word)) = lanes();
    let mut s = [[0.0f32; 4]; 2];
    unrolled_to(D / 16, |kk| {
        // SAFETY (ldmatrix): staged rows, words + 4 within D / 2, aligned.
        let (a, pair) = unsafe {
            (
                tiles.load_matrices_x4(a_at + a_row, 8 * kk + a_word),
                tiles.load_matrices_x4(b_at + k_row, 8 * kk + k_word),
            )
        };
        s[0] = mma_bf16_m16n8k16(a, [pair[0], pair[1]], s[0]);
        s[1] = mma_bf16_m16n8k16(a, [pair[2], pair[3]], s[1]);
    });
    s
}

/// The A fragments of 16 staged rows from `at` over D.
///
/// # Safety
/// The staged rows lie in `tiles`.
#[inline(always)]
unsafe fn fragments<const D: u32>(tiles: &SharedMatrix<u32>, at: u32) -> [[u32; 4]; 8] {
    let ((a_row, a_word), _) = lanes();
    let mut f = [[0u32; 4]; 8];
    unrolled_to(D / 16, |kk| {
        // SAFETY (ldmatrix): staged rows, words + 4 within D / 2, aligned.
        f[kk as usize] = unsafe { tiles.load_matrices_x4(at + a_row, 8 * kk + a_word) };
    });
    f
}

/// `acc + a·B`, B the 16 staged rows from `b_at` (the product's k) over D, by `ldmatrix.trans`.
///
/// # Safety
/// The staged rows lie in `tiles`.
#[inline(always)]
unsafe fn accumulate<const D: u32>(
    tiles: &SharedMatrix<u32>,
    mut acc: [[f32; 4]; 16],
    a: [u32; 4],
    b_at: u32,
) -> [[f32; 4]; 16] {
    let ((a_row, a_word), _) = lanes();
    unrolled_to(D / 16, |p| {
        // SAFETY (ldmatrix): staged rows, words + 4 within D / 2, aligned.
        let pair = unsafe { tiles.load_matrices_x4_trans(b_at + a_row, 8 * p + a_word) };
        let j = 2 * p as usize;
        acc[j] = mma_bf16_m16n8k16(a, [pair[0], pair[1]], acc[j]);
        acc[j + 1] = mma_bf16_m16n8k16(a, [pair[2], pair[3]], acc[j + 1]);
    });
    acc
}

/// The A fragment of a 16×16 product from two 16×8 accumulator tiles, rounded to bf16.
#[inline(always)]
fn fragment(x: [[f32; 4]; 2]) -> [u32; 4] {
    [
        round_pack_bf16x2(x[0][0], x[0][1]),
        round_pack_bf16x2(x[0][2], x[0][3]),
        round_pack_bf16x2(x[1][0], x[1][1]),
        round_pack_bf16x2(x[1][2], x[1][3]),
    ]
}

/// Bit-exact bf16 of a pair from global memory as f32s.
#[inline(always)]
fn unpack(pair: u32) -> (f32, f32) {
    (f32::from_bits(pair << 16), f32::from_bits(pair & 0xffff_0000))
}

#[cfg(not(target_arch = "nvptx64"))]
impl AttentionBackward {
    /// The backward pass of `forward`, refusing what the kernels do not take.
    pub fn new(forward: Attention) -> Result<Self, ptxkit::InvalidSize> {
        if 2 * forward.heads as u64 * forward.seq as u64 > u32::MAX as u64 {
            return Err(ptxkit::InvalidSize {
                problem: "attention_backward",
                reason: format!(
                    "2 × heads × seq = 2 × {} × {} statistics are past the kernels' 32-bit index",
                    forward.heads, forward.seq
                ),
            });
        }
        Ok(AttentionBackward(forward))
    }

    /// Floating-point operations: the forward's two products done again (the scores twice), and
    /// the three of the gradients: 2.5× the forward's, as FlashAttention's benchmarks count.
    pub fn flops(&self, causal: bool) -> f64 {
        2.5 * self.0.flops(causal)
    }
}
