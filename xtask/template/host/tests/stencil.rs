//! The stencil through the runtime's checked launch: on the emulator always, on the GPU where
//! there is one (`cargo test -- --include-ignored`).

use ptxkit_runtime::{Backend, Gpu};

fn check(backend: &Backend) {
    for n in [1, 255, 257, 100_003] {
        let x: Vec<f32> = (0..n).map(|i| ((i * 31 % 97) as f32 - 48.0) / 24.0).collect();
        let out = {{name_snake}}::stencil(backend, &x).unwrap();
        for (i, (got, want)) in out.iter().zip({{crate}}::reference(&x)).enumerate() {
            assert!((*got as f64 - want).abs() <= 1e-5, "{} n = {n}: out[{i}] = {got}, expected {want}", backend.name());
        }
    }
}

#[test]
fn stencil_on_the_emulator_matches_the_f64_reference() {
    check(&Backend::Emu);
}

#[test]
#[ignore = "needs an NVIDIA GPU: cargo test -- --include-ignored"]
fn stencil_on_the_gpu_matches_the_f64_reference() {
    let mut gpu = Gpu::open(None).expect("a GPU");
    gpu.load::<{{name_snake}}::{{Type}}>().unwrap();
    check(&Backend::Gpu(Box::new(gpu)));
}
