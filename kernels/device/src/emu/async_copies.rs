//! The `cp.async` copies of one emulated thread between their start and the wait that performs
//! them (see `device::async_copy` for the rules the emulator enforces).

/// What the emulator keeps per thread between a copy's start and its wait.
#[derive(Default)]
pub(crate) struct AsyncCopies {
    /// Copies started since the last commit.
    pub open: Vec<PendingCopy>,
    /// Committed groups, oldest first.
    pub committed: std::collections::VecDeque<Vec<PendingCopy>>,
}

/// One copy in flight: the bytes were read from global memory when it started (zeros past the
/// copy's source size).
pub(crate) struct PendingCopy {
    pub dst: *mut f32,
    pub value: [f32; 4],
    /// Floats the copy writes: 4 (16 bytes) or 1 (4 bytes).
    pub words: u32,
    pub site: &'static std::panic::Location<'static>,
}
