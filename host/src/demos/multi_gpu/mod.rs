//! `host multi-gpu`: several GPUs of one host (issue 13). Four scenarios, each on the devices of
//! `--devices`:
//! - `peer`: copies between GPUs (pushed, pulled, both ways at once) and a kernel reading another
//!   GPU's memory in place, against the copy engine's rate over the same link ([`peer`]);
//! - `managed`: one managed buffer used by two GPUs: prefetched back and forth, mapped without
//!   migration (accessed-by advice), duplicated read-only (read-mostly), and written by each in
//!   turn with and without advice ([`managed`]);
//! - `split`: a matmul whose rows of C are split across the GPUs, B replicated by peer copies or
//!   read-mostly managed memory, against one GPU ([`split`]);
//! - `collective`: the same product split along k, the partial C matrices summed by an NCCL
//!   all-reduce ([`collective`]).
//!
//! A device may be listed twice (`--devices 0,0`): its GPU then plays both parts, which checks the
//! splitting on a one-GPU machine but measures nothing about links. On the emulator only `split`
//! runs, over emulated devices.

pub mod collective;
pub mod managed;
pub mod peer;
pub mod split;

use super::{Row, Settings};
use kernels::Source;
use kernels::reduce::one_pass;
use kernels_host::families::{reduce, resident_blocks_of};
use ptxkit_runtime::Backend;
use ptxkit_runtime::array::{Array, Buffer};
use ptxkit_runtime::{Doing, Error, Result};
use ptxkit_runtime::{Gpu, Timing, time_gpu};

/// A multi-GPU scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    Peer,
    Managed,
    Split,
    Collective,
}

impl Scenario {
    pub const ALL: [Scenario; 4] = [Scenario::Peer, Scenario::Managed, Scenario::Split, Scenario::Collective];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::Peer => "peer",
            Scenario::Managed => "managed",
            Scenario::Split => "split",
            Scenario::Collective => "collective",
        }
    }

    pub fn parse(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// What `host multi-gpu` runs.
#[derive(Clone, Debug)]
pub struct Plan {
    pub scenarios: Vec<Scenario>,
    /// Floats moved or read by `peer` and `managed`.
    pub n: usize,
    /// The product of `split` and `collective`: m, n, k.
    pub shape: [usize; 3],
}

/// Default floats of `peer` and `managed`: 1 GiB, far beyond the L2.
pub const DEFAULT_N: usize = 1 << 28;
/// Default product: 8192³ (the target shape).
pub const DEFAULT_SHAPE: [usize; 3] = [8192, 8192, 8192];
/// The emulator's product: small, no side a multiple of a tile.
pub const EMULATOR_SHAPE: [usize; 3] = [67, 45, 33];

/// Why the scenarios other than `split` need GPUs.
pub const NEEDS_GPUS: &str = "links, managed pages and NCCL belong to GPUs; the emulator has none";

impl Plan {
    /// Checks the sizes before any device is opened.
    pub fn new(scenarios: Vec<Scenario>, n: usize, shape: [usize; 3]) -> Result<Plan> {
        if n == 0 || n > u32::MAX as usize {
            return Err(Error::InvalidInput {
                what: format!("multi-gpu --floats {n}"),
                reason: format!("give 1 to {} (the reduction's 32-bit count)", u32::MAX),
            });
        }
        let [m, cols, k] = shape;
        kernels::matmul::Matmul::new(m, cols, k)?;
        Ok(Plan { scenarios, n, shape })
    }
}

/// One backend per device of `--devices`, every one a GPU, or `count` emulators.
pub fn backends_of(gpus: Vec<Gpu>) -> Vec<Backend> {
    gpus.into_iter().map(|g| Backend::Gpu(Box::new(g))).collect()
}

/// The GPU of a backend that must be one.
pub fn gpu_of(backend: &Backend) -> Result<&Gpu> {
    backend.gpu().ok_or_else(|| Error::NeedsGpu {
        what: "multi-gpu".into(),
        why: NEEDS_GPUS,
    })
}

/// The GPUs of `backends`, all of which must be GPUs.
pub fn gpus_of(backends: &[Backend]) -> Result<Vec<&Gpu>> {
    backends.iter().map(gpu_of).collect()
}

/// Runs the plan's scenarios on `backends` (one per device).
pub fn run(backends: &[Backend], settings: &Settings, plan: &Plan) -> Result<Vec<Row>> {
    let on_gpus = backends.iter().all(|b| b.gpu().is_some());
    let repeated = repeated_device(backends);
    if let (Some(device), [Scenario::Collective]) = (repeated, plan.scenarios.as_slice()) {
        return Err(Error::InvalidInput {
            what: "--devices".into(),
            reason: format!("device {device} appears twice; NCCL needs each GPU once"),
        });
    }
    let mut rows = Vec::new();
    for &scenario in &plan.scenarios {
        let demo = format!("multi-gpu {}", scenario.name());
        if !on_gpus && scenario != Scenario::Split {
            rows.push(Row::skipped(&demo, &backends[0], NEEDS_GPUS));
            continue;
        }
        if let (Some(_), Scenario::Collective) = (repeated, scenario) {
            rows.push(Row::skipped(
                &demo,
                &backends[0],
                "NCCL needs each GPU once; a device is listed twice",
            ));
            continue;
        }
        rows.extend(match scenario {
            Scenario::Peer => peer::run(backends, settings, plan.n)?,
            Scenario::Managed => managed::run(backends, settings, plan.n)?,
            Scenario::Split => split::run(backends, settings, plan.shape)?,
            Scenario::Collective => collective::run(backends, settings, plan.shape)?,
        });
    }
    Ok(rows)
}

/// A device listed twice among GPU backends, if any.
fn repeated_device(backends: &[Backend]) -> Option<usize> {
    let ordinals: Vec<usize> = backends
        .iter()
        .filter_map(|b| b.gpu())
        .map(|g| g.info().ordinal)
        .collect();
    ordinals
        .iter()
        .enumerate()
        .find(|(i, o)| ordinals[..*i].contains(o))
        .map(|(_, &o)| o)
}

/// `gpus`' devices, "0,1", for sizes and messages.
pub fn device_names(gpus: &[&Gpu]) -> String {
    gpus.iter()
        .map(|g| g.info().ordinal.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// GPU time of work spread over several GPUs: from an event on the first GPU's stream, which every
/// other GPU's stream waits for before its part, to one after the first GPU's stream has waited for
/// every other's. Warm-up and median as [`time_gpu`].
pub fn time_across(gpus: &[&Gpu], settings: &Settings, mut work: impl FnMut() -> Result<()>) -> Result<Timing> {
    let first = gpus[0];
    time_gpu(first, settings.warmup as usize, settings.runs as usize, || {
        for gpu in &gpus[1..] {
            gpu.stream()
                .join(first.stream())
                .doing(|| "starting every GPU after the first's start event".into())?;
        }
        work()?;
        for gpu in &gpus[1..] {
            first
                .stream()
                .join(gpu.stream())
                .doing(|| "ending on the first GPU after every other's work".into())?;
        }
        Ok(())
    })
}

/// The one-pass sum kernel set up on one backend: the kernel that reads an array once, so its rate
/// is the rate at which the array's memory can be read from there.
pub struct SumReader {
    problem: kernels::reduce::Reduce,
    output: Buffer<f32>,
    ticket: Buffer<u32>,
    depth: u64,
}

impl SumReader {
    /// Ready to sum `n` floats on `backend`.
    pub fn new(backend: &Backend, n: usize) -> Result<SumReader> {
        let kernel = &one_pass::KERNEL;
        let resident = resident_blocks_of(backend, &kernel.info(kernels::reduce::FAMILY.name))?;
        let problem = kernels::reduce::Reduce::new(n, resident)?;
        Ok(SumReader {
            output: Buffer::upload(backend, &vec![f32::NAN; reduce::output_len(kernel, &problem)])?,
            ticket: Buffer::upload(backend, &[0u32])?,
            depth: reduce::rounding_depth(kernel, &problem),
            problem,
        })
    }

    /// Queues one sum of `input` (at least n floats reachable from `backend`).
    pub fn launch(&mut self, backend: &Backend, input: &impl Array<f32>) -> Result<()> {
        reduce::launch(
            backend,
            &one_pass::KERNEL,
            Source::Rust,
            &self.problem,
            input,
            &mut self.output,
            &mut self.ticket,
        )
    }

    /// One sum of `input` into a poisoned output, checked against its exact sum and absolute sum.
    pub fn checked(
        &mut self,
        backend: &Backend,
        input: &impl Array<f32>,
        (exact, abs): (f64, f64),
    ) -> std::result::Result<String, String> {
        let mut run = || -> Result<f32> {
            let poison = vec![f32::NAN; self.output.len()];
            self.output.write(backend, &poison)?;
            self.launch(backend, input)?;
            Ok(self.output.read(backend)?[0])
        };
        let total = run().map_err(|e| e.to_string())?;
        reduce::check_total(total, exact, abs, self.depth)
    }
}
