//! The bank-conflict probe's host side as a family, so that the tests, the smoke sweep and the
//! sanitizers run it like every kernel. The study itself (every stride and width, predicted beside
//! measured) is `host bank-conflicts` (`demos::banks`).

use super::elementwise::check_shape;
use super::{Bound, Case, Cli, FamilyDemo, Outputs, Plan, Size, Sizes, Work, check_len};
use kernels::Source;
use kernels::banks::{BankProbe, FAMILY, PROBE_BLOCKS};
use ptxkit::{AnyFamily, Kernel};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::array::Array;

/// What the output is poisoned with: no block's cycle count.
const POISON: u64 = u64::MAX;

/// Runs the probe, writing each block's cycles (and the fold of its reads) into `cycles`.
pub fn launch(
    backend: &Backend,
    kernel: &Kernel<BankProbe>,
    source: Source,
    problem: &BankProbe,
    cycles: &mut impl Array<u64>,
) -> Result<()> {
    check_len("cycles", cycles.len(), 2 * PROBE_BLOCKS as usize)?;
    let args = (cycles.address_mut(backend)? as *mut u64, problem.stride, problem.width);
    // SAFETY: the pointer is the array's address on this backend; it holds two words per block.
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &[&*cycles]) }
}

/// The host side of the bank probe.
pub struct BankProbeDemo;

impl FamilyDemo for BankProbeDemo {
    fn family(&self) -> &'static dyn AnyFamily {
        &FAMILY
    }

    fn extents(&self) -> &'static [&'static str] {
        &["stride", "width"]
    }

    fn label(&self, size: Size) -> String {
        format!("stride={}, {} bytes", size.0[0], size.0[1])
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let problem = BankProbe::new(size.0[0], size.0[1])?;
        for kernel in FAMILY.kernels {
            check_shape(kernel, &problem)?;
        }
        Ok(Plan {
            work: Work {
                bytes: 0.0,
                flops: 0.0,
                bound: Bound::Check,
            },
            x: problem.stride as f64,
            host_bytes: 1 << 10,
            device_bytes: 1 << 10,
        })
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, _rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let problem = BankProbe::new(size.0[0], size.0[1])?;
        let outputs = Outputs::new(backend, 2 * PROBE_BLOCKS as usize, 0, POISON, sets)?;
        Ok(Box::new(BankProbeCase {
            backend,
            problem,
            outputs,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: "one bank-conflict probe: cycles of strided shared-memory reads (`host bank-conflicts` runs the study)",
            default: Size([32, 4, 1]),
            emulator_cap: Size([64, 16, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            edge: [(1, 4), (2, 4), (33, 4), (64, 4), (3, 8), (64, 16)]
                .iter()
                .map(|&(s, w)| Size([s, w, 1]))
                .collect(),
            large: Vec::new(),
            bench: Vec::new(),
            smoke: Size([17, 8, 1]),
        }
    }
}

struct BankProbeCase<'a> {
    backend: &'a Backend,
    problem: BankProbe,
    outputs: Outputs<u64>,
}

impl BankProbeCase<'_> {
    /// Each block's elapsed cycles from output set `set`.
    fn cycles(&self, set: usize) -> std::result::Result<Vec<u64>, String> {
        let out = self.outputs.read(self.backend, set)?;
        Ok(out[..PROBE_BLOCKS as usize].to_vec())
    }
}

impl Case for BankProbeCase<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        launch(
            self.backend,
            &FAMILY.kernels[kernel],
            source,
            &self.problem,
            self.outputs.get_mut(set),
        )
    }

    fn poison(&mut self) -> Result<()> {
        self.outputs.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let out = self.outputs.read(self.backend, set)?;
        if let Some(block) = out.iter().position(|&w| w == POISON) {
            return Err(format!("slot {block} was never written"));
        }
        let cycles = self.cycles(set)?;
        if let Some(block) = cycles.iter().position(|&c| c == 0) {
            return Err(format!("block {block} took 0 cycles: the clock did not advance"));
        }
        Ok(format!("{} blocks timed", cycles.len()))
    }
}

/// Runs one probe on `backend` and gives each block's cycles.
pub fn measure(backend: &Backend, problem: &BankProbe) -> Result<Vec<u64>> {
    let mut cycles = super::Outputs::new(backend, 2 * PROBE_BLOCKS as usize, 0, POISON, 1)?;
    launch(backend, &FAMILY.kernels[0], Source::Rust, problem, cycles.get_mut(0))?;
    let out = cycles
        .read(backend, 0)
        .map_err(|reason| ptxkit_runtime::Error::InvalidInput {
            what: "the bank probe's output".into(),
            reason,
        })?;
    Ok(out[..PROBE_BLOCKS as usize].to_vec())
}
