//! Launches on someone else's memory and stream (what the PyTorch extension does): a `Gpu` on an
//! external stream runs the registry's kernels on `ExternalArray`s, and refuses the project's own
//! buffers; `ExternalArray` refuses memory the driver does not vouch for; and the extension's path
//! gives the host path's results bit for bit. Without a GPU these show as ignored; the runner runs
//! them with `--include-ignored`.

use cudarc::driver::{CudaSlice, DevicePtr};
use kernels::elementwise::Elementwise;
use kernels::testing::{random_vec, rng};
use kernels::{Source, vec_add};
use kernels_host::families::elementwise;
use ptxkit_runtime::{Backend, Error};
use ptxkit_runtime::{ExternalArray, ExternalStream, Gpu, ManagedBuffer};

fn open() -> Gpu {
    kernels_host::open_gpu(None).unwrap_or_else(|e| panic!("these tests need a GPU: {e}"))
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
        matches!(refused(base + 4, 16), Some(Error::InvalidInput { .. })),
        "misaligned"
    );
    let host = vec![0.0f32; 4096];
    assert!(
        matches!(
            refused(host.as_ptr() as u64 & !255, 16),
            Some(Error::WrongMemory { .. })
        ),
        "host memory"
    );
    assert!(
        matches!(refused(base, 4096 + (1 << 24)), Some(Error::WrongMemory { .. })),
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
    assert!(matches!(slices, Err(Error::WrongMemory { .. })), "{slices:?}");
    let mixed = elementwise::launch(
        &backend,
        &vec_add::KERNEL,
        Source::Rust,
        &problem,
        &managed,
        &b,
        &mut out,
    );
    assert!(matches!(mixed, Err(Error::WrongMemory { .. })), "{mixed:?}");
}

/// Runs `launch` twice on the same inputs: the host's way (`Buffer`s on the GPU's own stream) and
/// the extension's (`ExternalArray`s over memory allocated elsewhere, on a side stream), and
/// returns both outputs. `launch` is written once and expanded for each kind of array.
macro_rules! both_paths {
    ($gpu:expr, [$($input:expr),+], $out_len:expr, |$backend:ident, [$($x:ident),+], $out:ident| $launch:expr) => {{
        let gpu: &Gpu = $gpu;
        let host = {
            let $backend = &Backend::Gpu(Box::new(open()));
            $(let $x = &ptxkit_runtime::array::Buffer::upload($backend, &$input).unwrap();)+
            let $out = &mut ptxkit_runtime::array::Buffer::upload($backend, &vec![f32::NAN; $out_len]).unwrap();
            $launch.unwrap();
            $out.read($backend).unwrap()
        };
        let side = gpu.context().new_stream().unwrap();
        // SAFETY: a live stream of this GPU's primary context, alive until the end of the block.
        let stream = unsafe { ExternalStream::from_raw(side.cu_stream() as usize) };
        let $backend = &Backend::Gpu(Box::new(gpu.on_external_stream(stream)));
        let slices = [$(gpu.upload(&$input).unwrap()),+];
        let out_slice = gpu.upload(&vec![f32::NAN; $out_len]).unwrap();
        gpu.synchronize().unwrap();
        let external = |slice: &CudaSlice<f32>| {
            // SAFETY: the slices outlive the launch, which the block waits for on the side stream.
            unsafe { ExternalArray::<f32>::new(gpu, address(slice), slice.len()) }.unwrap()
        };
        let mut arrays = slices.iter().map(external);
        $(let $x = &arrays.next().unwrap();)+
        let $out = &mut external(&out_slice);
        $launch.unwrap();
        side.synchronize().unwrap();
        (host, gpu.download(&out_slice).unwrap())
    }};
}

fn assert_same_bits(what: &str, host: &[f32], extension: &[f32]) {
    assert_eq!(host.len(), extension.len(), "{what}: lengths");
    if let Some(i) = (0..host.len()).find(|&i| host[i].to_bits() != extension[i].to_bits()) {
        panic!(
            "{what}: element {i} is {} by the host's path, {} by the extension's",
            host[i], extension[i]
        );
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn the_extensions_path_gives_the_host_paths_bits() {
    use kernels_host::families::{matmul_tc, softmax, transpose};
    let gpu = &open();
    let mut inputs = rng();
    let (rows, cols) = (1001, 777);
    let x = random_vec(&mut inputs, rows * cols);
    let problem = kernels::transpose::Transpose::new(rows, cols).unwrap();
    for kernel in kernels::transpose::FAMILY.kernels {
        let (host, extension) = both_paths!(gpu, [x], rows * cols, |backend, [input], out| {
            transpose::launch(backend, kernel, Source::Rust, &problem, input, out)
        });
        assert_same_bits(kernel.entry(), &host, &extension);
    }
    let problem = kernels::softmax::Softmax::new(rows, cols).unwrap();
    for kernel in kernels::softmax::FAMILY.kernels {
        let (host, extension) = both_paths!(gpu, [x], rows * cols, |backend, [input], out| {
            softmax::launch(backend, kernel, Source::Rust, &problem, input, out)
        });
        assert_same_bits(kernel.entry(), &host, &extension);
    }
    // TF32 on the tensor cores, the wgmma rung by TMA where the GPU runs sm_90a.
    let (m, n, k) = (300, 260, 200);
    let (a, b) = (random_vec(&mut inputs, m * k), random_vec(&mut inputs, k * n));
    // Both paths launch the persistent grid the device's occupancy gives.
    let problem = kernels::matmul_tc::MatmulTc::new(m, n, k).unwrap();
    let sm90a = Backend::Gpu(Box::new(open())).runs_sm90a();
    for kernel in kernels::matmul_tc::FAMILY.kernels {
        if kernel.code.sm90a_only() && !sm90a {
            eprintln!(
                "{} not compared: it runs on compute capability 9.0 only",
                kernel.entry()
            );
            continue;
        }
        let (host, extension) = both_paths!(gpu, [a, b], m * n, |backend, [left, right], out| {
            matmul_tc::launch(backend, kernel, Source::Rust, &problem, left, right, out)
        });
        assert_same_bits(kernel.entry(), &host, &extension);
    }
}
