//! Builds the kernels' PTX with the same builder as `cargo xtask build-ptx`, so that the host embeds
//! it on a fresh clone with no earlier step. Runs again only when the kernels change.

use std::path::{Path, PathBuf};
use xtask::{DEFAULT_ARCHS, PtxBuild};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let workspace = manifest
        .parent()
        .expect("host lives inside the workspace")
        .to_path_buf();
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for watched in ["kernels/src", "kernels/Cargo.toml", "rust-toolchain.toml"] {
        println!("cargo:rerun-if-changed={}", workspace.join(watched).display());
    }
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"));
    let ptx_dir = out_dir.join("ptx");
    let paths = match PtxBuild::for_workspace(&workspace, &target_dir).build_all(DEFAULT_ARCHS, &ptx_dir) {
        Ok(paths) => paths,
        Err(error) => {
            // A build script's panic would print a backtrace hint; this says only what went wrong.
            eprintln!("error: {error}");
            println!(
                "cargo::error=building the kernels' PTX failed: {}",
                first_line(&error.to_string())
            );
            std::process::exit(1);
        }
    };
    write_table(&out_dir.join("embedded_ptx.rs"), &paths);
}

/// `EMBEDDED`: one entry per arch, oldest first, each with its PTX text.
fn write_table(path: &Path, ptx_paths: &[PathBuf]) {
    let mut table = String::from("pub static EMBEDDED: &[EmbeddedPtx] = &[\n");
    for (arch, ptx) in DEFAULT_ARCHS.iter().zip(ptx_paths) {
        table += &format!(
            "    EmbeddedPtx {{ arch: \"{arch}\", compute_capability: ({}, {}), specific: {}, ptx: include_str!({:?}) }},\n",
            arch.major,
            arch.minor,
            arch.specific,
            ptx.display().to_string()
        );
    }
    table += "];\n";
    std::fs::write(path, table).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}
