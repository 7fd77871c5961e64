//! The device layer and the emulator: indices, warp operations, and misuse reported as errors.

use kernels::device::{DynamicShared, block_dim, block_idx, grid_dim, lane_id, sync_threads, sync_warp, thread_idx};
use kernels::emu::EmuError;
use kernels::probe::{WARP_PROBE_BLOCK, WARP_PROBE_WORDS, warp_probe, warp_probe_launch};
use kernels::{Dim3, LaunchShape, kernel};

fn launch(grid: Dim3, block: Dim3, shared_bytes: u32) -> LaunchShape {
    LaunchShape {
        grid,
        block,
        shared_bytes,
    }
}

fn failure(result: Result<(), EmuError>) -> (Dim3, Dim3, String) {
    match result {
        Err(EmuError::KernelFailed {
            block, thread, message, ..
        }) => (block, thread, message),
        other => panic!("expected the launch to fail, got {other:?}"),
    }
}

kernel! {
    /// Each thread writes its coordinates to the slot of its global linear index.
    unsafe fn write_coordinates(out: *mut [u32; 12]) {
        let (t, b, bd, gd) = (thread_idx(), block_idx(), block_dim(), grid_dim());
        let block_linear = b.x + gd.x * (b.y + gd.y * b.z);
        let thread_linear = t.x + bd.x * (t.y + bd.y * t.z);
        let g = block_linear * bd.x * bd.y * bd.z + thread_linear;
        // SAFETY: the test allocates one slot per launched thread.
        unsafe { *out.add(g as usize) = [t.x, t.y, t.z, b.x, b.y, b.z, bd.x, bd.y, bd.z, gd.x, gd.y, gd.z] };
    }
}

#[test]
fn every_thread_of_a_3d_grid_of_3d_blocks_runs_once_with_its_indices() {
    let (grid, block) = (Dim3::new(3, 2, 2), Dim3::new(4, 3, 2));
    let threads = (grid.volume() * block.volume()) as usize;
    let mut out = vec![[u32::MAX; 12]; threads];
    // SAFETY: one slot per thread.
    unsafe { write_coordinates(&launch(grid, block, 0), out.as_mut_ptr()) }.unwrap();
    let mut g = 0;
    for (bz, by, bx) in (0..grid.z).flat_map(|z| (0..grid.y).flat_map(move |y| (0..grid.x).map(move |x| (z, y, x)))) {
        for (tz, ty, tx) in
            (0..block.z).flat_map(|z| (0..block.y).flat_map(move |y| (0..block.x).map(move |x| (z, y, x))))
        {
            assert_eq!(out[g], [tx, ty, tz, bx, by, bz, 4, 3, 2, 3, 2, 2], "slot {g}");
            g += 1;
        }
    }
}

#[test]
fn warp_probe_gives_lane_ids_shuffles_and_warp_sums() {
    let blocks = 3;
    let threads = (blocks * WARP_PROBE_BLOCK) as usize;
    let words = WARP_PROBE_WORDS as usize;
    let mut out = vec![u32::MAX; threads * words];
    // SAFETY: WARP_PROBE_WORDS words per thread.
    unsafe { warp_probe(&warp_probe_launch(blocks), out.as_mut_ptr()) }.unwrap();
    assert_eq!(
        out,
        kernels::reference::warp_probe(threads as u32),
        "[lane, xor 1, down 3, up 2, idx 5, warp sum] per thread"
    );
}

kernel! {
    unsafe fn half_the_block_returns_before_the_barrier() {
        if thread_idx().x >= 16 {
            return;
        }
        sync_threads();
    }
}

#[test]
fn threads_returning_before_a_barrier_fail_the_launch_instead_of_hanging() {
    // SAFETY: no pointers.
    let result = unsafe { half_the_block_returns_before_the_barrier(&launch(Dim3::x(2), Dim3::x(32), 0)) };
    let (block, _, message) = failure(result);
    assert_eq!(block, Dim3::new(0, 0, 0));
    assert!(
        message.contains("returned from the kernel") && message.contains("sync_threads"),
        "{message}"
    );
}

kernel! {
    // The two branches are the point: the same call, at two places.
    #[allow(clippy::if_same_then_else)]
    unsafe fn odd_and_even_threads_wait_at_different_barriers() {
        if thread_idx().x.is_multiple_of(2) {
            sync_threads();
        } else {
            sync_threads();
        }
    }
}

#[test]
fn threads_waiting_at_different_barriers_fail_the_launch() {
    // SAFETY: no pointers.
    let result = unsafe { odd_and_even_threads_wait_at_different_barriers(&launch(Dim3::x(1), Dim3::x(64), 0)) };
    let (_, _, message) = failure(result);
    assert!(message.contains("different sync_threads calls"), "{message}");
}

kernel! {
    unsafe fn lane_zero_waits_for_the_block_while_its_warp_waits_for_it() {
        if thread_idx().x == 0 {
            sync_threads();
        } else if thread_idx().x < 32 {
            sync_warp();
        } else {
            sync_threads();
        }
    }
}

#[test]
fn a_deadlock_between_warp_and_block_barriers_is_reported() {
    // SAFETY: no pointers.
    let result =
        unsafe { lane_zero_waits_for_the_block_while_its_warp_waits_for_it(&launch(Dim3::x(1), Dim3::x(64), 0)) };
    let (_, _, message) = failure(result);
    assert!(message.contains("deadlock"), "{message}");
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
    let result = unsafe { index_past_a_shared_slice(&launch(Dim3::x(1), Dim3::x(9), 64)) };
    let (block, thread, message) = failure(result);
    assert_eq!((block, thread), (Dim3::new(0, 0, 0), Dim3::new(8, 0, 0)));
    assert!(
        message.contains("out of bounds") && message.contains("index 8"),
        "{message}"
    );
}

kernel! {
    /// Reads a shared word that no thread wrote.
    unsafe fn read_unwritten_shared(out: *mut f32) {
        let slice = DynamicShared::new().slice::<f32>(4);
        // SAFETY: one output per thread.
        unsafe { *out.add(thread_idx().x as usize) = slice.get(thread_idx().x) };
    }
}

#[test]
fn unwritten_shared_memory_reads_as_nan() {
    let mut out = vec![0.0f32; 4];
    // SAFETY: one output per thread.
    unsafe { read_unwritten_shared(&launch(Dim3::x(1), Dim3::x(4), 16), out.as_mut_ptr()) }.unwrap();
    assert!(out.iter().all(|v| v.is_nan()), "{out:?}");
}

kernel! {
    unsafe fn panics_in_one_thread() {
        if block_idx().x == 1 && thread_idx().x == 3 {
            panic!("planted failure");
        }
        sync_threads();
    }
}

#[test]
fn a_panicking_thread_fails_the_launch_with_its_coordinates() {
    // SAFETY: no pointers.
    let result = unsafe { panics_in_one_thread(&launch(Dim3::x(2), Dim3::x(8), 0)) };
    let (block, thread, message) = failure(result);
    assert_eq!((block, thread), (Dim3::new(1, 0, 0), Dim3::new(3, 0, 0)));
    assert!(message.contains("planted failure"), "{message}");
}

kernel! {
    unsafe fn lane_returns_before_a_shuffle() {
        if lane_id() == 7 {
            return;
        }
        let _ = kernels::device::shfl_xor(1u32, 1);
    }
}

#[test]
fn a_lane_returning_before_a_shuffle_fails_the_launch() {
    // SAFETY: no pointers.
    let result = unsafe { lane_returns_before_a_shuffle(&launch(Dim3::x(1), Dim3::x(32), 0)) };
    let (_, _, message) = failure(result);
    assert!(message.contains("lanes"), "{message}");
}

#[test]
fn launch_shapes_beyond_cuda_limits_are_rejected() {
    for (grid, block, shared) in [
        (Dim3::x(1), Dim3::x(1025), 0),
        (Dim3::x(1), Dim3::new(1, 1, 65), 0),
        (Dim3::x(0), Dim3::x(32), 0),
        (Dim3::new(1, 65536, 1), Dim3::x(32), 0),
        (Dim3::x(1), Dim3::x(32), 300 * 1024),
    ] {
        // SAFETY: no pointers; the launch is refused before any thread runs.
        match unsafe { half_the_block_returns_before_the_barrier(&launch(grid, block, shared)) } {
            Err(EmuError::InvalidLaunch { .. }) => {}
            other => panic!("grid {grid}, block {block}, {shared} bytes: expected InvalidLaunch, got {other:?}"),
        }
    }
}

#[test]
fn device_functions_outside_a_launch_panic_with_an_explanation() {
    let panic = std::panic::catch_unwind(thread_idx).unwrap_err();
    let message = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()));
    assert!(message.unwrap_or_default().contains("outside a kernel launch"));
}
