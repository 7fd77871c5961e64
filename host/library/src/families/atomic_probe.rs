//! The atomic probe's host side: every atomic, fence and ordered access of the device layer on
//! either backend, against the words they must leave.

use super::elementwise::check_shape;
use super::{Bound, Case, Cli, FamilyDemo, Outputs, Plan, Size, Sizes, Work, check_len};
use kernels::Source;
use kernels::atomic_probe::{AtomicProbe, FAMILY, word};
use ptxkit::{AnyFamily, Kernel};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::array::Array;

/// Words past the output that the probe must leave alone.
const GUARD_WORDS: usize = 64;
/// What the guard holds: no thread writes it.
const POISON: u32 = u32::MAX;

/// Runs the probe over `problem.blocks` blocks on `words`, which must be zero.
pub fn launch(
    backend: &Backend,
    kernel: &Kernel<AtomicProbe>,
    source: Source,
    problem: &AtomicProbe,
    words: &mut impl Array<u32>,
) -> Result<()> {
    check_len("words", words.len(), problem.len())?;
    let args = (words.address_mut(backend)? as *mut u32,);
    // SAFETY: the pointer is the array's address on this backend (8-byte aligned: every backend's
    // allocations are), and it holds the `AtomicProbe::len` words the probe touches.
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &[&*words]) }
}

/// The host side of the atomic probe.
pub struct AtomicProbeDemo;

impl FamilyDemo for AtomicProbeDemo {
    fn family(&self) -> &'static dyn AnyFamily {
        &FAMILY
    }

    fn extents(&self) -> &'static [&'static str] {
        &["blocks"]
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let problem = AtomicProbe::new(size.0[0])?;
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
        let problem = AtomicProbe::new(size.0[0])?;
        let mut template = vec![0u32; problem.len()];
        template.resize(problem.len() + GUARD_WORDS, POISON);
        let outputs = Outputs::from_template(backend, template, sets)?;
        Ok(Box::new(AtomicProbeCase {
            backend,
            problem,
            outputs,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: "global atomics, fences, acquire/release loads and stores and a chain of blocks, checked",
            default: Size([4096, 1, 1]),
            emulator_cap: Size([256, 1, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            edge: [1, 2, 3, 33, 130].iter().map(|&b| Size([b, 1, 1])).collect(),
            large: vec![Size([8192, 1, 1])],
            bench: Vec::new(),
            smoke: Size([5, 1, 1]),
        }
    }
}

struct AtomicProbeCase<'a> {
    backend: &'a Backend,
    problem: AtomicProbe,
    outputs: Outputs<u32>,
}

impl Case for AtomicProbeCase<'_> {
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
        check_words(&self.problem, &out)?;
        if let Some(i) = out[self.problem.len()..].iter().position(|&w| w != POISON) {
            return Err(format!(
                "wrote past the end of the words, at word {}",
                self.problem.len() + i
            ));
        }
        Ok(format!(
            "{} counters, {} flags and links as the device layer promises",
            word::CHAIN,
            2 * self.problem.blocks
        ))
    }
}

/// The probe's words against what `problem`'s threads must have left.
fn check_words(problem: &AtomicProbe, out: &[u32]) -> std::result::Result<(), String> {
    let threads = problem.threads();
    let wide = |i: usize| out[i] as u64 | (out[i + 1] as u64) << 32;
    let last_exch = out[word::EXCH_U32];
    let last_exch_wide = wide(word::EXCH_U64);
    let counters: [(&str, u64, u64); 12] = [
        ("tickets", out[word::TICKET] as u64, problem.blocks as u64),
        ("u32 add", out[word::ADD_U32] as u64, threads as u64),
        (
            "i32 add",
            out[word::ADD_I32] as u64,
            (-2 * threads as i64) as i32 as u32 as u64,
        ),
        (
            "f32 add",
            out[word::ADD_F32] as u64,
            (threads as f32 * 0.5).to_bits() as u64,
        ),
        ("u64 add", wide(word::ADD_U64), threads as u64 * ((1 << 32) + 1)),
        ("u32 max", out[word::MAX_U32] as u64, threads as u64 - 1),
        (
            "i32 min",
            out[word::MIN_I32] as u64,
            (-(threads as i64 - 1)) as i32 as u32 as u64,
        ),
        ("u32 cas loop", out[word::CAS_U32] as u64, 3 * problem.blocks as u64),
        ("u64 cas loop", wide(word::CAS_U64), (problem.blocks as u64) << 32),
        ("u32 exch", (1..=threads).contains(&last_exch) as u64, 1),
        ("u32 red", out[word::RED_U32] as u64, 5 * threads as u64),
        (
            "f32 red",
            out[word::RED_F32] as u64,
            (threads as f32 * 0.25).to_bits() as u64,
        ),
    ];
    for (what, got, expected) in counters {
        if got != expected {
            return Err(format!("{what}: got {got:#x}, expected {expected:#x}"));
        }
    }
    if !(last_exch_wide >> 40 == 1 && (last_exch_wide & ((1 << 40) - 1)) < threads as u64) {
        return Err(format!(
            "u64 exch: got {last_exch_wide:#x}, not 2^40 + a thread's index"
        ));
    }
    let blocks = problem.blocks as usize;
    let (ready, links) = out[word::CHAIN..word::CHAIN + 2 * blocks].split_at(blocks);
    if let Some(v) = ready.iter().position(|&r| r != 1) {
        return Err(format!(
            "block with ticket {v} did not publish its link (flag {})",
            ready[v]
        ));
    }
    for (v, &link) in links.iter().enumerate() {
        let expected = ((v as u64 + 1) * (v as u64 + 2) / 2) as u32;
        if link != expected {
            return Err(format!(
                "link {v} is {link}, expected {expected}: the link before it was not visible when it was read"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words a correct launch of `blocks` blocks leaves (the last exchange by thread 0).
    fn correct(problem: &AtomicProbe) -> Vec<u32> {
        let threads = problem.threads() as u64;
        let mut out = vec![0u32; problem.len()];
        let mut wide = |i: usize, v: u64| {
            out[i] = v as u32;
            out[i + 1] = (v >> 32) as u32;
        };
        wide(word::ADD_U64, threads * ((1 << 32) + 1));
        wide(word::CAS_U64, (problem.blocks as u64) << 32);
        wide(word::EXCH_U64, 1 << 40);
        out[word::TICKET] = problem.blocks;
        out[word::ADD_U32] = threads as u32;
        out[word::ADD_I32] = (-2 * threads as i64) as u32;
        out[word::ADD_F32] = (threads as f32 * 0.5).to_bits();
        out[word::MAX_U32] = threads as u32 - 1;
        out[word::MIN_I32] = (-(threads as i64 - 1)) as u32;
        out[word::CAS_U32] = 3 * problem.blocks;
        out[word::EXCH_U32] = 1;
        out[word::RED_U32] = 5 * threads as u32;
        out[word::RED_F32] = (threads as f32 * 0.25).to_bits();
        let blocks = problem.blocks as usize;
        for v in 0..blocks {
            out[word::CHAIN + v] = 1;
            out[word::CHAIN + blocks + v] = ((v + 1) * (v + 2) / 2) as u32;
        }
        out
    }

    #[test]
    fn the_check_passes_correct_words_and_names_each_broken_one() {
        let problem = AtomicProbe::new(5).unwrap();
        let good = correct(&problem);
        check_words(&problem, &good).unwrap();
        for (i, what) in [
            (word::ADD_F32, "f32 add"),
            (word::MIN_I32, "i32 min"),
            (word::CHAIN + 3, "did not publish"),
            (word::CHAIN + 5 + 2, "link 2"),
        ] {
            let mut bad = good.clone();
            bad[i] ^= 1;
            let error = check_words(&problem, &bad).unwrap_err();
            assert!(error.contains(what), "word {i}: {error}");
        }
    }
}
