//! The `host` binary as a new user meets it: bad input gets a clear message naming the value, exit
//! status 2, within a second, before any work; good input on the emulator gives tables and JSON.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Bad input is refused within this long: it must fail before generating inputs or allocating.
const PROMPT: Duration = Duration::from_secs(1);

fn host(args: &[&str], env: &[(&str, &str)]) -> (Output, Duration) {
    let start = Instant::now();
    // The runner has no cargo: run.sh points HOST_BIN at the bundle's binary.
    let binary = std::env::var_os("HOST_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_host").into());
    let output = Command::new(binary)
        .args(args)
        .env_remove("PTXKIT_DEVICE")
        .envs(env.iter().copied())
        .output()
        .expect("the host binary runs");
    (output, start.elapsed())
}

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A scratch path of this test process.
fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("host-cli-{}-{name}", std::process::id()))
}

/// Variables set for one invocation.
type Environment<'a> = Vec<(&'a str, &'a str)>;

#[test]
fn bad_invocations_exit_2_at_once_with_a_message_naming_the_value() {
    let missing_dir = scratch("no-such-dir").join("out.json");
    let missing = missing_dir.to_string_lossy().into_owned();
    // (arguments, environment, what the message must contain)
    let table: Vec<(Vec<&str>, Environment, &str)> = vec![
        (vec!["vec-add", "--n", "5000000000"], vec![], "n = 5000000000"),
        (vec!["shared-mem-add", "--n", "4294967296"], vec![], "n = 4294967296"),
        (
            vec!["matmul", "--m", "3", "--n", "3", "--k", "4294967297"],
            vec![],
            "3×4294967297",
        ),
        (
            vec!["matmul", "--m", "100000", "--n", "100000", "--k", "1"],
            vec![],
            "100000×100000",
        ),
        (vec!["matmul", "--m", "0"], vec![], "--m 0: give at least 1"),
        (
            vec!["matmul", "--variant", "bogus"],
            vec![],
            "'bogus' is not a matmul kernel",
        ),
        (
            vec!["warp-probe", "--blocks", "0"],
            vec![],
            "--blocks 0: give at least 1",
        ),
        (vec!["atomic-probe", "--blocks", "70000"], vec![], "blocks = 70000"),
        (vec!["reduce", "--n", "0"], vec![], "--n 0: give at least 1"),
        (vec!["reduce-max", "--n", "0"], vec![], "--n 0: give at least 1"),
        (vec!["row-sum", "--cols", "0"], vec![], "at least 1"),
        (vec!["reduce", "--n", "4294967296"], vec![], "n = 4294967296"),
        (vec!["histogram", "--skew", "101"], vec![], "101 is not a percentage"),
        (
            vec!["histogram-f32", "--skew", "101"],
            vec![],
            "101 is not a percentage",
        ),
        (vec!["histogram-f32", "--n", "0"], vec![], "--n 0: give at least 1"),
        (vec!["histogram", "--n", "4294967296"], vec![], "n = 4294967296"),
        (vec!["scan", "--exclusive", "2"], vec![], "--exclusive"),
        (vec!["scan", "--n", "0"], vec![], "--n 0: give at least 1"),
        (vec!["softmax", "--rows", "0"], vec![], "at least 1"),
        (
            vec!["softmax", "--rows", "65536", "--cols", "65537"],
            vec![],
            "65536 × 65537",
        ),
        (vec!["vec-add", "--n", "abc"], vec![], "'abc'"),
        (vec!["vec-add", "--n", "-5"], vec![], "-5"),
        (vec!["--runs", "99999999999", "vec-add"], vec![], "99999999999"),
        (vec!["--runs", "0", "vec-add"], vec![], "--runs"),
        (vec!["--warmup", "100000000", "vec-add"], vec![], "100000000"),
        (vec!["--backend", "emu", "managed"], vec![], "needs a GPU"),
        (vec!["--backend", "emu", "managed", "migration"], vec![], "needs a GPU"),
        (
            vec!["--backend", "emu", "managed", "migration", "--max-mib", "1"],
            vec![],
            "--max-mib 1: give a size from 2 MiB",
        ),
        (vec!["managed", "thrash"], vec![], "invalid value 'thrash'"),
        (vec!["--backend", "emu", "managed", "thrashing"], vec![], "needs a GPU"),
        (vec!["--backend", "emu", "managed", "partial"], vec![], "needs a GPU"),
        (
            vec!["--backend", "emu", "managed", "partial", "--n", "100"],
            vec![],
            "at least one 64 KiB page",
        ),
        (
            vec!["--backend", "emu", "managed", "thrashing", "--n", "0"],
            vec![],
            "n must be at least 1",
        ),
        (
            vec!["--backend", "emu", "managed", "--n", "0"],
            vec![],
            "n must be at least 1",
        ),
        (
            vec!["--json-out", &missing, "vec-add", "--n", "10"],
            vec![],
            "cannot write",
        ),
        (vec!["info"], vec![("PTXKIT_DEVICE", "abc")], "'abc'"),
        (vec!["frobnicate"], vec![], "frobnicate"),
        (vec!["autotune"], vec![], "autotune needs a GPU"),
        (
            vec!["autotune", "--family", "scan"],
            vec![],
            "'scan' has no tile configurations",
        ),
        (vec!["autotune", "--out", &missing], vec![], "cannot write"),
        // Sizes are said in the flags typed, with the limit that holds for the others.
        (vec!["gather", "--len", "0"], vec![], "--len 0: give at least 1"),
        (
            vec!["gather", "--len", "4294967296"],
            vec![],
            "--len 4294967296: the largest that runs with --n",
        ),
        (
            vec!["matmul", "--m", "4294967295", "--n", "1", "--k", "1"],
            vec![],
            "--m 4294967295: the largest that runs with --n 1 --k 1 is",
        ),
        (
            vec!["transpose", "--rows", "4294967295", "--cols", "1"],
            vec![],
            "--rows 4294967295: the largest that runs with --cols 1 is",
        ),
        (
            vec!["row-max", "--rows", "4294967295", "--cols", "1"],
            vec![],
            "--rows 4294967295: the largest that runs",
        ),
        (
            vec!["softmax", "--rows", "4294967295", "--cols", "1"],
            vec![],
            "--rows 4294967295: the largest that runs",
        ),
        (vec!["multi-gpu", "peer", "--floats", "0"], vec![], "--floats 0"),
        (
            vec!["managed", "migration", "--max-mib", "18446744073709551615"],
            vec![],
            "to 1048576 MiB",
        ),
        (vec!["vec-add", "--n", "-1"], vec![], "invalid value '-1' for '--n"),
        (
            vec!["--backend", "emu", "vec-add", "--backend", "gpu"],
            vec![],
            "--backend: given twice (emu, then gpu)",
        ),
        // One rule for devices: a device named for the emulator is an error on every command.
        (
            vec!["--device", "99", "vec-add", "--n", "10"],
            vec![],
            "device 99 was named",
        ),
        (
            vec!["--backend", "emu", "vec-add", "--n", "10"],
            vec![("PTXKIT_DEVICE", "3")],
            "device 3 ($PTXKIT_DEVICE) was named",
        ),
        (
            vec!["--backend", "emu", "vec-add", "--n", "10"],
            vec![("PTXKIT_DEVICE", "abc")],
            "'abc'",
        ),
        (
            vec!["--backend", "emu", "multi-gpu", "split", "--shape", "64x64x64"],
            vec![("PTXKIT_DEVICE", "abc")],
            "'abc'",
        ),
        (
            vec!["multi-gpu", "split", "--devices", "0,1", "--shape", "64x64x64"],
            vec![],
            "--devices 0,1 was named",
        ),
        (
            vec!["multi-gpu", "--device", "5"],
            vec![],
            "--device 5: multi-gpu runs on the devices of --devices",
        ),
        (
            vec!["--backend", "emu", "matmul", "--m", "64", "--n", "64", "--k", "64"],
            vec![("KERNELS_TILE_PROFILE", "/nonexistent/profile.json")],
            "tile profile /nonexistent/profile.json",
        ),
        (
            vec!["--backend", "emu", "matmul", "--m", "64", "--n", "64", "--k", "64"],
            vec![("KERNELS_TILE_PROFILE", "/dev/zero")],
            "longer than 16 MiB",
        ),
        (
            vec!["--backend", "emu", "matmul", "--m", "64", "--n", "64", "--k", "64"],
            vec![("KERNELS_TILE_PROFILE", "Cargo.toml")],
            "tile profile Cargo.toml",
        ),
        // The one thing asked for cannot run here: an error, not a skip that passes.
        (vec!["multi-gpu", "peer"], vec![], "multi-gpu peer needs a GPU"),
        (
            vec!["multi-gpu", "collective"],
            vec![],
            "multi-gpu collective needs a GPU",
        ),
        (
            vec!["matmul-bf16", "--variant", "tma"],
            vec![],
            "matmul_bf16_tma uses Hopper's",
        ),
        (vec!["models", "--dtypes", "fp8"], vec![], "'fp8' is not a dtype"),
        (vec!["models"], vec![], "--backend gpu"),
    ];
    let mut failures = Vec::new();
    for (args, env, needle) in &table {
        let mut args = args.clone();
        // The emulator where neither a backend nor a device is named, so that the table means the
        // same on every machine.
        if !args.contains(&"--backend") && env.is_empty() {
            args.splice(0..0, ["--backend", "emu"]);
        }
        let (output, took) = host(&args, env);
        let (stdout, stderr) = text(&output);
        let code = output.status.code();
        // No message shows a Rust struct (`Matmul { m: … }`): it names flags and values.
        let shows_a_struct = stderr.contains(" { ");
        if code != Some(2) || !stderr.contains(needle) || took > PROMPT || stderr.contains("panicked") || shows_a_struct
        {
            failures.push(format!(
                "host {} ({env:?}): exit {code:?} after {took:?}, expected 2 within {PROMPT:?} and a message containing {needle:?}\n  stderr: {}\n  stdout: {}",
                args.join(" "),
                stderr.trim(),
                stdout.trim()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_device_number_is_never_silently_replaced_by_the_emulator() {
    for (args, env) in [
        (vec!["--device", "7", "info"], vec![]),
        (vec!["info"], vec![("PTXKIT_DEVICE", "7")]),
        (
            vec!["multi-gpu", "split", "--devices", "7,6", "--shape", "64x64x64"],
            vec![],
        ),
    ] {
        let (output, took) = host(&args, &env);
        let (_, stderr) = text(&output);
        // No machine this runs on has eight GPUs: either there is no GPU or device 7 is missing.
        assert_eq!(output.status.code(), Some(2), "host {args:?} {env:?}: {stderr}");
        assert!(
            stderr.contains("no CUDA device 7") || stderr.contains("no NVIDIA driver"),
            "{stderr}"
        );
        assert!(took < PROMPT, "took {took:?}");
    }
}

#[test]
fn without_a_gpu_the_gpu_backend_says_so_and_auto_falls_back_to_the_emulator() {
    let has_gpu = ptxkit_runtime::is_available();
    let (gpu, _) = host(&["--backend", "gpu", "info"], &[]);
    let (auto, _) = host(&["info"], &[]);
    let (auto_out, auto_err) = text(&auto);
    if has_gpu {
        assert_eq!(gpu.status.code(), Some(0));
        assert!(auto_out.contains("compute capability"), "{auto_out}");
    } else {
        assert_eq!(gpu.status.code(), Some(2));
        assert!(text(&gpu).1.contains("no NVIDIA driver"));
        assert_eq!(auto.status.code(), Some(0), "{auto_err}");
        assert!(auto_err.contains("running on the CPU emulator"), "{auto_err}");
        assert!(auto_out.contains("matmul_tiled"), "{auto_out}");
    }
}

#[test]
fn the_random_stream_can_be_any_u64() {
    let (output, _) = host(
        &[
            "--backend",
            "emu",
            "--rng",
            "18446744073709551615",
            "vec-add",
            "--n",
            "100",
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output).1);
}

#[test]
fn json_and_json_out_carry_the_same_results_on_the_emulator() {
    let path = scratch("vec-add.json");
    let path_text = path.to_string_lossy().into_owned();
    let (output, _) = host(
        &[
            "--backend",
            "emu",
            "--json",
            "--json-out",
            &path_text,
            "vec-add",
            "--n",
            "1000",
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output).1);
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout).expect("--json prints JSON");
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("--json-out writes the file")).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(printed["results"], written["results"]);
    let row = &printed["results"][0];
    assert_eq!(row["kernel"], "vec_add");
    assert_eq!(row["source"], "rust");
    assert_eq!(row["status"], "passed");
    assert_eq!(printed["backend"], "emu");
}

#[test]
fn info_works_as_json_on_the_emulator() {
    let path = scratch("info.json");
    let path_text = path.to_string_lossy().into_owned();
    let (output, _) = host(&["--backend", "emu", "--json", "--json-out", &path_text, "info"], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output).1);
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout).expect("info --json prints JSON");
    let written = std::fs::read_to_string(&path).expect("info --json-out writes the file");
    std::fs::remove_file(&path).unwrap();
    assert_eq!(printed, serde_json::from_str::<serde_json::Value>(&written).unwrap());
    let entries: Vec<&str> = printed["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["entry"].as_str().unwrap())
        .collect();
    let registered: Vec<&str> = kernels::registry::kernels().iter().map(|k| k.entry).collect();
    assert_eq!(entries, registered);
}

#[test]
fn a_json_out_that_cannot_be_written_leaves_no_file_and_an_unwritten_one_is_not_created_early() {
    let path = scratch("never-written.json");
    let path_text = path.to_string_lossy().into_owned();
    // A bad size fails after the --json-out check: the file must not be left behind empty.
    let (output, _) = host(
        &["--backend", "emu", "--json-out", &path_text, "vec-add", "--n", "0"],
        &[],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(!path.exists(), "{} was left behind", path.display());
}

#[test]
fn every_family_has_a_command_and_the_variant_names_come_from_the_registry() {
    let (output, _) = host(&["--help"], &[]);
    let (help, _) = text(&output);
    for family in kernels::registry::FAMILIES {
        let command = family.name().replace('_', "-");
        assert!(help.contains(&command), "host --help lacks {command}");
    }
    let (output, _) = host(&["matmul", "--help"], &[]);
    let (help, _) = text(&output);
    for kernel in kernels::matmul::FAMILY.kernels {
        assert!(
            help.contains(kernel.entry()),
            "host matmul --help lacks {}",
            kernel.entry()
        );
    }
    // The short name (without the family prefix) selects the same kernel.
    let (output, _) = host(
        &[
            "--backend",
            "emu",
            "--json",
            "matmul",
            "--variant",
            "tiled",
            "--m",
            "33",
            "--n",
            "17",
            "--k",
            "5",
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output).1);
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(printed["results"][0]["kernel"], "matmul_tiled");
    assert_eq!(printed["results"].as_array().unwrap().len(), 1);
}

#[test]
fn variant_auto_runs_the_fastest_rung_where_a_family_has_no_tiles_and_says_which() {
    let (output, _) = host(
        &[
            "--backend",
            "emu",
            "softmax",
            "--rows",
            "3",
            "--cols",
            "100",
            "--variant",
            "auto",
        ],
        &[],
    );
    let (out, err) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(err.contains("--variant auto: softmax_registers ("), "{err}");
    assert!(out.contains("softmax_registers") && out.contains("pass"), "{out}");
    assert!(!out.contains("softmax_online"), "only the chosen kernel runs: {out}");
    // A family with no automatic choice says what to do instead.
    let (output, _) = host(&["--backend", "emu", "gather", "--variant", "auto"], &[]);
    let (_, err) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains("'auto' is not a gather kernel; choose one of gather or all"),
        "{err}"
    );
}

#[test]
fn results_are_printed_before_a_json_out_that_cannot_be_written_fails() {
    for args in [["info"].as_slice(), ["vec-add", "--n", "1000"].as_slice()] {
        let (output, _) = host(&[&["--backend", "emu", "--json-out", "/dev/full"], args].concat(), &[]);
        let (stdout, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(!stdout.is_empty(), "{args:?}: nothing printed before the file failed");
        assert!(stderr.contains("/dev/full"), "{args:?}: {stderr}");
    }
}

#[test]
fn a_json_out_cut_short_by_a_full_disk_leaves_the_old_file_whole() {
    use std::os::unix::process::CommandExt;
    let dir = scratch("full");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("results.json");
    std::fs::write(&path, "{\"old\": true}").unwrap();
    let binary = std::env::var_os("HOST_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_host").into());
    let mut command = Command::new(binary);
    command
        .args(["--backend", "emu", "--json-out"])
        .arg(&path)
        .args(["vec-add", "--n", "1000"]);
    // SAFETY: only async-signal-safe calls between fork and exec. Files of the child stop at 200
    // bytes, as on a full disk; its write then fails instead of the signal killing it.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit {
                rlim_cur: 200,
                rlim_max: 200,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let output = command.output().expect("the host binary runs");
    assert_eq!(output.status.code(), Some(2), "{}", text(&output).1);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"old\": true}");
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        1,
        "a partial file was left behind"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_json_out_replaces_the_old_file_whole_and_leaves_no_partial_file() {
    let dir = scratch("whole");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("results.json");
    std::fs::write(&path, "old").unwrap();
    let path_text = path.to_string_lossy().into_owned();
    let (output, _) = host(
        &["--backend", "emu", "--json-out", &path_text, "vec-add", "--n", "1000"],
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output).1);
    let written: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(written["results"][0]["kernel"], "vec_add");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["results.json"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(unix)]
#[test]
fn a_path_that_is_not_utf8_is_taken_as_given() {
    use std::os::unix::ffi::OsStrExt;
    let dir = scratch("not-utf8");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(std::ffi::OsStr::from_bytes(b"results-\xff.json"));
    let binary = std::env::var_os("HOST_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_host").into());
    let output = Command::new(binary)
        .args(["--backend", "emu", "--json-out"])
        .arg(&path)
        .args(["vec-add", "--n", "100"])
        .output()
        .expect("the host binary runs");
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(path.is_file(), "no results at {}", path.display());
    std::fs::remove_dir_all(&dir).unwrap();
}
