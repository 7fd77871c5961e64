//! One row per measured variant, printed as a table or as JSON.

use kernels::Source;
use kernels::bench_results::BankReading;
use kernels_host::families::Work;
use ptxkit_runtime::Backend;
use ptxkit_runtime::Timing;

/// A measured rate's ceiling, measured in the same run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Ceiling {
    pub name: String,
    pub rate: f64,
}

/// Whether a row's result was checked and passed, failed, or was not run here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Passed,
    Failed,
    /// Not run on this backend (the reason is in the row's `check`).
    Skipped,
}

/// One measured (or skipped) variant.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    /// The family (or "managed").
    pub demo: String,
    /// What was run: a kernel's entry name, a library call, a managed-memory scenario.
    pub variant: String,
    /// The registered kernel, where the row measures one.
    pub kernel: Option<String>,
    /// Its compilation; absent for library baselines (cuBLAS, the copy engines) and scenarios.
    pub source: Option<Source>,
    pub size: String,
    /// "gpu" or "emu".
    pub backend: &'static str,
    /// The time the rate is computed from (kernel time, or end to end where `end_to_end_ms` says
    /// so); absent where nothing was timed.
    pub timing: Option<Timing>,
    pub rate: Option<f64>,
    /// "GB/s" or "TFLOP/s".
    pub unit: Option<&'static str>,
    pub ceiling: Option<Ceiling>,
    pub percent_of_ceiling: Option<f64>,
    pub status: Status,
    /// What the check found, or why the row was skipped.
    pub check: String,
    /// Managed-memory demo: kernel time alone, and end to end (transfers, kernel, CPU read-back).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_to_end_ms: Option<f64>,
    /// Bank-conflict study: the pattern, predicted beside measured (`bank-conflicts` on a GPU).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bank: Option<BankReading>,
}

impl Row {
    /// A row for `timing` of `variant`, its rate from the work a run does (none for probes).
    pub fn measured(demo: &str, variant: &str, size: &str, backend: &Backend, timing: Timing, work: &Work) -> Row {
        let rate = work.rate(timing.median_ms);
        Row {
            timing: Some(timing),
            rate: rate.map(|(rate, _)| rate),
            unit: rate.map(|(_, unit)| unit),
            ..Row::unmeasured(demo, variant, size, backend)
        }
    }

    /// A row for a run that was checked but not timed.
    pub fn unmeasured(demo: &str, variant: &str, size: &str, backend: &Backend) -> Row {
        Row {
            demo: demo.to_string(),
            variant: variant.to_string(),
            kernel: None,
            source: None,
            size: size.to_string(),
            backend: backend.name(),
            timing: None,
            rate: None,
            unit: None,
            ceiling: None,
            percent_of_ceiling: None,
            status: Status::Failed,
            check: "not checked".into(),
            kernel_ms: None,
            end_to_end_ms: None,
            bank: None,
        }
    }

    /// A row for a demo that cannot run on this backend, and why.
    pub fn skipped(demo: &str, backend: &Backend, why: &str) -> Row {
        Row {
            status: Status::Skipped,
            check: why.to_string(),
            ..Row::unmeasured(demo, "-", "-", backend)
        }
    }

    pub fn with_ceiling(mut self, ceiling: Option<&Ceiling>) -> Row {
        if let (Some(ceiling), Some(rate)) = (ceiling, self.rate) {
            self.percent_of_ceiling = Some(100.0 * rate / ceiling.rate);
            self.ceiling = Some(ceiling.clone());
        }
        self
    }

    /// Marks the row as measuring the registered kernel `entry` compiled from `source`.
    pub fn from_kernel(mut self, entry: &str, source: Source) -> Row {
        self.kernel = Some(entry.to_string());
        self.source = Some(source);
        if source == Source::CudaC {
            self.variant = format!("{entry} (CUDA C)");
        }
        self
    }

    pub fn with_check(mut self, check: std::result::Result<String, String>) -> Row {
        (self.status, self.check) = match check {
            Ok(detail) => (Status::Passed, detail),
            Err(detail) => (Status::Failed, detail),
        };
        self
    }

    pub fn failed(&self) -> bool {
        self.status == Status::Failed
    }
}

pub fn print_table(rows: &[Row]) {
    println!(
        "| {:<14} | {:<28} | {:<16} | {:>10} | {:>16} | {:>9} | {:<5} |",
        "demo", "variant", "size", "median ms", "rate", "% ceiling", "check"
    );
    println!(
        "|{:-<16}|{:-<30}|{:-<18}|{:->12}|{:->18}|{:->11}|{:-<7}|",
        "", "", "", "", "", "", ""
    );
    let dash = || "-".to_string();
    for row in rows {
        let median = row.timing.map_or_else(dash, |t| format!("{:.4}", t.median_ms));
        let rate = match (row.rate, row.unit) {
            (Some(rate), Some(unit)) => format!("{rate:>8.2} {unit:<7}"),
            _ => dash(),
        };
        let percent = row.percent_of_ceiling.map_or_else(dash, |p| format!("{p:.1}"));
        let status = match row.status {
            Status::Passed => "pass",
            Status::Failed => "FAIL",
            Status::Skipped => "skip",
        };
        println!(
            "| {:<14} | {:<28} | {:<16} | {:>10} | {:>16} | {:>9} | {:<5} |",
            row.demo, row.variant, row.size, median, rate, percent, status
        );
    }
    let mut ceilings: Vec<String> = Vec::new();
    for c in rows.iter().filter_map(|r| r.ceiling.as_ref()) {
        let text = format!("{}: {:.1}", c.name, c.rate);
        if !ceilings.contains(&text) {
            ceilings.push(text);
        }
    }
    if !ceilings.is_empty() {
        println!("ceilings measured in this run: {}", ceilings.join("; "));
    }
    for (rust, cuda, ratio) in rust_cuda_pairs(rows) {
        println!(
            "{} {}: Rust {:.2} {unit}, CUDA C {:.2} {unit}: Rust/CUDA C = {ratio:.3}",
            rust.variant,
            rust.size,
            rust.rate.unwrap_or(f64::NAN),
            cuda.rate.unwrap_or(f64::NAN),
            unit = rust.unit.unwrap_or_default(),
        );
    }
    for row in rows.iter().filter(|r| r.status != Status::Passed) {
        let what = if row.status == Status::Skipped {
            "SKIPPED"
        } else {
            "FAILED"
        };
        println!("{what} {} {}: {}", row.demo, row.variant, row.check);
    }
    for row in rows.iter().filter(|r| r.kernel_ms.is_some()) {
        println!(
            "{} {}: end to end {:.3} ms, kernel {:.3} ms; {}",
            row.demo,
            row.variant,
            row.end_to_end_ms.unwrap_or(f64::NAN),
            row.kernel_ms.unwrap_or(f64::NAN),
            row.check
        );
    }
}

/// Today's date in UTC, `YYYY-MM-DD`, from the system clock.
pub fn utc_date() -> String {
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() / 86_400)
        .unwrap_or(0) as i64;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Rows of the same kernel and size measured from Rust and from CUDA C, with Rust's rate over CUDA
/// C's.
pub fn rust_cuda_pairs(rows: &[Row]) -> Vec<(&Row, &Row, f64)> {
    rows.iter()
        .filter(|r| r.source == Some(Source::Rust))
        .filter_map(|rust| {
            let cuda = rows.iter().find(|c| {
                c.source == Some(Source::CudaC) && c.kernel == rust.kernel && c.size == rust.size && c.demo == rust.demo
            })?;
            Some((rust, cuda, rust.rate? / cuda.rate?))
        })
        .collect()
}
