//! What the report and its plots read from a run alike: the families of a bound, a case against
//! the library on its shape, the Rust/CUDA C pairs in table order, and text from the run escaped
//! for Markdown. Their one home, so that the report and the plots depend on it and not on each
//! other.

use kernels::bench_results::{BenchCase, BenchRun, Bound};
use std::collections::HashMap;

/// The benches' family of several-GPU scenarios: its rows mix copies and products, each rated
/// against a ceiling of its own run (the copy engine, one GPU), so it gets a table of its own
/// rather than the families' plots.
pub const MULTI_GPU: &str = "multi_gpu";

/// The first index at which each kernel appears in the run: tables and plots keep the benches'
/// order (found once, so that sorting by it stays linear in the cases per comparison).
pub fn kernel_ranks(run: &BenchRun) -> HashMap<&str, usize> {
    let mut ranks = HashMap::new();
    for (i, case) in run.cases.iter().enumerate() {
        ranks.entry(case.kernel.as_str()).or_insert(i);
    }
    ranks
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

/// The libraries' compute-bound rates in the run, by family and shape (the first of each).
pub fn library_rates(run: &BenchRun) -> HashMap<(&str, &str), f64> {
    let mut rates = HashMap::new();
    for l in run
        .cases
        .iter()
        .filter(|l| l.source.is_none() && l.bound == Bound::Compute)
    {
        rates.entry((l.family.as_str(), l.size.as_str())).or_insert(l.rate);
    }
    rates
}

/// A compute-bound case's rate as a percentage of the library's on the same shape in the run
/// (`libraries`: [`library_rates`]), where the benches did not set it (baselines merged from
/// PyTorch's anchors).
pub fn of_library(libraries: &HashMap<(&str, &str), f64>, case: &BenchCase) -> Option<f64> {
    libraries
        .get(&(case.family.as_str(), case.size.as_str()))
        .map(|library| 100.0 * case.rate / library)
}

/// `rust_over_cuda_c()` grouped by kernel, sizes ascending: the order of the table and the bars.
pub fn ratios(run: &BenchRun) -> Vec<(&BenchCase, f64)> {
    let mut pairs = run.rust_over_cuda_c();
    let ranks = kernel_ranks(run);
    let rank = |kernel: &str| ranks.get(kernel).copied().unwrap_or(usize::MAX);
    pairs.sort_by(|(a, _), (b, _)| rank(&a.kernel).cmp(&rank(&b.kernel)).then(a.x.total_cmp(&b.x)));
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

/// Text from the run data for a code span in a table cell: what ends the span (a backquote), the
/// cell (`|`) or the row (a line break) cannot stand in it; the rest shows as written.
pub fn code(raw: &str) -> String {
    let mut escaped = String::with_capacity(raw.len());
    for ch in raw.chars() {
        match ch {
            '`' => escaped.push('\''),
            '|' => escaped.push_str("\\|"),
            '\n' | '\r' | '\t' => escaped.push(' '),
            _ => escaped.push(ch),
        }
    }
    escaped
}
