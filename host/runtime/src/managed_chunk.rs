//! `ManagedChunk`: a range of a managed buffer's elements, launched as an array of its own. A kernel
//! that processes a large managed array chunk by chunk (`host managed pipeline`) takes one chunk
//! per launch: its address is the buffer's plus the chunk's offset, its length the chunk's, and a
//! launch on it records the buffer's use, as a launch on the whole buffer does.

use crate::array::{Array, Element, Tracked};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::managed::ManagedBuffer;
use std::ops::Range;

/// Elements `range` of a managed buffer, for launches. It holds the buffer mutably borrowed, so
/// while it lives nothing else reaches the buffer: no slice the CPU reads, no other view. Launches
/// may write through it.
pub struct ManagedChunk<'a, T> {
    buffer: &'a mut ManagedBuffer<T>,
    start: usize,
    len: usize,
}

impl<'a, T: Element> ManagedChunk<'a, T> {
    /// Elements `range` of `buffer`: a non-empty range inside it.
    pub fn new(buffer: &'a mut ManagedBuffer<T>, range: Range<usize>) -> Result<Self> {
        check_range(&range, buffer.len())?;
        Ok(ManagedChunk {
            buffer,
            start: range.start,
            len: range.len(),
        })
    }

    /// Where the chunk starts in the buffer, in elements.
    pub fn start(&self) -> usize {
        self.start
    }
}

/// `range` is non-empty and inside `len` elements.
pub(crate) fn check_range(range: &Range<usize>, len: usize) -> Result<()> {
    if range.is_empty() || range.end > len {
        return Err(Error::InvalidInput {
            what: "a managed buffer range".into(),
            reason: format!(
                "elements {}..{} are not a non-empty range inside the buffer's {len}",
                range.start, range.end
            ),
        });
    }
    Ok(())
}

impl<T: Element> Tracked for ManagedChunk<'_, T> {
    fn launched(&self, backend: &Backend) -> Result<()> {
        // The buffer's one last-use event covers every chunk of it.
        self.buffer.launched(backend)
    }
}

// SAFETY: the buffer's own `address` is valid on `backend` for all of its elements (its `Array`
// promise, including the checks that the CPU may touch it on the emulator and that the GPU is the
// buffer's), and start + len ≤ its length (checked in `new`), so base + start elements is valid for
// len elements for as long as the borrow lasts. The chunk holds the buffer's only borrow, mutable,
// so writes through it race with no host access.
unsafe impl<T: Element> Array<T> for ManagedChunk<'_, T> {
    fn len(&self) -> usize {
        self.len
    }

    fn address(&self, backend: &Backend) -> Result<u64> {
        let base = Array::<T>::address(&*self.buffer, backend)?;
        Ok(base + (self.start * size_of::<T>()) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_range_must_be_non_empty_and_inside_the_buffer() {
        assert!(check_range(&(0..10), 10).is_ok());
        assert!(check_range(&(9..10), 10).is_ok());
        assert!(check_range(&(5..5), 10).is_err());
        assert!(check_range(&(8..11), 10).is_err());
        #[allow(clippy::reversed_empty_ranges)]
        let backwards = 7..3;
        assert!(check_range(&backwards, 10).is_err());
    }
}
