//! What the emulator reports for bugs in global memory, with the threads, the blocks and the
//! lines: an index past a view, two threads writing one element, and a block reading another
//! block's output with nothing ordering the two (in every order the blocks may run in).

use ptxkit::device::{GlobalSlice, GlobalSliceMut, block_dim, block_idx, thread_idx};
use ptxkit::emu::{EmuError, Schedule, with_schedule};
use ptxkit::{Dim3, LaunchShape, kernel};

kernel! {
    /// out[i] = x[i], with no bound on i: the grid is rounded up to whole blocks.
    unsafe fn copy_without_a_bound(x: GlobalSlice<f32>, out: GlobalSliceMut<f32>) {
        let i = block_idx().x * block_dim().x + thread_idx().x;
        out.set(i, x.get(i));
    }
}

kernel! {
    /// Every thread adds its element into out[0] with a plain load and store.
    unsafe fn sum_without_an_atomic(x: GlobalSlice<f32>, out: GlobalSliceMut<f32>) {
        let i = block_idx().x * block_dim().x + thread_idx().x;
        out.set(0u32, out.get(0u32) + x.get(i));
    }
}

kernel! {
    /// Block b writes its number, then reads the number block b - 1 wrote: no flag, no fence.
    unsafe fn read_the_block_before(out: GlobalSliceMut<u32>) {
        let b = block_idx().x;
        if thread_idx().x == 0 {
            out.set(b, b);
            if b > 0 {
                out.set(b, out.get(b - 1) + 1);
            }
        }
    }
}

fn shape(blocks: u32) -> LaunchShape {
    LaunchShape { grid: Dim3::x(blocks), block: Dim3::x(64), shared_bytes: 0 }
}

fn message(result: Result<(), EmuError>) -> String {
    match result {
        Err(EmuError::KernelFailed { message, .. }) => message,
        other => panic!("the emulator missed the bug: {other:?}"),
    }
}

#[test]
fn the_emulator_reports_an_index_past_a_view() {
    let (x, mut out) = (vec![1.0f32; 100], vec![0.0f32; 100]);
    // SAFETY: views of two live vectors, for this launch.
    let result = unsafe { copy_without_a_bound.emulate(&shape(2), (GlobalSlice::new(&x), GlobalSliceMut::new(&mut out))) };
    let message = message(result);
    assert!(message.contains("out of bounds") && message.contains("`x`"), "{message}");
    assert!(message.contains("global_memory.rs"), "{message}");
}

#[test]
fn the_emulator_reports_two_threads_writing_one_element() {
    let (x, mut out) = (vec![1.0f32; 64], vec![0.0f32; 1]);
    // SAFETY: as above.
    let result = unsafe { sum_without_an_atomic.emulate(&shape(1), (GlobalSlice::new(&x), GlobalSliceMut::new(&mut out))) };
    let message = message(result);
    assert!(message.contains("global-memory race on element 0 of `out`"), "{message}");
    assert!(message.contains("global_memory.rs"), "{message}");
}

#[test]
fn the_emulator_reports_a_block_reading_another_blocks_output_in_every_schedule() {
    for schedule in Schedule::all(7) {
        let mut out = vec![0u32; 16];
        // SAFETY: a view of a live vector, for this launch.
        let result = with_schedule(schedule, || unsafe { read_the_block_before.emulate(&shape(16), (GlobalSliceMut::new(&mut out),)) });
        let message = message(result);
        assert!(message.contains("global-memory race") && message.contains("of `out`"), "{schedule}: {message}");
        assert!(message.contains("release") && message.contains("acquire"), "{schedule}: {message}");
    }
}
