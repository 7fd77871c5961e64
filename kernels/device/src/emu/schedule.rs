//! The order in which the emulator starts a launch's blocks, and where it switches between them.
//!
//! CUDA promises no order: blocks may run in any order, at once or one after another. A kernel
//! that reads another block's output without an ordering (a missing fence, a tile read before its
//! block published it) can still pass when blocks happen to run in grid order, as they do by
//! default here. The other schedules run the same launch so that such a kernel shows its bug:
//! the blocks started last to first, in a random order, or switched at every atomic, fence and
//! poll of global memory on one worker, so that their accesses interleave.
//!
//! A launch takes [`with_schedule`]'s schedule on the launching thread, else `PTXKIT_SCHEDULE`
//! (`grid`, `reverse`, `random`, `random:SEED`, `interleaved`, `interleaved:SEED`), else grid
//! order. A failed launch names its schedule, the seed included, so that it can be run again.

use std::cell::Cell;
use std::fmt;

/// The variable that sets the schedule of every launch in a process.
pub const SCHEDULE_VARIABLE: &str = "PTXKIT_SCHEDULE";

/// How the blocks of a launch are ordered on the emulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// Blocks start in grid order, on one worker per core: the default, and the fastest.
    GridOrder,
    /// Blocks start last to first, on one worker per core.
    Reverse,
    /// Blocks start in the order a random permutation from `seed` gives, on one worker per core.
    Random { seed: u64 },
    /// One worker holds several blocks at once, started in a random order from `seed`, and
    /// switches to another of them, chosen from `seed` too, at every atomic, fence and poll of
    /// global memory: the blocks' accesses interleave, and the same seed gives the same run.
    Interleaved { seed: u64 },
}

impl Schedule {
    /// Every form [`Schedule::parse`] reads, for messages.
    pub const FORMS: &'static str = "grid, reverse, random, random:SEED, interleaved or interleaved:SEED";

    /// `grid`, `reverse`, `random[:SEED]` or `interleaved[:SEED]` (SEED decimal or `0x` hex); a
    /// seed left out is drawn from the clock.
    pub fn parse(text: &str) -> Result<Schedule, String> {
        let refused = |why: &str| format!("'{text}' is not a schedule{why}: give {}", Schedule::FORMS);
        match text.split_once(':') {
            None => match text {
                "grid" => Ok(Schedule::GridOrder),
                "reverse" => Ok(Schedule::Reverse),
                "random" => Ok(Schedule::Random { seed: fresh_seed() }),
                "interleaved" => Ok(Schedule::Interleaved { seed: fresh_seed() }),
                _ => Err(refused("")),
            },
            Some((name, seed)) => {
                let seed = parse_seed(seed).ok_or_else(|| {
                    refused(&format!(
                        " ('{seed}' is not a seed: a number below 2^64, decimal or 0x hex)"
                    ))
                })?;
                match name {
                    "random" => Ok(Schedule::Random { seed }),
                    "interleaved" => Ok(Schedule::Interleaved { seed }),
                    _ => Err(refused(" (only random and interleaved take a seed)")),
                }
            }
        }
    }

    /// The schedule a launch on this thread runs now: [`with_schedule`]'s, else
    /// `PTXKIT_SCHEDULE`'s, else grid order. A variable that cannot be read is an error naming it.
    pub fn current() -> Result<Schedule, String> {
        if let Some(schedule) = OVERRIDE.with(Cell::get) {
            return Ok(schedule);
        }
        match std::env::var(SCHEDULE_VARIABLE) {
            Err(std::env::VarError::NotPresent) => Ok(Schedule::GridOrder),
            Err(std::env::VarError::NotUnicode(_)) => {
                Err(format!("{SCHEDULE_VARIABLE} is not UTF-8: give {}", Schedule::FORMS))
            }
            Ok(text) if text.trim().is_empty() => Ok(Schedule::GridOrder),
            Ok(text) => Schedule::parse(text.trim()).map_err(|reason| format!("{SCHEDULE_VARIABLE}: {reason}")),
        }
    }

    /// Every schedule, each random one from `seed`: what a test runs a kernel under to show it
    /// does not depend on the order of its blocks.
    pub fn all(seed: u64) -> [Schedule; 4] {
        [
            Schedule::GridOrder,
            Schedule::Reverse,
            Schedule::Random { seed },
            Schedule::Interleaved { seed },
        ]
    }

    /// Whether one worker runs the launch (its run is then the same for the same seed).
    pub(crate) fn one_worker(self) -> bool {
        matches!(self, Schedule::Interleaved { .. })
    }

    /// Whether threads give way to other blocks at every atomic, fence and poll.
    pub(crate) fn switches_at_atomics(self) -> bool {
        matches!(self, Schedule::Interleaved { .. })
    }

    /// The order blocks start in, for `blocks` blocks.
    pub(crate) fn order(self, blocks: u64) -> BlockOrder {
        match self {
            Schedule::GridOrder => BlockOrder::Forward,
            Schedule::Reverse => BlockOrder::Reverse(blocks),
            Schedule::Random { seed } | Schedule::Interleaved { seed } => {
                BlockOrder::Permuted(Permutation::new(blocks, seed))
            }
        }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Schedule::GridOrder => write!(f, "grid"),
            Schedule::Reverse => write!(f, "reverse"),
            Schedule::Random { seed } => write!(f, "random:{seed:#x}"),
            Schedule::Interleaved { seed } => write!(f, "interleaved:{seed:#x}"),
        }
    }
}

fn parse_seed(text: &str) -> Option<u64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// A seed from the clock, for schedules asked for without one.
fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    mix(nanos ^ std::process::id() as u64)
}

thread_local! {
    static OVERRIDE: Cell<Option<Schedule>> = const { Cell::new(None) };
}

/// Runs `f` with every emulated launch made on this thread under `schedule` (other threads, and
/// launches after `f`, keep theirs).
pub fn with_schedule<R>(schedule: Schedule, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Schedule>);
    impl Drop for Restore {
        fn drop(&mut self) {
            OVERRIDE.with(|o| o.set(self.0));
        }
    }
    let _restore = Restore(OVERRIDE.with(|o| o.replace(Some(schedule))));
    f()
}

/// SplitMix64's finaliser: a bijection of u64 that spreads every input bit over the output.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A small generator for the schedule's choices (SplitMix64).
pub(crate) struct Choices(u64);

impl Choices {
    pub fn new(seed: u64) -> Self {
        Choices(seed)
    }

    /// A number below `n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        (mix(self.0) % n as u64) as usize
    }
}

/// Which block starts `k`-th.
pub(crate) enum BlockOrder {
    Forward,
    Reverse(u64),
    Permuted(Permutation),
}

impl BlockOrder {
    pub fn block(&self, k: u64) -> u64 {
        match self {
            BlockOrder::Forward => k,
            BlockOrder::Reverse(blocks) => blocks - 1 - k,
            BlockOrder::Permuted(permutation) => permutation.at(k),
        }
    }
}

/// A random permutation of `0..n` that takes no memory: a four-round Feistel network over the
/// smallest even power of two that holds n, walked until it lands below n (each step lands there
/// with probability above a quarter).
pub(crate) struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Permutation {
    pub fn new(n: u64, seed: u64) -> Self {
        let bits = (64 - n.saturating_sub(1).leading_zeros()).max(2);
        Permutation {
            n,
            half_bits: bits.div_ceil(2),
            keys: std::array::from_fn(|round| mix(seed ^ mix(round as u64 + 1))),
        }
    }

    pub fn at(&self, k: u64) -> u64 {
        let mut x = k;
        loop {
            x = self.feistel(x);
            if x < self.n {
                return x;
            }
        }
    }

    fn feistel(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut left, mut right) = (x >> self.half_bits, x & mask);
        for key in self.keys {
            let next = left ^ (mix(right ^ key) & mask);
            left = right;
            right = next;
        }
        (left << self.half_bits) | right
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_permutation_is_one_of_its_range() {
        for n in [1u64, 2, 3, 5, 16, 17, 100, 1000, 4097] {
            for seed in [0, 1, 0xdead_beef] {
                let permutation = Permutation::new(n, seed);
                let mut seen = vec![false; n as usize];
                for k in 0..n {
                    let block = permutation.at(k);
                    assert!(
                        block < n && !seen[block as usize],
                        "n = {n}, seed {seed}: {block} twice"
                    );
                    seen[block as usize] = true;
                }
            }
        }
    }

    #[test]
    fn different_seeds_give_different_orders() {
        let first: Vec<u64> = (0..64).map(|k| Permutation::new(64, 1).at(k)).collect();
        let second: Vec<u64> = (0..64).map(|k| Permutation::new(64, 2).at(k)).collect();
        assert_ne!(first, second);
        assert_ne!(first, (0..64).collect::<Vec<_>>());
    }

    #[test]
    fn schedules_parse_from_their_names_and_print_back_the_same() {
        for schedule in Schedule::all(0x1234) {
            assert_eq!(Schedule::parse(&schedule.to_string()), Ok(schedule));
        }
        assert_eq!(Schedule::parse("random:17"), Ok(Schedule::Random { seed: 17 }));
        assert!(matches!(Schedule::parse("random"), Ok(Schedule::Random { .. })));
        for bad in ["", "Grid", "grid:1", "reverse:2", "random:x", "random:", "sideways"] {
            let error = Schedule::parse(bad).unwrap_err();
            assert!(error.contains("interleaved:SEED"), "{bad}: {error}");
        }
    }

    #[test]
    fn a_schedule_set_for_a_closure_applies_inside_it_only() {
        let outside = Schedule::current();
        let inside = with_schedule(Schedule::Reverse, Schedule::current);
        assert_eq!(inside, Ok(Schedule::Reverse));
        assert_eq!(Schedule::current(), outside);
    }
}
