//! `multi-gpu peer`: what the link between two GPUs carries. For each ordered pair of the devices:
//! the copy engine's copy pushed by the source, pulled by the destination, both directions at once,
//! and the one-pass sum kernel on the destination reading the source's memory in place (peer
//! access, no copy), which is rated against the copy engine's one-direction rate measured in the
//! same run. The sum kernel on local memory gives each GPU's own read rate beside it.

use super::{SumReader, device_names, gpu_of, time_across};
use crate::demos::{Ceiling, Row, Settings};
use cudarc::driver::CudaSlice;
use kernels_host::families::{Bound, Work};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::{CopyBy, Gpu, PeerView, copy_between, exchange};

const DEMO: &str = "multi-gpu peer";

pub fn run(backends: &[Backend], settings: &Settings, n: usize) -> Result<Vec<Row>> {
    let gpus = super::gpus_of(backends)?;
    let bytes = (n * size_of::<f32>()) as f64;
    let moved = |bytes| Work {
        bytes,
        flops: 0.0,
        bound: Bound::Memory,
    };
    // One source array and one landing array per GPU; the source holds grid values whose exact
    // sum the reading kernel must reproduce.
    let mut sources = Vec::new();
    let mut landings: Vec<CudaSlice<f32>> = Vec::new();
    let mut readers = Vec::new();
    for (i, backend) in backends.iter().enumerate() {
        let gpu = gpu_of(backend)?;
        let values = kernels_host::families::reduce::grid_inputs(settings.rng.wrapping_add(i as u64), n);
        sources.push((
            gpu.upload(&values[..n])?,
            kernels_host::families::reduce::exact_sums(&values[..n]),
        ));
        landings.push(gpu.zeros(n)?);
        readers.push(SumReader::new(backend, n)?);
    }
    let mut rows = Vec::new();
    for (i, backend) in backends.iter().enumerate() {
        let gpu = gpus[i];
        let (source, exact) = &sources[i];
        let timing = time_across(&[gpu], settings, || readers[i].launch(backend, source))?;
        let check = readers[i].checked(backend, source, *exact);
        rows.push(
            Row::measured(
                DEMO,
                &format!("sum kernel on {} reading its own memory", gpu.info().ordinal),
                &format!("n={n}"),
                backend,
                timing,
                &moved(bytes),
            )
            .with_check(check),
        );
    }
    for (i, j) in pairs(gpus.len()) {
        let (from, to) = (gpus[i], gpus[j]);
        let label = format!("{}->{}", from.info().ordinal, to.info().ordinal);
        let size = format!("n={n}, devices {}", device_names(&[from, to]));
        let (source, exact) = &sources[i];
        let copy_row = |by: CopyBy, landings: &mut Vec<CudaSlice<f32>>| -> Result<Row> {
            let timing = time_across(&[from, to], settings, || {
                copy_between(from, source, 0, to, &mut landings[j], 0, n, by)
            })?;
            let check = same_bits(to, &landings[j], from, source);
            let how = match by {
                CopyBy::Source => "pushed by the source",
                CopyBy::Destination => "pulled by the destination",
            };
            Ok(Row::measured(
                DEMO,
                &format!("copy {label}, {how}"),
                &size,
                &backends[i],
                timing,
                &moved(bytes),
            )
            .with_check(check))
        };
        let pushed = copy_row(CopyBy::Source, &mut landings)?;
        let ceiling = pushed.rate.map(|rate| Ceiling {
            name: format!("copy engine {label}"),
            rate,
        });
        rows.push(pushed);
        rows.push(copy_row(CopyBy::Destination, &mut landings)?.with_ceiling(ceiling.as_ref()));
        {
            let view = PeerView::new(from, source, to)?;
            let timing = time_across(&[to], settings, || readers[j].launch(&backends[j], &view))?;
            let check = readers[j].checked(&backends[j], &view, *exact);
            rows.push(
                Row::measured(
                    DEMO,
                    &format!(
                        "sum kernel on {} reading {}'s memory",
                        to.info().ordinal,
                        from.info().ordinal
                    ),
                    &size,
                    &backends[j],
                    timing,
                    &moved(bytes),
                )
                .with_check(check)
                .with_ceiling(ceiling.as_ref()),
            );
        }
        if i < j {
            let (low, high) = landings.split_at_mut(j);
            let (a_dst, b_dst) = (&mut low[i], &mut high[0]);
            let timing = time_across(&[from, to], settings, || {
                exchange(from, source, a_dst, to, &sources[j].0, b_dst)
            })?;
            let check = same_bits(to, b_dst, from, source).and_then(|_| same_bits(from, a_dst, to, &sources[j].0));
            let both = ceiling.as_ref().map(|c| Ceiling {
                name: format!("{} (one direction, doubled)", c.name),
                rate: 2.0 * c.rate,
            });
            rows.push(
                Row::measured(
                    DEMO,
                    &format!(
                        "copies both ways at once {}<->{}",
                        from.info().ordinal,
                        to.info().ordinal
                    ),
                    &size,
                    &backends[i],
                    timing,
                    &moved(2.0 * bytes),
                )
                .with_check(check)
                .with_ceiling(both.as_ref()),
            );
        }
    }
    Ok(rows)
}

/// Every ordered pair of distinct positions in a list of `count` devices.
fn pairs(count: usize) -> Vec<(usize, usize)> {
    (0..count)
        .flat_map(|i| (0..count).filter(move |&j| j != i).map(move |j| (i, j)))
        .collect()
}

/// Whether `landed` (on `to`) holds `source`'s (on `from`) bits.
fn same_bits(
    to: &Gpu,
    landed: &CudaSlice<f32>,
    from: &Gpu,
    source: &CudaSlice<f32>,
) -> std::result::Result<String, String> {
    let got = to.download(landed).map_err(|e| e.to_string())?;
    let want = from.download(source).map_err(|e| e.to_string())?;
    match got.iter().zip(&want).position(|(g, w)| g.to_bits() != w.to_bits()) {
        None => Ok(format!("all {} floats arrived bit for bit", want.len())),
        Some(at) => Err(format!("float {at} arrived as {}, sent as {}", got[at], want[at])),
    }
}
