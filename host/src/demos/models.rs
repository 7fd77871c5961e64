//! `host models`: the matrix products of real models (`benches/shapes/models.json`, the suite
//! `host/python/bench_models.py` runs against PyTorch) on the kernel `--variant auto` picks,
//! against cuBLAS in the same process, each product checked against the f64 reference as every
//! family run is. After the table, each dtype's geometric mean and worst shape against cuBLAS.

use super::{Row, Settings, Status};
use kernels::Source;
use kernels_host::families::{self, FamilyDemo, Size};
use ptxkit_runtime::{Backend, Error, Result};

/// The suite, one home for the Rust and the Python side.
const SUITE: &str = include_str!("../../../benches/shapes/models.json");

/// The dtypes `--dtypes` takes, each the family that runs it: bf16 operands give bf16 C as
/// PyTorch's `a @ b` does, or f32 C (`bf16-f32`).
pub const DTYPES: [(&str, &str); 4] = [
    ("f32", "matmul"),
    ("tf32", "matmul_tc"),
    ("bf16", "matmul_bf16_rounded"),
    ("bf16-f32", "matmul_bf16"),
];

/// What `host models` is told to run: the families of the dtypes asked for, and the token counts
/// (m) whose products to run (all where `None`).
pub struct Plan {
    pub families: Vec<&'static dyn FamilyDemo>,
    pub tokens: Option<Vec<usize>>,
}

/// `--dtypes f32,tf32,bf16,bf16-f32` (any of them, in any order) and `--tokens 1,16` (any of the suite's
/// token counts; all where absent).
pub fn plan(dtypes: &str, tokens: Option<&str>) -> Result<Plan> {
    let mut families = Vec::new();
    for name in dtypes.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let family = DTYPES
            .iter()
            .find(|(dtype, _)| *dtype == name)
            .and_then(|(_, family)| families::find(family))
            .ok_or_else(|| Error::InvalidInput {
                what: "--dtypes".into(),
                reason: format!(
                    "'{name}' is not a dtype of the suite: give a comma-separated list of {}",
                    DTYPES.map(|(d, _)| d).join(", ")
                ),
            })?;
        if !families.iter().any(|f: &&dyn FamilyDemo| f.name() == family.name()) {
            families.push(family);
        }
    }
    if families.is_empty() {
        return Err(Error::InvalidInput {
            what: "--dtypes".into(),
            reason: "give at least one dtype".into(),
        });
    }
    let tokens = tokens.map(parse_tokens).transpose()?;
    Ok(Plan { families, tokens })
}

/// `--tokens`: a comma-separated list of the suite's token counts.
fn parse_tokens(list: &str) -> Result<Vec<usize>> {
    let suite: Vec<usize> = {
        let mut all: Vec<usize> = shapes().iter().map(|(size, _)| size.0[0]).collect();
        all.sort_unstable();
        all.dedup();
        all
    };
    let invalid = |reason: String| Error::InvalidInput {
        what: "--tokens".into(),
        reason,
    };
    let listed = || suite.iter().map(usize::to_string).collect::<Vec<_>>().join(", ");
    let mut tokens = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let m: usize = item
            .parse()
            .map_err(|_| invalid(format!("'{item}' is not a token count: give some of {}", listed())))?;
        if !suite.contains(&m) {
            return Err(invalid(format!(
                "no product of the suite has {m} tokens: give some of {}",
                listed()
            )));
        }
        tokens.push(m);
    }
    if tokens.is_empty() {
        return Err(invalid(format!("give at least one token count, of {}", listed())));
    }
    Ok(tokens)
}

/// The suite's distinct products (m, n, k), in file order, each with the model layers using it.
pub fn shapes() -> Vec<(Size, Vec<String>)> {
    let malformed = |what: &str| -> ! { panic!("benches/shapes/models.json: {what} (its test says where)") };
    let suite: serde_json::Value = serde_json::from_str(SUITE).unwrap_or_else(|_| malformed("not JSON"));
    let number = |v: &serde_json::Value| -> usize {
        v.as_u64()
            .filter(|&x| (1..1 << 31).contains(&x))
            .map(|x| x as usize)
            .unwrap_or_else(|| malformed("an extent that is not a positive 32-bit integer"))
    };
    let mut shapes: Vec<(Size, Vec<String>)> = Vec::new();
    for model in suite["models"].as_array().unwrap_or_else(|| malformed("no models")) {
        let name = model["name"]
            .as_str()
            .unwrap_or_else(|| malformed("a model without a name"));
        for layer in model["layers"]
            .as_array()
            .unwrap_or_else(|| malformed("a model without layers"))
        {
            let tokens = layer.get("tokens").unwrap_or(&model["tokens"]);
            let layer_name = layer["name"]
                .as_str()
                .unwrap_or_else(|| malformed("a layer without a name"));
            for m in tokens.as_array().unwrap_or_else(|| malformed("no token counts")) {
                let size = Size([number(m), number(&layer["n"]), number(&layer["k"])]);
                let use_ = format!("{name} {layer_name} ×{}", size.0[0]);
                match shapes.iter_mut().find(|(s, _)| *s == size) {
                    Some((_, uses)) => uses.push(use_),
                    None => shapes.push((size, vec![use_])),
                }
            }
        }
    }
    shapes
}

/// Every product of the suite on each family's automatic choice, with cuBLAS beside it (GPU only:
/// the emulator runs neither cuBLAS nor the sm_90a rungs, and not at these sizes).
pub fn run(backend: &Backend, settings: &Settings, plan: &Plan) -> Result<Vec<Row>> {
    if !matches!(backend, Backend::Gpu(_)) {
        return Err(Error::InvalidInput {
            what: "models".into(),
            reason: "the suite runs against cuBLAS on a GPU; run it with --backend gpu on an NVIDIA GPU".into(),
        });
    }
    let shapes: Vec<_> = shapes()
        .into_iter()
        .filter(|(size, _)| plan.tokens.as_ref().is_none_or(|tokens| tokens.contains(&size.0[0])))
        .collect();
    for family in &plan.families {
        for (size, _) in &shapes {
            family.check(backend, *size, 1)?;
        }
    }
    let mut rows = Vec::new();
    for family in &plan.families {
        for (done, (size, uses)) in shapes.iter().enumerate() {
            let auto = families::auto::auto(backend, *family, *size)?.ok_or_else(|| Error::InvalidInput {
                what: "models".into(),
                reason: format!("{} has no automatic choice", family.name()),
            })?;
            let measured = super::run_family(backend, settings, *family, *size, &[auto.kernel])?;
            // A line per product as it ends, terminal or log: the suite takes minutes per dtype.
            let ratio = measured
                .iter()
                .find(|r| r.source == Some(Source::Rust))
                .and_then(|ours| against_library(&measured, ours));
            eprintln!(
                "models: {} {}/{} {} ({}): {} {}",
                family.name(),
                done + 1,
                shapes.len(),
                family.label(*size),
                uses[0],
                auto.entry,
                ratio.map_or("not timed".into(), |r| format!("{r:.3}× cuBLAS"))
            );
            rows.extend(measured);
        }
    }
    Ok(rows)
}

/// `kernel`'s rate over that of the library row of its family and size in `rows`, where both
/// were timed.
fn against_library(rows: &[Row], kernel: &Row) -> Option<f64> {
    let library = rows
        .iter()
        .find(|r| r.demo == kernel.demo && r.size == kernel.size && r.kernel.is_none() && r.source.is_none())?;
    let (ours, theirs) = (kernel.rate?, library.rate?);
    (theirs > 0.0).then(|| ours / theirs)
}

/// Each family's speed against cuBLAS over the suite: the geometric mean of the Rust kernel's
/// rate over the library's at each product, the worst product, and how many fall below 0.85×.
pub fn summary(rows: &[Row]) -> Vec<String> {
    let mut lines = Vec::new();
    for (dtype, family) in DTYPES {
        let mut ratios: Vec<(f64, &str)> = Vec::new();
        for kernel in rows
            .iter()
            .filter(|r| r.demo == family && r.source == Some(Source::Rust))
        {
            if let Some(ratio) = against_library(rows, kernel)
                && kernel.status == Status::Passed
            {
                ratios.push((ratio, &kernel.size));
            }
        }
        if ratios.is_empty() {
            continue;
        }
        let geomean = (ratios.iter().map(|(r, _)| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
        let (worst, at) = ratios
            .iter()
            .copied()
            .fold((f64::INFINITY, ""), |a, b| if b.0 < a.0 { b } else { a });
        let below = ratios.iter().filter(|(r, _)| *r < 0.85).count();
        lines.push(format!(
            "{dtype}: {} products, geomean {geomean:.3}× cuBLAS, worst {worst:.3}× at {at}, {below} below 0.85×",
            ratios.len()
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suite_has_the_products_the_python_side_runs() {
        let shapes = shapes();
        // As host/python/tests/test_model_shapes.py counts them.
        assert_eq!(shapes.len(), 97);
        for wanted in [
            [1, 6144, 4096],
            [1024, 50257, 768],
            [12608, 768, 768],
            [8192, 28672, 4096],
        ] {
            assert!(shapes.iter().any(|(s, _)| s.0 == wanted), "{wanted:?}");
        }
        assert!(shapes.iter().all(|(_, uses)| !uses.is_empty()));
    }

    #[test]
    fn dtypes_name_the_families_and_refuse_others() {
        let plan = plan("bf16, f32,bf16,bf16-f32", None).unwrap();
        let names: Vec<&str> = plan.families.iter().map(|f| f.name()).collect();
        assert_eq!(names, ["matmul_bf16_rounded", "matmul", "matmul_bf16"]);
        let error = plan_error("fp8");
        assert!(
            error.contains("--dtypes") && error.contains("f32, tf32, bf16, bf16-f32"),
            "{error}"
        );
        assert!(plan_error(",").contains("at least one"));
    }

    #[test]
    fn tokens_pick_the_suites_token_counts_and_refuse_others() {
        let plan = plan("f32", Some("16, 1")).unwrap();
        assert_eq!(plan.tokens, Some(vec![16, 1]));
        for (tokens, wanted) in [
            ("3", "no product of the suite has 3 tokens"),
            ("x", "'x' is not"),
            (",", "at least one"),
        ] {
            let error = match super::plan("f32", Some(tokens)) {
                Ok(_) => panic!("--tokens {tokens} accepted"),
                Err(e) => e.to_string(),
            };
            assert!(error.contains("--tokens") && error.contains(wanted), "{error}");
            assert!(error.contains("1, 16, 128"), "{error}");
        }
    }

    fn plan_error(dtypes: &str) -> String {
        match plan(dtypes, None) {
            Ok(_) => panic!("{dtypes} accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn the_summary_rates_each_kernel_against_the_library_at_its_size() {
        let backend = Backend::Emu;
        let row = |kernel: Option<&str>, source: Option<Source>, size: &str, rate: f64| Row {
            kernel: kernel.map(str::to_string),
            source,
            rate: Some(rate),
            status: Status::Passed,
            ..Row::unmeasured("matmul", "x", size, &backend)
        };
        let rows = [
            row(None, None, "1x2x3", 10.0),
            row(Some("matmul_tiled"), Some(Source::Rust), "1x2x3", 5.0),
            row(None, None, "4x5x6", 10.0),
            row(Some("matmul_tiled"), Some(Source::Rust), "4x5x6", 20.0),
        ];
        let lines = summary(&rows);
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].starts_with("f32: 2 products, geomean 1.000× cuBLAS, worst 0.500× at 1x2x3, 1 below"),
            "{}",
            lines[0]
        );
    }
}
