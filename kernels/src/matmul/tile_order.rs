//! The items of work a persistent grid takes, and their order: C's tiles row by row, or where C
//! is wide in bands of [`BAND_ROWS`] rows, column by column within a band; and where the tiles are
//! few, each tile's k cut into runs.
//!
//! The blocks of one wave run at about the same pace, so the tiles they hold at once decide what
//! the L2 must keep. Row by row, a wave over a wide C (thousands of columns: an MLP's up
//! projection, an LM head) holds one or two rows of tiles, and every row of tiles reads all of B
//! again from memory. In bands, a wave holds a block of tiles about as tall as it is wide: a band's
//! rows of A stay in the L2 while its columns go by, and B is read once per band instead of once
//! per row of tiles (as CUTLASS's and Triton's "grouped" or "swizzled" tile orders do). Only
//! where a wave in row order would hold fewer than [`ROWS_PER_WAVE`] rows of tiles: with more, B's
//! columns are already shared by the tiles of a wave, and rows of tiles read B's rows whole, which
//! measured faster (docs/perf-log.md, change 113).
//!
//! Where C has fewer tiles than the grid has blocks (few rows of A: decoding, short prompts), each
//! tile's k is cut into runs ([`Work`]), so that every block has an item of work; the runs meet in C
//! as split-k's do ([`super::k_runs`]). All items of run 0 come first, so no block waits for an
//! item that a block has yet to reach.

/// Rows of C per band: about the square root of a wave's tiles (132 SMs) in 128- and 256-row
/// tiles, weighed by the tiles' widths, and a band of A (2048 rows by a k of 4096, 16 MiB in bf16)
/// small beside the L2.
pub const BAND_ROWS: u32 = 2048;

/// Rows of tiles a wave must hold in row order for the tiles to go in rows rather than bands.
pub const ROWS_PER_WAVE: u32 = 4;

/// The corner (first row, first column) of C's `tile`-th tile in bands of `band_tiles_m` rows of
/// tiles (of `BM`×`BN` over an m×n C), column by column within a band; bands of one row are row
/// order. Every index below `m.div_ceil(BM) * n.div_ceil(BN)` gives a different tile.
#[inline(always)]
pub fn banded_corner<const BM: u32, const BN: u32>(tile: u32, (m, n): (u32, u32), band_tiles_m: u32) -> (u32, u32) {
    let (tiles_m, tiles_n) = (m.div_ceil(BM), n.div_ceil(BN));
    let band = tile / (band_tiles_m * tiles_n);
    let first = band * band_tiles_m;
    // The last band may hold fewer rows of tiles.
    let rows = (tiles_m - first).min(band_tiles_m);
    let within = tile - band * band_tiles_m * tiles_n;
    ((first + within % rows) * BM, (within / rows) * BN)
}

/// Rows of tiles in a band of [`BAND_ROWS`] rows of C.
pub const fn band_tiles_m<const BM: u32>() -> u32 {
    if BAND_ROWS > BM { BAND_ROWS / BM } else { 1 }
}

/// A persistent grid's items of work: each tile of C and run of k, run by run. The tiles go in
/// row order, or where `BANDS` and a wave of the grid's blocks would hold fewer than
/// [`ROWS_PER_WAVE`] rows of them, in bands ([`banded_corner`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Work<const BM: u32, const BN: u32, const BANDS: bool> {
    m: u32,
    n: u32,
    tiles: u32,
    steps: u32,
    /// Steps per run, and the runs (none empty).
    chunk: u32,
    runs: u32,
    /// Rows of tiles per band: one for row order.
    band_tiles_m: u32,
}

/// One item of [`Work`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item {
    /// The tile's index (its counters) and corner.
    pub tile: u32,
    pub corner: (u32, u32),
    /// The run, and its steps of k.
    pub run: u32,
    pub steps: (u32, u32),
}

impl<const BM: u32, const BN: u32, const BANDS: bool> Work<BM, BN, BANDS> {
    /// The work of an m×n C over `steps` steps of k for a grid of `blocks`: as many runs per tile
    /// as the grid has blocks per tile (at least one), none of them empty.
    #[inline(always)]
    pub const fn new((m, n): (u32, u32), steps: u32, blocks: u32) -> Self {
        let tiles_n = n.div_ceil(BN);
        let tiles = m.div_ceil(BM) * tiles_n;
        let asked = if blocks > tiles { blocks / tiles } else { 1 };
        let chunk = steps.div_ceil(asked);
        Work {
            m,
            n,
            tiles,
            steps,
            chunk,
            runs: steps.div_ceil(chunk),
            band_tiles_m: if BANDS && tiles_n * ROWS_PER_WAVE > blocks {
                band_tiles_m::<BM>()
            } else {
                1
            },
        }
    }

    /// Tiles of C.
    #[inline(always)]
    pub const fn tiles(&self) -> u32 {
        self.tiles
    }

    /// Runs of k per tile.
    #[inline(always)]
    pub const fn runs(&self) -> u32 {
        self.runs
    }

    /// Items: every tile's runs.
    #[inline(always)]
    pub const fn items(&self) -> u32 {
        self.tiles * self.runs
    }

    /// The zeroed counters the runs' meeting in C needs ([`super::k_runs::meet_in_c_warp`]):
    /// `per_tile` for each tile (one per part of it that meets on its own) where k is cut into
    /// runs, none otherwise. The host sizes them by the same work the kernel walks.
    #[inline(always)]
    pub const fn counters(&self, per_tile: u32) -> usize {
        if self.runs > 1 {
            (self.tiles * per_tile) as usize
        } else {
            0
        }
    }

    /// Item `i` (below [`Self::items`]): tile `i % tiles` of run `i / tiles`.
    #[inline(always)]
    pub fn item(&self, i: u32) -> Item {
        let (tile, run) = (i % self.tiles, i / self.tiles);
        let begin = run * self.chunk;
        Item {
            tile,
            corner: banded_corner::<BM, BN>(tile, (self.m, self.n), self.band_tiles_m),
            run,
            steps: (begin, (begin + self.chunk).min(self.steps)),
        }
    }
}

impl Item {
    /// The counter of part `part` (of `per_tile`) of this item's tile among `arrivals`
    /// ([`Work::counters`]).
    #[inline(always)]
    pub fn counter(&self, arrivals: *mut u32, per_tile: u32, part: u32) -> *mut u32 {
        arrivals.wrapping_add((self.tile * per_tile + part) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Every tile of C once, for sides that are and are not multiples of the tile and of the band.
    fn covers<const BM: u32, const BN: u32>() {
        for m in [1, BM - 1, BM, BM + 1, BAND_ROWS, BAND_ROWS + 1, 3 * BAND_ROWS - 7, 8192] {
            for (n, band) in [1, BN, 5 * BN + 3, 28672]
                .into_iter()
                .flat_map(|n| [(n, 1), (n, band_tiles_m::<BM>())])
            {
                let tiles = m.div_ceil(BM) * n.div_ceil(BN);
                let corners: HashSet<_> = (0..tiles).map(|t| banded_corner::<BM, BN>(t, (m, n), band)).collect();
                assert_eq!(corners.len(), tiles as usize, "{m}×{n}");
                assert!(
                    corners
                        .iter()
                        .all(|&(r, c)| r < m && c < n && r % BM == 0 && c % BN == 0)
                );
            }
        }
    }

    #[test]
    fn every_tile_once() {
        covers::<128, 256>();
        covers::<256, 128>();
        covers::<4096, 64>();
    }

    /// Every step of every tile in exactly one item, no item empty, run 0's items first; in bands
    /// and in rows.
    #[test]
    fn items_cover_every_step_once() {
        items_cover::<true>();
        items_cover::<false>();
    }

    fn items_cover<const BANDS: bool>() {
        for (m, n) in [
            (1, 1),
            (16, 4096),
            (128, 11008),
            (300, 700),
            (8192, 8192),
            (2048, 28672),
        ] {
            for steps in [1, 2, 7, 64, 172, 1000] {
                for blocks in [1, 7, 132, 264, 1000] {
                    let work = Work::<128, 256, BANDS>::new((m, n), steps, blocks);
                    let mut covered = vec![0u32; (work.tiles() * steps) as usize];
                    let mut corners = std::collections::HashSet::new();
                    for i in 0..work.items() {
                        let item = work.item(i);
                        assert!(
                            item.steps.0 < item.steps.1,
                            "{m}×{n}, {steps} steps, item {i}: {item:?}"
                        );
                        assert_eq!(item.run == 0, i < work.tiles());
                        corners.insert((item.run, item.corner));
                        for step in item.steps.0..item.steps.1 {
                            covered[(item.tile * steps + step) as usize] += 1;
                        }
                    }
                    assert!(
                        covered.iter().all(|&c| c == 1),
                        "{m}×{n}, {steps} steps, {blocks} blocks"
                    );
                    assert!(work.runs() == 1 || work.items() <= blocks.max(work.tiles()));
                }
            }
        }
    }

    /// Within a band, the next tile is the one below, then the next column's top.
    #[test]
    fn column_by_column_within_a_band() {
        let (m, n) = (4 * BAND_ROWS, 4 * 256);
        let rows = BAND_ROWS / 128;
        assert_eq!(banded_corner::<128, 256>(0, (m, n), rows), (0, 0));
        assert_eq!(banded_corner::<128, 256>(1, (m, n), rows), (128, 0));
        assert_eq!(banded_corner::<128, 256>(rows, (m, n), rows), (0, 256));
        assert_eq!(banded_corner::<128, 256>(rows * 4, (m, n), rows), (BAND_ROWS, 0));
        // Bands of one row: row order.
        assert_eq!(banded_corner::<128, 256>(1, (m, n), 1), (0, 256));
        assert_eq!(banded_corner::<128, 256>(4, (m, n), 1), (128, 0));
    }

    /// Bands where a wave holds fewer than four rows of tiles, rows otherwise.
    #[test]
    fn bands_only_where_c_is_wide() {
        let first_tiles = |n: u32, blocks| {
            let work = Work::<128, 256, true>::new((8192, n), 64, blocks);
            (work.item(0).corner, work.item(1).corner)
        };
        assert_eq!(first_tiles(28672, 132), ((0, 0), (128, 0)));
        assert_eq!(first_tiles(8192, 132), ((0, 0), (0, 256)));
        let rows = Work::<128, 256, false>::new((8192, 28672), 64, 132);
        assert_eq!(rows.item(1).corner, (0, 256));
    }
}
