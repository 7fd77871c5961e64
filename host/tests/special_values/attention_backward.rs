//! Attention's backward pass with grouped heads: one KV head per query head and one per three,
//! every key and causal, at sequences across a tile and past it, both head dimensions; random
//! inputs and large scores (a query row 16 times larger: a nearly one-hot softmax); each pass
//! from its own statistics and after a forward that saved each row's lse.

use crate::prelude::*;
use kernels::attention::backward::AttentionBackward;
use kernels::attention::{Attention, flash};
use kernels_host::families::attention;
use kernels_host::families::attention_backward::{self, BackwardArrays, pass_for};
use kernels_host::families::attention_backward_oracle::{BackwardOracle, Inputs};
use ptxkit::device::mma::Bf16;

/// Query heads of the checks.
const HEADS: usize = 6;

/// dQ, dK and dV of both launches on `backend` against the f64 reference, at a KV head per query
/// head and one per three.
pub(crate) fn attention_backward_meets_grouped_heads(backend: &Backend) {
    let stream = rng_stream();
    let mut failures = Vec::new();
    for (seq, dim) in [(1, 64), (33, 128), (130, 64), (33, 40), (65, 96)] {
        let mut rng = StdRng::seed_from_u64(stream ^ (seq * 1000 + dim) as u64);
        for kv_group in [1, 3] {
            let forward = Attention::any_dim(HEADS, kv_group, seq, dim).unwrap();
            let problem = AttentionBackward::new(forward).unwrap();
            let mut random = |len: usize, gain: f32| -> Vec<f32> {
                (0..len)
                    .map(|_| Bf16::from_f32(gain * rng.random_range(-1.0f32..1.0)).to_f32())
                    .collect()
            };
            let (len, kv_len) = (forward.len(), forward.kv_len());
            let mut q = random(len, 2.0);
            // Head 1's row 0 sixteen times larger.
            q[seq * dim..seq * dim + dim]
                .iter_mut()
                .for_each(|x| *x = Bf16::from_f32(*x * 16.0).to_f32());
            let (k, v, o, d_o) = (
                random(kv_len, 1.0),
                random(kv_len, 1.0),
                random(len, 1.0),
                random(len, 1.0),
            );
            let bits = |values: &[f32]| -> Vec<u16> { values.iter().map(|&x| Bf16::from_f32(x).0).collect() };
            let up = |values: &[f32]| Buffer::upload(backend, &bits(values)).unwrap();
            let (qb, kb, vb, ob, gb) = (up(&q), up(&k), up(&v), up(&o), up(&d_o));
            for (causal, saved_lse) in [(false, false), (true, false), (false, true), (true, true)] {
                let inputs = Inputs {
                    q: &q,
                    k: &k,
                    v: &v,
                    o: &o,
                    d_o: &d_o,
                };
                let oracle = BackwardOracle::new(forward, causal, inputs, stream);
                let label = format!(
                    "seq {seq}, dim {dim}, {kv_group} query heads per KV head, causal {causal}, lse saved {saved_lse}"
                );
                let poison = |n: usize| Buffer::upload(backend, &vec![0x7fc0u16; n]).unwrap();
                let (mut dq, mut dk, mut dv) = (poison(len), poison(kv_len), poison(kv_len));
                let mut stats = Buffer::upload(backend, &vec![f32::NAN; problem.stats_len()]).unwrap();
                if saved_lse {
                    // The forward saves each row's lse into the stats (its O unused).
                    let kernel = if causal {
                        &flash::KERNEL_ANY_DIM_CAUSAL
                    } else {
                        &flash::KERNEL_ANY_DIM
                    };
                    let mut forward_o = poison(len);
                    let saved = attention::launch_with_lse(
                        backend,
                        kernel,
                        Source::Rust,
                        &forward,
                        (&qb, &kb, &vb),
                        (&mut forward_o, &mut stats),
                    );
                    if let Err(e) = saved {
                        failures.push(format!("{label}: the forward: {e}"));
                        continue;
                    }
                }
                let arrays = BackwardArrays {
                    q: &qb,
                    k: &kb,
                    v: &vb,
                    o: &ob,
                    d_o: &gb,
                    dq: &mut dq,
                    dk: &mut dk,
                    dv: &mut dv,
                    stats: &mut stats,
                };
                let pass = pass_for(backend, &problem, causal, saved_lse, Source::Rust);
                if let Err(e) = attention_backward::launch(backend, &pass, Source::Rust, &problem, arrays) {
                    failures.push(format!("{label}: {e}"));
                    continue;
                }
                let read = |b: &Buffer<u16>| b.read(backend).unwrap();
                if let Err(e) = oracle.check(&read(&dq), &read(&dk), &read(&dv)) {
                    failures.push(format!("{label}: {e}"));
                }
            }
        }
    }
    assert_none_failed(&failures, stream);
}
