//! What the `host` binary runs: any registered family at a size (every kernel of it, from Rust and
//! from CUDA C where loaded, beside its ceiling), the smoke sweep, and the managed-memory scenarios.
//! Every result is checked against the f64 CPU reference and becomes one [`Row`].

pub mod autotune;
pub mod banks;
pub mod ceiling;
pub mod managed;
pub mod migration;
pub mod models;
pub mod multi_gpu;
pub mod partial;
pub mod pipeline;
pub mod report;
pub mod thrashing;
pub mod timeline;

pub use report::{Ceiling, Row, Status};

use kernels::Source;
use kernels_host::families::{self, Bound, Case, FamilyDemo, Size};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::{Timing, time_gpu_interleaved};
use std::io::IsTerminal;
use std::time::Instant;

/// How each demo measures.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Untimed runs before timing.
    pub warmup: u32,
    /// Timed runs; the median is reported.
    pub runs: u32,
    /// The random stream the inputs are drawn from.
    pub rng: u64,
}

/// Timed runs on the emulator: its times only show that it ran, so one is enough.
pub const EMU_RUNS: u32 = 1;

/// `size` capped to what the emulator runs in a demo; says so when it caps.
pub fn emulator_size(backend: &Backend, family: &dyn FamilyDemo, size: Size) -> Size {
    if !matches!(backend, Backend::Emu) {
        return size;
    }
    let cap = family.cli().emulator_cap;
    let capped = Size(std::array::from_fn(|i| size.0[i].min(cap.0[i])));
    if capped != size {
        eprintln!(
            "note: {} capped from {} to {} on the emulator",
            family.name(),
            family.label(size),
            family.label(capped)
        );
    }
    capped
}

/// Runs kernels `kernels` (indices into the family) of `family` at `size`, each from every source
/// the backend has, beside the family's ceiling; one row each. `size` must have passed
/// [`FamilyDemo::check`].
pub fn run_family(
    backend: &Backend,
    settings: &Settings,
    family: &dyn FamilyDemo,
    size: Size,
    kernels: &[usize],
) -> Result<Vec<Row>> {
    let plan = family.plan(size)?;
    let label = family.label(size);
    let infos = family.kernels();
    let mut case = family.prepare(backend, size, settings.rng, 1)?;
    // What runs, in row order: the library (None) where there is one, then each kernel from each
    // source the backend has; each checked on its own output before any is timed.
    let mut variants: Vec<(Option<usize>, Source)> = Vec::new();
    let mut checks = Vec::new();
    // The emulator's times: the checked run's own (they only show that it ran).
    let mut emulator_times = Vec::new();
    let mut ceiling = None;
    if let Backend::Gpu(gpu) = backend {
        // Memory-bound kernels are rated against the copy; compute-bound ones against their
        // library, which memory-bound families (CUB's reductions) show as one more row.
        if plan.work.bound == Bound::Memory {
            ceiling = Some(ceiling::copy_bandwidth(
                gpu,
                settings.warmup as usize,
                settings.runs as usize,
            )?);
        }
        if let (Some(baseline), Bound::Memory | Bound::Compute) = (case.baseline(), plan.work.bound) {
            progress(family.name(), baseline, "library", &label);
            case.poison()?;
            case.launch_baseline(0)?;
            checks.push(case.check(0));
            variants.push((None, Source::Rust));
        }
    }
    for &index in kernels {
        let entry = infos[index].entry;
        let sources: Vec<Source> = Source::ALL
            .into_iter()
            .filter(|&s| families::runs_here(backend, &infos[index], s))
            .collect();
        if sources.is_empty() {
            eprintln!("note: {entry} skipped: it runs only from the sm_90a PTX, on a compute capability 9.0 GPU");
            continue;
        }
        progress(family.name(), entry, &format!("{} source(s)", sources.len()), &label);
        for source in sources {
            case.poison()?;
            let start = Instant::now();
            case.launch(index, source, 0)?;
            emulator_times.push(Timing::from_samples(vec![start.elapsed().as_secs_f64() * 1e3]));
            checks.push(case.check(0));
            variants.push((Some(index), source));
        }
    }
    // On the GPU every variant, the library's too, is timed in the same rounds, so that all of
    // them see the same clocks (a long tensor-core run brings the GPU to its power limit, and
    // whatever ran first would otherwise run faster: docs/perf-log.md, "how far one run's ratio
    // can be trusted").
    let timings = match backend {
        Backend::Gpu(_) => time_interleaved(backend, settings, variants.len(), |v| match variants[v] {
            (None, _) => case.launch_baseline(0),
            (Some(index), source) => case.launch(index, source, 0),
        })?,
        Backend::Emu => emulator_times,
    };
    let mut rows = Vec::new();
    for ((&(kernel, source), timing), check) in variants.iter().zip(timings).zip(checks) {
        let row = match kernel {
            None => {
                let baseline = case.baseline().unwrap_or("library");
                let row = Row::measured(family.name(), baseline, &label, backend, timing, &plan.work);
                if plan.work.bound == Bound::Compute {
                    ceiling = row.rate.map(|rate| Ceiling {
                        name: format!("{baseline} {label}, {}", row.unit.unwrap_or_default()),
                        rate,
                    });
                }
                row
            }
            Some(index) => {
                let entry = infos[index].entry;
                Row::measured(family.name(), entry, &label, backend, timing, &plan.work).from_kernel(entry, source)
            }
        };
        rows.push(row.with_ceiling(ceiling.as_ref()).with_check(check));
    }
    Ok(rows)
}

/// One checked launch of every kernel of every family at its smoke size, from every source the
/// backend has: what compute-sanitizer runs under.
pub fn smoke(backend: &Backend, families: &[&dyn FamilyDemo], rng: u64) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for family in families {
        let size = family.sizes().smoke;
        family.check(backend, size, 1)?;
        let label = family.label(size);
        let mut case: Box<dyn Case> = family.prepare(backend, size, rng, 1)?;
        for (index, kernel) in family.kernels().iter().enumerate() {
            for source in Source::ALL
                .into_iter()
                .filter(|&s| families::runs_here(backend, kernel, s))
            {
                case.poison()?;
                case.launch(index, source, 0)?;
                rows.push(
                    Row::unmeasured(family.name(), kernel.entry, &label, backend)
                        .from_kernel(kernel.entry, source)
                        .with_check(case.check(0)),
                );
            }
        }
    }
    Ok(rows)
}

/// Times `work` on the backend: CUDA events on the GPU (warm-up, then the median of the runs),
/// the wall clock on the emulator (one run).
pub fn time(backend: &Backend, settings: &Settings, mut work: impl FnMut() -> Result<()>) -> Result<Timing> {
    let mut timings = time_interleaved(backend, settings, 1, |_| work())?;
    Ok(timings.remove(0))
}

/// Times `variants` pieces of work against each other ([`time_gpu_interleaved`] on the GPU; one
/// wall-clock run each on the emulator).
pub fn time_interleaved(
    backend: &Backend,
    settings: &Settings,
    variants: usize,
    mut work: impl FnMut(usize) -> Result<()>,
) -> Result<Vec<Timing>> {
    match backend {
        Backend::Gpu(gpu) => {
            time_gpu_interleaved(gpu, settings.warmup as usize, settings.runs as usize, variants, work)
        }
        Backend::Emu => (0..variants)
            .map(|variant| {
                let mut samples = Vec::new();
                for _ in 0..EMU_RUNS {
                    let start = Instant::now();
                    work(variant)?;
                    samples.push(start.elapsed().as_secs_f64() * 1e3);
                }
                Ok(Timing::from_samples(samples))
            })
            .collect(),
    }
}

/// One line on stderr per measurement, where a person is watching.
fn progress(family: &str, variant: &str, source: &str, size: &str) {
    if std::io::stderr().is_terminal() {
        eprintln!("{family}: {variant} ({source}) at {size} ...");
    }
}
