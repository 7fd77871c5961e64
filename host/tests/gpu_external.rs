//! Launches on someone else's memory and stream (what the PyTorch extension does): a `Gpu` on an
//! external stream runs the registry's kernels on `ExternalArray`s, and refuses the project's own
//! buffers; `ExternalArray` refuses memory the driver does not vouch for. Without a GPU these show
//! as ignored; the runner runs them with `--include-ignored`.

use cudarc::driver::{CudaSlice, DevicePtr};
use host::families::elementwise;
use host::gpu::{ExternalArray, ExternalStream, Gpu, ManagedBuffer};
use host::{Backend, HostError};
use kernels::elementwise::Elementwise;
use kernels::testing::{random_vec, rng};
use kernels::{Source, vec_add};

fn open() -> Gpu {
    Gpu::open(None).unwrap_or_else(|e| panic!("these tests need a GPU: {e}"))
}

fn address(slice: &CudaSlice<f32>) -> u64 {
    slice.device_ptr(slice.stream()).0
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn kernels_run_on_an_external_stream_over_external_memory() {
    let gpu = open();
    let n = 1_000_003;
    let mut stream_of_inputs = rng();
    let (a, b) = (
        random_vec(&mut stream_of_inputs, n),
        random_vec(&mut stream_of_inputs, n),
    );
    let (a_dev, b_dev) = (gpu.upload(&a).unwrap(), gpu.upload(&b).unwrap());
    let out_dev = gpu.upload(&vec![f32::NAN; n]).unwrap();
    gpu.synchronize().unwrap();
    let side = gpu.context().new_stream().unwrap();
    // SAFETY: a live stream of this GPU's primary context, alive until the end of the test.
    let stream = unsafe { ExternalStream::from_raw(side.cu_stream() as usize) };
    let backend = Backend::Gpu(Box::new(gpu.on_external_stream(stream)));
    let external = |slice: &CudaSlice<f32>| {
        // SAFETY: the slices outlive the launch, which the test waits for on the side stream.
        unsafe { ExternalArray::<f32>::new(backend.gpu().unwrap(), address(slice), n) }.unwrap()
    };
    let (ea, eb, mut eout) = (external(&a_dev), external(&b_dev), external(&out_dev));
    let problem = Elementwise::new(n).unwrap();
    elementwise::launch(&backend, &vec_add::KERNEL, Source::Rust, &problem, &ea, &eb, &mut eout).unwrap();
    side.synchronize().unwrap();
    let got = gpu.download(&out_dev).unwrap();
    for i in 0..n {
        assert_eq!(got[i], a[i] + b[i], "element {i}");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn external_arrays_are_checked_against_the_drivers_records() {
    let gpu = open();
    let slice = gpu.upload(&vec![1.0f32; 4096]).unwrap();
    let base = address(&slice);
    // SAFETY: each is refused before it could be used.
    let refused = |address: u64, len: usize| unsafe { ExternalArray::<f32>::new(&gpu, address, len) }.err();
    assert!(
        matches!(refused(base + 4, 16), Some(HostError::InvalidInput { .. })),
        "misaligned"
    );
    let host = vec![0.0f32; 4096];
    assert!(
        matches!(
            refused(host.as_ptr() as u64 & !255, 16),
            Some(HostError::WrongMemory { .. })
        ),
        "host memory"
    );
    assert!(
        matches!(refused(base, 4096 + (1 << 24)), Some(HostError::WrongMemory { .. })),
        "past the end"
    );
    // SAFETY: the slice outlives the array.
    assert!(unsafe { ExternalArray::<f32>::new(&gpu, base, 4096) }.is_ok());
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn a_gpu_on_an_external_stream_refuses_the_projects_own_buffers() {
    let gpu = open();
    let n = 1024;
    let problem = Elementwise::new(n).unwrap();
    let (a, b) = (
        gpu.upload(&vec![1.0f32; n]).unwrap(),
        gpu.upload(&vec![2.0f32; n]).unwrap(),
    );
    let mut out: CudaSlice<f32> = gpu.zeros(n).unwrap();
    let managed = ManagedBuffer::new(&gpu, n, 1.0f32).unwrap();
    // SAFETY: the legacy default stream.
    let backend = Backend::Gpu(Box::new(gpu.on_external_stream(unsafe { ExternalStream::from_raw(0) })));
    let slices = elementwise::launch(&backend, &vec_add::KERNEL, Source::Rust, &problem, &a, &b, &mut out);
    assert!(matches!(slices, Err(HostError::WrongMemory { .. })), "{slices:?}");
    let mixed = elementwise::launch(
        &backend,
        &vec_add::KERNEL,
        Source::Rust,
        &problem,
        &managed,
        &b,
        &mut out,
    );
    assert!(matches!(mixed, Err(HostError::WrongMemory { .. })), "{mixed:?}");
}
