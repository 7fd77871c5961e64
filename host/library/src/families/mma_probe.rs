//! The tensor-core probe's host side: random tiles in each kernel's operand format, and each D
//! against the f64 product of the operands as the tensor cores read them.

use super::elementwise::check_shape;
use super::{Bound, Case, Cli, FamilyDemo, GUARD, Outputs, Plan, Size, Sizes, Work, check_len, substream};
use kernels::Source;
use kernels::mma_probe::{A_WORDS, B_WORDS, C_LEN, FAMILY, KERNEL_F16, KERNEL_TF32, MmaProbe};
use ptxkit::device::mma::{Bf16, F16, tf32_value};
use ptxkit::{AnyFamily, Kernel};
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::array::{Array, Buffer};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// f32's unit roundoff.
const U: f64 = 1.0 / (1u64 << 24) as f64;

/// `d = a·b + c` per tile with `kernel`: checks the four arrays' lengths and that they live where
/// `backend` can reach them, then launches.
pub fn launch(
    backend: &Backend,
    kernel: &Kernel<MmaProbe>,
    source: Source,
    problem: &MmaProbe,
    (a, b, c): (&impl Array<u32>, &impl Array<u32>, &impl Array<f32>),
    d: &mut impl Array<f32>,
) -> Result<()> {
    let tiles = problem.tiles() as usize;
    check_len("a", a.len(), tiles * A_WORDS as usize)?;
    check_len("b", b.len(), tiles * B_WORDS as usize)?;
    check_len("c", c.len(), tiles * C_LEN as usize)?;
    check_len("d", d.len(), tiles * C_LEN as usize)?;
    let args = (
        a.address(backend)? as *const u32,
        b.address(backend)? as *const u32,
        c.address(backend)? as *const f32,
        d.address_mut(backend)? as *mut f32,
    );
    // SAFETY: each pointer is its array's address on this backend, each array holding every
    // launched warp's tile.
    unsafe { backend.launch_from(source.module(), kernel, problem, args, &[a, b, c, &*d]) }
}

/// The host side of the tensor-core probe.
pub struct MmaProbeDemo;

/// The operands of one kernel's format: A and B as words, C as f32.
struct Operands {
    a: Vec<u32>,
    b: Vec<u32>,
    c: Vec<f32>,
}

/// The operand formats the probe's kernels read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Bf16,
    F16,
    Tf32,
}

impl Format {
    const ALL: [Format; 3] = [Format::Bf16, Format::F16, Format::Tf32];

    fn of(kernel: &Kernel<MmaProbe>) -> Format {
        match kernel.entry() {
            e if e == KERNEL_TF32.entry() => Format::Tf32,
            e if e == KERNEL_F16.entry() => Format::F16,
            _ => Format::Bf16,
        }
    }

    /// Its place in [`Format::ALL`].
    fn index(self) -> usize {
        self as usize
    }

    /// Elements per word: two 16-bit ones, or one tf32.
    fn halves(self) -> bool {
        self != Format::Tf32
    }

    /// The k of its `mma.sync` shape.
    fn k(self) -> usize {
        if self.halves() { 16 } else { 8 }
    }

    /// The value of the element in `bits` (its 16 or 32 bits), as the tensor cores read it.
    fn value(self, bits: u32) -> f64 {
        match self {
            Format::Bf16 => Bf16(bits as u16).to_f32() as f64,
            Format::F16 => F16(bits as u16).to_f32() as f64,
            Format::Tf32 => tf32_value(bits) as f64,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Format::Bf16 => "bf16 m16n8k16",
            Format::F16 => "f16 m16n8k16",
            Format::Tf32 => "tf32 m16n8k8",
        }
    }
}

/// Random operands for `tiles` tiles in `format`: values in [-1, 1) that the format holds exactly.
fn operands(rng: u64, tiles: usize, format: Format) -> Operands {
    let mut random = StdRng::seed_from_u64(rng);
    let mut value = || -> u32 {
        let x: f32 = random.random_range(-1.0..1.0);
        match format {
            Format::Bf16 => Bf16::from_f32(x).0 as u32,
            Format::F16 => F16::from_f32(x).0 as u32,
            Format::Tf32 => x.to_bits() & !0x1fff,
        }
    };
    let word = |value: &mut dyn FnMut() -> u32| {
        if format.halves() {
            value() | (value() << 16)
        } else {
            value()
        }
    };
    let a = (0..tiles * A_WORDS as usize).map(|_| word(&mut value)).collect();
    let b = (0..tiles * B_WORDS as usize).map(|_| word(&mut value)).collect();
    let mut random = StdRng::seed_from_u64(substream(rng, 1));
    let c = (0..tiles * C_LEN as usize)
        .map(|_| random.random_range(-1.0..1.0))
        .collect();
    Operands { a, b, c }
}

/// Element (row, k) of tile `t`'s A and (k, col) of its B, as the tensor cores read them.
fn a_at(ops: &Operands, format: Format, t: usize, row: usize, k: usize) -> f64 {
    element(&ops.a[t * A_WORDS as usize + row * 8..], format, k)
}

fn b_at(ops: &Operands, format: Format, t: usize, k: usize, col: usize) -> f64 {
    element(&ops.b[t * B_WORDS as usize + col * 8..], format, k)
}

/// Element `k` of a row (or column) of words starting at `words[0]`.
fn element(words: &[u32], format: Format, k: usize) -> f64 {
    if format.halves() {
        format.value((words[k / 2] >> (16 * (k % 2))) & 0xffff)
    } else {
        format.value(words[k])
    }
}

impl FamilyDemo for MmaProbeDemo {
    fn family(&self) -> &'static dyn AnyFamily {
        &FAMILY
    }

    fn extents(&self) -> &'static [&'static str] {
        &["blocks"]
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let problem = MmaProbe::new(size.0[0])?;
        for kernel in FAMILY.kernels {
            check_shape(kernel, &problem)?;
        }
        let tiles = problem.tiles() as u64;
        let bytes = 4 * tiles * (A_WORDS + B_WORDS + 2 * C_LEN) as u64;
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

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let problem = MmaProbe::new(size.0[0])?;
        let tiles = problem.tiles() as usize;
        let formats = Format::ALL.map(|format| operands(substream(rng, format.index() as u64), tiles, format));
        let inputs = formats
            .iter()
            .map(|ops| {
                Ok((
                    Buffer::upload(backend, &ops.a)?,
                    Buffer::upload(backend, &ops.b)?,
                    Buffer::upload(backend, &ops.c)?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let outputs = Outputs::new(backend, tiles * C_LEN as usize, GUARD, f32::NAN, sets)?;
        Ok(Box::new(MmaProbeCase {
            backend,
            problem,
            formats,
            inputs,
            outputs,
            launched: vec![None; sets.max(1)],
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: "the tensor cores' mma.sync (bf16 and f16 m16n8k16, tf32 m16n8k8; bf16 again through ldmatrix), a tile per warp, against the f64 product: the fragment layouts checked",
            default: Size([1024, 1, 1]),
            emulator_cap: Size([16, 1, 1]),
        }
    }

    fn sizes(&self) -> Sizes {
        Sizes {
            edge: [1, 2, 3].iter().map(|&b| Size([b, 1, 1])).collect(),
            large: vec![Size([1 << 14, 1, 1])],
            bench: Vec::new(),
            smoke: Size([2, 1, 1]),
        }
    }
}

struct MmaProbeCase<'a> {
    backend: &'a Backend,
    problem: MmaProbe,
    /// The operands on the host, in the order of [`Format::ALL`].
    formats: [Operands; 3],
    inputs: Vec<(Buffer<u32>, Buffer<u32>, Buffer<f32>)>,
    outputs: Outputs<f32>,
    /// Per output set, the format of the kernel last launched into it.
    launched: Vec<Option<Format>>,
}

impl Case for MmaProbeCase<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        let kernel = &FAMILY.kernels[kernel];
        let format = Format::of(kernel);
        let (a, b, c) = &self.inputs[format.index()];
        launch(
            self.backend,
            kernel,
            source,
            &self.problem,
            (a, b, c),
            self.outputs.get_mut(set),
        )?;
        self.launched[set] = Some(format);
        Ok(())
    }

    fn poison(&mut self) -> Result<()> {
        self.outputs.poison(self.backend)
    }

    /// Each element within (k + 2)·4u of the f64 result, relative to |C| + Σ|A||B| (the products
    /// are exact in f32; the tensor cores' adder has its own order and rounding).
    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let format = self.launched[set].ok_or("no kernel was launched into this output")?;
        let ops = &self.formats[format.index()];
        let k = format.k();
        let tiles = self.problem.tiles() as usize;
        let out = self.outputs.read(self.backend, set)?;
        for t in 0..tiles {
            for row in 0..16 {
                for col in 0..8 {
                    let c = ops.c[t * C_LEN as usize + row * 8 + col] as f64;
                    let (mut sum, mut magnitude) = (c, c.abs());
                    for i in 0..k {
                        let p = a_at(ops, format, t, row, i) * b_at(ops, format, t, i, col);
                        sum += p;
                        magnitude += p.abs();
                    }
                    let got = out[t * C_LEN as usize + row * 8 + col];
                    let bound = (k + 2) as f64 * 4.0 * U * magnitude;
                    if got.is_nan() || (got as f64 - sum).abs() > bound {
                        return Err(format!(
                            "tile {t}, row {row}, column {col}: {got}, expected {sum:.8e} (bound {bound:.2e})"
                        ));
                    }
                }
            }
        }
        let len = tiles * C_LEN as usize;
        if let Some(i) = out[len..].iter().position(|v| !v.is_nan()) {
            return Err(format!("wrote past the end of D, at element {}", len + i));
        }
        Ok(format!("{tiles} tiles of {} within (k + 2)·4u", format.name()))
    }
}
