//! `multi-gpu split`: C = A·B (f32) with C's rows split across the devices, each GPU computing its
//! block of rows with the f32 ladder's kernel the device chooses for that block's shape
//! (`--variant auto`'s rule). A is split with C; B is replicated, by peer copies from the first
//! GPU or as read-mostly managed memory (a duplicate per GPU). Timed with inputs resident and end
//! to end (A and B start on the first GPU, C ends there), against one GPU computing all of C with
//! the kernel it chooses for the whole shape. Checked against the f64 reference and, where both
//! ran the same kernel, against the one-GPU result bit for bit (each row of C is the same sum in
//! the same order whichever GPU computes it).
//!
//! On the emulator the same split runs over emulated devices, checked the same way, untimed.

use super::time_across;
use crate::demos::{Ceiling, Row, Settings};
use cudarc::driver::CudaSlice;
use kernels::Source;
use kernels::matmul::{FAMILY, Matmul, split_k};
use kernels::reference::Operands;
use kernels_host::families::matmul::{self as host_matmul, MATMUL, Oracle};
use kernels_host::families::{Bound, FamilyDemo, Size, Work, choice};
use ptxkit::Kernel;
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::array::Buffer;
use ptxkit_runtime::{CopyBy, ManagedBuffer, MemoryLocation, Timing, copy_between};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const DEMO: &str = "multi-gpu split";
/// Row blocks start at multiples of this (the largest tile's rows), where C is tall enough.
const ROW_ALIGN: usize = 128;

/// The rows of C each of `parts` devices computes: contiguous, in order, as even as the
/// alignment allows; a device may get none when C has fewer rows than devices.
pub fn row_blocks(m: usize, parts: usize) -> Vec<std::ops::Range<usize>> {
    let align = if m >= parts * ROW_ALIGN { ROW_ALIGN } else { 1 };
    let per = m.div_ceil(parts).div_ceil(align) * align;
    (0..parts).map(|p| (p * per).min(m)..((p + 1) * per).min(m)).collect()
}

/// The kernel `backend` runs for an m×n×k product, and its problem (the launch splits k where the
/// kernel is split-k): the device's choice on a GPU, the first configuration on the emulator.
pub fn pick(backend: &Backend, m: usize, n: usize, k: usize) -> Result<(&'static Kernel<Matmul>, Matmul)> {
    let size = Size([m, n, k]);
    let index = match backend {
        Backend::Gpu(gpu) => choice::choose(gpu, &MATMUL, size)?.map(|c| c.kernel),
        Backend::Emu => None,
    };
    let index = index.unwrap_or_else(|| {
        let first = MATMUL.choice().configurations()[0];
        FAMILY.kernels.iter().position(|k| k.entry() == first).unwrap_or(0)
    });
    let kernel = &FAMILY.kernels[index];
    Ok((kernel, Matmul::new(m, n, k)?))
}

/// Random operands in [-1, 1), and the f64 reference of their product.
pub fn operands(shape: [usize; 3], rng: u64) -> (Vec<f32>, Vec<f32>, Oracle) {
    let [m, n, k] = shape;
    let mut random = StdRng::seed_from_u64(rng);
    let a: Vec<f32> = (0..m * k).map(|_| random.random_range(-1.0..1.0)).collect();
    let b: Vec<f32> = (0..k * n).map(|_| random.random_range(-1.0..1.0)).collect();
    let oracle = Oracle::new(&a, &b, (m, n, k), rng ^ 0x5eed, Operands::F32);
    (a, b, oracle)
}

/// C computed by the parts, each on its backend from host copies of its rows of A and all of B:
/// the path both the emulator and the GPUs check. Returns C and each part's kernel.
pub fn split_product(
    backends: &[Backend],
    a: &[f32],
    b: &[f32],
    [m, n, k]: [usize; 3],
) -> Result<(Vec<f32>, Vec<&'static str>)> {
    let mut c = vec![f32::NAN; m * n];
    let mut entries = Vec::new();
    for (backend, rows) in backends.iter().zip(row_blocks(m, backends.len())) {
        if rows.is_empty() {
            continue;
        }
        let (kernel, problem) = pick(backend, rows.len(), n, k)?;
        entries.push(kernel.entry());
        let a_part = Buffer::upload(backend, &a[rows.start * k..rows.end * k])?;
        let b_part = Buffer::upload(backend, b)?;
        let mut c_part = Buffer::upload(backend, &vec![f32::NAN; rows.len() * n])?;
        host_matmul::launch(backend, kernel, Source::Rust, &problem, &a_part, &b_part, &mut c_part)?;
        c[rows.start * n..rows.end * n].copy_from_slice(&c_part.read(backend)?);
    }
    Ok((c, entries))
}

/// C computed on one backend with the kernel it picks for the whole shape.
pub fn whole_product(
    backend: &Backend,
    a: &[f32],
    b: &[f32],
    [m, n, k]: [usize; 3],
) -> Result<(Vec<f32>, &'static str)> {
    let (kernel, problem) = pick(backend, m, n, k)?;
    let (a, b) = (Buffer::upload(backend, a)?, Buffer::upload(backend, b)?);
    let mut c = Buffer::upload(backend, &vec![f32::NAN; m * n])?;
    host_matmul::launch(backend, kernel, Source::Rust, &problem, &a, &b, &mut c)?;
    Ok((c.read(backend)?, kernel.entry()))
}

/// The split's C checked: against the f64 reference, and against the one-GPU C bit for bit
/// where every part ran the one-GPU kernel (a split-k kernel splits k by the block's shape, so
/// only unsplit kernels promise the same sums).
pub fn check_split(
    split: &[f32],
    entries: &[&str],
    whole: &[f32],
    whole_entry: &str,
    oracle: &Oracle,
) -> std::result::Result<String, String> {
    let reference = oracle.check(split)?;
    let same_kernel =
        entries.iter().all(|e| *e == whole_entry) && !split_k::KERNELS.iter().any(|k| k.entry() == whole_entry);
    if !same_kernel {
        return Ok(format!(
            "{reference}; the parts ran {} and one device {whole_entry}, so the sums' order differs and bits are not compared",
            entries.join(", ")
        ));
    }
    match split.iter().zip(whole).position(|(s, w)| s.to_bits() != w.to_bits()) {
        None => Ok(format!("{reference}; equal to the one-device result bit for bit")),
        Some(i) => Err(format!(
            "element {i}: {} split, {} on one GPU, with the same kernel",
            split[i], whole[i]
        )),
    }
}

/// The baseline of the splits: `backend`'s GPU computing all of C from the resident `a` and `b`
/// with the kernel it picks for the whole shape; its time, C and the kernel's name.
pub fn one_gpu(
    backend: &Backend,
    settings: &Settings,
    (a, b): (&CudaSlice<f32>, &CudaSlice<f32>),
    [m, n, k]: [usize; 3],
) -> Result<(Timing, CudaSlice<f32>, &'static str)> {
    let gpu = super::gpu_of(backend)?;
    let (kernel, problem) = pick(backend, m, n, k)?;
    let mut c: CudaSlice<f32> = gpu.zeros(m * n)?;
    let timing = time_across(&[gpu], settings, || {
        host_matmul::launch(backend, kernel, Source::Rust, &problem, a, b, &mut c)
    })?;
    Ok((timing, c, kernel.entry()))
}

pub fn run(backends: &[Backend], settings: &Settings, shape: [usize; 3]) -> Result<Vec<Row>> {
    let shape = if matches!(backends[0], Backend::Emu) {
        super::EMULATOR_SHAPE
    } else {
        shape
    };
    let [m, n, k] = shape;
    let (a, b, oracle) = operands(shape, settings.rng);
    let size = format!("{m}×{n}×{k} on {} device(s)", backends.len());
    let (whole, whole_entry) = whole_product(&backends[0], &a, &b, shape)?;
    let (split, entries) = split_product(backends, &a, &b, shape)?;
    let check = check_split(&split, &entries, &whole, whole_entry, &oracle);
    let Backend::Gpu(_) = &backends[0] else {
        return Ok(vec![
            Row::unmeasured(
                DEMO,
                &format!("rows split, {}", entries.join(", ")),
                &size,
                &backends[0],
            )
            .with_check(check),
        ]);
    };
    let flops = Work {
        bytes: 0.0,
        flops: 2.0 * (m * n * k) as f64,
        bound: Bound::Compute,
    };
    let gpus = super::gpus_of(backends)?;
    let first = gpus[0];
    let mut rows = Vec::new();

    // One GPU, inputs resident.
    let (a0, b0) = (first.upload(&a)?, first.upload(&b)?);
    let (one, c0, entry) = one_gpu(&backends[0], settings, (&a0, &b0), shape)?;
    let one_rate = flops.rate(one.median_ms).map(|(rate, _)| Ceiling {
        name: format!("one GPU ({entry})"),
        rate,
    });
    rows.push(
        Row::measured(
            DEMO,
            &format!("one GPU, {entry}"),
            &format!("{m}×{n}×{k}"),
            &backends[0],
            one,
            &flops,
        )
        .with_check(oracle.check(&first.download(&c0)?)),
    );

    // Each part's rows of A, B and C on its GPU; B by peer copies from the first GPU.
    let blocks = row_blocks(m, backends.len());
    let mut parts = Vec::new();
    for (p, rows_p) in blocks.iter().enumerate().filter(|(_, r)| !r.is_empty()) {
        let gpu = gpus[p];
        let (kernel, problem) = pick(&backends[p], rows_p.len(), n, k)?;
        let mut a_p = gpu.zeros::<f32>(rows_p.len() * k)?;
        let mut b_p = gpu.zeros::<f32>(k * n)?;
        copy_between(
            first,
            &a0,
            rows_p.start * k,
            gpu,
            &mut a_p,
            0,
            rows_p.len() * k,
            CopyBy::Destination,
        )?;
        copy_between(first, &b0, 0, gpu, &mut b_p, 0, k * n, CopyBy::Destination)?;
        let c_p = gpu.zeros::<f32>(rows_p.len() * n)?;
        parts.push((p, rows_p.clone(), kernel, problem, a_p, b_p, c_p));
    }
    let resident = time_across(&gpus, settings, || {
        for (p, _, kernel, problem, a_p, b_p, c_p) in parts.iter_mut() {
            host_matmul::launch(&backends[*p], kernel, Source::Rust, problem, &*a_p, &*b_p, c_p)?;
        }
        Ok(())
    })?;
    rows.push(
        Row::measured(
            DEMO,
            "rows split, inputs resident",
            &size,
            &backends[0],
            resident,
            &flops,
        )
        .with_check(check.clone())
        .with_ceiling(one_rate.as_ref()),
    );

    // End to end: A and B start on the first GPU, C ends there. In three phases (every part's
    // inputs, every part's product, every part's C back), because a copy between two GPUs waits
    // for both GPUs' earlier work: queued part by part, the second GPU's inputs would wait for the
    // first GPU's whole product, and the GPUs would take turns.
    let mut gathered: CudaSlice<f32> = first.zeros(m * n)?;
    let end_to_end = time_across(&gpus, settings, || {
        for (p, rows_p, _, _, a_p, b_p, _) in parts.iter_mut() {
            let gpu = gpus[*p];
            copy_between(
                first,
                &a0,
                rows_p.start * k,
                gpu,
                a_p,
                0,
                rows_p.len() * k,
                CopyBy::Destination,
            )?;
            copy_between(first, &b0, 0, gpu, b_p, 0, k * n, CopyBy::Destination)?;
        }
        for (p, _, kernel, problem, a_p, b_p, c_p) in parts.iter_mut() {
            host_matmul::launch(&backends[*p], kernel, Source::Rust, problem, &*a_p, &*b_p, c_p)?;
        }
        for (p, rows_p, _, _, _, _, c_p) in parts.iter() {
            copy_between(
                gpus[*p],
                c_p,
                0,
                first,
                &mut gathered,
                rows_p.start * n,
                rows_p.len() * n,
                CopyBy::Source,
            )?;
        }
        Ok(())
    })?;
    let gathered = first.download(&gathered)?;
    let entries: Vec<&str> = parts.iter().map(|part| part.2.entry()).collect();
    rows.push(
        Row::measured(
            DEMO,
            "rows split, end to end (A, B from GPU 0 by peer copies, C back)",
            &size,
            &backends[0],
            end_to_end,
            &flops,
        )
        .with_check(check_split(&gathered, &entries, &whole, whole_entry, &oracle))
        .with_ceiling(one_rate.as_ref()),
    );

    // B as read-mostly managed memory: a duplicate on each GPU.
    let mut shared = ManagedBuffer::new(first, k * n, 0.0f32)?;
    shared.write()?.copy_from_slice(&b);
    for gpu in &gpus[1..] {
        shared.share_with(gpu)?;
    }
    shared.advise_read_mostly()?;
    for gpu in &gpus {
        shared.prefetch(gpu, MemoryLocation::Device)?;
    }
    let managed = time_across(&gpus, settings, || {
        for (p, _, kernel, problem, a_p, _, c_p) in parts.iter_mut() {
            host_matmul::launch(&backends[*p], kernel, Source::Rust, problem, &*a_p, &shared, c_p)?;
        }
        Ok(())
    })?;
    let mut from_managed = vec![f32::NAN; m * n];
    for (p, rows_p, _, _, _, _, c_p) in &parts {
        from_managed[rows_p.start * n..rows_p.end * n].copy_from_slice(&gpus[*p].download(c_p)?);
    }
    rows.push(
        Row::measured(
            DEMO,
            "rows split, B read-mostly managed, resident",
            &size,
            &backends[0],
            managed,
            &flops,
        )
        .with_check(check_split(&from_managed, &entries, &whole, whole_entry, &oracle))
        .with_ceiling(one_rate.as_ref()),
    );
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_blocks_cover_c_once_in_order() {
        for (m, parts) in [(8192, 2), (1, 2), (3, 8), (1000, 3), (129, 2), (257, 2), (33, 1)] {
            let blocks = row_blocks(m, parts);
            assert_eq!(blocks.len(), parts);
            let mut next = 0;
            for block in &blocks {
                assert_eq!(block.start, next.min(m), "{m} rows in {parts}: {blocks:?}");
                next = block.end.max(next);
            }
            assert_eq!(next, m, "{m} rows in {parts}: {blocks:?}");
        }
        assert_eq!(row_blocks(8192, 2), vec![0..4096, 4096..8192]);
        assert_eq!(row_blocks(1, 2), vec![0..1, 1..1]);
    }
}
