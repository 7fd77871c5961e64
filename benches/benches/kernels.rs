//! The kernel benchmarks: every registered family at its bench sizes on the GPU, every kernel from
//! Rust and (where `CUDA_C_PTX` has it) from CUDA C, with the family's library baseline and the copy
//! ceiling measured in the same run, then the managed-memory scenarios. Writes `$BENCH_JSON`
//! (default `target/bench/results.json`), which `cargo xtask bench-report` turns into tables and
//! plots. Without a GPU it says so and exits.
//!
//! `CUDA_C_PTX=<dir>`: nvcc-made PTX of `benches/cuda_c/*.cu` (the GPU bundle's run.sh builds it).

use benches::{input_sets, median, time_case, time_host_case};
use criterion::Criterion;
use host::Backend;
use host::demos::ceiling;
use host::demos::managed::{self, Scenario, run_once};
use host::families::{self, Bound, FamilyDemo};
use host::gpu::Gpu;
use indicatif::{ProgressBar, ProgressStyle};
use kernels::Source;
use std::time::Duration;
use xtask::bench_results::{self, BenchCase, BenchRun};

/// The random stream of every case's inputs.
const RNG: u64 = 2026;

struct Bench {
    backend: Backend,
    criterion: Criterion,
    progress: ProgressBar,
    copy_gbs: f64,
    cases: Vec<BenchCase>,
}

fn main() {
    let mut gpu = match Gpu::open(None) {
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
            if let Err(why) = gpu.load_cuda_c(std::path::Path::new(&dir)) {
                fail(&format!("cannot load the CUDA C twins: {why}"));
            }
        }
        None => eprintln!("benches: CUDA_C_PTX is not set: measuring without the CUDA C twins"),
    }
    let copy = ceiling::copy_bandwidth(&gpu, 3, 20).unwrap_or_else(|e| fail(&e.to_string()));
    let backend = Backend::Gpu(Box::new(gpu));
    let progress = ProgressBar::new(planned_cases(&backend) as u64);
    progress.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}").unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let criterion = Criterion::default()
        .configure_from_args()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(10)
        .without_plots();
    let mut bench = Bench {
        backend,
        criterion,
        progress,
        copy_gbs: copy.rate,
        cases: Vec::new(),
    };
    for family in families::FAMILIES {
        bench.family(*family).unwrap_or_else(|e| fail(&e.to_string()));
    }
    bench.managed().unwrap_or_else(|e| fail(&e.to_string()));
    bench.progress.finish_and_clear();
    bench.write();
    bench.criterion.final_summary();
}

fn fail(message: &str) -> ! {
    eprintln!("benches: {message}");
    std::process::exit(1)
}

/// Cases the run will measure, for the progress bar: from the registry, as the run itself counts.
fn planned_cases(backend: &Backend) -> usize {
    let kernels = families::FAMILIES.iter().map(|family| {
        let rated = family.bench_sizes().len();
        let sources: usize = family
            .kernels()
            .iter()
            .map(|k| Source::ALL.iter().filter(|&&s| backend.has(k.entry, s)).count())
            .sum();
        // The baseline, where the family has one, is one more case per size.
        rated * (sources + usize::from(family.baseline().is_some()))
    });
    kernels.sum::<usize>() + Scenario::ALL.len()
}

impl Bench {
    fn gpu(&self) -> &Gpu {
        self.backend.gpu().expect("the benches run on a GPU")
    }

    /// Every kernel of `family` at each bench size, each from every source the GPU has, after the
    /// family's library baseline where it has one.
    fn family(&mut self, family: &dyn FamilyDemo) -> host::Result<()> {
        let Bench {
            backend,
            criterion,
            progress,
            copy_gbs,
            cases,
        } = self;
        let gpu = backend.gpu().expect("the benches run on a GPU");
        for size in family.bench_sizes() {
            let plan = family.plan(size)?;
            let bound = match plan.work.bound {
                Bound::Memory => bench_results::Bound::Memory,
                Bound::Compute => bench_results::Bound::Compute,
                Bound::Check => continue,
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
            if let Some(baseline) = case.baseline() {
                let id = format!("{baseline}/library/{label}");
                progress.set_message(id.clone());
                case.poison()?;
                let median_ms = time_case(criterion, gpu, (family.name(), &id), |i| case.launch_baseline(i % sets))?;
                case.check(0).map_err(|why| check_failed(&id, why))?;
                let library = measured(baseline, None, median_ms, None);
                ceiling = Some(library.rate);
                cases.push(BenchCase {
                    percent_of_ceiling: Some(100.0),
                    ..library
                });
                progress.inc(1);
            }
            for (index, kernel) in family.kernels().iter().enumerate() {
                for source in Source::ALL.into_iter().filter(|&s| backend.has(kernel.entry, s)) {
                    let id = format!("{}/{}/{label}", kernel.entry, source.label());
                    progress.set_message(id.clone());
                    case.poison()?;
                    let median_ms = time_case(criterion, gpu, (family.name(), &id), |i| {
                        case.launch(index, source, i % sets)
                    })?;
                    case.check(0).map_err(|why| check_failed(&id, why))?;
                    cases.push(measured(kernel.entry, Some(source), median_ms, ceiling));
                    progress.inc(1);
                }
            }
        }
        Ok(())
    }

    /// The ways to get vec_add's data to the GPU and back: end to end and kernel time.
    fn managed(&mut self) -> host::Result<()> {
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

    fn write(&self) {
        let gpu = self.gpu();
        let info = gpu.info();
        let run = BenchRun {
            date: host::demos::report::utc_date(),
            gpu: info.name.clone(),
            compute_capability: format!("{}.{}", info.compute_capability.0, info.compute_capability.1),
            driver_cuda: info.driver_cuda_version.clone(),
            ptx_arch: gpu.ptx_arch().into(),
            copy_gbs: self.copy_gbs,
            cases: self.cases.clone(),
        };
        let path = std::env::var_os("BENCH_JSON")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| "target/bench/results.json".into());
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let text =
            serde_json::to_string_pretty(&run).unwrap_or_else(|e| fail(&format!("cannot encode the results: {e}")));
        std::fs::write(&path, text).unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", path.display())));
        eprintln!("benches: wrote {} ({} cases)", path.display(), self.cases.len());
    }
}

fn check_failed(id: &str, why: String) -> host::HostError {
    host::HostError::InvalidInput {
        what: format!("bench case {id}"),
        reason: format!("it computed a wrong result: {why}"),
    }
}
