//! Attention's backward pass, host side: the launches ([`launch`]: `mma.sync`'s two, or on sm_90a
//! the `wgmma` pass's three, [`pass_for`] choosing), random Q, K, V, O and dO in bf16 checked
//! against the f64 reference of [`super::attention_backward_oracle`]. A family per launch, every
//! key and causal; a family's case runs its whole pass (the other launches' kernels fixed), so that
//! each kernel is tested and timed under its own name. Where the `wgmma` launch cannot run (the
//! emulator, sm_80, head dimensions other than 64 and 128), the statistics', the delta's and the
//! finish's cases run `mma.sync`'s dK and dV launch between them: dK and dV checked against the
//! reference, dQ against the zeros of its sums. The saved-lse cases (the delta's, the saved first
//! launch's) first run the forward (`mma.sync`, untimed, with the inputs' upload) to save each
//! row's lse into `stats`. The library to beat is PyTorch's `scaled_dot_product_attention`
//! backward, timed by the Python bench.

use super::attention::{bf16_inputs, check_aligned};
use super::attention_backward_oracle::{BackwardOracle, Inputs};
use super::{
    Bound, Case, Cli, FamilyDemo, GUARD, KernelChoice, Outputs, Plan, Size, Sizes, Work, check_len, guarded_inputs,
    substream,
};
use kernels::Source;
use kernels::attention::backward::{
    AttentionBackward, DELTA_FAMILY, FINISH_FAMILY, KEYS_CAUSAL_FAMILY, KEYS_FAMILY, QUERY_CAUSAL_FAMILY, QUERY_FAMILY,
    QUERY_SAVED_CAUSAL_FAMILY, QUERY_SAVED_FAMILY, STATISTICS_CAUSAL_FAMILY, STATISTICS_FAMILY,
    STATISTICS_WGMMA_CAUSAL_FAMILY, STATISTICS_WGMMA_FAMILY, WGMMA_CAUSAL_FAMILY, WGMMA_FAMILY, delta, finish, keys,
    query, statistics, statistics_wgmma, wgmma,
};
use kernels::attention::{Attention, flash};
use ptxkit::device::mma::Bf16;
use ptxkit::{AnyFamily, Family, Kernel};
use ptxkit_runtime::array::{Array, Buffer};
use ptxkit_runtime::{Backend, Error, Result};

/// The arrays of one backward pass: Q, K, V, O and dO read, dQ, dK and dV written, and `stats`
/// ([`AttentionBackward::stats_len`] floats) written by the first launch and read by the others.
pub struct BackwardArrays<'a, B, F> {
    pub q: &'a B,
    pub k: &'a B,
    pub v: &'a B,
    pub o: &'a B,
    pub d_o: &'a B,
    pub dq: &'a mut B,
    pub dk: &'a mut B,
    pub dv: &'a mut B,
    pub stats: &'a mut F,
}

impl<B, F> BackwardArrays<'_, B, F> {
    fn reborrow(&mut self) -> BackwardArrays<'_, B, F> {
        BackwardArrays {
            q: self.q,
            k: self.k,
            v: self.v,
            o: self.o,
            d_o: self.d_o,
            dq: self.dq,
            dk: self.dk,
            dv: self.dv,
            stats: self.stats,
        }
    }
}

/// dQ, dK and dV by `pass`'s launches in order ([`pass_for`]'s, or one of its kernels swapped for
/// another of the same family). Checks that the masked launches agree on the mask, that the
/// `wgmma` launch has a head dimension of 64 or 128, and every array as [`launch_pass`] does.
pub fn launch<B: Array<u16>, F: Array<f32>>(
    backend: &Backend,
    pass: &[&Kernel<AttentionBackward>],
    source: Source,
    problem: &AttentionBackward,
    mut arrays: BackwardArrays<'_, B, F>,
) -> Result<()> {
    let causal = |kernel: &Kernel<AttentionBackward>| kernel.entry().ends_with("_causal");
    let unmasked = [finish::KERNEL.entry(), delta::KERNEL.entry()];
    let masked: Vec<_> = pass.iter().filter(|k| !unmasked.contains(&k.entry())).collect();
    if let Some(other) = masked.iter().find(|k| causal(k) != causal(masked[0])) {
        return Err(Error::InvalidInput {
            what: "kernels".into(),
            reason: format!("{} and {} differ in the causal mask", masked[0].entry(), other.entry()),
        });
    }
    let wgmma_entries = [
        wgmma::KERNEL.entry(),
        wgmma::KERNEL_CAUSAL.entry(),
        statistics_wgmma::KERNEL.entry(),
        statistics_wgmma::KERNEL_CAUSAL.entry(),
    ];
    if !WGMMA_DIMS.contains(&problem.0.dim) && pass.iter().any(|k| wgmma_entries.contains(&k.entry())) {
        return Err(Error::InvalidInput {
            what: "dim".into(),
            reason: format!(
                "the wgmma launches take head dimensions 64 and 128, not {}: the mma.sync launches take the others",
                problem.0.dim
            ),
        });
    }
    for kernel in pass {
        launch_pass(backend, kernel, source, problem, arrays.reborrow())?;
    }
    Ok(())
}

/// The head dimensions of the `wgmma` launch.
pub const WGMMA_DIMS: [u32; 2] = [64, 128];

/// The `wgmma` pass for a mask: statistics, dK and dV with the sums of dQ, dQ.
pub fn wgmma_pass(causal: bool) -> [&'static Kernel<AttentionBackward>; 3] {
    if causal {
        [&statistics_wgmma::KERNEL_CAUSAL, &wgmma::KERNEL_CAUSAL, &finish::KERNEL]
    } else {
        [&statistics_wgmma::KERNEL, &wgmma::KERNEL, &finish::KERNEL]
    }
}

/// The `wgmma` pass after a forward that saved each row's lse in `stats`: Δ with the sums
/// zeroed, dK and dV with the sums of dQ, dQ.
pub fn saved_lse_pass(causal: bool) -> [&'static Kernel<AttentionBackward>; 3] {
    let [_, middle, finish] = wgmma_pass(causal);
    [&delta::KERNEL, middle, finish]
}

/// The fastest pass `backend` runs for `problem`: the `wgmma` pass where it runs (sm_90a, head
/// dimensions 64 and 128; with `saved_lse`, the forward's lse already in `stats`, its first launch
/// [`delta`]), else `mma.sync`'s two launches (with `saved_lse`, the first launch's saved form:
/// no first pass over the keys).
pub fn pass_for(
    backend: &Backend,
    problem: &AttentionBackward,
    causal: bool,
    saved_lse: bool,
    source: Source,
) -> Vec<&'static Kernel<AttentionBackward>> {
    let wgmma = wgmma_pass(causal);
    if WGMMA_DIMS.contains(&problem.0.dim)
        && super::runs_here(backend, &wgmma[1].info("attention_backward_wgmma"), source)
    {
        if saved_lse { saved_lse_pass(causal) } else { wgmma }.to_vec()
    } else {
        let (first, second) = kernels_for(causal);
        let first = match (saved_lse, causal) {
            (false, _) => first,
            (true, false) => &query::KERNEL_SAVED,
            (true, true) => &query::KERNEL_SAVED_CAUSAL,
        };
        vec![first, second]
    }
}

/// One launch of either kernel on `arrays`: checks their lengths, that the bf16 arrays are
/// 16-byte aligned and that `backend` can reach them.
pub fn launch_pass<B: Array<u16>, F: Array<f32>>(
    backend: &Backend,
    kernel: &Kernel<AttentionBackward>,
    source: Source,
    problem: &AttentionBackward,
    arrays: BackwardArrays<'_, B, F>,
) -> Result<()> {
    let BackwardArrays {
        q,
        k,
        v,
        o,
        d_o,
        dq,
        dk,
        dv,
        stats,
    } = arrays;
    let (len, kv_len) = (problem.0.len(), problem.0.kv_len());
    for (name, array_len, needed) in [
        ("Q", q.len(), len),
        ("K", k.len(), kv_len),
        ("V", v.len(), kv_len),
        ("O", o.len(), len),
        ("dO", d_o.len(), len),
        ("dQ", dq.len(), len),
        ("dK", dk.len(), kv_len),
        ("dV", dv.len(), kv_len),
    ] {
        check_len(name, array_len, needed)?;
    }
    check_len("stats", stats.len(), problem.stats_len())?;
    let addresses = [
        q.address(backend)?,
        k.address(backend)?,
        v.address(backend)?,
        o.address(backend)?,
        d_o.address(backend)?,
        dq.address_mut(backend)?,
        dk.address_mut(backend)?,
        dv.address_mut(backend)?,
    ];
    check_aligned(&["Q", "K", "V", "O", "dO", "dQ", "dK", "dV"], &addresses)?;
    let stats_address = stats.address_mut(backend)?;
    let [q_a, k_a, v_a, o_a, do_a, dq_a, dk_a, dv_a] = addresses;
    let args = (
        q_a as *const Bf16,
        k_a as *const Bf16,
        v_a as *const Bf16,
        o_a as *const Bf16,
        do_a as *const Bf16,
        dq_a as *mut Bf16,
        dk_a as *mut Bf16,
        dv_a as *mut Bf16,
        stats_address as *mut f32,
        problem.0.kv_group,
        problem.0.seq,
        problem.0.dim,
    );
    // SAFETY: each pointer is its array's address on this backend, the bf16 ones 16-byte
    // aligned, each holding the elements the kernels read or write (heads·seq·dim of Q, O, dO and
    // dQ, heads / kv_group of that of K, V, dK and dV; bf16 is u16's size; the stats' 2·heads·seq
    // floats); dim is one of the kernels' and kv_group divides heads (Attention checked them).
    unsafe {
        backend.launch_from(
            source.module(),
            kernel,
            problem,
            args,
            &[q, k, v, o, d_o, &*dq, &*dk, &*dv, &*stats],
        )
    }
}

/// Which launch of which pass a family is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// `mma.sync`'s first launch (dQ, lse, Δ).
    Query,
    /// `mma.sync`'s first launch after a forward that saved each row's lse (dQ, Δ).
    QuerySaved,
    /// `mma.sync`'s second launch (dK, dV).
    Keys,
    /// The `mma.sync` form of the `wgmma` pass's first launch (lse, Δ, the sums zeroed).
    Statistics,
    /// The `wgmma` pass's first launch, on `wgmma`.
    StatisticsWgmma,
    /// The `wgmma` pass's second launch (dK, dV, the sums of dQ).
    Wgmma,
    /// The `wgmma` pass's last launch (dQ from its sums).
    Finish,
    /// The `wgmma` pass's first launch after a forward that saved each row's lse (Δ, the sums
    /// zeroed).
    Delta,
}

/// Which launch a family is, and its mask.
pub struct BackwardDemo {
    pub causal: bool,
    pub stage: Stage,
}

pub const ATTENTION_BACKWARD: BackwardDemo = BackwardDemo {
    causal: false,
    stage: Stage::Query,
};
pub const ATTENTION_BACKWARD_CAUSAL: BackwardDemo = BackwardDemo {
    causal: true,
    stage: Stage::Query,
};
pub const ATTENTION_BACKWARD_QUERY_SAVED: BackwardDemo = BackwardDemo {
    causal: false,
    stage: Stage::QuerySaved,
};
pub const ATTENTION_BACKWARD_QUERY_SAVED_CAUSAL: BackwardDemo = BackwardDemo {
    causal: true,
    stage: Stage::QuerySaved,
};
pub const ATTENTION_BACKWARD_KEYS: BackwardDemo = BackwardDemo {
    causal: false,
    stage: Stage::Keys,
};
pub const ATTENTION_BACKWARD_KEYS_CAUSAL: BackwardDemo = BackwardDemo {
    causal: true,
    stage: Stage::Keys,
};
pub const ATTENTION_BACKWARD_STATISTICS: BackwardDemo = BackwardDemo {
    causal: false,
    stage: Stage::Statistics,
};
pub const ATTENTION_BACKWARD_STATISTICS_CAUSAL: BackwardDemo = BackwardDemo {
    causal: true,
    stage: Stage::Statistics,
};
pub const ATTENTION_BACKWARD_STATISTICS_WGMMA: BackwardDemo = BackwardDemo {
    causal: false,
    stage: Stage::StatisticsWgmma,
};
pub const ATTENTION_BACKWARD_STATISTICS_WGMMA_CAUSAL: BackwardDemo = BackwardDemo {
    causal: true,
    stage: Stage::StatisticsWgmma,
};
pub const ATTENTION_BACKWARD_WGMMA: BackwardDemo = BackwardDemo {
    causal: false,
    stage: Stage::Wgmma,
};
pub const ATTENTION_BACKWARD_WGMMA_CAUSAL: BackwardDemo = BackwardDemo {
    causal: true,
    stage: Stage::Wgmma,
};
pub const ATTENTION_BACKWARD_FINISH: BackwardDemo = BackwardDemo {
    causal: false,
    stage: Stage::Finish,
};
pub const ATTENTION_BACKWARD_DELTA: BackwardDemo = BackwardDemo {
    causal: false,
    stage: Stage::Delta,
};

/// The first and second launch's kernels for a mask.
pub fn kernels_for(causal: bool) -> (&'static Kernel<AttentionBackward>, &'static Kernel<AttentionBackward>) {
    if causal {
        (&query::KERNEL_CAUSAL, &keys::KERNEL_CAUSAL)
    } else {
        (&query::KERNEL, &keys::KERNEL)
    }
}

/// The poison of the gradients: a bf16 NaN.
const POISON: u16 = 0x7fc0;

impl BackwardDemo {
    fn kernels_family(&self) -> &'static Family<AttentionBackward> {
        match (self.stage, self.causal) {
            (Stage::Query, false) => &QUERY_FAMILY,
            (Stage::Query, true) => &QUERY_CAUSAL_FAMILY,
            (Stage::QuerySaved, false) => &QUERY_SAVED_FAMILY,
            (Stage::QuerySaved, true) => &QUERY_SAVED_CAUSAL_FAMILY,
            (Stage::Keys, false) => &KEYS_FAMILY,
            (Stage::Keys, true) => &KEYS_CAUSAL_FAMILY,
            (Stage::Statistics, false) => &STATISTICS_FAMILY,
            (Stage::Statistics, true) => &STATISTICS_CAUSAL_FAMILY,
            (Stage::StatisticsWgmma, false) => &STATISTICS_WGMMA_FAMILY,
            (Stage::StatisticsWgmma, true) => &STATISTICS_WGMMA_CAUSAL_FAMILY,
            (Stage::Wgmma, false) => &WGMMA_FAMILY,
            (Stage::Wgmma, true) => &WGMMA_CAUSAL_FAMILY,
            (Stage::Finish, _) => &FINISH_FAMILY,
            (Stage::Delta, _) => &DELTA_FAMILY,
        }
    }
}

impl FamilyDemo for BackwardDemo {
    fn family(&self) -> &'static dyn AnyFamily {
        self.kernels_family()
    }

    fn extents(&self) -> &'static [&'static str] {
        &["heads", "seq", "dim"]
    }

    fn plan(&self, size: Size) -> Result<Plan> {
        let [heads, seq, dim] = size.0;
        if matches!(self.stage, Stage::Wgmma | Stage::StatisticsWgmma) && !WGMMA_DIMS.contains(&(dim as u32)) {
            return Err(Error::InvalidInput {
                what: "dim".into(),
                reason: format!(
                    "{} takes head dimensions 64 and 128 (got {dim})",
                    self.kernels_family().kernels[0].entry()
                ),
            });
        }
        let problem = AttentionBackward::new(Attention::any_dim(heads, 1, seq, dim)?)?;
        let len = problem.0.len() as u64;
        let tensor = 2 * (len + GUARD as u64);
        Ok(Plan {
            work: Work {
                bytes: (2 * 8 * len) as f64,
                flops: problem.flops(self.causal),
                bound: Bound::Compute,
            },
            x: seq as f64,
            // Five inputs as f32 and bf16, three read-back gradients and their poison, the
            // reference (rows of lse terms and sampled rows).
            host_bytes: 5 * 6 * (len + GUARD as u64)
                + 3 * 2 * tensor
                + 64 * (heads * seq) as u64
                + 64 * len.min(1 << 22),
            device_bytes: 8 * tensor + 4 * (problem.stats_len() + GUARD) as u64,
        })
    }

    fn prepare<'a>(&self, backend: &'a Backend, size: Size, rng: u64, sets: usize) -> Result<Box<dyn Case + 'a>> {
        let [heads, seq, dim] = size.0;
        let problem = AttentionBackward::new(Attention::any_dim(heads, 1, seq, dim)?)?;
        let len = problem.0.len();
        let inputs: Vec<(Vec<f32>, Vec<u16>)> = (0..5)
            .map(|i| {
                bf16_inputs(
                    guarded_inputs(substream(rng, 20 + i), len),
                    if i == 0 { 2.0 } else { 1.0 },
                )
            })
            .collect();
        let oracle = BackwardOracle::new(
            problem.0,
            self.causal,
            Inputs {
                q: &inputs[0].0[..len],
                k: &inputs[1].0[..len],
                v: &inputs[2].0[..len],
                o: &inputs[3].0[..len],
                d_o: &inputs[4].0[..len],
            },
            substream(rng, 25),
        );
        let buffers = (0..sets.max(1))
            .map(|_| {
                inputs
                    .iter()
                    .map(|(_, bits)| Buffer::upload(backend, bits))
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<Vec<_>>>()?;
        let gradients = (0..3)
            .map(|_| Outputs::new(backend, len, GUARD, POISON, sets))
            .collect::<Result<Vec<_>>>()?;
        let wgmma_here = WGMMA_DIMS.contains(&problem.0.dim)
            && super::runs_here(backend, &wgmma::KERNEL.info("attention_backward_wgmma"), Source::Rust);
        // The forward's O, which only the saved-lse stages' forward writes (its lse is what counts).
        let forward_o = if matches!(self.stage, Stage::Delta | Stage::QuerySaved) {
            Some(Buffer::upload(backend, &vec![0u16; len])?)
        } else {
            None
        };
        Ok(Box::new(BackwardCase {
            backend,
            causal: self.causal,
            stage: self.stage,
            wgmma_here,
            family: self.kernels_family(),
            problem,
            oracle,
            inputs: buffers,
            gradients,
            stats: Outputs::new(backend, problem.stats_len(), GUARD, f32::NAN, sets)?,
            forward_o,
        }))
    }

    fn cli(&self) -> Cli {
        let about = match (self.stage, self.causal) {
            (Stage::Query, false) => {
                "attention's backward, first launch (dQ, each row's lse and Δ), with the second for dK and dV: bf16, f32 sums, mma.sync"
            }
            (Stage::Query, true) => {
                "attention's backward with the causal mask, first launch (dQ), with the second (dK, dV)"
            }
            (Stage::QuerySaved, false) => {
                "attention's backward after a forward that saved each row's lse (run first, untimed): the first launch without its pass over the keys for the lse (dQ, Δ), with the second for dK and dV; mma.sync"
            }
            (Stage::QuerySaved, true) => {
                "attention's backward with the causal mask after a forward that saved each row's lse, first launch (dQ, Δ), with the second"
            }
            (Stage::Keys, false) => {
                "attention's backward, second launch (dK and dV from the rows' lse and Δ), after the first"
            }
            (Stage::Keys, true) => "attention's backward with the causal mask, second launch (dK, dV), after the first",
            (Stage::Statistics, false) => {
                "attention's backward on wgmma, first launch (each row's lse and Δ, the sums of dQ zeroed), with the other two"
            }
            (Stage::Statistics, true) => {
                "attention's backward on wgmma with the causal mask, first launch (lse, Δ), with the other two"
            }
            (Stage::StatisticsWgmma, false) => {
                "attention's backward on wgmma, first launch on wgmma (sm_90a; head dims 64, 128): lse from the forward's first product, Δ, the sums zeroed"
            }
            (Stage::StatisticsWgmma, true) => {
                "attention's backward on wgmma with the causal mask, first launch on wgmma (lse, Δ), with the other two"
            }
            (Stage::Wgmma, false) => {
                "attention's backward on wgmma (sm_90a; head dims 64, 128): dK, dV and dQ's sums a block of 128 keys, between the statistics and the finish"
            }
            (Stage::Wgmma, true) => {
                "attention's backward on wgmma with the causal mask: dK, dV and dQ's sums, between the other two"
            }
            (Stage::Finish, _) => {
                "attention's backward on wgmma, last launch: dQ from its f32 sums, after the other two"
            }
            (Stage::Delta, _) => {
                "attention's backward on wgmma after a forward that saved each row's lse (run first, untimed): Δ and the sums zeroed, with the other two"
            }
        };
        Cli {
            about,
            default: Size([128, 4096, 128]),
            emulator_cap: Size([2, 130, 128]),
        }
    }

    fn sizes(&self) -> Sizes {
        if matches!(self.stage, Stage::Wgmma | Stage::StatisticsWgmma) {
            return Sizes {
                edge: vec![
                    Size([1, 1, 64]),
                    Size([1, 1, 128]),
                    Size([2, 2, 128]),
                    Size([2, 31, 128]),
                    Size([3, 33, 64]),
                    Size([1, 63, 128]),
                    Size([1, 65, 128]),
                    Size([2, 129, 64]),
                    Size([1, 131, 128]),
                    Size([2, 257, 128]),
                ],
                large: vec![Size([8, 1024, 128]), Size([4, 2049, 64]), Size([3, 1000, 128])],
                bench: vec![Size([128, 4096, 128]), Size([32, 8192, 128]), Size([256, 2048, 64])],
                smoke: Size([2, 100, 128]),
            };
        }
        Sizes {
            edge: vec![
                Size([1, 1, 64]),
                Size([1, 1, 128]),
                Size([2, 31, 128]),
                Size([3, 33, 64]),
                Size([1, 65, 128]),
                Size([2, 129, 64]),
                // Head dimensions between the built ones, staged 64 or 128 wide.
                Size([1, 31, 8]),
                Size([2, 33, 40]),
                Size([1, 65, 96]),
            ],
            large: vec![Size([8, 1024, 128]), Size([4, 2049, 64])],
            bench: vec![Size([128, 4096, 128]), Size([32, 8192, 128]), Size([256, 2048, 64])],
            smoke: Size([2, 100, 128]),
        }
    }

    fn choice(&self) -> &dyn KernelChoice {
        self
    }
}

impl KernelChoice for BackwardDemo {}

struct BackwardCase<'a> {
    backend: &'a Backend,
    causal: bool,
    stage: Stage,
    /// Whether the `wgmma` launch runs on this backend at this head dimension; where it does not,
    /// the statistics' and the finish's cases run `mma.sync`'s dK and dV between them.
    wgmma_here: bool,
    family: &'static Family<AttentionBackward>,
    problem: AttentionBackward,
    oracle: BackwardOracle,
    /// Per set: Q, K, V, O, dO.
    inputs: Vec<Vec<Buffer<u16>>>,
    /// dQ, dK, dV.
    gradients: Vec<Outputs<u16>>,
    stats: Outputs<f32>,
    /// [`Stage::Delta`]'s and [`Stage::QuerySaved`]'s: the O its forward writes while saving each
    /// row's lse into `stats`.
    forward_o: Option<Buffer<u16>>,
}

impl Case for BackwardCase<'_> {
    fn launch(&mut self, kernel: usize, source: Source, set: usize) -> Result<()> {
        let (first, second) = kernels_for(self.causal);
        let [statistics, wgmma, finish] = wgmma_pass(self.causal);
        let middle = if self.wgmma_here { wgmma } else { second };
        // The statistics' mma.sync form before mma.sync's dK and dV where wgmma does not run.
        let statistics = if self.wgmma_here {
            statistics
        } else if self.causal {
            &statistics::KERNEL_CAUSAL
        } else {
            &statistics::KERNEL
        };
        let chosen = &self.family.kernels[kernel];
        let pass = match self.stage {
            Stage::Query | Stage::QuerySaved => [chosen, second].to_vec(),
            Stage::Keys => [first, chosen].to_vec(),
            Stage::Statistics | Stage::StatisticsWgmma => [chosen, middle, finish].to_vec(),
            Stage::Wgmma => [statistics, chosen, finish].to_vec(),
            Stage::Finish => [statistics, middle, chosen].to_vec(),
            Stage::Delta => [chosen, middle, finish].to_vec(),
        };
        let [dq, dk, dv] = &mut self.gradients[..] else {
            unreachable!("three gradients")
        };
        let inputs = &self.inputs[set];
        let arrays = BackwardArrays {
            q: &inputs[0],
            k: &inputs[1],
            v: &inputs[2],
            o: &inputs[3],
            d_o: &inputs[4],
            dq: dq.get_mut(set),
            dk: dk.get_mut(set),
            dv: dv.get_mut(set),
            stats: self.stats.get_mut(set),
        };
        launch(self.backend, &pass, source, &self.problem, arrays)
    }

    fn poison(&mut self) -> Result<()> {
        for gradient in &mut self.gradients {
            gradient.poison(self.backend)?;
        }
        self.stats.poison(self.backend)?;
        if let Some(o) = &mut self.forward_o {
            // The forward (mma.sync, any head dimension) saves each row's lse into the stats,
            // as a training step's forward would before this pass: untimed, as the inputs are.
            let forward = Attention::any_dim(
                self.problem.0.heads as usize,
                1,
                self.problem.0.seq as usize,
                self.problem.0.dim as usize,
            )?;
            let kernel = if self.causal {
                &flash::KERNEL_ANY_DIM_CAUSAL
            } else {
                &flash::KERNEL_ANY_DIM
            };
            for set in 0..self.inputs.len() {
                let inputs = &self.inputs[set];
                super::attention::launch_with_lse(
                    self.backend,
                    kernel,
                    Source::Rust,
                    &forward,
                    (&inputs[0], &inputs[1], &inputs[2]),
                    (&mut *o, self.stats.get_mut(set)),
                )?;
            }
        }
        Ok(())
    }

    fn check(&self, set: usize) -> std::result::Result<String, String> {
        let len = self.problem.0.len();
        let read = |i: usize| self.gradients[i].read(self.backend, set);
        let (dq, dk, dv) = (read(0)?, read(1)?, read(2)?);
        for (name, values) in [("dQ", &dq), ("dK", &dk), ("dV", &dv)] {
            if let Some(i) = values[len..].iter().position(|&bits| bits != POISON) {
                return Err(format!("wrote past the end of {name}, at index {}", len + i));
            }
        }
        let mma_between = matches!(self.stage, Stage::Statistics | Stage::Finish | Stage::Delta) && !self.wgmma_here;
        if !mma_between {
            return self.oracle.check(&dq[..len], &dk[..len], &dv[..len]);
        }
        // mma.sync's dK and dV between the two: dQ is its zeroed sums, finished.
        if let Some(i) = dq[..len].iter().position(|&bits| bits != 0) {
            return Err(format!(
                "dQ[{i}] = {:#06x} where the statistics zeroed its sums and nothing added to them",
                dq[i]
            ));
        }
        let summary = self.oracle.check_keys(&dk[..len], &dv[..len])?;
        Ok(format!(
            "{summary}; dQ's {len} sums zeroed and finished (mma.sync's dK and dV between)"
        ))
    }
}
