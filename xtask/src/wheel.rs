//! `cargo xtask wheel`: the PyTorch extension (`host/python`) built in release with pyo3's
//! extension-module feature, packed with its Python layer into a wheel by
//! `host/python/build_wheel.py` (Python's zipfile: whoever installs the wheel has Python).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The Python interpreter: `$PYTHON`, else `python3`.
pub fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Builds the extension and writes the wheel into `out`; returns the wheel's path.
pub fn build(root: &Path, target: &Path, out: &Path) -> Result<PathBuf, String> {
    eprintln!("building the extension (host/python, release) ...");
    let status = Command::new(env!("CARGO"))
        .current_dir(root)
        .env("PYO3_PYTHON", python())
        .args([
            "build",
            "--release",
            "--locked",
            "-p",
            "kernels-torch",
            "--features",
            "extension-module",
            "--lib",
        ])
        .status()
        .map_err(|e| format!("running cargo: {e}"))?;
    if !status.success() {
        return Err(format!("building the extension failed ({status})"));
    }
    let lib = target.join("release").join("lib_native.so");
    if !lib.is_file() {
        return Err(format!("{} was not built", lib.display()));
    }
    let output = Command::new(python())
        .arg(root.join("host/python/build_wheel.py"))
        .arg("--lib")
        .arg(&lib)
        .arg("--out")
        .arg(out)
        .args(["--version", env!("CARGO_PKG_VERSION")])
        .output()
        .map_err(|e| format!("running {} (set $PYTHON to another interpreter): {e}", python()))?;
    if !output.status.success() {
        return Err(format!(
            "packing the wheel failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()))
}
