//! The CPU emulator: runs a kernel's body, unchanged, over a grid of blocks on the host.
//!
//! A launch spawns one OS thread per thread of a block and reuses that pool for every block of the
//! grid, one block at a time. The threads share the block's shared memory, meet at barriers, and
//! exchange values through warp shuffles as on the GPU. Misuse that would hang or corrupt a GPU
//! launch (a barrier some threads never reach, a shared-memory access out of bounds, carving more
//! shared memory than the launch gave) fails the launch with an [`EmuError`] that says which block
//! and thread, instead of hanging.

mod block;
mod context;
pub(crate) mod device;

use crate::launch::{Dim3, LaunchShape};
use block::{Abort, Block};
use std::panic::{self, AssertUnwindSafe};

/// Stack of each emulator thread. Far more than the 512 KiB of local memory a CUDA thread may have,
/// so that every kernel the GPU can run fits; kernels whose locals pass [`LOCAL_MEMORY_LIMIT`] fail
/// the launch with an error instead of overflowing it (up to this size; beyond it the process stops
/// with Rust's stack-overflow message). Only the pages a kernel touches take memory.
pub const WORKER_STACK_BYTES: usize = 8 << 20;

/// Local memory (stack) a kernel thread may use on the emulator: CUDA's per-thread limit.
pub const LOCAL_MEMORY_LIMIT: usize = 512 << 10;

/// Why an emulated launch did not complete.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    #[error("cannot launch {kernel}: {reason}")]
    InvalidLaunch { kernel: &'static str, reason: String },
    #[error("{kernel} failed in block {block}, thread {thread}: {message}")]
    KernelFailed {
        kernel: &'static str,
        block: Dim3,
        thread: Dim3,
        message: String,
    },
    #[error("cannot start {threads} emulator threads for {kernel}: {source}")]
    Spawn {
        kernel: &'static str,
        threads: u64,
        source: std::io::Error,
    },
}

/// Runs `body` as kernel `kernel` over `shape`: every thread of every block calls it once, with the
/// device layer answering for that thread. Blocks run one after another.
pub fn launch(kernel: &'static str, shape: &LaunchShape, body: impl Fn() + Sync) -> Result<(), EmuError> {
    shape
        .check()
        .map_err(|reason| EmuError::InvalidLaunch { kernel, reason })?;
    context::install_panic_capture();
    let block = Block::new(shape);
    let threads = shape.block.volume();
    std::thread::scope(|scope| {
        let mut workers = Vec::with_capacity(threads as usize);
        for tid in 0..threads as u32 {
            let worker = std::thread::Builder::new()
                .name(format!("{kernel}:{tid}"))
                .stack_size(WORKER_STACK_BYTES)
                .spawn_scoped(scope, {
                    let (block, body) = (&block, &body);
                    // The stack's top as the kernel sees it: taken here, above run_worker's frame,
                    // which holds the kernel's locals once the body is inlined into it.
                    move || run_worker(block, shape, tid, body, context::stack_address())
                });
            match worker {
                Ok(handle) => workers.push(handle),
                Err(source) => {
                    // The threads already started would wait for this one forever: stop them.
                    block.fail(0, "the emulator could not start all of the block's threads".into());
                    return Err(EmuError::Spawn {
                        kernel,
                        threads,
                        source,
                    });
                }
            }
        }
        for worker in workers {
            // Workers catch every panic of the kernel body themselves.
            let _ = worker.join();
        }
        Ok(())
    })?;
    match block.failure() {
        None => Ok(()),
        Some(failure) => Err(EmuError::KernelFailed {
            kernel,
            block: failure.block,
            thread: failure.thread,
            message: failure.message,
        }),
    }
}

/// One thread of the block, run for every block of the grid in turn. Never inlined, so that its
/// frame (and the kernel's, inlined into it) lies below `stack_base`.
#[inline(never)]
fn run_worker(block: &Block, shape: &LaunchShape, tid: u32, body: &(impl Fn() + Sync), stack_base: usize) {
    let thread_idx = unlinearize(tid as u64, shape.block);
    for linear_block in 0..shape.grid.volume() {
        let block_idx = unlinearize(linear_block, shape.grid);
        context::enter(context::ThreadContext {
            thread_idx,
            block_idx,
            block_dim: shape.block,
            grid_dim: shape.grid,
            tid,
            block,
            stack_base,
        });
        let outcome = panic::catch_unwind(AssertUnwindSafe(body));
        context::leave();
        match outcome {
            Ok(()) => {}
            Err(payload) if payload.is::<Abort>() => return,
            Err(payload) => {
                let message = context::take_panic_message(payload.as_ref());
                block.fail_at(tid, block_idx, thread_idx, message);
                return;
            }
        }
        if block.exit(tid, block_idx).is_err() {
            return;
        }
    }
}

fn unlinearize(linear: u64, extent: Dim3) -> Dim3 {
    let (x, y) = (extent.x as u64, extent.y as u64);
    Dim3::new((linear % x) as u32, (linear / x % y) as u32, (linear / (x * y)) as u32)
}
