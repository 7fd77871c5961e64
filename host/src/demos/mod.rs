//! The demos behind the `host` binary: each runs kernels on the chosen backend, checks every result
//! against the f64 CPU reference, and returns one [`Row`] per variant.

pub mod ceiling;
pub mod managed;
pub mod matmul;
pub mod report;
pub mod shared_add;
pub mod vec_add;

pub use report::{Rate, Row};

use crate::error::Result;
use crate::gpu::{CudaReference, Gpu, Source, Timing};
use kernels::reference::{Expected, check};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::time::Instant;

/// Where kernels run.
pub enum Backend {
    Gpu(Box<Gpu>),
    /// The CPU emulator, at sizes capped so that a demo takes seconds.
    Emu,
}

/// `--backend`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendChoice {
    /// The GPU when there is one, else the CPU emulator.
    Auto,
    /// The GPU; an error when there is none.
    Gpu,
    /// The CPU emulator, at capped sizes.
    Emu,
}

impl Backend {
    /// The backend `choice` asks for; with `Auto`, also the notice to print when it falls back.
    pub fn choose(choice: BackendChoice, device: Option<usize>) -> Result<(Backend, Option<String>)> {
        match choice {
            BackendChoice::Gpu => Ok((Backend::Gpu(Box::new(Gpu::open(device)?)), None)),
            BackendChoice::Emu => Ok((Backend::Emu, None)),
            BackendChoice::Auto => match Gpu::open(device) {
                Ok(gpu) => Ok((Backend::Gpu(Box::new(gpu)), None)),
                Err(why) => Ok((
                    Backend::Emu,
                    Some(format!(
                        "note: no GPU ({why}); running on the CPU emulator at reduced sizes. Times are the emulator's, not a GPU's."
                    )),
                )),
            },
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Backend::Gpu(_) => "gpu",
            Backend::Emu => "emu",
        }
    }
}

/// How each demo measures.
#[derive(Clone, Copy)]
pub struct Settings<'a> {
    pub warmup: usize,
    pub runs: usize,
    pub seed: u64,
    /// CUDA C references to time beside the Rust kernels (`--cuda-c`).
    pub cuda_c: Option<&'a CudaReference>,
}

impl<'a> Settings<'a> {
    /// The sources to measure a kernel from: Rust, and CUDA C where a reference for it is loaded.
    pub(crate) fn sources(&self, entry: &str) -> Vec<Source<'a>> {
        Source::for_kernel(entry, self.cuda_c)
    }
}

/// Largest element count the emulator runs in the element-wise demos. The emulator switches
/// between all of a block's OS threads for each block: about a millisecond per block.
pub const EMU_MAX_ELEMENTS: usize = 1 << 16;
/// Timed runs on the emulator: its times only show that it ran, so one is enough.
pub const EMU_RUNS: usize = 1;
/// Largest matrix side the emulator runs in the matmul demo.
pub const EMU_MAX_SIDE: usize = 128;

/// `len` values uniform in [-1, 1) from `seed`.
pub fn random_inputs(seed: u64, len: usize) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// Wall-clock timing for the emulator (it has no events): `runs` runs, median.
pub(crate) fn time_emu(runs: usize, mut work: impl FnMut() -> Result<()>) -> Result<Timing> {
    let mut samples = Vec::with_capacity(runs.max(1));
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        work()?;
        samples.push(start.elapsed().as_secs_f64() * 1e3);
    }
    Ok(Timing::from_samples(samples))
}

/// The check's outcome as a row shows it.
pub(crate) fn check_against(out: &[f32], expected: &Expected) -> std::result::Result<String, String> {
    match check(out, expected) {
        Ok(()) => Ok(format!("{} elements within tolerance of the f64 reference", out.len())),
        Err(mismatch) => Err(mismatch.to_string()),
    }
}

/// Caps `n` for the emulator, saying so.
pub(crate) fn emu_size(backend: &Backend, n: usize, cap: usize, what: &str) -> usize {
    if matches!(backend, Backend::Emu) && n > cap {
        eprintln!("note: {what} capped from {n} to {cap} on the emulator");
        cap
    } else {
        n
    }
}
