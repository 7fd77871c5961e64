//! Rung 5: the single-pass scan with the look-back done by a whole warp: the 32 lanes of warp 0 read
//! the statuses of the 32 tiles before the window's end at once, wait until all 32 have published,
//! find the nearest one with an inclusive prefix (`ballot`), and add everything from there on with
//! one shuffle reduction; a window with no inclusive prefix adds all 32 totals and moves back 32
//! tiles. One round trip to the L2 per 32 predecessors instead of per predecessor.

use super::look_back::{AGGREGATE, BLOCKS_PER_SM, EMPTY, INCLUSIVE, Walk, look_back_body, status};
use super::{Scan, ScanElement, THREADS, warp_total};
use ptxkit::device::{GlobalSlice, GlobalSliceMut, WARP_SIZE, ballot, lane_id, nanosleep, vote_all};
use ptxkit::{Dim3, Kernel, SharedMemory, kernel};

/// The warp's walk; between two reads of a window that is not yet all published it sleeps for
/// about `BACKOFF_NS` nanoseconds (none by default).
pub(super) struct WholeWarp<const BACKOFF_NS: u32 = 0>;

impl<const BACKOFF_NS: u32> Walk for WholeWarp<BACKOFF_NS> {
    #[inline(always)]
    unsafe fn prefix<T: ScanElement>(statuses: GlobalSliceMut<u64>, tile: u32, aggregate: T) -> T {
        let lane = lane_id();
        // SAFETY (statuses): tile and its predecessors are inside the array.
        unsafe {
            if tile == 0 {
                if lane == 0 {
                    statuses.at_unchecked(0u32).store_relaxed(status(INCLUSIVE, aggregate));
                }
                return T::ZERO;
            }
            if lane == 0 {
                statuses.at_unchecked(tile).store_relaxed(status(AGGREGATE, aggregate));
            }
            let mut prefix = T::ZERO;
            // The window is tiles end − 32 .. end − 1, lane l on tile end − 32 + l; tiles before 0
            // count as an inclusive prefix of 0.
            let mut end = tile;
            loop {
                let back = WARP_SIZE - lane;
                let word = loop {
                    let word = if end >= back {
                        statuses.at_unchecked(end - back).load_relaxed()
                    } else {
                        status(INCLUSIVE, T::ZERO)
                    };
                    // Every lane's tile has published (its block took an earlier ticket).
                    if vote_all(word >> 32 != EMPTY) {
                        break word;
                    }
                    if BACKOFF_NS > 0 {
                        nanosleep(BACKOFF_NS);
                    }
                };
                let value = T::from_bits(word as u32);
                let inclusive = ballot(word >> 32 == INCLUSIVE);
                if inclusive != 0 {
                    // The nearest inclusive prefix, and the totals of the tiles after it.
                    let nearest = WARP_SIZE - 1 - inclusive.leading_zeros();
                    prefix = prefix.plus(warp_total(if lane >= nearest { value } else { T::ZERO }));
                    break;
                }
                prefix = prefix.plus(warp_total(value));
                end -= WARP_SIZE;
            }
            if lane == 0 {
                statuses
                    .at_unchecked(tile)
                    .store_relaxed(status(INCLUSIVE, prefix.plus(aggregate)));
            }
            prefix
        }
    }
}

kernel! {
    #[launch_bounds(Dim3::x(THREADS), BLOCKS_PER_SM)]
    /// Phase 0: clears the statuses and the ticket in `scratch`. Phase 1: `output` = the scan of
    /// `input`, warp 0 walking back 32 tiles at a time.
    pub unsafe fn scan_look_back_warp(input: GlobalSlice<f32>, output: GlobalSliceMut<f32>, scratch: GlobalSliceMut<f32>, n: u32, exclusive: u32, phase: u32) {
        // SAFETY: forwarded from the kernel's contract; KERNEL launches THREADS threads.
        unsafe { look_back_body::<f32, WholeWarp, true>(input, output, scratch, (n, exclusive, phase)) }
    }
}

/// One block per 8192 elements (a thread per status word in the reset phase).
pub const KERNEL: Kernel<Scan> = Kernel {
    code: scan_look_back_warp,
    block: Dim3::x(THREADS),
    shared: SharedMemory::of(super::look_back::Scratch::BYTES),
    grid: |p, _| super::look_back::look_back_grid(p),
};

#[cfg(test)]
mod tests {
    use super::*;
    use ptxkit::LaunchShape;

    kernel! {
        /// One warp runs the walk for `tile` over `statuses`; lane 0 writes the prefix.
        unsafe fn walk_probe(statuses: GlobalSliceMut<u64>, tile: u32, out: GlobalSliceMut<f32>) {
            // SAFETY: the test gives statuses up to `tile`, every predecessor published.
            let prefix = unsafe { <WholeWarp>::prefix(statuses, tile, 1000.0) };
            if lane_id() == 0 {
                out.set(0u32, prefix);
            }
        }
    }

    fn walk(statuses: &mut [u64], tile: u32) -> f32 {
        let mut out = f32::NAN;
        let shape = LaunchShape {
            grid: Dim3::x(1),
            block: Dim3::x(WARP_SIZE),
            shared_bytes: 0,
        };
        let args = (
            GlobalSliceMut::new(statuses),
            tile,
            GlobalSliceMut::new(core::slice::from_mut(&mut out)),
        );
        // SAFETY: the statuses cover `tile`; one output.
        unsafe { walk_probe.emulate(&shape, args) }.unwrap();
        out
    }

    /// The walk over windows with no inclusive prefix, and over tiles before 0: on the emulator the
    /// tile before is usually complete when a tile looks back, so the launch tests rarely take
    /// these paths.
    #[test]
    fn the_warp_adds_whole_windows_until_the_nearest_inclusive_prefix() {
        // Tile 0 inclusive (1), tiles 1..=40 totals of 1 each: two windows back from tile 41.
        let mut statuses: Vec<u64> = (0..42)
            .map(|t| {
                if t == 0 {
                    status(INCLUSIVE, 1.0)
                } else {
                    status(AGGREGATE, 1.0)
                }
            })
            .collect();
        statuses[41] = EMPTY;
        assert_eq!(walk(&mut statuses, 41), 41.0);
        assert_eq!(statuses[41], status(INCLUSIVE, 1041.0));
        // An inclusive prefix of 100 at tile 20: the walk stops there, 20 totals after it.
        let mut statuses: Vec<u64> = (0..42)
            .map(|t| {
                if t == 20 {
                    status(INCLUSIVE, 100.0)
                } else {
                    status(AGGREGATE, 1.0)
                }
            })
            .collect();
        statuses[41] = EMPTY;
        assert_eq!(walk(&mut statuses, 41), 120.0);
    }
}
