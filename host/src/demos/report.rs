//! One row per measured variant, printed as a table or as JSON.

use crate::gpu::Timing;

/// A measured rate's ceiling, measured in the same run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Ceiling {
    pub name: String,
    pub rate: f64,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    pub demo: &'static str,
    pub variant: String,
    pub size: String,
    /// "gpu" or "emu".
    pub backend: &'static str,
    /// The kernel's entry name, the same for its Rust and CUDA C versions.
    pub kernel: String,
    /// "rust", "cuda_c" or "library" (cuBLAS, the copy engine).
    pub source: &'static str,
    /// The time the rate is computed from (kernel time, or end-to-end where `end_to_end_ms` says so).
    pub timing: Timing,
    pub rate: f64,
    /// "GB/s" or "TFLOP/s".
    pub unit: &'static str,
    pub ceiling: Option<Ceiling>,
    pub percent_of_ceiling: Option<f64>,
    pub check_passed: bool,
    pub check: String,
    /// Managed-memory demo: kernel time alone, and end to end (transfers, kernel, CPU read-back).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_to_end_ms: Option<f64>,
}

impl Row {
    /// A row whose rate is `work / time`: bytes → GB/s, flops → TFLOP/s.
    pub fn new(
        demo: &'static str,
        variant: impl Into<String>,
        size: impl Into<String>,
        backend: &'static str,
        timing: Timing,
        rate: Rate,
    ) -> Row {
        let (rate, unit) = rate.per_ms(timing.median_ms);
        let variant = variant.into();
        Row {
            demo,
            kernel: variant.clone(),
            source: "rust",
            variant,
            size: size.into(),
            backend,
            timing,
            rate,
            unit,
            ceiling: None,
            percent_of_ceiling: None,
            check_passed: false,
            check: "not checked".into(),
            kernel_ms: None,
            end_to_end_ms: None,
        }
    }

    pub fn with_ceiling(mut self, ceiling: Option<&Ceiling>) -> Row {
        if let Some(ceiling) = ceiling {
            self.percent_of_ceiling = Some(100.0 * self.rate / ceiling.rate);
            self.ceiling = Some(ceiling.clone());
        }
        self
    }

    /// Marks the row as measuring `kernel` compiled from `source`.
    pub fn from_source(mut self, kernel: &str, source: &'static str) -> Row {
        self.kernel = kernel.to_string();
        self.source = source;
        if source == "cuda_c" {
            self.variant = format!("{kernel} (CUDA C)");
        }
        self
    }

    pub fn with_check(mut self, check: std::result::Result<String, String>) -> Row {
        (self.check_passed, self.check) = match check {
            Ok(detail) => (true, detail),
            Err(detail) => (false, detail),
        };
        self
    }
}

/// The work a run does, to turn its time into a rate.
#[derive(Clone, Copy, Debug)]
pub enum Rate {
    Bytes(f64),
    Flops(f64),
}

impl Rate {
    fn per_ms(self, ms: f64) -> (f64, &'static str) {
        match self {
            Rate::Bytes(bytes) => (bytes / (ms * 1e-3) / 1e9, "GB/s"),
            Rate::Flops(flops) => (flops / (ms * 1e-3) / 1e12, "TFLOP/s"),
        }
    }
}

pub fn print_table(rows: &[Row]) {
    println!(
        "| {:<10} | {:<22} | {:<16} | {:>10} | {:>16} | {:>9} | {:<5} |",
        "demo", "variant", "size", "median ms", "rate", "% ceiling", "check"
    );
    println!(
        "|{:-<12}|{:-<24}|{:-<18}|{:->12}|{:->18}|{:->11}|{:-<7}|",
        "", "", "", "", "", "", ""
    );
    for row in rows {
        let percent = row
            .percent_of_ceiling
            .map(|p| format!("{p:.1}"))
            .unwrap_or_else(|| "-".into());
        println!(
            "| {:<10} | {:<22} | {:<16} | {:>10.4} | {:>8.2} {:<7} | {:>9} | {:<5} |",
            row.demo,
            row.variant,
            row.size,
            row.timing.median_ms,
            row.rate,
            row.unit,
            percent,
            if row.check_passed { "pass" } else { "FAIL" }
        );
    }
    let ceilings: Vec<String> = {
        let mut seen: Vec<String> = Vec::new();
        for c in rows.iter().filter_map(|r| r.ceiling.as_ref()) {
            let text = format!("{}: {:.1}", c.name, c.rate);
            if !seen.contains(&text) {
                seen.push(text);
            }
        }
        seen
    };
    if !ceilings.is_empty() {
        println!("ceilings measured in this run: {}", ceilings.join("; "));
    }
    for (rust, cuda) in rust_cuda_pairs(rows) {
        println!(
            "{} {}: Rust {:.2} {}, CUDA C {:.2} {}: Rust/CUDA C = {:.3}",
            rust.kernel,
            rust.size,
            rust.rate,
            rust.unit,
            cuda.rate,
            cuda.unit,
            rust.rate / cuda.rate
        );
    }
    for row in rows.iter().filter(|r| !r.check_passed) {
        println!("FAILED {} {}: {}", row.demo, row.variant, row.check);
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

/// Rows of the same kernel and size measured from Rust and from CUDA C.
pub fn rust_cuda_pairs(rows: &[Row]) -> Vec<(&Row, &Row)> {
    rows.iter()
        .filter(|r| r.source == "rust")
        .filter_map(|rust| {
            rows.iter()
                .find(|c| c.source == "cuda_c" && c.kernel == rust.kernel && c.size == rust.size && c.demo == rust.demo)
                .map(|cuda| (rust, cuda))
        })
        .collect()
}
