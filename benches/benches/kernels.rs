//! The kernel benchmarks: every registered family at its bench sizes on the GPU, every kernel from
//! Rust and (where `CUDA_C_PTX` has it) from CUDA C, with the family's library baseline and the copy
//! ceiling measured in the same run, then the managed-memory scenarios. Writes `$BENCH_JSON`
//! (default `target/bench/results.json`; rewritten after each family, so a run cut short keeps
//! the families it finished), which `cargo xtask bench-report` turns into tables and
//! plots. Without a GPU it says so and exits.
//!
//! `CUDA_C_PTX=<dir>`: nvcc-made PTX of `benches/reference/cuda_c/*.cu` (the GPU bundle's run.sh builds it).
//! `PYTORCH_JSON=<file>`: PyTorch's own operations on the same shapes (`benches/reference/pytorch/anchors.py`),
//! merged in as library baselines. `BENCH_FAMILIES=transpose,conv2d,…`: only these families (and
//! `managed` for the scenarios, `multi_gpu` for the several-GPU ones (two GPUs or more), `bank_probe`
//! for the bank-conflict study), so that a run fits a
//! time limit; default: everything. `BENCH_RESUME=<results.json>`: continue a run cut short (the
//! JSON is rewritten after each family's size): its cases are kept, with its date and copy ceiling,
//! and the sizes it measured are not measured again. `BENCH_MEASURE_MS=<ms>`: how long criterion
//! measures each case (default 1000, 100 to 10000; its warm-up is 30 % of that): 400 halves a run.

use benches::{input_sets, median, time_case, time_host_case};
use criterion::Criterion;
use host::demos::ceiling;
use host::demos::managed::{self, Scenario, run_once};
use host::demos::multi_gpu;
use indicatif::{ProgressBar, ProgressStyle};
use kernels::Source;
use kernels::bench_results::{self, BankReading, BenchCase, BenchRun, ChoiceCase};
use kernels_host::families::{self, Bound, FamilyDemo};
use ptxkit_runtime::Backend;
use ptxkit_runtime::{DeviceList, Gpu};
use std::time::Duration;

/// `BENCH_FAMILIES`' name for the multi-GPU scenarios.
const MULTI_GPU: &str = "multi_gpu";

/// The random stream of every case's inputs.
const RNG: u64 = 2026;

struct Bench {
    backend: Backend,
    criterion: Criterion,
    progress: ProgressBar,
    /// The day the run started (a resumed run's first part's).
    date: String,
    copy_gbs: f64,
    cases: Vec<BenchCase>,
    choices: Vec<ChoiceCase>,
    banks: Vec<BankReading>,
}

fn main() {
    // The settings are checked before anything else, GPU or not.
    let wanted = Wanted::from_env();
    let measure = measure_time();
    let mut gpu = match kernels_host::open_gpu(None) {
        Ok(gpu) => gpu,
        Err(why) => {
            eprintln!(
                "benches: no GPU ({why}): nothing to measure here. They run on the GPU runner: cargo xtask gpu-bundle."
            );
            return;
        }
    };
    match std::env::var_os("CUDA_C_PTX") {
        Some(dir) => {
            if let Err(why) = kernels_host::cuda_c::load_cuda_c(&mut gpu, std::path::Path::new(&dir)) {
                fail(&format!("cannot load the CUDA C twins: {why}"));
            }
        }
        None => eprintln!("benches: CUDA_C_PTX is not set: measuring without the CUDA C twins"),
    }
    // Said aloud: called without run.sh, the benches once lost CUB unnoticed.
    if std::env::var_os(kernels_host::cub::CUB_ENV).is_none() {
        eprintln!(
            "benches: {} is not set: no CUB baselines in this run (run.sh's prep builds the library)",
            kernels_host::cub::CUB_ENV
        );
    }
    let resumed = resumed_run(&gpu);
    // A resumed run keeps the ceiling its first part measured: one ceiling for all its percentages.
    let copy_gbs = match &resumed {
        Some(run) => run.copy_gbs,
        None => {
            ceiling::copy_bandwidth(&gpu, 3, 20)
                .unwrap_or_else(|e| fail(&e.to_string()))
                .rate
        }
    };
    let backend = Backend::Gpu(Box::new(gpu));
    let (date, cases, choices, banks) = match resumed {
        Some(run) => (run.date, run.cases, run.choices, run.banks),
        None => (host::demos::report::utc_date(), Vec::new(), Vec::new(), Vec::new()),
    };
    let progress = ProgressBar::new(planned_cases(&backend, &wanted, &cases) as u64);
    progress.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}").unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let criterion = Criterion::default()
        .configure_from_args()
        .warm_up_time(measure * 3 / 10)
        .measurement_time(measure)
        .sample_size(10)
        .without_plots();
    let resuming = !cases.is_empty();
    let mut bench = Bench {
        backend,
        criterion,
        progress,
        date,
        copy_gbs,
        cases,
        choices,
        banks,
    };
    // The JSON is rewritten after each family's size, so that a run cut short by a time limit keeps
    // what it measured (the runner's calls last at most ten minutes) and BENCH_RESUME continues it.
    if resuming {
        if std::env::var_os("PYTORCH_JSON").is_some() {
            eprintln!("benches: PYTORCH_JSON ignored: the resumed run's PyTorch cases are kept");
        }
    } else {
        bench.pytorch();
    }
    for family in families::FAMILIES.iter().filter(|f| wanted.has(f.name())) {
        for size in family.sizes().bench {
            if already_measured(&bench.cases, *family, size) {
                continue;
            }
            bench
                .family_size(*family, size)
                .unwrap_or_else(|e| fail(&e.to_string()));
            bench.write();
        }
    }
    if wanted.has("managed") {
        bench.managed().unwrap_or_else(|e| fail(&e.to_string()));
    }
    if wanted.has(MULTI_GPU) {
        bench.multi_gpu().unwrap_or_else(|e| fail(&e.to_string()));
        bench.write();
    }
    if wanted.has(kernels::banks::FAMILY.name) {
        bench.bank_study().unwrap_or_else(|e| fail(&e.to_string()));
    }
    bench.progress.finish_and_clear();
    bench.write();
    bench.criterion.final_summary();
}

fn fail(message: &str) -> ! {
    eprintln!("benches: {message}");
    std::process::exit(1)
}

/// A setting the run cannot use: said before anything is measured, exit status 2.
fn refuse(message: &str) -> ! {
    eprintln!("benches: {message}");
    std::process::exit(2)
}

/// How long criterion measures each case: `BENCH_MEASURE_MS`, else one second.
fn measure_time() -> Duration {
    const RANGE: std::ops::RangeInclusive<u64> = 100..=10_000;
    let Some(text) = std::env::var_os("BENCH_MEASURE_MS") else {
        return Duration::from_secs(1);
    };
    let text = text.to_string_lossy();
    match text.trim().parse::<u64>() {
        Ok(ms) if RANGE.contains(&ms) => Duration::from_millis(ms),
        _ => refuse(&format!(
            "BENCH_MEASURE_MS is {text}: give milliseconds from {} to {} (default 1000)",
            RANGE.start(),
            RANGE.end()
        )),
    }
}

/// The run `BENCH_RESUME` names, to be continued on this GPU.
fn resumed_run(gpu: &Gpu) -> Option<BenchRun> {
    let path = std::path::PathBuf::from(std::env::var_os("BENCH_RESUME")?);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        refuse(&format!(
            "BENCH_RESUME names {}, which cannot be read ({e}): give it the BENCH_JSON of the run to continue",
            path.display()
        ))
    });
    let run: BenchRun = serde_json::from_str(&text).unwrap_or_else(|e| {
        refuse(&format!(
            "BENCH_RESUME names {}, which is not a bench results file ({e}): give it the BENCH_JSON of the run to continue",
            path.display()
        ))
    });
    let here = &gpu.info().name;
    if &run.gpu != here {
        refuse(&format!(
            "BENCH_RESUME names a run on {}, and this GPU is {here}: a run continues on the GPU it started on",
            run.gpu
        ));
    }
    eprintln!(
        "benches: continuing the run of {} in {} ({} cases)",
        run.date,
        path.display(),
        run.cases.len()
    );
    Some(run)
}

/// Whether `cases` hold `family`'s kernels at `size` (a size is written whole, after its last case).
fn already_measured(cases: &[BenchCase], family: &dyn FamilyDemo, size: families::Size) -> bool {
    let label = family.label(size);
    cases
        .iter()
        .any(|c| c.family == family.name() && c.size == label && c.source.is_some())
}

/// Which families `BENCH_FAMILIES` asks for.
struct Wanted(Option<Vec<String>>);

impl Wanted {
    fn from_env() -> Wanted {
        Wanted(std::env::var("BENCH_FAMILIES").ok().map(|list| {
            let names: Vec<String> = list.split(',').map(|n| n.trim().replace('-', "_")).collect();
            for name in &names {
                if name != "managed" && name != MULTI_GPU && families::find(name).is_none() {
                    let known: Vec<&str> = families::FAMILIES.iter().map(|f| f.name()).collect();
                    refuse(&format!(
                        "BENCH_FAMILIES names {name}, which is none of {}, managed or {MULTI_GPU}",
                        known.join(", ")
                    ));
                }
            }
            names
        }))
    }

    fn has(&self, name: &str) -> bool {
        self.0.as_ref().is_none_or(|names| names.iter().any(|n| n == name))
    }
}

/// Cases the run will measure, for the progress bar: from the registry, as the run itself counts.
fn planned_cases(backend: &Backend, wanted: &Wanted, done: &[BenchCase]) -> usize {
    let kernels = families::FAMILIES
        .iter()
        .filter(|f| wanted.has(f.name()))
        .map(|family| {
            let rated = family
                .sizes()
                .bench
                .into_iter()
                .filter(|&size| !already_measured(done, *family, size))
                .count();
            let sources: usize = family
                .kernels()
                .iter()
                .map(|k| {
                    Source::ALL
                        .iter()
                        .filter(|&&s| families::runs_here(backend, k, s))
                        .count()
                })
                .sum();
            // The baseline, where the family has one, is one more case per size.
            rated * (sources + usize::from(family.baseline().is_some()))
        });
    kernels.sum::<usize>() + if wanted.has("managed") { Scenario::ALL.len() } else { 0 }
}

impl Bench {
    fn gpu(&self) -> &Gpu {
        self.backend.gpu().expect("the benches run on a GPU")
    }

    /// Every kernel of `family` at one bench size, each from every source the GPU has, after the
    /// family's library baseline where it has one.
    fn family_size(&mut self, family: &dyn FamilyDemo, size: families::Size) -> ptxkit_runtime::Result<()> {
        let Bench {
            backend,
            criterion,
            progress,
            copy_gbs,
            cases,
            choices,
            ..
        } = self;
        let gpu = backend.gpu().expect("the benches run on a GPU");
        let plan = family.plan(size)?;
        let bound = match plan.work.bound {
            Bound::Memory => bench_results::Bound::Memory,
            Bound::Compute => bench_results::Bound::Compute,
            Bound::Check => return Ok(()),
        };
        let sets = input_sets(gpu, plan.work.bytes);
        family.check(backend, size, sets)?;
        let label = family.label(size);
        let mut case = family.prepare(backend, size, RNG, sets)?;
        let measured = |kernel: &str, source: Option<Source>, median_ms: f64, ceiling: Option<f64>| {
            let rate = plan.work.rate(median_ms).map_or(f64::NAN, |(rate, _)| rate);
            BenchCase {
                family: family.name().to_string(),
                bound,
                kernel: kernel.to_string(),
                source,
                size: label.clone(),
                x: plan.x,
                bytes: plan.work.bytes,
                flops: plan.work.flops,
                median_ms,
                rate,
                percent_of_ceiling: ceiling.map(|c| 100.0 * rate / c),
                kernel_ms: None,
                input_sets: sets,
            }
        };
        let mut ceiling = (bound == bench_results::Bound::Memory).then_some(*copy_gbs);
        // Each case is checked on one launch into fresh outputs before it is timed, as the demos
        // do: a histogram adds to its bins, so after the timed launches they hold a multiple of
        // the counts.
        if let Some(baseline) = case.baseline() {
            let id = format!("{baseline}/library/{label}");
            progress.set_message(id.clone());
            case.poison()?;
            case.launch_baseline(0)?;
            case.check(0).map_err(|why| check_failed(&id, why))?;
            let median_ms = time_case(criterion, gpu, (family.name(), &id), |i| case.launch_baseline(i % sets))?;
            // A compute-bound family's library is its ceiling; a memory-bound one's (CUB) is
            // rated against the copy like the kernels, and compared with them in the ratios.
            let library = measured(baseline, None, median_ms, ceiling);
            if bound == bench_results::Bound::Compute {
                ceiling = Some(library.rate);
            }
            cases.push(BenchCase {
                percent_of_ceiling: ceiling.map(|c| 100.0 * library.rate / c),
                ..library
            });
            progress.inc(1);
        }
        for (index, kernel) in family.kernels().iter().enumerate() {
            for source in Source::ALL
                .into_iter()
                .filter(|&s| families::runs_here(backend, kernel, s))
            {
                let id = format!("{}/{}/{label}", kernel.entry, source.label());
                progress.set_message(id.clone());
                case.poison()?;
                case.launch(index, source, 0)?;
                case.check(0).map_err(|why| check_failed(&id, why))?;
                let median_ms = time_case(criterion, gpu, (family.name(), &id), |i| {
                    case.launch(index, source, i % sets)
                })?;
                cases.push(measured(kernel.entry, Some(source), median_ms, ceiling));
                progress.inc(1);
            }
        }
        if let Some(choice) = kernels_host::families::choice::choose(gpu, family, size)? {
            choices.push(compare_choice(family, &label, choice, cases));
        }
        Ok(())
    }

    /// The ways to get vec_add's data to the GPU and back: end to end and kernel time.
    fn managed(&mut self) -> ptxkit_runtime::Result<()> {
        let n = managed::DEFAULT_N;
        managed::check(&self.backend, n)?;
        let a = families::guarded_inputs(families::substream(RNG, 6), n)[..n].to_vec();
        let b = families::guarded_inputs(families::substream(RNG, 7), n)[..n].to_vec();
        let expected = kernels::reference::vec_add(&a, &b);
        for scenario in Scenario::ALL {
            let id = format!("{}/n={n}", scenario.name());
            self.progress.set_message(id.clone());
            let mut kernel_ms = Vec::new();
            let backend = &self.backend;
            let median_ms = time_host_case(&mut self.criterion, ("managed", &id), || {
                let (sample, check) = run_once(backend, scenario, &a, &b, &expected)?;
                check.map_err(|why| check_failed(&id, why))?;
                kernel_ms.push(sample.kernel_ms);
                Ok(sample.end_to_end_ms)
            })?;
            let bytes = 12.0 * n as f64;
            self.progress.inc(1);
            self.cases.push(BenchCase {
                family: "managed".into(),
                bound: bench_results::Bound::Transfer,
                kernel: scenario.name().into(),
                source: None,
                size: format!("n={n}"),
                x: n as f64,
                bytes,
                flops: n as f64,
                median_ms,
                rate: bytes / (median_ms * 1e-3) / 1e9,
                percent_of_ceiling: None,
                kernel_ms: Some(median(kernel_ms)),
                input_sets: 1,
            });
        }
        Ok(())
    }

    /// The multi-GPU scenarios on every device the driver sees (`host multi-gpu all`), where there
    /// are two or more: each timed row (CUDA events, the demo's warm-up and median) becomes a case.
    fn multi_gpu(&mut self) -> ptxkit_runtime::Result<()> {
        let gpus = kernels_host::open_gpus(&DeviceList::All)?;
        if gpus.len() < 2 {
            eprintln!(
                "benches: {MULTI_GPU} needs two GPUs; this machine has {}: not measured",
                gpus.len()
            );
            return Ok(());
        }
        self.progress.set_message(MULTI_GPU);
        let backends = multi_gpu::backends_of(gpus);
        let settings = host::demos::Settings {
            warmup: 3,
            runs: 20,
            rng: RNG,
        };
        let plan = multi_gpu::Plan::new(
            multi_gpu::Scenario::ALL.to_vec(),
            multi_gpu::DEFAULT_N,
            multi_gpu::DEFAULT_SHAPE,
        )?;
        let rows = multi_gpu::run(&backends, &settings, &plan)?;
        if let Some(row) = rows.iter().find(|r| r.failed()) {
            return Err(check_failed(&row.variant, row.check.clone()));
        }
        for row in rows {
            let (Some(timing), Some(rate), Some(unit)) = (row.timing, row.rate, row.unit) else {
                continue;
            };
            let compute = unit == "TFLOP/s";
            let work = rate * timing.median_ms * 1e-3 * if compute { 1e12 } else { 1e9 };
            self.cases.push(BenchCase {
                family: MULTI_GPU.into(),
                bound: if compute {
                    bench_results::Bound::Compute
                } else {
                    bench_results::Bound::Transfer
                },
                kernel: format!("{}: {}", row.demo, row.variant),
                source: None,
                size: row.size.clone(),
                x: if compute {
                    multi_gpu::DEFAULT_SHAPE[0] as f64
                } else {
                    multi_gpu::DEFAULT_N as f64
                },
                bytes: if compute { 0.0 } else { work },
                flops: if compute { work } else { 0.0 },
                median_ms: timing.median_ms,
                rate,
                percent_of_ceiling: row.percent_of_ceiling,
                kernel_ms: None,
                input_sets: 1,
            });
        }
        Ok(())
    }

    /// PyTorch's cases, where the runner timed them, as library baselines against the copy.
    fn pytorch(&mut self) {
        let Some(path) = std::env::var_os("PYTORCH_JSON") else {
            eprintln!("benches: PYTORCH_JSON is not set: no PyTorch baselines in this run");
            return;
        };
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", std::path::Path::new(&path).display())));
        let cases: Vec<BenchCase> = serde_json::from_str(&text).unwrap_or_else(|e| {
            fail(&format!(
                "{} is not a list of bench cases: {e}",
                std::path::Path::new(&path).display()
            ))
        });
        for mut case in cases {
            if case.bound == bench_results::Bound::Memory {
                case.percent_of_ceiling = Some(100.0 * case.rate / self.copy_gbs);
            }
            self.cases.push(case);
        }
    }

    /// The bank-conflict study (`host bank-conflicts`): its readings go into the report's plot. A
    /// pattern that measures off its prediction is reported, not fatal: the plot shows it.
    fn bank_study(&mut self) -> ptxkit_runtime::Result<()> {
        self.progress.set_message("bank-conflict study");
        let rows = host::demos::banks::run(&self.backend)?;
        for row in rows.iter().filter(|r| r.failed()) {
            eprintln!("benches: bank study: {} {}: {}", row.variant, row.size, row.check);
        }
        self.banks = rows.into_iter().filter_map(|r| r.bank).collect();
        Ok(())
    }

    fn write(&self) {
        let gpu = self.gpu();
        let info = gpu.info();
        let run = BenchRun {
            date: self.date.clone(),
            gpu: info.name.clone(),
            compute_capability: format!("{}.{}", info.compute_capability.0, info.compute_capability.1),
            driver_cuda: info.driver_cuda_version.clone(),
            ptx_arch: kernels_host::library_arch(gpu).into(),
            copy_gbs: self.copy_gbs,
            cases: self.cases.clone(),
            choices: self.choices.clone(),
            banks: self.banks.clone(),
        };
        let path = std::env::var_os("BENCH_JSON")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| "target/bench/results.json".into());
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let text =
            serde_json::to_string_pretty(&run).unwrap_or_else(|e| fail(&format!("cannot encode the results: {e}")));
        // Written beside, then renamed over: a run killed while writing leaves the previous file whole.
        let staging = path.with_extension("json.partial");
        std::fs::write(&staging, text)
            .and_then(|()| std::fs::rename(&staging, &path))
            .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", path.display())));
        eprintln!("benches: wrote {} ({} cases)", path.display(), self.cases.len());
    }
}

/// The chosen configuration's Rust rate at `size` against the fastest configuration's.
fn compare_choice(
    family: &dyn FamilyDemo,
    size: &str,
    choice: kernels_host::families::choice::Choice,
    cases: &[BenchCase],
) -> ChoiceCase {
    let rate = |entry: &str| {
        cases
            .iter()
            .find(|c| c.kernel == entry && c.size == size && c.source == Some(Source::Rust))
            .map_or(f64::NAN, |c| c.rate)
    };
    let fastest = family
        .choice()
        .configurations()
        .iter()
        .copied()
        .max_by(|a, b| rate(a).total_cmp(&rate(b)))
        .unwrap_or(choice.entry);
    ChoiceCase {
        family: family.name().to_string(),
        size: size.to_string(),
        chosen: choice.entry.to_string(),
        why: choice.why,
        chosen_rate: rate(choice.entry),
        fastest: fastest.to_string(),
        fastest_rate: rate(fastest),
    }
}

fn check_failed(id: &str, why: String) -> ptxkit_runtime::Error {
    ptxkit_runtime::Error::InvalidInput {
        what: format!("bench case {id}"),
        reason: format!("it computed a wrong result: {why}"),
    }
}
