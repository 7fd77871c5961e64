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
//!
//! Where C has more tiles than the grid has blocks but not a whole number of waves, the last wave
//! would run part-empty (160 tiles on 132 blocks: two waves' time for 1.2 waves' work). There the
//! last wave's tiles are cut into runs of k as well, as many as fill a wave best (the last 28 of
//! 160 tiles in 4 runs: 112 items of a quarter tile, 1.25 tiles' time). Their items go run by run
//! after the whole tiles, so that a wave's blocks are at the same k of neighbouring tiles and read
//! B's columns together from the L2. (Cutting the last two waves' tiles instead, as this did
//! before, spreads the cost of meeting over twice the items: docs/perf-log.md, change 147.) (Sharing the steps out as one stream instead, each block
//! a contiguous run across tiles, "stream-K", left the tiles of one column of C at different k,
//! and on 512 × 10240 × 8192 in bf16 took 1.6 times as long as whole tiles: docs/perf-log.md,
//! change 141.)

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

/// A persistent grid's items of work: each tile of C, whole, then where the tiles are few or the
/// last wave would run part-empty, runs of k of the last ones, run by run (the module's doc). The
/// tiles go in row order, or where `BANDS` and a wave of the grid's blocks would hold fewer than
/// [`ROWS_PER_WAVE`] rows of them, in bands ([`banded_corner`]).
///
/// A block walks its items with a [`Walk`]: every grid-th, from its own index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Work<const BM: u32, const BN: u32, const BANDS: bool> {
    m: u32,
    n: u32,
    tiles: u32,
    steps: u32,
    /// Rows of tiles per band: one for row order.
    band_tiles_m: u32,
    /// The grid's blocks.
    blocks: u32,
    /// Tiles taken whole, the first of C's; the others are cut into `runs` runs of `chunk` steps
    /// (the last shorter, none empty).
    whole: u32,
    chunk: u32,
    runs: u32,
}

/// One item of [`Work`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item {
    /// The tile's index and corner.
    pub tile: u32,
    pub corner: (u32, u32),
    /// The run (0: the one that stores; the others add to it) and how many the tile's k is cut
    /// into.
    pub run: u32,
    pub runs: u32,
    /// Its steps of k.
    pub steps: (u32, u32),
}

/// Where a block stands in its items of [`Work`]: [`Work::walk`], [`Work::advance`],
/// [`Work::done`], [`Work::item`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Walk {
    /// The item's index.
    pub position: u32,
}

/// What a tile's item costs besides its steps of k, in steps: filling the ring, and storing (or
/// adding) the 128 KiB of its part of C, which a run of k pays again. Fitted to run 2026-12-06 b
/// (docs/perf-log.md, change 141): at 512 × 11008 × 4096 three runs gained nothing, at
/// 16384 × 3072 × 768 runs of 4 steps lost 15 %.
const ITEM_STEPS: u32 = 16;

/// What a run of k's meeting with the others costs besides [`ITEM_STEPS`], in steps, for
/// [`Work::busiest_steps`]: the waits and the round trip of the sums through the L2. Fitted to the
/// bf16 persistent rungs' two tiles over the model-shape suite (run 2026-12-06 e,
/// docs/perf-log.md, change 147).
const MEETING_STEPS: u32 = 16;

/// The most runs the last wave's tiles are cut into.
const MOST_RUNS: u32 = 4;

/// Cut only where the last wave is predicted to take at most this many eighths of its time whole.
const CUT_AT_MOST_EIGHTHS: u32 = 7;

impl<const BM: u32, const BN: u32, const BANDS: bool> Work<BM, BN, BANDS> {
    /// The work of an m×n C over `steps` steps of k for a grid of `blocks`. With fewer tiles than
    /// blocks, every tile cut into as many runs as the grid has blocks per tile (at least one);
    /// with more, where the last wave is part-empty and cutting its tiles into runs is predicted
    /// to save an eighth of its time ([`ITEM_STEPS`], [`MEETING_STEPS`]), cut into the runs that
    /// save most; otherwise every tile whole.
    #[inline(always)]
    pub const fn new((m, n): (u32, u32), steps: u32, blocks: u32) -> Self {
        let tiles_n = n.div_ceil(BN);
        let tiles = m.div_ceil(BM) * tiles_n;
        let (whole, runs) = if blocks > tiles {
            (0, blocks / tiles)
        } else {
            let last_wave = tiles % blocks;
            // The last wave's time in steps: whole, or its tiles cut into r runs (each run an item
            // that meets the others).
            let mut best = (1, (steps + ITEM_STEPS) * CUT_AT_MOST_EIGHTHS / 8);
            if last_wave > 0 {
                let mut r = 2;
                while r <= MOST_RUNS && r <= steps {
                    let item = steps.div_ceil(r) + ITEM_STEPS + MEETING_STEPS;
                    let time = (last_wave * r).div_ceil(blocks) * item;
                    if time < best.1 {
                        best = (r, time);
                    }
                    r += 1;
                }
            }
            if best.0 > 1 {
                (tiles - last_wave, best.0)
            } else {
                (tiles, 1)
            }
        };
        let chunk = steps.div_ceil(runs);
        Work {
            m,
            n,
            tiles,
            steps,
            band_tiles_m: if BANDS && tiles_n * ROWS_PER_WAVE > blocks {
                band_tiles_m::<BM>()
            } else {
                1
            },
            blocks,
            whole,
            chunk,
            runs: steps.div_ceil(chunk),
        }
    }

    /// Tiles of C.
    #[inline(always)]
    pub const fn tiles(&self) -> u32 {
        self.tiles
    }

    /// Items: the whole tiles, and the runs of the others.
    #[inline(always)]
    pub const fn items(&self) -> u32 {
        self.whole + (self.tiles - self.whole) * self.runs
    }

    /// The predicted time of the busiest block, in steps of this tile: [`ITEM_STEPS`] for each of
    /// its items, and [`MEETING_STEPS`] more for each run of k that meets others. Block 0's, which
    /// takes the first whole tile and the first cut item of each round, so has the most of both.
    pub const fn busiest_steps(&self) -> u32 {
        let whole = self.whole.div_ceil(self.blocks);
        let cut = self.items().div_ceil(self.blocks) - whole;
        let meeting = if self.runs > 1 { MEETING_STEPS } else { 0 };
        whole * (self.steps + ITEM_STEPS) + cut * (self.chunk + ITEM_STEPS + meeting)
    }

    /// The zeroed counters the runs' meeting in C needs ([`super::k_runs::meet_in_c_warp`]):
    /// `per_tile` for each tile cut into runs (one per part of it that meets on its own), none
    /// where nothing is cut. The host sizes them by the same work the kernel walks.
    #[inline(always)]
    pub const fn counters(&self, per_tile: u32) -> usize {
        if self.runs > 1 {
            ((self.tiles - self.whole) * per_tile) as usize
        } else {
            0
        }
    }

    /// `block`'s walk over its items, at its first.
    #[inline(always)]
    pub const fn walk(&self, block: u32) -> Walk {
        Walk { position: block }
    }

    /// Whether `walk` is past its block's last item.
    #[inline(always)]
    pub const fn done(&self, walk: &Walk) -> bool {
        walk.position >= self.items()
    }

    /// Moves `walk` to its block's next item.
    #[inline(always)]
    pub const fn advance(&self, walk: &mut Walk) {
        walk.position += self.blocks;
    }

    /// The item `walk` is at (not [`Self::done`]): a whole tile, or tile `whole + u % cut` of run
    /// `u / cut` for the u-th cut item.
    #[inline(always)]
    pub fn item(&self, walk: &Walk) -> Item {
        let position = walk.position;
        let (tile, run, runs) = if position < self.whole {
            (position, 0, 1)
        } else {
            let (u, cut) = (position - self.whole, self.tiles - self.whole);
            (self.whole + u % cut, u / cut, self.runs)
        };
        let begin = run * self.chunk;
        let end = if runs == 1 {
            self.steps
        } else {
            (begin + self.chunk).min(self.steps)
        };
        Item {
            tile,
            corner: banded_corner::<BM, BN>(tile, (self.m, self.n), self.band_tiles_m),
            run,
            runs,
            steps: (begin, end),
        }
    }

    /// The counter of part `part` (of `per_tile`) of `item`'s tile among `arrivals`
    /// ([`Self::counters`]), for an item whose tile is cut into runs.
    #[inline(always)]
    pub fn counter(&self, item: &Item, arrivals: *mut u32, per_tile: u32, part: u32) -> *mut u32 {
        arrivals.wrapping_add(((item.tile - self.whole) * per_tile + part) as usize)
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

    /// Each block's items, walked as the kernels walk them.
    fn walk<const BM: u32, const BN: u32, const BANDS: bool>(
        work: &Work<BM, BN, BANDS>,
        blocks: u32,
    ) -> Vec<Vec<Item>> {
        (0..blocks)
            .map(|block| {
                let (mut items, mut walk) = (Vec::new(), work.walk(block));
                while !work.done(&walk) {
                    items.push(work.item(&walk));
                    work.advance(&mut walk);
                }
                items
            })
            .collect()
    }

    /// Every step of every tile in exactly one item, no item empty; each tile cut into `runs`
    /// pieces of which one is run 0 and the others distinct, each cut tile with its own counters;
    /// in every block's order, no run 0 after a run that adds (so no block waits on an item that a
    /// waiting block holds: the grid's blocks are all resident); in bands and in rows.
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
            (512, 10240),
            (1000, 5000),
            (8192, 8192),
            (2048, 28672),
        ] {
            for steps in [1, 2, 7, 64, 172, 1000] {
                for blocks in [1, 7, 132, 264, 1000] {
                    let what = format!("{m}×{n}, {steps} steps, {blocks} blocks");
                    let work = Work::<128, 256, BANDS>::new((m, n), steps, blocks);
                    let mut covered = vec![0u32; (work.tiles() * steps) as usize];
                    let mut runs = vec![Vec::new(); work.tiles() as usize];
                    let mut counters = std::collections::HashSet::new();
                    let items = walk(&work, blocks);
                    for (block, items) in items.iter().enumerate() {
                        let first_adding = items.iter().position(|item| item.run > 0).unwrap_or(items.len());
                        assert!(
                            items[first_adding..].iter().all(|item| item.run > 0),
                            "{what}: block {block} stores after it adds: {items:?}"
                        );
                        for item in items {
                            assert!(item.steps.0 < item.steps.1 && item.steps.1 <= steps, "{what}: {item:?}");
                            assert_eq!(
                                item.corner,
                                banded_corner::<128, 256>(item.tile, (m, n), work.band_tiles_m)
                            );
                            runs[item.tile as usize].push((item.run, item.runs));
                            if item.runs > 1 {
                                let arrivals = std::ptr::null_mut::<u32>();
                                let counter = work.counter(item, arrivals, 8, 7) as usize / 4;
                                assert!(counter < work.counters(8), "{what}: {item:?}");
                                counters.insert((counter, item.tile));
                            }
                            for step in item.steps.0..item.steps.1 {
                                covered[(item.tile * steps + step) as usize] += 1;
                            }
                        }
                    }
                    assert!(covered.iter().all(|&c| c == 1), "{what}");
                    for (tile, pieces) in runs.iter_mut().enumerate() {
                        pieces.sort();
                        let count = pieces.len() as u32;
                        let expected: Vec<_> = (0..count).map(|run| (run, count)).collect();
                        assert_eq!(*pieces, expected, "{what}: tile {tile}");
                    }
                    // One tile per counter.
                    let owners: std::collections::HashSet<_> = counters.iter().map(|&(c, _)| c).collect();
                    assert_eq!(owners.len(), counters.len(), "{what}");
                    assert!(
                        items.iter().map(Vec::len).sum::<usize>()
                            <= blocks.max(work.tiles()) as usize * MOST_RUNS as usize
                    );
                }
            }
        }
    }

    /// Steps of k each block takes.
    fn loads(work: &Work<128, 256, false>, blocks: u32) -> Vec<u32> {
        walk(work, blocks)
            .iter()
            .map(|items| items.iter().map(|item| item.steps.1 - item.steps.0).sum())
            .collect()
    }

    /// Where the last wave of whole tiles would be part-empty and k is long, its tiles are cut so
    /// that no block takes much more than its share; where the last wave is nearly full, the tiles
    /// are a whole number of waves, or k is short, they go whole.
    #[test]
    fn the_last_waves_are_cut_where_the_last_is_part_empty() {
        let steps = 120;
        let work_of = |tiles_m: u32| Work::<128, 256, false>::new((128 * tiles_m, 256), steps, 132);
        // 160 tiles on 132 blocks: a wave of whole tiles, then the last 28 in four runs (one wave
        // of quarters), against two whole waves.
        let work = work_of(160);
        assert_eq!((work.whole, work.runs, work.counters(8)), (132, 4, 28 * 8));
        assert_eq!(*loads(&work, 132).iter().max().unwrap(), steps + steps / 4);
        // 297 tiles: two waves whole, then 33 in four runs.
        let work = work_of(297);
        assert_eq!((work.whole, work.runs, work.counters(8)), (264, 4, 33 * 8));
        assert_eq!(*loads(&work, 132).iter().max().unwrap(), 2 * steps + steps / 4);
        // Whole waves, and a last wave 120/132 full: whole tiles, no counters.
        for tiles_m in [264, 252] {
            let work = work_of(tiles_m);
            assert_eq!((work.whole, work.counters(8)), (tiles_m, 0), "{tiles_m} tiles");
        }
        // A k too short to cut: whole.
        assert_eq!(Work::<128, 256, false>::new((128 * 160, 256), 7, 132).runs, 1);
        // A last wave of 118 tiles: halves would take two waves of items.
        assert_eq!(work_of(250).runs, 1);
        // A short k and a nearly full last wave stay whole (16384 × 3072 × 768 lost 15 % cut:
        // run 2026-12-06 b).
        assert_eq!(Work::<128, 256, true>::new((16384, 3072), 12, 132).runs, 1);
        assert_eq!(Work::<128, 256, true>::new((512, 10240), 128, 132).runs, 4);
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
            (work.item(&work.walk(0)).corner, work.item(&work.walk(1)).corner)
        };
        assert_eq!(first_tiles(28672, 132), ((0, 0), (128, 0)));
        assert_eq!(first_tiles(8192, 132), ((0, 0), (0, 256)));
        let rows = Work::<128, 256, false>::new((8192, 28672), 64, 132);
        assert_eq!(rows.item(&rows.walk(1)).corner, (0, 256));
    }
}
