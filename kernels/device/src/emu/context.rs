//! Which thread of which block the calling OS thread is running right now, and the capture of kernel
//! panics.
//!
//! A worker runs a block's threads as coroutines on one OS thread; before it resumes a thread it
//! points [`CURRENT`] at that thread's [`Current`], so that the device layer (`thread_idx()`,
//! `sync_threads()`, a shared-memory access) knows whose it is.

use super::block::{Abort, BlockRun, Resume, Wait};
use crate::launch::Dim3;
use corosensei::Yielder;
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::sync::Once;

/// One thread of the running block: what the device layer answers for it, and how it suspends.
pub(crate) struct Current {
    /// Linear thread index within the block: x + y·blockDim.x + z·blockDim.x·blockDim.y.
    pub tid: u32,
    pub thread_idx: Dim3,
    pub block_idx: Cell<Dim3>,
    pub block_dim: Dim3,
    pub grid_dim: Dim3,
    /// The block being run; valid while the thread's coroutine lives.
    pub block: *const BlockRun,
    /// The coroutine's yielder, set when it starts.
    pub yielder: Cell<*const Yielder<Resume, Wait>>,
    /// The stack address where the coroutine entered the kernel, to measure the kernel's stack use.
    pub stack_base: Cell<usize>,
    /// This thread's `cp.async` copies in flight.
    pub copies: RefCell<super::async_copies::AsyncCopies>,
    /// What this thread's recent polls of global words found ([`super::spin`]).
    pub spin: Cell<super::spin::Spin>,
    /// What orders this thread's global accesses after other blocks' ([`super::order`]).
    pub order: RefCell<super::order::ThreadOrder>,
}

impl Current {
    pub fn block(&self) -> &BlockRun {
        // SAFETY: a `Current` only exists inside its block's run, which outlives every coroutine of
        // the block (they finish, or are unwound, before `BlockRun::run` returns).
        unsafe { &*self.block }
    }

    /// Suspends this thread until the block's scheduler resumes it.
    pub fn suspend(&self, wait: Wait) -> Resume {
        let yielder = self.yielder.get();
        debug_assert!(!yielder.is_null(), "a thread suspends only inside its coroutine");
        // SAFETY: set by this thread's coroutine when it started, and the coroutine is running
        // (this code runs on its stack).
        unsafe { &*yielder }.suspend(wait)
    }
}

/// Suspends `current` until its block's scheduler resumes it; unwinds out of the kernel when the
/// launch is being stopped instead.
pub(crate) fn pause(current: &Current, wait: Wait) {
    if current.suspend(wait) == Resume::Abort {
        std::panic::resume_unwind(Box::new(Abort));
    }
}

thread_local! {
    /// The thread the worker is running now; null outside a launch.
    static CURRENT: Cell<*const Current> = const { Cell::new(std::ptr::null()) };
    static PANIC_MESSAGE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Makes `current` the thread the device layer answers for (null: none).
pub(crate) fn set_current(current: *const Current) {
    CURRENT.with(|c| c.set(current));
}

/// The calling thread's context; device functions are only meaningful inside a launch.
#[track_caller]
pub(crate) fn current() -> &'static Current {
    let current = CURRENT.with(|c| c.get());
    if current.is_null() {
        panic!("a device function was called outside a kernel launch: run kernels through their launch function");
    }
    // SAFETY: the scheduler sets CURRENT only to a `Current` of the block it is running, and clears
    // it before that block's state goes away; the 'static is never held past the device call.
    let current = unsafe { &*current };
    check_stack(current.stack_base.get());
    current
}

/// An address on the calling thread's stack, below the caller's whole frame: never inlined, so that
/// its local lies in a frame of its own under the caller's (a local in an inlined copy could sit
/// anywhere in the caller's frame, which may be megabytes deep).
#[inline(never)]
pub(crate) fn stack_address() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}

/// Fails the kernel when its frames have gone past CUDA's per-thread local memory: the emulator's
/// threads have room for more (so that they do not overflow first), but the GPU would not.
#[track_caller]
fn check_stack(base: usize) {
    let used = base.saturating_sub(stack_address());
    if used > super::LOCAL_MEMORY_LIMIT {
        report(format!(
            "the kernel uses about {} KiB of stack per thread, more than the {} KiB of local memory a CUDA thread may have: keep large arrays in shared or global memory",
            used >> 10,
            super::LOCAL_MEMORY_LIMIT >> 10
        ));
    }
}

pub(crate) fn in_kernel() -> bool {
    CURRENT.with(|c| !c.get().is_null())
}

/// A failure the emulator found in the kernel, raised as a panic of this type: its message names
/// the source lines itself, so no panic location is appended (it would be the emulator's).
pub(crate) struct Report(pub String);

/// Fails the running kernel with `message`.
pub(crate) fn report(message: String) -> ! {
    std::panic::panic_any(Report(message))
}

/// Kernel panics are reported once, through the launch's error, instead of being printed by every
/// thread; panics elsewhere go to the previous hook as before.
pub(crate) fn install_panic_capture() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if in_kernel() {
                let location = info
                    .location()
                    .filter(|_| !info.payload().is::<Report>())
                    .map(|l| format!(" (at {}:{})", l.file(), l.line()))
                    .unwrap_or_default();
                let message = format!("{}{location}", panic_text(info.payload()));
                PANIC_MESSAGE.with(|m| *m.borrow_mut() = Some(message));
            } else {
                previous(info);
            }
        }));
    });
}

/// The message of the panic this thread just caught.
pub(crate) fn take_panic_message(payload: &(dyn Any + Send)) -> String {
    PANIC_MESSAGE
        .with(|m| m.borrow_mut().take())
        .unwrap_or_else(|| panic_text(payload))
}

pub(crate) fn panic_text(payload: &(dyn Any + Send)) -> String {
    if let Some(Report(text)) = payload.downcast_ref::<Report>() {
        text.clone()
    } else if let Some(text) = payload.downcast_ref::<&str>() {
        text.to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "the kernel panicked".to_string()
    }
}
