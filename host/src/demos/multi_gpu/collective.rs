//! `multi-gpu collective`: C = A·B with k split across the devices: GPU p multiplies A's columns
//! and B's rows of its share of k into a whole partial C, and an NCCL all-reduce sums the partial
//! matrices, leaving C on every GPU. NCCL is an existing engine for that step (rings or trees over
//! NVLink, the copy engines and SMs it chooses) rather than a home-made one. Timed with inputs
//! resident, against one GPU computing all of C; the all-reduce alone is timed too. Checked against
//! the f64 reference, and every GPU's C against the first's bit for bit.

use super::split::{one_gpu, operands, pick, row_blocks};
use super::time_across;
use crate::demos::{Ceiling, Row, Settings};
use cudarc::driver::CudaSlice;
use kernels::Source;
use kernels_host::families::matmul as host_matmul;
use kernels_host::families::{Bound, Work};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::{Clique, Nccl};

const DEMO: &str = "multi-gpu collective";

pub fn run(backends: &[Backend], settings: &Settings, [m, n, k]: [usize; 3]) -> Result<Vec<Row>> {
    let gpus = super::gpus_of(backends)?;
    let nccl = Nccl::load()?;
    let clique = Clique::new(&nccl, &gpus)?;
    let (a, b, oracle) = operands([m, n, k], settings.rng);
    let size = format!("{m}×{n}×{k} on {} device(s)", gpus.len());
    let flops = Work {
        bytes: 0.0,
        flops: 2.0 * (m * n * k) as f64,
        bound: Bound::Compute,
    };
    let mut rows = Vec::new();

    // One GPU.
    let first = gpus[0];
    let (a0, b0) = (first.upload(&a)?, first.upload(&b)?);
    let (one, c0, entry) = one_gpu(&backends[0], settings, (&a0, &b0), [m, n, k])?;
    drop((a0, b0, c0));
    let one_rate = flops.rate(one.median_ms).map(|(rate, _)| Ceiling {
        name: format!("one GPU ({entry})"),
        rate,
    });

    // Each GPU's share of k: A's columns, B's rows, a whole partial C.
    let shares = row_blocks(k, gpus.len());
    let mut parts = Vec::new();
    let mut partials: Vec<CudaSlice<f32>> = Vec::new();
    for (p, share) in shares.iter().enumerate() {
        let gpu = gpus[p];
        partials.push(gpu.zeros(m * n)?);
        if share.is_empty() {
            continue;
        }
        let columns: Vec<f32> = (0..m)
            .flat_map(|row| a[row * k + share.start..row * k + share.end].to_vec())
            .collect();
        let (kernel, problem) = pick(&backends[p], m, n, share.len())?;
        parts.push((
            p,
            kernel,
            problem,
            gpu.upload(&columns)?,
            gpu.upload(&b[share.start * n..share.end * n])?,
        ));
    }
    let multiply = |partials: &mut Vec<CudaSlice<f32>>| -> Result<()> {
        for (p, kernel, problem, a_p, b_p) in &parts {
            host_matmul::launch(
                &backends[*p],
                kernel,
                Source::Rust,
                problem,
                a_p,
                b_p,
                &mut partials[*p],
            )?;
        }
        Ok(())
    };
    let whole = time_across(&gpus, settings, || {
        multiply(&mut partials)?;
        clique.all_reduce_sum(&mut partials)
    })?;
    // A fresh, checked run: the partials are overwritten by the products, then summed once.
    multiply(&mut partials)?;
    clique.all_reduce_sum(&mut partials)?;
    let c = first.download(&partials[0])?;
    let mut check = oracle.check(&c);
    for (p, partial) in partials.iter().enumerate().skip(1) {
        let other = gpus[p].download(partial)?;
        if let Some(i) = c.iter().zip(&other).position(|(x, y)| x.to_bits() != y.to_bits()) {
            check = Err(format!(
                "GPU {p}'s C differs from GPU 0's at element {i}: {} against {}",
                other[i], c[i]
            ));
        }
    }
    let entries: Vec<&str> = parts.iter().map(|part| part.1.entry()).collect();
    rows.push(
        Row::measured(
            DEMO,
            &format!(
                "k split, NCCL {} all-reduce ({})",
                nccl.version_text(),
                entries.join(", ")
            ),
            &size,
            &backends[0],
            whole,
            &flops,
        )
        .with_check(check.map(|c| format!("{c}; every GPU holds the same C")))
        .with_ceiling(one_rate.as_ref()),
    );

    // The all-reduce alone, over m·n floats.
    let reduce = time_across(&gpus, settings, || clique.all_reduce_sum(&mut partials))?;
    // With one rank an in-place all-reduce moves nothing: its time is the call, not a rate.
    let moved = Work {
        bytes: (m * n * size_of::<f32>()) as f64,
        flops: 0.0,
        bound: if gpus.len() > 1 { Bound::Memory } else { Bound::Check },
    };
    let loaded = format!("NCCL loaded from {}", nccl.path.display());
    let note = if gpus.len() > 1 {
        loaded
    } else {
        format!("{loaded}; one rank: nothing moves, the time is the call's")
    };
    rows.push(
        Row::measured(
            DEMO,
            "NCCL all-reduce alone (bytes of C per time)",
            &size,
            &backends[0],
            reduce,
            &moved,
        )
        .with_check(Ok(note)),
    );
    Ok(rows)
}
