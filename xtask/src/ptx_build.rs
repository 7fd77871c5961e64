//! Compiles the `kernels` crate to PTX with rustc's nvptx64 target, in a nested cargo.
//!
//! `cargo rustc --target nvptx64-nvidia-cuda -Zbuild-std=core -- --emit=asm` on the rlib writes PTX
//! (linking a cdylib would need the llvm-bitcode-linker component, which cannot be installed here).
//! `core` is rebuilt with `-Cpanic=immediate-abort`, so every panic is an inline `trap` and the PTX
//! calls nothing outside itself.

use crate::arch::{Arch, PTX_ISA};
use std::path::{Path, PathBuf};
use std::process::Command;

pub const TARGET: &str = "nvptx64-nvidia-cuda";

/// Variables of an outer cargo (a build script's, clippy's) that must not leak into the nested build:
/// host flags, compiler wrappers and target settings.
const OUTER_CARGO_VARS: &[&str] = &[
    "RUSTFLAGS",
    "CARGO_ENCODED_RUSTFLAGS",
    "CARGO_BUILD_RUSTFLAGS",
    "RUSTDOCFLAGS",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "CARGO_BUILD_RUSTC_WRAPPER",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET",
    "CARGO_BUILD_TARGET_DIR",
];

#[derive(Debug, thiserror::Error)]
pub enum PtxBuildError {
    #[error("cannot run {cargo}: {source}")]
    Spawn { cargo: String, source: std::io::Error },
    #[error(
        "building the kernels for {arch} failed ({status}).\n\
         If the message below mentions `core` or the standard library, install the source with `rustup component add rust-src`.\n\
         {stderr}"
    )]
    Compile {
        arch: Arch,
        status: std::process::ExitStatus,
        stderr: String,
    },
    #[error("the nested build for {arch} finished but wrote no PTX at {path}")]
    Missing { arch: Arch, path: PathBuf },
    #[error("cannot copy the PTX to {path}: {source}")]
    Copy { path: PathBuf, source: std::io::Error },
}

/// One nested build: where the workspace is, where the nested cargo keeps its files, which cargo.
pub struct PtxBuild {
    /// The workspace root (holding `kernels/`).
    pub workspace: PathBuf,
    /// The nested build's own target folder; each arch gets a subfolder.
    pub build_dir: PathBuf,
    /// The cargo to run; the outer cargo's own (`$CARGO`) where there is one.
    pub cargo: PathBuf,
}

impl PtxBuild {
    /// Defaults for a workspace: the nested build under `target/ptx-build`, cargo from `$CARGO`.
    pub fn for_workspace(workspace: &Path, target_dir: &Path) -> PtxBuild {
        PtxBuild {
            workspace: workspace.to_path_buf(),
            build_dir: target_dir.join("ptx-build"),
            cargo: std::env::var_os("CARGO")
                .map(PathBuf::from)
                .unwrap_or_else(|| "cargo".into()),
        }
    }

    /// Builds the PTX for `arch` and copies it to `out` (`kernels.ptx` by convention).
    pub fn build(&self, arch: Arch, out: &Path) -> Result<(), PtxBuildError> {
        let arch_dir = self.build_dir.join(arch.to_string());
        // Emitted inside the nested target folder, which cargo cleans together with its fingerprints:
        // a build that cargo finds fresh always has its PTX there.
        let emitted = arch_dir.join("kernels.ptx");
        let flags = [
            "-Zunstable-options",
            "-Cpanic=immediate-abort",
            &format!("-Ctarget-cpu={arch}"),
            &format!("-Ctarget-feature=+{PTX_ISA}"),
            "-Ccodegen-units=1",
            // ptxas rejects the DWARF sections LLVM writes into PTX; an outer build with debug info
            // (the bundle's line tables) must not reach the kernels.
            "-Cdebuginfo=0",
        ];
        let mut command = Command::new(&self.cargo);
        for var in OUTER_CARGO_VARS {
            command.env_remove(var);
        }
        for (var, _) in std::env::vars_os() {
            if var.to_string_lossy().starts_with("CARGO_PROFILE_") {
                command.env_remove(var);
            }
        }
        command
            .env("CARGO_ENCODED_RUSTFLAGS", flags.join("\x1f"))
            .current_dir(&self.workspace)
            .arg("rustc")
            .arg("--quiet")
            .arg("--manifest-path")
            .arg(self.workspace.join("kernels/Cargo.toml"))
            .args([
                "--lib",
                "--release",
                "--target",
                TARGET,
                "-Zbuild-std=core",
                "--target-dir",
            ])
            .arg(&arch_dir)
            .arg("--")
            .arg(format!("--emit=asm={}", emitted.display()));
        let output = command.output().map_err(|source| PtxBuildError::Spawn {
            cargo: self.cargo.display().to_string(),
            source,
        })?;
        if !output.status.success() {
            return Err(PtxBuildError::Compile {
                arch,
                status: output.status,
                stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            });
        }
        if !emitted.is_file() {
            return Err(PtxBuildError::Missing { arch, path: emitted });
        }
        if let Some(parent) = out.parent() {
            std::fs::create_dir_all(parent).map_err(|source| PtxBuildError::Copy {
                path: out.into(),
                source,
            })?;
        }
        let ptx = std::fs::read_to_string(&emitted).map_err(|source| PtxBuildError::Copy {
            path: emitted.clone(),
            source,
        })?;
        std::fs::write(out, with_launch_bounds(&ptx, &kernels::registry::kernels())).map_err(|source| {
            PtxBuildError::Copy {
                path: out.into(),
                source,
            }
        })?;
        Ok(())
    }

    /// Builds every arch, side by side (each nested cargo has its own target folder), writing
    /// `<out_dir>/<arch>/kernels.ptx`. Returns the PTX paths in the order of `archs`.
    pub fn build_all(&self, archs: &[Arch], out_dir: &Path) -> Result<Vec<PathBuf>, PtxBuildError> {
        std::thread::scope(|scope| {
            let jobs: Vec<_> = archs
                .iter()
                .map(|&arch| {
                    let out = ptx_path(out_dir, arch);
                    scope.spawn(move || self.build(arch, &out).map(|()| out))
                })
                .collect();
            jobs.into_iter()
                .map(|job| job.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
                .collect()
        })
    }
}

/// Where the PTX for `arch` lies under `out_dir`.
pub fn ptx_path(out_dir: &Path, arch: Arch) -> PathBuf {
    out_dir.join(arch.to_string()).join("kernels.ptx")
}

/// `ptx` with CUDA's `__launch_bounds__` written in for every kernel that declares them: after an
/// entry's parameter list, `.maxntid x, y, z` (its block) and `.minnctapersm n`, which ptxas reads
/// as a cap on registers. Rust has no attribute for these; the registry is their one home.
pub fn with_launch_bounds(ptx: &str, kernels: &[kernels::KernelInfo]) -> String {
    let mut out = String::with_capacity(ptx.len() + 256);
    let mut bounds_due: Option<String> = None;
    for line in ptx.lines() {
        if let Some(rest) = line.trim_start().strip_prefix(".visible .entry ") {
            let entry = rest.split(['(', ' ']).next().unwrap_or(rest);
            bounds_due = kernels
                .iter()
                .find(|k| k.entry == entry)
                .and_then(|k| k.min_blocks_per_sm.map(|n| (k.block, n)))
                .map(|(b, n)| format!(".maxntid {}, {}, {}\n.minnctapersm {n}\n", b.x, b.y, b.z));
        }
        if line.trim() == "{"
            && let Some(bounds) = bounds_due.take()
        {
            out.push_str(&bounds);
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The `.entry` names a PTX module defines.
pub fn entry_names(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|line| line.trim_start().strip_prefix(".visible .entry "))
        .map(|rest| rest.split(['(', ' ']).next().unwrap_or(rest).to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_bounds_go_between_the_parameters_and_the_body() {
        let ptx =
            ".visible .entry bounded(\n\t.param .u64 p\n)\n{\n\tret;\n}\n.visible .entry free(\n)\n{\n\tret;\n}\n";
        let kernels = [
            kernels::KernelInfo {
                entry: "bounded",
                family: "f",
                block: kernels::Dim3::xy(32, 8),
                shared_bytes: 0,
                min_blocks_per_sm: Some(3),
                sm90a_only: false,
            },
            kernels::KernelInfo {
                entry: "free",
                family: "f",
                block: kernels::Dim3::x(64),
                shared_bytes: 0,
                min_blocks_per_sm: None,
                sm90a_only: false,
            },
        ];
        assert_eq!(
            with_launch_bounds(ptx, &kernels),
            ".visible .entry bounded(\n\t.param .u64 p\n)\n.maxntid 32, 8, 1\n.minnctapersm 3\n{\n\tret;\n}\n.visible .entry free(\n)\n{\n\tret;\n}\n"
        );
    }

    #[test]
    fn entry_names_are_read_from_visible_entries_only() {
        let ptx = ".visible .func helper(\n)\n.visible .entry vec_add(\n\t.param .u64 a\n)\n.visible .entry k2(\n";
        assert_eq!(entry_names(ptx), ["vec_add", "k2"]);
    }
}
