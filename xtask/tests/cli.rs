//! `cargo xtask` as a user meets it: errors exit 2 with a message; paths given on the command line
//! are the user's, from the current directory.

use std::process::Command;

fn xtask(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    xtask_with(dir, args, &[])
}

/// `xtask` with these variables set.
fn xtask_with(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    // The runner has no cargo: run.sh points XTASK_BIN at the bundle's binary.
    let binary = std::env::var_os("XTASK_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_xtask").into());
    Command::new(binary)
        .current_dir(dir)
        .args(args)
        .envs(env.iter().copied())
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

/// A bench results file of one case.
fn one_case_run() -> String {
    serde_json::json!({
        "date": "2026-11-30", "gpu": "Test GPU", "compute_capability": "9.0", "driver_cuda": "13.0",
        "ptx_arch": "sm_90", "copy_gbs": 4000.0,
        "cases": [{
            "family": "vec_add", "bound": "memory", "kernel": "vec_add", "source": "rust",
            "size": "n=1048576", "x": 1048576.0, "bytes": 12582912.0, "flops": 1048576.0,
            "median_ms": 0.01, "rate": 1258.0, "percent_of_ceiling": 31.4, "kernel_ms": null,
            "input_sets": 20
        }]
    })
    .to_string()
}

#[test]
fn bench_report_reads_and_writes_relative_to_the_current_directory() {
    let dir = scratch("relative");
    std::fs::write(dir.join("bench.json"), one_case_run()).unwrap();
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

#[test]
fn bench_report_leaves_a_folder_of_the_users_alone_and_replaces_only_its_own_files() {
    let dir = scratch("owned");
    std::fs::write(dir.join("bench.json"), one_case_run()).unwrap();
    // A folder of the user's: refused, nothing in it touched.
    std::fs::create_dir_all(dir.join("mine")).unwrap();
    std::fs::write(dir.join("mine/README.md"), "my notes").unwrap();
    std::fs::write(dir.join("mine/figure.svg"), "my figure").unwrap();
    let output = xtask(&dir, &["bench-report", "--input", "bench.json", "--out", "mine"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--out") && stderr.contains("README.md"), "{stderr}");
    assert_eq!(std::fs::read_to_string(dir.join("mine/README.md")).unwrap(), "my notes");
    assert_eq!(
        std::fs::read_to_string(dir.join("mine/figure.svg")).unwrap(),
        "my figure"
    );
    // Its own folder: written twice; a file the user adds between the runs stays.
    let report = |dir: &std::path::Path| xtask(dir, &["bench-report", "--input", "bench.json", "--out", "report"]);
    assert_eq!(report(&dir).status.code(), Some(0));
    std::fs::write(dir.join("report/extra.png"), "mine").unwrap();
    let again = report(&dir);
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(std::fs::read_to_string(dir.join("report/extra.png")).unwrap(), "mine");
    assert!(dir.join("report/vec_add.svg").is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bench_report_reads_no_more_than_its_cap_from_a_file_without_a_size() {
    let dir = scratch("zero");
    std::fs::write(dir.join("bench.json"), one_case_run()).unwrap();
    for args in [
        ["--input", "/dev/zero", "--out", "report"].as_slice(),
        ["--input", "bench.json", "--torch", "/dev/zero", "--out", "report"].as_slice(),
    ] {
        let output = xtask(&dir, &[&["bench-report"], args].concat());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("/dev/zero holds more than 64 MiB"),
            "{args:?}: {stderr}"
        );
    }
    assert!(!dir.join("report").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn gpu_bundle_refuses_a_folder_of_the_users_before_building_anything() {
    let dir = scratch("bundle");
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    let started = std::time::Instant::now();
    for out in [".", dir.to_str().unwrap()] {
        let output = xtask(&dir, &["gpu-bundle", "--out", out]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("--out") && stderr.contains("notes.txt"), "{stderr}");
    }
    assert!(
        started.elapsed().as_secs() < 5,
        "refused only after {:?}",
        started.elapsed()
    );
    assert_eq!(std::fs::read_to_string(dir.join("notes.txt")).unwrap(), "mine");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn build_ptx_and_gpu_bundle_refuse_bad_arguments_before_building_anything() {
    let dir = scratch("arguments");
    let started = std::time::Instant::now();
    let arch = xtask(&dir, &["build-ptx", "--arch", "sm_999"]);
    let stderr = String::from_utf8_lossy(&arch.stderr);
    assert_eq!(arch.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("sm_999 is no GPU architecture"), "{stderr}");
    let tests = xtask(
        &dir,
        &["gpu-bundle", "--out", "bundle", "--tests", "host-gpu-test,no-such-test"],
    );
    let stderr = String::from_utf8_lossy(&tests.stderr);
    assert_eq!(tests.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--tests"), "{stderr}");
    assert!(
        started.elapsed().as_secs() < 10,
        "refused only after {:?}",
        started.elapsed()
    );
    assert!(!dir.join("bundle").exists(), "a refused bundle wrote its folder");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn wheel_runs_the_interpreter_once_before_building_and_says_why_it_cannot() {
    let dir = scratch("python");
    for (python, needle) in [
        ("/nonexistent/python3", "$PYTHON=/nonexistent/python3 cannot be run"),
        ("/bin/false", "$PYTHON=/bin/false is not a Python 3.8 or newer"),
    ] {
        let started = std::time::Instant::now();
        let output = xtask_with(&dir, &["wheel", "--out", "wheels"], &[("PYTHON", python)]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(needle), "{stderr}");
        assert!(!stderr.contains("building the extension"), "built first: {stderr}");
        assert!(
            started.elapsed().as_secs() < 5,
            "refused only after {:?}",
            started.elapsed()
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn gpu_bundle_never_overwrites_a_file_the_user_added_to_its_folder() {
    let dir = scratch("bundle-own");
    let bundle = dir.join("bundle");
    std::fs::create_dir_all(&bundle).unwrap();
    // A folder an earlier gpu-bundle wrote (its manifest), to which the user added a run.sh.
    std::fs::write(bundle.join(".written-by-xtask"), "gpu-bundle\nfor.txt\n").unwrap();
    std::fs::write(bundle.join("run.sh"), "my script").unwrap();
    let started = std::time::Instant::now();
    let output = xtask(&dir, &["gpu-bundle", "--out", "bundle"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("already holds run.sh"), "{stderr}");
    assert!(
        started.elapsed().as_secs() < 10,
        "refused only after {:?}",
        started.elapsed()
    );
    assert_eq!(std::fs::read_to_string(bundle.join("run.sh")).unwrap(), "my script");
    std::fs::remove_dir_all(&dir).unwrap();
}
