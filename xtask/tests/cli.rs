//! `cargo xtask` as a user meets it: errors exit 2 with a message; paths given on the command line
//! are the user's, from the current directory.

use std::process::Command;

fn xtask(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    // The runner has no cargo: run.sh points XTASK_BIN at the bundle's binary.
    let binary = std::env::var_os("XTASK_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_xtask").into());
    Command::new(binary)
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the xtask binary runs")
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("xtask-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn bench_report_errors_exit_2_and_say_how_to_get_an_input() {
    let dir = scratch("missing");
    let output = xtask(&dir, &["bench-report", "--input", "no-such.json", "--out", "report"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no-such.json does not exist"), "{stderr}");
    assert!(!dir.join("report").exists(), "a failed report wrote its folder");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bench_report_reads_and_writes_relative_to_the_current_directory() {
    let dir = scratch("relative");
    let run = serde_json::json!({
        "date": "2026-11-30", "gpu": "Test GPU", "compute_capability": "9.0", "driver_cuda": "13.0",
        "ptx_arch": "sm_90", "copy_gbs": 4000.0,
        "cases": [{
            "family": "vec_add", "bound": "memory", "kernel": "vec_add", "source": "rust",
            "size": "n=1048576", "x": 1048576.0, "bytes": 12582912.0, "flops": 1048576.0,
            "median_ms": 0.01, "rate": 1258.0, "percent_of_ceiling": 31.4, "kernel_ms": null,
            "input_sets": 20
        }]
    });
    std::fs::write(dir.join("bench.json"), run.to_string()).unwrap();
    let output = xtask(&dir, &["bench-report", "--input", "bench.json", "--out", "report"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let readme = std::fs::read_to_string(dir.join("report/README.md")).unwrap();
    assert!(readme.contains("Test GPU"));
    assert!(dir.join("report/vec_add.svg").is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unknown_verbs_are_usage_errors() {
    let output = xtask(&std::env::temp_dir(), &["frobnicate"]);
    assert_eq!(output.status.code(), Some(2));
}
