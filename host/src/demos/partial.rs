//! `managed partial`: a kernel that reads only some pages of a large array (issue 12, item 3).
//! The gather kernel reads every element of 0.1 %, 1 %, 10 % and 100 % of the 64 KiB pages of n
//! floats, the pages in random order. Managed memory whose pages sit on the host moves only what
//! the kernel touches (on demand, a fault and a 64 KiB migration per page); copying the whole
//! array first moves everything, touched or not; prefetching the whole managed array first is the
//! same as copying it. Where the lines cross is the fraction above which moving everything up
//! front pays. A fourth way migrates nothing: advice that the pages live on the host (preferred
//! location) and that the GPU reads them (accessed-by) maps them into the GPU's page tables, so
//! the kernel reads the touched bytes over the bus without a fault. Times are CUDA events: the
//! kernel alone for the two managed ways without a prefetch, the copy or prefetch and the kernel
//! for the others.

use super::Settings;
use super::report::Row;
use cudarc::driver::CudaSlice;
use kernels::Source;
use kernels::gather::{Gather, KERNEL};
use kernels_host::families::{Bound, Work, gather};
use ptxkit_runtime::Backend;
use ptxkit_runtime::array::Array;
use ptxkit_runtime::{Doing, Error, Result};
use ptxkit_runtime::{ManagedBuffer, MemoryLocation, Timing, time_once};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

/// Floats per page: 64 KiB, the driver's unit of migration on a fault.
const PAGE: usize = 16 << 10;
/// Fractions of the pages the kernel reads.
const FRACTIONS: [f64; 4] = [0.001, 0.01, 0.1, 1.0];

/// Why the scenario needs a GPU.
pub const NEEDS_GPU: &str = "on-demand paging is between the host and a GPU; the emulator has none";

/// The value at element `i`: a pattern the check recomputes, exact in f32.
fn pattern(i: usize) -> f32 {
    (i % 4093) as f32
}

/// Checks `n` before anything is allocated: a valid gather source of at least one page whose
/// managed, device and pinned copies (and the indices and outputs at 100 %) fit.
pub fn check(backend: &Backend, n: usize) -> Result<Gather> {
    if n < PAGE {
        return Err(Error::InvalidInput {
            what: "managed partial".into(),
            reason: format!("n = {n}: give at least one 64 KiB page ({PAGE} floats)"),
        });
    }
    let problem = Gather::new(n, n)?;
    let Backend::Gpu(gpu) = backend else {
        return Err(Error::NeedsGpu {
            what: "managed partial".into(),
            why: NEEDS_GPU,
        });
    };
    // On the GPU: the managed array, its device copy, the indices and the outputs at 100 %. On the
    // host: the two managed arrays, the pinned copy, the indices and the read-back outputs.
    super::managed::check_memory(gpu, &format!("managed partial at n={n}"), 16 * n as u64, 20 * n as u64)?;
    Ok(problem)
}

pub fn run(backend: &Backend, settings: &Settings, n: usize) -> Result<Vec<Row>> {
    check(backend, n)?;
    let gpu = backend.gpu().ok_or_else(|| Error::NeedsGpu {
        what: "managed partial".into(),
        why: NEEDS_GPU,
    })?;
    let values: Vec<f32> = (0..n).map(pattern).collect();
    let mut managed = ManagedBuffer::new(gpu, n, 0.0f32)?;
    managed.write()?.copy_from_slice(&values);
    let mut mapped = ManagedBuffer::new(gpu, n, 0.0f32)?;
    mapped.write()?.copy_from_slice(&values);
    mapped.advise_preferred_location(MemoryLocation::Host)?;
    mapped.advise_accessed_by(MemoryLocation::Device)?;
    // SAFETY: filled right away; flags 0 = ordinary pinned memory.
    let mut pinned = unsafe { gpu.context().alloc_pinned_with_flags::<f32>(n, 0) }
        .doing(|| format!("allocating {n} pinned floats"))?;
    pinned
        .as_mut_slice()
        .doing(|| "mapping pinned memory".into())?
        .copy_from_slice(&values);
    drop(values);
    let mut device: CudaSlice<f32> = gpu.zeros(n)?;
    let pages = n.div_ceil(PAGE);
    let mut order: Vec<usize> = (0..pages).collect();
    order.shuffle(&mut StdRng::seed_from_u64(settings.rng));
    let runs = settings.runs.clamp(1, 5) as usize;
    let mut rows = Vec::new();
    for fraction in FRACTIONS {
        let chosen = ((fraction * pages as f64).round() as usize).clamp(1, pages);
        let index: Vec<u32> = order[..chosen]
            .iter()
            .flat_map(|&page| (page * PAGE..((page + 1) * PAGE).min(n)).map(|i| i as u32))
            .collect();
        let problem = Gather::new(index.len(), n)?;
        let index_dev = gpu.upload(&index)?;
        let mut out: CudaSlice<f32> = gpu.zeros(index.len())?;
        let mut on_demand = Vec::with_capacity(runs);
        let mut prefetched = Vec::with_capacity(runs);
        let mut copied = Vec::with_capacity(runs);
        let mut remote = Vec::with_capacity(runs);
        for run in 0..=runs {
            managed.prefetch_to_host(gpu)?;
            gpu.synchronize()?;
            let demand = time_once(gpu, || read_pages(backend, &problem, &managed, &index_dev, &mut out))?;
            managed.prefetch_to_host(gpu)?;
            gpu.synchronize()?;
            let prefetch = time_once(gpu, || {
                managed.prefetch_to_device(gpu)?;
                read_pages(backend, &problem, &managed, &index_dev, &mut out)
            })?;
            let copy = time_once(gpu, || {
                gpu.stream()
                    .memcpy_htod(&pinned, &mut device)
                    .doing(|| "copying the array to the GPU".into())?;
                read_pages(backend, &problem, &device, &index_dev, &mut out)
            })?;
            let mapped_ms = time_once(gpu, || read_pages(backend, &problem, &mapped, &index_dev, &mut out))?;
            // The first round is the warm-up.
            if run > 0 {
                on_demand.push(demand);
                prefetched.push(prefetch);
                copied.push(copy);
                remote.push(mapped_ms);
            }
        }
        // Each source gathered once more into poisoned outputs, and checked.
        let poison = vec![f32::NAN; index.len()];
        let mut gathered = |source: &dyn Fn(&mut CudaSlice<f32>) -> Result<()>| -> Result<_> {
            gpu.copy_into(&poison, &mut out)?;
            source(&mut out)?;
            Ok(check_gathered(&index, &gpu.download(&out)?))
        };
        let check = gathered(&|out| read_pages(backend, &problem, &managed, &index_dev, out))?;
        let copy_check = gathered(&|out| read_pages(backend, &problem, &device, &index_dev, out))?;
        let mapped_check = gathered(&|out| read_pages(backend, &problem, &mapped, &index_dev, out))?;
        let (on_demand, prefetched, copied, remote) = (
            Timing::from_samples(on_demand),
            Timing::from_samples(prefetched),
            Timing::from_samples(copied),
            Timing::from_samples(remote),
        );
        let ratio = on_demand.median_ms / copied.median_ms;
        let remote_ratio = remote.median_ms / copied.median_ms;
        let size = format!("n={n}, {:.1} % of pages ({chosen})", 100.0 * fraction);
        // Bytes the kernel needs: what it reads of the array.
        let work = Work {
            bytes: 4.0 * index.len() as f64,
            flops: 0.0,
            bound: Bound::Memory,
        };
        rows.push(
            Row::measured(
                "managed",
                "partial: managed, on demand",
                &size,
                backend,
                on_demand,
                &work,
            )
            .with_check(
                check
                    .clone()
                    .map(|d| format!("{d}; {ratio:.3} of the time of copying all first")),
            ),
        );
        rows.push(
            Row::measured(
                "managed",
                "partial: managed, prefetch all first",
                &size,
                backend,
                prefetched,
                &work,
            )
            .with_check(check),
        );
        rows.push(
            Row::measured(
                "managed",
                "partial: managed, host-preferred + accessed by GPU",
                &size,
                backend,
                remote,
                &work,
            )
            .with_check(mapped_check.map(|d| {
                format!("{d}; read over the bus, no migration; {remote_ratio:.3} of the time of copying all first")
            })),
        );
        rows.push(
            Row::measured(
                "managed",
                "partial: pinned copy of all first",
                &size,
                backend,
                copied,
                &work,
            )
            .with_check(copy_check),
        );
    }
    Ok(rows)
}

/// Every gathered float equal to the pattern at its index.
fn check_gathered(index: &[u32], got: &[f32]) -> std::result::Result<String, String> {
    match index.iter().zip(got).position(|(&at, &v)| v != pattern(at as usize)) {
        None => Ok(format!("{} floats of the chosen pages read exactly", index.len())),
        Some(i) => Err(format!(
            "output {i} is {}, expected {}",
            got[i],
            pattern(index[i] as usize)
        )),
    }
}

/// The gather of the chosen pages' elements from `source` (managed or device memory) into `out`.
fn read_pages(
    backend: &Backend,
    problem: &Gather,
    source: &impl Array<f32>,
    index: &CudaSlice<u32>,
    out: &mut CudaSlice<f32>,
) -> Result<()> {
    gather::launch(backend, &KERNEL, Source::Rust, problem, (source, index), out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pattern_is_exact_in_f32_and_varies_within_a_page() {
        assert_eq!(pattern(4093), 0.0);
        assert_eq!(pattern(4092), 4092.0);
        assert_ne!(pattern(1), pattern(2));
    }
}
