//! The GPU suite: every registered kernel on the GPU against the f64 CPU reference, over the
//! emulator suite's edge sizes plus large ones, and `ManagedBuffer` behaviour. Without a GPU these
//! show as ignored; the runner runs them with `--include-ignored`.

mod common;
mod turn;

use kernels::elementwise::Elementwise;
use kernels::matmul::Matmul;
use kernels::testing::{guarded_random_vec, rng};
use kernels::{Source, vec_add};
use kernels_host::families::{elementwise, matmul};
use ptxkit_runtime::{Backend, Error};
use ptxkit_runtime::{Gpu, ManagedBuffer, MemoryLocation};

use turn::open;

fn gpu(backend: &Backend) -> &Gpu {
    backend.gpu().expect("opened on a GPU")
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn every_registered_kernel_matches_its_reference_on_edge_and_large_sizes_on_the_gpu() {
    common::check_every_kernel(&open(), |family| {
        family.sizes().edge.into_iter().chain(family.sizes().large).collect()
    });
}

/// vec_add of `n` elements on managed buffers, with the registry's kernel.
fn managed_vec_add(backend: &Backend, a: &ManagedBuffer<f32>, b: &ManagedBuffer<f32>, out: &mut ManagedBuffer<f32>) {
    let problem = Elementwise::new(out.len()).unwrap();
    elementwise::launch(backend, &vec_add::KERNEL, Source::Rust, &problem, a, b, out).unwrap();
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn managed_buffer_is_read_by_the_cpu_after_a_gpu_write() {
    let backend = open();
    let gpu = gpu(&backend);
    let mut rng = rng();
    let n = 1 << 22;
    let (a, b) = (guarded_random_vec(&mut rng, n), guarded_random_vec(&mut rng, n));
    let mut a_managed = ManagedBuffer::new(gpu, n, 0.0f32).unwrap();
    let mut b_managed = ManagedBuffer::new(gpu, n, 0.0f32).unwrap();
    a_managed.write().unwrap().copy_from_slice(&a[..n]);
    b_managed.write().unwrap().copy_from_slice(&b[..n]);
    let mut out = ManagedBuffer::new(gpu, n, f32::NAN).unwrap();
    // No prefetch: pages migrate on demand both ways.
    managed_vec_add(&backend, &a_managed, &b_managed, &mut out);
    let result = out.read().unwrap().to_vec();
    let expected = kernels::reference::vec_add(&a[..n], &b[..n]);
    kernels::reference::check(&result, &expected).unwrap_or_else(|m| panic!("managed vec_add: {m}"));
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn managed_buffer_is_usable_by_the_emulator_once_the_gpu_is_done() {
    let backend = open();
    let gpu = gpu(&backend);
    let n = 4096;
    let a = ManagedBuffer::new(gpu, n, 1.5f32).unwrap();
    let b = ManagedBuffer::new(gpu, n, 2.0f32).unwrap();
    let mut out = ManagedBuffer::new(gpu, n, f32::NAN).unwrap();
    managed_vec_add(&backend, &a, &b, &mut out);
    out.wait().unwrap();
    // The same memory, launched on the CPU emulator: one pointer valid on both.
    let mut doubled = ManagedBuffer::new(gpu, n, f32::NAN).unwrap();
    managed_vec_add(&Backend::Emu, &out, &out, &mut doubled);
    assert!(doubled.read().unwrap().iter().all(|&v| v == 7.0));
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn managed_buffer_prefetches_both_ways() {
    let backend = open();
    let gpu = gpu(&backend);
    let ordinal = gpu.info().ordinal as i32;
    let buffer = ManagedBuffer::new(gpu, 1 << 20, 1.5f32).unwrap();
    buffer.prefetch_to_device(gpu).unwrap();
    buffer.wait().unwrap();
    assert_eq!(buffer.last_prefetch_location_id().unwrap(), ordinal);
    buffer.prefetch_to_host(gpu).unwrap();
    buffer.wait().unwrap();
    assert_eq!(buffer.last_prefetch_location_id().unwrap(), -1, "-1 is the CPU");
    assert!(buffer.as_slice().unwrap().iter().all(|&v| v == 1.5));
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn managed_buffer_advice_takes_effect() {
    let backend = open();
    let gpu = gpu(&backend);
    let ordinal = gpu.info().ordinal as i32;
    let buffer = ManagedBuffer::new(gpu, 1 << 20, 2.0f32).unwrap();
    assert!(!buffer.is_read_mostly().unwrap());
    buffer.advise_read_mostly().unwrap();
    assert!(buffer.is_read_mostly().unwrap());
    buffer.advise_preferred_location(MemoryLocation::Device).unwrap();
    assert_eq!(buffer.preferred_location_id().unwrap(), ordinal);
    buffer.advise_preferred_location(MemoryLocation::Host).unwrap();
    assert_eq!(buffer.preferred_location_id().unwrap(), -1);
    buffer.advise_accessed_by(MemoryLocation::Device).unwrap();
    buffer.advise_accessed_by(MemoryLocation::Host).unwrap();
    // The data is unchanged by advice.
    assert!(buffer.read().unwrap().iter().all(|&v| v == 2.0));
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn managed_buffer_refuses_host_access_while_gpu_work_is_pending() {
    let backend = open();
    let gpu = gpu(&backend);
    let side = 4096;
    let a = ManagedBuffer::new(gpu, side * side, 1.0f32).unwrap();
    let b = ManagedBuffer::new(gpu, side * side, 1.0f32).unwrap();
    let mut c = ManagedBuffer::new(gpu, side * side, f32::NAN).unwrap();
    let problem = Matmul::new(side, side, side).unwrap();
    // Tens of milliseconds of work (page migration included): far longer than the check below.
    let naive = &kernels::matmul::naive::KERNEL;
    matmul::launch(&backend, naive, Source::Rust, &problem, &a, &b, &mut c).unwrap();
    assert!(
        matches!(c.as_slice(), Err(Error::ManagedBusy)),
        "host access while the kernel runs must be refused"
    );
    assert!(
        matches!(
            elementwise::launch(
                &Backend::Emu,
                &vec_add::KERNEL,
                Source::Rust,
                &Elementwise::new(16).unwrap(),
                &a,
                &b,
                &mut c
            ),
            Err(Error::ManagedBusy)
        ),
        "the emulator must not touch memory the GPU is using"
    );
    assert!(c.read().unwrap().iter().all(|&v| v == side as f32));
    assert!(c.as_slice().is_ok());
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn a_buffer_attached_to_an_idle_stream_is_readable_while_another_streams_kernel_runs() {
    let backend = open();
    let gpu = gpu(&backend);
    let idle = kernels_host::open_gpu(Some(gpu.info().ordinal)).unwrap();
    let mut attached = ManagedBuffer::new(gpu, 1024, 5.0f32).unwrap();
    attached.share_with(&idle).unwrap();
    attached.attach_to_stream(&idle).unwrap();
    attached.wait().unwrap();
    // Only the attached stream's work may use it now.
    let refused = elementwise::launch(
        &backend,
        &vec_add::KERNEL,
        Source::Rust,
        &Elementwise::new(1024).unwrap(),
        &attached,
        &attached,
        &mut ManagedBuffer::new(gpu, 1024, 0.0f32).unwrap(),
    );
    assert!(matches!(refused, Err(Error::WrongMemory { .. })), "{refused:?}");
    let side = 4096;
    let a = ManagedBuffer::new(gpu, side * side, 1.0f32).unwrap();
    let b = ManagedBuffer::new(gpu, side * side, 1.0f32).unwrap();
    let mut c = ManagedBuffer::new(gpu, side * side, f32::NAN).unwrap();
    let problem = Matmul::new(side, side, side).unwrap();
    matmul::launch(
        &backend,
        &kernels::matmul::naive::KERNEL,
        Source::Rust,
        &problem,
        &a,
        &b,
        &mut c,
    )
    .unwrap();
    assert!(matches!(c.as_slice(), Err(Error::ManagedBusy)));
    // The kernel still runs (tens of milliseconds), and the attached buffer is the CPU's.
    let values = attached.as_slice().expect("an idle stream's memory is the CPU's");
    assert!(values.iter().all(|&v| v == 5.0));
    assert!(
        c.is_busy(),
        "the check must happen while the other stream's kernel runs"
    );
    assert!(c.read().unwrap().iter().all(|&v| v == side as f32));
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn readers_of_a_shared_managed_buffer_run_at_once_and_a_writer_waits_for_them() {
    let backend = open();
    let gpu = gpu(&backend);
    let other = Backend::Gpu(Box::new(kernels_host::open_gpu(Some(gpu.info().ordinal)).unwrap()));
    let side = 4096;
    let mut shared = ManagedBuffer::new(gpu, side * side, 1.0f32).unwrap();
    shared.share_with(self::gpu(&other)).unwrap();
    let problem = Matmul::new(side, side, side).unwrap();
    let naive = &kernels::matmul::naive::KERNEL;
    let small = Elementwise::new(1024).unwrap();
    let reads_shared_for_long = |c: &mut ManagedBuffer<f32>| {
        matmul::launch(&backend, naive, Source::Rust, &problem, &shared, &shared, c).unwrap();
    };
    // A long read on the first stream, then a short read on the second: the second need not wait.
    let mut c = ManagedBuffer::new(gpu, side * side, f32::NAN).unwrap();
    reads_shared_for_long(&mut c);
    let mut sum = ManagedBuffer::new(self::gpu(&other), 1024, f32::NAN).unwrap();
    elementwise::launch(
        &other,
        &vec_add::KERNEL,
        Source::Rust,
        &small,
        &shared,
        &shared,
        &mut sum,
    )
    .unwrap();
    self::gpu(&other).synchronize().unwrap();
    assert!(
        c.is_busy(),
        "a reader on another stream waited for the first stream's read to finish"
    );
    assert!(sum.read().unwrap().iter().all(|&v| v == 2.0));
    assert!(c.read().unwrap().iter().all(|&v| v == side as f32));
    // A long read, then a write on the second stream: the write must wait for the read.
    reads_shared_for_long(&mut c);
    let twos = ManagedBuffer::new(self::gpu(&other), side * side, 2.0f32).unwrap();
    let whole = Elementwise::new(side * side).unwrap();
    elementwise::launch(
        &other,
        &vec_add::KERNEL,
        Source::Rust,
        &whole,
        &twos,
        &twos,
        &mut shared,
    )
    .unwrap();
    self::gpu(&other).synchronize().unwrap();
    assert!(
        !c.is_busy(),
        "a writer on another stream started before the first stream's read had finished"
    );
    assert!(
        c.read().unwrap().iter().all(|&v| v == side as f32),
        "the read saw the later write"
    );
    assert!(shared.read().unwrap().iter().all(|&v| v == 4.0));
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn managed_allocation_beyond_free_memory_is_refused() {
    let backend = open();
    let gpu = gpu(&backend);
    let (free, _) = gpu.context().mem_get_info().unwrap();
    let too_many_floats = free / 4 + (1 << 28);
    match ManagedBuffer::new(gpu, too_many_floats, 0.0f32) {
        Err(Error::ManagedOversubscription {
            requested,
            free: reported,
        }) => assert!(requested > reported),
        Err(other) => panic!("expected ManagedOversubscription, got {other}"),
        Ok(_) => panic!("an allocation beyond free memory was accepted"),
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn gpu_launches_reject_short_arrays_and_host_memory_before_launching() {
    let backend = open();
    let gpu = gpu(&backend);
    let a = gpu.upload(&[1.0f32; 8]).unwrap();
    let mut c = gpu.upload(&[0.0f32; 8]).unwrap();
    let kernel = &vec_add::KERNEL;
    let nine = Elementwise::new(9).unwrap();
    assert!(matches!(
        elementwise::launch(&backend, kernel, Source::Rust, &nine, &a, &a, &mut c),
        Err(Error::InvalidInput { .. })
    ));
    let three = Matmul::new(3, 3, 3).unwrap();
    let tiled = &kernels::matmul::tiled::KERNEL;
    assert!(matches!(
        matmul::launch(&backend, tiled, Source::Rust, &three, &a, &a, &mut c),
        Err(Error::InvalidInput { .. })
    ));
    let host = vec![1.0f32; 8];
    let eight = Elementwise::new(8).unwrap();
    assert!(matches!(
        elementwise::launch(&backend, kernel, Source::Rust, &eight, &host, &a, &mut c),
        Err(Error::WrongMemory { .. })
    ));
    // The CUDA C twins are not loaded: asking for one is an error, not a wrong launch.
    assert!(matches!(
        elementwise::launch(&backend, kernel, Source::CudaC, &eight, &a, &a, &mut c),
        Err(Error::NotLoaded { .. })
    ));
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn every_registered_kernel_fits_at_least_one_block_per_sm() {
    let backend = open();
    let gpu = gpu(&backend);
    for kernel in kernels::registry::kernels() {
        let occupancy = gpu.occupancy(&kernel).unwrap();
        assert!(occupancy.resident_blocks_per_sm >= 1, "{}: {occupancy:?}", kernel.entry);
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn managed_buffer_zeroed_on_the_gpu_reads_back_zeros_on_the_cpu() {
    let backend = open();
    let gpu = gpu(&backend);
    let buffer = ManagedBuffer::<f32>::zeroed_on_gpu(gpu, (3 << 20) + 5).unwrap();
    assert!(buffer.read().unwrap().iter().all(|&v| v == 0.0));
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn managed_migration_measures_every_transfer_and_checks_each() {
    let backend = open();
    let settings = host::demos::Settings {
        warmup: 1,
        runs: 2,
        rng: 1,
    };
    let rows = host::demos::migration::run(&backend, &settings, 4).unwrap();
    // 2 and 4 MiB: seven transfers each; the faults (two rows) and first touch (three) at 4 MiB.
    assert_eq!(rows.len(), 2 * 7 + 2 + 3);
    for row in &rows {
        assert!(!row.failed(), "{}: {}", row.variant, row.check);
        assert!(row.rate.is_some_and(|r| r > 0.0), "{} has no rate", row.variant);
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn managed_thrashing_runs_every_cure_and_checks_what_the_cpu_reads() {
    let backend = open();
    let settings = host::demos::Settings {
        warmup: 1,
        runs: 2,
        rng: 1,
    };
    let rows = host::demos::thrashing::run(&backend, &settings, 1 << 20).unwrap();
    // Six ways with the CPU reading a few elements and all of them, and the three ways that read
    // chunks as they land (all of them only): the overlapped copies, the same with the rounds
    // overlapped, and the mapped memory the kernel writes in place.
    assert_eq!(rows.len(), 15);
    assert!(
        rows.iter()
            .any(|row| row.variant == "thrashing: pinned mapped memory written by the kernel, read as it lands"),
        "no row of the mapped way"
    );
    for row in &rows {
        assert!(!row.failed(), "{}: {}", row.variant, row.check);
        assert!(
            row.end_to_end_ms.is_some_and(|ms| ms > 0.0),
            "{} has no time",
            row.variant
        );
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn managed_partial_reads_each_fraction_of_pages_exactly_four_ways() {
    let backend = open();
    let settings = host::demos::Settings {
        warmup: 1,
        runs: 2,
        rng: 1,
    };
    // 64 pages of 64 KiB: 0.1 % and 1 % round to one page, then 6 and 64.
    let rows = host::demos::partial::run(&backend, &settings, 64 << 14).unwrap();
    // Four fractions, four ways: on demand, mapped, prefetch all, copy all.
    assert_eq!(rows.len(), 4 * 4);
    for row in &rows {
        assert!(!row.failed(), "{} at {}: {}", row.variant, row.size, row.check);
    }
}
