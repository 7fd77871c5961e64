//! `cargo xtask wheel`: the PyTorch extension (`host/python`) built in release with pyo3's
//! extension-module feature, packed with its Python layer into a wheel by
//! `host/python/build_wheel.py` (Python's zipfile: whoever installs the wheel has Python).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The Python interpreter: `$PYTHON`, else `python3`.
pub fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Runs the interpreter once, before any build: one that cannot run, or cannot import what
/// `build_wheel.py` needs, is said at once with the variable that chose it.
pub fn check_python() -> Result<(), String> {
    let python = python();
    let chosen = if std::env::var_os("PYTHON").is_some() {
        format!("$PYTHON={python}")
    } else {
        python.clone()
    };
    let output = Command::new(&python)
        .args([
            "-c",
            "import sys, zipfile, hashlib, base64; assert sys.version_info >= (3, 8)",
        ])
        .output()
        .map_err(|e| format!("{chosen} cannot be run ({e}): set $PYTHON to a Python 3.8 or newer interpreter"))?;
    if !output.status.success() {
        return Err(format!(
            "{chosen} is not a Python 3.8 or newer that can pack a wheel ({}{}): set $PYTHON to one",
            output.status,
            said(&output.stderr)
        ));
    }
    Ok(())
}

/// What a failed command wrote on stderr, as the end of an error message.
fn said(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    match text.trim() {
        "" => ", with no message".into(),
        text => format!("; it said: {text}"),
    }
}

/// Builds the extension and writes the wheel into `out`; returns the wheel's path.
pub fn build(root: &Path, target: &Path, out: &Path) -> Result<PathBuf, String> {
    check_python()?;
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
            "packing the wheel with {} failed ({}{})",
            python(),
            output.status,
            said(&output.stderr)
        ));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()))
}
