//! Deliberately broken kernels: each bug that shared-memory kernels actually have, and the report
//! the emulator must give for it, naming the kernel, the block, the thread(s), the element and the
//! source lines. Every real kernel of the project runs clean under the same detectors (the family
//! suite, `host/tests/families.rs`).

use ptxkit::device::{DynamicShared, block_idx, global_store, lane_id, shfl_idx, sync_threads, sync_warp, thread_idx};
use ptxkit::{Dim3, LaunchShape, kernel};

mod common;
use common::failure;

fn launch(grid: Dim3, block: Dim3, shared_bytes: u32) -> LaunchShape {
    LaunchShape {
        grid,
        block,
        shared_bytes,
    }
}

/// Where in this file a report must point: the line of `needle`.
fn line_of(needle: &str) -> String {
    common::line_in("detectors.rs", include_str!("detectors.rs"), needle)
}

kernel! {
    /// Stages a value per thread and reads the left neighbour's with no barrier between: the
    /// neighbour may not have written yet.
    unsafe fn neighbour_read_without_a_barrier(out: *mut f32) {
        let staged = DynamicShared::new().named_slice::<f32>("staged", 64);
        let t = thread_idx().x;
        staged.set(t, t as f32); // STAGE
        let left = if t > 0 { staged.get(t - 1) } else { 0.0 }; // READ LEFT
        // SAFETY: one output per thread.
        unsafe { *out.add(t as usize) = left };
    }
}

#[test]
fn a_missing_barrier_is_a_read_after_write_race() {
    let mut out = vec![0.0f32; 64];
    // SAFETY: one output per thread.
    let result =
        unsafe { neighbour_read_without_a_barrier.emulate(&launch(Dim3::x(2), Dim3::x(64), 256), (out.as_mut_ptr(),)) };
    let (kernel, block, thread, message) = failure(result);
    assert_eq!(kernel, "neighbour_read_without_a_barrier");
    assert_eq!((block, thread), (Dim3::new(0, 0, 0), Dim3::new(1, 0, 0)));
    assert!(
        message.contains("shared-memory race on view `staged`, element 0"),
        "{message}"
    );
    assert!(message.contains("thread (0, 0, 0) wrote it at"), "{message}");
    assert!(message.contains("thread (1, 0, 0) reads it at"), "{message}");
    assert!(message.contains(&line_of("// STAGE")), "{message}");
    assert!(message.contains(&line_of("// READ LEFT")), "{message}");
}

kernel! {
    /// Shifts a staged row left in place: thread t reads element t + 1, which thread t + 1
    /// overwrites in the same barrier interval.
    unsafe fn shift_in_place_without_a_barrier(out: *mut f32) {
        let row = DynamicShared::new().named_slice::<f32>("row", 33);
        let t = thread_idx().x;
        row.set(t, t as f32);
        if t == 0 {
            row.set(32, 32.0);
        }
        sync_threads();
        let next = row.get(t + 1); // READ NEXT
        row.set(t, next); // OVERWRITE
        // SAFETY: one output per thread.
        unsafe { *out.add(t as usize) = next };
    }
}

#[test]
fn overwriting_what_another_thread_reads_is_a_write_after_read_race() {
    let mut out = vec![0.0f32; 32];
    // SAFETY: one output per thread.
    let result = unsafe {
        shift_in_place_without_a_barrier.emulate(&launch(Dim3::x(1), Dim3::x(32), 33 * 4), (out.as_mut_ptr(),))
    };
    let (_, _, thread, message) = failure(result);
    assert_eq!(thread, Dim3::new(1, 0, 0));
    assert!(message.contains("race on view `row`, element 1"), "{message}");
    assert!(message.contains("thread (0, 0, 0) read it at"), "{message}");
    assert!(message.contains("thread (1, 0, 0) writes it at"), "{message}");
    assert!(message.contains(&line_of("// READ NEXT")), "{message}");
    assert!(message.contains(&line_of("// OVERWRITE")), "{message}");
}

kernel! {
    /// Lanes pass values through shared memory within their warp, ordered by `sync_warp` when
    /// `ordered` is 1: legal warp-synchronous code then, a race without it.
    unsafe fn warp_exchange_through_shared_memory(out: *mut u32, ordered: u32) {
        let slots = DynamicShared::new().named_slice::<u32>("slots", 64);
        let t = thread_idx().x;
        slots.set(t, t * 10);
        if ordered == 1 {
            sync_warp();
        }
        let partner = (t & !31) | ((t + 1) & 31);
        let value = slots.get(partner);
        // SAFETY: one output per thread.
        unsafe { *out.add(t as usize) = value };
    }
}

#[test]
fn lanes_ordered_by_sync_warp_do_not_race_and_unordered_lanes_do() {
    let mut out = vec![0u32; 64];
    let shape = launch(Dim3::x(1), Dim3::x(64), 256);
    // SAFETY: one output per thread.
    unsafe { warp_exchange_through_shared_memory.emulate(&shape, (out.as_mut_ptr(), 1)) }.unwrap();
    let expected: Vec<u32> = (0..64u32).map(|t| ((t & !31) | ((t + 1) & 31)) * 10).collect();
    assert_eq!(out, expected);
    // SAFETY: as above.
    let result = unsafe { warp_exchange_through_shared_memory.emulate(&shape, (out.as_mut_ptr(), 0)) };
    let (_, _, thread, message) = failure(result);
    // Lane 0 reads lane 1's slot before lane 1 has run: unwritten in this block, caught first.
    assert_eq!(thread, Dim3::new(0, 0, 0));
    assert!(message.contains("view `slots`, element 1"), "{message}");
}

kernel! {
    /// Reads a neighbour's slot written in the same warp, the reader running after the writer, with
    /// no warp-level sync: a race the GPU may or may not show.
    unsafe fn warp_read_after_write_without_sync(out: *mut u32) {
        let slots = DynamicShared::new().named_slice::<u32>("slots", 32);
        let t = thread_idx().x;
        slots.set(t, t + 100);
        let value = if t > 0 { slots.get(t - 1) } else { 0 };
        // SAFETY: one output per thread.
        unsafe { *out.add(t as usize) = value };
    }
}

#[test]
fn lanes_of_one_warp_without_a_warp_level_sync_race() {
    let mut out = vec![0u32; 32];
    // SAFETY: one output per thread.
    let result = unsafe {
        warp_read_after_write_without_sync.emulate(&launch(Dim3::x(1), Dim3::x(32), 128), (out.as_mut_ptr(),))
    };
    let (_, _, thread, message) = failure(result);
    assert_eq!(thread, Dim3::new(1, 0, 0));
    assert!(
        message.contains("nor a sync_warp or shuffle of their warp"),
        "{message}"
    );
}

kernel! {
    /// Every thread adds its value to one global sum with a plain load and store: the updates of
    /// all but one thread are lost on the GPU.
    unsafe fn non_atomic_global_sum(values: *const f32, sum: *mut f32) {
        let i = block_idx().x * 32 + thread_idx().x;
        // SAFETY: one value per thread; one sum.
        unsafe {
            let total = *sum + *values.add(i as usize);
            global_store(sum, total); // ACCUMULATE
        }
    }
}

#[test]
fn two_threads_storing_to_one_global_element_is_a_race() {
    let values = [1.0f32; 32];
    let mut sum = 0.0f32;
    // SAFETY: 32 values for 32 threads, one sum. One block: its threads run in order, so thread 1
    // is the one that finds thread 0's store.
    let result = unsafe {
        non_atomic_global_sum.emulate(
            &launch(Dim3::x(1), Dim3::x(32), 0),
            (values.as_ptr(), &mut sum as *mut f32),
        )
    };
    let (_, block, thread, message) = failure(result);
    assert_eq!((block, thread), (Dim3::new(0, 0, 0), Dim3::new(1, 0, 0)));
    assert!(message.contains("global-memory race"), "{message}");
    assert!(
        message.contains("thread (0, 0, 0) of block (0, 0, 0) wrote it"),
        "{message}"
    );
    assert!(message.contains("need an atomic"), "{message}");
    assert!(message.contains(&line_of("// ACCUMULATE")), "{message}");
}

kernel! {
    /// The first thread of every block stores its block's index into one element.
    unsafe fn one_store_per_block(out: *mut f32) {
        if thread_idx().x == 0 {
            // SAFETY: one element, written by every block.
            unsafe { global_store(out, block_idx().x as f32) }; // BLOCK STORE
        }
    }
}

#[test]
fn stores_from_two_blocks_to_one_global_element_are_a_race() {
    let mut out = 0.0f32;
    // SAFETY: one element.
    let result = unsafe { one_store_per_block.emulate(&launch(Dim3::x(2), Dim3::x(32), 0), (&mut out as *mut f32,)) };
    let (_, block, thread, message) = failure(result);
    // The blocks run on different workers: either may be the one that finds the other's store.
    assert!(block.x < 2 && thread == Dim3::new(0, 0, 0), "{block:?} {thread:?}");
    let other = 1 - block.x;
    assert!(message.contains("global-memory race"), "{message}");
    assert!(
        message.contains(&format!("thread (0, 0, 0) of block ({other}, 0, 0) wrote it")),
        "{message}"
    );
    assert!(message.contains(&line_of("// BLOCK STORE")), "{message}");
}

kernel! {
    /// Reads lane 40 of a 48-thread block's second warp, which has 16 lanes.
    unsafe fn shuffle_past_a_partial_warp(out: *mut u32) {
        let value = shfl_idx(lane_id(), 20); // SHUFFLE
        // SAFETY: one output per thread.
        unsafe { *out.add(thread_idx().x as usize) = value };
    }
}

#[test]
fn a_shuffle_from_a_lane_past_a_partial_warp_fails_the_launch() {
    let mut out = vec![0u32; 48];
    // SAFETY: one output per thread.
    let result =
        unsafe { shuffle_past_a_partial_warp.emulate(&launch(Dim3::x(1), Dim3::x(48), 0), (out.as_mut_ptr(),)) };
    let (_, _, thread, message) = failure(result);
    assert_eq!(thread, Dim3::new(32, 0, 0));
    assert!(
        message.contains("reads lane 20 of warp 1, which has only 16 threads"),
        "{message}"
    );
    assert!(message.contains(&line_of("// SHUFFLE")), "{message}");
}

kernel! {
    unsafe fn index_past_a_shared_slice() {
        let slice = DynamicShared::new().slice::<f32>(8);
        slice.set(thread_idx().x, 1.0);
    }
}

#[test]
fn shared_memory_out_of_bounds_names_the_block_and_thread() {
    // SAFETY: no pointers.
    let result = unsafe { index_past_a_shared_slice.emulate(&launch(Dim3::x(1), Dim3::x(9), 64), ()) };
    let (_, block, thread, message) = failure(result);
    assert_eq!((block, thread), (Dim3::new(0, 0, 0), Dim3::new(8, 0, 0)));
    assert!(
        message.contains("out of bounds") && message.contains("index 8"),
        "{message}"
    );
}

kernel! {
    /// Reads one element past a slice with the unchecked accessor.
    unsafe fn unchecked_read_past_a_slice(out: *mut f32) {
        let slice = DynamicShared::new().slice::<f32>(4);
        slice.set(thread_idx().x % 4, 2.0);
        sync_threads();
        // SAFETY: deliberately broken: index 4 of a slice of 4. The emulator must catch it.
        let value = unsafe { slice.get_unchecked(thread_idx().x + 1) };
        // SAFETY: one output per thread.
        unsafe { *out.add(thread_idx().x as usize) = value };
    }
}

#[test]
fn unchecked_shared_access_is_still_checked_on_the_emulator() {
    let mut out = vec![0.0f32; 4];
    // SAFETY: one output per thread; the out-of-bounds read is in shared memory, which the
    // emulator checks.
    let result =
        unsafe { unchecked_read_past_a_slice.emulate(&launch(Dim3::x(1), Dim3::x(4), 16), (out.as_mut_ptr(),)) };
    let (_, _, thread, message) = failure(result);
    assert_eq!(thread, Dim3::new(3, 0, 0));
    assert!(message.contains("index 4") && message.contains("has 4"), "{message}");
}

kernel! {
    /// Reads a shared word that no thread wrote.
    unsafe fn read_unwritten_shared(out: *mut u32) {
        let slice = DynamicShared::new().named_slice::<u32>("flags", 4);
        if thread_idx().x < 3 {
            slice.set(thread_idx().x, 7);
        }
        sync_threads();
        // SAFETY: one output per thread.
        unsafe { *out.add(thread_idx().x as usize) = slice.get(3) };
    }
}

#[test]
fn a_read_of_unwritten_shared_memory_fails_whatever_its_type() {
    let mut out = vec![0u32; 4];
    // SAFETY: one output per thread.
    let result = unsafe { read_unwritten_shared.emulate(&launch(Dim3::x(1), Dim3::x(4), 16), (out.as_mut_ptr(),)) };
    let (_, block, thread, message) = failure(result);
    assert_eq!((block, thread), (Dim3::new(0, 0, 0), Dim3::new(0, 0, 0)));
    assert!(message.contains("view `flags`, element 3"), "{message}");
    assert!(message.contains("no thread of this block has written"), "{message}");
    assert!(message.contains("detectors.rs:"), "{message}");
}

// Optimised code merges or duplicates the two calls and their line tables lose inlined frames:
// there the check cannot tell the paths apart and passes rather than guess, so this test exists
// only in unoptimised builds (CI's).
#[cfg(debug_assertions)]
mod divergent_helper {
    use super::*;

    /// Waits at a barrier: a helper, as kernels have them.
    fn wait_for_the_block() {
        sync_threads();
    }

    kernel! {
        /// Half the block reaches the helper's barrier from one branch, half from the other: one
        /// source line for the barrier, two barriers on the GPU.
        unsafe fn barrier_in_a_helper_on_both_sides_of_a_branch(out: *mut u32) {
            let t = thread_idx().x;
            if t < 16 {
                wait_for_the_block();
                // SAFETY: one output per thread.
                unsafe { *out.add(t as usize) = 1 };
            } else {
                // SAFETY: one output per thread.
                unsafe { *out.add(t as usize) = 2 };
                wait_for_the_block();
            }
        }
    }

    #[test]
    fn a_barrier_reached_through_one_helper_from_divergent_branches_fails_the_launch() {
        let mut out = vec![0u32; 32];
        // SAFETY: one output per thread.
        let result = unsafe {
            barrier_in_a_helper_on_both_sides_of_a_branch
                .emulate(&launch(Dim3::x(1), Dim3::x(32), 0), (out.as_mut_ptr(),))
        };
        let (_, _, thread, message) = failure(result);
        assert_eq!(thread, Dim3::new(16, 0, 0));
        assert!(message.contains("through different calls"), "{message}");
        assert!(message.contains("detectors.rs:"), "{message}");
    }
}

kernel! {
    /// Every thread counts itself into bin t % 4 with a shared atomic, then (after the barrier)
    /// thread b < 4 writes bin b out: atomics on one word do not race with each other.
    unsafe fn shared_atomic_bins(out: *mut u32) {
        let bins = DynamicShared::new().named_slice::<u32>("bins", 4);
        let t = thread_idx().x;
        if t < 4 {
            bins.set(t, 0);
        }
        sync_threads();
        bins.atomic_add(t % 4, 1);
        sync_threads();
        if t < 4 {
            // SAFETY: four outputs.
            unsafe { *out.add(t as usize) = bins.get(t) };
        }
    }
}

#[test]
fn shared_atomics_on_one_word_do_not_race_and_count_every_thread() {
    let mut out = vec![0u32; 4];
    // SAFETY: four outputs.
    unsafe { shared_atomic_bins.emulate(&launch(Dim3::x(1), Dim3::x(96), 16), (out.as_mut_ptr(),)) }.unwrap();
    assert_eq!(out, [24, 24, 24, 24]);
}

kernel! {
    /// Threads count into one bin with a shared atomic while thread 0 reads the bin with no
    /// barrier between: a plain read racing atomics.
    unsafe fn read_while_others_add(out: *mut u32) {
        let bin = DynamicShared::new().named_slice::<u32>("bin", 1);
        let t = thread_idx().x;
        if t == 0 {
            bin.set(0, 0);
        }
        sync_threads();
        bin.atomic_add(0, 1); // ADD
        if t == 40 {
            // SAFETY: one output.
            unsafe { *out = bin.get(0) }; // PEEK
        }
    }
}

#[test]
fn a_plain_read_between_shared_atomics_is_a_race() {
    let mut out = vec![0u32; 1];
    // SAFETY: one output.
    let result = unsafe { read_while_others_add.emulate(&launch(Dim3::x(1), Dim3::x(64), 4), (out.as_mut_ptr(),)) };
    let (_, _, thread, message) = failure(result);
    assert_eq!(thread, Dim3::new(41, 0, 0), "{message}");
    assert!(
        message.contains("shared-memory race on view `bin`, element 0"),
        "{message}"
    );
    assert!(message.contains("thread (40, 0, 0) read it at"), "{message}");
    assert!(
        message.contains("thread (41, 0, 0) atomically updates it at"),
        "{message}"
    );
    assert!(message.contains(&line_of("// PEEK")), "{message}");
    assert!(message.contains(&line_of("// ADD")), "{message}");
}

kernel! {
    /// Fills a 4×8 matrix, then reads 16 bytes starting at column `col`: aligned only where col is
    /// a multiple of 4.
    unsafe fn vector_read_at(out: *mut f32, col: u32) {
        let tile = DynamicShared::new().named_matrix::<f32>("tile", ptxkit::device::MatrixLayout::dense(4, 8));
        let t = thread_idx().x;
        tile.set(t / 8, t % 8, t as f32);
        sync_threads();
        if t == 0 {
            // SAFETY: col + 4 ≤ 8; alignment is what the test is about (the emulator checks it).
            let four = unsafe { tile.get4_unchecked(1, col) };
            // SAFETY: four outputs.
            unsafe { (0..4).for_each(|k| *out.add(k) = four.0[k]) };
        }
    }
}

#[test]
fn a_16_byte_shared_read_gets_four_floats_and_a_misaligned_one_fails_the_launch() {
    let mut out = vec![0.0f32; 4];
    // SAFETY: four outputs; 32 floats of shared memory for 32 threads.
    unsafe { vector_read_at.emulate(&launch(Dim3::x(1), Dim3::x(32), 128), (out.as_mut_ptr(), 4)) }.unwrap();
    assert_eq!(out, [12.0, 13.0, 14.0, 15.0]);
    // SAFETY: as above.
    let result = unsafe { vector_read_at.emulate(&launch(Dim3::x(1), Dim3::x(32), 128), (out.as_mut_ptr(), 2)) };
    let (_, _, thread, message) = failure(result);
    assert_eq!(thread, Dim3::new(0, 0, 0));
    assert!(
        message.contains("misaligned 16-byte shared-memory access at matrix (1, 2)"),
        "{message}"
    );
}

kernel! {
    /// Fills a 4×8 matrix, then reads element `(row, col)` of its window from (1, 4): the matrix's
    /// (1 + row, 4 + col), where the window has that element.
    unsafe fn window_read(out: *mut f32, row: u32, col: u32) {
        let tile = DynamicShared::new().named_matrix::<f32>("tile", ptxkit::device::MatrixLayout::dense(4, 8));
        let t = thread_idx().x;
        tile.set(t / 8, t % 8, t as f32);
        sync_threads();
        if t == 0 {
            // SAFETY: one output.
            unsafe { *out = tile.window(1, 4).get(row, col) };
        }
    }
}

#[test]
fn a_window_reads_from_its_corner_and_fails_the_launch_past_its_own_edge() {
    let mut out = vec![-1.0f32; 1];
    // SAFETY: one output; 32 floats of shared memory for 32 threads.
    unsafe { window_read.emulate(&launch(Dim3::x(1), Dim3::x(32), 128), (out.as_mut_ptr(), 2, 3)) }.unwrap();
    // Window (2, 3) is the matrix's (3, 7): element 3·8 + 7.
    assert_eq!(out, [31.0]);
    // Column 4 of the window is column 8 of the matrix: past both.
    // SAFETY: as above.
    let result = unsafe { window_read.emulate(&launch(Dim3::x(1), Dim3::x(32), 128), (out.as_mut_ptr(), 0, 4)) };
    let (_, _, _, message) = failure(result);
    assert!(message.contains("matrix column"), "{message}");
    // Row 3 of the window is row 4 of the matrix: past both.
    // SAFETY: as above.
    let result = unsafe { window_read.emulate(&launch(Dim3::x(1), Dim3::x(32), 128), (out.as_mut_ptr(), 3, 0)) };
    let (_, _, _, message) = failure(result);
    assert!(message.contains("matrix row"), "{message}");
}

kernel! {
    /// Each of 8 threads copies 4 floats of `input` into row 0 of a 2×32 matrix with `cp.async`
    /// (one group), then into row 1 (a second group); waits until one group may remain (the first
    /// has landed), then for all; after a barrier, thread t reads thread (t + 1) % 8's floats of
    /// both rows. With `early`, thread 0 reads its row-1 floats before any wait.
    unsafe fn async_copy_rows(input: *const f32, out: *mut f32, early: u32) {
        let rows = DynamicShared::new().named_matrix::<f32>("rows", ptxkit::device::MatrixLayout::dense(2, 32));
        let t = thread_idx().x;
        // SAFETY (copies): input holds 64 floats, 16-byte aligned; columns 4t..4t + 4 of 32.
        unsafe { rows.copy4_async_unchecked(0, 4 * t, input.add(4 * t as usize)) };
        ptxkit::device::async_copy_commit();
        unsafe { rows.copy4_async_unchecked(1, 4 * t, input.add(32 + 4 * t as usize)) };
        ptxkit::device::async_copy_commit();
        if early != 0 && t == 0 {
            // SAFETY: inside the matrix. Its copy has not been waited for: the bug under test.
            unsafe { *out = rows.get_unchecked(1, 0) }; // EARLY
        }
        ptxkit::device::async_copy_wait::<1>();
        // SAFETY: this thread's row-0 copy has landed.
        let own = unsafe { rows.get_unchecked(0, 4 * t) };
        ptxkit::device::async_copy_wait::<0>();
        sync_threads();
        let next = (t + 1) % 8;
        // SAFETY: 8 + 2·4 outputs per thread fit in 80; every copy landed before the barrier.
        unsafe {
            *out.add((10 * t) as usize) = own;
            *out.add((10 * t + 1) as usize) = 0.0;
            for k in 0..4 {
                *out.add((10 * t + 2 + k) as usize) = rows.get_unchecked(0, 4 * next + k);
                *out.add((10 * t + 6 + k) as usize) = rows.get_unchecked(1, 4 * next + k);
            }
        }
    }
}

#[repr(C, align(16))]
struct Aligned([f32; 64]);

#[test]
fn async_copies_land_at_the_wait_that_covers_their_group() {
    let input = Aligned(core::array::from_fn(|i| i as f32 + 0.5));
    let mut out = vec![f32::NAN; 80];
    // SAFETY: 64 aligned inputs, 80 outputs; 64 floats of shared memory.
    unsafe {
        async_copy_rows.emulate(
            &launch(Dim3::x(1), Dim3::x(8), 256),
            (input.0.as_ptr(), out.as_mut_ptr(), 0),
        )
    }
    .unwrap();
    for t in 0..8 {
        let next = (t + 1) % 8;
        assert_eq!(out[10 * t], input.0[4 * t], "thread {t}'s own first float");
        for k in 0..4 {
            assert_eq!(out[10 * t + 2 + k], input.0[4 * next + k]);
            assert_eq!(out[10 * t + 6 + k], input.0[32 + 4 * next + k]);
        }
    }
}

#[test]
fn reading_an_async_copy_before_its_wait_fails_the_launch() {
    let input = Aligned([1.0; 64]);
    let mut out = vec![0.0f32; 80];
    // SAFETY: as above.
    let result = unsafe {
        async_copy_rows.emulate(
            &launch(Dim3::x(1), Dim3::x(8), 256),
            (input.0.as_ptr(), out.as_mut_ptr(), 1),
        )
    };
    let (_, _, thread, message) = failure(result);
    assert_eq!(thread, Dim3::new(0, 0, 0));
    assert!(message.contains("no thread of this block has written"), "{message}");
    assert!(message.contains(&line_of("// EARLY")), "{message}");
}
