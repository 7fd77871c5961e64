//! `bank-conflicts`: the bank rule against the hardware. For every stride from 1 to 64 elements
//! and every access width (4, 8, 16 bytes), the conflict degree the rule predicts
//! (`kernels::banks::conflict_degree`) beside the one the probe measures: cycles per warp request
//! over the conflict-free request's of the same width.

use super::report::{Row, Status};
use crate::backend::Backend;
use crate::error::Result;
use crate::families::bank_probe::measure;
use kernels::banks::{BankProbe, MAX_STRIDE, PROBE_REQUESTS, PROBE_WARPS, conflict_degree, strided};

/// How far a measured degree may be from the predicted one and still match: the probe's loop and
/// clock reads add a little to every request.
const TOLERANCE: f64 = 0.15;

/// The accesses the seeds name, by (stride, width).
fn seed_example(stride: u32, width: u32) -> Option<&'static str> {
    match (stride, width) {
        (1, 4) => Some("s_data[threadIdx.x]"),
        (2, 4) => Some("s_data[threadIdx.x * 2]"),
        (32, 4) => Some("As[tx][ty], dense 32-wide tile"),
        (33, 4) => Some("As[tx][ty], tile padded to 33"),
        _ => None,
    }
}

pub fn run(backend: &Backend) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for width in [4u32, 8, 16] {
        let mut baseline = None;
        for stride in 1..=MAX_STRIDE {
            let predicted = conflict_degree(&strided(stride, width), width);
            let note = seed_example(stride, width)
                .map(|s| format!(" ({s})"))
                .unwrap_or_default();
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
            let matches = (measured - predicted).abs() <= TOLERANCE * predicted;
            let check =
                format!("predicted {predicted}×, measured {measured:.2}× ({per_request:.2} cycles per request){note}");
            rows.push(row.with_check(if matches { Ok(check) } else { Err(check) }));
        }
    }
    Ok(rows)
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
