//! Special values through the operators, against what PyTorch gives: infinities, NaN, signed
//! zeros, subnormals and magnitudes near the float limits, alone in a row and mixed into random
//! inputs at random positions. On the emulator here; the GPU runs the same checks (ignored without
//! one).

#[path = "../turn/mod.rs"]
mod turn;

mod attention;
mod attention_backward;
mod attention_decode;
mod cross_entropy;
mod histograms;
mod moves;
mod norm_gradients;
mod norms;
mod products;
mod reductions;
mod residual_norms;
mod scans;
mod softmax;

/// What every check uses.
mod prelude {
    pub(crate) use crate::assert_none_failed;
    pub(crate) use crate::same;
    pub use kernels::Source;
    pub use kernels::special_values::{SPECIAL_VALUES, mix_in};
    pub use kernels::testing::{RNG_ENV, rng_stream};
    pub use kernels_host::families::runs_here;
    pub use ptxkit_runtime::Backend;
    pub use ptxkit_runtime::array::Buffer;
    pub use rand::rngs::StdRng;
    pub use rand::{Rng, SeedableRng};
}

/// Fails with every failure listed and the random stream that reproduces them.
pub(crate) fn assert_none_failed(failures: &[String], stream: u64) {
    assert!(
        failures.is_empty(),
        "{} failures (random stream {stream}; rerun with {}={stream}):\n{}",
        failures.len(),
        kernels::testing::RNG_ENV,
        failures.join("\n")
    );
}

use ptxkit_runtime::Backend;

/// Both NaN, or equal (`-0.0 == 0.0`: PyTorch leaves a zero's sign to the order).
pub(crate) fn same(got: f32, want: f32) -> bool {
    (got.is_nan() && want.is_nan()) || got == want
}

/// Each check as two tests: on the emulator (CI), and on the GPU, ignored without one (the runner
/// runs it with --include-ignored).
macro_rules! on_both_backends {
    ($($emulator:ident, $gpu:ident: $check:path;)*) => {$(
        #[test]
        fn $emulator() {
            $check(&Backend::Emu);
        }

        #[test]
        #[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
        fn $gpu() {
            $check(&turn::open());
        }
    )*};
}

on_both_backends! {
    moves_and_adds_keep_special_values_on_the_emulator, moves_and_adds_keep_special_values_on_the_gpu: moves::moves_and_adds_meet_special_values;
    reductions_give_pytorchs_answer_on_special_values_on_the_emulator, reductions_give_pytorchs_answer_on_special_values_on_the_gpu: reductions::reductions_meet_special_values;
    products_give_pytorchs_infinities_and_nan_on_the_emulator, products_give_pytorchs_infinities_and_nan_on_the_gpu: products::products_meet_special_values;
    convolutions_give_pytorchs_infinities_and_nan_on_the_emulator, convolutions_give_pytorchs_infinities_and_nan_on_the_gpu: products::convolutions_meet_special_values;
    transposes_move_special_values_bit_for_bit_on_the_emulator, transposes_move_special_values_bit_for_bit_on_the_gpu: moves::transposes_meet_special_values;
    scans_give_pytorchs_answer_on_special_values_on_the_emulator, scans_give_pytorchs_answer_on_special_values_on_the_gpu: scans::scans_meet_special_values;
    histograms_leave_out_special_values_as_cub_does_on_the_emulator, histograms_leave_out_special_values_as_cub_does_on_the_gpu: histograms::histograms_meet_special_values;
    softmax_gives_pytorchs_answer_on_special_values_on_the_emulator, softmax_gives_pytorchs_answer_on_special_values_on_the_gpu: softmax::softmax_meets_special_values;
    norms_give_pytorchs_answer_on_special_values_on_the_emulator, norms_give_pytorchs_answer_on_special_values_on_the_gpu: norms::norms_meet_special_values;
    residual_norms_give_pytorchs_answer_on_special_values_on_the_emulator, residual_norms_give_pytorchs_answer_on_special_values_on_the_gpu: residual_norms::residual_norms_meet_special_values;
    norm_gradients_give_ieee_nan_and_infinities_on_the_emulator, norm_gradients_give_ieee_nan_and_infinities_on_the_gpu: norm_gradients::norm_gradients_meet_special_values;
    cross_entropy_gives_pytorchs_answer_on_special_values_on_the_emulator, cross_entropy_gives_pytorchs_answer_on_special_values_on_the_gpu: cross_entropy::cross_entropy_meets_special_values;
    cross_entropy_for_training_gives_pytorchs_answer_on_special_values_on_the_emulator, cross_entropy_for_training_gives_pytorchs_answer_on_special_values_on_the_gpu: cross_entropy::cross_entropy_fused_meets_special_values;
    attention_gives_ieee_nan_and_infinities_on_the_emulator, attention_gives_ieee_nan_and_infinities_on_the_gpu: attention::attention_meets_special_values;
    attention_backward_takes_grouped_heads_on_the_emulator, attention_backward_takes_grouped_heads_on_the_gpu: attention_backward::attention_backward_meets_grouped_heads;
    decoding_attention_gives_ieee_nan_and_infinities_on_the_emulator, decoding_attention_gives_ieee_nan_and_infinities_on_the_gpu: attention_decode::decoding_attention_meets_special_values;
}
