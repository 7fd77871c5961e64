//! The kernel benchmarks: every kernel family on the GPU, with cuBLAS, the CUDA C references and the
//! copy ceiling measured in the same run. Writes `$BENCH_JSON` (default `target/bench/results.json`),
//! which `cargo xtask bench-report` turns into tables and plots. Without a GPU it says so and exits.
//!
//! `CUDA_C_PTX=<dir>`: nvcc-made PTX of `benches/reference/*.cu` (the GPU bundle's run.sh builds it).

use benches::{input_sets, median, spot_check, time_case, time_host_case};
use criterion::Criterion;
use host::demos::managed::{Scenario, run_once};
use host::demos::{ceiling, random_inputs};
use host::gpu::{self, CudaReference, Elementwise, Gpu, MatmulVariant, Source};
use indicatif::{ProgressBar, ProgressStyle};
use kernels::reference;
use std::time::Duration;
use xtask::bench_results::{BenchCase, BenchRun, Family, Source as CaseSource};

const ELEMENTWISE_SIZES: [usize; 5] = [1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28];
const MATMUL_SHAPES: [(usize, usize, usize); 5] = [
    (1024, 1024, 1024),
    (2048, 2048, 2048),
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (8192, 2048, 4096),
];
const MANAGED_N: usize = 1 << 26;
const SEED: u64 = 2026;

struct Bench<'a> {
    gpu: &'a Gpu,
    cuda_c: Option<&'a CudaReference>,
    criterion: Criterion,
    progress: ProgressBar,
    copy_gbs: f64,
    cases: Vec<BenchCase>,
}

fn main() {
    let gpu = match Gpu::open(None) {
        Ok(gpu) => gpu,
        Err(why) => {
            eprintln!(
                "benches: no GPU ({why}): nothing to measure here. They run on the GPU runner: cargo xtask gpu-bundle."
            );
            return;
        }
    };
    let cuda_c = match std::env::var_os("CUDA_C_PTX") {
        Some(dir) => match gpu.load_cuda_reference(std::path::Path::new(&dir)) {
            Ok(reference) => Some(reference),
            Err(why) => fail(&format!("cannot load the CUDA C references: {why}")),
        },
        None => {
            eprintln!("benches: CUDA_C_PTX is not set: measuring without the CUDA C references");
            None
        }
    };
    let copy = ceiling::copy_bandwidth(&gpu, 3, 20).unwrap_or_else(|e| fail(&e.to_string()));
    let total = ELEMENTWISE_SIZES.len() * 2 * 2 + MATMUL_SHAPES.len() * 7 + Scenario::ALL.len();
    let progress = ProgressBar::new(total as u64);
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
        gpu: &gpu,
        cuda_c: cuda_c.as_ref(),
        criterion,
        progress,
        copy_gbs: copy.rate,
        cases: Vec::new(),
    };
    bench.elementwise().unwrap_or_else(|e| fail(&e.to_string()));
    bench.matmul().unwrap_or_else(|e| fail(&e.to_string()));
    bench.managed().unwrap_or_else(|e| fail(&e.to_string()));
    bench.progress.finish_and_clear();
    bench.write();
    bench.criterion.final_summary();
}

fn fail(message: &str) -> ! {
    eprintln!("benches: {message}");
    std::process::exit(1)
}

impl<'a> Bench<'a> {
    fn sources(&self, entry: &str) -> Vec<Source<'a>> {
        Source::for_kernel(entry, self.cuda_c)
    }

    fn record(&mut self, case: BenchCase) {
        self.progress.inc(1);
        self.cases.push(case);
    }

    /// vec_add and shared_mem_add from 2^20 to 2^28 elements, against the copy bandwidth.
    fn elementwise(&mut self) -> host::Result<()> {
        for n in ELEMENTWISE_SIZES {
            let a = random_inputs(SEED, n);
            let b = random_inputs(SEED + 1, n);
            let bytes = 12.0 * n as f64;
            let sets = input_sets(self.gpu, bytes);
            let inputs = (0..sets)
                .map(|_| Ok((self.gpu.upload(&a)?, self.gpu.upload(&b)?)))
                .collect::<host::Result<Vec<_>>>()?;
            for kind in Elementwise::ALL {
                let kernel = kind.info();
                for source in self.sources(kernel.entry) {
                    let mut outputs = (0..sets)
                        .map(|_| self.gpu.upload(&vec![f32::NAN; n]))
                        .collect::<host::Result<Vec<_>>>()?;
                    let id = format!("{}/{}/n={n}", kernel.entry, source.label());
                    self.progress.set_message(id.clone());
                    let gpu = self.gpu;
                    let median_ms = time_case(&mut self.criterion, gpu, ("elementwise", &id), |i| {
                        let (a, b) = &inputs[i % sets];
                        let out = &mut outputs[i % sets];
                        gpu::elementwise_from(gpu, source, kind, a, b, out, n)
                    })?;
                    let out = gpu.download(&outputs[0])?;
                    let block = kernels::shared_mem_add::BLOCK as usize;
                    let expected = |i: usize| {
                        let staged = |j: usize| a[j] as f64 + b[j] as f64;
                        let value = if kind == Elementwise::VecAdd || i.is_multiple_of(block) {
                            staged(i)
                        } else {
                            staged(i) + staged(i - 1)
                        };
                        (value, 4.0 * reference::F32_UNIT_ROUNDOFF * (value.abs() + 4.0))
                    };
                    spot_check(&out, expected, 997).map_err(|why| check_failed(&id, why))?;
                    let rate = bytes / (median_ms * 1e-3) / 1e9;
                    self.record(BenchCase {
                        family: Family::Elementwise,
                        kernel: kernel.entry.into(),
                        source: case_source(source),
                        size: format!("n={n}"),
                        x: n as f64,
                        bytes,
                        flops: n as f64,
                        median_ms,
                        rate,
                        percent_of_ceiling: Some(100.0 * rate / self.copy_gbs),
                        kernel_ms: None,
                        input_sets: sets,
                    });
                }
            }
        }
        Ok(())
    }

    /// cuBLAS and the three matmul kernels from 1024 to 8192 and one rectangular shape.
    fn matmul(&mut self) -> host::Result<()> {
        for (m, n, k) in MATMUL_SHAPES {
            let a = random_inputs(SEED + 4, m * k);
            let b = random_inputs(SEED + 5, k * n);
            let flops = 2.0 * m as f64 * n as f64 * k as f64;
            let bytes = 4.0 * (m * k + k * n + m * n) as f64;
            let sets = input_sets(self.gpu, bytes);
            let inputs = (0..sets)
                .map(|_| Ok((self.gpu.upload(&a)?, self.gpu.upload(&b)?)))
                .collect::<host::Result<Vec<_>>>()?;
            let oracle = host::demos::matmul::Oracle::new(&a, &b, (m, n, k), SEED);
            let size = format!("{m}x{n}x{k}");
            let cublas = gpu::Cublas::new(self.gpu)?;
            let mut cublas_rate = f64::NAN;
            let mut runs = vec![MatmulRun::Cublas];
            for variant in MatmulVariant::ALL {
                runs.extend(
                    self.sources(variant.info().entry)
                        .into_iter()
                        .map(|source| MatmulRun::Kernel(variant, source)),
                );
            }
            for launch in runs {
                let (kernel, case_source) = match launch {
                    MatmulRun::Cublas => ("cublas_sgemm".to_string(), CaseSource::Library),
                    MatmulRun::Kernel(variant, source) => (variant.info().entry.to_string(), case_source(source)),
                };
                let mut c = self.gpu.upload(&vec![f32::NAN; m * n])?;
                let id = format!("{kernel}/{}/{size}", source_name(case_source));
                self.progress.set_message(id.clone());
                let gpu = self.gpu;
                let median_ms = time_case(&mut self.criterion, gpu, ("matmul", &id), |i| {
                    let (a, b) = &inputs[i % sets];
                    match launch {
                        MatmulRun::Cublas => cublas.sgemm(gpu, a, b, &mut c, m, n, k),
                        MatmulRun::Kernel(variant, source) => {
                            gpu::matmul_from(gpu, source, variant, a, b, &mut c, m, n, k)
                        }
                    }
                })?;
                oracle.check(&gpu.download(&c)?).map_err(|why| check_failed(&id, why))?;
                let rate = flops / (median_ms * 1e-3) / 1e12;
                if matches!(launch, MatmulRun::Cublas) {
                    cublas_rate = rate;
                }
                self.record(BenchCase {
                    family: Family::Matmul,
                    kernel,
                    source: case_source,
                    size: size.clone(),
                    x: m as f64,
                    bytes,
                    flops,
                    median_ms,
                    rate,
                    percent_of_ceiling: Some(100.0 * rate / cublas_rate),
                    kernel_ms: None,
                    input_sets: sets,
                });
            }
        }
        Ok(())
    }

    /// The ways to get vec_add's data to the GPU and back: end to end and kernel time.
    fn managed(&mut self) -> host::Result<()> {
        let a = random_inputs(SEED + 6, MANAGED_N);
        let b = random_inputs(SEED + 7, MANAGED_N);
        let expected = reference::vec_add(&a, &b);
        for scenario in Scenario::ALL {
            let id = format!("{}/n={MANAGED_N}", scenario.name());
            self.progress.set_message(id.clone());
            let mut kernel_ms = Vec::new();
            let gpu = self.gpu;
            let median_ms = time_host_case(&mut self.criterion, ("managed", &id), || {
                let (sample, check) = run_once(gpu, scenario, &a, &b, &expected)?;
                check.map_err(|why| check_failed(&id, why))?;
                kernel_ms.push(sample.kernel_ms);
                Ok(sample.end_to_end_ms)
            })?;
            let bytes = 12.0 * MANAGED_N as f64;
            self.record(BenchCase {
                family: Family::Managed,
                kernel: scenario.name().into(),
                source: CaseSource::Rust,
                size: format!("n={MANAGED_N}"),
                x: MANAGED_N as f64,
                bytes,
                flops: MANAGED_N as f64,
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
        let info = self.gpu.info();
        let run = BenchRun {
            date: host::demos::report::utc_date(),
            gpu: info.name.clone(),
            compute_capability: format!("{}.{}", info.compute_capability.0, info.compute_capability.1),
            driver_cuda: info.driver_cuda_version.clone(),
            ptx_arch: self.gpu.ptx_arch().into(),
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

/// What one matmul case launches: cuBLAS (first: it is the ceiling) or one kernel from one source.
#[derive(Clone, Copy)]
enum MatmulRun<'a> {
    Cublas,
    Kernel(MatmulVariant, Source<'a>),
}

fn check_failed(id: &str, why: String) -> host::HostError {
    host::HostError::InvalidInput {
        kernel: "bench",
        reason: format!("{id} computed a wrong result: {why}"),
    }
}

fn case_source(source: Source) -> CaseSource {
    match source {
        Source::Rust => CaseSource::Rust,
        Source::CudaC(_) => CaseSource::CudaC,
    }
}

fn source_name(source: CaseSource) -> &'static str {
    match source {
        CaseSource::Rust => "rust",
        CaseSource::CudaC => "cuda_c",
        CaseSource::Library => "library",
    }
}
