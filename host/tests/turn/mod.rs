//! GPU tests that take turns. Run side by side, one test's blocking driver calls (freeing memory,
//! loading a module) can hold the context until another test's kernel has finished, so that a check
//! that the kernel is still running sees it done (run 2026-11-30-x).

use ptxkit_runtime::Backend;
use std::sync::{Mutex, MutexGuard};

static GPU_TURN: Mutex<()> = Mutex::new(());

/// A GPU backend held for one test, the other tests of its executable waiting their turn.
pub struct Turn {
    backend: Backend,
    _turn: MutexGuard<'static, ()>,
}

impl std::ops::Deref for Turn {
    type Target = Backend;
    fn deref(&self) -> &Backend {
        &self.backend
    }
}

/// Device 0 (or `$PTXKIT_DEVICE`), once the tests before have finished with it.
pub fn open() -> Turn {
    // A test that failed while holding its turn leaves the GPU usable: the lock's poison is ignored.
    let turn = GPU_TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    Turn {
        backend: Backend::Gpu(Box::new(
            kernels_host::open_gpu(None).unwrap_or_else(|e| panic!("the GPU suite needs a GPU: {e}")),
        )),
        _turn: turn,
    }
}
