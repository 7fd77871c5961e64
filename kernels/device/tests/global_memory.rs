//! Deliberately broken kernels for global memory, written with the typed views as a kernel author
//! writes them first, and the report the emulator must give for each: out-of-bounds indices, two
//! threads writing one element, one writing what another reads (in one block, without a barrier;
//! between blocks, without a release and an acquire), a flag published before its data, a last
//! block that reads before the others' fences. Beside each, the correct kernel, which must pass in
//! every schedule.

use ptxkit::device::{
    Float4, GlobalMatrixMut, GlobalSlice, GlobalSliceMut, atomic_add, block_dim, block_idx, global_store, grid_dim,
    red_add4, store_relaxed, sync_threads, thread_fence, thread_idx,
};
use ptxkit::emu::{EmuError, Schedule, with_schedule};
use ptxkit::{Dim3, LaunchShape, kernel};

mod common;
use common::failure;

/// Thread or block `x` of a one-dimensional launch.
fn at(x: u32) -> Dim3 {
    Dim3::new(x, 0, 0)
}

fn launch(grid: u32, block: u32) -> LaunchShape {
    LaunchShape {
        grid: Dim3::x(grid),
        block: Dim3::x(block),
        shared_bytes: 0,
    }
}

/// Where in this file a report must point: the line of `needle`.
fn line_of(needle: &str) -> String {
    common::line_in("global_memory.rs", include_str!("global_memory.rs"), needle)
}

/// Seeds for the random schedules, printed by a failing launch.
const SEED: u64 = 0x5eed;

kernel! {
    /// out[i] = 2·x[i] for every thread of the grid, with no check of i against n: the grid is
    /// rounded up to whole blocks.
    unsafe fn double_without_a_bound(x: GlobalSlice<f32>, out: GlobalSliceMut<f32>) {
        let i = block_idx().x * block_dim().x + thread_idx().x;
        out.set(i, 2.0 * x.get(i)); // UNBOUNDED
    }
}

#[test]
fn an_index_past_a_view_fails_the_launch_naming_the_parameter_and_the_line() {
    let x = vec![1.0f32; 40];
    let mut out = vec![f32::NAN; 40];
    // SAFETY: views of live vectors; the launch reads past x's end, which the view catches.
    let result = unsafe {
        double_without_a_bound.emulate(&launch(2, 32), (GlobalSlice::new(&x), GlobalSliceMut::new(&mut out)))
    };
    let (kernel, block, thread, message) = failure(result);
    assert_eq!(kernel, "double_without_a_bound");
    assert_eq!((block, thread), (at(1), at(8)));
    assert!(message.contains("out of bounds"), "{message}");
    assert!(message.contains("index 40 of a view of 40"), "{message}");
    assert!(message.contains("element 0 of `x`"), "{message}");
    assert!(message.contains(&line_of("// UNBOUNDED")), "{message}");
    // What ran before the launch stopped wrote only its own elements, right.
    assert!(out.iter().all(|&v| v == 2.0 || v.is_nan()));
}

kernel! {
    /// Reads element `i` of a 3×4 matrix's row 1 with the unchecked accessor.
    unsafe fn unchecked_past_a_row(m: GlobalMatrixMut<u32>, col: u32) {
        if thread_idx().x == 0 {
            // SAFETY: deliberately broken for col ≥ 4: the emulator must catch it.
            let value = unsafe { m.get_unchecked(1, col) }; // PAST THE ROW
            m.set(0, 0, value);
        }
    }
}

#[test]
fn an_unchecked_index_past_a_matrix_row_is_still_caught_on_the_emulator() {
    let mut values: Vec<u32> = (0..12).collect();
    // SAFETY: a view of a live vector.
    unsafe { unchecked_past_a_row.emulate(&launch(1, 32), (GlobalMatrixMut::new(&mut values, 3, 4), 3)) }.unwrap();
    assert_eq!(values[0], 7);
    // SAFETY: as above.
    let result = unsafe { unchecked_past_a_row.emulate(&launch(1, 32), (GlobalMatrixMut::new(&mut values, 3, 4), 4)) };
    let (_, _, thread, message) = failure(result);
    assert_eq!(thread, at(0));
    assert!(message.contains("index 4 of a view of 4"), "{message}");
    assert!(message.contains(&line_of("// PAST THE ROW")), "{message}");
}

kernel! {
    /// Each thread adds its value into `sum[0]` with a plain load and store: every update but
    /// one is lost on the GPU.
    unsafe fn plain_sum(values: GlobalSlice<f32>, sum: GlobalSliceMut<f32>) {
        let i = block_idx().x * block_dim().x + thread_idx().x;
        let total = sum.get(0u32) + values.get(i); // LOAD SUM
        sum.set(0u32, total); // STORE SUM
    }
}

#[test]
fn two_threads_writing_one_element_through_a_view_race_with_both_lines() {
    let values = vec![1.0f32; 64];
    let mut sum = vec![0.0f32];
    // SAFETY: views of live vectors.
    let result = unsafe {
        plain_sum.emulate(
            &launch(1, 64),
            (GlobalSlice::new(&values), GlobalSliceMut::new(&mut sum)),
        )
    };
    let (_, block, thread, message) = failure(result);
    // Thread 1 runs after thread 0 (one block: in order) and reads what thread 0 wrote.
    assert_eq!((block, thread), (at(0), at(1)));
    assert!(
        message.contains("global-memory race on element 0 of `sum`"),
        "{message}"
    );
    assert!(
        message.contains("thread (0, 0, 0) of block (0, 0, 0) wrote it"),
        "{message}"
    );
    assert!(
        message.contains("thread (1, 0, 0) of block (0, 0, 0) reads it"),
        "{message}"
    );
    assert!(message.contains(&line_of("// STORE SUM")), "{message}");
    assert!(message.contains(&line_of("// LOAD SUM")), "{message}");
    assert!(message.contains("sync_threads"), "{message}");
}

kernel! {
    /// Shifts a row left in place in global memory: thread t reads element t + 1 and writes
    /// element t, with a barrier between the reads and the writes when `barrier` is 1.
    unsafe fn shift_left_in_place(row: GlobalSliceMut<u32>, barrier: u32) {
        let t = thread_idx().x;
        let next = row.get(t + 1); // READ NEXT
        if barrier == 1 {
            sync_threads();
        }
        row.set(t, next); // WRITE OWN
    }
}

#[test]
fn overwriting_what_another_thread_of_the_block_reads_races_without_a_barrier() {
    let mut row: Vec<u32> = (0..33).collect();
    // SAFETY: a view of a live vector; 32 threads read 33 elements.
    unsafe { shift_left_in_place.emulate(&launch(1, 32), (GlobalSliceMut::new(&mut row), 1)) }.unwrap();
    assert_eq!(row[..32], (1..33).collect::<Vec<_>>()[..]);
    let mut row: Vec<u32> = (0..33).collect();
    // SAFETY: as above.
    let result = unsafe { shift_left_in_place.emulate(&launch(1, 32), (GlobalSliceMut::new(&mut row), 0)) };
    let (_, _, thread, message) = failure(result);
    // Thread 0 read element 1 (and wrote 0); thread 1 writes element 1.
    assert_eq!(thread, at(1));
    assert!(message.contains("element 1 of `row`"), "{message}");
    assert!(
        message.contains("thread (0, 0, 0) of block (0, 0, 0) read it"),
        "{message}"
    );
    assert!(
        message.contains("thread (1, 0, 0) of block (0, 0, 0) writes it"),
        "{message}"
    );
    assert!(message.contains(&line_of("// READ NEXT")), "{message}");
    assert!(message.contains(&line_of("// WRITE OWN")), "{message}");
}

kernel! {
    /// Block b writes `out[b]`, then reads `out[b - 1]`, which block b - 1 writes: no flag,
    /// no fence, nothing orders the blocks.
    unsafe fn read_the_previous_block(out: GlobalSliceMut<u32>, seen: GlobalSliceMut<u32>) {
        let b = block_idx().x;
        if thread_idx().x == 0 {
            out.set(b, b + 100); // PUBLISH
            if b > 0 {
                seen.set(b, out.get(b - 1)); // READ PREVIOUS
            }
        }
    }
}

#[test]
fn a_block_reading_another_blocks_output_without_an_order_races_in_every_schedule() {
    for schedule in Schedule::all(SEED) {
        let (mut out, mut seen) = (vec![0u32; 8], vec![0u32; 8]);
        // SAFETY: views of live vectors.
        let result = with_schedule(schedule, || unsafe {
            read_the_previous_block.emulate(
                &launch(8, 32),
                (GlobalSliceMut::new(&mut out), GlobalSliceMut::new(&mut seen)),
            )
        });
        let (_, _, thread, message) = failure(result);
        assert_eq!(thread, at(0), "{schedule}: {message}");
        // Whichever came first, the write and the read are named.
        assert!(message.contains("of `out`"), "{schedule}: {message}");
        assert!(message.contains(&line_of("// PUBLISH")), "{schedule}: {message}");
        assert!(message.contains(&line_of("// READ PREVIOUS")), "{schedule}: {message}");
        assert!(
            message.contains("release") && message.contains("acquire"),
            "{schedule}: {message}"
        );
        if schedule != Schedule::GridOrder {
            assert!(message.contains(&format!("PTXKIT_SCHEDULE={schedule}")), "{message}");
        }
    }
}

/// Which bug a kernel below carries.
const CORRECT: u32 = 0;
const NO_WRITER_FENCE: u32 = 1;
const NO_READER_FENCE: u32 = 2;

kernel! {
    /// A last-block sum: each block writes its partial sum, fences, and takes a ticket; the block
    /// with the last ticket fences and adds the partials in block order. `bug` leaves out the
    /// writers' fence or the last block's.
    unsafe fn last_block_sum(values: GlobalSlice<u32>, partials: GlobalSliceMut<u32>, ticket: *mut u32, bug: u32) {
        let (b, t) = (block_idx().x, thread_idx().x);
        if t == 0 {
            let mut sum = 0;
            for k in 0..block_dim().x {
                sum += values.get(b * block_dim().x + k);
            }
            partials.set(1 + b, sum); // PARTIAL
            if bug != NO_WRITER_FENCE {
                thread_fence();
            }
            // SAFETY: the ticket is one u32 the caller zeroes.
            let taken = unsafe { atomic_add(ticket, 1u32) };
            if taken == grid_dim().x - 1 {
                if bug != NO_READER_FENCE {
                    thread_fence();
                }
                let mut total = 0;
                for k in 0..grid_dim().x {
                    total += partials.get(1 + k); // ADD PARTIALS
                }
                partials.set(0u32, total);
                // SAFETY: as above; no block takes a ticket any more.
                unsafe { store_relaxed(ticket, 0u32) };
            }
        }
    }
}

fn run_last_block_sum(schedule: Schedule, bug: u32) -> (Result<(), EmuError>, u32) {
    let blocks = 12u32;
    let values: Vec<u32> = (0..blocks * 32).collect();
    let mut partials = vec![0u32; 1 + blocks as usize];
    let mut ticket = 0u32;
    // SAFETY: views of live vectors, a live ticket.
    let result = with_schedule(schedule, || unsafe {
        last_block_sum.emulate(
            &launch(blocks, 32),
            (
                GlobalSlice::new(&values),
                GlobalSliceMut::new(&mut partials),
                &mut ticket as *mut u32,
                bug,
            ),
        )
    });
    (result, partials[0])
}

#[test]
fn a_last_block_sum_with_both_fences_passes_in_every_schedule() {
    let expected = (0..12 * 32).sum::<u32>();
    for schedule in Schedule::all(SEED) {
        let (result, total) = run_last_block_sum(schedule, CORRECT);
        assert!(result.is_ok(), "{schedule}: {result:?}");
        assert_eq!(total, expected, "{schedule}");
    }
}

#[test]
fn a_last_block_sum_without_the_writers_fence_races_in_every_schedule() {
    for schedule in Schedule::all(SEED) {
        let (result, _) = run_last_block_sum(schedule, NO_WRITER_FENCE);
        let (_, _, _, message) = failure(result);
        assert!(message.contains("of `partials`"), "{schedule}: {message}");
        assert!(message.contains(&line_of("// PARTIAL")), "{schedule}: {message}");
        assert!(message.contains(&line_of("// ADD PARTIALS")), "{schedule}: {message}");
    }
}

#[test]
fn a_last_block_sum_without_the_readers_fence_races_in_every_schedule() {
    for schedule in Schedule::all(SEED) {
        let (result, _) = run_last_block_sum(schedule, NO_READER_FENCE);
        let (_, _, _, message) = failure(result);
        assert!(message.contains(&line_of("// ADD PARTIALS")), "{schedule}: {message}");
    }
}

const PUBLISH_FIRST: u32 = 1;
const RELAXED_FLAG: u32 = 2;

kernel! {
    /// Block 0 fills `data` and then raises `flag` with a release store; block 1 waits for the
    /// flag with acquire loads and copies `data` to `copy`. `bug` raises the flag before the data
    /// is written, or with a relaxed store and no fence.
    unsafe fn flag_then_data(data: GlobalSliceMut<u32>, flag: GlobalSliceMut<u32>, copy: GlobalSliceMut<u32>, bug: u32) {
        let (b, t) = (block_idx().x, thread_idx().x);
        if b == 0 {
            if bug == PUBLISH_FIRST && t == 0 {
                flag.at(0u32).store_release(1);
            }
            data.set(t, t * 3); // FILL
            // Every thread's element is written before thread 0 raises the flag.
            sync_threads();
            if t == 0 && bug != PUBLISH_FIRST {
                if bug == RELAXED_FLAG {
                    flag.at(0u32).store_relaxed(1);
                } else {
                    flag.at(0u32).store_release(1);
                }
            }
        } else {
            if t == 0 {
                while flag.at(0u32).load_acquire() == 0 {}
            }
            // The flag was seen before any thread reads the data.
            sync_threads();
            copy.set(t, data.get(t)); // COPY
        }
    }
}

fn run_flag_then_data(schedule: Schedule, bug: u32) -> (Result<(), EmuError>, Vec<u32>) {
    let (mut data, mut flag, mut copy) = (vec![0u32; 64], vec![0u32], vec![u32::MAX; 64]);
    // SAFETY: views of live vectors.
    let result = with_schedule(schedule, || unsafe {
        flag_then_data.emulate(
            &launch(2, 64),
            (
                GlobalSliceMut::new(&mut data),
                GlobalSliceMut::new(&mut flag),
                GlobalSliceMut::new(&mut copy),
                bug,
            ),
        )
    });
    (result, copy)
}

#[test]
fn data_behind_a_release_and_an_acquire_reaches_the_other_block_in_every_schedule() {
    for schedule in Schedule::all(SEED) {
        let (result, copy) = run_flag_then_data(schedule, CORRECT);
        assert!(result.is_ok(), "{schedule}: {result:?}");
        assert_eq!(copy, (0..64).map(|t| t * 3).collect::<Vec<u32>>(), "{schedule}");
    }
}

#[test]
fn a_flag_raised_before_its_data_or_without_a_release_races_in_every_schedule() {
    for bug in [PUBLISH_FIRST, RELAXED_FLAG] {
        for schedule in Schedule::all(SEED) {
            let (result, _) = run_flag_then_data(schedule, bug);
            let (_, _, _, message) = failure(result);
            assert!(message.contains("of `data`"), "bug {bug}, {schedule}: {message}");
            assert!(
                message.contains(&line_of("// FILL")),
                "bug {bug}, {schedule}: {message}"
            );
            assert!(
                message.contains(&line_of("// COPY")),
                "bug {bug}, {schedule}: {message}"
            );
        }
    }
}

kernel! {
    /// Every thread counts its value's bin with an atomic; thread 0 of the last block then peeks
    /// at bin 0 with a plain read when `peek` is 1, while other blocks may still be adding.
    unsafe fn atomic_bins(values: GlobalSlice<u32>, bins: GlobalSliceMut<u32>, peek: GlobalSliceMut<u32>, check: u32) {
        let i = block_idx().x * block_dim().x + thread_idx().x;
        bins.at(values.get(i) % 4).atomic_add(1); // COUNT
        if check == 1 && block_idx().x == grid_dim().x - 1 && thread_idx().x == 0 {
            peek.set(0u32, bins.get(0u32)); // PEEK
        }
    }
}

#[test]
fn atomics_through_a_view_do_not_race_and_a_plain_read_between_them_does() {
    let values: Vec<u32> = (0..256).collect();
    for schedule in Schedule::all(SEED) {
        let (mut bins, mut peek) = (vec![0u32; 4], vec![0u32]);
        // SAFETY: views of live vectors.
        let result = with_schedule(schedule, || unsafe {
            atomic_bins.emulate(
                &launch(8, 32),
                (
                    GlobalSlice::new(&values),
                    GlobalSliceMut::new(&mut bins),
                    GlobalSliceMut::new(&mut peek),
                    0,
                ),
            )
        });
        assert!(result.is_ok(), "{schedule}: {result:?}");
        assert_eq!(bins, [64; 4], "{schedule}");
        // SAFETY: as above.
        let result = with_schedule(schedule, || unsafe {
            atomic_bins.emulate(
                &launch(8, 32),
                (
                    GlobalSlice::new(&values),
                    GlobalSliceMut::new(&mut bins),
                    GlobalSliceMut::new(&mut peek),
                    1,
                ),
            )
        });
        let (_, _, _, message) = failure(result);
        assert!(message.contains("element 0 of `bins`"), "{schedule}: {message}");
        assert!(
            message.contains("atomically updated") || message.contains("atomically updates"),
            "{message}"
        );
        assert!(message.contains(&line_of("// PEEK")), "{schedule}: {message}");
    }
}

const READ_STALE: u32 = 1;

kernel! {
    /// A chain of blocks in ticket order: the block with ticket v waits until `ready[v - 1]` holds
    /// the launch's number, reads `link[v - 1]` and publishes `link[v] = link[v - 1] + v` behind
    /// `ready[v]`. With `bug`, a block trusts a `ready` word whatever launch wrote it: a word left
    /// by the previous launch lets it read a link not yet written in this one.
    unsafe fn chain(ticket: *mut u32, ready: GlobalSliceMut<u32>, link: GlobalSliceMut<u32>, launch_number: u32, bug: u32) {
        if thread_idx().x != 0 {
            return;
        }
        // SAFETY: the ticket is one u32 the caller zeroes.
        let v = unsafe { atomic_add(ticket, 1u32) };
        let before = if v == 0 {
            0
        } else {
            loop {
                let seen = ready.at(v - 1).load_acquire();
                if seen == launch_number || (bug == READ_STALE && seen != 0) {
                    break;
                }
            }
            link.get(v - 1)
        };
        link.set(v, before + v);
        ready.at(v).store_release(launch_number);
    }
}

/// Runs the chain twice over the same words (the second launch sees the first's `ready`), under
/// `schedule`; the second launch's result and links.
fn run_chain_twice(schedule: Schedule, bug: u32) -> (Result<(), EmuError>, Vec<u32>) {
    let blocks = 16;
    let (mut ready, mut link) = (vec![0u32; blocks], vec![0u32; blocks]);
    let mut result = Ok(());
    for launch_number in [1, 2] {
        let mut ticket = 0u32;
        link.fill(0);
        // SAFETY: views of live vectors, a live ticket.
        result = with_schedule(schedule, || unsafe {
            chain.emulate(
                &launch(blocks as u32, 32),
                (
                    &mut ticket as *mut u32,
                    GlobalSliceMut::new(&mut ready),
                    GlobalSliceMut::new(&mut link),
                    launch_number,
                    bug,
                ),
            )
        });
        if result.is_err() {
            break;
        }
    }
    (result, link)
}

#[test]
fn a_chain_of_blocks_by_ticket_passes_in_every_schedule() {
    let expected: Vec<u32> = (0..16).map(|v| v * (v + 1) / 2).collect();
    for seed in [SEED, 1, 2, 3] {
        for schedule in Schedule::all(seed) {
            let (result, link) = run_chain_twice(schedule, CORRECT);
            assert!(result.is_ok(), "{schedule}: {result:?}");
            assert_eq!(link, expected, "{schedule}");
        }
    }
}

#[test]
fn a_chain_that_trusts_a_stale_flag_fails_when_blocks_interleave() {
    // In grid order the block before has usually finished by the time the next reads its link,
    // so the bug mostly hides there; blocks switched at every atomic show it.
    let found = (0..8).any(|seed| {
        let (result, _) = run_chain_twice(Schedule::Interleaved { seed }, READ_STALE);
        result.is_err_and(|e| {
            let message = e.to_string();
            assert!(message.contains("of `link`"), "{message}");
            assert!(message.contains("PTXKIT_SCHEDULE=interleaved:"), "{message}");
            true
        })
    });
    assert!(found, "no interleaved schedule of 8 showed the stale flag");
}

kernel! {
    /// Two blocks each wait for the other's flag before raising their own.
    unsafe fn wait_for_each_other(flags: GlobalSliceMut<u32>) {
        if thread_idx().x == 0 {
            let b = block_idx().x;
            while flags.at(1 - b).load_acquire() == 0 {} // WAIT FOR THE OTHER
            flags.at(b).store_release(1);
        }
    }
}

#[test]
fn blocks_waiting_for_each_other_fail_within_the_spin_limit_with_the_poll_line() {
    // No other launch of this file waits long with every block idle: a short limit is safe here.
    ptxkit::emu::set_spin_limit(std::time::Duration::from_millis(300));
    for schedule in Schedule::all(SEED) {
        let mut flags = vec![0u32; 2];
        let started = std::time::Instant::now();
        // SAFETY: a view of a live vector.
        let result = with_schedule(schedule, || unsafe {
            wait_for_each_other.emulate(&launch(2, 32), (GlobalSliceMut::new(&mut flags),))
        });
        let (_, block, thread, message) = failure(result);
        assert_eq!((block, thread), (at(0), at(0)), "{schedule}: {message}");
        assert!(message.contains("nothing will end"), "{schedule}: {message}");
        assert!(
            message.starts_with(&format!("at {}", line_of("// WAIT FOR THE OTHER"))),
            "{schedule}: {message}"
        );
        // Reported about one limit after the last progress; the margin is for a loaded machine
        // (a minute, the old watchdog's time, would fail).
        assert!(
            started.elapsed() < ptxkit::emu::spin_limit() * 10,
            "{schedule}: took {:?}",
            started.elapsed()
        );
    }
}

kernel! {
    /// The library's last-block pattern: thread 0 publishes the block's partial sum, fences and
    /// takes a ticket; the block meets; in the last block every thread fences (unless `bug`) and
    /// reads a share of the partials, which thread 0 then adds.
    unsafe fn last_block_sum_by_every_thread(partials: GlobalSliceMut<u32>, ticket: GlobalSliceMut<u32>, shares: GlobalSliceMut<u32>, bug: u32) {
        let (b, t) = (block_idx().x, thread_idx().x);
        let last = ptxkit::device::DynamicShared::new().named_slice::<u32>("last", 1);
        if t == 0 {
            partials.set(b, b + 1);
            thread_fence();
            let taken = ticket.at(0u32).atomic_add(1);
            last.set(0, (taken == grid_dim().x - 1) as u32);
        }
        // The ticket's verdict is in shared memory before any thread reads it.
        sync_threads();
        if last.get(0) != 0 {
            if bug != NO_READER_FENCE {
                thread_fence();
            }
            if t < grid_dim().x {
                shares.set(t, partials.at(t).load_relaxed()); // READ SHARE
            }
        }
    }
}

#[test]
fn a_last_block_read_by_all_its_threads_after_the_ticket_and_a_barrier_needs_their_fences() {
    for bug in [CORRECT, NO_READER_FENCE] {
        for schedule in Schedule::all(SEED) {
            let (mut partials, mut ticket, mut shares) = (vec![0u32; 16], vec![0u32], vec![0u32; 16]);
            let shape = LaunchShape {
                grid: Dim3::x(16),
                block: Dim3::x(32),
                shared_bytes: 4,
            };
            // SAFETY: views of live vectors.
            let result = with_schedule(schedule, || unsafe {
                last_block_sum_by_every_thread.emulate(
                    &shape,
                    (
                        GlobalSliceMut::new(&mut partials),
                        GlobalSliceMut::new(&mut ticket),
                        GlobalSliceMut::new(&mut shares),
                        bug,
                    ),
                )
            });
            if bug == CORRECT {
                assert!(result.is_ok(), "{schedule}: {result:?}");
                assert_eq!(shares, (1..=16).collect::<Vec<u32>>(), "{schedule}");
            } else {
                let (_, _, _, message) = failure(result);
                assert!(message.contains("of `partials`"), "{schedule}: {message}");
                assert!(message.contains(&line_of("// READ SHARE")), "{schedule}: {message}");
            }
        }
    }
}

kernel! {
    /// Stores through the address of a view the kernel takes as read-only.
    unsafe fn store_into_a_read_only_view(x: GlobalSlice<f32>) {
        let i = thread_idx().x;
        // SAFETY: deliberately broken: inside x, which the kernel promised only to read.
        unsafe { global_store(x.as_ptr().cast_mut().add(i as usize), 1.0) }; // STORE INTO X
    }
}

#[test]
fn a_store_into_a_read_only_view_fails_the_launch_naming_it() {
    let x = vec![0.5f32; 32];
    // SAFETY: a view of a live vector; the kernel writes inside it (the bug the emulator names).
    let result = unsafe { store_into_a_read_only_view.emulate(&launch(1, 32), (GlobalSlice::new(&x),)) };
    let (_, block, thread, message) = failure(result);
    assert_eq!((block, thread), (at(0), at(0)));
    assert!(
        message.contains("a store into element 0 of `x`, which the launch passes only as a read-only view"),
        "{message}"
    );
    assert!(message.contains(&line_of("// STORE INTO X")), "{message}");
}

kernel! {
    /// Block 1 reads element 0 through `x` while block 0 writes it through `out`: one array, two
    /// parameters, one read-only.
    unsafe fn read_what_another_block_writes_through_an_alias(x: GlobalSlice<u32>, out: GlobalSliceMut<u32>) {
        if thread_idx().x == 0 {
            if block_idx().x == 0 {
                out.set(0u32, 7); // WRITE THROUGH OUT
            } else {
                out.set(1u32, x.get(0u32)); // READ THROUGH X
            }
        }
    }
}

#[test]
fn a_read_through_a_read_only_alias_of_a_written_array_still_races() {
    for schedule in Schedule::all(SEED) {
        let mut values = vec![0u32; 2];
        let out = GlobalSliceMut::new(&mut values);
        // SAFETY: two views of one live vector; the blocks race on element 0 (the bug).
        let result = with_schedule(schedule, || unsafe {
            read_what_another_block_writes_through_an_alias.emulate(&launch(2, 32), (out.as_const(), out))
        });
        let (_, _, _, message) = failure(result);
        assert!(
            message.contains("global-memory race on element 0 of `x` (also `out`)"),
            "{schedule}: {message}"
        );
        assert!(
            message.contains(&line_of("// WRITE THROUGH OUT")) && message.contains(&line_of("// READ THROUGH X")),
            "{schedule}: {message}"
        );
    }
}

kernel! {
    /// Clears the u64 words in `scratch`, an f32 view cast to them, as a look-back scan keeps its
    /// status words.
    unsafe fn clear_words(scratch: GlobalSliceMut<f32>) {
        // SAFETY: deliberately broken when `scratch` starts 4 bytes past an 8-byte boundary.
        let words = unsafe { scratch.cast::<u64>() }; // CAST
        let i = thread_idx().x;
        if (i as usize) < words.len() {
            words.at(i).store_relaxed(0);
        }
    }
}

#[test]
fn a_view_cast_to_words_its_start_is_not_aligned_for_fails_the_launch() {
    let mut backing = vec![u64::MAX; 8];
    let floats = backing.as_mut_ptr().cast::<f32>();
    // SAFETY: the vector's 64 bytes as 16 f32; the second view starts 4 bytes in.
    let (aligned, misaligned) = unsafe {
        (
            GlobalSliceMut::from_raw_parts(floats, 16),
            GlobalSliceMut::from_raw_parts(floats.add(1), 14),
        )
    };
    // SAFETY: views of a live vector.
    unsafe { clear_words.emulate(&launch(1, 8), (aligned,)) }.unwrap();
    assert_eq!(backing, vec![0; 8]);
    // SAFETY: as above; the cast is misaligned, which the emulator must report.
    let (kernel, _, thread, message) = failure(unsafe { clear_words.emulate(&launch(1, 8), (misaligned,)) });
    assert_eq!(kernel, "clear_words");
    assert_eq!(thread, at(0));
    assert!(message.contains("8-byte-aligned"), "{message}");
    assert!(message.contains(&line_of("// CAST")), "{message}");
}

kernel! {
    /// Every thread adds (1, 2, 3, 4)·(its index + 1) into the four f32 at `sums + offset` with one
    /// vector reduction.
    unsafe fn vector_reductions(sums: *mut f32, offset: u32) {
        let t = (block_idx().x * block_dim().x + thread_idx().x + 1) as f32;
        let at = sums.wrapping_add(offset as usize);
        // SAFETY: the test passes four f32 at `at`, aligned where offset is 0.
        unsafe { red_add4(at, Float4([t, 2.0 * t, 3.0 * t, 4.0 * t])) }; // VECTOR RED
    }
}

#[test]
fn vector_reductions_add_without_racing_and_a_misaligned_one_fails_the_launch() {
    for schedule in Schedule::all(SEED) {
        let mut sums = vec![Float4::default(); 2];
        // SAFETY: two Float4 (16-byte aligned) outlive the launch.
        let result = with_schedule(schedule, || unsafe {
            vector_reductions.emulate(&launch(4, 32), (sums.as_mut_ptr().cast::<f32>(), 0))
        });
        assert!(result.is_ok(), "{schedule}: {result:?}");
        // 128 threads: 1 + … + 128 = 8256, every partial sum exact in f32.
        assert_eq!(
            sums,
            [Float4([8256.0, 16512.0, 24768.0, 33024.0]), Float4::default()],
            "{schedule}"
        );
    }
    let mut sums = vec![Float4::default(); 2];
    // SAFETY: as above; one f32 in, the four are inside the eight but not 16-byte aligned.
    let result = unsafe { vector_reductions.emulate(&launch(1, 32), (sums.as_mut_ptr().cast::<f32>(), 1)) };
    let (_, _, _, message) = failure(result);
    assert!(message.contains("misaligned 16-byte global reduction"), "{message}");
    assert!(message.contains(&line_of("// VECTOR RED")), "{message}");
}
