//! The GPU suite: every kernel on the GPU against the f64 CPU reference, over the emulator tests'
//! edge shapes plus large ones, and `ManagedBuffer` behaviour. Without a GPU these show as ignored;
//! the runner runs them with `--include-ignored`.

use host::HostError;
use host::demos::matmul::Oracle;
use host::gpu::{self, Gpu, ManagedBuffer, MatmulVariant, MemoryLocation};
use kernels::testing::{
    ELEMENTWISE_EDGE_LENGTHS, GUARD, MATMUL_EDGE_SHAPES, assert_matches, guarded_random_vec, poisoned, rng,
};

fn open() -> Gpu {
    Gpu::open(None).unwrap_or_else(|e| panic!("the GPU suite needs a GPU: {e}"))
}

/// Large element-wise length: 2^26 floats, 256 MiB per buffer.
const LARGE_N: usize = 1 << 26;

type Elementwise = fn(
    &Gpu,
    &cudarc::driver::CudaSlice<f32>,
    &cudarc::driver::CudaSlice<f32>,
    &mut cudarc::driver::CudaSlice<f32>,
    usize,
) -> host::Result<()>;

fn check_elementwise(
    name: &str,
    launch: Elementwise,
    reference: impl Fn(&[f32], &[f32]) -> kernels::reference::Expected,
) {
    let gpu = open();
    let mut rng = rng();
    for &n in ELEMENTWISE_EDGE_LENGTHS.iter().chain(&[LARGE_N]) {
        let (a, b) = (guarded_random_vec(&mut rng, n), guarded_random_vec(&mut rng, n));
        let (a_dev, b_dev) = (gpu.upload(&a).unwrap(), gpu.upload(&b).unwrap());
        let mut out_dev = gpu.upload(&poisoned(n + GUARD)).unwrap();
        launch(&gpu, &a_dev, &b_dev, &mut out_dev, n).unwrap_or_else(|e| panic!("{name}, n = {n}: {e}"));
        let out = gpu.download(&out_dev).unwrap();
        assert_matches(
            &format!("{name} on the GPU, n = {n}"),
            &out,
            &reference(&a[..n], &b[..n]),
        );
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn gpu_vec_add_matches_reference_on_edge_and_large_lengths() {
    check_elementwise("vec_add", gpu::vec_add, kernels::reference::vec_add);
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn gpu_shared_mem_add_matches_reference_on_edge_and_large_lengths() {
    let block = kernels::shared_mem_add::BLOCK as usize;
    check_elementwise("shared_mem_add", gpu::shared_mem_add, |a, b| {
        kernels::reference::shared_mem_add(a, b, block)
    });
}

fn check_matmul(variant: MatmulVariant) {
    let gpu = open();
    let mut rng = rng();
    let name = variant.info().entry;
    for &(m, n, k) in MATMUL_EDGE_SHAPES
        .iter()
        .chain(&[(4096, 4096, 4096), (4096, 1000, 333)])
    {
        let (a, b) = (guarded_random_vec(&mut rng, m * k), guarded_random_vec(&mut rng, k * n));
        let (a_dev, b_dev) = (gpu.upload(&a).unwrap(), gpu.upload(&b).unwrap());
        let mut c_dev = gpu.upload(&poisoned(m * n + GUARD)).unwrap();
        gpu::matmul(&gpu, variant, &a_dev, &b_dev, &mut c_dev, m, n, k)
            .unwrap_or_else(|e| panic!("{name} {m}x{n}x{k}: {e}"));
        let c = gpu.download(&c_dev).unwrap();
        assert!(
            c[m * n..].iter().all(|v| v.is_nan()),
            "{name} {m}x{n}x{k} wrote past the end of C"
        );
        let oracle = Oracle::new(&a[..m * k], &b[..k * n], (m, n, k), kernels::testing::seed());
        if let Err(why) = oracle.check(&c[..m * n]) {
            panic!(
                "{name} on the GPU, {m}x{n}x{k}: {why} (seed {})",
                kernels::testing::seed()
            );
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn gpu_matmul_naive_matches_reference_on_edge_and_large_shapes() {
    check_matmul(MatmulVariant::Naive);
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn gpu_matmul_tiled_matches_reference_on_edge_and_large_shapes() {
    check_matmul(MatmulVariant::Tiled);
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn gpu_matmul_tiled_padded_matches_reference_on_edge_and_large_shapes() {
    check_matmul(MatmulVariant::Padded);
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn gpu_warp_probe_gives_the_same_lanes_and_shuffles_as_the_emulator() {
    let gpu = open();
    let blocks = 5;
    let threads = blocks * kernels::probe::WARP_PROBE_BLOCK;
    let mut out = gpu
        .upload(&vec![u32::MAX; (threads * kernels::probe::WARP_PROBE_WORDS) as usize])
        .unwrap();
    gpu::warp_probe(&gpu, &mut out, blocks).unwrap();
    assert_eq!(gpu.download(&out).unwrap(), kernels::reference::warp_probe(threads));
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn managed_buffer_is_read_by_the_cpu_after_a_gpu_write() {
    let gpu = open();
    let mut rng = rng();
    let n = 1 << 22;
    let (a, b) = (guarded_random_vec(&mut rng, n), guarded_random_vec(&mut rng, n));
    let mut a_managed = ManagedBuffer::new(&gpu, n, 0.0f32).unwrap();
    let mut b_managed = ManagedBuffer::new(&gpu, n, 0.0f32).unwrap();
    a_managed.write().unwrap().copy_from_slice(&a[..n]);
    b_managed.write().unwrap().copy_from_slice(&b[..n]);
    let mut out = ManagedBuffer::new(&gpu, n, f32::NAN).unwrap();
    // No prefetch: pages migrate on demand both ways.
    gpu::vec_add(&gpu, &a_managed, &b_managed, &mut out, n).unwrap();
    let result = out.read().unwrap().to_vec();
    let expected = kernels::reference::vec_add(&a[..n], &b[..n]);
    kernels::reference::check(&result, &expected).unwrap_or_else(|m| panic!("managed vec_add: {m}"));
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn managed_buffer_prefetches_both_ways() {
    let gpu = open();
    let ordinal = gpu.info().ordinal as i32;
    let buffer = ManagedBuffer::new(&gpu, 1 << 20, 1.5f32).unwrap();
    buffer.prefetch_to_device(&gpu).unwrap();
    buffer.wait().unwrap();
    assert_eq!(buffer.last_prefetch_location_id().unwrap(), ordinal);
    buffer.prefetch_to_host(&gpu).unwrap();
    buffer.wait().unwrap();
    assert_eq!(buffer.last_prefetch_location_id().unwrap(), -1, "-1 is the CPU");
    assert!(buffer.as_slice().unwrap().iter().all(|&v| v == 1.5));
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn managed_buffer_advice_takes_effect() {
    let gpu = open();
    let ordinal = gpu.info().ordinal as i32;
    let buffer = ManagedBuffer::new(&gpu, 1 << 20, 2.0f32).unwrap();
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
    let gpu = open();
    let side = 4096;
    let a = ManagedBuffer::new(&gpu, side * side, 1.0f32).unwrap();
    let b = ManagedBuffer::new(&gpu, side * side, 1.0f32).unwrap();
    let mut c = ManagedBuffer::new(&gpu, side * side, f32::NAN).unwrap();
    // Tens of milliseconds of work (page migration included): far longer than the check below.
    gpu::matmul(&gpu, MatmulVariant::Naive, &a, &b, &mut c, side, side, side).unwrap();
    assert!(
        matches!(c.as_slice(), Err(HostError::ManagedBusy)),
        "host access while the kernel runs must be refused"
    );
    assert!(c.read().unwrap().iter().all(|&v| v == side as f32));
    assert!(c.as_slice().is_ok());
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn managed_allocation_beyond_free_memory_is_refused() {
    let gpu = open();
    let (free, _) = gpu.context().mem_get_info().unwrap();
    let too_many_floats = free / 4 + (1 << 28);
    match ManagedBuffer::new(&gpu, too_many_floats, 0.0f32) {
        Err(HostError::ManagedOversubscription {
            requested,
            free: reported,
        }) => assert!(requested > reported),
        Err(other) => panic!("expected ManagedOversubscription, got {other}"),
        Ok(_) => panic!("an allocation beyond free memory was accepted"),
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn gpu_launches_reject_mismatched_shapes_before_launching() {
    let gpu = open();
    let a = gpu.upload(&[1.0f32; 8]).unwrap();
    let mut c = gpu.upload(&[0.0f32; 8]).unwrap();
    assert!(matches!(
        gpu::vec_add(&gpu, &a, &a, &mut c, 9),
        Err(HostError::InvalidInput { .. })
    ));
    assert!(matches!(
        gpu::matmul(&gpu, MatmulVariant::Tiled, &a, &a, &mut c, 3, 3, 3),
        Err(HostError::InvalidInput { .. })
    ));
    assert!(matches!(
        gpu::vec_add(&gpu, &a, &a, &mut c, 0),
        Err(HostError::InvalidInput { .. })
    ));
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn every_kernel_fits_at_least_one_block_per_sm() {
    let gpu = open();
    for kernel in kernels::KERNELS {
        let occupancy = gpu.occupancy(kernel).unwrap();
        assert!(occupancy.resident_blocks_per_sm >= 1, "{}: {occupancy:?}", kernel.entry);
    }
}
