//! `vec-add`: the memory-bound baseline, on plain device memory (from Rust, and from CUDA C where
//! `--cuda-c` loaded it) and on prefetched managed memory, against the device-to-device copy ceiling.

use super::{Backend, EMU_RUNS, Rate, Row, Settings, ceiling, check_against, emu_size, random_inputs, time_emu};
use crate::error::Result;
use crate::gpu::{self, Elementwise, Gpu, ManagedBuffer, Source, Timing, time_gpu};
use kernels::reference::{self, Expected};

pub const DEFAULT_N: usize = 1 << 26;

const ENTRY: &str = kernels::vec_add::INFO.entry;

pub fn run(backend: &Backend, settings: &Settings, n: usize) -> Result<Vec<Row>> {
    let n = emu_size(backend, n, super::EMU_MAX_ELEMENTS, "vec-add n");
    let a = random_inputs(settings.seed, n);
    let b = random_inputs(settings.seed + 1, n);
    let expected = reference::vec_add(&a, &b);
    let bytes = Rate::Bytes(3.0 * 4.0 * n as f64);
    let size = format!("n={n}");
    let Backend::Gpu(gpu) = backend else {
        let mut out = vec![f32::NAN; n];
        let timing = time_emu(EMU_RUNS, || crate::emu::vec_add(&a, &b, &mut out, n))?;
        return Ok(vec![
            Row::new("vec-add", "emulator", size, "emu", timing, bytes)
                .from_source(ENTRY, "rust")
                .with_check(check_against(&out, &expected)),
        ]);
    };
    let copy = ceiling::copy_bandwidth(gpu, settings.warmup, settings.runs)?;
    let mut rows = Vec::new();
    for source in settings.sources(ENTRY) {
        let (timing, check) = device_memory(gpu, settings, source, &a, &b, &expected)?;
        rows.push(
            Row::new("vec-add", "device memory", size.clone(), "gpu", timing, bytes)
                .from_source(ENTRY, source.label())
                .with_ceiling(Some(&copy))
                .with_check(check),
        );
    }
    let (timing, check) = managed_prefetched(gpu, settings, &a, &b, &expected)?;
    rows.push(
        Row::new("vec-add", "managed, prefetched", size, "gpu", timing, bytes)
            .with_ceiling(Some(&copy))
            .with_check(check),
    );
    Ok(rows)
}

type Measured = (Timing, std::result::Result<String, String>);

fn device_memory(
    gpu: &Gpu,
    settings: &Settings,
    source: Source,
    a: &[f32],
    b: &[f32],
    expected: &Expected,
) -> Result<Measured> {
    let n = a.len();
    let (a_dev, b_dev) = (gpu.upload(a)?, gpu.upload(b)?);
    let mut out = gpu.upload(&vec![f32::NAN; n])?;
    let timing = time_gpu(gpu, settings.warmup, settings.runs, || {
        gpu::elementwise_from(gpu, source, Elementwise::VecAdd, &a_dev, &b_dev, &mut out, n)
    })?;
    Ok((timing, check_against(&gpu.download(&out)?, expected)))
}

fn managed_prefetched(gpu: &Gpu, settings: &Settings, a: &[f32], b: &[f32], expected: &Expected) -> Result<Measured> {
    let n = a.len();
    let mut a_managed = ManagedBuffer::new(gpu, n, 0.0f32)?;
    let mut b_managed = ManagedBuffer::new(gpu, n, 0.0f32)?;
    a_managed.write()?.copy_from_slice(a);
    b_managed.write()?.copy_from_slice(b);
    let mut out = ManagedBuffer::new(gpu, n, f32::NAN)?;
    for buffer in [&a_managed, &b_managed, &out] {
        buffer.prefetch_to_device(gpu)?;
    }
    let timing = time_gpu(gpu, settings.warmup, settings.runs, || {
        gpu::vec_add(gpu, &a_managed, &b_managed, &mut out, n)
    })?;
    let check = check_against(out.read()?, expected);
    Ok((timing, check))
}
