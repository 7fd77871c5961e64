//! `host`: runs the Rust kernels on the GPU (or the CPU emulator), checks every result against the
//! f64 CPU reference and prints what each variant achieved. `host --help` lists the commands; one
//! command per registered kernel family comes from the registry.

use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches, value_parser};
use host::demos::{self, Row, Settings, managed, migration, models, multi_gpu, partial, pipeline, thrashing};
use kernels::Source;
use kernels_host::families::{self, FamilyDemo, Size};
use ptxkit_runtime::{Backend, BackendChoice, DeviceList, Error, Result, Topology};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

// Options every command takes.
#[derive(Args, Debug)]
#[command(next_help_heading = "Options of every command")]
struct Globals {
    /// Where kernels run: the GPU, the CPU emulator (at capped sizes), or the GPU when there is one.
    #[arg(long, default_value = "auto", global = true, value_parser = backend_choice())]
    backend: BackendChoice,
    /// CUDA device number (default: $PTXKIT_DEVICE, else 0).
    #[arg(long, global = true)]
    device: Option<usize>,
    /// Print the results as JSON instead of a table.
    #[arg(long, global = true)]
    json: bool,
    /// Also write the results as JSON to this file (checked before the run starts).
    #[arg(long, global = true, value_name = "FILE")]
    json_out: Option<PathBuf>,
    /// Untimed runs before timing.
    #[arg(long, default_value_t = 3, global = true, value_parser = value_parser!(u32).range(0..=1000))]
    warmup: u32,
    /// Timed runs; the median is reported.
    #[arg(long, default_value_t = 20, global = true, value_parser = value_parser!(u32).range(1..=10_000))]
    runs: u32,
    /// Folder of nvcc-made PTX of the CUDA C twins (benches/reference/cuda_c): each kernel is also timed from
    /// CUDA C, launched the same way.
    #[arg(long, global = true, value_name = "DIR")]
    cuda_c: Option<PathBuf>,
    /// Random stream the inputs are drawn from.
    #[arg(long, default_value_t = 2026, global = true)]
    rng: u64,
}

/// `--backend`'s values, each a [`BackendChoice`].
fn backend_choice() -> impl clap::builder::TypedValueParser<Value = BackendChoice> {
    use clap::builder::TypedValueParser;
    // Only the listed names get through, and each parses.
    clap::builder::PossibleValuesParser::new(BackendChoice::NAMES)
        .map(|name| name.parse().unwrap_or(BackendChoice::Auto))
}

/// What the command line asked for, checked before any backend is opened.
enum Job {
    Info,
    Family {
        demo: &'static dyn FamilyDemo,
        size: Size,
        /// The kernels asked for; empty for `--variant auto`, resolved on the backend.
        kernels: Vec<usize>,
    },
    Managed {
        n: usize,
    },
    Migration {
        max_mib: u64,
    },
    Thrashing {
        n: usize,
    },
    Partial {
        n: usize,
    },
    Pipeline {
        plan: pipeline::Plan,
        timeline: Option<PathBuf>,
    },
    /// `managed all`: each scenario in turn.
    ManagedAll(Vec<Job>),
    BankConflicts,
    /// `host models`: the model-shape suite against cuBLAS.
    Models(models::Plan),
    All,
    Smoke,
    Autotune {
        families: Vec<&'static dyn FamilyDemo>,
        out: PathBuf,
        /// Also at the model-shape suite's products the tiles run (`--models`).
        models: bool,
    },
    MultiGpu {
        plan: multi_gpu::Plan,
        devices: DeviceList,
    },
}

fn cli() -> Command {
    let mut command = Globals::augment_args(
        Command::new("host")
            .about("Rust GPU kernels: shared-memory and managed-memory demos, each checked against an f64 CPU reference")
            .after_help(
                "Exit status: 0 when every check passes, 1 when one fails, 2 on an error (bad input, no GPU, a CUDA failure).",
            )
            .subcommand_required(true)
            .arg_required_else_help(true),
    )
    .subcommand(Command::new("info").about("The device, its limits, and how many blocks of each kernel fit on an SM"));
    for family in families::FAMILIES {
        command = command.subcommand(family_command(*family));
    }
    command
        .subcommand(
            Command::new("managed")
                .about(
                    "Unified memory (GPU only). end-to-end (the default): pageable copies, pinned copies, managed memory \
                     without and with prefetch, with read-mostly advice: end-to-end and kernel time of vec_add, and the \
                     CPU reading the result back. migration: pinned and pageable copies against prefetches, each way, \
                     from 2 MiB up; the cost of a GPU page fault; first touch on the GPU against the CPU. thrashing: \
                     the GPU writing an array and the CPU reading a few elements or all of it, over and over, plain \
                     and with each cure (prefetch, advice, pinned copies whole or read as they land, mapped pinned \
                     memory written in place by the kernel). partial: a \
                     gather reading 0.1 % to 100 % of the 64 KiB pages of the array, on demand and mapped without \
                     migration, against copying or prefetching all of it first. \
                     pipeline: an array of --gib GiB doubled chunk by chunk: on demand, prefetch all first, chunk \
                     prefetches pipelined on three streams under the kernels, pinned copies pipelined the same way; \
                     against the pinned copy to the GPU, with --timeline FILE drawing each stream's work. all: each \
                     scenario in turn",
                )
                .arg(
                    Arg::new("scenario")
                        .value_parser(["end-to-end", "migration", "thrashing", "partial", "pipeline", "all"])
                        .default_value("end-to-end")
                        .help("Which scenario"),
                )
                .arg(
                    Arg::new("max-mib")
                        .long("max-mib")
                        .value_parser(value_parser!(u64))
                        .allow_negative_numbers(true)
                        .default_value(migration::DEFAULT_MAX_MIB.to_string())
                        .help("migration: the largest size, in MiB (capped by the GPU's and the host's free memory)"),
                )
                .arg(
                    Arg::new("n")
                        .long("n")
                        .value_parser(value_parser!(usize))
                        .allow_negative_numbers(true)
                        .default_value(managed::DEFAULT_N.to_string())
                        .help("end-to-end, thrashing and partial: elements per array"),
                )
                .arg(
                    Arg::new("gib")
                        .long("gib")
                        .value_parser(value_parser!(u64))
                        .allow_negative_numbers(true)
                        .default_value(pipeline::DEFAULT_GIB.to_string())
                        .help("pipeline: the array, in GiB"),
                )
                .arg(
                    Arg::new("chunk-mib")
                        .long("chunk-mib")
                        .value_parser(value_parser!(u64))
                        .allow_negative_numbers(true)
                        .default_value(pipeline::DEFAULT_CHUNK_MIB.to_string())
                        .help("pipeline: the chunk each kernel and each move takes, in MiB (a multiple of 2)"),
                )
                .arg(
                    Arg::new("timeline")
                        .long("timeline")
                        .value_name("FILE")
                        .value_parser(value_parser!(PathBuf))
                        .help("pipeline: draw when each move and kernel ran, one lane per stream (SVG; PNG if FILE ends in .png)"),
                ),
        )
        .subcommand(
            Command::new("multi-gpu")
                .about(
                    "Several GPUs of one host. peer: copies between GPUs (pushed, pulled, both ways at once) and a \
                     kernel reading another GPU's memory in place, against the copy engine. managed: one managed \
                     buffer on two GPUs: prefetched across, mapped with accessed-by advice, duplicated read-mostly, \
                     written in turn with and without advice. split: a matmul with C's rows split across the GPUs, \
                     against one GPU, resident and end to end. collective: the product split along k, the partial C \
                     matrices summed by an NCCL all-reduce (finds PyTorch's libnccl, or $KERNELS_NCCL). all: each in \
                     turn. A device may be listed twice (--devices 0,0) to run the splitting on one GPU; on the \
                     emulator only split runs",
                )
                .arg(
                    Arg::new("scenario")
                        .value_parser(["peer", "managed", "split", "collective", "all"])
                        .default_value("all")
                        .help("Which scenario"),
                )
                .arg(
                    Arg::new("devices")
                        .long("devices")
                        .default_value("all")
                        .help("The devices, e.g. 0,1 (a device may repeat), or all"),
                )
                .arg(
                    Arg::new("floats")
                        .long("floats")
                        .value_parser(value_parser!(usize))
                        .allow_negative_numbers(true)
                        .default_value(multi_gpu::DEFAULT_N.to_string())
                        .help("peer and managed: floats moved or read"),
                )
                .arg(
                    Arg::new("shape")
                        .long("shape")
                        .default_value("8192x8192x8192")
                        .help("split and collective: the product MxNxK"),
                ),
        )
        .subcommand(Command::new("bank-conflicts").about(
            "The bank rule against the hardware: predicted and measured conflict degree for strides 1 to 64 of 4-, 8- and 16-byte shared-memory reads",
        ))
        .subcommand(
            Command::new("models")
                .about(
                    "The matrix products of real models (benches/shapes/models.json: Llama-3 8B and 70B, Llama-2 7B, \
                     GPT-2, BERT, ViT at decode, prefill and batch token counts) on the kernel --variant auto picks, \
                     against cuBLAS, each checked; then each dtype's geometric mean and worst product (GPU only; \
                     host/python/bench_models.py runs the same suite against PyTorch)",
                )
                .arg(
                    Arg::new("dtypes")
                        .long("dtypes")
                        .default_value("f32,tf32,bf16,bf16-f32")
                        .help(
                            "Of f32 (matmul), tf32 (matmul-tc), bf16 (matmul-bf16-rounded: bf16 C), bf16-f32 \
                             (matmul-bf16: f32 C), comma-separated",
                        ),
                )
                .arg(
                    Arg::new("tokens")
                        .long("tokens")
                        .help("Only the products of these token counts (m), comma-separated, e.g. 1,16 for decoding (default: all)"),
                ),
        )
        .subcommand(Command::new("all").about("Every family at its default size, and the managed demo"))
        .subcommand(
            Command::new("smoke")
                .about("One small checked launch of every registered kernel (what the runner runs compute-sanitizer on)"),
        )
        .subcommand(
            Command::new("autotune")
                .about(format!(
                    "Times every tile configuration of the families that have several ({}) at their bench shapes and \
                     writes this device's tile profile, which `--variant auto` then follows (GPU only)",
                    families::FAMILIES
                        .iter()
                        .filter(|f| f.choice().configurations().len() >= 2)
                        .map(|f| f.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
                .arg(
                    Arg::new("family")
                        .long("family")
                        .help("Only this family (default: every family with several configurations)"),
                )
                .arg(
                    Arg::new("out")
                        .long("out")
                        .value_parser(value_parser!(PathBuf))
                        .default_value("tile-profile.json")
                        .help(format!(
                            "Where the profile goes; use it with {}=FILE, or copy it into host/library/profiles/ to carry it",
                            families::profile::PROFILE_VARIABLE
                        )),
                )
                .arg(
                    Arg::new("models")
                        .long("models")
                        .action(ArgAction::SetTrue)
                        .help(
                            "Also time each configuration at the products of the model-shape suite (benches/shapes/models.json) \
                             that run on tiles (matmul: past the small-m rungs)",
                        ),
                ),
        )
}

/// `host <family>`: one flag per extent of the size, and `--variant`.
fn family_command(family: &'static dyn FamilyDemo) -> Command {
    let default = family.cli().default;
    let mut command = Command::new(family.name().replace('_', "-")).about(family.cli().about);
    for (i, extent) in family.extents().iter().enumerate() {
        command = command.arg(
            Arg::new(*extent)
                .long(*extent)
                .value_parser(value_parser!(usize))
                .allow_negative_numbers(true)
                .default_value(default.0[i].to_string())
                .help(format!("Problem size: {extent} (see the command's description)")),
        );
    }
    let names: Vec<&str> = family.kernels().iter().map(|k| k.entry).collect();
    let auto = if !family.choice().configurations().is_empty() {
        format!(
            ", or auto (a rung the shape calls for where there is one, else the tile configuration chosen for the device among {})",
            family.choice().configurations().join(", ")
        )
    } else if families::auto::has_auto(family) {
        ", or auto (the fastest rung for the shape, by the runner's figures)".to_string()
    } else {
        String::new()
    };
    command.arg(Arg::new("variant").long("variant").default_value("all").help(format!(
        "Which kernel: {}, or all{auto} (the family prefix may be left out)",
        names.join(", ")
    )))
}

fn main() -> ExitCode {
    // `host ... | head` should end quietly, as other command-line tools do, not panic in println!.
    #[cfg(unix)]
    // SAFETY: at the start of main, before any thread exists; SIG_DFL is a valid disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let matches = cli().get_matches();
    match run(&matches) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(2)
        }
    }
}

/// Whether every check passed.
fn run(matches: &ArgMatches) -> Result<bool> {
    let globals = Globals::from_arg_matches(matches).map_err(|e| Error::InvalidInput {
        what: "the command line".into(),
        reason: e.to_string(),
    })?;
    let arguments: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if let Some(error) = repeated_option(&arguments) {
        return Err(error);
    }
    // Whatever the backend: a mistyped profile path is said now, not ignored.
    families::profile::from_variable()?;
    let job = parse_job(matches)?;
    if let Some(path) = &globals.json_out {
        check_writable(path)?;
    }
    let jobs = match &job {
        Job::ManagedAll(jobs) => jobs.iter().collect(),
        one => vec![one],
    };
    for job in jobs {
        if let Job::Pipeline {
            timeline: Some(path), ..
        } = job
        {
            check_writable(path)?;
        }
    }
    if let Job::MultiGpu { plan, devices } = &job {
        return run_multi_gpu(&globals, plan, devices);
    }
    let (mut backend, notice) = kernels_host::open(globals.backend, globals.device)?;
    if let Some(notice) = notice {
        eprintln!("{notice}");
    }
    match (&mut backend, &globals.cuda_c) {
        (Backend::Gpu(gpu), Some(dir)) => {
            kernels_host::cuda_c::load_cuda_c(gpu, dir)?;
        }
        (Backend::Emu, Some(_)) => eprintln!("note: --cuda-c needs a GPU; ignored on the emulator"),
        (_, None) => {}
    }
    let settings = Settings {
        warmup: globals.warmup,
        runs: globals.runs,
        rng: globals.rng,
    };
    if let Job::Autotune { families, out, models } = &job {
        check_writable(out)?;
        let measured = format!(
            "host autotune, {} warm-up and {} timed runs per configuration, median",
            settings.warmup, settings.runs
        );
        let (rows, tuned, profile) = demos::autotune::run(&backend, &settings, families, *models, measured)?;
        let text = serde_json::to_string_pretty(&profile).unwrap_or_default();
        if globals.json {
            println!("{}", results_json(&backend, &rows));
        } else {
            print_header(&backend);
            demos::report::print_table(&rows);
            println!();
            demos::autotune::print(&tuned);
            println!(
                "\nprofile written to {}: use it with {}={}",
                out.display(),
                families::profile::PROFILE_VARIABLE,
                out.display()
            );
        }
        // After printing: a file that cannot be written never loses the results.
        write_json(out, &(text + "\n"))?;
        if let Some(path) = &globals.json_out {
            write_json(path, &results_json(&backend, &rows))?;
        }
        return Ok(!rows.iter().any(Row::failed));
    }
    if let Job::Info = job {
        let document = info_json(&backend)?;
        if globals.json {
            println!("{document}");
        } else {
            print_info(&backend)?;
        }
        if let Some(path) = &globals.json_out {
            write_json(path, &document)?;
        }
        return Ok(true);
    }
    let rows = run_job(&backend, &settings, &job)?;
    let document = results_json(&backend, &rows);
    if globals.json {
        println!("{document}");
    } else {
        print_header(&backend);
        match job {
            Job::BankConflicts => demos::banks::print_study(&rows),
            Job::Models(_) => {
                demos::report::print_table(&rows);
                println!();
                for line in models::summary(&rows) {
                    println!("{line}");
                }
            }
            _ => demos::report::print_table(&rows),
        }
    }
    // After printing: a file that cannot be written never loses the results.
    if let Some(path) = &globals.json_out {
        write_json(path, &document)?;
    }
    Ok(!rows.iter().any(Row::failed))
}

/// The job, with every size and variant checked (no backend needed for that).
fn parse_job(matches: &ArgMatches) -> Result<Job> {
    let (name, sub) = matches.subcommand().expect("clap requires a subcommand");
    match name {
        "info" => Ok(Job::Info),
        "all" => Ok(Job::All),
        "smoke" => Ok(Job::Smoke),
        "bank-conflicts" => Ok(Job::BankConflicts),
        "models" => Ok(Job::Models(models::plan(
            sub.get_one::<String>("dtypes").map_or("", String::as_str),
            sub.get_one::<String>("tokens").map(String::as_str),
        )?)),
        "autotune" => {
            let tunable = || {
                families::FAMILIES
                    .iter()
                    .copied()
                    .filter(|f| f.choice().configurations().len() >= 2)
            };
            let families = match sub.get_one::<String>("family") {
                None => tunable().collect(),
                Some(name) => {
                    let wanted = name.replace('-', "_");
                    let found: Vec<_> = tunable().filter(|f| f.name() == wanted).collect();
                    if found.is_empty() {
                        return Err(Error::InvalidInput {
                            what: "--family".into(),
                            reason: format!(
                                "'{name}' has no tile configurations to tune; choose one of {}",
                                tunable().map(|f| f.name()).collect::<Vec<_>>().join(", ")
                            ),
                        });
                    }
                    found
                }
            };
            let out = sub.get_one::<PathBuf>("out").expect("out has a default").clone();
            let models = sub.get_flag("models");
            Ok(Job::Autotune { families, out, models })
        }
        "multi-gpu" => {
            let scenario = sub.get_one::<String>("scenario").expect("scenario has a default");
            let scenarios = match multi_gpu::Scenario::parse(scenario) {
                Some(one) => vec![one],
                None => multi_gpu::Scenario::ALL.to_vec(),
            };
            let shape = parse_shape(sub.get_one::<String>("shape").expect("shape has a default"))?;
            let floats = *sub.get_one::<usize>("floats").expect("floats has a default");
            Ok(Job::MultiGpu {
                plan: multi_gpu::Plan::new(scenarios, floats, shape)?,
                devices: ptxkit_runtime::parse_devices(
                    sub.get_one::<String>("devices").expect("devices has a default"),
                )?,
            })
        }
        "managed" => match sub.get_one::<String>("scenario").map(String::as_str) {
            Some("all") => Ok(Job::ManagedAll(
                MANAGED_SCENARIOS
                    .iter()
                    .map(|scenario| managed_job(sub, scenario))
                    .collect::<Result<_>>()?,
            )),
            scenario => managed_job(sub, scenario.unwrap_or("end-to-end")),
        },
        family_name => {
            let demo = families::find(family_name).expect("every family subcommand comes from FAMILIES");
            let mut size = Size([1; 3]);
            for (i, extent) in demo.extents().iter().enumerate() {
                size.0[i] = *sub.get_one::<usize>(extent).expect("every extent has a default");
            }
            demo.plan(size).map_err(|error| size_error(demo, size, error))?;
            let variant = sub.get_one::<String>("variant").expect("variant has a default");
            let kernels = if variant == "all" {
                (0..demo.kernels().len()).collect()
            } else if variant == "auto" && families::auto::has_auto(demo) {
                Vec::new()
            } else {
                let index = families::kernel_index(demo, variant).ok_or_else(|| Error::InvalidInput {
                    what: "--variant".into(),
                    reason: format!(
                        "'{variant}' is not a {} kernel; choose {}one of {} or all",
                        demo.name(),
                        if families::auto::has_auto(demo) { "auto, " } else { "" },
                        demo.kernels().iter().map(|k| k.entry).collect::<Vec<_>>().join(", ")
                    ),
                })?;
                vec![index]
            };
            Ok(Job::Family { demo, size, kernels })
        }
    }
}

/// `--shape MxNxK`.
fn parse_shape(text: &str) -> Result<[usize; 3]> {
    let parts: Vec<Option<usize>> = text.split(['x', '×']).map(|p| p.trim().parse().ok()).collect();
    match parts[..] {
        [Some(m), Some(n), Some(k)] => Ok([m, n, k]),
        _ => Err(Error::InvalidInput {
            what: "--shape".into(),
            reason: format!("'{text}' is not MxNxK, e.g. 8192x8192x8192"),
        }),
    }
}

/// A size no kernel of `demo` can run, said in the flags the user typed: the flag at fault and
/// the largest value that runs with the others as given (found by halving), then the library's
/// reason; the library's error as it is where no one flag explains it.
fn size_error(demo: &dyn FamilyDemo, size: Size, error: Error) -> Error {
    let flags = demo.extents();
    let flag = |i: usize| format!("--{} {}", flags[i], size.0[i]);
    for i in 0..flags.len() {
        let with = |value: usize| {
            let mut changed = size;
            changed.0[i] = value;
            demo.plan(changed).is_ok()
        };
        // This flag alone is at fault only if its smallest value runs.
        if size.0[i] <= 1 || !with(1) {
            if size.0[i] == 0 && with(1) {
                return Error::InvalidInput {
                    what: flag(i),
                    reason: "give at least 1".into(),
                };
            }
            continue;
        }
        // with(runs) holds, with(fails) does not.
        let (mut runs, mut fails) = (1, size.0[i]);
        while fails - runs > 1 {
            let middle = runs + (fails - runs) / 2;
            if with(middle) {
                runs = middle;
            } else {
                fails = middle;
            }
        }
        let others: Vec<String> = (0..flags.len()).filter(|&j| j != i).map(flag).collect();
        let with_others = if others.is_empty() {
            String::new()
        } else {
            format!(" with {}", others.join(" "))
        };
        return Error::InvalidInput {
            what: flag(i),
            reason: format!("the largest that runs{with_others} is {runs} ({error})"),
        };
    }
    error
}

/// Options of every command that take a value: given twice (once before the command, once after
/// it), the last would silently win.
const VALUE_OPTIONS: [&str; 7] = [
    "--backend",
    "--device",
    "--json-out",
    "--warmup",
    "--runs",
    "--cuda-c",
    "--rng",
];

/// The error for an option of [`VALUE_OPTIONS`] given more than once in `arguments`, if one is.
fn repeated_option(arguments: &[String]) -> Option<Error> {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    let mut words = arguments.iter().map(String::as_str);
    while let Some(word) = words.next() {
        if word == "--" {
            break;
        }
        let Some(option) = VALUE_OPTIONS
            .iter()
            .find(|o| word == **o || word.strip_prefix(**o).is_some_and(|rest| rest.starts_with('=')))
        else {
            continue;
        };
        let value = match word.split_once('=') {
            Some((_, value)) => value,
            None => words.next().unwrap_or_default(),
        };
        if let Some((_, first)) = seen.iter().find(|(o, _)| o == option) {
            return Some(Error::InvalidInput {
                what: option.to_string(),
                reason: format!("given twice ({first}, then {value}): give it once"),
            });
        }
        seen.push((option, value));
    }
    None
}

/// `host multi-gpu`: one backend per listed device (emulators where there is no GPU or
/// `--backend emu`), the plan's scenarios, the rows printed and written as every command's are.
fn run_multi_gpu(globals: &Globals, plan: &multi_gpu::Plan, devices: &DeviceList) -> Result<bool> {
    if let Some(path) = &globals.json_out {
        check_writable(path)?;
    }
    if let Some(device) = globals.device {
        return Err(Error::InvalidInput {
            what: format!("--device {device}"),
            reason: "multi-gpu runs on the devices of --devices (e.g. --devices 0,1), not on --device's".into(),
        });
    }
    // The rule of every command: named devices are never replaced by emulators.
    let named = match devices {
        DeviceList::These(list) => Some(format!(
            "--devices {}",
            list.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
        )),
        DeviceList::All => ptxkit_runtime::named_device(None)?,
    };
    let emulated = |why: String| -> Result<Vec<Backend>> {
        if !plan.scenarios.contains(&multi_gpu::Scenario::Split) {
            return Err(Error::NeedsGpu {
                what: format!("multi-gpu {}", plan.scenarios[0].name()),
                why: multi_gpu::NEEDS_GPUS,
            });
        }
        eprintln!("note: {why}; running the split on 2 emulated devices at a small shape");
        Ok(vec![Backend::Emu, Backend::Emu])
    };
    let backends = match globals.backend {
        BackendChoice::Emu => match named {
            Some(named) => return Err(Error::DeviceOnEmulator { named }),
            None => emulated("--backend emu".into())?,
        },
        BackendChoice::Gpu => multi_gpu::backends_of(kernels_host::open_gpus(devices)?),
        BackendChoice::Auto => match kernels_host::open_gpus(devices) {
            Ok(gpus) => multi_gpu::backends_of(gpus),
            Err(why @ (Error::NoDriver | Error::NoSuchDevice { available: 0, .. })) if named.is_none() => {
                emulated(format!("no GPU ({why})"))?
            }
            Err(other) => return Err(other),
        },
    };
    let settings = Settings {
        warmup: globals.warmup,
        runs: globals.runs,
        rng: globals.rng,
    };
    let rows = multi_gpu::run(&backends, &settings, plan)?;
    let document = results_json(&backends[0], &rows);
    if globals.json {
        println!("{document}");
    } else {
        print_header(&backends[0]);
        if let Ok(gpus) = multi_gpu::gpus_of(&backends) {
            println!("devices {}", multi_gpu::device_names(&gpus));
        }
        demos::report::print_table(&rows);
    }
    if let Some(path) = &globals.json_out {
        write_json(path, &document)?;
    }
    Ok(!rows.iter().any(Row::failed))
}

/// The scenarios `managed all` runs, in order.
const MANAGED_SCENARIOS: [&str; 5] = ["end-to-end", "migration", "thrashing", "partial", "pipeline"];

/// The job of managed-memory scenario `scenario`, its flags checked.
fn managed_job(sub: &ArgMatches, scenario: &str) -> Result<Job> {
    match scenario {
        "migration" => {
            let max_mib = *sub.get_one::<u64>("max-mib").expect("max-mib has a default");
            migration::check_flag(max_mib)?;
            Ok(Job::Migration { max_mib })
        }
        "thrashing" => {
            let n = *sub.get_one::<usize>("n").expect("n has a default");
            kernels::elementwise::Elementwise::new(n)?;
            Ok(Job::Thrashing { n })
        }
        "partial" => {
            let n = *sub.get_one::<usize>("n").expect("n has a default");
            kernels::gather::Gather::new(n, n)?;
            Ok(Job::Partial { n })
        }
        "pipeline" => Ok(Job::Pipeline {
            plan: pipeline::Plan::from_flags(
                *sub.get_one::<u64>("gib").expect("gib has a default"),
                *sub.get_one::<u64>("chunk-mib").expect("chunk-mib has a default"),
            )?,
            timeline: sub.get_one::<PathBuf>("timeline").cloned(),
        }),
        _ => {
            let n = *sub.get_one::<usize>("n").expect("n has a default");
            kernels::elementwise::Elementwise::new(n)?;
            Ok(Job::Managed { n })
        }
    }
}

fn run_job(backend: &Backend, settings: &Settings, job: &Job) -> Result<Vec<Row>> {
    match job {
        // Both answered in `run` before any rows are made.
        Job::Info | Job::Autotune { .. } | Job::MultiGpu { .. } => Ok(Vec::new()),
        Job::Family { demo, size, kernels } => {
            let size = demos::emulator_size(backend, *demo, *size);
            demo.check(backend, size, 1)?;
            if let [only] = kernels[..] {
                let info = &demo.kernels()[only];
                if !Source::ALL.into_iter().any(|s| families::runs_here(backend, info, s)) {
                    // The one kernel asked for: skipping it would run nothing and pass.
                    return Err(Error::NeedsSm90a {
                        entry: info.entry.into(),
                        backend: match backend {
                            Backend::Gpu(gpu) => format!("this GPU ({} PTX loaded)", kernels_host::library_arch(gpu)),
                            Backend::Emu => "the CPU emulator".into(),
                        },
                    });
                }
            }
            let kernels = if kernels.is_empty() {
                vec![auto_kernel(backend, *demo, size)?]
            } else {
                kernels.clone()
            };
            demos::run_family(backend, settings, *demo, size, &kernels)
        }
        Job::Managed { n } => managed::run(backend, settings, *n),
        Job::Migration { max_mib } => migration::run(backend, settings, *max_mib),
        Job::Thrashing { n } => thrashing::run(backend, settings, *n),
        Job::Partial { n } => partial::run(backend, settings, *n),
        Job::Pipeline { plan, timeline } => pipeline::run(backend, settings, plan, timeline.as_deref()),
        Job::ManagedAll(jobs) => {
            let mut rows = Vec::new();
            for job in jobs {
                rows.extend(run_job(backend, settings, job)?);
            }
            Ok(rows)
        }
        Job::BankConflicts => demos::banks::run(backend),
        Job::Models(plan) => models::run(backend, settings, plan),
        Job::Smoke => demos::smoke(backend, families::FAMILIES, settings.rng),
        Job::All => {
            // Every size is checked before the first kernel runs.
            let sizes = families::FAMILIES
                .iter()
                .map(|demo| {
                    let size = demos::emulator_size(backend, *demo, demo.cli().default);
                    demo.check(backend, size, 1).map(|_| size)
                })
                .collect::<Result<Vec<Size>>>()?;
            let run_managed = matches!(backend, Backend::Gpu(_));
            if run_managed {
                managed::check(backend, managed::DEFAULT_N)?;
            }
            let mut rows = Vec::new();
            for (demo, size) in families::FAMILIES.iter().zip(sizes) {
                let all: Vec<usize> = (0..demo.kernels().len()).collect();
                rows.extend(demos::run_family(backend, settings, *demo, size, &all)?);
            }
            if run_managed {
                rows.extend(managed::run(backend, settings, managed::DEFAULT_N)?);
            } else {
                rows.push(Row::skipped("managed", backend, managed::NEEDS_GPU));
            }
            Ok(rows)
        }
    }
}

/// `--variant auto`: the kernel the family runs when none is named, said on stderr with the reason.
fn auto_kernel(backend: &Backend, demo: &dyn FamilyDemo, size: Size) -> Result<usize> {
    let auto = families::auto::auto(backend, demo, size)?.ok_or_else(|| Error::InvalidInput {
        what: "--variant".into(),
        reason: format!("{} has no automatic choice: name a kernel", demo.name()),
    })?;
    eprintln!("note: --variant auto: {} ({})", auto.entry, auto.why);
    Ok(auto.kernel)
}

/// For each family with several tile configurations, the one this GPU gets at the family's
/// default size.
fn choices(gpu: &ptxkit_runtime::Gpu) -> Result<Vec<(&'static str, String, families::choice::Choice)>> {
    let mut choices = Vec::new();
    for demo in families::FAMILIES {
        let size = demo.cli().default;
        if let Some(choice) = families::choice::choose(gpu, *demo, size)? {
            choices.push((demo.name(), demo.label(size), choice));
        }
    }
    Ok(choices)
}

/// Fails now, not after the run, when `path` cannot be written. Leaves no file behind.
fn check_writable(path: &Path) -> Result<()> {
    let existed = path.exists();
    let opened = std::fs::OpenOptions::new().append(true).create(true).open(path);
    let result = opened.map(|_| ()).map_err(|source| Error::Output {
        path: path.to_path_buf(),
        source,
    });
    if result.is_ok() && !existed {
        let _ = std::fs::remove_file(path);
    }
    result
}

/// Writes `document` to `path` whole or not at all: a regular file (or a new one) through a
/// temporary file beside it, renamed over it, so that a full disk or a kill leaves the old file,
/// never a cut one; a device or a pipe (`/dev/stdout`) is written directly.
fn write_json(path: &Path, document: &str) -> Result<()> {
    let output = |source| Error::Output {
        path: path.to_path_buf(),
        source,
    };
    let special = std::fs::metadata(path).is_ok_and(|m| !m.is_file());
    if special {
        return std::fs::write(path, document).map_err(output);
    }
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let temporary = path.with_file_name(format!(".{name}.partial-{}", std::process::id()));
    std::fs::write(&temporary, document)
        .and_then(|()| std::fs::rename(&temporary, path))
        .map_err(|source| {
            let _ = std::fs::remove_file(&temporary);
            output(source)
        })
}

fn results_json(backend: &Backend, rows: &[Row]) -> String {
    let (device, ptx_arch) = match backend {
        Backend::Gpu(gpu) => (
            serde_json::to_value(gpu.info()).ok(),
            Some(kernels_host::library_arch(gpu)),
        ),
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

fn print_header(backend: &Backend) {
    if let Backend::Gpu(gpu) = backend {
        let info = gpu.info();
        println!(
            "{} (compute capability {}.{}), driver CUDA {}, PTX {}",
            info.name,
            info.compute_capability.0,
            info.compute_capability.1,
            info.driver_cuda_version,
            kernels_host::library_arch(gpu)
        );
    }
}

/// Every registered kernel with its launch geometry; on a GPU, also its registers and occupancy.
fn info_json(backend: &Backend) -> Result<String> {
    let kernels = kernels::registry::kernels();
    let document = match backend {
        Backend::Gpu(gpu) => {
            let occupancy = kernels.iter().map(|k| gpu.occupancy(k)).collect::<Result<Vec<_>>>()?;
            let choices: Vec<_> = choices(gpu)?
                .into_iter()
                .map(|(family, size, choice)| serde_json::json!({ "family": family, "size": size, "choice": choice }))
                .collect();
            let topology = Topology::of_all_devices().ok();
            serde_json::json!({ "backend": "gpu", "device": gpu.info(), "ptx_arch": kernels_host::library_arch(gpu), "kernels": occupancy, "choices": choices, "topology": topology })
        }
        Backend::Emu => {
            let kernels: Vec<_> = kernels
                .iter()
                .map(|k| {
                    serde_json::json!({
                        "entry": k.entry,
                        "family": k.family,
                        "threads_per_block": k.block.volume(),
                        "block": [k.block.x, k.block.y, k.block.z],
                        "shared_bytes_per_block": k.shared_bytes,
                    })
                })
                .collect();
            serde_json::json!({ "backend": "emu", "kernels": kernels })
        }
    };
    Ok(serde_json::to_string_pretty(&document).unwrap_or_default())
}

fn print_info(backend: &Backend) -> Result<()> {
    let Backend::Gpu(gpu) = backend else {
        println!("backend: CPU emulator (no GPU). Registered kernels and their launch shapes:");
        println!(
            "| {:<16} | {:<22} | {:>11} | {:>12} |",
            "family", "kernel", "block", "shared/block"
        );
        println!("|{:-<18}|{:-<24}|{:->13}|{:->14}|", "", "", "", "");
        for k in kernels::registry::kernels() {
            let block = format!("{}x{}x{}", k.block.x, k.block.y, k.block.z);
            println!(
                "| {:<16} | {:<22} | {:>11} | {:>12} |",
                k.family, k.entry, block, k.shared_bytes
            );
        }
        return Ok(());
    };
    let occupancy = kernels::registry::kernels()
        .iter()
        .map(|k| gpu.occupancy(k))
        .collect::<Result<Vec<_>>>()?;
    let choices = choices(gpu)?;
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
        kernels_host::library_arch(gpu)
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
    println!("Topology (every device the driver sees):");
    match Topology::of_all_devices() {
        Ok(topology) => topology.describe().iter().for_each(|line| println!("  {line}")),
        Err(why) => println!("  unknown: {why}"),
    }
    println!();
    println!(
        "| {:<22} | {:>7} | {:>12} | {:>9} | {:>13} | {:>9} |",
        "kernel", "threads", "shared/block", "registers", "blocks per SM", "occupancy"
    );
    println!(
        "|{:-<24}|{:->9}|{:->14}|{:->11}|{:->15}|{:->11}|",
        "", "", "", "", "", ""
    );
    for o in &occupancy {
        println!(
            "| {:<22} | {:>7} | {:>12} | {:>9} | {:>13} | {:>8.0}% |",
            o.entry,
            o.threads_per_block,
            o.shared_bytes_per_block,
            o.registers_per_thread,
            o.resident_blocks_per_sm,
            o.occupancy * 100.0
        );
    }
    if !choices.is_empty() {
        println!();
        println!("Tile configurations chosen for this device (`--variant auto`):");
        for (family, size, choice) in &choices {
            println!("  {family} at {size}: {} because {}", choice.entry, choice.why);
        }
    }
    Ok(())
}
