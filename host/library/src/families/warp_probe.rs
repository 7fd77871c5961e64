//! The warp probe's host side: lane ids and shuffles on either backend, against the values the
//! device layer promises.

use super::elementwise::check_shape;
use super::{Bound, Case, Cli, FamilyDemo, Outputs, Plan, Size, Sizes, Work, check_len};
use kernels::Source;
use kernels::probe::{FAMILY, WarpProbe};
use ptxkit::{AnyFamily, Kernel};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::array::Array;

/// Words past the output that the probe must leave alone.
const GUARD_WORDS: usize = 64;
/// What the output is poisoned with: no lane writes it.
const POISON: u32 = u32::MAX;

/// Runs the probe over `problem.blocks` blocks into `out` (`WORDS_PER_THREAD` words per thread).
pub fn launch(
    backend: &Backend,
    kernel: &Kernel<WarpProbe>,
    source: Source,
    problem: &WarpProbe,
    out: &mut impl Array<u32>,
) -> Result<()> {
    check_len("output", out.len(), problem.len())?;
    let args = (out.address_mut(backend)? as *mut u32,);
    // SAFETY: the pointer is the output's address on this backend, and it holds the `WORDS_PER_THREAD` words per
    // launched thread that the probe writes.
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &[&*out]) }
}

/// The host side of the warp probe.
pub struct WarpProbeDemo;

impl FamilyDemo for WarpProbeDemo {
    fn family(&self) -> &'static dyn AnyFamily {
        &FAMILY
    }

    fn extents(&self) -> &'static [&'static str] {
        &["blocks"]
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let problem = WarpProbe::new(size.0[0])?;
        for kernel in FAMILY.kernels {
            check_shape(kernel, &problem)?;
        }
        let bytes = 4 * (problem.len() + GUARD_WORDS) as u64;
        Ok(Plan {
            work: Work {
                bytes: bytes as f64,
                flops: 0.0,
                bound: Bound::Check,
            },
            x: problem.blocks as f64,
            host_bytes: 3 * bytes,
            device_bytes: bytes,
        })
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, _rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let problem = WarpProbe::new(size.0[0])?;
        let outputs = Outputs::new(backend, problem.len(), GUARD_WORDS, POISON, sets)?;
        Ok(Box::new(WarpProbeCase {
            backend,
            problem,
            outputs,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: "lane ids, the four shuffles and the three warp votes, checked against what the device layer promises",
            default: Size([1024, 1, 1]),
            emulator_cap: Size([256, 1, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            edge: [1, 2, 3, 5, 257].iter().map(|&b| Size([b, 1, 1])).collect(),
            large: vec![Size([1 << 16, 1, 1])],
            bench: Vec::new(),
            smoke: Size([3, 1, 1]),
        }
    }
}

struct WarpProbeCase<'a> {
    backend: &'a Backend,
    problem: WarpProbe,
    outputs: Outputs<u32>,
}

impl Case for WarpProbeCase<'_> {
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
        let len = self.problem.len();
        let out = self.outputs.read(self.backend, set)?;
        let expected = kernels::reference::warp_probe(self.problem.threads());
        if let Some(i) = (0..len).find(|&i| out[i] != expected[i]) {
            let words = kernels::probe::WORDS_PER_THREAD as usize;
            return Err(format!(
                "thread {} word {}: got {:#x}, expected {:#x} (words: lane, xor 1, down 3, up 2, idx 5, warp sum, ballot, all, any, match)",
                i / words,
                i % words,
                out[i],
                expected[i]
            ));
        }
        if let Some(i) = out[len..].iter().position(|&w| w != POISON) {
            return Err(format!("wrote past the end of the output, at word {}", len + i));
        }
        Ok(format!("{len} words as the device layer promises"))
    }
}
