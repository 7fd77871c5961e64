//! The stencil on the emulator against its f64 reference, at sizes that end inside a block.

use ptxkit::device::{GlobalSlice, GlobalSliceMut};
use ptxkit::emu::{Schedule, with_schedule};
use {{crate}}::{KERNEL, RADIUS, Stencil, reference};

#[test]
fn stencil_matches_the_f64_reference_at_block_edges() {
    for n in [1, 7, 255, 256, 257, 1000, 4099] {
        let x: Vec<f32> = (0..n).map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 250.0).collect();
        let mut out = vec![f32::NAN; n];
        let problem = Stencil { n: n as u32 };
        // SAFETY: views of two live vectors, for this launch.
        unsafe { KERNEL.emulate(&problem, (GlobalSlice::new(&x), GlobalSliceMut::new(&mut out))) }.unwrap();
        // 2·RADIUS + 1 additions and a division, each within half an f32 unit of |x| ≤ 2.
        let bound = (2 * RADIUS + 3) as f64 * 2.0 * f32::EPSILON as f64;
        for (i, (got, want)) in out.iter().zip(reference(&x)).enumerate() {
            assert!((*got as f64 - want).abs() <= bound, "n = {n}, out[{i}] = {got}, expected {want}");
        }
    }
}

#[test]
fn stencil_does_not_depend_on_the_order_its_blocks_run_in() {
    let n = 3000;
    let x: Vec<f32> = (0..n).map(|i| (i % 13) as f32).collect();
    let want = reference(&x);
    for schedule in Schedule::all(7) {
        let mut out = vec![f32::NAN; n];
        // SAFETY: views of two live vectors, for this launch.
        with_schedule(schedule, || unsafe {
            KERNEL.emulate(&Stencil { n: n as u32 }, (GlobalSlice::new(&x), GlobalSliceMut::new(&mut out)))
        })
        .unwrap();
        for (i, (got, want)) in out.iter().zip(&want).enumerate() {
            assert!((*got as f64 - want).abs() <= 1e-5, "{schedule}: out[{i}] = {got}, expected {want}");
        }
    }
}
