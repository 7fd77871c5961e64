//! Compiles a kernel crate to PTX with rustc's nvptx64 target, in a nested cargo.
//!
//! `cargo rustc --target nvptx64-nvidia-cuda -Zbuild-std=core -- --emit=asm` on the crate's rlib
//! writes PTX (linking a cdylib would need the llvm-bitcode-linker component). `core` is rebuilt
//! with `-Cpanic=immediate-abort`, so every panic is an inline `trap` and the PTX calls nothing
//! outside itself. Each architecture gets its own nested target folder, so they build side by side.

use crate::arch::{Arch, DEFAULT_ARCHS};
use crate::ptx::{self, PtxProblem};
use crate::ptxas::{self, KernelResources};
use crate::{Error, embed};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The target rustc compiles kernels for.
pub const TARGET: &str = "nvptx64-nvidia-cuda";

/// Environment variable that turns line information on (`1`) for builds that do not set it:
/// `.loc` lines in the PTX, so that compute-sanitizer and Nsight name Rust source lines.
pub const LINE_INFO_ENV: &str = "PTXKIT_LINE_INFO";

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

/// When ptxas checks the PTX.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PtxasCheck {
    /// Never.
    Off,
    /// Where a ptxas is found (`$PTXAS`, `PATH`, `$CUDA_PATH/bin`, `/usr/local/cuda/bin`).
    IfFound,
    /// Always: a build without ptxas fails.
    Required,
}

/// Builds one kernel crate to PTX: which crate, for which architectures, and what is checked.
#[derive(Clone, Debug)]
pub struct PtxBuilder {
    manifest: PathBuf,
    archs: Vec<Arch>,
    line_info: Option<bool>,
    target_dir: Option<PathBuf>,
    cargo: PathBuf,
    check: PtxasCheck,
    ptxas: Option<PathBuf>,
    deny_local_memory: bool,
}

/// One architecture's PTX, built.
#[derive(Clone, Debug)]
pub struct BuiltPtx {
    pub arch: Arch,
    /// The PTX file, launch bounds written in.
    pub path: PathBuf,
    /// Its `.entry` names: every kernel of the crate.
    pub entries: Vec<String>,
    /// What ptxas reported per entry, where it ran.
    pub resources: Option<Vec<KernelResources>>,
}

/// A kernel crate built for every architecture asked for.
#[derive(Clone, Debug)]
pub struct Built {
    /// The crate's name as Rust spells it (`stencil_kernels`).
    pub crate_name: String,
    /// One per architecture, in the order they were asked for.
    pub modules: Vec<BuiltPtx>,
    /// The ptxas that checked them, where one did.
    pub ptxas: Option<PathBuf>,
    /// Every source file the build read (the kernel crate's and its path dependencies').
    pub sources: Vec<PathBuf>,
}

impl PtxBuilder {
    /// The kernel crate at `kernel_crate`: its folder or its `Cargo.toml`. A relative path is taken
    /// from `$CARGO_MANIFEST_DIR` where cargo sets it (in a build script: the crate being built),
    /// else from the current folder.
    pub fn new(kernel_crate: impl AsRef<Path>) -> Self {
        let path = kernel_crate.as_ref();
        let path = if path.is_absolute() {
            path.to_path_buf()
        } else {
            std::env::var_os("CARGO_MANIFEST_DIR")
                .map(PathBuf::from)
                .or_else(|| std::env::current_dir().ok())
                .unwrap_or_default()
                .join(path)
        };
        let manifest = if path.file_name().is_some_and(|n| n == "Cargo.toml") {
            path
        } else {
            path.join("Cargo.toml")
        };
        PtxBuilder {
            manifest,
            archs: DEFAULT_ARCHS.to_vec(),
            line_info: None,
            target_dir: None,
            cargo: std::env::var_os("CARGO")
                .map(PathBuf::from)
                .unwrap_or_else(|| "cargo".into()),
            check: PtxasCheck::IfFound,
            ptxas: None,
            deny_local_memory: false,
        }
    }

    /// The architectures to build for (default: [`DEFAULT_ARCHS`], sm_80 and sm_90a).
    pub fn arch(mut self, archs: &[Arch]) -> Self {
        self.archs = archs.to_vec();
        self
    }

    /// Line information in the PTX (`.loc`), for compute-sanitizer and Nsight. Default: off,
    /// unless `$PTXKIT_LINE_INFO` is `1`.
    pub fn line_info(mut self, on: bool) -> Self {
        self.line_info = Some(on);
        self
    }

    /// Where the nested cargo keeps its files (each architecture in a folder of its own).
    /// Default: `ptxkit` beside the outer build's profile folders.
    pub fn target_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.target_dir = Some(dir.into());
        self
    }

    /// When ptxas checks the PTX (default [`PtxasCheck::IfFound`]).
    pub fn check_with_ptxas(mut self, check: PtxasCheck) -> Self {
        self.check = check;
        self
    }

    /// The ptxas to check with, instead of looking for one.
    pub fn ptxas(mut self, path: impl Into<PathBuf>) -> Self {
        self.ptxas = Some(path.into());
        self
    }

    /// Fail where ptxas reports register spills or a stack frame (local memory) in a kernel; a
    /// kernel that prints has a stack frame for its arguments and is let through.
    pub fn deny_local_memory(mut self, deny: bool) -> Self {
        self.deny_local_memory = deny;
        self
    }

    /// The kernel crate's `Cargo.toml`.
    pub fn manifest(&self) -> &Path {
        &self.manifest
    }

    /// Whether this build writes line information.
    pub fn writes_line_info(&self) -> bool {
        self.line_info
            .unwrap_or_else(|| std::env::var(LINE_INFO_ENV).is_ok_and(|v| v.trim() == "1"))
    }

    /// Builds every architecture into `out_dir/<arch>/<crate>.ptx`, then checks it with ptxas as
    /// asked.
    pub fn build(&self, out_dir: &Path) -> Result<Built, Error> {
        let crate_name = crate_name(&self.manifest)?;
        let target_dir = self.nested_target_dir()?;
        let results: Vec<Result<(BuiltPtx, Vec<PathBuf>), Error>> = std::thread::scope(|scope| {
            let jobs: Vec<_> = self
                .archs
                .iter()
                .map(|&arch| {
                    let (crate_name, target_dir) = (&crate_name, &target_dir);
                    scope.spawn(move || self.build_arch(arch, crate_name, target_dir, out_dir))
                })
                .collect();
            jobs.into_iter()
                .map(|job| job.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
                .collect()
        });
        let mut modules = Vec::new();
        let mut sources: Vec<PathBuf> = Vec::new();
        for result in results {
            let (module, read) = result?;
            modules.push(module);
            for path in read {
                if !sources.contains(&path) {
                    sources.push(path);
                }
            }
        }
        let mut built = Built {
            crate_name,
            modules,
            ptxas: None,
            sources,
        };
        self.check(&mut built)?;
        Ok(built)
    }

    /// For a build script: builds into `$OUT_DIR`, tells cargo to run it again when a source of
    /// the kernel crate changes, and writes `$OUT_DIR/<crate>.rs`, which defines the crate's
    /// [`KernelCrate`](https://docs.rs/ptxkit-runtime) type (`StencilKernels` for `stencil_kernels`)
    /// for `ptxkit_runtime::include_kernels!(stencil_kernels)`.
    pub fn embed(&self) -> Result<Built, Error> {
        let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").ok_or(Error::NotInBuildScript)?);
        println!("cargo:rerun-if-env-changed={LINE_INFO_ENV}");
        println!("cargo:rerun-if-env-changed={}", ptxas::PTXAS_ENV);
        println!("cargo:rerun-if-changed={}", self.manifest.display());
        let built = self.build(&out_dir.join("ptx"))?;
        for kernel in built.local_memory()? {
            println!(
                "cargo:warning=ptxas gave a kernel local memory, one DRAM round trip per access that misses the L1: {kernel}"
            );
        }
        for source in &built.sources {
            println!("cargo:rerun-if-changed={}", source.display());
        }
        let file = out_dir.join(format!("{}.rs", built.crate_name));
        let ptx: Vec<(Arch, PathBuf)> = built.modules.iter().map(|m| (m.arch, m.path.clone())).collect();
        std::fs::write(&file, embed::rust_source(&built.crate_name, &ptx))
            .map_err(|source| Error::Io { path: file, source })?;
        Ok(built)
    }

    /// Where the nested builds go: asked for, or beside the outer build's profile folders
    /// (`target/ptxkit`), found from `$OUT_DIR` in a build script, else `target/ptxkit` beside
    /// the kernel crate.
    fn nested_target_dir(&self) -> Result<PathBuf, Error> {
        if let Some(dir) = &self.target_dir {
            return Ok(dir.clone());
        }
        if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
            return Ok(PathBuf::from(dir).join("ptxkit"));
        }
        if let Some(out) = std::env::var_os("OUT_DIR") {
            // OUT_DIR is <target>[/<triple>]/<profile>/build/<package>-<hash>/out.
            let out = PathBuf::from(out);
            let profile = out
                .ancestors()
                .find(|a| a.join("build").is_dir() && out.starts_with(a.join("build")));
            if let Some(target) = profile.and_then(Path::parent) {
                return Ok(target.join("ptxkit"));
            }
        }
        let crate_dir = self.manifest.parent().unwrap_or(Path::new("."));
        Ok(crate_dir.join("target").join("ptxkit"))
    }

    fn build_arch(
        &self,
        arch: Arch,
        crate_name: &str,
        target_dir: &Path,
        out_dir: &Path,
    ) -> Result<(BuiltPtx, Vec<PathBuf>), Error> {
        let arch_dir = target_dir.join(arch.to_string());
        // Emitted inside the nested target folder, which cargo cleans together with its fingerprints:
        // a build that cargo finds fresh always has its PTX there.
        let emitted = arch_dir.join(format!("{crate_name}.ptx"));
        let debuginfo = if self.writes_line_info() {
            "line-tables-only"
        } else {
            "0"
        };
        let flags = [
            "-Zunstable-options",
            "-Cpanic=immediate-abort",
            &format!("-Ctarget-cpu={arch}"),
            &format!("-Ctarget-feature=+{}", arch.ptx_isa()),
            "-Ccodegen-units=1",
            &format!("-Cdebuginfo={debuginfo}"),
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
            .current_dir(self.manifest.parent().unwrap_or(Path::new(".")))
            .arg("rustc")
            .arg("--quiet")
            .arg("--manifest-path")
            .arg(&self.manifest)
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
        let output = command.output().map_err(|source| Error::Spawn {
            cargo: self.cargo.display().to_string(),
            source,
        })?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
            return Err(Error::Compile {
                arch,
                status: output.status,
                hint: compile_hint(&stderr),
                stderr,
            });
        }
        if !emitted.is_file() {
            return Err(Error::Missing { arch, path: emitted });
        }
        let read = |path: &Path| {
            std::fs::read_to_string(path).map_err(|source| Error::Io {
                path: path.into(),
                source,
            })
        };
        let text = ptx::finish(&read(&emitted)?).map_err(|problem: PtxProblem| Error::Ptx { arch, problem })?;
        let path = out_dir.join(arch.to_string()).join(format!("{crate_name}.ptx"));
        write_whole(&path, &text)?;
        let dep_info = arch_dir.join(TARGET).join("release").join(format!("lib{crate_name}.d"));
        let sources = std::fs::read_to_string(&dep_info)
            .map(|text| dep_info_sources(&text))
            .unwrap_or_default();
        Ok((
            BuiltPtx {
                arch,
                path,
                entries: ptx::entry_names(&text),
                resources: None,
            },
            sources,
        ))
    }

    /// ptxas over every module as asked; fills in each module's resources.
    fn check(&self, built: &mut Built) -> Result<(), Error> {
        let ptxas = match (self.check, &self.ptxas) {
            (PtxasCheck::Off, _) => return Ok(()),
            (_, Some(path)) => path.clone(),
            (check, None) => match ptxas::find_ptxas() {
                Some((path, _)) => path,
                None if check == PtxasCheck::Required => return Err(Error::NoPtxas),
                None => return Ok(()),
            },
        };
        for module in &mut built.modules {
            let cubin = module.path.with_extension("cubin");
            let resources =
                ptxas::assemble(&ptxas, &module.path, module.arch, &cubin).map_err(|message| Error::Ptxas {
                    arch: module.arch,
                    message,
                })?;
            module.resources = Some(resources);
        }
        built.ptxas = Some(ptxas);
        let local = built.local_memory()?;
        if self.deny_local_memory && !local.is_empty() {
            return Err(Error::LocalMemory(local));
        }
        Ok(())
    }
}

impl Built {
    /// The kernels ptxas gave local memory (register spills, or a stack frame but for a kernel
    /// that prints, whose arguments need one), each with its architecture and bytes: one DRAM
    /// round trip per access that misses the L1. Empty where ptxas did not run.
    pub fn local_memory(&self) -> Result<Vec<String>, Error> {
        let mut local = Vec::new();
        for module in &self.modules {
            let Some(resources) = &module.resources else { continue };
            let text = std::fs::read_to_string(&module.path).map_err(|source| Error::Io {
                path: module.path.clone(),
                source,
            })?;
            let printing = ptx::entries_calling(&text, "vprintf");
            for r in resources {
                let spills = r.spill_store_bytes > 0 || r.spill_load_bytes > 0;
                if spills || (r.stack_bytes > 0 && !printing.contains(&r.entry)) {
                    local.push(format!(
                        "{} ({}: {} bytes of stack, {}/{} bytes of spill stores/loads)",
                        r.entry, module.arch, r.stack_bytes, r.spill_store_bytes, r.spill_load_bytes
                    ));
                }
            }
        }
        Ok(local)
    }
}

/// What to do about a failed nested build, where its message says.
fn compile_hint(stderr: &str) -> Option<&'static str> {
    let hints: &[(&str, &str)] = &[
        (
            "can't find crate for `std`",
            "the kernel crate (or a dependency) uses std, which nvptx64 lacks: put #![cfg_attr(target_arch = \"nvptx64\", no_std)] at the top of its lib.rs, and keep host-only code and dependencies behind #[cfg(not(target_arch = \"nvptx64\"))]",
        ),
        (
            "duplicate lang item",
            "ptxkit brings the panic handler for nvptx64: remove the kernel crate's own #[panic_handler]",
        ),
        (
            "only accepted on the nightly",
            "kernels build with rustc's nvptx64 target and -Zbuild-std, which need a nightly toolchain: pin one in rust-toolchain.toml",
        ),
        (
            "rust-src",
            "-Zbuild-std=core needs the standard library's source: rustup component add rust-src",
        ),
        (
            "could not find `Cargo.toml`",
            "PtxBuilder::new takes the kernel crate's folder or its Cargo.toml",
        ),
    ];
    hints
        .iter()
        .find(|(needle, _)| stderr.contains(needle))
        .map(|(_, hint)| *hint)
}

/// The source files in a cargo dep-info file (`target: a.rs b.rs`, spaces escaped).
fn dep_info_sources(text: &str) -> Vec<PathBuf> {
    let Some((_, deps)) = text.lines().next().and_then(|l| l.split_once(": ")) else {
        return Vec::new();
    };
    let mut paths = Vec::new();
    let mut current = String::new();
    let mut chars = deps.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&' ') => {
                current.push(' ');
                chars.next();
            }
            ' ' => {
                if !current.is_empty() {
                    paths.push(PathBuf::from(std::mem::take(&mut current)));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        paths.push(PathBuf::from(current));
    }
    paths
}

/// Writes `text` to `path` whole or not at all: into a file beside it, then renamed over it.
pub(crate) fn write_whole(path: &Path, text: &str) -> Result<(), Error> {
    let io = |source| Error::Io {
        path: path.into(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    let staged = path.with_extension(format!("{}.partial", std::process::id()));
    std::fs::write(&staged, text).map_err(|source| Error::Io {
        path: staged.clone(),
        source,
    })?;
    std::fs::rename(&staged, path).map_err(io)
}

/// The library crate's name as Rust spells it, from the manifest: `[lib] name`, else
/// `[package] name` with `-` as `_`.
pub fn crate_name(manifest: &Path) -> Result<String, Error> {
    let text = std::fs::read_to_string(manifest).map_err(|source| Error::Manifest {
        path: manifest.into(),
        reason: format!("cannot read it ({source}): PtxBuilder::new takes the kernel crate's folder or its Cargo.toml"),
    })?;
    let name_in = |section: &str| {
        let mut inside = false;
        for line in text.lines().map(str::trim) {
            if line.starts_with('[') {
                inside = line == section;
                continue;
            }
            if inside
                && let Some(value) = line.strip_prefix("name")
                && let Some(value) = value.trim_start().strip_prefix('=')
            {
                return Some(value.trim().trim_matches('"').to_string());
            }
        }
        None
    };
    name_in("[lib]")
        .or_else(|| name_in("[package]"))
        .map(|name| name.replace('-', "_"))
        .ok_or_else(|| Error::Manifest {
            path: manifest.into(),
            reason: "it names no package: a kernel crate is a package with a library".into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crate_name_comes_from_lib_or_package_with_underscores() {
        let dir = std::env::temp_dir().join(format!("ptxkit-name-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let manifest = dir.join("Cargo.toml");
        std::fs::write(&manifest, "[package]\nname = \"my-kernels\"\nversion = \"0.1.0\"\n").unwrap();
        assert_eq!(crate_name(&manifest).unwrap(), "my_kernels");
        std::fs::write(
            &manifest,
            "[package]\nname = \"my-kernels\"\n\n[lib]\nname = \"other\"\n",
        )
        .unwrap();
        assert_eq!(crate_name(&manifest).unwrap(), "other");
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(
            crate_name(&dir.join("Cargo.toml")),
            Err(Error::Manifest { .. })
        ));
    }

    #[test]
    fn a_relative_path_is_taken_from_the_manifest_dir_and_gets_its_cargo_toml() {
        let builder = PtxBuilder::new("/abs/kernels");
        assert_eq!(builder.manifest(), Path::new("/abs/kernels/Cargo.toml"));
        let builder = PtxBuilder::new("/abs/kernels/Cargo.toml");
        assert_eq!(builder.manifest(), Path::new("/abs/kernels/Cargo.toml"));
    }

    #[test]
    fn dep_info_lists_every_source_spaces_included() {
        let text = "/t/libk.rlib: /src/lib.rs /src/my\\ dir/a.rs /dev/lib.rs\n\n/src/lib.rs:\n";
        assert_eq!(
            dep_info_sources(text),
            [
                PathBuf::from("/src/lib.rs"),
                PathBuf::from("/src/my dir/a.rs"),
                PathBuf::from("/dev/lib.rs")
            ]
        );
    }

    #[test]
    fn a_failed_build_that_reached_for_std_says_what_to_add() {
        let hint = compile_hint("error[E0463]: can't find crate for `std`").unwrap();
        assert!(hint.contains("no_std"));
        assert_eq!(compile_hint("error: something else"), None);
    }
}
