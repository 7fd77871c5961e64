//! `cargo xtask bench-report`: the benches' results file turned into the committed docs (README.md
//! with tables, the plots, and the raw data beside them), so that numbers in the docs always come
//! from one run of the benches and can be regenerated.
//!
//! Every file is first written into a staging folder beside the output; only when all of them
//! exist are they moved into place, so a failed report leaves the old one whole.

use crate::plots::{self, Plot};
use crate::run_view::{MULTI_GPU, code, families, kernel_ranks, library_rates, of_library, ratios, text};
use indicatif::{ProgressBar, ProgressStyle};
use kernels::bench_results::{BankReading, BenchCase, BenchRun, Bound, ModelsRun, SizesRun, Source, TorchRun};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Where results files come from: the benches need the GPU runner.
const HOW_TO_RUN: &str = "run the benches on the GPU runner with `target/gpu-bundle/run.sh OUT bench` \
     (the bundle comes from `cargo xtask gpu-bundle`) and pass `--input OUT/bench.json`";

/// Results files larger than this are refused: a run has hundreds of cases, a few hundred KiB.
const MAX_INPUT_BYTES: u64 = 64 << 20;

/// One file the report writes.
enum Step {
    Data,
    /// The PyTorch benchmark's file, copied beside the results.
    TorchData,
    /// The model-shape suite's file, copied beside the results, and its plot.
    ModelsData,
    ModelsSvg,
    ModelsPng,
    /// The size sweep's file, copied beside the results, and its plot.
    SizesData,
    SizesSvg,
    SizesPng,
    Readme,
    Svg(Plot),
    Png(Plot),
}

impl Step {
    fn file(&self) -> String {
        match self {
            Step::Data => "results.json".into(),
            Step::TorchData => TORCH_FILE.into(),
            Step::ModelsData => MODELS_FILE.into(),
            Step::ModelsSvg => format!("{MODELS_PLOT}.svg"),
            Step::ModelsPng => format!("{MODELS_PLOT}.png"),
            Step::SizesData => SIZES_FILE.into(),
            Step::SizesSvg => format!("{SIZES_PLOT}.svg"),
            Step::SizesPng => format!("{SIZES_PLOT}.png"),
            Step::Readme => "README.md".into(),
            Step::Svg(plot) => format!("{}.svg", plot.stem()),
            Step::Png(plot) => format!("{}.png", plot.stem()),
        }
    }
}

/// The PyTorch benchmark's name in the report's folder.
const TORCH_FILE: &str = "torch-ops.json";
/// The model-shape suite's file and plot in the report's folder.
const MODELS_FILE: &str = "torch-models.json";
const MODELS_PLOT: &str = "models";
/// The size sweep's file and plot in the report's folder.
const SIZES_FILE: &str = "torch-sizes.json";
const SIZES_PLOT: &str = "sizes";

/// The files a report reads besides the benches' results, each optional.
#[derive(Default)]
pub struct ExtraInputs<'a> {
    /// The PyTorch extension's benchmark.
    pub torch: Option<&'a Path>,
    /// The model-shape suite against PyTorch.
    pub models: Option<&'a Path>,
    /// The size sweep against PyTorch.
    pub sizes: Option<&'a Path>,
}

/// Reads `input` (and the extra inputs given: the PyTorch extension's benchmark, the model-shape
/// suite and the size sweep against PyTorch) and writes the report into `out`; returns the files
/// written.
pub fn write(input: &Path, extra: ExtraInputs, out: &Path) -> Result<Vec<PathBuf>, String> {
    let text = read_capped(input, "a bench results file", HOW_TO_RUN)?;
    let run: BenchRun = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not a bench results file ({e}); {HOW_TO_RUN}", input.display()))?;

    let torch = extra.torch.map(read_torch).transpose()?;
    let models = extra.models.map(read_models).transpose()?;
    let sizes = extra.sizes.map(read_sizes).transpose()?;
    let plots = Plot::all(&run);
    let mut steps = vec![Step::Data, Step::Readme];
    if torch.is_some() {
        steps.push(Step::TorchData);
    }
    if models.is_some() {
        steps.extend([Step::ModelsData, Step::ModelsSvg, Step::ModelsPng]);
    }
    if sizes.is_some() {
        steps.extend([Step::SizesData, Step::SizesSvg, Step::SizesPng]);
    }
    for plot in &plots {
        steps.extend([Step::Svg(plot.clone()), Step::Png(plot.clone())]);
    }
    let owned = crate::owned::claim(out, "--out", "bench-report")?;
    let names: Vec<String> = steps.iter().map(Step::file).collect();
    owned.check_names(names.iter().map(String::as_str))?;
    let staging = staging_dir(out);
    remove_stale_staging(out);
    std::fs::create_dir_all(&staging).map_err(|e| format!("cannot create {}: {e}", staging.display()))?;
    let progress = ProgressBar::new(steps.len() as u64);
    progress.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let extras = Extras {
        torch: torch.as_ref(),
        models: models.as_ref(),
        sizes: sizes.as_ref(),
    };
    let staged = stage(&run, &text, &extras, &steps, &staging, &progress);
    progress.finish_and_clear();
    let result = staged.and_then(|()| publish(&names, &staging, &owned));
    let _ = std::fs::remove_dir_all(&staging);
    result
}

/// The files besides the benches' results, each parsed and as read.
struct Extras<'a> {
    torch: Option<&'a (TorchRun, String)>,
    models: Option<&'a (ModelsRun, String)>,
    sizes: Option<&'a (SizesRun, String)>,
}

impl Extras<'_> {
    /// The model-shape suite's results, which the models' steps are only planned with.
    fn models_run(&self) -> Result<&ModelsRun, String> {
        self.models
            .map(|(run, _)| run)
            .ok_or_else(|| "the models' plot was planned without --models".to_string())
    }

    /// The size sweep's results, which the sizes' steps are only planned with.
    fn sizes_run(&self) -> Result<&SizesRun, String> {
        self.sizes
            .map(|(run, _)| run)
            .ok_or_else(|| "the sizes' plot was planned without --sizes".to_string())
    }
}

/// Writes every step's file into `staging`.
fn stage(
    run: &BenchRun,
    text: &str,
    extras: &Extras,
    steps: &[Step],
    staging: &Path,
    progress: &ProgressBar,
) -> Result<(), String> {
    for step in steps {
        let path = staging.join(step.file());
        progress.set_message(step.file());
        let cannot = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
        match step {
            // The text already read, not a file copy: the input may be the output's own copy.
            Step::Data => std::fs::write(&path, text).map_err(cannot)?,
            Step::TorchData => std::fs::write(&path, extras.torch.map_or("", |(_, raw)| raw)).map_err(cannot)?,
            Step::ModelsData => std::fs::write(&path, extras.models.map_or("", |(_, raw)| raw)).map_err(cannot)?,
            Step::ModelsSvg => crate::models_plot::write_svg(extras.models_run()?, &path)?,
            Step::ModelsPng => crate::models_plot::write_png(extras.models_run()?, &path)?,
            Step::SizesData => std::fs::write(&path, extras.sizes.map_or("", |(_, raw)| raw)).map_err(cannot)?,
            Step::SizesSvg => crate::sizes_plot::write_svg(extras.sizes_run()?, &path)?,
            Step::SizesPng => crate::sizes_plot::write_png(extras.sizes_run()?, &path)?,
            Step::Readme => {
                let mut md = markdown(run, extras.torch.map(|(t, _)| t));
                if let Some((models, _)) = extras.models {
                    models_section(&mut md, models);
                }
                if let Some((sizes, _)) = extras.sizes {
                    sizes_section(&mut md, sizes);
                }
                std::fs::write(&path, md).map_err(cannot)?
            }
            Step::Svg(plot) => plot.write_svg(run, &path)?,
            Step::Png(plot) => plot.write_png(run, &path)?,
        }
        progress.inc(1);
    }
    Ok(())
}

/// Moves the staged files (`names`) into the report's folder and removes what an earlier report
/// wrote there and this one did not (plots that would sit beside a README that no longer shows
/// them); the folder's other files are the user's and stay.
fn publish(names: &[String], staging: &Path, owned: &crate::owned::Owned) -> Result<Vec<PathBuf>, String> {
    let out = owned.dir();
    owned.clear_previous(names)?;
    let mut written = Vec::new();
    for file in names {
        let target = out.join(file);
        std::fs::rename(staging.join(file), &target)
            .map_err(|e| format!("cannot move {file} into {}: {e}", out.display()))?;
        written.push(target);
    }
    owned.record(names)?;
    Ok(written)
}

/// Removes staging folders that runs killed before they finished left beside `out` (those of
/// processes that no longer run).
fn remove_stale_staging(out: &Path) {
    let name = out
        .file_name()
        .map_or_else(|| "report".into(), |n| n.to_string_lossy().into_owned());
    let prefix = format!(".{name}.staging-");
    let Some(parent) = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .or(Some(Path::new(".")))
    else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let file_name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = file_name.strip_prefix(&prefix).and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A fresh folder beside `out` (same file system, so the final moves are renames).
fn staging_dir(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map_or_else(|| "report".into(), |n| n.to_string_lossy().into_owned());
    out.with_file_name(format!(".{name}.staging-{}", std::process::id()))
}

/// The text of `path`, read up to [`MAX_INPUT_BYTES`] whatever size the file reports (a device or
/// a pipe reports none): longer is refused as not being `what`; `how` says how to make one.
fn read_capped(path: &Path, what: &str, how: &str) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("{} does not exist: {how}", path.display()),
        _ => format!("cannot read {}: {e}", path.display()),
    })?;
    let mut bytes = Vec::new();
    file.take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(format!(
            "{} holds more than {} MiB, far more than {what}: {how}",
            path.display(),
            MAX_INPUT_BYTES >> 20
        ));
    }
    String::from_utf8(bytes).map_err(|_| format!("{} is not text, so not {what}: {how}", path.display()))
}

/// The PyTorch benchmark at `path` and its text, or why it cannot be read.
fn read_torch(path: &Path) -> Result<(TorchRun, String), String> {
    let how =
        "write it on the GPU runner with `target/gpu-bundle/run.sh OUT torch` and pass `--torch OUT/torch-ops.json`";
    let raw = read_capped(path, "the PyTorch benchmark's file", how)?;
    let run = serde_json::from_str(&raw)
        .map_err(|e| format!("{} is not the PyTorch benchmark's file ({e}); {how}", path.display()))?;
    Ok((run, raw))
}

/// The model-shape suite's file at `path` and its text, or why it cannot be read.
fn read_models(path: &Path) -> Result<(ModelsRun, String), String> {
    let how = "write it on the GPU runner with `target/gpu-bundle/run.sh OUT torch` (or \
               `host/python/bench_models.py --json FILE`) and pass `--models OUT/torch-models.json`";
    let raw = read_capped(path, "the model-shape suite's file", how)?;
    let run = serde_json::from_str(&raw)
        .map_err(|e| format!("{} is not the model-shape suite's file ({e}); {how}", path.display()))?;
    Ok((run, raw))
}

/// The size sweep's file at `path` and its text, or why it cannot be read.
fn read_sizes(path: &Path) -> Result<(SizesRun, String), String> {
    let how = "write it on the GPU runner with `target/gpu-bundle/run.sh OUT torch` (or \
               `host/python/bench_sizes.py --json FILE`) and pass `--sizes OUT/torch-sizes.json`";
    let raw = read_capped(path, "the size sweep's file", how)?;
    let run = serde_json::from_str(&raw)
        .map_err(|e| format!("{} is not the size sweep's file ({e}); {how}", path.display()))?;
    Ok((run, raw))
}

/// The size sweep against PyTorch: each operator's summary over the domain, the points
/// below parity, and the plot.
fn sizes_section(md: &mut String, sizes: &SizesRun) {
    let _ = writeln!(
        md,
        "## Reductions, scans and row operators at every size, from PyTorch\n"
    );
    let _ = writeln!(
        md,
        "`sum` and `cumsum` from 2^10 to 2^30 elements, `row_sum`, `row_max` and `softmax` over row widths \
         from 1 to 256k columns at 2^16 to 2^28 elements ({} points), through the `rust_kernels` operators \
         against PyTorch {}'s own on {} ([{SIZES_FILE}]({SIZES_FILE}), `host/python/bench_sizes.py`: each \
         point checked against PyTorch's result first, CUDA-event medians). Speed: PyTorch's time over ours, \
         above 1 ours is faster. The summary covers the issue's domain: from 2^16 elements, widths from 32.\n",
        sizes.size_points.len(),
        text(&sizes.torch),
        text(&sizes.device)
    );
    let _ = writeln!(
        md,
        "| operator | points | geomean speed | worst | at rows × cols | below 1.00× |"
    );
    let _ = writeln!(md, "| --- | ---: | ---: | ---: | --- | ---: |");
    for (op, s) in &sizes.summary {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            text(op),
            s.points,
            fixed(s.geomean_speed, 3),
            fixed(s.worst_speed, 3),
            s.worst_shape.map(|x| x.to_string()).join(" × "),
            s.below_1
        );
    }
    let wrong: Vec<String> = sizes
        .size_points
        .iter()
        .filter(|p| !p.checked)
        .map(|p| format!("{} {} × {}", text(&p.op), p.rows, p.cols))
        .collect();
    if !wrong.is_empty() {
        let _ = writeln!(md, "\n**Outside their bound** ({}): {}.", wrong.len(), wrong.join(", "));
    }
    let _ = writeln!(
        md,
        "\n![Speed against PyTorch by size and row width](sizes.svg)\n\n[PNG](sizes.png)\n"
    );
}

/// The model-shape suite against PyTorch: each dtype's summary, the geometric mean by token
/// count, and the plot.
fn models_section(md: &mut String, models: &ModelsRun) {
    let _ = writeln!(
        md,
        "## Matrix products at model shapes, from PyTorch
"
    );
    let _ = writeln!(
        md,
        "The linear layers of the models in `benches/shapes/models.json` ({} products) through the \
         `rust_kernels` operators against PyTorch {}'s `a @ b` on {} ([{MODELS_FILE}]({MODELS_FILE}), \
         `host/python/bench_models.py`: each product checked against the f64 product first, CUDA-event \
         medians). Speed: PyTorch's time over ours, above 1 ours is faster; bf16 returns f32 here and bf16 \
         from PyTorch.\n",
        models
            .products
            .iter()
            .map(|p| (p.m, p.n, p.k))
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        text(&models.torch),
        text(&models.device)
    );
    let _ = writeln!(
        md,
        "| dtype | products | geomean speed | worst | at m × n × k | below {}× |",
        crate::models_plot::FLOOR
    );
    let _ = writeln!(md, "| --- | ---: | ---: | ---: | --- | ---: |");
    for (dtype, s) in &models.summary {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            text(dtype),
            s.shapes,
            fixed(s.geomean_speed, 3),
            fixed(s.worst_speed, 3),
            s.worst_shape.map(|x| x.to_string()).join(" × "),
            s.below_0_85
        );
    }
    let dtypes: Vec<&str> = models.summary.keys().map(String::as_str).collect();
    let mut tokens: Vec<u64> = models.products.iter().map(|p| p.m).collect();
    tokens.sort_unstable();
    tokens.dedup();
    let _ = writeln!(md, "\nBy token count (m), the geometric mean of the speed:\n");
    let _ = writeln!(
        md,
        "| m | {} |",
        dtypes.iter().map(|d| text(d)).collect::<Vec<_>>().join(" | ")
    );
    let _ = writeln!(md, "| ---: |{}", " ---: |".repeat(dtypes.len()));
    for m in tokens {
        let cells: Vec<String> = dtypes
            .iter()
            .map(|dtype| {
                let speeds: Vec<f64> = models
                    .products
                    .iter()
                    .filter(|p| p.m == m && p.dtype == *dtype && p.speed > 0.0)
                    .map(|p| p.speed)
                    .collect();
                if speeds.is_empty() {
                    "–".into()
                } else {
                    fixed(
                        (speeds.iter().map(|s| s.ln()).sum::<f64>() / speeds.len() as f64).exp(),
                        3,
                    )
                }
            })
            .collect();
        let _ = writeln!(md, "| {m} | {} |", cells.join(" | "));
    }
    let _ = writeln!(
        md,
        "\n![Speed against PyTorch per product, by its size](models.svg)\n\n[PNG](models.png)\n"
    );
}

/// The README: the run's machine, then the compute-bound families one by one, the memory-bound
/// kernels together, the managed-memory scenarios, Rust against CUDA C, and (when given) the
/// operators from PyTorch.
pub fn markdown(run: &BenchRun, torch: Option<&TorchRun>) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Benchmarks\n");
    let _ = writeln!(
        md,
        "Run of {} on {} (compute capability {}), driver CUDA {}, Rust PTX for {}; copy ceiling {} GB/s.\n",
        text(&run.date),
        text(&run.gpu),
        text(&run.compute_capability),
        text(&run.driver_cuda),
        text(&run.ptx_arch),
        fixed(run.copy_gbs, 1)
    );
    let _ = writeln!(
        md,
        "Generated by `cargo xtask bench-report` from [results.json](results.json), the raw data. Times are \
         medians over all criterion samples; each case rotates through enough input sets that every \
         iteration misses the L2.\n"
    );
    for family in families(run, Bound::Compute) {
        compute_section(&mut md, run, &family);
    }
    memory_section(&mut md, run);
    choice_section(&mut md, run);
    bank_section(&mut md, run);
    transfer_section(&mut md, run);
    multi_gpu_section(&mut md, run);
    ratio_section(&mut md, run);
    if let Some(torch) = torch {
        torch_section(&mut md, torch);
    }
    md
}

/// The kernels as PyTorch operators against PyTorch's own, and what a call costs.
fn torch_section(md: &mut String, torch: &TorchRun) {
    let _ = writeln!(md, "## From PyTorch\n");
    let _ = writeln!(
        md,
        "The `rust_kernels` wheel on {} with PyTorch {} ([{TORCH_FILE}]({TORCH_FILE}), \
         `host/python/bench_torch.py`: torch.utils.benchmark medians, outputs allocated by torch in \
         both columns). Speed above 1: the Rust kernel is faster.\n",
        text(&torch.device),
        text(&torch.torch)
    );
    let _ = writeln!(
        md,
        "| operator | shape | Rust µs | PyTorch µs | Rust rate | PyTorch rate | speed |"
    );
    let _ = writeln!(md, "| --- | --- | ---: | ---: | ---: | ---: | ---: |");
    for op in &torch.ops {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} {unit} | {} {unit} | {} |",
            text(&op.op),
            text(&op.shape),
            fixed(op.rust_us, 1),
            fixed(op.pytorch_us, 1),
            fixed(op.rust_rate, 1),
            fixed(op.pytorch_rate, 1),
            fixed(op.speedup, 3),
            unit = text(&op.unit)
        );
    }
    let _ = writeln!(
        md,
        "\nPer call on a 256-element add, where the host's work, not the GPU's, sets the time:\n"
    );
    let _ = writeln!(md, "| call | µs |");
    let _ = writeln!(md, "| --- | ---: |");
    for (call, us) in &torch.per_call_us {
        let _ = writeln!(md, "| {} | {} |", text(call), fixed(*us, 2));
    }
    md.push('\n');
}

fn compute_section(md: &mut String, run: &BenchRun, family: &str) {
    let _ = writeln!(md, "## {}\n", text(family));
    let cases = sorted(run, |c| c.bound == Bound::Compute && c.family == family);
    let _ = writeln!(
        md,
        "TFLOP/s; % of ceiling compares with the library (source \"library\") on the same shape in this run.\n"
    );
    embed(md, run, &Plot::Compute(family.to_string()));
    // The ladder only where the family has one: a plot's absence needs no note here.
    let ladder = Plot::Ladder(family.to_string());
    if ladder.missing(run).is_none() {
        embed(md, run, &ladder);
    }
    let _ = writeln!(md, "| kernel | source | size | median ms | TFLOP/s | % of ceiling |");
    let _ = writeln!(md, "| --- | --- | --- | ---: | ---: | ---: |");
    let libraries = library_rates(run);
    for c in cases {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            text(&c.kernel),
            plots::source_label(c.source),
            text(&c.size),
            ms(c.median_ms),
            fixed(c.rate, 2),
            percent(c.percent_of_ceiling.or_else(|| of_library(&libraries, c)))
        );
    }
    md.push('\n');
}

fn memory_section(md: &mut String, run: &BenchRun) {
    let _ = writeln!(md, "## Memory-bound kernels\n");
    let cases = sorted(run, |c| c.bound == Bound::Memory);
    if cases.is_empty() {
        let _ = writeln!(md, "_No memory-bound cases in this run._\n");
        return;
    }
    let _ = writeln!(
        md,
        "GB/s counts each input read once and each output written once; % of copy compares with the \
         device-to-device copy bandwidth measured in this run ({} GB/s).\n",
        fixed(run.copy_gbs, 1)
    );
    for family in families(run, Bound::Memory) {
        let _ = writeln!(md, "### {}\n", text(&family));
        embed(md, run, &Plot::Memory(family.clone()));
        let _ = writeln!(md, "| kernel | source | size | median ms | GB/s | % of copy |");
        let _ = writeln!(md, "| --- | --- | --- | ---: | ---: | ---: |");
        for c in cases.iter().filter(|c| c.family == family) {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} |",
                text(&c.kernel),
                plots::source_label(c.source),
                size_cell(c),
                ms(c.median_ms),
                fixed(c.rate, 1),
                percent(c.percent_of_ceiling)
            );
        }
        md.push('\n');
    }
}

/// The bank-conflict study, when the run has it: the plot, how many patterns matched, and the
/// seeds' named accesses.
fn bank_section(md: &mut String, run: &BenchRun) {
    if run.banks.is_empty() {
        return;
    }
    let _ = writeln!(md, "## Shared-memory bank conflicts\n");
    let matched = run.banks.iter().filter(|b| b.matches()).count();
    let _ = writeln!(
        md,
        "A warp's 32 lanes read `width`-byte elements `stride` elements apart (the probe: `host \
         bank-conflicts`). Predicted: shared-memory wavefronts per request from the bank rule \
         (`kernels::banks::conflict_degree`); measured: cycles per request over the stride-1 request's. \
         {matched} of {} patterns measured within {:.0} % of the prediction.\n",
        run.banks.len(),
        BankReading::TOLERANCE * 100.0
    );
    embed(md, run, &Plot::Banks);
    let _ = writeln!(
        md,
        "| access | width | stride | predicted | measured | cycles per request |"
    );
    let _ = writeln!(md, "| --- | ---: | ---: | ---: | ---: | ---: |");
    for b in run.banks.iter().filter(|b| b.example.is_some()) {
        let _ = writeln!(
            md,
            "| `{}` | {} B | {} | {} | {} | {} |",
            code(b.example.as_deref().unwrap_or_default()),
            b.width,
            b.stride,
            fixed(b.predicted, 0),
            fixed(b.measured, 2),
            fixed(b.cycles_per_request, 2)
        );
    }
    md.push('\n');
}

fn choice_section(md: &mut String, run: &BenchRun) {
    if run.choices.is_empty() {
        return;
    }
    let _ = writeln!(md, "## Tile configurations chosen from the device\n");
    let _ = writeln!(
        md,
        "For families registered at several tile sizes, the one `host` chooses for this GPU (the fastest in \
         its tile profile where that has the shape; else at least two resident blocks per SM, then the largest \
         tile whose waves keep three quarters of the block slots busy) against the fastest one measured.\n"
    );
    let _ = writeln!(
        md,
        "| family | size | chosen | rate | fastest | rate | chosen / fastest |"
    );
    let _ = writeln!(md, "| --- | --- | --- | ---: | --- | ---: | ---: |");
    for c in &run.choices {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} |",
            text(&c.family),
            text(&c.size),
            text(&c.chosen),
            fixed(c.chosen_rate, 1),
            text(&c.fastest),
            fixed(c.fastest_rate, 1),
            fixed(c.chosen_rate / c.fastest_rate, 3)
        );
    }
    md.push('\n');
}

fn transfer_section(md: &mut String, run: &BenchRun) {
    let _ = writeln!(md, "## Managed memory and copies\n");
    let cases: Vec<&BenchCase> = run
        .cases
        .iter()
        .filter(|c| c.bound == Bound::Transfer && c.family != MULTI_GPU)
        .collect();
    let Some(first) = cases.first() else {
        let _ = writeln!(md, "_No managed-memory cases in this run._\n");
        return;
    };
    // One size for all (the usual case) goes in the text; otherwise each row names its own.
    let one_size = cases.iter().all(|c| c.size == first.size);
    let size = if one_size {
        format!("{} elements per scenario. ", elements(first.x))
    } else {
        String::new()
    };
    let _ = writeln!(
        md,
        "{size}End to end includes moving the inputs to the GPU and the result back; kernel ms is the \
         kernel alone; effective GB/s is the bytes the kernel must move over the end-to-end time.\n"
    );
    let _ = writeln!(md, "| scenario | end-to-end ms | kernel ms | effective GB/s |");
    let _ = writeln!(md, "| --- | ---: | ---: | ---: |");
    for c in cases {
        let scenario = if one_size {
            text(&c.kernel)
        } else {
            format!("{} ({})", text(&c.kernel), text(&c.size))
        };
        let kernel_ms = c.kernel_ms.map_or_else(|| "—".into(), ms);
        let _ = writeln!(
            md,
            "| {scenario} | {} | {kernel_ms} | {} |",
            ms(c.median_ms),
            fixed(c.rate, 1)
        );
    }
    md.push('\n');
}

/// The several-GPU scenarios (`host multi-gpu`), only where the run has them: each row against the
/// ceiling the scenario measured in the same run (the copy engine's one direction for the links,
/// one GPU for the split products).
fn multi_gpu_section(md: &mut String, run: &BenchRun) {
    let cases: Vec<&BenchCase> = run.cases.iter().filter(|c| c.family == MULTI_GPU).collect();
    if cases.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "## Several GPUs
"
    );
    let _ = writeln!(
        md,
        "`host multi-gpu`'s scenarios. % of ceiling: against the copy engine's one-direction rate \
         for the links, against one GPU for the split products (200 % is twice one GPU), both \
         measured in this run.\n"
    );
    let _ = writeln!(md, "| scenario | size | median ms | rate | % of ceiling |");
    let _ = writeln!(md, "| --- | --- | ---: | ---: | ---: |");
    for c in cases {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} |",
            text(&c.kernel),
            text(&c.size),
            ms(c.median_ms),
            rate_with_unit(c),
            percent(c.percent_of_ceiling)
        );
    }
    md.push('\n');
}

fn ratio_section(md: &mut String, run: &BenchRun) {
    let _ = writeln!(md, "## Rust / CUDA C\n");
    let pairs = ratios(run);
    if pairs.is_empty() {
        let _ = writeln!(md, "_No kernel was measured both in Rust and in CUDA C in this run._\n");
        return;
    }
    let _ = writeln!(
        md,
        "The same kernel compiled from Rust and from CUDA C, same launch and inputs: above 1, Rust is faster.\n"
    );
    embed(md, run, &Plot::Ratios);
    let _ = writeln!(md, "| kernel | size | Rust rate | CUDA C rate | ratio |");
    let _ = writeln!(md, "| --- | --- | ---: | ---: | ---: |");
    for (rust, ratio) in pairs {
        let cuda = run
            .cases
            .iter()
            .find(|c| c.source == Some(Source::CudaC) && c.kernel == rust.kernel && c.size == rust.size)
            .map_or_else(|| "—".into(), rate_with_unit);
        let _ = writeln!(
            md,
            "| {} | {} | {} | {cuda} | {} |",
            text(&rust.kernel),
            text(&rust.size),
            rate_with_unit(rust),
            fixed(ratio, 3)
        );
    }
    md.push('\n');
}

/// The plot's image link, or why there is none.
fn embed(md: &mut String, run: &BenchRun, plot: &Plot) {
    let _ = match plot.missing(run) {
        None => writeln!(md, "![{}]({stem}.svg)\n", plot.alt(run), stem = plot.stem()),
        Some(why) => writeln!(md, "_No plot: {why}._\n"),
    };
}

/// Where a source sorts: libraries (the ceilings) first, then Rust, then CUDA C.
fn source_rank(source: Option<Source>) -> u8 {
    match source {
        None => 0,
        Some(Source::Rust) => 1,
        Some(Source::CudaC) => 2,
    }
}

/// The cases `keep` selects, grouped by kernel (libraries first), then Rust before CUDA C, then by
/// size.
fn sorted(run: &BenchRun, keep: impl Fn(&BenchCase) -> bool) -> Vec<&BenchCase> {
    let mut cases: Vec<&BenchCase> = run.cases.iter().filter(|c| keep(c)).collect();
    let ranks = kernel_ranks(run);
    let rank = |kernel: &str| ranks.get(kernel).copied().unwrap_or(usize::MAX);
    cases.sort_by(|a, b| {
        (a.source.is_some())
            .cmp(&b.source.is_some())
            .then(rank(&a.kernel).cmp(&rank(&b.kernel)))
            .then(source_rank(a.source).cmp(&source_rank(b.source)))
            .then(a.x.total_cmp(&b.x))
    });
    cases
}

/// Three significant digits: 0.0123, 1.23, 123.
fn ms(value: f64) -> String {
    if !value.is_finite() {
        return "—".into();
    }
    if value == 0.0 {
        return "0".into();
    }
    let decimals = (2 - value.abs().log10().floor() as i32).clamp(0, 9) as usize;
    format!("{value:.decimals$}")
}

fn fixed(value: f64, decimals: usize) -> String {
    if value.is_finite() {
        format!("{value:.decimals$}")
    } else {
        "—".into()
    }
}

fn percent(value: Option<f64>) -> String {
    value.map_or_else(|| "—".into(), |v| fixed(v, 1))
}

fn rate_with_unit(case: &BenchCase) -> String {
    match case.bound {
        Bound::Compute => format!("{} TFLOP/s", fixed(case.rate, 2)),
        Bound::Memory | Bound::Transfer => format!("{} GB/s", fixed(case.rate, 1)),
    }
}

/// Element counts as "1048576 (2²⁰)"; other sizes as the run wrote them.
fn size_cell(case: &BenchCase) -> String {
    if case.size.starts_with("n=") {
        elements(case.x)
    } else {
        text(&case.size)
    }
}

/// "1048576 (2²⁰)": the exact count, and the exponent that the plots use.
fn elements(x: f64) -> String {
    match plots::power_of_two(x) {
        Some(power) => format!("{x:.0} ({power})"),
        None => fixed(x, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(
        (family, bound): (&str, Bound),
        kernel: &str,
        source: Option<Source>,
        size: &str,
        x: f64,
        (median_ms, rate): (f64, f64),
    ) -> BenchCase {
        BenchCase {
            family: family.into(),
            bound,
            kernel: kernel.into(),
            source,
            size: size.into(),
            x,
            bytes: 12.0 * x,
            flops: x,
            median_ms,
            rate,
            percent_of_ceiling: (bound != Bound::Transfer).then_some(rate),
            kernel_ms: (bound == Bound::Transfer).then_some(0.5),
            input_sets: 1,
        }
    }

    const MATMUL: (&str, Bound) = ("matmul", Bound::Compute);
    const VEC_ADD: (&str, Bound) = ("vec_add", Bound::Memory);
    const MANAGED: (&str, Bound) = ("managed", Bound::Transfer);

    fn sample() -> BenchRun {
        let (rust, cuda_c) = (Some(Source::Rust), Some(Source::CudaC));
        let mut cases = Vec::new();
        for side in [1024.0, 2048.0] {
            let size = format!("{side}x{side}x{side}");
            cases.push(case(MATMUL, "cublas_sgemm", None, &size, side, (0.1, 40.0)));
            cases.push(case(MATMUL, "matmul_tiled", rust, &size, side, (0.2, 20.0)));
            cases.push(case(MATMUL, "matmul_tiled", cuda_c, &size, side, (0.16, 25.0)));
        }
        cases.push(case(MATMUL, "matmul_tiled", rust, "2048x512x1024", 2048.0, (0.3, 10.0)));
        for n in [1u64 << 20, 1 << 22] {
            let size = format!("n={n}");
            cases.push(case(VEC_ADD, "vec_add", rust, &size, n as f64, (0.01, 3000.0)));
            cases.push(case(VEC_ADD, "vec_add", cuda_c, &size, n as f64, (0.01, 2900.0)));
        }
        cases.push(case(MANAGED, "pinned copies", None, "n=1024", 1024.0, (12.5, 1.0)));
        cases.push(case(MANAGED, "managed, prefetch", None, "n=1024", 1024.0, (9.0, 1.4)));
        BenchRun {
            date: "2026-01-02".into(),
            gpu: "Test GPU".into(),
            compute_capability: "9.0".into(),
            driver_cuda: "13.0".into(),
            ptx_arch: "sm_90".into(),
            copy_gbs: 3500.0,
            cases,
            choices: Vec::new(),
            banks: Vec::new(),
        }
    }

    #[test]
    fn the_markdown_of_many_cases_takes_time_linear_in_them() {
        // 48 000 cases: a pass over every case per case (as the pairing and the sort once made)
        // takes minutes; linear, well under a second.
        let (rust, cuda_c) = (Some(Source::Rust), Some(Source::CudaC));
        let mut run = sample();
        for k in 0..400 {
            let kernel = format!("vec_add_{k}");
            for n in 0..40 {
                let size = format!("n={n}");
                run.cases
                    .push(case(VEC_ADD, &kernel, rust, &size, n as f64, (0.01, 3000.0)));
                run.cases
                    .push(case(VEC_ADD, &kernel, cuda_c, &size, n as f64, (0.01, 2900.0)));
            }
            for n in 0..40 {
                let size = format!("{n}x{n}x{n}");
                run.cases
                    .push(case(MATMUL, &kernel, rust, &size, n as f64, (0.2, 20.0)));
            }
        }
        let started = std::time::Instant::now();
        let md = markdown(&run, None);
        assert!(md.contains("vec\\_add\\_399"), "the last kernel is in the tables");
        assert!(
            started.elapsed().as_secs() < 10,
            "{:?} for {} cases",
            started.elapsed(),
            run.cases.len()
        );
    }

    #[test]
    fn a_family_without_square_shapes_is_plotted_by_x_and_rated_against_pytorchs_case() {
        const ATTENTION: (&str, Bound) = ("attention", Bound::Compute);
        let mut run = sample();
        for (size, x) in [("128x4096x128", 4096.0), ("32x8192x128", 8192.0)] {
            let mut library = case(ATTENTION, "torch_sdpa", None, size, x, (1.0, 600.0));
            // As the benches merge PyTorch's compute cases: no percentage of their own.
            library.percent_of_ceiling = None;
            let mut kernel = case(
                ATTENTION,
                "attention_specialized",
                Some(Source::Rust),
                size,
                x,
                (1.2, 450.0),
            );
            kernel.percent_of_ceiling = None;
            run.cases.extend([library, kernel]);
        }
        assert!(Plot::all(&run).contains(&Plot::Compute("attention".into())));
        let md = markdown(&run, None);
        assert!(
            md.contains("| attention\\_specialized | Rust | 128x4096x128 | 1.20 | 450.00 | 75.0 |"),
            "{md}"
        );
        assert!(md.contains("attention TFLOP/s against sequence length"), "{md}");
    }

    #[test]
    fn a_family_of_two_kernels_or_more_rated_against_its_library_is_drawn_as_a_ladder() {
        let mut run = sample();
        assert!(
            !Plot::all(&run).contains(&Plot::Ladder("matmul".into())),
            "one kernel is no ladder"
        );
        assert!(!markdown(&run, None).contains("matmul-ladder.svg"));
        for (size, side) in [("1024x1024x1024", 1024.0), ("2048x2048x2048", 2048.0)] {
            run.cases.push(case(
                MATMUL,
                "matmul_register_2d",
                Some(Source::Rust),
                size,
                side,
                (0.15, 30.0),
            ));
        }
        assert!(Plot::all(&run).contains(&Plot::Ladder("matmul".into())));
        let md = markdown(&run, None);
        assert!(
            md.contains("![matmul kernels as a ladder: each one's Rust rate as a percentage of the library's, per shape](matmul-ladder.svg)"),
            "{md}"
        );
        let dir = scratch("bench-report-ladder");
        std::fs::create_dir_all(&dir).unwrap();
        let svg = dir.join("ladder.svg");
        Plot::Ladder("matmul".into()).write_svg(&run, &svg).unwrap();
        let drawn = std::fs::read_to_string(&svg).unwrap();
        // Rungs labelled in the run's order, and every shape in the legend.
        let (tiled, register) = (
            drawn.find("\nmatmul_tiled\n").expect("the first rung's label"),
            drawn.find("\nmatmul_register_2d\n").expect("the second rung's label"),
        );
        assert!(tiled < register, "rungs out of order");
        for shape in ["1024x1024x1024", "2048x2048x2048", "2048x512x1024"] {
            assert!(
                drawn.contains(&format!("\n{shape}\n")),
                "{shape} missing from the legend"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `sample()` with a convolution family (three filters at one image, one at a smaller image)
    /// and a bank study of four patterns, one of which misses its prediction.
    fn sample_with_conv_and_banks() -> BenchRun {
        const CONV: (&str, Bound) = ("conv2d", Bound::Memory);
        let mut run = sample();
        let (rust, cuda_c) = (Some(Source::Rust), Some(Source::CudaC));
        for (size, x) in [("1024x1024, 5x5", 1048576.0), ("2048x2048, 3x3", 4194304.0)] {
            run.cases
                .push(case(CONV, "conv2d_tiled", rust, size, x, (0.05, 1500.0)));
            run.cases
                .push(case(CONV, "conv2d_tiled", cuda_c, size, x, (0.05, 1450.0)));
        }
        for size in ["2048x2048, 5x5", "2048x2048, 7x7"] {
            run.cases
                .push(case(CONV, "conv2d_tiled", rust, size, 4194304.0, (0.05, 1200.0)));
        }
        let reading = |stride, predicted, measured, example: Option<&str>| BankReading {
            width: 4,
            stride,
            predicted,
            measured,
            cycles_per_request: 2.0 * measured,
            example: example.map(str::to_string),
        };
        run.banks = vec![
            reading(1, 1.0, 1.0, Some("s_data[threadIdx.x]")),
            reading(2, 2.0, 1.98, Some("s_data[threadIdx.x * 2]")),
            reading(3, 1.0, 0.97, None),
            reading(4, 4.0, 2.0, None),
        ];
        run
    }

    /// A directory of its own under the system temp dir, for files a test writes.
    fn scratch(name: &str) -> PathBuf {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        std::env::temp_dir().join(format!("xtask-{name}-{}-{nanos}", std::process::id()))
    }

    #[test]
    fn markdown_has_the_machine_the_tables_and_the_ratios() {
        let md = markdown(&sample(), None);
        assert!(md.starts_with("# Benchmarks\n"));
        assert!(md.contains("Run of 2026-01-02 on Test GPU (compute capability 9.0), driver CUDA 13.0"));
        assert!(md.contains("copy ceiling 3500.0 GB/s"));
        assert!(md.contains("## matmul\n"));
        assert!(md.contains("| cublas\\_sgemm | library | 1024x1024x1024 | 0.100 | 40.00 | 40.0 |"));
        assert!(md.contains("### vec\\_add\n"));
        assert!(md.contains("| vec\\_add | CUDA C | 4194304 (2²²) | 0.0100 | 2900.0 | 2900.0 |"));
        assert!(md.contains("| pinned copies | 12.5 | 0.500 | 1.0 |"));
        assert!(md.contains("| matmul\\_tiled | 2048x2048x2048 | 20.00 TFLOP/s | 25.00 TFLOP/s | 0.800 |"));
        assert!(md.contains("| vec\\_add | n=1048576 | 3000.0 GB/s | 2900.0 GB/s | 1.034 |"));
        // The rectangular shape has no CUDA C twin: it is in the matmul table, not among the ratios.
        assert!(md.contains("| matmul\\_tiled | Rust | 2048x512x1024 |"));
        assert!(!md.contains("| matmul\\_tiled | 2048x512x1024 |"));
        for plot in ["matmul", "vec_add", "ratios"] {
            assert!(md.contains(&format!("]({plot}.svg)")), "{plot} is not embedded");
        }
        // No bank study in this run: no section, no plot.
        assert!(!md.contains("bank conflicts"));
        // cuBLAS leads the matmul table.
        let cublas = md.find("| cublas\\_sgemm |").unwrap();
        let tiled = md.find("| matmul\\_tiled | Rust |").unwrap();
        assert!(cublas < tiled);
    }

    #[test]
    fn empty_groups_get_a_note_instead_of_a_table() {
        let mut run = sample();
        run.cases.retain(|c| c.bound == Bound::Transfer);
        let md = markdown(&run, None);
        assert!(!md.contains("## matmul"));
        assert!(md.contains("_No memory-bound cases in this run._"));
        assert!(md.contains("_No kernel was measured both in Rust and in CUDA C in this run._"));
        assert!(!md.contains(".svg)"));
        assert!(md.contains("| managed, prefetch | 9.00 | 0.500 | 1.4 |"));
    }

    #[test]
    fn several_gpu_scenarios_get_their_own_table_and_no_family_plot() {
        let mut run = sample();
        assert!(
            !markdown(&run, None).contains("## Several GPUs"),
            "only where the run has them"
        );
        let mut split = case(
            (MULTI_GPU, Bound::Compute),
            "multi-gpu split: rows split, inputs resident",
            None,
            "8192×8192×8192 on 2 device(s)",
            8192.0,
            (13.3, 82.4),
        );
        split.percent_of_ceiling = Some(198.5);
        let copy = case(
            (MULTI_GPU, Bound::Transfer),
            "multi-gpu peer: copy 0->1",
            None,
            "n=268435456",
            268435456.0,
            (2.73, 393.5),
        );
        run.cases.extend([split, copy]);
        let md = markdown(&run, None);
        assert!(
            md.contains("| multi-gpu split: rows split, inputs resident | 8192×8192×8192 on 2 device(s) | 13.3 | 82.40 TFLOP/s | 198.5 |"),
            "{md}"
        );
        assert!(
            md.contains("| multi-gpu peer: copy 0-\\>1 | n=268435456 | 2.73 | 393.5 GB/s | — |"),
            "{md}"
        );
        assert!(!md.contains("## multi"), "{md}");
        let transfers = md
            .split("## Managed memory")
            .nth(1)
            .unwrap()
            .split("## Several GPUs")
            .next()
            .unwrap();
        assert!(!transfers.contains("copy 0-"), "{transfers}");
        assert!(Plot::all(&run).iter().all(|p| !p.stem().contains("multi")));
    }

    #[test]
    fn text_from_the_run_cannot_break_the_markdown() {
        assert_eq!(text("a|b"), "a\\|b");
        assert_eq!(text("[x](y)"), "\\[x\\](y)");
        assert_eq!(text("<img src=x>"), "\\<img src=x\\>");
        assert_eq!(text("two\nlines"), "two lines");
        assert_eq!(text("*bold* `code` _em_"), "\\*bold\\* \\`code\\` \\_em\\_");
        let mut run = sample();
        run.gpu = "GPU | [evil](x)\n# heading".into();
        let md = markdown(&run, None);
        assert!(md.contains("on GPU \\| \\[evil\\](x) \\# heading (compute"), "{md}");
        // A code span in a table cell: neither the span, the cell nor the row can end early.
        assert_eq!(code("a`b|c\n<script>"), "a'b\\|c <script>");
        let mut run = sample_with_conv_and_banks();
        run.banks[0].example = Some("x` | y\n<img src=z> `w".into());
        let md = markdown(&run, None);
        let row = md.lines().find(|l| l.contains("img src")).expect("the example's row");
        assert!(row.starts_with("| `x' \\| y <img src=z> 'w` |"), "{row}");
    }

    fn torch_sample() -> TorchRun {
        TorchRun {
            device: "NVIDIA H200".into(),
            torch: "2.11.0".into(),
            ops: vec![kernels::bench_results::TorchOp {
                op: "transpose".into(),
                shape: "8191x4097".into(),
                rust_us: 100.4,
                pytorch_us: 237.6,
                speedup: 2.367,
                unit: "GB/s".into(),
                rust_rate: 2675.0,
                pytorch_rate: 1130.0,
            }],
            per_call_us: [("torch.add".to_string(), 7.42)].into_iter().collect(),
        }
    }

    #[test]
    fn the_pytorch_section_shows_each_operator_and_the_call_costs_and_only_when_given() {
        let md = markdown(&sample(), Some(&torch_sample()));
        assert!(md.contains("## From PyTorch"), "{md}");
        assert!(
            md.contains("| transpose | 8191x4097 | 100.4 | 237.6 | 2675.0 GB/s | 1130.0 GB/s | 2.367 |"),
            "{md}"
        );
        assert!(md.contains("| torch.add | 7.42 |"), "{md}");
        assert!(!markdown(&sample(), None).contains("From PyTorch"));
    }

    #[test]
    fn a_pytorch_file_that_is_missing_or_wrong_is_an_error_that_says_how_to_make_one() {
        let dir = scratch("bench-report-torch");
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("bench.json");
        std::fs::write(&input, serde_json::to_string(&sample()).unwrap()).unwrap();
        let torch = dir.join("torch-ops.json");
        let missing = write(
            &input,
            ExtraInputs {
                torch: Some(&torch),
                ..Default::default()
            },
            &dir.join("out"),
        )
        .unwrap_err();
        assert!(missing.contains("run.sh OUT torch"), "{missing}");
        std::fs::write(&torch, "{\"ops\": 3}").unwrap();
        let wrong = write(
            &input,
            ExtraInputs {
                torch: Some(&torch),
                ..Default::default()
            },
            &dir.join("out"),
        )
        .unwrap_err();
        assert!(wrong.contains("not the PyTorch benchmark's file"), "{wrong}");
        std::fs::write(&torch, serde_json::to_string(&torch_sample()).unwrap()).unwrap();
        let written = write(
            &input,
            ExtraInputs {
                torch: Some(&torch),
                ..Default::default()
            },
            &dir.join("out"),
        )
        .unwrap();
        assert!(written.iter().any(|p| p.ends_with("torch-ops.json")));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn models_sample() -> ModelsRun {
        let product = |m: u64, speed: f64| kernels::bench_results::ModelProduct {
            dtype: "f32".into(),
            m,
            n: 4096,
            k: 4096,
            uses: vec![format!("Llama-3-8B o ×{m}")],
            rust_us: 100.0,
            pytorch_us: 100.0 * speed,
            speed,
            rust_tflops: 1.0,
            pytorch_tflops: 1.0 / speed,
            error: 1e-7,
            checked: true,
        };
        ModelsRun {
            device: "NVIDIA H200".into(),
            torch: "2.11.0".into(),
            summary: [(
                "f32".to_string(),
                kernels::bench_results::ModelsSummary {
                    shapes: 2,
                    geomean_speed: (0.5f64 * 1.1).sqrt(),
                    worst_speed: 0.5,
                    worst_shape: [1, 4096, 4096],
                    below_0_85: 1,
                },
            )]
            .into_iter()
            .collect(),
            products: vec![product(1, 0.5), product(2048, 1.1)],
        }
    }

    #[test]
    fn the_models_section_gives_each_dtype_and_each_token_count_and_the_plot() {
        let mut md = String::new();
        models_section(&mut md, &models_sample());
        assert!(md.contains("(2 products)"), "{md}");
        assert!(md.contains("| f32 | 2 | 0.742 | 0.500 | 1 × 4096 × 4096 | 1 |"), "{md}");
        assert!(md.contains("| 1 | 0.500 |") && md.contains("| 2048 | 1.100 |"), "{md}");
        assert!(md.contains("(models.svg)"), "{md}");
    }

    #[test]
    fn a_models_file_that_is_missing_or_wrong_is_an_error_that_says_how_to_make_one() {
        let dir = scratch("bench-report-models");
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("bench.json");
        std::fs::write(&input, serde_json::to_string(&sample()).unwrap()).unwrap();
        let models = dir.join("torch-models.json");
        let missing = write(
            &input,
            ExtraInputs {
                models: Some(&models),
                ..Default::default()
            },
            &dir.join("out"),
        )
        .unwrap_err();
        assert!(missing.contains("bench_models.py"), "{missing}");
        std::fs::write(&models, "{\"products\": 3}").unwrap();
        let wrong = write(
            &input,
            ExtraInputs {
                models: Some(&models),
                ..Default::default()
            },
            &dir.join("out"),
        )
        .unwrap_err();
        assert!(wrong.contains("not the model-shape suite's file"), "{wrong}");
        std::fs::write(&models, serde_json::to_string(&models_sample()).unwrap()).unwrap();
        let written = write(
            &input,
            ExtraInputs {
                models: Some(&models),
                ..Default::default()
            },
            &dir.join("out"),
        )
        .unwrap();
        for file in ["torch-models.json", "models.svg", "models.png"] {
            assert!(written.iter().any(|p| p.ends_with(file)), "{file}: {written:?}");
        }
        let readme = std::fs::read_to_string(dir.join("out/README.md")).unwrap();
        assert!(readme.contains("## Matrix products at model shapes"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn sizes_sample() -> SizesRun {
        let point = |op: &str, rows: u64, cols: u64, speed: f64, checked: bool| kernels::bench_results::SizePoint {
            op: op.into(),
            rows,
            cols,
            rust_us: 10.0,
            pytorch_us: 10.0 * speed,
            speed,
            checked,
        };
        SizesRun {
            device: "NVIDIA H200".into(),
            torch: "2.11.0".into(),
            summary: [(
                "row_sum".to_string(),
                kernels::bench_results::SizesSummary {
                    points: 2,
                    geomean_speed: (0.8f64 * 1.25).sqrt(),
                    worst_speed: 0.8,
                    worst_shape: [4, 1 << 14],
                    below_1: 1,
                },
            )]
            .into_iter()
            .collect(),
            size_points: vec![
                point("sum", 1, 1 << 16, 1.1, true),
                point("row_sum", 4, 1 << 14, 0.8, true),
                point("row_sum", 1 << 11, 32, 1.25, false),
            ],
        }
    }

    #[test]
    fn the_sizes_section_gives_each_operator_and_names_the_points_outside_their_bound() {
        let mut md = String::new();
        sizes_section(&mut md, &sizes_sample());
        assert!(md.contains("(3 points)"), "{md}");
        assert!(md.contains("| row\\_sum | 2 | 1.000 | 0.800 | 4 × 16384 | 1 |"), "{md}");
        assert!(md.contains("**Outside their bound** (1): row\\_sum 2048 × 32."), "{md}");
        assert!(md.contains("(sizes.svg)"), "{md}");
    }

    #[test]
    fn a_sizes_file_that_is_missing_or_wrong_is_an_error_that_says_how_to_make_one() {
        let dir = scratch("bench-report-sizes");
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("bench.json");
        std::fs::write(&input, serde_json::to_string(&sample()).unwrap()).unwrap();
        let sizes = dir.join("torch-sizes.json");
        let extra = || ExtraInputs {
            sizes: Some(&sizes),
            ..Default::default()
        };
        let missing = write(&input, extra(), &dir.join("out")).unwrap_err();
        assert!(missing.contains("bench_sizes.py"), "{missing}");
        std::fs::write(&sizes, "{\"size_points\": 3}").unwrap();
        let wrong = write(&input, extra(), &dir.join("out")).unwrap_err();
        assert!(wrong.contains("not the size sweep's file"), "{wrong}");
        std::fs::write(&sizes, serde_json::to_string(&sizes_sample()).unwrap()).unwrap();
        let written = write(&input, extra(), &dir.join("out")).unwrap();
        for file in ["torch-sizes.json", "sizes.svg", "sizes.png"] {
            assert!(written.iter().any(|p| p.ends_with(file)), "{file}: {written:?}");
        }
        let readme = std::fs::read_to_string(dir.join("out/README.md")).unwrap();
        assert!(readme.contains("## Reductions, scans and row operators at every size"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn writes_the_data_the_readme_and_six_plots() {
        let dir = scratch("bench-report");
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("bench.json");
        std::fs::write(&input, serde_json::to_string(&sample()).unwrap()).unwrap();
        let out = dir.join("out");
        // A plot an earlier run drew and this one does not: removed with the new report. A file
        // the user put there stays.
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("stale.svg"), "<svg/>").unwrap();
        std::fs::write(out.join(crate::owned::MANIFEST), "bench-report\nstale.svg\n").unwrap();
        std::fs::write(out.join("mine.svg"), "<svg/>").unwrap();
        let written = write(&input, ExtraInputs::default(), &out).unwrap();
        assert_eq!(written.len(), 8);
        for plot in ["matmul", "vec_add", "ratios"] {
            let svg = std::fs::read_to_string(out.join(format!("{plot}.svg"))).unwrap();
            assert!(svg.contains("<svg"), "{plot}.svg is not an SVG");
            let png = std::fs::read(out.join(format!("{plot}.png"))).unwrap();
            assert!(png.starts_with(b"\x89PNG"), "{plot}.png is not a PNG");
        }
        assert_eq!(
            std::fs::read_to_string(out.join("results.json")).unwrap(),
            std::fs::read_to_string(&input).unwrap()
        );
        assert!(out.join("README.md").is_file());
        assert!(!out.join("stale.svg").exists());
        assert!(out.join("mine.svg").is_file());
        let leftovers: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains("staging"))
            .collect();
        assert!(leftovers.is_empty(), "the staging folder was left behind");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_convolution_is_plotted_against_its_filter_and_the_bank_study_gets_a_section() {
        let run = sample_with_conv_and_banks();
        let md = markdown(&run, None);
        assert!(md.contains("### conv2d\n"), "{md}");
        assert!(md.contains("![conv2d GB/s against the filter side"), "{md}");
        assert!(md.contains("| conv2d\\_tiled | Rust | 2048x2048, 7x7 |"), "{md}");
        assert!(md.contains("## Shared-memory bank conflicts"), "{md}");
        assert!(
            md.contains("3 of 4 patterns measured within 15 % of the prediction"),
            "{md}"
        );
        assert!(
            md.contains("| `s_data[threadIdx.x * 2]` | 4 B | 2 | 2 | 1.98 | 3.96 |"),
            "{md}"
        );
        assert!(md.contains("](banks.svg)"), "{md}");

        let dir = scratch("bench-report-conv-banks");
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("bench.json");
        std::fs::write(&input, serde_json::to_string(&run).unwrap()).unwrap();
        let out = dir.join("out");
        write(&input, ExtraInputs::default(), &out).unwrap();
        for plot in ["conv2d", "banks"] {
            let png = std::fs::read(out.join(format!("{plot}.png"))).unwrap();
            assert!(png.starts_with(b"\x89PNG"), "{plot}.png is not a PNG");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_report_leaves_the_old_one_whole() {
        let dir = scratch("bench-report-all-or-none");
        let out = dir.join("out");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("README.md"), "old").unwrap();
        let input = dir.join("bench.json");
        std::fs::write(&input, "{\"date\": 3}").unwrap();
        assert!(write(&input, ExtraInputs::default(), &out).is_err());
        assert_eq!(std::fs::read_to_string(out.join("README.md")).unwrap(), "old");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_input_says_how_to_get_one() {
        let dir = scratch("bench-report-missing");
        let error = write(&dir.join("bench.json"), ExtraInputs::default(), &dir.join("out")).unwrap_err();
        assert!(error.contains("does not exist"), "{error}");
        assert!(error.contains("run.sh OUT bench"), "{error}");
        assert!(!dir.exists());
    }

    #[test]
    fn a_malformed_input_is_an_error_not_a_panic() {
        let dir = scratch("bench-report-malformed");
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("bench.json");
        std::fs::write(&input, "{\"date\": 3}").unwrap();
        let error = write(&input, ExtraInputs::default(), &dir.join("out")).unwrap_err();
        assert!(error.contains("is not a bench results file"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn three_significant_digits() {
        assert_eq!(ms(0.012345), "0.0123");
        assert_eq!(ms(1.2345), "1.23");
        assert_eq!(ms(123.45), "123");
        assert_eq!(ms(12345.6), "12346");
        assert_eq!(ms(f64::NAN), "—");
    }
}
