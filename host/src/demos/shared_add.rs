//! `shared-add`: the seed's shared-memory example (stage, barrier, read the neighbour), from Rust and
//! from CUDA C where `--cuda-c` loaded it, against the device-to-device copy ceiling.

use super::{Backend, EMU_RUNS, Rate, Row, Settings, ceiling, check_against, emu_size, random_inputs, time_emu};
use crate::error::Result;
use crate::gpu::{self, Elementwise, time_gpu};
use kernels::reference;

pub const DEFAULT_N: usize = 1 << 26;

const ENTRY: &str = kernels::shared_mem_add::INFO.entry;

pub fn run(backend: &Backend, settings: &Settings, n: usize) -> Result<Vec<Row>> {
    let n = emu_size(backend, n, super::EMU_MAX_ELEMENTS, "shared-add n");
    let a = random_inputs(settings.seed + 2, n);
    let b = random_inputs(settings.seed + 3, n);
    let expected = reference::shared_mem_add(&a, &b, kernels::shared_mem_add::BLOCK as usize);
    let bytes = Rate::Bytes(3.0 * 4.0 * n as f64);
    let size = format!("n={n}");
    let Backend::Gpu(gpu) = backend else {
        let mut out = vec![f32::NAN; n];
        let timing = time_emu(EMU_RUNS, || crate::emu::shared_mem_add(&a, &b, &mut out, n))?;
        return Ok(vec![
            Row::new("shared-add", "emulator", size, "emu", timing, bytes)
                .from_source(ENTRY, "rust")
                .with_check(check_against(&out, &expected)),
        ]);
    };
    let copy = ceiling::copy_bandwidth(gpu, settings.warmup, settings.runs)?;
    let (a_dev, b_dev) = (gpu.upload(&a)?, gpu.upload(&b)?);
    let mut rows = Vec::new();
    for source in settings.sources(ENTRY) {
        let mut out = gpu.upload(&vec![f32::NAN; n])?;
        let timing = time_gpu(gpu, settings.warmup, settings.runs, || {
            gpu::elementwise_from(gpu, source, Elementwise::SharedMemAdd, &a_dev, &b_dev, &mut out, n)
        })?;
        let check = check_against(&gpu.download(&out)?, &expected);
        rows.push(
            Row::new("shared-add", "device memory", size.clone(), "gpu", timing, bytes)
                .from_source(ENTRY, source.label())
                .with_ceiling(Some(&copy))
                .with_check(check),
        );
    }
    Ok(rows)
}
