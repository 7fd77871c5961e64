//! The shared-memory bank rule, and a probe kernel that measures it.
//!
//! Shared memory has 32 banks of 4 bytes; word `w` lives in bank `w mod 32`. A warp's request is
//! served in wavefronts: per wavefront each bank delivers one 4-byte word (a word several lanes
//! read goes to all of them at once). Accesses wider than 4 bytes are split first: 8-byte accesses
//! in two halves of 16 lanes, 16-byte accesses in four quarters of 8 lanes, each half or quarter
//! served alone. [`wavefronts`] counts them for any warp's addresses; the probe times real ones.

use ptxkit::device::{DynamicShared, Float4, block_idx, clock64, global_store, sync_threads, thread_idx};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};
use ptxkit::{Family, Problem};

/// Banks, and bytes per bank per wavefront.
pub const BANKS: u32 = 32;
pub const BANK_BYTES: u32 = 4;

/// Wavefronts a warp's request takes: `addresses` are the lanes' byte addresses (up to 32, all
/// aligned to `width`), `width` the access size (4, 8 or 16 bytes).
#[cfg(not(target_arch = "nvptx64"))]
pub fn wavefronts(addresses: &[u32], width: u32) -> u32 {
    assert!(matches!(width, 4 | 8 | 16), "shared accesses are 4, 8 or 16 bytes wide");
    let lanes_per_part = (BANKS * BANK_BYTES / width) as usize;
    addresses
        .chunks(lanes_per_part)
        .map(|part| {
            // Per bank, the distinct words the part's lanes need from it.
            let mut words: Vec<Vec<u32>> = vec![Vec::new(); BANKS as usize];
            for &address in part {
                for word in (address / BANK_BYTES)..(address + width) / BANK_BYTES {
                    let bank = &mut words[(word % BANKS) as usize];
                    if !bank.contains(&word) {
                        bank.push(word);
                    }
                }
            }
            words.iter().map(Vec::len).max().unwrap_or(0).max(1) as u32
        })
        .sum()
}

/// The lanes' byte addresses when lane `l` reads element `l · stride` of `width`-byte elements.
#[cfg(not(target_arch = "nvptx64"))]
pub fn strided(stride: u32, width: u32) -> Vec<u32> {
    (0..32).map(|lane| lane * stride * width).collect()
}

/// Wavefronts per request above the fewest a request of `width` bytes can take: 1 for 4 bytes, 2
/// for 8, 4 for 16 (a 32-lane request of 16-byte accesses is 512 bytes, four wavefronts at best).
/// This is the "conflict degree": how many times slower than conflict-free.
#[cfg(not(target_arch = "nvptx64"))]
pub fn conflict_degree(addresses: &[u32], width: u32) -> f64 {
    let ideal = (addresses.len() as u32 * width).div_ceil(BANKS * BANK_BYTES).max(1);
    wavefronts(addresses, width) as f64 / ideal as f64
}

/// Largest stride the probe takes, in elements.
pub const MAX_STRIDE: u32 = 64;
/// Warps per block: enough requests in flight that the banks, not the issue of one warp, limit.
pub const PROBE_WARPS: u32 = 8;
/// Timed requests per warp.
pub const PROBE_REQUESTS: u32 = 256;
/// Blocks per launch, each timed on its own SM; the host takes their median.
pub const PROBE_BLOCKS: u32 = 8;
/// Shared bytes: 32 lanes at the largest stride of the widest element.
const PROBE_BYTES: u32 = 32 * MAX_STRIDE * 16;

/// One probe: lane `l` of every warp reads element `l · stride` of `width`-byte elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BankProbe {
    pub stride: u32,
    /// 4, 8 or 16 bytes.
    pub width: u32,
}

impl Problem for BankProbe {
    /// `(cycles, stride, width)`: block b writes its elapsed cycles to `cycles[b]` and the fold of
    /// its reads to `cycles[PROBE_BLOCKS + b]`.
    type Args = (*mut u64, u32, u32);
}

#[cfg(not(target_arch = "nvptx64"))]
impl BankProbe {
    pub fn new(stride: usize, width: usize) -> Result<Self, ptxkit::InvalidSize> {
        if !(1..=MAX_STRIDE as usize).contains(&stride) || !matches!(width, 4 | 8 | 16) {
            return Err(ptxkit::InvalidSize {
                problem: "bank probe",
                reason: format!(
                    "stride = {stride}, width = {width}: the stride is 1 to {MAX_STRIDE} elements and the width 4, 8 or 16 bytes"
                ),
            });
        }
        Ok(BankProbe {
            stride: stride as u32,
            width: width as u32,
        })
    }
}

/// `PROBE_REQUESTS` reads of `T` at `slots[lane · stride]`, independent of each other, folded into
/// one value so that none is optimised away.
///
/// # Safety
/// `slots` holds at least 32 · stride elements of T, all written.
#[inline(always)]
unsafe fn read_many<T: ptxkit::device::SharedWord>(
    slots: ptxkit::device::SharedSlice<T>,
    index: u32,
    fold: impl Fn(T) -> u32,
) -> u32 {
    let mut acc = 0u32;
    let mut i = 0;
    while i < PROBE_REQUESTS {
        // Eight independent reads per step: the loop overhead stays small beside them.
        for _ in 0..8 {
            // SAFETY: index < 32 · stride ≤ the slice's length.
            acc ^= fold(unsafe { slots.get_volatile(index) });
        }
        i += 8;
    }
    acc
}

kernel! {
    /// Every warp reads, PROBE_REQUESTS times, element `lane · stride` of `width`-byte elements;
    /// thread 0 writes the block's elapsed cycles (between two barriers) to `cycles[block]`, and a
    /// fold of thread 0's reads to `cycles[PROBE_BLOCKS + block]`.
    pub unsafe fn bank_probe(cycles: *mut u64, stride: u32, width: u32) {
        let t = thread_idx().x;
        let lane = t % 32;
        let mut shared = DynamicShared::new();
        let words = shared.named_slice::<u32>("slots", PROBE_BYTES / 4);
        // Fill every slot the reads can touch, so that nothing reads unwritten memory.
        let mut i = t;
        while i < 32 * stride * width / 4 {
            // SAFETY: i < 32 · stride · width / 4 ≤ PROBE_BYTES / 4.
            unsafe { words.set_unchecked(i, i) };
            i += PROBE_WARPS * 32;
        }
        let index = lane * stride;
        sync_threads();
        let start = clock64();
        // SAFETY: the views alias the filled words; index < 32 · stride elements of each width.
        let acc = unsafe {
            match width {
                4 => read_many(words, index, |v| v),
                8 => read_many(DynamicShared::new().named_slice::<u64>("slots", PROBE_BYTES / 8), index, |v| v as u32),
                _ => read_many(DynamicShared::new().named_slice::<Float4>("slots", PROBE_BYTES / 16), index, |v| v.0[0].to_bits()),
            }
        };
        sync_threads();
        let elapsed = clock64() - start;
        if t == 0 {
            // SAFETY: two slots per block: its cycles, and (past every block's cycles) the fold of
            // its reads, written so that they cannot be left out.
            unsafe {
                global_store(cycles.add(block_idx().x as usize), elapsed);
                global_store(cycles.add((PROBE_BLOCKS + block_idx().x) as usize), acc as u64);
            }
        }
    }
}

/// PROBE_WARPS warps per block; the shared memory the largest probe touches.
pub const KERNEL: Kernel<BankProbe> = Kernel {
    code: bank_probe,
    block: Dim3::x(PROBE_WARPS * 32),
    shared: SharedMemory::of(PROBE_BYTES),
    grid: |_, _| Dim3::x(PROBE_BLOCKS),
};

/// The bank-conflict probe: the registry's list.
pub const FAMILY: Family<BankProbe> = Family::new("bank_probe", &[KERNEL]);

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_examples_and_the_transposed_tile() {
        // s_data[threadIdx.x]: one wavefront; s_data[threadIdx.x * 2]: two.
        assert_eq!(wavefronts(&strided(1, 4), 4), 1);
        assert_eq!(wavefronts(&strided(2, 4), 4), 2);
        // A column of a dense 32×32 float tile (As[tx][ty]): 32 ways; padded to 33: none.
        assert_eq!(wavefronts(&strided(32, 4), 4), 32);
        assert_eq!(wavefronts(&strided(33, 4), 4), 1);
        // Odd strides are conflict-free, powers of two conflict that many ways up to 32.
        for stride in 1..=64u32 {
            let expected = if stride % 2 == 1 {
                1
            } else {
                (1u32 << stride.trailing_zeros()).min(32)
            };
            assert_eq!(wavefronts(&strided(stride, 4), 4), expected, "stride {stride}");
        }
    }

    #[test]
    fn wide_accesses_are_served_in_halves_and_quarters() {
        // Consecutive 8- and 16-byte elements: the fewest wavefronts, 2 and 4.
        assert_eq!(wavefronts(&strided(1, 8), 8), 2);
        assert_eq!(wavefronts(&strided(1, 16), 16), 4);
        assert_eq!(conflict_degree(&strided(1, 16), 16), 1.0);
        // Stride 2 of 8-byte elements: each half of 16 lanes spans 32 banks twice.
        assert_eq!(wavefronts(&strided(2, 8), 8), 4);
        // Every lane on the same word: a broadcast, one wavefront.
        assert_eq!(wavefronts(&[64; 32], 4), 1);
    }
}
