//! Sum of n f32: the classic reduction ladder, one idea per file, each step removing what held the
//! one before it back.
//!
//! * [`interleaved`]: a tree in shared memory, the threads whose index is a multiple of 2s adding
//!   at step s: half the warp idles at the first step, and warps diverge at every one;
//! * [`strided`]: the same tree, with the working threads packed (thread t adds at 2st): no
//!   divergence, but at step s a warp's accesses are 2s words apart (bank conflicts);
//! * [`sequential`]: the tree folded in halves (thread t adds t + s): contiguous accesses, no
//!   conflicts, but half the threads idle from the first step;
//! * [`first_add`]: each thread adds two elements as it loads them: half the blocks;
//! * [`warp_shuffle`]: the last 32 partial sums added by shuffles inside a warp, without barriers;
//! * [`vectorized`]: a grid sized from the SM count, each thread summing many 16-byte loads before
//!   one shuffle reduction per warp;
//! * [`one_pass`]: the same, with the grid's partial sums added by the block that finishes last
//!   (a ticket taken with an atomic after a fence): one launch for any n.
//!
//! Every kernel writes one sum per block; all but [`one_pass`] need further launches over those
//! partial sums until one is left (the host's [`passes`] says how many). Each kernel adds in an
//! order fixed by n and the launch shape, so every variant gives the same bits on every run for the
//! same input (none adds floats with atomics).
//!
//! A new variant is a file here, its line in [`FAMILY`], and its CUDA C twin in `benches/reference/cuda_c/`.

pub mod first_add;
pub mod interleaved;
pub mod one_pass;
pub mod sequential;
pub mod strided;
pub mod vectorized;
pub mod warp_shuffle;

use ptxkit::device::{
    GlobalSlice, GlobalSliceMut, SharedSlice, WARP_SIZE, lane_id, max_nan, shfl_xor, sync_threads, thread_idx,
};
use ptxkit::{Family, Problem};

/// Threads per block, for every variant.
pub const THREADS: u32 = 256;
/// Warps per block.
pub const WARPS: u32 = THREADS / WARP_SIZE;

/// One sum over `n` elements. `resident_blocks` is what the grid-sized variants launch at most:
/// the blocks the device keeps resident at once (SMs × blocks per SM), chosen by the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reduce {
    pub n: u32,
    pub resident_blocks: u32,
}

impl Problem for Reduce {
    /// `(input, output, ticket, n)`: views of the n elements, of the sums (`output[b]` gets block
    /// b's; for [`one_pass`], `output[0]` the total and `output[1 + b]` the partial sums) and of
    /// a u32 that is zero before the launch and after it (only [`one_pass`] uses it).
    type Args = (GlobalSlice<f32>, GlobalSliceMut<f32>, GlobalSliceMut<u32>, u32);
}

/// Every reduction kernel, in ladder order: the registry's list.
pub const FAMILY: Family<Reduce> = Family::new(
    "reduce",
    &[
        interleaved::KERNEL,
        strided::KERNEL,
        sequential::KERNEL,
        first_add::KERNEL,
        warp_shuffle::KERNEL,
        vectorized::KERNEL,
        one_pass::KERNEL,
    ],
);

/// The maximum of n f32, in one pass: the registry's list (the sums' one-pass body, combining
/// with the larger value; a maximum is exact in any order).
pub const MAX_FAMILY: Family<Reduce> = Family::new("reduce_max", &[one_pass::MAX_KERNEL]);

/// How a kernel of the family reaches the total.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Passes {
    /// One sum per block: launch again over the partial sums until one is left.
    UntilOne,
    /// One launch writes the total to `output[0]`.
    One,
}

/// How `entry`, a kernel of [`FAMILY`] or [`MAX_FAMILY`], reaches the total.
pub fn passes(entry: &str) -> Passes {
    if entry == one_pass::KERNEL.entry() || entry == one_pass::MAX_KERNEL.entry() {
        Passes::One
    } else {
        Passes::UntilOne
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl Reduce {
    /// At least one element, at most u32::MAX; at least one resident block.
    pub fn new(n: usize, resident_blocks: u32) -> Result<Self, ptxkit::InvalidSize> {
        Ok(Reduce {
            n: crate::size::element_count("reduce", "n", n)?,
            resident_blocks: resident_blocks.clamp(1, 1 << 16),
        })
    }

    /// The same reduction over `n` partial sums.
    pub fn over(&self, n: u32) -> Reduce {
        Reduce { n, ..*self }
    }
}

/// The folded tree over one partial sum per thread in `sums`: at step s (128, 64, … down to but
/// not including `until`) thread t < s adds the sum at t + s. Afterwards `sums[0..2·until]` (for
/// `until` = 0: `sums[0]`) hold the partial sums left. Every thread must call it (it has barriers).
///
/// # Safety
/// The block has [`THREADS`] threads and `sums` [`THREADS`] elements, each staged before the call
/// and followed by a barrier.
#[inline(always)]
pub unsafe fn fold(sums: SharedSlice<f32>, until: u32) {
    let t = thread_idx().x;
    let mut s = THREADS / 2;
    while s > until {
        if t < s {
            // SAFETY: t + s < 2s ≤ THREADS.
            unsafe { sums.set_unchecked(t, sums.get_unchecked(t) + sums.get_unchecked(t + s)) };
        }
        // Step s is complete before step s/2 reads its sums.
        sync_threads();
        s /= 2;
    }
}

/// How a reduction combines two values, and the value that changes nothing.
pub trait Combine {
    const IDENTITY: f32;
    fn combine(a: f32, b: f32) -> f32;
}

/// Addition: the sums.
pub struct Sum;

impl Combine for Sum {
    const IDENTITY: f32 = 0.0;
    #[inline(always)]
    fn combine(a: f32, b: f32) -> f32 {
        a + b
    }
}

/// The larger of two values: the maxima (exact, whatever the order). NaN when either is, as
/// `torch.amax` gives it: `b > a` alone would keep or drop a NaN by the order it came in.
pub struct Max;

impl Combine for Max {
    const IDENTITY: f32 = f32::NEG_INFINITY;
    #[inline(always)]
    fn combine(a: f32, b: f32) -> f32 {
        max_nan(a, b)
    }
}

/// `value` combined over the 32 lanes of the warp, in every lane: a butterfly of xor-shuffles, the
/// same order in every lane (so every lane holds the same bits).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn warp_combine<O: Combine>(value: f32) -> f32 {
    group_combine::<O, WARP_SIZE>(value)
}

/// `value` combined over the `G` lanes of this lane's group (the warp cut into aligned groups of a
/// power of two lanes), in every lane of the group: the butterfly of [`warp_combine`] over the
/// group's lanes alone. Every lane of the warp must call it.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn group_combine<O: Combine, const G: u32>(mut value: f32) -> f32 {
    const { assert!(G.is_power_of_two() && G <= WARP_SIZE) };
    let mut mask = G / 2;
    while mask > 0 {
        value = O::combine(value, shfl_xor(value, mask));
        mask /= 2;
    }
    value
}

/// The sum of `value` over the 32 lanes of the warp, in every lane ([`warp_combine`]).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn warp_sum(value: f32) -> f32 {
    warp_combine::<Sum>(value)
}

/// `value` combined over the block's [`THREADS`] threads, valid in thread 0: each warp by
/// shuffles, the eight warps' results through `partials` (at least 8 elements), then warp 0
/// combines them. Every thread of the block must call it (it has a barrier).
///
/// # Safety
/// The block has [`THREADS`] threads; `partials` is not in use by other code between the barriers.
#[inline(always)]
pub unsafe fn block_combine<O: Combine>(partials: SharedSlice<f32>, value: f32) -> f32 {
    let warp = thread_idx().x / WARP_SIZE;
    let value = warp_combine::<O>(value);
    if lane_id() == 0 {
        // SAFETY: warp < WARPS ≤ partials.len() (the caller's promise).
        unsafe { partials.set_unchecked(warp, value) };
    }
    // Every warp's result is staged before warp 0 reads them.
    sync_threads();
    let mut total = O::IDENTITY;
    if warp == 0 {
        let lane = lane_id();
        // SAFETY: lane < WARPS is inside `partials`.
        let mine = if lane < WARPS {
            unsafe { partials.get_unchecked(lane) }
        } else {
            O::IDENTITY
        };
        total = warp_combine::<O>(mine);
    }
    total
}

/// The sum of `value` over the block, valid in thread 0 ([`block_combine`]).
///
/// # Safety
/// As for [`block_combine`].
#[inline(always)]
pub unsafe fn block_sum(sums: SharedSlice<f32>, value: f32) -> f32 {
    // SAFETY: forwarded from the caller.
    unsafe { block_combine::<Sum>(sums, value) }
}
