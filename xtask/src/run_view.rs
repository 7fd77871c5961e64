//! What the report and its plots read from a run alike: the families of a bound, a case against
//! the library on its shape, the Rust/CUDA C pairs in table order, and text from the run escaped
//! for Markdown. Their one home, so that the report and the plots depend on it and not on each
//! other.

use kernels::bench_results::{BenchCase, BenchRun, Bound};

/// The benches' family of several-GPU scenarios: its rows mix copies and products, each rated
/// against a ceiling of its own run (the copy engine, one GPU), so it gets a table of its own
/// rather than the families' plots.
pub const MULTI_GPU: &str = "multi_gpu";

/// The first index at which `kernel` appears in the run: tables and plots keep the benches' order.
pub fn kernel_rank(run: &BenchRun, kernel: &str) -> usize {
    run.cases.iter().position(|c| c.kernel == kernel).unwrap_or(usize::MAX)
}

/// The families of one bound, in the order the run measured them (the several-GPU scenarios
/// apart: they have their own section).
pub fn families(run: &BenchRun, bound: Bound) -> Vec<String> {
    let mut families: Vec<String> = Vec::new();
    for case in run.cases.iter().filter(|c| c.bound == bound && c.family != MULTI_GPU) {
        if !families.contains(&case.family) {
            families.push(case.family.clone());
        }
    }
    families
}

/// A compute-bound case's rate as a percentage of the library's on the same shape in the run,
/// where the benches did not set it (baselines merged from PyTorch's anchors).
pub fn of_library(run: &BenchRun, case: &BenchCase) -> Option<f64> {
    run.cases
        .iter()
        .find(|l| l.source.is_none() && l.bound == Bound::Compute && l.family == case.family && l.size == case.size)
        .map(|library| 100.0 * case.rate / library.rate)
}

/// `rust_over_cuda_c()` grouped by kernel, sizes ascending: the order of the table and the bars.
pub fn ratios(run: &BenchRun) -> Vec<(&BenchCase, f64)> {
    let mut pairs = run.rust_over_cuda_c();
    pairs.sort_by(|(a, _), (b, _)| {
        kernel_rank(run, &a.kernel)
            .cmp(&kernel_rank(run, &b.kernel))
            .then(a.x.total_cmp(&b.x))
    });
    pairs
}

/// Text from the run data, escaped so that Markdown shows it as written: no character of it can
/// end a table cell, start a link, emphasis or code, or break the line.
pub fn text(raw: &str) -> String {
    let mut escaped = String::with_capacity(raw.len());
    for ch in raw.chars() {
        match ch {
            '\\' | '|' | '*' | '_' | '`' | '[' | ']' | '<' | '>' | '#' | '!' | '~' => {
                escaped.push('\\');
                escaped.push(ch);
            }
            '\n' | '\r' | '\t' => escaped.push(' '),
            _ => escaped.push(ch),
        }
    }
    escaped
}
