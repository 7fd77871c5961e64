//! The stencil on the emulator against its f64 reference, at sizes that end inside a block.

use {{crate}}::{KERNEL, RADIUS, Stencil, reference};

#[test]
fn stencil_matches_the_f64_reference_at_block_edges() {
    for n in [1, 7, 255, 256, 257, 1000, 4099] {
        let x: Vec<f32> = (0..n).map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 250.0).collect();
        let mut out = vec![f32::NAN; n];
        let problem = Stencil { n: n as u32 };
        // SAFETY: x and out hold n elements, what the stencil reads and writes for n.
        unsafe { KERNEL.emulate(&problem, (x.as_ptr(), out.as_mut_ptr(), problem.n)) }.unwrap();
        // 2·RADIUS + 1 additions and a division, each within half an f32 unit of |x| ≤ 2.
        let bound = (2 * RADIUS + 3) as f64 * 2.0 * f32::EPSILON as f64;
        for (i, (got, want)) in out.iter().zip(reference(&x)).enumerate() {
            assert!((*got as f64 - want).abs() <= bound, "n = {n}, out[{i}] = {got}, expected {want}");
        }
    }
}
