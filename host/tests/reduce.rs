//! The reductions' promise beyond their value: every variant gives the same bits on every run for
//! the same input and launch shape, on the emulator and on the GPU.

use kernels::Source;
use kernels::reduce::{FAMILY, Reduce};
use kernels_host::families::reduce::{complete, grid_inputs, resident_blocks};
use ptxkit_runtime::Backend;
use ptxkit_runtime::array::Buffer;

/// Sums `n` grid inputs with every reduce kernel three times, each time into freshly poisoned
/// scratch arrays, and requires the three totals' bits to be equal.
fn same_bits_every_run(backend: &Backend, n: usize) {
    let problem = Reduce::new(n, resident_blocks(backend, kernels::reduce::THREADS)).unwrap();
    let input = Buffer::upload(backend, &grid_inputs(7, n)).unwrap();
    let scratch_len = n.div_ceil(kernels::reduce::THREADS as usize) + 2;
    let mut ticket = Buffer::upload(backend, &[0u32]).unwrap();
    for kernel in FAMILY.kernels {
        let totals: Vec<u32> = (0..3)
            .map(|run| {
                let poison = vec![f32::from_bits(0x7fc0_0000 + run); scratch_len];
                let mut scratch = [
                    Buffer::upload(backend, &poison).unwrap(),
                    Buffer::upload(backend, &poison).unwrap(),
                ];
                let at = complete(
                    backend,
                    kernel,
                    Source::Rust,
                    &problem,
                    &input,
                    &mut scratch,
                    &mut ticket,
                )
                .unwrap();
                scratch[at].read(backend).unwrap()[0].to_bits()
            })
            .collect();
        assert!(
            totals.iter().all(|&t| t == totals[0] && !f32::from_bits(t).is_nan()),
            "{} gave different totals over three runs at n = {n}: {:?}",
            kernel.entry(),
            totals.iter().map(|&t| f32::from_bits(t)).collect::<Vec<_>>()
        );
    }
}

#[test]
fn every_reduction_gives_the_same_bits_every_run_on_the_emulator() {
    same_bits_every_run(&Backend::Emu, 300_007);
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn every_reduction_gives_the_same_bits_every_run_on_the_gpu() {
    let backend = Backend::Gpu(Box::new(
        kernels_host::open_gpu(None).unwrap_or_else(|e| panic!("the GPU suite needs a GPU: {e}")),
    ));
    same_bits_every_run(&backend, (1 << 26) + 3);
}
