//! The stencil on the GPU (or the emulator), checked against its f64 reference and timed.

use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(2)
        }
    }
}

fn run() -> ptxkit_runtime::Result<bool> {
    let (backend, notice) = {{name_snake}}::open()?;
    if let Some(notice) = notice {
        eprintln!("{notice}");
    }
    let n = if backend.gpu().is_some() { 1 << 26 } else { 1 << 20 };
    let x: Vec<f32> = (0..n).map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 250.0).collect();
    {{name_snake}}::stencil(&backend, &x)?;
    let start = Instant::now();
    let out = {{name_snake}}::stencil(&backend, &x)?;
    let seconds = start.elapsed().as_secs_f64();
    let worst = out
        .iter()
        .zip({{crate}}::reference(&x))
        .map(|(got, want)| (*got as f64 - want).abs())
        .fold(0.0, f64::max);
    let ok = worst <= 1e-5;
    println!(
        "stencil of {n} floats on the {}: largest error {worst:.2e} against f64 ({}), {:.1} ms with the copies",
        backend.name(),
        if ok { "ok" } else { "FAILED" },
        seconds * 1e3
    );
    Ok(ok)
}
