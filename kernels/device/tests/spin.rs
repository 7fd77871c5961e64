//! The emulator's watchdog for waits that cannot end (`ptxkit::emu::spin_limit`). Its own test
//! binary: the limit it shortens is the process's.

use ptxkit::device::{load_acquire, thread_idx};
use ptxkit::emu::{EmuError, set_spin_limit};
use ptxkit::{Dim3, LaunchShape, kernel};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

kernel! {
    /// Thread 0 waits until `flag` is no longer 0, then copies it to `out`.
    unsafe fn waits_for_a_flag(flag: *const u32, out: *mut u32) {
        if thread_idx().x == 0 {
            // SAFETY: `flag` is a u32 the caller keeps alive; `out` one element.
            unsafe {
                let mut seen = load_acquire(flag);
                while seen == 0 {
                    seen = load_acquire(flag); // POLL
                }
                *out = seen;
            }
        }
    }
}

/// Where in this file a report must point: the line of `needle`.
fn line_of(needle: &str) -> String {
    let source = include_str!("spin.rs");
    let line = source
        .lines()
        .position(|l| l.contains(needle) && !l.contains("line_of"))
        .unwrap_or_else(|| panic!("{needle} is not in spin.rs"));
    format!("spin.rs:{}", line + 1)
}

fn one_block() -> LaunchShape {
    LaunchShape {
        grid: Dim3::x(1),
        block: Dim3::x(32),
        shared_bytes: 0,
    }
}

/// Launches `waits_for_a_flag` on a flag that a host thread sets to 7 after `set_after` (never,
/// when None), and returns the launch's result and what the kernel copied.
fn wait(set_after: Option<Duration>) -> (Result<(), EmuError>, u32) {
    let flag = AtomicU32::new(0);
    let mut out = 0u32;
    let result = std::thread::scope(|scope| {
        if let Some(delay) = set_after {
            let flag = &flag;
            scope.spawn(move || {
                std::thread::sleep(delay);
                flag.store(7, Ordering::Release);
            });
        }
        // SAFETY: the flag outlives the launch (the scope), `out` is one element.
        unsafe { waits_for_a_flag.emulate(&one_block(), (flag.as_ptr().cast_const(), &mut out as *mut u32)) }
    });
    (result, out)
}

#[test]
fn a_wait_that_ends_within_the_limit_passes_and_one_that_cannot_end_fails() {
    // One test, so that the two limits it sets never apply to each other's launch.
    set_spin_limit(Duration::from_secs(5));
    let (result, out) = wait(Some(Duration::from_millis(200)));
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(out, 7);

    set_spin_limit(Duration::from_millis(300));
    let (result, out) = wait(None);
    match result {
        Err(EmuError::KernelFailed {
            kernel,
            thread,
            message,
            ..
        }) => {
            assert_eq!(kernel, "waits_for_a_flag");
            assert_eq!(thread, Dim3::new(0, 0, 0));
            assert!(
                message.contains("stayed 0x0") && message.contains("nothing will end"),
                "{message}"
            );
            // The report points at the kernel's poll, not at the emulator.
            assert!(message.starts_with(&format!("at {}", line_of("// POLL"))), "{message}");
        }
        other => panic!("expected the launch to fail, got {other:?}"),
    }
    assert_eq!(out, 0);
}
