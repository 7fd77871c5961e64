//! `bank-conflicts`: the bank rule against the hardware. For every stride from 1 to 64 elements
//! and every access width (4, 8, 16 bytes), the conflict degree the rule predicts
//! (`kernels::banks::conflict_degree`) beside the one the probe measures: cycles per warp request
//! over the conflict-free request's of the same width. Printed as one line per stride, the three
//! widths side by side; `--json` carries every reading, and the benches put them in the bench
//! report's plot.

use super::report::{Row, Status};
use kernels::banks::{BankProbe, MAX_STRIDE, PROBE_REQUESTS, PROBE_WARPS, conflict_degree, strided};
use kernels::bench_results::BankReading;
use kernels_host::families::bank_probe::measure;
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;

/// The access widths the study covers, bytes.
pub const WIDTHS: [u32; 3] = [4, 8, 16];

/// The accesses the seeds name, by (stride, width).
pub fn seed_example(stride: u32, width: u32) -> Option<&'static str> {
    match (stride, width) {
        (1, 4) => Some("s_data[threadIdx.x]"),
        (2, 4) => Some("s_data[threadIdx.x * 2]"),
        (32, 4) => Some("As[tx][ty], dense 32-wide tile"),
        (33, 4) => Some("As[tx][ty], tile padded to 33"),
        _ => None,
    }
}

/// One row per (width, stride); on the GPU each carries its reading.
pub fn run(backend: &Backend) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for width in WIDTHS {
        let mut baseline = None;
        for stride in 1..=MAX_STRIDE {
            let predicted = conflict_degree(&strided(stride, width), width);
            let example = seed_example(stride, width);
            let note = example.map(|s| format!(" ({s})")).unwrap_or_default();
            let mut row = Row::unmeasured(
                "bank-conflicts",
                &format!("{width}-byte reads"),
                &format!("stride {stride}"),
                backend,
            );
            let Backend::Gpu(_) = backend else {
                row.status = Status::Skipped;
                row.check = format!("predicted {predicted}×{note}; the emulator does not time banks");
                rows.push(row);
                continue;
            };
            let problem = BankProbe::new(stride as usize, width as usize)?;
            let cycles = measure(backend, &problem)?;
            let per_request = median(&cycles) / (PROBE_WARPS * PROBE_REQUESTS) as f64;
            let base = *baseline.get_or_insert(per_request);
            let measured = per_request / base;
            // The rate column carries the measured degree, "x" times the conflict-free request.
            row.rate = Some(measured);
            row.unit = Some("x");
            let reading = BankReading {
                width,
                stride,
                predicted,
                measured,
                cycles_per_request: per_request,
                example: example.map(str::to_string),
            };
            let matches = reading.matches();
            row.bank = Some(reading);
            let check =
                format!("predicted {predicted}×, measured {measured:.2}× ({per_request:.2} cycles per request){note}");
            rows.push(row.with_check(if matches { Ok(check) } else { Err(check) }));
        }
    }
    Ok(rows)
}

/// The study as a table: one line per stride, predicted and measured degree for each width, the
/// seeds' name for the access where they name one. Failed and skipped rows are listed after it.
pub fn print_study(rows: &[Row]) {
    let cells = |stride: u32| {
        WIDTHS
            .iter()
            .zip([9, 9, 10])
            .map(|(&width, pad)| {
                let predicted = conflict_degree(&strided(stride, width), width);
                let measured = rows
                    .iter()
                    .filter_map(|r| r.bank.as_ref())
                    .find(|b| b.width == width && b.stride == stride)
                    .map_or_else(|| "-".to_string(), |b| format!("{:.2}", b.measured));
                format!(" {predicted:>pad$} | {measured:>8} |")
            })
            .collect::<String>()
    };
    println!("| stride | 4 B: pred | measured | 8 B: pred | measured | 16 B: pred | measured | the seeds' access");
    println!("|-------:|----------:|---------:|----------:|---------:|-----------:|---------:|------------------");
    for stride in 1..=MAX_STRIDE {
        let example = WIDTHS.iter().find_map(|&w| seed_example(stride, w));
        let example = example.map(|e| format!(" {e}")).unwrap_or_default();
        println!("| {stride:>6} |{}{example}", cells(stride));
    }
    println!(
        "degree: shared-memory wavefronts per warp request (predicted, from the bank rule) and cycles per \
         request over stride 1's (measured); a match is within {:.0} %",
        BankReading::TOLERANCE * 100.0
    );
    let mismatches = rows.iter().filter(|r| r.status == Status::Failed).count();
    let measured = rows.iter().filter(|r| r.bank.is_some()).count();
    if measured > 0 {
        println!("{} of {measured} patterns measured as predicted", measured - mismatches);
    }
    if rows.iter().any(|r| r.status == Status::Skipped) {
        println!("measured: only on a GPU (the emulator does not time banks); the predicted degrees stand alone");
    }
    for row in rows.iter().filter(|r| r.status == Status::Failed) {
        println!("MISMATCH {} {}: {}", row.variant, row.size, row.check);
    }
}

fn median(values: &[u64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid] as f64
    } else {
        (sorted[mid - 1] + sorted[mid]) as f64 / 2.0
    }
}
