//! `host`: runs the Rust kernels on the GPU (or the CPU emulator), checks every result against the
//! f64 CPU reference and prints what each variant achieved. `host --help` lists the commands.

use clap::{Parser, Subcommand};
use host::demos::{self, Backend, BackendChoice, Row, Settings};
use host::gpu::MatmulVariant;
use host::{HostError, Result};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    about = "Rust GPU kernels: shared-memory and managed-memory demos, each checked against an f64 CPU reference"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Where kernels run: the GPU, the CPU emulator (at capped sizes), or the GPU when there is one.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto, global = true)]
    backend: BackendChoice,
    /// CUDA device number (default: $KERNELS_DEVICE, else 0).
    #[arg(long, global = true)]
    device: Option<usize>,
    /// Print the results as JSON instead of a table.
    #[arg(long, global = true)]
    json: bool,
    /// Also write the results as JSON to this file (the table still goes to stdout).
    #[arg(long, global = true, value_name = "FILE")]
    json_out: Option<std::path::PathBuf>,
    /// Untimed runs before timing.
    #[arg(long, default_value_t = 3, global = true)]
    warmup: usize,
    /// Timed runs; the median is reported.
    #[arg(long, default_value_t = 20, global = true)]
    runs: usize,
    /// Folder of nvcc-made PTX of the CUDA C references (benches/reference): each demo also times
    /// the CUDA C version of its kernels, launched the same way.
    #[arg(long, global = true, value_name = "DIR")]
    cuda_c: Option<std::path::PathBuf>,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 2026, global = true)]
    seed: u64,
}

#[derive(Subcommand)]
enum Command {
    /// The device, its limits, and how many blocks of each kernel fit on an SM.
    Info,
    /// vec_add on device memory and on prefetched managed memory, against the copy ceiling.
    VecAdd {
        #[arg(long, default_value_t = demos::vec_add::DEFAULT_N)]
        n: usize,
    },
    /// The seed's shared-memory example: stage, barrier, add the neighbour.
    SharedAdd {
        #[arg(long, default_value_t = demos::shared_add::DEFAULT_N)]
        n: usize,
    },
    /// C = A·B (row-major, A m×k, B k×n) with each variant, against cuBLAS SGEMM.
    Matmul {
        #[arg(long, default_value_t = demos::matmul::DEFAULT_SIDE)]
        m: usize,
        #[arg(long, default_value_t = demos::matmul::DEFAULT_SIDE)]
        n: usize,
        #[arg(long, default_value_t = demos::matmul::DEFAULT_SIDE)]
        k: usize,
        #[arg(long, value_enum, default_value_t = VariantChoice::All)]
        variant: VariantChoice,
    },
    /// Pageable copies, pinned copies, managed memory without and with prefetch, with read-mostly
    /// advice: end-to-end and kernel time of vec_add, and the CPU reading the result back.
    Managed {
        #[arg(long, default_value_t = demos::managed::DEFAULT_N)]
        n: usize,
    },
    /// Every demo at its default size.
    All,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum VariantChoice {
    Naive,
    Tiled,
    Padded,
    All,
}

impl VariantChoice {
    fn variants(self) -> Vec<MatmulVariant> {
        match self {
            VariantChoice::Naive => vec![MatmulVariant::Naive],
            VariantChoice::Tiled => vec![MatmulVariant::Tiled],
            VariantChoice::Padded => vec![MatmulVariant::Padded],
            VariantChoice::All => MatmulVariant::ALL.to_vec(),
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(2)
        }
    }
}

/// Whether every check passed.
fn run(cli: &Cli) -> Result<bool> {
    let (backend, notice) = Backend::choose(cli.backend, cli.device)?;
    if let Some(notice) = notice {
        eprintln!("{notice}");
    }
    let cuda_c = match (&backend, &cli.cuda_c) {
        (Backend::Gpu(gpu), Some(dir)) => Some(gpu.load_cuda_reference(dir)?),
        (Backend::Emu, Some(_)) => {
            eprintln!("note: --cuda-c needs a GPU; ignored on the emulator");
            None
        }
        (_, None) => None,
    };
    let settings = Settings {
        warmup: cli.warmup,
        runs: cli.runs.max(1),
        seed: cli.seed,
        cuda_c: cuda_c.as_ref(),
    };
    let rows = match cli.command {
        Command::Info => return info(&backend, cli.json).map(|()| true),
        Command::VecAdd { n } => demos::vec_add::run(&backend, &settings, n)?,
        Command::SharedAdd { n } => demos::shared_add::run(&backend, &settings, n)?,
        Command::Matmul { m, n, k, variant } => {
            demos::matmul::run(&backend, &settings, (m, n, k), &variant.variants())?
        }
        Command::Managed { n } => demos::managed::run(&backend, &settings, n)?,
        Command::All => {
            let side = demos::matmul::DEFAULT_SIDE;
            let mut rows = demos::vec_add::run(&backend, &settings, demos::vec_add::DEFAULT_N)?;
            rows.extend(demos::shared_add::run(
                &backend,
                &settings,
                demos::shared_add::DEFAULT_N,
            )?);
            rows.extend(demos::matmul::run(
                &backend,
                &settings,
                (side, side, side),
                &MatmulVariant::ALL,
            )?);
            rows.extend(demos::managed::run(&backend, &settings, demos::managed::DEFAULT_N)?);
            rows
        }
    };
    let document = results_json(&backend, &rows);
    if let Some(path) = &cli.json_out {
        std::fs::write(path, &document).map_err(|source| HostError::Output {
            path: path.clone(),
            source,
        })?;
    }
    if cli.json {
        println!("{document}");
    } else {
        print_table(&backend, &rows);
    }
    Ok(rows.iter().all(|r| r.check_passed))
}

fn results_json(backend: &Backend, rows: &[Row]) -> String {
    let (device, ptx_arch) = match backend {
        Backend::Gpu(gpu) => (serde_json::to_value(gpu.info()).ok(), Some(gpu.ptx_arch())),
        Backend::Emu => (None, None),
    };
    let document = serde_json::json!({
        "date": host::demos::report::utc_date(),
        "backend": backend.name(),
        "device": device,
        "ptx_arch": ptx_arch,
        "results": rows,
    });
    serde_json::to_string_pretty(&document).unwrap_or_default()
}

fn print_table(backend: &Backend, rows: &[Row]) {
    if let Backend::Gpu(gpu) = backend {
        let info = gpu.info();
        println!(
            "{} (compute capability {}.{}), driver CUDA {}, PTX {}",
            info.name,
            info.compute_capability.0,
            info.compute_capability.1,
            info.driver_cuda_version,
            gpu.ptx_arch()
        );
    }
    demos::report::print_table(rows);
}

fn info(backend: &Backend, json: bool) -> Result<()> {
    let Backend::Gpu(gpu) = backend else {
        println!("backend: CPU emulator (no GPU). Kernels and their launch shapes:");
        for kernel in kernels::KERNELS {
            println!(
                "  {:<20} block {}, {} bytes of shared memory",
                kernel.entry, kernel.block, kernel.shared_bytes
            );
        }
        return Ok(());
    };
    let occupancy = kernels::KERNELS
        .iter()
        .map(|k| gpu.occupancy(k))
        .collect::<Result<Vec<_>>>()?;
    if json {
        let document = serde_json::json!({ "device": gpu.info(), "ptx_arch": gpu.ptx_arch(), "kernels": occupancy });
        println!("{}", serde_json::to_string_pretty(&document).unwrap_or_default());
        return Ok(());
    }
    let i = gpu.info();
    let mib = |bytes: usize| bytes as f64 / (1 << 20) as f64;
    println!(
        "device {}: {} (compute capability {}.{})",
        i.ordinal, i.name, i.compute_capability.0, i.compute_capability.1
    );
    println!(
        "  driver CUDA {} (bindings {}), PTX loaded: {}",
        i.driver_cuda_version,
        i.bindings_cuda_version,
        gpu.ptx_arch()
    );
    println!(
        "  {} SMs, {} threads and {} registers per SM, L2 {:.0} MiB",
        i.sm_count,
        i.max_threads_per_sm,
        i.registers_per_sm,
        mib(i.l2_bytes as usize)
    );
    println!(
        "  shared memory: {} KiB per SM, {} KiB per block ({} KiB opt-in)",
        i.shared_per_sm / 1024,
        i.shared_per_block / 1024,
        i.shared_per_block_optin / 1024
    );
    println!(
        "  memory: {:.0} MiB total, {:.0} MiB free",
        mib(i.memory_total),
        mib(i.memory_free)
    );
    println!(
        "  managed memory: {}, concurrent managed access: {}, pageable memory access: {}",
        i.managed_memory, i.concurrent_managed_access, i.pageable_memory_access
    );
    println!();
    println!(
        "| {:<20} | {:>7} | {:>12} | {:>9} | {:>13} | {:>9} |",
        "kernel", "threads", "shared/block", "registers", "blocks per SM", "occupancy"
    );
    println!(
        "|{:-<22}|{:->9}|{:->14}|{:->11}|{:->15}|{:->11}|",
        "", "", "", "", "", ""
    );
    for o in &occupancy {
        println!(
            "| {:<20} | {:>7} | {:>12} | {:>9} | {:>13} | {:>8.0}% |",
            o.entry,
            o.threads_per_block,
            o.shared_bytes_per_block,
            o.registers_per_thread,
            o.resident_blocks_per_sm,
            o.occupancy * 100.0
        );
    }
    Ok(())
}
