//! The attention families' host side: their safe launch, random Q, K and V in bf16, and the f64
//! check of [`super::attention_oracle`]. The library to beat is PyTorch's
//! `scaled_dot_product_attention`, timed beside these kernels by the Python bench (`python/`).

use super::attention_oracle::{AttentionOracle, Geometry};
use super::auto::{Rung, Target};
use super::elementwise::check_shape;
use super::{
    Bound, Case, Cli, FamilyDemo, GUARD, KernelChoice, Outputs, Plan, Size, Sizes, Work, check_len, guarded_inputs,
    substream,
};
use kernels::Source;
use kernels::attention::{
    ANY_DIM_CAUSAL_FAMILY, ANY_DIM_FAMILY, Attention, CAUSAL_FAMILY, FAMILY, TensorMaps, specialized,
};
use ptxkit::device::mma::Bf16;
use ptxkit::{AnyFamily, Family, Kernel};
use ptxkit_runtime::Backend;
use ptxkit_runtime::array::{Array, Buffer};
use ptxkit_runtime::bf16_swizzled_stack;
use ptxkit_runtime::{Error, Result};

/// `O = softmax(Q·Kᵀ/√dim)·V` per head with `kernel`: checks that Q and O hold heads·seq·dim
/// bf16 (as `u16` bits) each, K and V heads / kv_group · seq·dim, 16-byte aligned (the kernels copy 16 bytes at a time),
/// where `backend` can reach them, then launches.
pub fn launch(
    backend: &Backend,
    kernel: &Kernel<Attention>,
    source: Source,
    problem: &Attention,
    inputs: (&impl Array<u16>, &impl Array<u16>, &impl Array<u16>),
    o: &mut impl Array<u16>,
) -> Result<()> {
    launch_inner(backend, (kernel, source), problem, inputs, o, None::<&mut Buffer<f32>>)
}

/// [`launch`], also writing each query row's log-sum-exp into the first heads·seq floats of `lse`
/// (`[heads][seq]`, log2 units of the scaled scores: what the backward pass reads in `stats`).
pub fn launch_with_lse(
    backend: &Backend,
    kernel: &Kernel<Attention>,
    source: Source,
    problem: &Attention,
    inputs: (&impl Array<u16>, &impl Array<u16>, &impl Array<u16>),
    (o, lse): (&mut impl Array<u16>, &mut impl Array<f32>),
) -> Result<()> {
    launch_inner(backend, (kernel, source), problem, inputs, o, Some(lse))
}

fn launch_inner(
    backend: &Backend,
    (kernel, source): (&Kernel<Attention>, Source),
    problem: &Attention,
    (q, k, v): (&impl Array<u16>, &impl Array<u16>, &impl Array<u16>),
    o: &mut impl Array<u16>,
    mut lse: Option<&mut impl Array<f32>>,
) -> Result<()> {
    let (len, kv_len) = (problem.len(), problem.kv_len());
    let lse_address = match lse {
        Some(ref mut lse) => {
            check_len("lse", lse.len(), problem.heads as usize * problem.seq as usize)?;
            lse.address_mut(backend)?
        }
        None => 0,
    };
    for (name, array_len, needed) in [
        ("Q", q.len(), len),
        ("K", k.len(), kv_len),
        ("V", v.len(), kv_len),
        ("O", o.len(), len),
    ] {
        check_len(name, array_len, needed)?;
    }
    let addresses = [
        q.address(backend)?,
        k.address(backend)?,
        v.address(backend)?,
        o.address_mut(backend)?,
    ];
    check_aligned(&["Q", "K", "V", "O"], &addresses)?;
    let [q_address, k_address, v_address, o_address] = addresses;
    let maps = tensor_maps(backend, kernel, problem, [q_address, k_address, v_address])?;
    let args = (
        q_address as *const Bf16,
        k_address as *const Bf16,
        v_address as *const Bf16,
        o_address as *mut Bf16,
        lse_address as *mut f32,
        problem.kv_group,
        problem.seq,
        problem.dim,
        maps,
    );
    // SAFETY: each pointer is its array's address on this backend, 16-byte aligned, holding the
    // elements the kernels read or write (heads·seq·dim of Q and O, heads / kv_group of that of K
    // and V; bf16 is u16's size); dim is one the kernel takes and kv_group divides heads
    // (Attention::new, ::grouped and ::any_dim checked them; the families' kernels take their
    // problems' dims); the TMA kernels get the maps of Q, K and V; lse is null or holds
    // heads·seq floats.
    unsafe {
        match lse {
            Some(lse) => backend.launch_from(source.module(), kernel, problem, args, &[q, k, v, &*o, &*lse]),
            None => backend.launch_from(source.module(), kernel, problem, args, &[q, k, v, &*o]),
        }
    }
}

/// `values` times `gain` rounded to bf16: the values as f32 (what the reference gets: exactly what
/// the kernels read) and their bits (what is uploaded). NaN guards stay NaN.
pub(crate) fn bf16_inputs(values: Vec<f32>, gain: f32) -> (Vec<f32>, Vec<u16>) {
    let bits: Vec<u16> = values.iter().map(|&x| Bf16::from_f32(gain * x).0).collect();
    (bits.iter().map(|&b| Bf16(b).to_f32()).collect(), bits)
}

/// Each of the attention kernels' bf16 arrays (named in `names`) starts 16-byte aligned: they copy
/// rows 16 bytes at a time.
pub(crate) fn check_aligned(names: &[&str], addresses: &[u64]) -> Result<()> {
    for (name, address) in names.iter().zip(addresses) {
        if !address.is_multiple_of(16) {
            return Err(Error::InvalidInput {
                what: name.to_string(),
                reason: format!(
                    "it starts at {address:#x}, not 16-byte aligned: the kernels copy rows 16 bytes at a \
                     time (pass a contiguous tensor of its own)"
                ),
            });
        }
    }
    Ok(())
}

/// The tensor maps of Q, K and V for the TMA kernels (on a GPU: they run nowhere else), null for
/// the others, which never read them.
fn tensor_maps(
    backend: &Backend,
    kernel: &Kernel<Attention>,
    problem: &Attention,
    [q, k, v]: [u64; 3],
) -> Result<*const TensorMaps> {
    let uses_maps = specialized::TMA_KERNELS.iter().any(|k| k.entry() == kernel.entry());
    match backend {
        Backend::Gpu(gpu) if uses_maps => {
            let shape = |heads| (heads, problem.seq, problem.dim);
            let [q_map, k_map, v_map] = [(q, problem.heads), (k, problem.kv_heads()), (v, problem.kv_heads())]
                .map(|(address, heads)| bf16_swizzled_stack(address, shape(heads), specialized::BOX));
            Ok(gpu.tensor_maps(&[q_map?, k_map?, v_map?])? as *const TensorMaps)
        }
        _ => Ok(std::ptr::null()),
    }
}

/// The host side of one attention family: every key, or the causal mask; head dimensions 64 and
/// 128, or any multiple of 8 up to 128.
pub struct AttentionDemo {
    pub causal: bool,
    pub any_dim: bool,
}

/// Every key.
pub const ATTENTION: AttentionDemo = AttentionDemo {
    causal: false,
    any_dim: false,
};
/// The causal mask.
pub const ATTENTION_CAUSAL: AttentionDemo = AttentionDemo {
    causal: true,
    any_dim: false,
};
/// Every key, any head dimension that is a multiple of 8 up to 128.
pub const ATTENTION_ANY_DIM: AttentionDemo = AttentionDemo {
    causal: false,
    any_dim: true,
};
/// The causal mask, any head dimension that is a multiple of 8 up to 128.
pub const ATTENTION_ANY_DIM_CAUSAL: AttentionDemo = AttentionDemo {
    causal: true,
    any_dim: true,
};

/// Bytes of one bf16.
const BF16_BYTES: u64 = 2;
/// The poison of O: a bf16 NaN.
const POISON: u16 = 0x7fc0;
/// Q's inputs are scaled by this, so that the scores spread over several units and the softmax
/// has peaks a wrong mask or a lost tile of keys would move.
const QUERY_GAIN: f32 = 4.0;

/// One row and one key; a warp's and a tile's edges (31, 33, 63, 65, 127, 129); a prime; both
/// head dimensions; several heads.
const EDGE_SHAPES: [[usize; 3]; 7] = [
    [1, 1, 64],
    [1, 1, 128],
    [2, 31, 128],
    [3, 33, 64],
    [1, 65, 128],
    [2, 129, 64],
    [1, 131, 128],
];

/// The same edges at head dimensions between and below the two built ones: 8 (the least), 40
/// (diffusion models), 72, 80 (Phi-2), 96 (Phi-3), 120, 56.
const ANY_DIM_EDGE_SHAPES: [[usize; 3]; 7] = [
    [1, 1, 8],
    [2, 31, 40],
    [3, 33, 72],
    [1, 65, 80],
    [2, 129, 96],
    [1, 131, 120],
    [2, 70, 56],
];

impl AttentionDemo {
    fn kernels_family(&self) -> &'static Family<Attention> {
        match (self.any_dim, self.causal) {
            (false, false) => &FAMILY,
            (false, true) => &CAUSAL_FAMILY,
            (true, false) => &ANY_DIM_FAMILY,
            (true, true) => &ANY_DIM_CAUSAL_FAMILY,
        }
    }

    fn problem(&self, [heads, seq, dim]: [usize; 3]) -> Result<Attention> {
        Ok(if self.any_dim {
            Attention::any_dim(heads, 1, seq, dim)?
        } else {
            Attention::new(heads, seq, dim)?
        })
    }
}

impl FamilyDemo for AttentionDemo {
    fn family(&self) -> &'static dyn AnyFamily {
        self.kernels_family()
    }

    fn extents(&self) -> &'static [&'static str] {
        &["heads", "seq", "dim"]
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let seq = size.0[1];
        let problem = self.problem(size.0)?;
        for kernel in self.kernels_family().kernels {
            check_shape(kernel, &problem)?;
        }
        let len = problem.len() as u64;
        let tensor = BF16_BYTES * (len + GUARD as u64);
        Ok(Plan {
            work: Work {
                bytes: (4 * BF16_BYTES * len) as f64,
                flops: problem.flops(self.causal),
                bound: Bound::Compute,
            },
            x: seq as f64,
            // The inputs as f32 and as bf16, the read-back O and its poison; the reference rows.
            host_bytes: 3 * (4 + 2) * (len + GUARD as u64) + 2 * tensor + 16 * len.min(1 << 22),
            // Q, K, V and O; each row's lse.
            device_bytes: 4 * tensor + 4 * (size.0[0] * seq + GUARD) as u64,
        })
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let problem = self.problem(size.0)?;
        let len = problem.len();
        // Random f32 rounded to bf16: the reference gets exactly the values the kernels read. The
        // guards stay NaN.
        let (q, q_bits) = bf16_inputs(guarded_inputs(substream(rng, 7), len), QUERY_GAIN);
        let (k, k_bits) = bf16_inputs(guarded_inputs(substream(rng, 8), len), 1.0);
        let (v, v_bits) = bf16_inputs(guarded_inputs(substream(rng, 9), len), 1.0);
        let oracle = AttentionOracle::new(
            Geometry::of_attention(problem, self.causal),
            (&q[..len], &k[..len], &v[..len]),
            substream(rng, 10),
        );
        let inputs = (0..sets.max(1))
            .map(|_| {
                Ok([
                    Buffer::upload(backend, &q_bits)?,
                    Buffer::upload(backend, &k_bits)?,
                    Buffer::upload(backend, &v_bits)?,
                ])
            })
            .collect::<Result<Vec<_>>>()?;
        let outputs = Outputs::new(backend, len, GUARD, POISON, sets)?;
        let rows = problem.heads as usize * problem.seq as usize;
        let lse = Outputs::new(backend, rows, GUARD, f32::NAN, sets)?;
        Ok(Box::new(AttentionCase {
            backend,
            family: self.kernels_family(),
            problem,
            oracle,
            inputs,
            outputs,
            lse,
        }))
    }

    fn cli(&self) -> Cli {
        Cli {
            about: match (self.any_dim, self.causal) {
                (false, true) => {
                    "softmax(Q·Kᵀ/√d)·V per head with the causal mask, bf16 in and out, fused (one kernel)"
                }
                (false, false) => "softmax(Q·Kᵀ/√d)·V per head over every key, bf16 in and out, fused (one kernel)",
                (true, true) => {
                    "softmax(Q·Kᵀ/√d)·V per head with the causal mask, any head dimension that is a multiple of 8 up to 128 (mma.sync)"
                }
                (true, false) => {
                    "softmax(Q·Kᵀ/√d)·V per head over every key, any head dimension that is a multiple of 8 up to 128 (mma.sync)"
                }
            },
            // Batch 8 × 16 heads, sequence 4096, head dimension 128: the shape; 96 (Phi-3)
            // for any dimension.
            default: Size([128, 4096, if self.any_dim { 96 } else { 128 }]),
            emulator_cap: Size([2, 160, 128]),
        }
    }

    fn sizes(&self) -> Sizes {
        if self.any_dim {
            return Sizes {
                edge: ANY_DIM_EDGE_SHAPES.iter().map(|&s| Size(s)).collect(),
                large: vec![Size([16, 1024, 80]), Size([8, 2049, 96]), Size([4, 4096, 40])],
                // Phi-2's and Phi-3's head dimensions at sequences of 1024 to 4096.
                bench: vec![Size([256, 1024, 80]), Size([128, 2048, 96]), Size([64, 4096, 96])],
                smoke: Size([2, 200, 80]),
            };
        }
        Sizes {
            edge: EDGE_SHAPES.iter().map(|&s| Size(s)).collect(),
            large: vec![Size([16, 1024, 128]), Size([8, 2049, 64]), Size([4, 4096, 128])],
            // Head dimension 128, sequences of 1024 to 8192 (the plot's x), 2–4 × 10⁹ scores each.
            bench: vec![
                Size([512, 1024, 128]),
                Size([256, 2048, 128]),
                Size([128, 4096, 128]),
                Size([32, 8192, 128]),
            ],
            smoke: Size([2, 200, 128]),
        }
    }

    fn choice(&self) -> &dyn KernelChoice {
        self
    }
}

impl KernelChoice for AttentionDemo {
    fn fastest_rung(&self, target: Target, _size: Size) -> Option<Rung> {
        if self.any_dim {
            return Some(Rung {
                entry: if self.causal {
                    "attention_causal_flash_any_dim"
                } else {
                    "attention_flash_any_dim"
                },
                why: "the one rung that takes any head dimension: mma.sync, staged 64 or 128 wide",
            });
        }
        let entry = match (self.causal, target.sm90a) {
            (false, true) => "attention_rebalanced",
            (false, false) => "attention_flash",
            (true, true) => "attention_causal_rebalanced",
            (true, false) => "attention_causal_flash",
        };
        let why = if target.sm90a {
            "a TMA producer warpgroup, setmaxnreg and ping-pong"
        } else {
            "FlashAttention-2's order on mma.sync: the fastest rung without sm_90a's PTX"
        };
        Some(Rung { entry, why })
    }
}

struct AttentionCase<'a> {
    backend: &'a Backend,
    family: &'static Family<Attention>,
    problem: Attention,
    oracle: AttentionOracle,
    inputs: Vec<[Buffer<u16>; 3]>,
    outputs: Outputs<u16>,
    /// Each row's log-sum-exp, which every kernel writes where asked.
    lse: Outputs<f32>,
}

impl Case for AttentionCase<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        let [q, k, v] = &self.inputs[set];
        launch_with_lse(
            self.backend,
            &self.family.kernels[kernel],
            source,
            &self.problem,
            (q, k, v),
            (self.outputs.get_mut(set), self.lse.get_mut(set)),
        )
    }

    fn poison(&mut self) -> Result<()> {
        self.outputs.poison(self.backend)?;
        self.lse.poison(self.backend)
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let len = self.problem.len();
        let o = self.outputs.read(self.backend, set)?;
        let summary = self.oracle.check(&o[..len])?;
        if let Some(i) = o[len..].iter().position(|&bits| bits != POISON) {
            return Err(format!("wrote past the end of O, at index {}", len + i));
        }
        let rows = self.problem.heads as usize * self.problem.seq as usize;
        let lse = self.lse.read(self.backend, set)?;
        let lse_summary = self.oracle.check_lse(&lse[..rows])?;
        match lse[rows..].iter().position(|x| !x.is_nan()) {
            None => Ok(format!("{summary}; {lse_summary}")),
            Some(i) => Err(format!("wrote past the end of lse, at index {}", rows + i)),
        }
    }
}
