//! `multi-gpu managed`: one managed buffer used by the first two devices of the list, GPU A and
//! GPU B.
//! - Prefetched from A to B and back: the driver's migration between GPUs.
//! - Preferred location A, accessed-by B: B's kernel reads A-resident pages through a mapping, over
//!   the link, without migrating them. Rated against the copy engine's A→B rate in the same run;
//!   that no page moved shows in A reading them at its local rate afterwards, and B's second read
//!   being no faster than its first.
//! - Read-mostly: each GPU gets a read-only duplicate, so both read at local speed.
//! - Ping-pong: A and B write the buffer in turn; plain (each write faults the pages over) and with
//!   preferred location A + accessed-by B (B writes remotely, nothing moves).

use super::{SumReader, gpu_of, time_across};
use crate::demos::{Ceiling, Row, Settings};
use kernels::elementwise::Elementwise;
use kernels::{Source, vec_add};
use kernels_host::families::reduce::{exact_sums, grid_inputs};
use kernels_host::families::{Bound, Work, elementwise};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::{CopyBy, Gpu, ManagedBuffer, MemoryLocation, Timing, copy_between};

const DEMO: &str = "multi-gpu managed";

pub fn run(backends: &[Backend], settings: &Settings, n: usize) -> Result<Vec<Row>> {
    if backends.len() < 2 {
        return Ok(vec![Row::skipped(
            DEMO,
            &backends[0],
            "needs two devices in --devices (list one twice, e.g. 0,0, to run it on one GPU)",
        )]);
    }
    let (back_a, back_b) = (&backends[0], &backends[1]);
    let (a, b) = (gpu_of(back_a)?, gpu_of(back_b)?);
    let (ia, ib) = (a.info().ordinal, b.info().ordinal);
    let size = format!("n={n}, devices {ia},{ib}");
    let bytes = (n * size_of::<f32>()) as f64;
    let read = Work {
        bytes,
        flops: 0.0,
        bound: Bound::Memory,
    };
    let values = grid_inputs(settings.rng, n);
    let values = &values[..n];
    let exact = exact_sums(values);
    let mut rows = Vec::new();

    // The copy engine's A→B rate: the ceiling of reading A's memory from B.
    let source = a.upload(values)?;
    let mut landing = b.zeros::<f32>(n)?;
    let copy = time_across(&[a, b], settings, || {
        copy_between(a, &source, 0, b, &mut landing, 0, n, CopyBy::Source)
    })?;
    drop((source, landing));
    let ceiling = read.rate(copy.median_ms).map(|(rate, _)| Ceiling {
        name: format!("copy engine {ia}->{ib}"),
        rate,
    });
    rows.push(
        Row::measured(
            DEMO,
            &format!("copy engine {ia}->{ib} (device memory)"),
            &size,
            back_a,
            copy,
            &read,
        )
        .with_check(Ok("the ceiling of the mapped read".into())),
    );

    // Prefetch A → B → A.
    {
        let buffer = filled(a, b, values)?;
        buffer.prefetch(a, MemoryLocation::Device)?;
        let timing = time_across(&[a, b], settings, || {
            buffer.prefetch(b, MemoryLocation::Device)?;
            buffer.prefetch(a, MemoryLocation::Device)
        })?;
        let mut reader = SumReader::new(back_a, n)?;
        let check = reader.checked(back_a, &buffer, exact);
        let round_trip = Work {
            bytes: 2.0 * bytes,
            ..read
        };
        rows.push(
            Row::measured(
                DEMO,
                &format!("prefetch {ia}->{ib}->{ia} (both moves)"),
                &size,
                back_a,
                timing,
                &round_trip,
            )
            .with_check(check)
            .with_ceiling(ceiling.as_ref()),
        );
    }

    // Preferred location A, accessed by B: B reads in place.
    {
        let buffer = filled(a, b, values)?;
        buffer.advise_preferred_location(MemoryLocation::Gpu(ia))?;
        buffer.advise_accessed_by(MemoryLocation::Gpu(ib))?;
        buffer.prefetch(a, MemoryLocation::Device)?;
        let (mut on_a, mut on_b) = (SumReader::new(back_a, n)?, SumReader::new(back_b, n)?);
        let first = time_across(&[b], settings, || on_b.launch(back_b, &buffer))?;
        let check = on_b.checked(back_b, &buffer, exact);
        let local = time_across(&[a], settings, || on_a.launch(back_a, &buffer))?;
        let local_check = on_a.checked(back_a, &buffer, exact);
        let again = time_across(&[b], settings, || on_b.launch(back_b, &buffer))?;
        let stayed = if a.same_device(b) {
            Ok("one device plays both parts: nothing can migrate".to_string())
        } else if bytes < JUDGED_BYTES {
            Ok(format!(
                "{bytes} bytes: too few to judge migration by time (from {JUDGED_BYTES})"
            ))
        } else {
            stayed_put(&first, &local, &again)
        };
        rows.push(
            Row::measured(
                DEMO,
                &format!("sum on {ib}, pages on {ia}, accessed-by {ib} (mapped)"),
                &size,
                back_b,
                first,
                &read,
            )
            .with_check(check.and_then(|c| stayed.clone().map(|s| format!("{c}; {s}"))))
            .with_ceiling(ceiling.as_ref()),
        );
        rows.push(
            Row::measured(
                DEMO,
                &format!("then the sum on {ia} (local)"),
                &size,
                back_a,
                local,
                &read,
            )
            .with_check(local_check),
        );
        rows.push(
            Row::measured(
                DEMO,
                &format!("then the sum on {ib} again (mapped)"),
                &size,
                back_b,
                again,
                &read,
            )
            .with_check(stayed)
            .with_ceiling(ceiling.as_ref()),
        );
    }

    // Read-mostly: a duplicate on each GPU.
    {
        let buffer = filled(a, b, values)?;
        buffer.advise_read_mostly()?;
        buffer.prefetch(a, MemoryLocation::Device)?;
        buffer.prefetch(b, MemoryLocation::Device)?;
        for (backend, gpu) in [(back_a, a), (back_b, b)] {
            let mut reader = SumReader::new(backend, n)?;
            let timing = time_across(&[gpu], settings, || reader.launch(backend, &buffer))?;
            let check = reader.checked(backend, &buffer, exact);
            rows.push(
                Row::measured(
                    DEMO,
                    &format!("sum on {}, read-mostly duplicates", gpu.info().ordinal),
                    &size,
                    backend,
                    timing,
                    &read,
                )
                .with_check(check),
            );
        }
    }

    // Ping-pong: A writes, then B, over and over.
    for advised in [false, true] {
        let (timing, check) = ping_pong(backends, settings, n, advised)?;
        let how = if advised {
            format!("preferred {ia} + accessed-by {ib}")
        } else {
            "plain".to_string()
        };
        let work = Work {
            bytes: 0.0,
            flops: 0.0,
            bound: Bound::Check,
        };
        let mut row = Row::measured(
            DEMO,
            &format!("ping-pong {ia}<->{ib}, {how}"),
            &size,
            back_a,
            timing,
            &work,
        )
        .with_check(check);
        row.end_to_end_ms = row.timing.as_ref().map(|t| t.median_ms);
        rows.push(row);
    }
    Ok(rows)
}

/// Bytes from which the mapped read is judged by its time: beyond the owner's L2 (50 MiB on the
/// H200), the owner's local read and the read over the link differ by several times.
const JUDGED_BYTES: f64 = (64 << 20) as f64;

/// A managed buffer holding `values`, written by the CPU, shared with both GPUs.
fn filled(a: &Gpu, b: &Gpu, values: &[f32]) -> Result<ManagedBuffer<f32>> {
    let mut buffer = ManagedBuffer::new(a, values.len(), 0.0f32)?;
    buffer.write()?.copy_from_slice(values);
    buffer.share_with(b)?;
    Ok(buffer)
}

/// Whether the mapped pages stayed where they were: had B's read migrated them, A would read them
/// remotely (slower than B's mapped read at best) and B's second read would run at local speed.
fn stayed_put(first: &Timing, local: &Timing, again: &Timing) -> std::result::Result<String, String> {
    let (first, local, again) = (first.median_ms, local.median_ms, again.median_ms);
    if local < first && again > 0.8 * first {
        Ok(format!(
            "no migration: the owner read them {:.1}× faster than the mapped read, and the second mapped read took {:.2} of the first's time",
            first / local,
            again / first
        ))
    } else {
        Err(format!(
            "pages moved: mapped read {first:.3} ms, owner's read after it {local:.3} ms, second mapped read {again:.3} ms"
        ))
    }
}

/// GPU A and GPU B writing one managed buffer in turn (vec_add, A's result 1 + 2, B's 10 + 20);
/// the time of one round (both writes), and the CPU's check of B's last write.
fn ping_pong(
    backends: &[Backend],
    settings: &Settings,
    n: usize,
    advised: bool,
) -> Result<(Timing, std::result::Result<String, String>)> {
    let (back_a, back_b) = (&backends[0], &backends[1]);
    let (a, b) = (gpu_of(back_a)?, gpu_of(back_b)?);
    let problem = Elementwise::new(n)?;
    let inputs_a = (a.upload(&vec![1.0f32; n])?, a.upload(&vec![2.0f32; n])?);
    let inputs_b = (b.upload(&vec![10.0f32; n])?, b.upload(&vec![20.0f32; n])?);
    let mut out = ManagedBuffer::new(a, n, 0.0f32)?;
    out.share_with(b)?;
    if advised {
        out.advise_preferred_location(MemoryLocation::Gpu(a.info().ordinal))?;
        out.advise_accessed_by(MemoryLocation::Gpu(b.info().ordinal))?;
    }
    let timing = time_across(&[a, b], settings, || {
        elementwise::launch(
            back_a,
            &vec_add::KERNEL,
            Source::Rust,
            &problem,
            &inputs_a.0,
            &inputs_a.1,
            &mut out,
        )?;
        elementwise::launch(
            back_b,
            &vec_add::KERNEL,
            Source::Rust,
            &problem,
            &inputs_b.0,
            &inputs_b.1,
            &mut out,
        )
    })?;
    let values = out.read()?;
    let check = match values.iter().position(|&v| v != 30.0) {
        None => Ok(format!(
            "all {n} floats hold B's last write (10 + 20) on the CPU; time per round: A's write and B's"
        )),
        Some(i) => Err(format!("float {i} is {}, not B's last write 30", values[i])),
    };
    Ok((timing, check))
}
