//! The row-padding copy's host side ([`kernels::matmul::pad_rows`], what the TMA matmul rungs copy
//! an operand of odd width with): its safe launch, random bits as the source, and the exact check
//! (a copy moves bits; the padding is zeros).

use super::elementwise::check_shape;
use super::{Bound, Case, Cli, FamilyDemo, GUARD, Outputs, Plan, Size, Sizes, Work, check_len, substream};
use kernels::Source;
use kernels::matmul::pad_rows::{FAMILY, PadRows};
use ptxkit::{AnyFamily, Kernel};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::array::{Array, Buffer};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The copy of `src` (the problem's dense rows, in words) into `dst` (its padded rows) with
/// `kernel`: checks that both hold what the problem needs, then launches.
pub fn launch(
    backend: &Backend,
    kernel: &Kernel<PadRows>,
    source: Source,
    problem: &PadRows,
    src: &impl Array<u32>,
    dst: &mut impl Array<u32>,
) -> Result<()> {
    let (src_words, dst_words) = words(problem);
    check_len("source", src.len(), src_words)?;
    check_len("copy", dst.len(), dst_words)?;
    let args = (
        src.address(backend)? as *const u8,
        dst.address_mut(backend)? as *mut u32,
        problem.rows,
        problem.cols,
        problem.bytes,
    );
    // SAFETY: each pointer is its array's address on this backend (16-byte aligned, as every
    // array's start is), holding the source's rows · cols elements and the copy's rows · pitch.
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &[src, &*dst]) }
}

/// Words of the source (its elements' bytes rounded up to words) and of the copy.
fn words(p: &PadRows) -> (usize, usize) {
    let bytes = p.bytes as usize;
    let source = (p.rows as usize * p.cols as usize * bytes).div_ceil(4);
    (source, p.rows as usize * p.pitch() as usize * bytes / 4)
}

/// The host side of the row-padding copy.
pub struct PadRowsDemo;

/// What the copy starts as: a word no padding (zeros) is, so a word the kernel did not write shows.
const POISON: u32 = 0xdead_beef;

/// One element and one row; widths of every remainder modulo a chunk (8 bf16, 4 f32), below and
/// above one chunk and one block of chunks; an LM head's odd width.
const EDGE_SIZES: [[usize; 3]; 12] = [
    [1, 1, 2],
    [1, 1, 4],
    [3, 7, 2],
    [2, 9, 4],
    [5, 8, 2],
    [5, 8, 4],
    [7, 33, 2],
    [4, 257, 4],
    [31, 1027, 2],
    [17, 2051, 4],
    [3, 50257, 2],
    [2, 50257, 4],
];

impl FamilyDemo for PadRowsDemo {
    fn family(&self) -> &'static dyn AnyFamily {
        &FAMILY
    }

    fn extents(&self) -> &'static [&'static str] {
        &["rows", "cols", "bytes"]
    }

    fn label(&self, size: Size) -> String {
        let [rows, cols, bytes] = size.0;
        format!("{rows}x{cols}x{bytes}B")
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let [rows, cols, bytes] = size.0;
        let problem = PadRows::new(rows, cols, bytes)?;
        for kernel in FAMILY.kernels {
            check_shape(kernel, &problem)?;
        }
        let (src, dst) = words(&problem);
        let (src, dst) = (4 * src as u64, 4 * (dst + GUARD) as u64);
        Ok(Plan {
            // The source read once, the copy written once.
            work: Work {
                bytes: (src + 4 * words(&problem).1 as u64) as f64,
                flops: 0.0,
                bound: Bound::Memory,
            },
            x: (rows * cols) as f64,
            // The source, the read-back copy and its poison, the expected copy.
            host_bytes: src + 3 * dst,
            device_bytes: src + dst,
        })
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let [rows, cols, bytes] = size.0;
        let problem = PadRows::new(rows, cols, bytes)?;
        let (src_words, dst_words) = words(&problem);
        let mut random = StdRng::seed_from_u64(substream(rng, 13));
        let source: Vec<u32> = (0..src_words).map(|_| random.random()).collect();
        let inputs = (0..sets.max(1))
            .map(|_| Buffer::upload(backend, &source))
            .collect::<Result<Vec<_>>>()?;
        let outputs = Outputs::new(backend, dst_words, GUARD, POISON, sets)?;
        Ok(Box::new(PadRowsCase {
            backend,
            problem,
            expected: expected(&problem, &source),
            inputs,
            outputs,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: "The row-padded copy the TMA matmul rungs make of an operand of odd width: rows of cols elements of 2 or 4 bytes, each row's copy starting 16-byte aligned",
            default: Size([768, 50257, 2]),
            emulator_cap: Size([1024, 1 << 16, 4]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            edge: EDGE_SIZES.iter().map(|&s| Size(s)).collect(),
            // GPT-2's LM head weights in bf16 and in f32; Llama 3's vocabulary in bf16.
            large: vec![Size([768, 50257, 2]), Size([768, 50257, 4]), Size([4096, 128_257, 2])],
            bench: vec![Size([768, 50257, 2]), Size([768, 50257, 4]), Size([4096, 128_257, 2])],
            smoke: Size([70, 135, 2]),
        }
    }
}

/// The padded copy of `source` (the dense rows' elements, little-endian in words), in words.
fn expected(p: &PadRows, source: &[u32]) -> Vec<u32> {
    let (bytes, cols, pitch) = (p.bytes as usize, p.cols as usize, p.pitch() as usize);
    let element = |i: usize| -> u32 {
        match bytes {
            2 => (source[i / 2] >> (16 * (i % 2))) & 0xffff,
            _ => source[i],
        }
    };
    let mut copy = vec![0u32; words(p).1];
    for row in 0..p.rows as usize {
        for c in 0..cols {
            let (value, at) = (element(row * cols + c), row * pitch + c);
            match bytes {
                2 => copy[at / 2] |= value << (16 * (at % 2)),
                _ => copy[at] = value,
            }
        }
    }
    copy
}

struct PadRowsCase<'a> {
    backend: &'a Backend,
    problem: PadRows,
    /// The copy the kernel must make.
    expected: Vec<u32>,
    inputs: Vec<Buffer<u32>>,
    outputs: Outputs<u32>,
}

impl Case for PadRowsCase<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        launch(
            self.backend,
            &FAMILY.kernels[kernel],
            source,
            &self.problem,
            &self.inputs[set],
            self.outputs.get_mut(set),
        )
    }

    fn poison(&mut self) -> Result<()> {
        self.outputs.poison(self.backend)
    }

    /// Every word of the copy, its padding zeros, and the guard past it untouched.
    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let out = self.outputs.read(self.backend, set)?;
        let len = self.expected.len();
        if let Some(i) = (0..len).find(|&i| out[i] != self.expected[i]) {
            let pitch_words = (self.problem.pitch() * self.problem.bytes / 4) as usize;
            return Err(format!(
                "word {i} of the copy (row {}, word {} of the row) is {:#010x}, expected {:#010x}",
                i / pitch_words,
                i % pitch_words,
                out[i],
                self.expected[i]
            ));
        }
        if let Some(i) = out[len..].iter().position(|&w| w != POISON) {
            return Err(format!("wrote past the end of the copy, at word {}", len + i));
        }
        let PadRows { rows, cols, bytes } = self.problem;
        Ok(format!(
            "{rows} rows of {cols} {bytes}-byte elements exact, padding zero"
        ))
    }
}
