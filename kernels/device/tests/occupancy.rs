//! Grids that read the launch's `Occupancy`, and the ones that do not.

use ptxkit::device::{atomic_add, thread_idx};
use ptxkit::{Dim3, Kernel, Occupancy, Problem, SharedMemory, kernel};

#[derive(Clone, Copy)]
struct Tiles {
    tiles: u32,
}

impl Problem for Tiles {
    type Args = (*mut u32,);
}

kernel! {
    /// Counts the blocks that ran.
    pub unsafe fn count_blocks(blocks: *mut u32) {
        if thread_idx().x == 0 {
            unsafe { atomic_add(blocks, 1) };
        }
    }
}

const PER_TILE: Kernel<Tiles> = Kernel {
    code: count_blocks,
    block: Dim3::x(32),
    shared: SharedMemory::NONE,
    grid: |p, _| Dim3::x(p.tiles),
};

const PERSISTENT: Kernel<Tiles> = Kernel {
    grid: |p, device| Dim3::x(p.tiles.min(device.resident_blocks)),
    ..PER_TILE
};

#[test]
fn only_grids_that_read_the_device_are_measured() {
    let many = Tiles { tiles: 100 };
    assert!(!PER_TILE.grid_reads_device(&many));
    assert!(PERSISTENT.grid_reads_device(&many));
    // One tile: one block whatever the device holds.
    assert!(!PERSISTENT.grid_reads_device(&Tiles { tiles: 1 }));
    let device = Occupancy { resident_blocks: 12 };
    assert_eq!(PERSISTENT.launch_shape(&many, device).grid, Dim3::x(12));
    assert_eq!(PER_TILE.launch_shape(&many, device).grid, Dim3::x(100));
}

#[test]
fn the_emulator_runs_a_persistent_grid_of_its_resident_blocks() {
    let mut blocks = 0u32;
    // SAFETY: one counter, added to atomically.
    unsafe { PERSISTENT.emulate(&Tiles { tiles: 100 }, (&mut blocks as *mut u32,)) }.unwrap();
    assert_eq!(blocks, Occupancy::EMULATOR.resident_blocks);
}
