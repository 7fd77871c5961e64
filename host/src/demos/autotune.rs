//! `host autotune`: times every tile configuration of each family that has several, at the
//! family's bench shapes, and makes the device's tile profile (JSON) that the chooser reads
//! (`KERNELS_TILE_PROFILE`, or carried in `host/profiles/`). Beside each shape's fastest it shows
//! what the occupancy rule alone would pick and how far that is from the fastest.

use super::{Row, Settings, run_family};
use kernels::Source;
use kernels_host::families::profile::{Profile, Shape};
use kernels_host::families::{FamilyDemo, choice, kernel_index};
use ptxkit_runtime::Backend;
use ptxkit_runtime::{Error, Result};

/// One shape's outcome, for the printed table.
pub struct Tuned {
    pub family: &'static str,
    pub label: String,
    /// (entry, median ms) per configuration, in the family's order of them.
    pub medians: Vec<(&'static str, f64)>,
    /// The occupancy rule's pick.
    pub rule: &'static str,
}

impl Tuned {
    /// The fastest configuration and its median.
    pub fn fastest(&self) -> (&'static str, f64) {
        self.medians
            .iter()
            .copied()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .expect("a family with configurations has at least two")
    }

    /// The rule's pick's time over the fastest's (1.0 when it picks the fastest).
    pub fn rule_slowdown(&self) -> f64 {
        let fastest = self.fastest().1;
        let rule = self.medians.iter().find(|m| m.0 == self.rule).map_or(f64::NAN, |m| m.1);
        rule / fastest
    }
}

/// Every family of `families` with several configurations, at each of its bench shapes: the
/// rows of every run (each checked), the outcome per shape, and the profile.
pub fn run(
    backend: &Backend,
    settings: &Settings,
    families: &[&'static dyn FamilyDemo],
    measured: String,
) -> Result<(Vec<Row>, Vec<Tuned>, Profile)> {
    let Backend::Gpu(gpu) = backend else {
        return Err(Error::NeedsGpu {
            what: "autotune".into(),
            why: "it times each tile configuration on the device the profile is for",
        });
    };
    let tunable: Vec<_> = families
        .iter()
        .filter(|f| f.choice().configurations().len() >= 2)
        .collect();
    // Every shape is checked before the first kernel runs.
    for family in &tunable {
        for size in family.sizes().bench {
            family.check(backend, size, 1)?;
        }
    }
    let (mut rows, mut tuned, mut shapes) = (Vec::new(), Vec::new(), Vec::new());
    for family in tunable {
        let entries = family.choice().configurations();
        let indices: Vec<usize> = entries
            .iter()
            .map(|e| kernel_index(*family, e).expect("configurations name kernels of the family (tested)"))
            .collect();
        for size in family.sizes().bench {
            eprintln!("autotune: {} at {}", family.name(), family.label(size));
            let measured_rows = run_family(backend, settings, *family, size, &indices)?;
            let medians: Vec<(&'static str, f64)> = entries
                .iter()
                .filter_map(|&entry| {
                    measured_rows
                        .iter()
                        .find(|r| r.kernel.as_deref() == Some(entry) && r.source == Some(Source::Rust))
                        .and_then(|r| r.timing.as_ref())
                        .map(|t| (entry, t.median_ms))
                })
                .collect();
            let rule = choice::by_occupancy(gpu, *family, size)?.map_or(entries[0], |c| c.entry);
            shapes.push(Shape {
                family: family.name().to_string(),
                size: size.0,
                medians_ms: medians.iter().map(|&(e, ms)| (e.to_string(), ms)).collect(),
            });
            tuned.push(Tuned {
                family: family.name(),
                label: family.label(size),
                medians,
                rule,
            });
            rows.extend(measured_rows);
        }
    }
    let info = gpu.info();
    let profile = Profile {
        device: info.name.clone(),
        compute_capability: info.compute_capability,
        measured,
        shapes,
    };
    Ok((rows, tuned, profile))
}

/// The per-shape table: each configuration's median, the fastest, the rule's pick and its cost.
pub fn print(tuned: &[Tuned]) {
    println!(
        "| {:<8} | {:<24} | {:<44} | {:<26} | {:<26} | {:>9} |",
        "family", "shape", "medians (ms), configuration order", "fastest", "occupancy rule", "rule/best"
    );
    println!(
        "|{:-<10}|{:-<26}|{:-<46}|{:-<28}|{:-<28}|{:->11}|",
        "", "", "", "", "", ""
    );
    for t in tuned {
        let medians: Vec<String> = t.medians.iter().map(|m| format!("{:.4}", m.1)).collect();
        println!(
            "| {:<8} | {:<24} | {:<44} | {:<26} | {:<26} | {:>9.3} |",
            t.family,
            t.label,
            medians.join(", "),
            t.fastest().0,
            t.rule,
            t.rule_slowdown()
        );
    }
}
