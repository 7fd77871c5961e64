//! `cargo xtask gpu-bundle`: everything the GPU runner needs, built here, in one folder: the release
//! `host`, every test executable, the PTX, and `run.sh`, which runs them there without cargo.
//! `--for MODE` builds only what `run.sh`'s MODE uses (the whole bundle is over the runner's size
//! limit), `--tests a,b` packs only those test executables.

use crate::owned::Owned;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What may travel to the runner: the working tree and the bundle together.
const SIZE_LIMIT: u64 = 64 << 20;

/// The run.sh mode a bundle is built for, which decides what it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Purpose {
    /// Tests, sanitizers and demos (run.sh's default mode).
    Check,
    Tests,
    Demos,
    Bench,
    Torch,
    Multi,
    Prep,
    /// Everything (over the runner's size limit unless --tests trims it).
    All,
}

impl Purpose {
    fn name(self) -> &'static str {
        match self {
            Purpose::Check => "check",
            Purpose::Tests => "tests",
            Purpose::Demos => "demos",
            Purpose::Bench => "bench",
            Purpose::Torch => "torch",
            Purpose::Multi => "multi",
            Purpose::Prep => "prep",
            Purpose::All => "all",
        }
    }

    /// What run.sh's mode of the same name reads from the bundle.
    fn parts(self) -> Parts {
        use Purpose::*;
        let nvcc = !matches!(self, Torch | Multi);
        Parts {
            host: matches!(self, Check | Tests | Demos | Multi | All),
            xtask: matches!(self, Check | Tests | All),
            tests: matches!(self, Check | Tests | Multi | All),
            bench: matches!(self, Bench | Multi | All),
            python: matches!(self, Torch | All),
            nvcc,
            pytorch_anchors: matches!(self, Bench | All),
        }
    }

    /// The test executables packed when `--tests` names none.
    fn default_tests(self) -> Option<&'static [&'static str]> {
        match self {
            Purpose::Multi => Some(&["host-multi_gpu-test"]),
            _ => None,
        }
    }
}

/// The pieces of a bundle.
struct Parts {
    host: bool,
    xtask: bool,
    tests: bool,
    bench: bool,
    python: bool,
    /// The CUDA C twins' sources, CUB's wrappers and the PTX (nvcc and ptxas run on them).
    nvcc: bool,
    pytorch_anchors: bool,
}

/// The script the runner executes: the GPU suite (ignored tests included) and the demos, logs and
/// JSON into the folder it is given. Kept to sequencing; all logic is in the Rust binaries.
const RUN_SCRIPT: &str = r#"#!/usr/bin/env bash
# Runs on the GPU runner, which has no cargo. Usage: run.sh OUT_DIR [check|tests|demos|bench|torch|multi|all|prep|unpack]
#   check (default): tests, then demos (each fits one 10-minute runner call on its own; together
#                    they may not)
#   tests:           every test with --include-ignored, the four compute-sanitizer tools on one
#                    small launch of every registered kernel (`host smoke`); TEST_FAMILIES=a,b
#                    limits the family suites to some families (the suite says so)
#   demos:           `host info`, the bank-conflict study, `host all`
#   bench:           PyTorch's anchors, then the criterion benches, writing OUT_DIR/bench.json for
#                    `cargo xtask bench-report` (BENCH_FAMILIES=a,b limits both to some families;
#                    BENCH_RESUME=an earlier bench.json continues that run where it stopped;
#                    BENCH_MEASURE_MS=400 measures each case 0.4 s instead of 1 s)
#   torch:           the PyTorch extension's wheel installed into BUNDLE/python/site (no network
#                    needed), its tests with the runner's PyTorch, and its benchmark against
#                    PyTorch's built-ins (OUT_DIR/torch-ops.json), where a call's µs go
#                    (OUT_DIR/call-cost.json), the model-shape suite's matrix products against
#                    PyTorch's (OUT_DIR/torch-models.json), the size sweep of the reductions and
#                    row operators (OUT_DIR/torch-sizes.json) and attention at models' shapes against
#                    SDPA (OUT_DIR/torch-attention.json); skips the nvcc builds
#   multi:           several GPUs (the two-GPU runner): `host info` (the topology), the multi-GPU
#                    tests (the two-GPU ones included), `host multi-gpu` on every device
#                    (OUT_DIR/multi.json) and the bench's multi_gpu cases (OUT_DIR/bench-multi.json);
#                    NVLink multicast kept off; skips the nvcc builds
#   prep:            only the builds every other mode starts with: the CUDA C twins (BUNDLE/cuda-c) and
#                    CUB's wrappers (BUNDLE/libcub_anchors.so, for $CUB_ANCHORS), for commands of
#                    one's own after it
#   unpack:          only unpacks the executables and the PTX (BUNDLE/packed.tar.gz), for commands of
#                    one's own (every other mode unpacks them first too)
set -u
out=${1:?usage: run.sh OUT_DIR [check|tests|demos|bench|torch|multi|all|prep|unpack]}
mode=${2:-check}
case "$mode" in
  check|tests|demos|bench|torch|multi|all|prep|unpack) ;;
  *) echo "run.sh: unknown mode $mode: give check, tests, demos, bench, torch, multi, all, prep or unpack" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
# The executables and the PTX travel packed (a quarter of their size): unpacked once, here.
if [ -f "$here/packed.tar.gz" ] && [ ! -e "$here/.unpacked" ]; then
  tar -xzf "$here/packed.tar.gz" -C "$here" && touch "$here/.unpacked" || { echo "run.sh: cannot unpack $here/packed.tar.gz" >&2; exit 2; }
fi
if [ "$mode" = unpack ]; then exit 0; fi
# A bundle carries what the mode it was built for needs (cargo xtask gpu-bundle --for MODE).
need() {
  for part in "$@"; do
    [ -e "$here/$part" ] && continue
    echo "run.sh: mode $mode needs $part, which this bundle (built --for $(cat "$here/for.txt" 2>/dev/null || echo '?')) lacks: rebuild it with cargo xtask gpu-bundle --for $mode" >&2
    exit 2
  done
}
case "$mode" in
  torch) need python ;;
  multi) need host tests bench-kernels ;;
  *) need cuda-c-src cub ptx ;;
esac
case "$mode" in check|tests|all) need host xtask tests ;; esac
case "$mode" in demos) need host ;; esac
case "$mode" in bench|all) need bench-kernels pytorch/anchors.py ;; esac
case "$mode" in all) need python ;; esac
mkdir -p "$out" "$here/cuda-c"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
status=0
env_log="$out/environment.txt"
# The device's own architecture, e.g. sm_80 for compute capability 8.0; Hopper's own form
# (sm_90a) on compute capability 9.0, which the wgmma twins need.
arch=sm_$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d ' .')
if [ "$arch" = sm_90 ]; then arch=sm_90a; fi
{ date -u; nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader; nvcc --version | tail -1; echo "arch: $arch"; } > "$env_log" 2>&1
if [ "$mode" != torch ] && [ "$mode" != multi ]; then
# The CUDA C twins, compiled as the comparisons use them, one nvcc per core (a cold runner took
# minutes one at a time); SASS of both sides for reading. Each twin logs to its own file, joined
# in order afterwards.
twin() {
  local name; name=$(basename "$1" .cu)
  { nvcc -arch="$arch" -O3 -ptx "$1" -o "$here/cuda-c/$name.ptx" &&
      ptxas -arch="$arch" -v "$here/cuda-c/$name.ptx" -o "$here/cuda-c/$name.cubin" &&
      cuobjdump -sass "$here/cuda-c/$name.cubin" > "$here/cuda-c/$name.sass"; } > "$here/cuda-c/$name.log" 2>&1 ||
    touch "$here/cuda-c/$name.failed"
}
# CUB's primitives as a shared library the host and the benches load ($CUB_ANCHORS): the baselines
# of the reductions. The longest build, so started first.
rm -f "$here"/cuda-c/*.failed "$here/cub.failed" "$here/sass-cuda-c.txt"
{ nvcc -arch="$arch" -O3 -shared -Xcompiler -fPIC "$here/cub/anchors.cu" -o "$here/libcub_anchors.so" > "$here/cub.log" 2>&1 ||
    touch "$here/cub.failed"; } &
cores=$(nproc 2>/dev/null || echo 4)
for cu in "$here"/cuda-c-src/*.cu; do
  while [ "$(jobs -rp | wc -l)" -ge "$cores" ]; do wait -n; done
  twin "$cu" &
done
wait
for cu in "$here"/cuda-c-src/*.cu; do
  name=$(basename "$cu" .cu)
  cat "$here/cuda-c/$name.log" >> "$env_log"
  cat "$here/cuda-c/$name.sass" >> "$here/sass-cuda-c.txt" 2>/dev/null
  [ -e "$here/cuda-c/$name.failed" ] && status=1
done
cat "$here/cub.log" >> "$env_log"
if [ ! -e "$here/cub.failed" ]; then
  export CUB_ANCHORS="$here/libcub_anchors.so"
else
  status=1
fi
rust_ptx=$(ls -d "$here"/ptx/sm_* | sort -V | tail -n 1)/kernels.ptx
ptxas -arch="$arch" -v "$rust_ptx" -o "$here/rust.cubin" >> "$env_log" 2>&1 &&
  cuobjdump -sass "$here/rust.cubin" > "$here/sass-rust.txt" 2>&1
# One file for both sides' SASS (the runner returns few files), gzipped; for reading, not for git.
cat "$here/sass-rust.txt" "$here/sass-cuda-c.txt" 2>/dev/null | gzip -9 -n > "$out/sass.txt.gz"
fi
if [ "$mode" = check ] || [ "$mode" = tests ] || [ "$mode" = all ]; then
  # The CLI tests run the bundle's binaries (cargo's paths to them do not exist here).
  export HOST_BIN="$here/host" XTASK_BIN="$here/xtask"
  for test in "$here"/tests/*; do
    echo "== $(basename "$test")" >> "$out/tests.log"
    # A hung test costs this executable, not the whole run (the GPU suite itself needs most of it).
    timeout 420 "$test" --include-ignored >> "$out/tests.log" 2>&1 || status=1
  done
  grep -E "^== |^test result|FAILED|panicked" "$out/tests.log"
  # Every registered kernel, one small checked launch each, under each compute-sanitizer tool:
  # out-of-bounds and misaligned accesses, shared-memory races, barrier misuse, uninitialised reads.
  for tool in memcheck racecheck synccheck initcheck; do
    echo "== $tool" >> "$out/sanitizer.txt"
    compute-sanitizer --tool $tool --error-exitcode 3 "$here/host" --backend gpu smoke >> "$out/sanitizer.txt" 2>&1 || status=1
  done
  grep -E "^== |ERROR SUMMARY|RACECHECK SUMMARY" "$out/sanitizer.txt"
fi
if [ "$mode" = check ] || [ "$mode" = demos ] || [ "$mode" = all ]; then
  "$here/host" --backend gpu info > "$out/info.txt" 2>&1 || status=1
  "$here/host" --backend gpu bank-conflicts > "$out/banks.txt" 2>&1 || status=1
  tail -n 12 "$out/banks.txt"
  "$here/host" --backend gpu --cuda-c "$here/cuda-c" all --json-out "$out/all.json" 2>&1 | tee "$out/all.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
if [ "$mode" = bench ] || [ "$mode" = all ]; then
  # PyTorch's own operations on the same shapes, as baselines (the runner's PyTorch); a run
  # continued (BENCH_RESUME=an earlier OUT/bench.json) keeps the ones it has.
  if [ -z "${BENCH_RESUME:-}" ]; then
    python3 "$here/pytorch/anchors.py" > "$out/pytorch.json" 2>> "$out/bench.log" || status=1
    export PYTORCH_JSON="$out/pytorch.json"
  fi
  CUDA_C_PTX="$here/cuda-c" BENCH_JSON="$out/bench.json" "$here/bench-kernels" --bench >> "$out/bench.log" 2>&1 || status=1
  tail -n 5 "$out/bench.log"
fi
if [ "$mode" = torch ] || [ "$mode" = all ]; then
  site="$here/python/site"
  rm -rf "$site"
  { python3 --version; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'; } >> "$env_log" 2>&1
  python3 -m pip install --quiet --no-deps --no-index --target "$site" "$here"/python/*.whl >> "$out/torch.log" 2>&1 || status=1
  PYTHONPATH="$site" python3 -m unittest discover -v -s "$here/python/tests" >> "$out/torch.log" 2>&1 || status=1
  PYTHONPATH="$site" python3 "$here/python/bench_torch.py" --json "$out/torch-ops.json" >> "$out/torch.log" 2>&1 || status=1
  PYTHONPATH="$site" python3 "$here/python/call_cost.py" --json "$out/call-cost.json" >> "$out/torch.log" 2>&1 || status=1
  PYTHONPATH="$site" python3 "$here/python/bench_models.py" --json "$out/torch-models.json" >> "$out/torch.log" 2>&1 || status=1
  PYTHONPATH="$site" python3 "$here/python/bench_sizes.py" --json "$out/torch-sizes.json" >> "$out/torch.log" 2>&1 || status=1
  PYTHONPATH="$site" python3 "$here/python/bench_attention.py" --json "$out/torch-attention.json" >> "$out/torch.log" 2>&1 || status=1
  grep -E "^Ran |^OK|FAILED|Error|per call|rust/pytorch|geomean" "$out/torch.log"
fi
if [ "$mode" = multi ]; then
  # NCCL's NVLink multicast can put a shared host's GPUs out of service: off in every process.
  export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
  "$here/host" --backend gpu info > "$out/info.txt" 2>&1 || status=1
  grep -A8 "^Topology" "$out/info.txt"
  need tests/host-multi_gpu-test
  timeout 300 "$here/tests/host-multi_gpu-test" --include-ignored > "$out/tests-multi.log" 2>&1 || status=1
  grep -E "^test |test result" "$out/tests-multi.log"
  timeout 300 "$here/host" --backend gpu multi-gpu --devices all --json-out "$out/multi.json" 2>&1 | tee "$out/multi.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  BENCH_FAMILIES=multi_gpu BENCH_JSON="$out/bench-multi.json" timeout 300 "$here/bench-kernels" --bench > "$out/bench-multi.log" 2>&1 || status=1
  tail -n 3 "$out/bench-multi.log"
fi
echo "run.sh: exit $status"
exit $status
"#;

pub fn build(
    workspace: &Path,
    target_dir: &Path,
    owned: &Owned,
    purpose: Purpose,
    only_tests: Option<&[String]>,
) -> Result<(), String> {
    let cargo = std::env::var_os("CARGO")
        .map(PathBuf::from)
        .unwrap_or_else(|| "cargo".into());
    let parts = purpose.parts();
    let out = owned.dir();
    // What an earlier bundle left goes; what else the folder holds is the user's and stays.
    owned.clear_previous(&[])?;
    let users = entry_names(out)?;
    // Claimed before the first is written: a build killed halfway leaves a folder the next one
    // clears, not one it refuses as the user's.
    let claimed: Vec<String> = WRITTEN
        .iter()
        .map(|name| name.to_string())
        .filter(|name| !users.contains(name))
        .collect();
    owned.record(&claimed)?;

    if parts.host || parts.xtask {
        eprintln!("building the release host and xtask ...");
        run(Command::new(&cargo).current_dir(workspace).args([
            "build",
            "--release",
            "--locked",
            "--bin",
            "host",
            "--bin",
            "xtask",
        ]))?;
    }
    if parts.host {
        copy_stripped(&target_dir.join("release/host"), &out.join("host"))?;
    }
    if parts.xtask {
        copy_stripped(&target_dir.join("release/xtask"), &out.join("xtask"))?;
    }
    if parts.tests {
        let wanted: Option<Vec<String>> = only_tests.map(<[String]>::to_vec).or_else(|| {
            purpose
                .default_tests()
                .map(|names| names.iter().map(|n| n.to_string()).collect())
        });
        pack_tests(&cargo, workspace, out, wanted.as_deref())?;
        if wanted.is_none() {
            pack_template(&cargo, workspace, target_dir, out)?;
        }
    }
    if parts.bench {
        eprintln!("building the benches ...");
        let (_, bench) = cargo_no_run(
            &cargo,
            workspace,
            &["bench", "-p", "benches", "--bench", "kernels"],
            "bench",
        )?
        .into_iter()
        .next()
        .ok_or("cargo bench --no-run listed no bench executable")?;
        copy_stripped(&bench, &out.join("bench-kernels"))?;
    }
    if parts.nvcc {
        for arch in built_archs(target_dir)? {
            let ptx = target_dir.join("ptx").join(&arch).join("kernels.ptx");
            copy(&ptx, &out.join("ptx").join(&arch).join("kernels.ptx"))?;
        }
        let cub = workspace.join("benches/reference/cub/anchors.cu");
        copy(&cub, &out.join("cub/anchors.cu"))?;
        let sources = workspace.join("benches/reference/cuda_c");
        for entry in std::fs::read_dir(&sources).map_err(|e| format!("cannot list {}: {e}", sources.display()))? {
            let path = entry.map_err(|e| e.to_string())?.path();
            if path.extension().is_some_and(|x| x == "cu" || x == "cuh") {
                copy(
                    &path,
                    &out.join("cuda-c-src").join(path.file_name().unwrap_or_default()),
                )?;
            }
        }
    }
    if parts.python {
        eprintln!("building the PyTorch extension's wheel ...");
        crate::wheel::build(workspace, target_dir, &out.join("python"))?;
        let python = workspace.join("host/python");
        for file in [
            "tests/test_native.py",
            "tests/test_torch.py",
            "tests/test_special_values.py",
            "tests/test_model_shapes.py",
            "bench_torch.py",
            "bench_models.py",
            "bench_sizes.py",
            "bench_attention.py",
            "timing.py",
            "call_cost.py",
        ] {
            copy(&python.join(file), &out.join("python").join(file))?;
        }
        // Beside bench_models.py, where it looks first.
        copy(
            &workspace.join("benches/shapes/models.json"),
            &out.join("python/model_shapes.json"),
        )?;
    }
    if parts.pytorch_anchors {
        let anchors = workspace.join("benches/reference/pytorch/anchors.py");
        copy(&anchors, &out.join("pytorch/anchors.py"))?;
    }
    // Executables and PTX compress to about a quarter: packed, they leave room under the limit.
    pack(
        out,
        &["host", "xtask", "bench-kernels", "tests", "ptx"],
        "packed.tar.gz",
    )?;
    let script = out.join("run.sh");
    std::fs::write(&script, RUN_SCRIPT).map_err(|e| format!("cannot write {}: {e}", script.display()))?;
    make_executable(&script)?;
    let label = out.join("for.txt");
    std::fs::write(&label, format!("{}\n", purpose.name()))
        .map_err(|e| format!("cannot write {}: {e}", label.display()))?;

    let written: Vec<String> = entry_names(out)?
        .into_iter()
        .filter(|name| !users.contains(name) && name != crate::owned::MANIFEST)
        .collect();
    owned.record(&written)?;

    let size = folder_size(out)?;
    let mib = |bytes: u64| bytes as f64 / (1 << 20) as f64;
    println!(
        "wrote {} for run.sh's {} mode ({:.1} MiB)",
        out.display(),
        purpose.name(),
        mib(size)
    );
    // The runner takes the working tree (what git would commit) with the bundle, 64 MiB in all.
    let tree = working_tree_bytes(workspace).unwrap_or(0);
    if size + tree > SIZE_LIMIT {
        return Err(format!(
            "the bundle ({:.1} MiB) and the working tree ({:.1} MiB) are {:.1} MiB together, over the 64 MiB the runner takes: build it for one mode (--for check, tests, demos, bench, torch, multi or prep), or pack fewer test executables (--tests a,b)",
            mib(size),
            mib(tree),
            mib(size + tree)
        ));
    }
    Ok(())
}

/// Builds the test executables and copies those asked for (all when `wanted` is `None`) into
/// `tests/`.
fn pack_tests(cargo: &Path, workspace: &Path, out: &Path, wanted: Option<&[String]>) -> Result<(), String> {
    eprintln!("building the test executables ...");
    let mut tests = cargo_no_run(
        cargo,
        workspace,
        // The extension's own tests link libpython; its GPU tests are Python's (mode torch).
        &[
            "test",
            "--release",
            "--workspace",
            "--exclude",
            "ptxkit",
            "--exclude",
            "kernels-torch",
        ],
        "test",
    )?;
    // The emulator compares barrier call paths by source line, and its own tests check that: the
    // device crate's tests get line tables (and keep them: they are not stripped). Everything
    // else stays without (the runner's size limit).
    tests.extend(cargo_no_run(
        cargo,
        workspace,
        &[
            "test",
            "--release",
            "-p",
            "ptxkit",
            "--config",
            "profile.release.package.ptxkit.debug=\"line-tables-only\"",
        ],
        "test",
    )?);
    if let Some(wanted) = wanted {
        let known: Vec<&str> = tests.iter().map(|(name, _)| name.as_str()).collect();
        if let Some(unknown) = wanted.iter().find(|w| !known.contains(&w.as_str())) {
            return Err(format!(
                "--tests: no test executable named {unknown}; choose among {}",
                known.join(", ")
            ));
        }
    }
    let tests_dir = out.join("tests");
    for (name, executable) in tests {
        if wanted.is_some_and(|w| !w.contains(&name)) {
            continue;
        }
        if name.starts_with("ptxkit-") {
            copy(&executable, &tests_dir.join(&name))?;
        } else {
            copy_stripped(&executable, &tests_dir.join(&name))?;
        }
    }
    Ok(())
}

/// The project `cargo xtask new` writes, built as its user would build it (outside this
/// workspace, with the toolkit by path), its test executables packed as `template-*`: on the
/// runner its GPU test runs the stencil through the runtime's checked launch against its f64
/// reference.
fn pack_template(cargo: &Path, workspace: &Path, target_dir: &Path, out: &Path) -> Result<(), String> {
    eprintln!("building the project cargo xtask new writes ...");
    let root = std::env::temp_dir().join(format!("ptxkit-template-{}", std::process::id()));
    let project = root.join("stencil-check");
    std::fs::create_dir_all(&root).map_err(|e| format!("cannot create {}: {e}", root.display()))?;
    let result = (|| {
        crate::new::create(workspace, &project, None)?;
        // The lock file is this workspace's; the project's own packages go into it.
        run(Command::new(cargo)
            .current_dir(&project)
            .args(["update", "--workspace", "--quiet"]))?;
        let built = Command::new(cargo)
            .current_dir(&project)
            // Kept between bundles: its dependencies compile once.
            .env("CARGO_TARGET_DIR", target_dir.join("template-check"))
            .args([
                "test",
                "--release",
                "--no-run",
                "--message-format=json-render-diagnostics",
            ])
            .output()
            .map_err(|e| format!("cannot run cargo: {e}"))?;
        if !built.status.success() {
            return Err(format!(
                "the project cargo xtask new writes does not build:\n{}",
                String::from_utf8_lossy(&built.stderr)
            ));
        }
        for (name, executable) in artifacts(&String::from_utf8_lossy(&built.stdout), "test") {
            copy_stripped(&executable, &out.join("tests").join(format!("template-{name}")))?;
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&root);
    result
}

/// Copies an executable without its symbol table (about a tenth of its size) where `strip` is on
/// the machine; as it is where it is not.
fn copy_stripped(from: &Path, to: &Path) -> Result<(), String> {
    copy(from, to)?;
    let _ = Command::new("strip").arg(to).status();
    Ok(())
}

/// Bytes of the files that travel to the runner with a carried bundle: git's tracked files and
/// the untracked ones it does not ignore. `None` where git cannot say (not a checkout).
fn working_tree_bytes(workspace: &Path) -> Option<u64> {
    let output = Command::new("git")
        .current_dir(workspace)
        .args(["ls-files", "-z", "--cached", "--others", "--exclude-standard"])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    Some(
        output
            .stdout
            .split(|&b| b == 0)
            .filter(|name| !name.is_empty())
            .filter_map(|name| std::fs::metadata(workspace.join(String::from_utf8_lossy(name).as_ref())).ok())
            .filter(|meta| meta.is_file())
            .map(|meta| meta.len())
            .sum(),
    )
}

/// Every name the bundle writes at the top of its folder, those packed into `packed.tar.gz` too:
/// a file of the user's by one of these names is refused before any build, never overwritten.
pub const WRITTEN: [&str; 12] = [
    "host",
    "xtask",
    "tests",
    "bench-kernels",
    "ptx",
    "cub",
    "cuda-c-src",
    "python",
    "pytorch",
    "packed.tar.gz",
    "run.sh",
    "for.txt",
];

/// Replaces those of `names` (files and folders of `out`) that exist by the archive `archive`,
/// which run.sh unpacks.
fn pack(out: &Path, names: &[&str], archive: &str) -> Result<(), String> {
    let present: Vec<&str> = names.iter().copied().filter(|n| out.join(n).exists()).collect();
    if present.is_empty() {
        return Ok(());
    }
    let status = Command::new("tar")
        .current_dir(out)
        .args(["-czf", archive])
        .args(&present)
        .status()
        .map_err(|e| format!("cannot run tar: {e}"))?;
    if !status.success() {
        return Err(format!(
            "tar could not pack {} in {}",
            present.join(", "),
            out.display()
        ));
    }
    for name in present {
        let path = out.join(name);
        let removed = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
    }
    Ok(())
}

/// Builds `cargo <args> --locked --no-run` and returns the executables of `profile` it made.
fn cargo_no_run(
    cargo: &Path,
    workspace: &Path,
    args: &[&str],
    profile: &str,
) -> Result<Vec<(String, PathBuf)>, String> {
    let output = Command::new(cargo)
        .current_dir(workspace)
        .args(args)
        .args(["--locked", "--no-run", "--message-format=json-render-diagnostics"])
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo {} --no-run failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(artifacts(&String::from_utf8_lossy(&output.stdout), profile))
}

/// Checks `wanted` (`--tests`) against the test executables the bundle would pack, named as
/// [`artifacts`] names them, from `cargo metadata` (no build): a bad name is refused at once. The
/// template project's (`template-*`) are checked when it is built.
pub fn check_test_names(workspace: &Path, wanted: &[String]) -> Result<(), String> {
    let cargo = std::env::var_os("CARGO")
        .map(PathBuf::from)
        .unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .current_dir(workspace)
        .args(["metadata", "--no-deps", "--locked", "--format-version", "1"])
        .output()
        .map_err(|e| format!("--tests: cannot check the names: cannot run cargo: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "--tests: cannot check the names: cargo metadata failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let known = test_names(&String::from_utf8_lossy(&output.stdout));
    match wanted
        .iter()
        .find(|w| !w.starts_with("template-") && !known.contains(w))
    {
        Some(unknown) => Err(format!(
            "--tests: no test executable named {unknown}; choose among {}",
            known.join(", ")
        )),
        None => Ok(()),
    }
}

/// The test executables of the workspace's packages (all but the Python extension's) in
/// `cargo metadata`'s JSON, `<package>-<target>-<kind>`.
fn test_names(metadata: &str) -> Vec<String> {
    let Ok(metadata) = serde_json::from_str::<serde_json::Value>(metadata) else {
        return Vec::new();
    };
    let members: Vec<&str> = metadata["workspace_members"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|id| id.as_str())
        .collect();
    let mut names = Vec::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let Some(name) = package["name"].as_str() else { continue };
        if name == "kernels-torch" || !package["id"].as_str().is_some_and(|id| members.contains(&id)) {
            continue;
        }
        for target in package["targets"].as_array().into_iter().flatten() {
            let (Some(target_name), Some(kind)) = (target["name"].as_str(), target["kind"][0].as_str()) else {
                continue;
            };
            if target["test"] == true && ["lib", "rlib", "bin", "test"].contains(&kind) {
                names.push(format!("{name}-{target_name}-{kind}"));
            }
        }
    }
    names
}

/// Executables of `profile` ("test": test harnesses, "bench": benches) from cargo's JSON messages,
/// each named `<package>-<target>-<kind>` (`kernels-matmul-test`, `host-host-lib`).
fn artifacts(messages: &str, profile: &str) -> Vec<(String, PathBuf)> {
    messages
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["profile"]["test"] == true)
        .filter(|m| profile == "test" || m["target"]["kind"][0] == profile)
        .filter_map(|m| {
            let executable = PathBuf::from(m["executable"].as_str()?);
            let package = package_name(m["package_id"].as_str()?);
            let kind = m["target"]["kind"][0].as_str()?;
            let target = m["target"]["name"].as_str()?;
            Some((format!("{package}-{target}-{kind}"), executable))
        })
        .collect()
}

/// A package's name from its id: `path+file:///w/host#0.1.0` (folder named as the package) or
/// `path+file:///w/dir#name@0.1.0`.
fn package_name(id: &str) -> &str {
    let (path, fragment) = id.rsplit_once('#').unwrap_or((id, ""));
    match fragment.split_once('@') {
        Some((name, _)) => name,
        None => path.rsplit('/').next().unwrap_or(path),
    }
}

/// The archs `cargo xtask build-ptx` wrote (it runs first).
fn built_archs(target_dir: &Path) -> Result<Vec<String>, String> {
    let ptx_dir = target_dir.join("ptx");
    let entries = std::fs::read_dir(&ptx_dir).map_err(|e| format!("cannot list {}: {e}", ptx_dir.display()))?;
    Ok(entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .collect())
}

fn copy(from: &Path, to: &Path) -> Result<(), String> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    std::fs::copy(from, to)
        .map(|_| ())
        .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))
}

fn run(command: &mut Command) -> Result<(), String> {
    let status = command.status().map_err(|e| format!("cannot run {command:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{command:?} failed ({status})"))
    }
}

fn folder_size(path: &Path) -> Result<u64, String> {
    let mut total = 0;
    for entry in std::fs::read_dir(path).map_err(|e| format!("cannot list {}: {e}", path.display()))? {
        let entry = entry.map_err(|e| e.to_string())?;
        let meta = entry.metadata().map_err(|e| e.to_string())?;
        total += if meta.is_dir() {
            folder_size(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

#[cfg(unix)]
pub fn make_executable(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("cannot make {} executable: {e}", path.display()))
}

#[cfg(not(unix))]
pub fn make_executable(_: &Path) -> Result<(), String> {
    Ok(())
}

/// The names of the entries of `dir`.
fn entry_names(dir: &Path) -> Result<Vec<String>, String> {
    Ok(std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::{Purpose, RUN_SCRIPT, package_name};
    use clap::ValueEnum;

    #[test]
    fn every_purpose_is_a_mode_of_run_sh_and_carries_run_sh_s_needs() {
        for purpose in Purpose::value_variants() {
            let mode = purpose.name();
            assert!(
                RUN_SCRIPT.contains(&format!("{mode}|")) || RUN_SCRIPT.contains(&format!("|{mode}")),
                "{mode}"
            );
            let parts = purpose.parts();
            // What run.sh's `need` lines ask of each mode.
            match purpose {
                Purpose::Torch => assert!(parts.python),
                Purpose::Multi => assert!(parts.host && parts.tests && parts.bench),
                _ => assert!(parts.nvcc, "{mode}"),
            }
            if matches!(purpose, Purpose::Check | Purpose::Tests | Purpose::All) {
                assert!(parts.host && parts.xtask && parts.tests, "{mode}");
            }
            if matches!(purpose, Purpose::Bench | Purpose::All) {
                assert!(parts.bench && parts.pytorch_anchors, "{mode}");
            }
            if *purpose == Purpose::Demos {
                assert!(parts.host);
            }
        }
    }

    #[test]
    fn package_names_come_from_cargo_package_ids() {
        assert_eq!(package_name("path+file:///work/main/host#0.1.0"), "host");
        assert_eq!(package_name("path+file:///work/main/dir#kernels@0.1.0"), "kernels");
    }
}
