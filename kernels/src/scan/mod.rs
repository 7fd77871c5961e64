//! Prefix sums (scans) of n f32, inclusive or exclusive, one idea per file:
//!
//! * [`hillis_steele`]: a 256-element tile scanned in shared memory in 8 steps, each adding the
//!   value `d` to the left (double-buffered); n·log n additions;
//! * [`blelloch`]: a 512-element tile scanned work-efficiently (up-sweep, down-sweep), its shared
//!   indices padded by one word per 32 so that the strided steps hit 32 banks;
//! * [`warp_shuffle`]: 8192 elements per tile, 32 per thread in registers (eight runs of 4, striped
//!   across the warp for 16-byte accesses), the runs' totals scanned with shuffles inside each warp
//!   and the warps' totals through shared memory;
//! * [`look_back`]: the warp-shuffle tile in one pass over the array: each tile publishes its total,
//!   then finds its prefix by looking back at the tiles before it (decoupled look-back, Merrill &
//!   Garland 2016), so every element is read once and written once;
//! * [`look_back_warp`]: the same, the look-back done by a whole warp, 32 predecessors per step;
//! * [`ordered`]: the same with tiles in block order instead of by ticket (as CUB's scan);
//! * [`pipelined`]: the warp look-back in resident blocks that take tile after tile, copying the
//!   next tile into shared memory (`cp.async`) while they scan, look back for and store the current;
//! * [`backoff`]: the warp look-back pausing (`nanosleep`) between polls of an incomplete window;
//! * [`staged`]: the ordered warp look-back with the tile staged in shared memory (`cp.async`), so
//!   that no register holds it while the block waits: six blocks per SM instead of four.
//!
//! The first three scan tiles independently: the device-wide scan takes three phases (tile scans
//! and tile totals; a scan of the totals, recursively; the totals' prefixes added back). The host
//! runs them ([`Passes`]); each is a launch of the same kernel with [`Scan::phase`] set.
//!
//! A new variant is a file here, its line in [`FAMILY`], and its CUDA C twin in `benches/reference/cuda_c/`.

pub mod backoff;
pub mod blelloch;
pub mod hillis_steele;
pub mod integer;
pub mod look_back;
pub mod look_back_warp;
pub mod ordered;
pub mod pipelined;
pub mod staged;
pub mod warp_shuffle;

use core::marker::PhantomData;
use ptxkit::device::{
    Float4, GlobalSlice, GlobalSliceMut, SharedSlice, SharedWord, WARP_SIZE, WarpWord, lane_id, shfl_idx, shfl_up,
    shfl_xor, sync_threads, thread_idx, unrolled,
};
use ptxkit::{Family, Problem};

/// Threads per block, for every variant.
pub const THREADS: u32 = 256;
/// Warps per block.
pub const WARPS: u32 = THREADS / WARP_SIZE;

/// What a scan adds: f32 (rounded sums) or i32 (exact sums, wrapping past the 32-bit range as the
/// GPU's `add.s32` does).
pub trait ScanElement: WarpWord + SharedWord + 'static {
    const ZERO: Self;
    /// The scan's addition.
    fn plus(self, other: Self) -> Self;
    /// Four elements from the bits of a 16-byte load (a load moves bits, whatever their type).
    fn from_float4(four: Float4) -> [Self; 4];
    /// The 16-byte store of four elements.
    fn to_float4(four: [Self; 4]) -> Float4;
}

impl ScanElement for f32 {
    const ZERO: Self = 0.0;
    #[inline(always)]
    fn plus(self, other: Self) -> Self {
        self + other
    }
    #[inline(always)]
    fn from_float4(four: Float4) -> [Self; 4] {
        four.0
    }
    #[inline(always)]
    fn to_float4(four: [Self; 4]) -> Float4 {
        Float4(four)
    }
}

impl ScanElement for i32 {
    const ZERO: Self = 0;
    #[inline(always)]
    fn plus(self, other: Self) -> Self {
        self.wrapping_add(other)
    }
    #[inline(always)]
    fn from_float4(four: Float4) -> [Self; 4] {
        four.0.map(|x| x.to_bits() as i32)
    }
    #[inline(always)]
    fn to_float4(four: [Self; 4]) -> Float4 {
        Float4(four.map(|x| f32::from_bits(x as u32)))
    }
}

/// One launch of a scan kernel over `n` elements of `T`.
pub struct Scan<T = f32> {
    pub n: u32,
    /// Exclusive (`out[i]` = the sum before i) or inclusive (the sum up to and including i).
    pub exclusive: bool,
    /// Which phase of the variant's [`Passes`] this launch is.
    pub phase: u32,
    pub element: PhantomData<fn() -> T>,
}

// By hand, so that they hold for every element type (derives would ask T for them).
impl<T> Clone for Scan<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Scan<T> {}
impl<T> PartialEq for Scan<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.n, self.exclusive, self.phase) == (other.n, other.exclusive, other.phase)
    }
}
impl<T> Eq for Scan<T> {}
impl<T> core::fmt::Debug for Scan<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Scan")
            .field("n", &self.n)
            .field("exclusive", &self.exclusive)
            .field("phase", &self.phase)
            .finish()
    }
}

impl<T: ScanElement> Problem for Scan<T> {
    /// `(input, output, scratch, n, exclusive, phase)`, views each. `scratch` is what the phase
    /// needs besides the arrays (see each variant): tile totals, their prefixes, or tile status
    /// words.
    type Args = (GlobalSlice<T>, GlobalSliceMut<T>, GlobalSliceMut<T>, u32, u32, u32);
}

/// Every scan kernel, in ladder order: the registry's list.
pub const FAMILY: Family<Scan> = Family::new(
    "scan",
    &[
        hillis_steele::KERNEL,
        blelloch::KERNEL,
        warp_shuffle::KERNEL,
        look_back::KERNEL,
        look_back_warp::KERNEL,
        ordered::KERNEL,
        pipelined::KERNEL,
        backoff::KERNEL,
        staged::KERNEL,
    ],
);

/// How a variant scans a whole array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Passes {
    /// Phase [`TILES`]: scan each tile, its total into `scratch[tile]`; then the totals are scanned
    /// (exclusive, recursively), and phase [`ADD_PREFIXES`] adds `scratch[tile]` (now the
    /// prefixes) to every element of the tile.
    ThreePhase,
    /// Phase [`RESET`] clears the tile status words in `scratch`; phase [`SINGLE_PASS`] scans.
    LookBack,
}

/// Three-phase: scan each tile and write its total.
pub const TILES: u32 = 0;
/// Three-phase: add each tile's prefix.
pub const ADD_PREFIXES: u32 = 1;
/// Look-back: clear the status words and the ticket.
pub const RESET: u32 = 0;
/// Look-back: the scan.
pub const SINGLE_PASS: u32 = 1;

/// How `entry`, a kernel of [`FAMILY`] or [`integer::FAMILY`], scans a whole array (host side:
/// kernels never compare names).
#[cfg(not(target_arch = "nvptx64"))]
pub fn passes(entry: &str) -> Passes {
    let single_pass = [
        look_back::KERNEL.entry(),
        look_back_warp::KERNEL.entry(),
        ordered::KERNEL.entry(),
        pipelined::KERNEL.entry(),
        backoff::KERNEL.entry(),
        staged::KERNEL.entry(),
        integer::LOOK_BACK.entry(),
        integer::LOOK_BACK_WARP.entry(),
        integer::LOOK_BACK_PIPELINED.entry(),
        integer::LOOK_BACK_STAGED.entry(),
    ];
    if single_pass.contains(&entry) {
        Passes::LookBack
    } else {
        Passes::ThreePhase
    }
}

/// f32 words of scratch the look-back kernel needs for `tiles` tiles: an 8-byte status per tile
/// and the 8-byte ticket slot.
pub const fn look_back_scratch(tiles: u32) -> u32 {
    2 * (tiles + 1)
}

impl<T> Scan<T> {
    /// A launch over `n` elements in phase `phase` (no checks: see [`Scan::new`]).
    pub const fn at(n: u32, exclusive: bool, phase: u32) -> Self {
        Scan {
            n,
            exclusive,
            phase,
            element: PhantomData,
        }
    }

    /// The same scan's phase `phase`.
    pub fn phase(&self, phase: u32) -> Self {
        Scan { phase, ..*self }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl<T> Scan<T> {
    /// At least one element, at most u32::MAX.
    pub fn new(n: usize, exclusive: bool) -> Result<Self, ptxkit::InvalidSize> {
        Ok(Scan::at(crate::size::element_count("scan", "n", n)?, exclusive, 0))
    }
}

/// The inclusive scan of `value` over the warp's lanes, by shuffles up (Hillis–Steele in
/// registers: lane l adds lane l − d's running sum for d = 1, 2, 4, 8, 16).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn warp_inclusive<T: ScanElement>(mut value: T) -> T {
    let lane = lane_id();
    let mut d = 1;
    while d < WARP_SIZE {
        let below = shfl_up(value, d);
        if lane >= d {
            value = value.plus(below);
        }
        d *= 2;
    }
    value
}

/// The sum of `value` over the warp's lanes, in every lane: a butterfly of xor-shuffles.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn warp_total<T: ScanElement>(mut value: T) -> T {
    let mut mask = WARP_SIZE / 2;
    while mask > 0 {
        value = value.plus(shfl_xor(value, mask));
        mask /= 2;
    }
    value
}

/// Each of the thread's runs' exclusive prefix over the block, and the block's total, for every
/// thread. The block's order is warp by warp, and inside a warp run 0 of every lane, then run 1
/// (the layout of [`warp_shuffle::load_run`]): each run's totals are scanned over the warp with
/// shuffles, then warp 0 scans the warps' totals through `sums` (at least [`WARPS`] + 1 elements).
/// Every thread of the block must call it.
///
/// # Safety
/// The block has [`THREADS`] threads; `sums` is not in use by other code between the barriers.
#[inline(always)]
pub unsafe fn block_exclusive<T: ScanElement>(
    sums: SharedSlice<T>,
    totals: [T; warp_shuffle::RUNS as usize],
) -> ([T; warp_shuffle::RUNS as usize], T) {
    let (t, lane) = (thread_idx().x, lane_id());
    let warp = t / WARP_SIZE;
    // Each run's prefix inside the warp, and the warp's total so far.
    let mut in_warp = [T::ZERO; warp_shuffle::RUNS as usize];
    let mut warp_total = T::ZERO;
    unrolled::<{ warp_shuffle::RUNS }>(|c| {
        let inclusive = warp_inclusive(totals[c as usize]);
        // The lane below's running sum: this run's prefix among the warp's run c, without a
        // subtraction.
        let below = shfl_up(inclusive, 1);
        let before = if lane == 0 { T::ZERO } else { below };
        let all = shfl_idx(inclusive, WARP_SIZE - 1);
        if c == 0 {
            in_warp[0] = before;
            warp_total = all;
        } else {
            in_warp[c as usize] = warp_total.plus(before);
            warp_total = warp_total.plus(all);
        }
    });
    if lane == WARP_SIZE - 1 {
        // SAFETY: warp < WARPS ≤ sums.len().
        unsafe { sums.set_unchecked(warp, warp_total) };
    }
    // Every warp's total is staged before warp 0 scans them.
    sync_threads();
    if warp == 0 {
        // SAFETY: lane < WARPS is inside `sums`.
        let mine = if lane < WARPS {
            unsafe { sums.get_unchecked(lane) }
        } else {
            T::ZERO
        };
        let scanned = warp_inclusive(mine);
        let below = shfl_up(scanned, 1);
        if lane < WARPS {
            // SAFETY: as above; sums[WARPS] takes the block's total. Each lane overwrites only
            // the total it read itself.
            unsafe {
                sums.set_unchecked(lane, if lane == 0 { T::ZERO } else { below });
                if lane == WARPS - 1 {
                    sums.set_unchecked(WARPS, scanned);
                }
            }
        }
    }
    // The warps' prefixes and the total are staged before any thread reads them.
    sync_threads();
    // SAFETY: warp < WARPS and WARPS are inside `sums`.
    let (warp_prefix, block_total) = unsafe { (sums.get_unchecked(warp), sums.get_unchecked(WARPS)) };
    (in_warp.map(|p| warp_prefix.plus(p)), block_total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{at_offset, poisoned};

    /// The single-pass scans read and write 16 bytes at a time only where the arrays allow it:
    /// every pair of base offsets (0–3 floats past a 16-byte boundary), inclusive and exclusive,
    /// over two whole tiles and a partial one. The elements are small integers, so every prefix
    /// is exact in f32 and any order of addition gives the same bits.
    #[test]
    fn the_single_pass_scans_are_exact_at_every_base_offset() {
        let n = 2 * warp_shuffle::TILE as usize + 777;
        let source: Vec<f32> = (0..n).map(|i| ((i * 7919) % 17) as f32 - 8.0).collect();
        let tiles = (n as u32).div_ceil(warp_shuffle::TILE);
        let kernels = FAMILY.kernels.iter().filter(|k| passes(k.entry()) == Passes::LookBack);
        for kernel in kernels {
            for exclusive in [false, true] {
                let mut expected = Vec::with_capacity(n);
                let mut sum = 0.0f32;
                for &x in &source {
                    expected.push(if exclusive { sum } else { sum + x });
                    sum += x;
                }
                for input_offset in 0..4 {
                    for output_offset in 0..4 {
                        let (input, at) = at_offset(&source, input_offset);
                        let input = &input[at];
                        let (mut output, at) = at_offset(&poisoned(n), output_offset);
                        let output = &mut output[at];
                        // u64 words: the statuses are 8-byte aligned.
                        let mut scratch = vec![u64::MAX; look_back_scratch(tiles) as usize / 2];
                        let problem = Scan::at(n as u32, exclusive, RESET);
                        // Three resident blocks: persistent blocks take several tiles each.
                        let device = ptxkit::Occupancy { resident_blocks: 3 };
                        for phase in [RESET, SINGLE_PASS] {
                            let problem = problem.phase(phase);
                            // SAFETY: the vector's words, as twice as many f32.
                            let scratch = unsafe {
                                GlobalSliceMut::from_raw_parts(scratch.as_mut_ptr().cast::<f32>(), 2 * scratch.len())
                            };
                            let args = (
                                GlobalSlice::new(input),
                                GlobalSliceMut::new(output),
                                scratch,
                                problem.n,
                                exclusive as u32,
                                phase,
                            );
                            // SAFETY: both slices hold n floats, the scratch the look-back's words.
                            unsafe { kernel.code.emulate(&kernel.launch_shape(&problem, device), args) }.unwrap();
                        }
                        for (i, (&value, &want)) in output.iter().zip(&expected).enumerate() {
                            assert_eq!(
                                value.to_bits(),
                                want.to_bits(),
                                "{} (exclusive {exclusive}) at offsets {input_offset}/{output_offset}, element {i}",
                                kernel.entry()
                            );
                        }
                    }
                }
            }
        }
    }
}
