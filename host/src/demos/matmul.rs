//! `matmul`: the three matmul kernels against cuBLAS SGEMM on the same shape, in the same run.

use super::report::Ceiling;
use super::{Backend, EMU_RUNS, Rate, Row, Settings, check_against, emu_size, random_inputs, time_emu};
use crate::error::Result;
use crate::gpu::{self, Cublas, MatmulVariant, time_gpu};
use kernels::reference::{self, Expected};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

pub const DEFAULT_SIDE: usize = 4096;

/// Above this many multiply-adds the f64 reference checks sampled elements instead of all of them.
const FULL_CHECK_MAX_MACS: usize = 1 << 28;
/// Elements checked when sampling, besides the four corners.
const SAMPLES: usize = 4096;

pub fn run(
    backend: &Backend,
    settings: &Settings,
    (m, n, k): (usize, usize, usize),
    variants: &[MatmulVariant],
) -> Result<Vec<Row>> {
    let m = emu_size(backend, m, super::EMU_MAX_SIDE, "matmul m");
    let n = emu_size(backend, n, super::EMU_MAX_SIDE, "matmul n");
    let k = emu_size(backend, k, super::EMU_MAX_SIDE, "matmul k");
    let a = random_inputs(settings.seed + 4, m * k);
    let b = random_inputs(settings.seed + 5, k * n);
    let oracle = Oracle::new(&a, &b, (m, n, k), settings.seed);
    let flops = Rate::Flops(2.0 * m as f64 * n as f64 * k as f64);
    let size = format!("{m}x{n}x{k}");
    let mut rows = Vec::new();
    let Backend::Gpu(gpu) = backend else {
        for &variant in variants {
            let mut c = vec![f32::NAN; m * n];
            let timing = time_emu(EMU_RUNS, || crate::emu::matmul(variant, &a, &b, &mut c, m, n, k))?;
            let entry = variant.info().entry;
            rows.push(Row::new("matmul", entry, size.clone(), "emu", timing, flops).with_check(oracle.check(&c)));
        }
        return Ok(rows);
    };
    let (a_dev, b_dev) = (gpu.upload(&a)?, gpu.upload(&b)?);
    let cublas = Cublas::new(gpu)?;
    let mut c = gpu.upload(&vec![f32::NAN; m * n])?;
    let timing = time_gpu(gpu, settings.warmup, settings.runs, || {
        cublas.sgemm(gpu, &a_dev, &b_dev, &mut c, m, n, k)
    })?;
    let check = oracle.check(&gpu.download(&c)?);
    let cublas_row =
        Row::new("matmul", "cublas_sgemm", size.clone(), "gpu", timing, flops).from_source("cublas_sgemm", "library");
    let ceiling = Ceiling {
        name: format!("cuBLAS SGEMM {size}, TFLOP/s"),
        rate: cublas_row.rate,
    };
    rows.push(cublas_row.with_ceiling(Some(&ceiling)).with_check(check));
    for &variant in variants {
        let entry = variant.info().entry;
        for source in settings.sources(entry) {
            let mut c = gpu.upload(&vec![f32::NAN; m * n])?;
            let timing = time_gpu(gpu, settings.warmup, settings.runs, || {
                gpu::matmul_from(gpu, source, variant, &a_dev, &b_dev, &mut c, m, n, k)
            })?;
            let check = oracle.check(&gpu.download(&c)?);
            rows.push(
                Row::new("matmul", entry, size.clone(), "gpu", timing, flops)
                    .from_source(entry, source.label())
                    .with_ceiling(Some(&ceiling))
                    .with_check(check),
            );
        }
    }
    Ok(rows)
}

/// The f64 reference: every element for small shapes, sampled elements (and a scan for unwritten
/// NaNs everywhere) for large ones.
pub struct Oracle {
    n: usize,
    positions: Option<Vec<(usize, usize)>>,
    expected: Expected,
}

impl Oracle {
    pub fn new(a: &[f32], b: &[f32], (m, n, k): (usize, usize, usize), seed: u64) -> Oracle {
        if m * n * k <= FULL_CHECK_MAX_MACS {
            return Oracle {
                n,
                positions: None,
                expected: reference::matmul(a, b, m, n, k),
            };
        }
        let mut rng = StdRng::seed_from_u64(seed.wrapping_add(0x5A3B1E5));
        let mut positions = vec![(0, 0), (0, n - 1), (m - 1, 0), (m - 1, n - 1)];
        positions.extend((0..SAMPLES).map(|_| (rng.random_range(0..m), rng.random_range(0..n))));
        let expected = reference::matmul_at(a, b, n, k, &positions);
        Oracle {
            n,
            positions: Some(positions),
            expected,
        }
    }

    pub fn check(&self, c: &[f32]) -> std::result::Result<String, String> {
        let Some(positions) = &self.positions else {
            return check_against(c, &self.expected);
        };
        if let Some(i) = c.iter().position(|v| v.is_nan()) {
            return Err(format!(
                "element ({}, {}) is NaN: never written",
                i / self.n,
                i % self.n
            ));
        }
        let sampled: Vec<f32> = positions.iter().map(|&(row, col)| c[row * self.n + col]).collect();
        check_against(&sampled, &self.expected).map(|_| {
            format!(
                "{} sampled elements within tolerance of the f64 reference, none NaN",
                positions.len()
            )
        })
    }
}
