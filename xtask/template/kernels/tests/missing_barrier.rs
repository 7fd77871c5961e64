//! What the emulator does with a bug the GPU would hide: the stencil without its barrier reads
//! its neighbours' elements before they are staged, and the emulator names the threads and lines.

use ptxkit::device::{GlobalSlice, GlobalSliceMut, block_idx, thread_idx};
use ptxkit::emu::EmuError;
use ptxkit::{Occupancy, kernel};
use {{crate}}::{KERNEL, RADIUS, Stencil, Tile};

kernel! {
    /// The stencil's staging and sum, without the `sync_threads()` between them.
    unsafe fn stencil_without_barrier(x: GlobalSlice<f32>, out: GlobalSliceMut<f32>) {
        let Tile { values } = Tile::carve();
        let t = thread_idx().x;
        let i = (block_idx().x * {{crate}}::BLOCK + t) as usize;
        values.set(t + RADIUS, if i < x.len() { x.get(i) } else { 0.0 });
        if i < out.len() {
            let sum: f32 = (0..=2 * RADIUS).map(|k| values.get(t + k)).sum();
            out.set(i, sum);
        }
    }
}

#[test]
fn the_emulator_reports_the_read_before_the_neighbour_wrote() {
    let (x, mut out) = (vec![1.0f32; 512], vec![f32::NAN; 512]);
    let shape = KERNEL.launch_shape(&Stencil { n: 512 }, Occupancy::EMULATOR);
    // SAFETY: views of two live vectors, for this launch.
    let result = unsafe { stencil_without_barrier.emulate(&shape, (GlobalSlice::new(&x), GlobalSliceMut::new(&mut out))) };
    let Err(EmuError::KernelFailed { message, .. }) = result else {
        panic!("the emulator missed the race: {result:?}");
    };
    assert!(message.contains("values"), "{message}");
    assert!(message.contains("missing_barrier.rs"), "{message}");
}
