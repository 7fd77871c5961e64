//! Which thread of which block the calling OS thread is emulating, and the capture of kernel panics.

use super::block::Block;
use crate::launch::Dim3;
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::sync::Once;

#[derive(Clone, Copy)]
pub(crate) struct ThreadContext<'a> {
    pub thread_idx: Dim3,
    pub block_idx: Dim3,
    pub block_dim: Dim3,
    pub grid_dim: Dim3,
    /// Linear thread index within the block: x + y·blockDim.x + z·blockDim.x·blockDim.y.
    pub tid: u32,
    pub block: &'a Block,
    /// The stack address where the worker entered the kernel, to measure the kernel's stack use.
    pub stack_base: usize,
}

thread_local! {
    // The lifetime is erased to 'static: `enter` and `leave` bracket the kernel body, and the
    // block outlives the scoped worker thread that runs it.
    static CONTEXT: Cell<Option<ThreadContext<'static>>> = const { Cell::new(None) };
    static PANIC_MESSAGE: RefCell<Option<String>> = const { RefCell::new(None) };
}

pub(crate) fn enter(context: ThreadContext<'_>) {
    // SAFETY: only the lifetime changes; `leave` clears it before the block can be dropped.
    let context: ThreadContext<'static> = unsafe { std::mem::transmute(context) };
    CONTEXT.with(|c| c.set(Some(context)));
}

pub(crate) fn leave() {
    CONTEXT.with(|c| c.set(None));
}

/// The calling thread's context; device functions are only meaningful inside a launch.
#[track_caller]
pub(crate) fn current() -> ThreadContext<'static> {
    let context = CONTEXT.with(|c| c.get()).unwrap_or_else(|| {
        panic!("a device function was called outside a kernel launch: run kernels through their launch function")
    });
    check_stack(context.stack_base);
    context
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
        panic!(
            "the kernel uses about {} KiB of stack per thread, more than the {} KiB of local memory a CUDA thread may have: keep large arrays in shared or global memory",
            used >> 10,
            super::LOCAL_MEMORY_LIMIT >> 10
        );
    }
}

fn in_kernel() -> bool {
    CONTEXT.with(|c| c.get()).is_some()
}

/// Kernel panics on emulator threads are reported once, through the launch's error, instead of
/// being printed by every thread; panics elsewhere go to the previous hook as before.
pub(crate) fn install_panic_capture() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if in_kernel() {
                let location = info
                    .location()
                    .map(|l| format!(" (at {}:{})", l.file(), l.line()))
                    .unwrap_or_default();
                let message = format!("{}{location}", payload_text(info.payload()));
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
        .unwrap_or_else(|| payload_text(payload))
}

fn payload_text(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        text.to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "the kernel panicked".to_string()
    }
}
