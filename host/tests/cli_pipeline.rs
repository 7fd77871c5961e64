//! `host managed pipeline` as a new user meets it: bad sizes and an unwritable timeline get a
//! message naming the value and exit status 2 within a second, before any work; the emulator gets
//! the clear "needs a GPU" error.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Bad input is refused within this long: before anything is allocated.
const PROMPT: Duration = Duration::from_secs(1);

fn host(args: &[&str]) -> (Output, Duration) {
    let start = Instant::now();
    // The runner has no cargo: run.sh points HOST_BIN at the bundle's binary.
    let binary = std::env::var_os("HOST_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_host").into());
    let output = Command::new(binary)
        .args(args)
        .env_remove("PTXKIT_DEVICE")
        .output()
        .expect("the host binary runs");
    (output, start.elapsed())
}

#[test]
fn bad_pipeline_invocations_exit_2_at_once_naming_the_value() {
    let missing = std::env::temp_dir()
        .join(format!("host-cli-pipeline-{}-no-such-dir", std::process::id()))
        .join("timeline.svg");
    let missing = missing.to_string_lossy().into_owned();
    // (arguments after `host --backend emu managed pipeline`, what the message must contain)
    let table: Vec<(Vec<&str>, &str)> = vec![
        (vec![], "managed pipeline needs a GPU"),
        (vec!["--gib", "0"], "--gib 0"),
        (vec!["--chunk-mib", "3"], "--chunk-mib 3: give a multiple of 2 MiB"),
        (vec!["--chunk-mib", "0"], "--chunk-mib 0"),
        (
            vec!["--gib", "1", "--chunk-mib", "2048"],
            "--chunk-mib 2048 is larger than the array (1024 MiB)",
        ),
        (vec!["--gib", "64", "--chunk-mib", "16384"], "2^32"),
        (vec!["--gib", "abc"], "'abc'"),
        (vec!["--chunk-mib", "-2"], "-2"),
        (vec!["--timeline", &missing], "cannot write"),
    ];
    let mut failures = Vec::new();
    for (extra, needle) in &table {
        let mut args = vec!["--backend", "emu", "managed", "pipeline"];
        args.extend(extra);
        let (output, took) = host(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let code = output.status.code();
        if code != Some(2) || !stderr.contains(needle) || took > PROMPT || stderr.contains("panicked") {
            failures.push(format!(
                "host {}: exit {code:?} after {took:?}, expected 2 within {PROMPT:?} and a message containing {needle:?}\n  stderr: {}",
                args.join(" "),
                stderr.trim()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_managed_help_lists_the_pipeline_and_its_flags() {
    let (output, _) = host(&["managed", "--help"]);
    let help = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0));
    for needle in ["pipeline", "--gib", "--chunk-mib", "--timeline"] {
        assert!(help.contains(needle), "host managed --help lacks {needle}:\n{help}");
    }
}
