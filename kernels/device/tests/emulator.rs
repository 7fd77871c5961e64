//! The device layer and the emulator: indices, warp operations, and misuse reported as errors.

use ptxkit::device::{
    MatrixLayout, SharedMatrix, SharedSlice, block_dim, block_idx, grid_dim, lane_id, shfl_down, shfl_up, sync_threads,
    sync_warp, thread_idx,
};
use ptxkit::emu::EmuError;
use ptxkit::{Dim3, LaunchShape, kernel};

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
    unsafe { write_coordinates.emulate(&launch(grid, block, 0), (out.as_mut_ptr(),)) }.unwrap();
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
    let result = unsafe { half_the_block_returns_before_the_barrier.emulate(&launch(Dim3::x(2), Dim3::x(32), 0), ()) };
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
    let result =
        unsafe { odd_and_even_threads_wait_at_different_barriers.emulate(&launch(Dim3::x(1), Dim3::x(64), 0), ()) };
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
    let result = unsafe {
        lane_zero_waits_for_the_block_while_its_warp_waits_for_it.emulate(&launch(Dim3::x(1), Dim3::x(64), 0), ())
    };
    let (_, _, message) = failure(result);
    assert!(message.contains("deadlock"), "{message}");
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
    let result = unsafe { panics_in_one_thread.emulate(&launch(Dim3::x(2), Dim3::x(8), 0), ()) };
    let (block, thread, message) = failure(result);
    assert_eq!((block, thread), (Dim3::new(1, 0, 0), Dim3::new(3, 0, 0)));
    assert!(message.contains("planted failure"), "{message}");
}

kernel! {
    unsafe fn lane_returns_before_a_shuffle() {
        if lane_id() == 7 {
            return;
        }
        let _ = ptxkit::device::shfl_xor(1u32, 1);
    }
}

#[test]
fn a_lane_returning_before_a_shuffle_fails_the_launch() {
    // SAFETY: no pointers.
    let result = unsafe { lane_returns_before_a_shuffle.emulate(&launch(Dim3::x(1), Dim3::x(32), 0), ()) };
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
        match unsafe { half_the_block_returns_before_the_barrier.emulate(&launch(grid, block, shared), ()) } {
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

kernel! {
    /// Each lane writes `shfl_down(lane, 35)` and `shfl_up(lane, 33)`: PTX reads only the low five
    /// bits of the offset, so these are offsets 3 and 1.
    unsafe fn shuffles_with_offsets_past_the_warp(out: *mut u32) {
        let lane = lane_id();
        let (down, up) = (shfl_down(lane, 35), shfl_up(lane, 33));
        // SAFETY: two words per thread.
        unsafe {
            *out.add(2 * thread_idx().x as usize) = down;
            *out.add(2 * thread_idx().x as usize + 1) = up;
        }
    }
}

#[test]
fn shuffle_offsets_use_only_their_low_five_bits_as_in_ptx() {
    let mut out = vec![u32::MAX; 64];
    // SAFETY: two words per thread.
    unsafe { shuffles_with_offsets_past_the_warp.emulate(&launch(Dim3::x(1), Dim3::x(32), 0), (out.as_mut_ptr(),)) }
        .unwrap();
    for lane in 0..32u32 {
        let down = if lane + 3 < 32 { lane + 3 } else { lane };
        let up = if lane >= 1 { lane - 1 } else { lane };
        assert_eq!(
            [out[2 * lane as usize], out[2 * lane as usize + 1]],
            [down, up],
            "lane {lane}"
        );
    }
}

kernel! {
    /// A per-thread array far beyond CUDA's 512 KiB of local memory.
    unsafe fn locals_beyond_local_memory(out: *mut f32) {
        let mut big = [0.0f32; 256 * 1024];
        big[thread_idx().x as usize] = 1.0;
        std::hint::black_box(&mut big);
        let i = thread_idx().x;
        // SAFETY: one output per thread.
        unsafe { *out.add(i as usize) = big[i as usize] };
    }
}

#[test]
fn a_kernel_whose_locals_pass_local_memory_fails_the_launch_instead_of_the_process() {
    let mut out = vec![0.0f32; 4];
    // SAFETY: one output per thread.
    let result = unsafe { locals_beyond_local_memory.emulate(&launch(Dim3::x(1), Dim3::x(4), 0), (out.as_mut_ptr(),)) };
    let (_, _, message) = failure(result);
    assert!(message.contains("512 KiB of local memory"), "{message}");
}

ptxkit::shared_memory! {
    /// A matrix then a slice of a different width: the slice starts aligned after the matrix.
    struct Mixed {
        tile: SharedMatrix<f32> = MatrixLayout::padded(3, 4),
        sums: SharedSlice<f64> = 5,
    }
}

kernel! {
    /// Carves `Mixed`, fills it, and reads it back through the same views.
    unsafe fn fill_mixed(out: *mut f64) {
        let Mixed { tile, sums } = Mixed::carve();
        let t = thread_idx().x;
        if t < 12 {
            tile.set(t / 4, t % 4, t as f32);
        }
        if t < 5 {
            sums.set(t, t as f64 * 0.5);
        }
        sync_threads();
        let value = if t < 12 { tile.get(t / 4, t % 4) as f64 } else { sums.get(t - 12) };
        // SAFETY: one output per thread.
        unsafe { *out.add(t as usize) = value };
    }
}

#[test]
fn shared_memory_layouts_carve_exactly_their_bytes() {
    // 3 rows of pitch 5 floats = 60 bytes, aligned up to 64 for f64, then 5 f64 = 40.
    assert_eq!(Mixed::BYTES, 104);
    let mut out = vec![f64::NAN; 17];
    // SAFETY: one output per thread.
    unsafe { fill_mixed.emulate(&launch(Dim3::x(1), Dim3::x(17), Mixed::BYTES), (out.as_mut_ptr(),)) }.unwrap();
    let expected: Vec<f64> = (0..12).map(f64::from).chain((0..5).map(|i| i as f64 * 0.5)).collect();
    assert_eq!(out, expected);
    // One byte less than the layout needs: the carve fails the launch.
    let result = unsafe { fill_mixed.emulate(&launch(Dim3::x(1), Dim3::x(17), Mixed::BYTES - 1), (out.as_mut_ptr(),)) };
    let (_, _, message) = failure(result);
    assert!(message.contains("carves 104 bytes"), "{message}");
}

kernel! {
    /// Each thread of the second block prints its index and a float; the first prints nothing.
    pub unsafe fn prints(scale: f32) {
        if ptxkit::device::block_idx().x == 1 {
            let t = ptxkit::device::thread_idx().x;
            ptxkit::printf!("t=%u x=%.2f %s\n", t, scale * t as f32, c"ok");
        }
    }
}

kernel! {
    /// A format that wants more arguments than it is given.
    pub unsafe fn prints_badly(value: u32) {
        ptxkit::printf!("%u and %u\n", value);
    }
}

#[test]
fn printf_prints_each_line_with_its_block_and_thread_and_a_bad_format_fails_with_its_line() {
    let shape = LaunchShape {
        grid: Dim3::x(2),
        block: Dim3::x(3),
        shared_bytes: 0,
    };
    let (result, mut lines) = ptxkit::emu::capture_printed(|| unsafe { prints.emulate(&shape, (0.5,)) });
    result.unwrap();
    lines.sort();
    assert_eq!(
        lines,
        [
            "[block (1, 0, 0) thread (0, 0, 0)] t=0 x=0.00 ok",
            "[block (1, 0, 0) thread (1, 0, 0)] t=1 x=0.50 ok",
            "[block (1, 0, 0) thread (2, 0, 0)] t=2 x=1.00 ok",
        ]
    );
    let Err(EmuError::KernelFailed { message, .. }) = (unsafe { prints_badly.emulate(&shape, (7,)) }) else {
        panic!("a format with too few arguments was accepted");
    };
    assert!(
        message.contains("more conversions than arguments") && message.contains("emulator.rs:"),
        "{message}"
    );
}
