//! `host autotune`: times every tile configuration of each family that has several, at the
//! family's bench shapes (and with `--models`, at the model-shape suite's products that run on its
//! tiles: [`tuned_shapes`]), and makes the device's tile profile (JSON) that the chooser reads
//! (`KERNELS_TILE_PROFILE`, or carried in `host/library/profiles/`). Beside each shape's fastest it shows
//! what the rule alone would pick (the family's own prediction, else the occupancy rule:
//! [`choice::rule`]) and how far that is from the fastest.

use super::{Row, Settings, run_family};
use kernels::Source;
use kernels_host::families::auto::Target;
use kernels_host::families::profile::{Profile, Shape};
use kernels_host::families::{FamilyDemo, Size, choice, kernel_index};
use ptxkit_runtime::Backend;
use ptxkit_runtime::{Error, Result};

/// One shape's outcome, for the printed table.
pub struct Tuned {
    pub family: &'static str,
    pub label: String,
    /// (entry, median ms) per configuration, in the family's order of them.
    pub medians: Vec<(&'static str, f64)>,
    /// The rule's pick ([`choice::rule`]).
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

/// The shapes `family` is tuned at: its bench shapes, then where `models`, the products of the
/// model-shape suite ([`super::models::shapes`]) of the family's dtype that `auto` runs on its
/// tile configurations (not those a rung named for the shape takes, as the small-m rungs take
/// decoding's), each once.
pub fn tuned_shapes(family: &dyn FamilyDemo, models: bool) -> Vec<Size> {
    let mut sizes = family.sizes().bench;
    let tuned_family = super::models::DTYPES.iter().any(|&(_, name)| name == family.name());
    if models && tuned_family {
        for (size, _) in super::models::shapes() {
            let tiled = family
                .choice()
                .fastest_rung(Target { sm90a: true, sms: None }, size)
                .is_none();
            if tiled && !sizes.contains(&size) {
                sizes.push(size);
            }
        }
    }
    sizes
}

/// Every family of `families` with several configurations, at each of its [`tuned_shapes`]: the rows of
/// every run (each checked), the outcome per shape, and the profile.
pub fn run(
    backend: &Backend,
    settings: &Settings,
    families: &[&'static dyn FamilyDemo],
    models: bool,
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
        for size in tuned_shapes(**family, models) {
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
        for size in tuned_shapes(*family, models) {
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
            let rule = choice::rule(gpu, *family, size)?.map_or(entries[0], |c| c.entry);
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
        sms: Some(info.sm_count),
        measured,
        shapes,
    };
    Ok((rows, tuned, profile))
}

/// The per-shape table: each configuration's median, the fastest, the rule's pick and its cost.
pub fn print(tuned: &[Tuned]) {
    println!(
        "| {:<8} | {:<24} | {:<44} | {:<26} | {:<26} | {:>9} |",
        "family", "shape", "medians (ms), configuration order", "fastest", "rule", "rule/best"
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

#[cfg(test)]
mod tests {
    use super::*;

    /// With `--models`, the f32 ladder is tuned at the suite's products past its small-m rungs as
    /// well, each once; the other tunable families at their bench shapes only.
    #[test]
    fn the_suite_adds_the_products_the_tiles_run() {
        let matmul = kernels_host::families::find("matmul").unwrap();
        let bench = matmul.sizes().bench;
        let tuned = tuned_shapes(matmul, true);
        assert_eq!(tuned_shapes(matmul, false), bench);
        assert!(tuned.len() > bench.len());
        assert!(tuned.contains(&Size([128, 10240, 8192])));
        assert!(tuned.contains(&Size([512, 4096, 14336])));
        assert!(
            !tuned.contains(&Size([16, 10240, 8192])),
            "16 rows go to a small-m rung"
        );
        for (i, size) in tuned.iter().enumerate() {
            assert!(!tuned[..i].contains(size), "{size:?} twice");
        }
        let transpose = kernels_host::families::find("transpose").unwrap();
        assert_eq!(tuned_shapes(transpose, true), transpose.sizes().bench);
    }
}
