//! `cargo xtask <verb>`: project automation in Rust (see `cargo xtask --help`).

mod bundle;
mod models_plot;
mod new;
mod owned;
mod plots;
mod report;
mod run_view;
mod sizes_plot;
mod tools;
mod twins;
mod wheel;

use clap::{Parser, Subcommand};
use ptxkit_build::ptx::entry_names;
use ptxkit_build::{Arch, DEFAULT_ARCHS, PtxBuilder, PtxasCheck, ptxas};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

#[derive(Parser)]
#[command(about = "Project automation for the Rust GPU kernels workspace")]
struct Cli {
    #[command(subcommand)]
    verb: Verb,
}

#[derive(Subcommand)]
enum Verb {
    /// Compile the kernels to PTX (target/ptx/<arch>/kernels.ptx), assemble each with ptxas and print
    /// registers, shared memory, stack and spills per kernel; fails on any spill or stack frame.
    BuildPtx {
        /// Architectures, comma-separated.
        #[arg(long, value_delimiter = ',', default_values_t = DEFAULT_ARCHS.to_vec())]
        arch: Vec<Arch>,
        /// Only write the PTX; do not look for ptxas.
        #[arg(long)]
        no_ptxas: bool,
    },
    /// Fetch ptxas (the PyPI wheel nvidia-cuda-nvcc-cu12) into target/tools, for machines without CUDA.
    Setup {
        /// Fetch and unpack again even if ptxas is already there.
        #[arg(long)]
        force: bool,
        /// Also fetch CUDA 13.0's nvcc (the runner's release) and cuobjdump, for `cargo xtask twins`.
        #[arg(long)]
        twins: bool,
    },
    /// Each Rust kernel beside its CUDA C twin as ptxas and the SASS see them, without a GPU:
    /// registers, spills, SASS instructions, FFMAs, global atomics, local memory; flags pairs that
    /// differ where it moves time (local memory, returning atomics, fewer resident blocks). Compiles every twin with CUDA 13.0's nvcc (`cargo xtask setup
    /// --twins`); writes target/twins/<arch>/report.md.
    Twins {
        /// The architecture (the runner's H200 by default).
        #[arg(long, default_value = "sm_90a")]
        arch: Arch,
        /// Only the kernels whose entry contains this.
        #[arg(long)]
        filter: Option<String>,
    },
    /// Print what builds and runs depend on: toolchain, rust-src, ptxas, NVIDIA driver and GPU.
    Doctor,
    /// Build the folder the GPU runner needs for one run.sh mode (of: release host, test
    /// executables, benches, PTX, CUDA C sources, the wheel; run.sh); on the runner,
    /// `<folder>/run.sh OUT_DIR MODE` runs it without cargo.
    GpuBundle {
        /// Where to write the bundle: a new or empty folder, or one an earlier gpu-bundle wrote
        /// (what it wrote there is replaced; nothing else is touched) [default: the workspace's
        /// target/gpu-bundle]
        #[arg(long)]
        out: Option<PathBuf>,
        /// The run.sh mode it is for: only what that mode runs is built and packed (the whole
        /// bundle is over the runner's 64 MiB limit).
        #[arg(long = "for", value_enum, default_value = "check")]
        purpose: bundle::Purpose,
        /// Only these test executables, by their names in the bundle (host-gpu-test,
        /// host-multi_gpu-test, ...), comma-separated.
        #[arg(long, value_delimiter = ',')]
        tests: Option<Vec<String>>,
    },
    /// Build the PyTorch extension (host/python) and pack it into a wheel
    /// (rust_kernels-<version>-cp39-abi3-linux_<machine>.whl): `pip install` it, then
    /// `import rust_kernels`. Needs python3 (or $PYTHON).
    Wheel {
        /// Where to write the wheel.
        #[arg(long, default_value = "target/wheels")]
        out: PathBuf,
    },
    /// Write a kernel crate of your own and a host crate that launches it (a halo stencil, its
    /// emulator tests, a GPU test), depending on this workspace's toolkit by path; then
    /// `cd DIR && cargo test`.
    New {
        /// The folder to create (outside this workspace; an empty one is taken, nothing is
        /// written over).
        dir: PathBuf,
        /// The project's name (default: the folder's).
        #[arg(long)]
        name: Option<String>,
    },
    /// Turn the benches' results JSON into docs/bench: a Markdown table and plots (SVG and PNG).
    BenchReport {
        /// The results file the benches wrote (relative paths from the current directory); on the GPU
        /// runner, `run.sh OUT bench` writes OUT/bench.json. Default: <workspace>/target/bench/results.json.
        #[arg(long)]
        input: Option<PathBuf>,
        /// Where to write README.md, results.json (a copy of the input) and the plots; files are
        /// staged and moved in only when all were written. Default: <workspace>/docs/bench.
        #[arg(long)]
        out: Option<PathBuf>,
        /// The PyTorch extension's benchmark (`run.sh OUT torch` writes OUT/torch-ops.json): adds
        /// the section "From PyTorch" and copies the file beside results.json.
        #[arg(long)]
        torch: Option<PathBuf>,
        /// The model-shape suite against PyTorch (`run.sh OUT torch` writes OUT/torch-models.json):
        /// adds the section "Matrix products at model shapes" with its plot.
        #[arg(long)]
        models: Option<PathBuf>,
        /// The size sweep against PyTorch (`run.sh OUT torch` writes OUT/torch-sizes.json): adds
        /// the section "Reductions, scans and row operators at every size" with its plot.
        #[arg(long)]
        sizes: Option<PathBuf>,
    },
}

#[derive(Debug)]
struct Failure(String);

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(error: E) -> Self {
        Failure(error.to_string())
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.verb {
        Verb::BuildPtx { arch, no_ptxas } => build_ptx(&arch, no_ptxas),
        Verb::Setup { force, twins } => setup(force, twins),
        Verb::Twins { arch, filter } => compare_twins(arch, filter.as_deref()),
        Verb::Doctor => doctor(),
        Verb::GpuBundle { out, purpose, tests } => gpu_bundle(out, purpose, tests.as_deref()),
        Verb::BenchReport {
            input,
            out,
            torch,
            models,
            sizes,
        } => bench_report(input, out, [torch, models, sizes]),
        Verb::New { dir, name } => new_project(&dir, name.as_deref()),
        Verb::Wheel { out } => wheel::build(&workspace_root(), &target_dir(), &workspace_root().join(out))
            .map(|wheel| println!("wrote {}", wheel.display()))
            .map_err(Failure),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(message)) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives inside the workspace")
        .to_path_buf()
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// The library's kernel crate, built by the same builder a user's build script uses.
fn library_builder(archs: &[Arch]) -> PtxBuilder {
    PtxBuilder::new(workspace_root().join("kernels"))
        .arch(archs)
        .target_dir(target_dir().join("ptx-build"))
}

/// Where `build-ptx` writes the PTX for `arch`.
fn ptx_path(arch: Arch) -> PathBuf {
    target_dir().join("ptx").join(arch.to_string()).join("kernels.ptx")
}

fn build_ptx(archs: &[Arch], no_ptxas: bool) -> Result<(), Failure> {
    eprintln!("building PTX for {} ...", join(archs));
    let mut builder = library_builder(archs);
    let found = if no_ptxas {
        None
    } else {
        tools::find_ptxas(&target_dir())
    };
    builder = match &found {
        Some((ptxas, _)) => builder.ptxas(ptxas).check_with_ptxas(PtxasCheck::Required),
        None => builder.check_with_ptxas(PtxasCheck::Off),
    };
    let built = builder.build(&target_dir().join("ptx"))?;
    for module in &built.modules {
        check_entries(&module.path)?;
        println!("wrote {}", module.path.display());
    }
    if no_ptxas {
        return Ok(());
    }
    let Some((ptxas, origin)) = found else {
        return Err(Failure(
            "ptxas not found (looked at $PTXAS, PATH, $CUDA_PATH/bin, /usr/local/cuda/bin and target/tools): \
             run `cargo xtask setup` to fetch it from PyPI, or pass --no-ptxas to only write the PTX"
                .into(),
        ));
    };
    println!("ptxas: {} ({origin}), {}", ptxas.display(), ptxas::version(&ptxas)?);
    let rows: Vec<(Arch, ptxas::KernelResources)> = built
        .modules
        .iter()
        .flat_map(|m| m.resources.iter().flatten().map(|r| (m.arch, r.clone())))
        .collect();
    print_resource_table(&rows);
    // Spills, and arrays or captures LLVM put on the stack: both are local memory.
    let local = built.local_memory()?;
    if !local.is_empty() {
        return Err(Failure(format!(
            "local memory (register spills or a stack frame) in: {}",
            local.join(", ")
        )));
    }
    Ok(())
}

/// Every entry in the PTX is a kernel in `kernels::KERNELS`, and every one of those is in the PTX.
fn check_entries(ptx: &Path) -> Result<(), Failure> {
    let text = std::fs::read_to_string(ptx).map_err(|e| format!("cannot read {}: {e}", ptx.display()))?;
    let entries = entry_names(&text);
    let registered = kernels::registry::kernels();
    let missing: Vec<&str> = registered
        .iter()
        .map(|k| k.entry)
        .filter(|e| !entries.iter().any(|x| x == e))
        .collect();
    let unlisted: Vec<&String> = entries
        .iter()
        .filter(|e| !registered.iter().any(|k| k.entry == *e))
        .collect();
    if !missing.is_empty() {
        return Err(Failure(format!(
            "{} lacks the entries {missing:?} that the registry (kernels::registry) lists",
            ptx.display()
        )));
    }
    if !unlisted.is_empty() {
        return Err(Failure(format!(
            "{} has entries {unlisted:?} that no family lists: add each kernel's KERNEL to its family's FAMILY list (kernels::registry)",
            ptx.display()
        )));
    }
    Ok(())
}

fn print_resource_table(rows: &[(Arch, ptxas::KernelResources)]) {
    println!();
    println!(
        "| {:<20} | {:<5} | {:>4} | {:>11} | {:>12} | {:>11} | {:>11} | {:>11} |",
        "kernel", "arch", "regs", "block", "shared/block", "static smem", "stack bytes", "spill st/ld"
    );
    println!(
        "|{:-<22}|{:-<7}|{:->6}|{:->13}|{:->14}|{:->13}|{:->13}|{:->13}|",
        "", "", "", "", "", "", "", ""
    );
    for (arch, r) in rows {
        let info = kernels::registry::find(&r.entry);
        let block = info
            .map(|k| format!("{}x{}x{}", k.block.x, k.block.y, k.block.z))
            .unwrap_or_default();
        let shared = info.map(|k| k.shared_bytes.to_string()).unwrap_or_default();
        println!(
            "| {:<20} | {:<5} | {:>4} | {:>11} | {:>12} | {:>11} | {:>11} | {:>11} |",
            r.entry,
            arch.to_string(),
            r.registers,
            block,
            shared,
            r.static_shared_bytes,
            r.stack_bytes,
            format!("{}/{}", r.spill_store_bytes, r.spill_load_bytes)
        );
    }
    println!();
}

fn gpu_bundle(out: Option<PathBuf>, purpose: bundle::Purpose, tests: Option<&[String]>) -> Result<(), Failure> {
    // A path given is the user's, from where they are; the default is the workspace's.
    let out = out.unwrap_or_else(|| target_dir().join("gpu-bundle"));
    let out = owned::claim(&out, "--out", "gpu-bundle").map_err(Failure)?;
    out.check_names(bundle::WRITTEN).map_err(Failure)?;
    if let Some(tests) = tests {
        bundle::check_test_names(&workspace_root(), tests).map_err(Failure)?;
    }
    build_ptx(DEFAULT_ARCHS, false)?;
    bundle::build(&workspace_root(), &target_dir(), &out, purpose, tests).map_err(Failure)
}

fn new_project(dir: &Path, name: Option<&str>) -> Result<(), Failure> {
    let name = new::create(&workspace_root(), dir, name).map_err(Failure)?;
    println!("wrote the project {name} in {}:", dir.display());
    println!("  kernels/   the kernel crate: a halo stencil (kernels/src/lib.rs) and its emulator tests");
    println!("  host/      builds the kernels to PTX (build.rs) and launches them on the GPU or the emulator");
    println!(
        "next: cd {} && cargo test        (cargo run --release -p {name} on a GPU)",
        dir.display()
    );
    Ok(())
}

/// `extra`: the PyTorch benchmark's, the model-shape suite's and the size sweep's files.
fn bench_report(input: Option<PathBuf>, out: Option<PathBuf>, extra: [Option<PathBuf>; 3]) -> Result<(), Failure> {
    // Paths given are the user's, from where they are; the defaults are the workspace's.
    let input = input.unwrap_or_else(|| target_dir().join("bench/results.json"));
    let out = out.unwrap_or_else(|| workspace_root().join("docs/bench"));
    let [torch, models, sizes] = &extra;
    let extra = report::ExtraInputs {
        torch: torch.as_deref(),
        models: models.as_deref(),
        sizes: sizes.as_deref(),
    };
    for path in report::write(&input, extra, &out).map_err(Failure)? {
        println!("wrote {}", path.display());
    }
    Ok(())
}

fn setup(force: bool, twins: bool) -> Result<(), Failure> {
    let target = target_dir();
    let ptxas = tools::wheel_ptxas(&target);
    if ptxas.is_file() && !force {
        println!(
            "ptxas already at {} ({}); --force fetches it again",
            ptxas.display(),
            ptxas::version(&ptxas)?
        );
    } else {
        let tools = tools::tools_dir(&target);
        fetch_wheel(tools::NVCC_WHEEL, &tools.with_file_name("wheels"), &tools)?;
        bundle::make_executable(&ptxas)?;
        println!("ptxas ready at {} ({})", ptxas.display(), ptxas::version(&ptxas)?);
    }
    if !twins {
        return Ok(());
    }
    let nvcc = twins::cuda13_tool(&target, "nvcc");
    if nvcc.is_file() && twins::cuda13_tool(&target, "nvdisasm").is_file() && !force {
        println!("CUDA 13's nvcc already at {}; --force fetches it again", nvcc.display());
        return Ok(());
    }
    let tools = twins::cuda13_dir(&target);
    for wheel in twins::CUDA13_WHEELS {
        fetch_wheel(wheel, &tools.with_file_name("wheels13"), &tools)?;
    }
    // The zip format drops the executable bits.
    for folder in ["nvidia/cu13/bin", "nvidia/cu13/nvvm/bin"] {
        let folder = tools.join(folder);
        let entries = std::fs::read_dir(&folder).map_err(|e| format!("cannot list {}: {e}", folder.display()))?;
        for entry in entries.filter_map(|e| e.ok()) {
            if entry.path().is_file() {
                bundle::make_executable(&entry.path())?;
            }
        }
    }
    let (version, _) = twins::output_of(Command::new(&nvcc).arg("--version"))?;
    let version = version.lines().find(|l| l.contains("release")).unwrap_or_default();
    println!("nvcc ready at {} ({})", nvcc.display(), version.trim());
    Ok(())
}

/// Downloads `spec` ("package==version") from PyPI into `wheels` and unpacks it into `into`.
fn fetch_wheel(spec: &str, wheels: &Path, into: &Path) -> Result<(), Failure> {
    std::fs::create_dir_all(wheels).map_err(|e| format!("cannot create {}: {e}", wheels.display()))?;
    println!("fetching {spec} from PyPI into {} ...", wheels.display());
    run(Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            "-d",
        ])
        .arg(wheels)
        .arg(spec))?;
    // A wheel's file name starts with the package's name (dashes as underscores) and version.
    let prefix = spec.replace('-', "_").replace("==", "-");
    let wheel = std::fs::read_dir(wheels)
        .map_err(|e| format!("cannot list {}: {e}", wheels.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".whl"))
        })
        .ok_or_else(|| format!("pip reported success but no {prefix}*.whl is in {}", wheels.display()))?;
    println!("unpacking {} ...", wheel.display());
    run(Command::new("python3")
        .args(["-m", "zipfile", "-e"])
        .arg(&wheel)
        .arg(into))
}

/// `cargo xtask twins`: see [`twins`].
fn compare_twins(arch: Arch, filter: Option<&str>) -> Result<(), Failure> {
    let target = target_dir();
    let tool = |name: &str| twins::cuda13_tool(&target, name);
    let (nvcc, ptxas13, cuobjdump) = (tool("nvcc"), tool("ptxas"), tool("cuobjdump"));
    for path in [&nvcc, &ptxas13, &cuobjdump] {
        if !path.is_file() {
            return Err(Failure(format!(
                "{} not found: run `cargo xtask setup --twins` (fetches CUDA 13.0's nvcc and cuobjdump from PyPI)",
                path.display()
            )));
        }
    }
    let out = target.join("twins").join(arch.to_string());
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    eprintln!("building the Rust PTX for {arch} ...");
    let built = library_builder(&[arch])
        .check_with_ptxas(PtxasCheck::Off)
        .build(&target.join("ptx"))?;
    let ptx: Vec<PathBuf> = built.modules.iter().map(|m| m.path.clone()).collect();
    // cuobjdump runs nvdisasm, which it looks for on PATH.
    let path = std::env::join_paths(
        std::iter::once(cuobjdump.with_file_name(""))
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )?;
    let disassemble = |cubin: &Path| -> Result<_, String> {
        let listing = twins::output_of(Command::new(&cuobjdump).env("PATH", &path).arg("-sass").arg(cubin))?.0;
        Ok(twins::parse_sass(&listing))
    };
    let rust_cubin = out.join("rust.cubin");
    let rust_report = ptxas::assemble(&ptxas13, &ptx[0], arch, &rust_cubin)?;
    let rust_sass = disassemble(&rust_cubin)?;

    let sources_dir = workspace_root().join("benches/reference/cuda_c");
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&sources_dir)
        .map_err(|e| format!("cannot list {}: {e}", sources_dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cu"))
        .collect();
    sources.sort();
    eprintln!("compiling {} CUDA C twins with {} ...", sources.len(), nvcc.display());
    // Each twin: nvcc to PTX, ptxas to a cubin with its report, cuobjdump; on every core.
    let compile = |source: &PathBuf| -> Result<_, String> {
        let name = source.file_stem().and_then(|s| s.to_str()).unwrap_or("twin");
        let (ptx, cubin) = (out.join(format!("{name}.ptx")), out.join(format!("{name}.cubin")));
        twins::output_of(
            Command::new(&nvcc)
                .arg(format!("-arch={arch}"))
                .args(["-O3", "-ptx", "-o"])
                .arg(&ptx)
                .arg(source),
        )?;
        let report = ptxas::assemble(&ptxas13, &ptx, arch, &cubin)?;
        Ok((report, disassemble(&cubin)?))
    };
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let compiled: Vec<Result<_, String>> = std::thread::scope(|scope| {
        let jobs: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(source) = sources.get(i) else { break done };
                        done.push(compile(source));
                    }
                })
            })
            .collect();
        jobs.into_iter()
            .flat_map(|job| job.join().unwrap_or_default())
            .collect()
    });
    let (mut twin_report, mut twin_sass) = (Vec::new(), std::collections::BTreeMap::new());
    for result in compiled {
        let (report, sass) = result?;
        twin_report.extend(report);
        twin_sass.extend(sass);
    }

    // Both sides launched as the registry launches the Rust kernel.
    let side = |report: &[ptxas::KernelResources],
                sass: &std::collections::BTreeMap<String, twins::SassCounts>,
                entry: &str,
                rust_entry: &str| {
        let resources = report.iter().find(|k| k.entry == entry)?;
        Some(twins::Side {
            registers: resources.registers,
            spill_bytes: resources.spill_store_bytes,
            sass: sass.get(entry)?.clone(),
            threads: kernels::registry::find(rust_entry).map_or(0, |k| k.block.volume() as u32),
        })
    };
    let mut pairs = Vec::new();
    for kernel in &rust_report {
        if filter.is_some_and(|f| !kernel.entry.contains(f)) {
            continue;
        }
        let twin_entry = format!("{}{}", kernel.entry, kernels::registry::CUDA_C_ENTRY_SUFFIX);
        if let (Some(rust), Some(twin)) = (
            side(&rust_report, &rust_sass, &kernel.entry, &kernel.entry),
            side(&twin_report, &twin_sass, &twin_entry, &kernel.entry),
        ) {
            pairs.push((kernel.entry.clone(), rust, twin));
        }
    }
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    let differing = pairs
        .iter()
        .filter(|(_, r, t)| !twins::differences(r, t).is_empty())
        .count();
    let (version, _) = twins::output_of(Command::new(&nvcc).arg("--version"))?;
    let version = version.lines().find(|l| l.contains("release")).unwrap_or_default();
    let report = format!(
        "# Rust kernels beside their CUDA C twins, {arch}\n\nTwins compiled by {}; both sides assembled by its ptxas. \
         Where two figures are given: Rust / CUDA C.\n\n{}",
        version.trim(),
        twins::table(&pairs)
    );
    let path = out.join("report.md");
    std::fs::write(&path, &report).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    println!("{report}");
    eprintln!("{} pairs, {differing} differing; wrote {}", pairs.len(), path.display());
    Ok(())
}

fn run(command: &mut Command) -> Result<(), Failure> {
    let status = command.status().map_err(|e| format!("cannot run {command:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(Failure(format!("{command:?} failed ({status})")))
    }
}

/// The first line a command prints, or why there is none.
fn first_line(program: &str, args: &[&str]) -> Result<String, String> {
    let output = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!(
            "{program} failed: {}",
            stderr.lines().next().unwrap_or("no message")
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string())
}

fn doctor() -> Result<(), Failure> {
    let mut problems = Vec::new();
    let row = |what: &str, text: &str| println!("{what:<14} {text}");
    let toolchain = std::env::var("RUSTUP_TOOLCHAIN").unwrap_or_else(|_| "(not under rustup)".into());
    row("toolchain", &toolchain);
    match first_line("rustc", &["--version"]) {
        Ok(version) => row("rustc", &version),
        Err(e) => {
            row("rustc", &format!("MISSING ({e})"));
            problems.push("rustc");
        }
    }
    match first_line("rustc", &["--print", "sysroot"]) {
        Ok(sysroot) => {
            let core = Path::new(&sysroot).join("lib/rustlib/src/rust/library/core");
            if core.is_dir() {
                row("rust-src", &format!("present ({})", core.display()));
            } else {
                row(
                    "rust-src",
                    "MISSING: run `rustup component add rust-src` (-Zbuild-std=core needs it)",
                );
                problems.push("rust-src");
            }
        }
        Err(e) => row("rust-src", &format!("unknown ({e})")),
    }
    for arch in DEFAULT_ARCHS {
        let ptx = ptx_path(*arch);
        let state = if ptx.is_file() {
            "built"
        } else {
            "not built yet (cargo xtask build-ptx)"
        };
        row(&format!("ptx {arch}"), &format!("{} {state}", ptx.display()));
    }
    match tools::find_ptxas(&target_dir()) {
        Some((path, origin)) => {
            let version = ptxas::version(&path).unwrap_or_else(|e| e);
            row("ptxas", &format!("{} ({origin}): {version}", path.display()));
        }
        None => row(
            "ptxas",
            "not found: `cargo xtask setup` fetches it (needs python3 with pip)",
        ),
    }
    match first_line("python3", &["-m", "pip", "--version"]) {
        Ok(pip) => row("pip", &pip),
        Err(e) => row(
            "pip",
            &format!("not available ({e}); only `cargo xtask setup` needs it"),
        ),
    }
    match first_line(
        "nvidia-smi",
        &[
            "--query-gpu=name,driver_version,compute_cap,memory.total",
            "--format=csv,noheader",
        ],
    ) {
        Ok(gpu) => row("GPU", &gpu),
        Err(_) => row(
            "GPU",
            "none found (no nvidia-smi): GPU runs need the runner; tests use the CPU emulator",
        ),
    }
    let libcuda = first_line("sh", &["-c", "ldconfig -p | grep -m1 'libcuda.so.1 '"])
        .ok()
        .filter(|l| !l.is_empty());
    row(
        "libcuda",
        libcuda
            .as_deref()
            .unwrap_or("not found (no NVIDIA driver on this machine)"),
    );
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Failure(format!("missing: {}", problems.join(", "))))
    }
}

fn join(archs: &[Arch]) -> String {
    archs.iter().map(Arch::to_string).collect::<Vec<_>>().join(", ")
}
