//! Finding ptxas, assembling PTX with it, and reading its resource report.

use crate::arch::Arch;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Environment variable naming the ptxas to use, before any other.
pub const PTXAS_ENV: &str = "PTXAS";

/// ptxas from, in order: `$PTXAS` (the file it names), `PATH`, `$CUDA_PATH/bin`,
/// `/usr/local/cuda/bin`. The first found, with where it came from.
pub fn find_ptxas() -> Option<(PathBuf, &'static str)> {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("ptxas"))
            .find(|p| p.is_file())
    });
    [
        (std::env::var_os(PTXAS_ENV).map(PathBuf::from), "$PTXAS"),
        (on_path, "PATH"),
        (
            std::env::var_os("CUDA_PATH").map(|v| PathBuf::from(v).join("bin/ptxas")),
            "$CUDA_PATH",
        ),
        (Some(PathBuf::from("/usr/local/cuda/bin/ptxas")), "/usr/local/cuda"),
    ]
    .into_iter()
    .find_map(|(path, origin)| path.filter(|p| p.is_file()).map(|p| (p, origin)))
}

/// `ptxas --version`'s last line, e.g. "Cuda compilation tools, release 12.9, V12.9.86".
pub fn version(ptxas: &Path) -> Result<String, String> {
    let output = Command::new(ptxas)
        .arg("--version")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", ptxas.display()))?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .rev()
        .find(|l| l.contains("release"))
        .map(str::to_string)
        .ok_or_else(|| format!("{} --version printed no release line", ptxas.display()))
}

/// What ptxas reports for one entry point.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelResources {
    pub entry: String,
    pub registers: u32,
    /// Static shared memory; dynamic shared memory is the launch's and is not in the report.
    pub static_shared_bytes: u32,
    pub stack_bytes: u32,
    pub spill_store_bytes: u32,
    pub spill_load_bytes: u32,
}

/// Assembles `ptx` for `arch` into `cubin` with `-v`, returning the per-entry report.
pub fn assemble(ptxas: &Path, ptx: &Path, arch: Arch, cubin: &Path) -> Result<Vec<KernelResources>, String> {
    let output = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg("-v")
        .arg("-o")
        .arg(cubin)
        .arg(ptx)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", ptxas.display()))?;
    let report = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(format!("ptxas rejected {} for {arch}:\n{report}", ptx.display()));
    }
    Ok(parse_report(&report))
}

/// Reads ptxas `-v` output: an "Compiling entry function 'NAME'" line opens each entry, followed by
/// "N bytes stack frame, N bytes spill stores, N bytes spill loads" and "Used N registers, ... N bytes smem".
pub fn parse_report(report: &str) -> Vec<KernelResources> {
    let mut kernels: Vec<KernelResources> = Vec::new();
    let mut properties_of_entry = false;
    for line in report.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let entry = rest.split('\'').next().unwrap_or_default().to_string();
            kernels.push(KernelResources {
                entry,
                ..Default::default()
            });
            continue;
        }
        let Some(current) = kernels.last_mut() else { continue };
        // The stack and spill line after "Function properties for F" is F's: an entry's own, or a
        // function LLVM left out of line, listed after the entry with its own (often zero) frame.
        if let Some(function) = line.split("Function properties for ").nth(1) {
            properties_of_entry = function.trim() == current.entry;
            continue;
        }
        if line.contains("bytes stack frame") && !properties_of_entry {
            continue;
        }
        let line = line.split(" : ").last().unwrap_or(line);
        for part in line.split(',').map(str::trim) {
            let mut words = part.split_whitespace();
            let (Some(first), Some(second)) = (words.next(), words.next()) else {
                continue;
            };
            let rest: Vec<&str> = words.collect();
            let number = |text: &str| text.parse::<u32>().ok();
            match (first, second, rest.as_slice()) {
                ("Used", n, ["registers"]) => current.registers = number(n).unwrap_or(0),
                (n, "bytes", ["smem"]) => current.static_shared_bytes = number(n).unwrap_or(0),
                (n, "bytes", ["stack", "frame"]) => current.stack_bytes = number(n).unwrap_or(0),
                (n, "bytes", ["spill", "stores"]) => current.spill_store_bytes = number(n).unwrap_or(0),
                (n, "bytes", ["spill", "loads"]) => current.spill_load_bytes = number(n).unwrap_or(0),
                _ => {}
            }
        }
    }
    kernels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptxas_env_names_the_file_itself() {
        let dir = std::env::temp_dir().join(format!("ptxkit-ptxas-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake = dir.join("my-ptxas");
        std::fs::write(&fake, "").unwrap();
        // SAFETY: this test alone reads or writes $PTXAS in this process.
        unsafe { std::env::set_var(PTXAS_ENV, &fake) };
        let found = find_ptxas();
        unsafe { std::env::remove_var(PTXAS_ENV) };
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(found, Some((fake, "$PTXAS")));
    }

    #[test]
    fn report_gives_registers_shared_stack_and_spills_per_entry() {
        let report = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'matmul_tiled' for 'sm_90'
ptxas info    : Function properties for matmul_tiled
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]
ptxas info    : Compiling entry function 'vec_add' for 'sm_90'
ptxas info    : Function properties for vec_add
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, 380 bytes cmem[0]
ptxas info    : Compiling entry function 'conv2d_rolling' for 'sm_90'
ptxas info    : Function properties for conv2d_rolling
    472 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 80 registers, used 1 barriers, 472 bytes cumulative stack size
ptxas info    : Function properties for _RNCINvNtNtCs_7kernels6conv2d7rolling4bandKb0_Km1_E0B8_
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
";
        let kernels = parse_report(report);
        assert_eq!(
            kernels,
            [
                KernelResources {
                    entry: "matmul_tiled".into(),
                    registers: 32,
                    static_shared_bytes: 1024,
                    stack_bytes: 8,
                    spill_store_bytes: 4,
                    spill_load_bytes: 12,
                },
                KernelResources {
                    entry: "vec_add".into(),
                    registers: 8,
                    ..Default::default()
                },
                // The out-of-line function's zero frame does not hide the entry's 472 bytes.
                KernelResources {
                    entry: "conv2d_rolling".into(),
                    registers: 80,
                    stack_bytes: 472,
                    ..Default::default()
                },
            ]
        );
    }
}
