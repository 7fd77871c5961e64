//! What the emulator's detector suites share: the failed launch's report, and the line of a
//! marker in a test file's own source.

use ptxkit::Dim3;
use ptxkit::emu::EmuError;

/// The failed launch's kernel, block, thread and message.
pub fn failure(result: Result<(), EmuError>) -> (&'static str, Dim3, Dim3, String) {
    match result {
        Err(EmuError::KernelFailed {
            kernel,
            block,
            thread,
            message,
        }) => (kernel, block, thread, message),
        other => panic!("expected the launch to fail, got {other:?}"),
    }
}

/// Where a report must point: `file:line` of the first line of `source` (the text of `file`)
/// that holds `needle` and is not a `line_of` call.
pub fn line_in(file: &str, source: &str, needle: &str) -> String {
    let line = source
        .lines()
        .position(|l| l.contains(needle) && !l.contains("line_of"))
        .unwrap_or_else(|| panic!("{needle} is not in {file}"));
    format!("{file}:{}", line + 1)
}
