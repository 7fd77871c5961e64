//! The scan family's host side: its safe launch, the phases of a three-phase scan (run here, level
//! by level), CUB's `DeviceScan` as the baseline, and a check whose tolerance follows each kernel's
//! order of additions.
//!
//! As for the sums (`families::reduce`), the inputs are random multiples of 2^-7, so a prefix sum
//! is exact in f32 while the absolute values up to it add to less than 2^17, and there every output
//! must equal the exact prefix; beyond, output i must lie within γ_d·Σ_{k≤i}|x_k| of it, d the
//! longest chain of additions in that kernel's order.

use super::auto::{Rung, Target};
use super::elementwise::check_shape;
use super::{
    Bound, Case, Cli, FamilyDemo, GUARD, KernelChoice, Outputs, Plan, Size, Sizes, Work, check_guard, check_len,
    substream,
};
use crate::cub::Cub;
use crate::families::reduce::grid_inputs;
use kernels::Source;
use kernels::scan::{
    ADD_PREFIXES, FAMILY, Passes, RESET, SINGLE_PASS, Scan, ScanElement, TILES, look_back_scratch, passes,
};
use ptxkit::{AnyFamily, Family, Kernel, Occupancy};
use ptxkit_runtime::Backend;
use ptxkit_runtime::array::{Array, Buffer, Element};
use ptxkit_runtime::{Error, Result};

/// The baselines: `cub::DeviceScan::InclusiveSum` and `ExclusiveSum`.
const CUB_INCLUSIVE: &str = "cub_inclusive_sum";
const CUB_EXCLUSIVE: &str = "cub_exclusive_sum";

/// Additions along any path inside one tile, for every variant here, with room to spare (at most
/// 25: 4 in a run's total, 5 shuffle levels and 7 to join the eight runs in the warp, 3 for the
/// warps, 2 to combine the prefixes, 4 in the run's scan; Blelloch: 2 · 9 + 1).
const TILE_DEPTH: u64 = 28;

/// Tiles of `kernel` for `problem` in any phase: the blocks of its scanning phase, a block per tile
/// where blocks are not limited (the look-back's reset phase has a thread per status word instead).
fn tiles<T: ScanElement>(kernel: &Kernel<Scan<T>>, problem: &Scan<T>) -> u32 {
    let scanning = match passes(kernel.entry()) {
        Passes::ThreePhase => TILES,
        Passes::LookBack => SINGLE_PASS,
    };
    kernel
        .launch_shape(&problem.phase(scanning), Occupancy::UNLIMITED)
        .grid
        .x
}

/// Scratch words `kernel` needs in `problem`'s phase: a total (or prefix) per tile, or the
/// look-back's statuses and ticket.
pub fn scratch_len<T: ScanElement>(kernel: &Kernel<Scan<T>>, problem: &Scan<T>) -> usize {
    let tiles = tiles(kernel, problem);
    match passes(kernel.entry()) {
        Passes::ThreePhase => tiles as usize,
        Passes::LookBack => look_back_scratch(tiles) as usize,
    }
}

/// One launch of `kernel` in `problem`'s phase: checks the lengths and that the arrays live where
/// `backend` can reach them, then launches.
pub fn launch<T: ScanElement + Element>(
    backend: &Backend,
    kernel: &Kernel<Scan<T>>,
    source: Source,
    problem: &Scan<T>,
    input: &impl Array<T>,
    output: &mut impl Array<T>,
    scratch: &mut impl Array<T>,
) -> Result<()> {
    check_len("input", input.len(), problem.n as usize)?;
    check_len("output", output.len(), problem.n as usize)?;
    let words = scratch_len(kernel, problem);
    check_len("scratch", scratch.len(), words)?;
    let args = (
        input.view(backend)?.head(problem.n),
        output.view_mut(backend)?.head(problem.n),
        scratch.view_mut(backend)?.head(words),
        problem.n,
        problem.exclusive as u32,
        problem.phase,
    );
    // SAFETY: each view is its array's on this backend, borrowed for the launch, holding what the
    // kernel reads or writes in this phase (n elements each way, `scratch_len` scratch words;
    // device and host allocations are 8-byte aligned, as the look-back's status words need).
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &[input, &*output, &*scratch]) }
}

/// The whole scan of `input` into `output` with `kernel`: its phases, and for a three-phase
/// kernel the scans of the tile totals, level after level, in `levels` (two arrays per level, see
/// [`levels_for`]).
pub fn scan<T: ScanElement + Element>(
    backend: &Backend,
    kernel: &Kernel<Scan<T>>,
    source: Source,
    problem: &Scan<T>,
    input: &impl Array<T>,
    output: &mut impl Array<T>,
    levels: &mut [impl Array<T>],
) -> Result<()> {
    let Some(first) = levels.first_mut() else {
        return Err(Error::InvalidInput {
            what: "scan levels".into(),
            reason: "no scratch arrays given: use levels_for".into(),
        });
    };
    match passes(kernel.entry()) {
        Passes::LookBack => single_pass(backend, kernel, source, problem, input, output, first),
        Passes::ThreePhase => three_phase(backend, kernel, source, problem, input, output, levels),
    }
}

/// The whole scan with a look-back `kernel`: its statuses cleared, then the single pass;
/// `scratch` holds [`scratch_len`] words.
pub fn single_pass<T: ScanElement + Element>(
    backend: &Backend,
    kernel: &Kernel<Scan<T>>,
    source: Source,
    problem: &Scan<T>,
    input: &impl Array<T>,
    output: &mut impl Array<T>,
    scratch: &mut impl Array<T>,
) -> Result<()> {
    launch(backend, kernel, source, &problem.phase(RESET), input, output, scratch)?;
    launch(
        backend,
        kernel,
        source,
        &problem.phase(SINGLE_PASS),
        input,
        output,
        scratch,
    )
}

fn three_phase<T: ScanElement + Element>(
    backend: &Backend,
    kernel: &Kernel<Scan<T>>,
    source: Source,
    problem: &Scan<T>,
    input: &impl Array<T>,
    output: &mut impl Array<T>,
    levels: &mut [impl Array<T>],
) -> Result<()> {
    let [totals, prefixes, deeper @ ..] = levels else {
        return Err(Error::InvalidInput {
            what: "scan levels".into(),
            reason: format!("too few scratch arrays for n = {}: use levels_for", problem.n),
        });
    };
    launch(backend, kernel, source, &problem.phase(TILES), input, output, totals)?;
    let tiles = tiles(kernel, problem);
    if tiles > 1 {
        let over = Scan::at(tiles, true, TILES);
        three_phase(backend, kernel, source, &over, totals, prefixes, deeper)?;
        launch(
            backend,
            kernel,
            source,
            &problem.phase(ADD_PREFIXES),
            input,
            output,
            prefixes,
        )?;
    }
    Ok(())
}

/// Lengths of the scratch arrays every kernel of the f32 family needs for `n` elements: two per
/// level of tile totals (for the smallest tile, which has the most levels), the first at least the
/// look-back's statuses.
pub fn levels_for(n: u32) -> Vec<usize> {
    levels_of(&FAMILY, n)
}

/// [`levels_for`] for the kernels of `family`.
pub fn levels_of<T: ScanElement>(family: &Family<Scan<T>>, n: u32) -> Vec<usize> {
    let mut lengths = Vec::new();
    let mut count = n;
    loop {
        let level: usize = family
            .kernels
            .iter()
            .map(|k| scratch_len(k, &Scan::at(count, false, 0)))
            .max()
            .unwrap_or(1)
            .max(1);
        lengths.extend([level, level]);
        let tiles = family
            .kernels
            .iter()
            .map(|k| tiles(k, &Scan::at(count, false, 0)))
            .max()
            .unwrap_or(1);
        if tiles <= 1 {
            return lengths;
        }
        count = tiles;
    }
}

/// The longest chain of additions from an input to an output in `kernel`'s order for `problem`.
pub fn rounding_depth(kernel: &Kernel<Scan>, problem: &Scan) -> u64 {
    let tiles = tiles(kernel, problem);
    match passes(kernel.entry()) {
        // The look-back adds the totals of every tile before it, one at a time.
        Passes::LookBack => TILE_DEPTH + tiles as u64 + 2,
        Passes::ThreePhase if tiles <= 1 => TILE_DEPTH,
        Passes::ThreePhase => {
            let over = Scan::at(tiles, true, TILES);
            TILE_DEPTH + rounding_depth(kernel, &over) + 1
        }
    }
}

/// Checks `out` against the exact prefix sums of `input` (multiples of 2^-7) for a chain of
/// `depth` additions: exact where the absolute values so far add to less than 2^17, within
/// γ_depth·Σ|x| beyond.
pub fn check_prefixes(out: &[f32], input: &[f32], exclusive: bool, depth: u64) -> std::result::Result<String, String> {
    let u = (2.0f64).powi(-24);
    if depth as f64 * u >= 0.5 {
        return Err(format!("no error bound for a chain of {depth} additions in f32"));
    }
    let gamma = depth as f64 * u / (1.0 - depth as f64 * u);
    let exact_limit = (2.0f64).powi(17);
    let (mut sum, mut abs, mut worst) = (0.0f64, 0.0f64, 0.0f64);
    for (i, (&got, &x)) in out.iter().zip(input).enumerate() {
        let before = sum;
        sum += x as f64;
        abs += (x as f64).abs();
        let expected = if exclusive { before } else { sum };
        if got.is_nan() {
            return Err(format!("element {i} is NaN: never written"));
        }
        let error = (got as f64 - expected).abs();
        if abs < exact_limit {
            if error != 0.0 {
                return Err(format!(
                    "element {i} is {got}, the exact prefix is {expected}: with Σ|x| = {abs} < 2^17 so far every order is exact"
                ));
            }
        } else if error > gamma * abs {
            return Err(format!(
                "element {i} is {got}, the exact prefix is {expected}: error {error:.3e} above γ_{depth}·Σ|x| = {:.3e}",
                gamma * abs
            ));
        }
        worst = worst.max(error);
    }
    Ok(if worst == 0.0 {
        format!("{} prefixes exact", out.len())
    } else {
        format!(
            "{} prefixes within γ_{depth}·Σ|x| (largest error {worst:.2e})",
            out.len()
        )
    })
}

/// The host side of the scan family. Sizes are (n, exclusive): 0 inclusive, 1 exclusive.
pub struct ScanDemo;

/// One element, the warp, tile (256, 512, 4096, 8192) and level edges, primes, both kinds.
const EDGE_SIZES: [[usize; 2]; 17] = [
    [1, 0],
    [2, 1],
    [31, 0],
    [33, 1],
    [255, 0],
    [257, 1],
    [511, 0],
    [513, 1],
    [2047, 0],
    [2049, 1],
    [4095, 1],
    [4097, 0],
    [8191, 0],
    [8193, 1],
    [65_537, 1],
    [100_003, 0],
    [600_011, 1],
];

/// The sizes and labels both scan families use (f32 here, i32 in `scan_i32`).
pub(super) mod sizes {
    use super::{EDGE_SIZES, Error, Result, Size};

    pub fn edge() -> Vec<Size> {
        EDGE_SIZES.iter().map(|&[n, e]| Size([n, e, 1])).collect()
    }

    pub fn large() -> Vec<Size> {
        vec![Size([(1 << 26) + 3, 0, 1]), Size([1 << 30, 1, 1])]
    }

    pub fn bench() -> Vec<Size> {
        [20, 22, 24, 26, 28, 30].iter().map(|&k| Size([1 << k, 0, 1])).collect()
    }

    pub fn label(size: Size) -> String {
        let [n, exclusive, _] = size.0;
        format!("n={n}, {}", if exclusive == 1 { "exclusive" } else { "inclusive" })
    }

    /// Whether `size` asks for an exclusive scan (`--exclusive` 0 or 1).
    pub fn exclusive(size: Size) -> Result<bool> {
        match size.0[1] {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(Error::InvalidInput {
                what: "--exclusive".into(),
                reason: format!("{other}: give 0 (inclusive) or 1 (exclusive)"),
            }),
        }
    }
}

impl FamilyDemo for ScanDemo {
    fn family(&self) -> &'static dyn AnyFamily {
        &FAMILY
    }

    fn extents(&self) -> &'static [&'static str] {
        &["n", "exclusive"]
    }

    fn baseline(&self) -> Option<&'static str> {
        Some(CUB_INCLUSIVE)
    }

    fn label(&self, size: Size) -> String {
        sizes::label(size)
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let n = size.0[0];
        let problem = Scan::new(n, sizes::exclusive(size)?)?;
        for kernel in FAMILY.kernels {
            check_shape(kernel, &problem)?;
        }
        let array = 4 * (n as u64 + GUARD as u64);
        let scratch: u64 = levels_for(problem.n).iter().map(|&l| 4 * l as u64).sum();
        Ok(Plan {
            work: Work {
                bytes: 8.0 * n as f64,
                flops: n as f64,
                bound: Bound::Memory,
            },
            x: n as f64,
            // The input, the read-back output and its poison.
            host_bytes: 3 * array,
            device_bytes: 2 * array + scratch,
        })
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let n = size.0[0];
        let problem = Scan::new(n, sizes::exclusive(size)?)?;
        let input = grid_inputs(substream(rng, 17), n);
        let sets = sets.max(1);
        let inputs = (0..sets)
            .map(|_| Buffer::upload(backend, &input))
            .collect::<Result<Vec<_>>>()?;
        let outputs = Outputs::new(backend, n, GUARD, f32::NAN, sets)?;
        let levels = (0..sets)
            .map(|_| {
                levels_for(problem.n)
                    .into_iter()
                    .map(|len| Buffer::upload(backend, &vec![f32::NAN; len]))
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<Vec<_>>>()?;
        let cub = match backend {
            Backend::Gpu(gpu) => Cub::load(gpu, n)?,
            Backend::Emu => None,
        };
        Ok(Box::new(ScanCase {
            backend,
            problem,
            input,
            inputs,
            outputs,
            levels,
            depths: vec![None; sets],
            cub,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: "prefix sums of n f32 (--exclusive 1 for exclusive): Hillis–Steele, Blelloch, warp shuffles, single-pass look-back (by a thread or a warp; tiles by ticket or in block order; resident blocks copying ahead; a pause between polls; the tile staged in shared memory); against CUB's DeviceScan",
            default: Size([1 << 28, 0, 1]),
            emulator_cap: Size([1 << 20, 1, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            edge: sizes::edge(),
            large: sizes::large(),
            bench: sizes::bench(),
            smoke: Size([70_001, 0, 1]),
        }
    }

    fn choice(&self) -> &dyn KernelChoice {
        self
    }
}

impl KernelChoice for ScanDemo {
    fn fastest_rung(&self, _target: Target, _size: Size) -> Option<Rung> {
        Some(Rung {
            entry: "scan_look_back_staged",
            why: "the single-pass look-back scan with its tile staged in shared memory: the fastest rung at every size from 2^22",
        })
    }
}

struct ScanCase<'a> {
    backend: &'a Backend,
    problem: Scan,
    /// The input on the host, guard included, for the reference.
    input: Vec<f32>,
    inputs: Vec<Buffer<f32>>,
    outputs: Outputs<f32>,
    levels: Vec<Vec<Buffer<f32>>>,
    /// Per set: the rounding depth of what last wrote its output.
    depths: Vec<Option<u64>>,
    cub: Option<Cub>,
}

impl Case for ScanCase<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        let kernel = &FAMILY.kernels[kernel];
        scan(
            self.backend,
            kernel,
            source,
            &self.problem,
            &self.inputs[set],
            self.outputs.get_mut(set),
            &mut self.levels[set],
        )?;
        self.depths[set] = Some(rounding_depth(kernel, &self.problem));
        Ok(())
    }

    fn baseline(&self) -> Option<&'static str> {
        self.cub.as_ref().map(|_| {
            if self.problem.exclusive {
                CUB_EXCLUSIVE
            } else {
                CUB_INCLUSIVE
            }
        })
    }

    fn launch_baseline(&mut self, set: usize) -> Result<()> {
        let cub = Cub::loaded(&self.cub)?;
        let n = self.problem.n as usize;
        cub.scan(
            self.backend,
            &self.inputs[set],
            self.outputs.get_mut(set),
            n,
            self.problem.exclusive,
        )?;
        // CUB's order is its own: a single pass whose look-back, at worst, adds every tile's total
        // (tiles of at least 256 elements), after at most 64 additions inside a tile.
        self.depths[set] = Some(64 + (n as u64).div_ceil(256) + 2);
        Ok(())
    }

    fn poison(&mut self) -> Result<()> {
        self.depths.fill(None);
        for levels in &mut self.levels {
            for level in levels {
                let len = level.len();
                level.write(self.backend, &vec![f32::NAN; len])?;
            }
        }
        self.outputs.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let depth = self.depths[set].ok_or("nothing was launched on this input set since the poison")?;
        let n = self.problem.n as usize;
        let out = self.outputs.read(self.backend, set)?;
        let summary = check_prefixes(&out[..n], &self.input[..n], self.problem.exclusive, depth)?;
        check_guard(&out, n)?;
        Ok(summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_must_be_exact_while_small_and_within_the_bound_beyond() {
        let input = [0.5f32, -0.25, 1.0];
        assert!(check_prefixes(&[0.5, 0.25, 1.25], &input, false, 20).is_ok());
        assert!(check_prefixes(&[0.0, 0.5, 0.25], &input, true, 20).is_ok());
        assert!(check_prefixes(&[0.5, 0.25, 1.25 + 1.0 / 128.0], &input, false, 20).is_err());
        assert!(check_prefixes(&[0.5, f32::NAN, 1.25], &input, false, 20).is_err());
    }

    #[test]
    fn three_phase_levels_cover_every_kernel() {
        // 2^20 elements in 256-element tiles: 4096 totals, then 16, then 1.
        let levels = levels_for(1 << 20);
        assert_eq!(levels.len(), 6);
        assert_eq!(levels[0], 4096);
        assert_eq!(levels[2], 16);
    }

    /// The reset phase launches a thread per status word, not a block per tile: its scratch is
    /// still the statuses of every tile and the ticket (counted from its own grid, it was two
    /// words, and a short scratch passed the check while the reset wrote past it).
    #[test]
    fn the_look_backs_reset_phase_needs_every_tiles_status() {
        let n = 9 * kernels::scan::warp_shuffle::TILE;
        for kernel in FAMILY.kernels.iter().filter(|k| passes(k.entry()) == Passes::LookBack) {
            let reset = Scan::at(n, false, RESET);
            let want = look_back_scratch(9) as usize;
            assert_eq!(scratch_len(kernel, &reset), want, "{}", kernel.entry());
            assert_eq!(
                scratch_len(kernel, &reset.phase(SINGLE_PASS)),
                want,
                "{}",
                kernel.entry()
            );
            let backend = Backend::Emu;
            let (input, mut output) = (vec![1.0f32; n as usize], vec![0.0f32; n as usize]);
            let mut short = vec![0.0f32; want - 1];
            let refused = launch(&backend, kernel, Source::Rust, &reset, &input, &mut output, &mut short);
            assert!(
                refused.as_ref().is_err_and(|e| e.to_string().contains("scratch")),
                "{}: {refused:?}",
                kernel.entry()
            );
        }
    }
}
