//! The toolkit from a kernel crate of one's own: on the emulator here, on the GPU where there is
//! one (the runner runs the ignored tests). Each test names the promise it checks.

use cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
use kernels_host::ptx::Kernels;
use ptxkit::{Dim3, KernelFn, LaunchShape, Params};
use ptxkit_runtime::{Backend, Error, Gpu, KernelCrate};
use toolkit_check::ToolkitCheckKernels;
use toolkit_check_kernels::{Affine, BLOCK, affine, bounded, fill_f32, fill_u64, hello, past_the_end, vec_add};

fn shape(n: u32) -> LaunchShape {
    LaunchShape {
        grid: Dim3::x(n.div_ceil(BLOCK)),
        block: Dim3::x(BLOCK),
        shared_bytes: 0,
    }
}

fn inputs(n: usize) -> (Vec<f32>, Vec<f32>) {
    let a = (0..n).map(|i| (i % 97) as f32 * 0.25 - 12.0).collect();
    let b = (0..n).map(|i| (i % 31) as f32 * 0.5 + 1.0).collect();
    (a, b)
}

/// `code` over `n` elements on `backend`, with `args` built from the arrays' addresses there.
///
/// # Safety
/// The arrays hold what the kernel touches for `n`.
unsafe fn run<A: Params>(backend: &Backend, code: &KernelFn<A>, n: u32, args: A) -> ptxkit_runtime::Result<()> {
    // SAFETY: forwarded.
    unsafe { backend.launch_fn(None, code, &shape(n), args, &[]) }?;
    if let Backend::Gpu(gpu) = backend {
        gpu.synchronize()?;
    }
    Ok(())
}

fn gpu_with(load_mine: bool) -> Gpu {
    let mut gpu = Gpu::open(None).expect("these tests need a GPU");
    gpu.load::<Kernels>().unwrap();
    if load_mine {
        gpu.load::<ToolkitCheckKernels>().unwrap();
    }
    gpu
}

#[test]
fn the_crates_ptx_has_its_launch_bounds_line_information_and_every_instance() {
    for ptx in ToolkitCheckKernels::PTX {
        let text = ptx.text;
        for entry in [
            "vec_add",
            "affine",
            "bounded",
            "fill_f32",
            "fill_u64",
            "hello",
            "past_the_end",
        ] {
            assert!(text.contains(&format!(".entry {entry}(")), "{} lacks {entry}", ptx.arch);
        }
        let entry = &text[text.find(".entry bounded(").unwrap()..];
        let body = &entry[..entry.find('{').unwrap()];
        assert!(
            body.contains(".maxntid 128, 1, 1") && body.contains(".minnctapersm 4"),
            "{body}"
        );
        assert!(!text.contains("__ptxkit_launch_bounds"));
        assert!(
            text.contains("\t.loc\t") && !text.contains(".section"),
            "no line information in {}",
            ptx.arch
        );
        assert!(text.contains(".extern .func") && text.contains("vprintf"));
    }
}

#[test]
fn a_struct_passes_by_value_and_generic_instances_run_on_the_emulator() {
    let n = 1000u32;
    let (x, _) = inputs(n as usize);
    let mut out = vec![f32::NAN; n as usize];
    let map = Affine {
        scale: 1.5,
        n,
        offset: -0.25,
        input: x.as_ptr(),
    };
    // SAFETY: x and out hold n elements.
    unsafe { run(&Backend::Emu, &affine, n, (out.as_mut_ptr(), map)) }.unwrap();
    for (got, x) in out.iter().zip(&x) {
        assert_eq!(*got, (*x as f64 * 1.5 - 0.25) as f32);
    }
    let mut halves = vec![f32::NAN; n as usize];
    let mut wide = vec![0u64; n as usize];
    // SAFETY: each output holds n elements.
    unsafe { run(&Backend::Emu, &fill_f32, n, (halves.as_mut_ptr(), n)) }.unwrap();
    unsafe { run(&Backend::Emu, &fill_u64, n, (wide.as_mut_ptr(), n)) }.unwrap();
    assert!(halves.iter().enumerate().all(|(i, &v)| v == i as f32 * 0.5 + 3.0));
    assert!(wide.iter().enumerate().all(|(i, &v)| v == (i as u64) << 33));
    assert_eq!(fill_u64.bounds().blocks(), Some(2));
}

#[test]
fn a_launch_with_another_block_than_the_launch_bounds_is_refused() {
    let mut out = vec![0u32; 64];
    let wrong = LaunchShape {
        block: Dim3::x(64),
        ..shape(64)
    };
    // SAFETY: out holds 64 elements.
    let result = unsafe { Backend::Emu.launch_fn(None, &bounded, &wrong, (out.as_mut_ptr(), 64), &[]) };
    let Err(Error::InvalidInput { what, reason }) = result else {
        panic!("launched past its bounds: {result:?}");
    };
    assert_eq!(what, "bounded");
    assert!(reason.contains("(128, 1, 1)"), "{reason}");
}

#[test]
fn printf_on_the_emulator_prefixes_the_block_and_thread() {
    let (result, lines) = ptxkit::emu::capture_printed(|| unsafe { run(&Backend::Emu, &hello, 2 * BLOCK, (7,)) });
    result.unwrap();
    let mut lines = lines;
    lines.sort();
    assert_eq!(
        lines,
        [
            "[block (0, 0, 0) thread (0, 0, 0)] hello from block 0 of 2, n = 7, from Rust",
            "[block (1, 0, 0) thread (0, 0, 0)] hello from block 1 of 2, n = 7, from Rust",
        ]
    );
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn a_kernel_named_like_a_library_kernel_launches_from_its_own_crate() {
    let gpu = gpu_with(true);
    let n = 100_003;
    let (a, b) = inputs(n);
    let (da, db) = (gpu.upload(&a).unwrap(), gpu.upload(&b).unwrap());
    let mine = gpu.upload(&vec![f32::NAN; n]).unwrap();
    let mut library = gpu.upload(&vec![f32::NAN; n]).unwrap();
    let backend = Backend::Gpu(Box::new(gpu));
    let problem = kernels::elementwise::Elementwise::new(n).unwrap();
    kernels_host::families::elementwise::launch(
        &backend,
        &kernels::vec_add::KERNEL,
        kernels::Source::Rust,
        &problem,
        &da,
        &db,
        &mut library,
    )
    .unwrap();
    let address = |s: &cudarc::driver::CudaSlice<f32>| ptxkit_runtime::Array::address(s, &backend).unwrap();
    // SAFETY: each array holds n elements on this GPU.
    unsafe {
        run(
            &backend,
            &vec_add,
            n as u32,
            (
                address(&da) as *const f32,
                address(&db) as *const f32,
                address(&mine) as *mut f32,
                n as u32,
            ),
        )
    }
    .unwrap();
    let gpu = backend.gpu().unwrap();
    let (mine, library) = (gpu.download(&mine).unwrap(), gpu.download(&library).unwrap());
    for i in 0..n {
        assert_eq!(mine[i], a[i] - b[i], "the check's vec_add at {i}");
        assert_eq!(library[i], a[i] + b[i], "the library's vec_add at {i}");
    }
    // By name alone, the entry is ambiguous, and the runtime says so.
    let Err(Error::Ambiguous { modules, .. }) = gpu.function_by_name("vec_add") else {
        panic!("two modules define vec_add and the lookup by name chose one");
    };
    assert!(
        modules.contains("kernels") && modules.contains("toolkit_check_kernels"),
        "{modules}"
    );
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn a_kernel_of_a_crate_not_loaded_is_refused_naming_the_crate() {
    let backend = Backend::Gpu(Box::new(gpu_with(false)));
    let mut out = backend.gpu().unwrap().zeros::<u32>(BLOCK as usize).unwrap();
    let out = ptxkit_runtime::Array::address_mut(&mut out, &backend).unwrap() as *mut u32;
    // SAFETY: out holds BLOCK elements.
    let result = unsafe { run(&backend, &bounded, BLOCK, (out, BLOCK)) };
    let Err(error @ Error::NotLoaded { .. }) = result else {
        panic!("launched a kernel whose crate is not loaded: {result:?}");
    };
    let text = error.to_string();
    assert!(
        text.contains("toolkit_check_kernels") && text.contains("Gpu::load"),
        "{text}"
    );
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn structs_by_value_generic_instances_and_printf_run_on_the_gpu() {
    let gpu = gpu_with(true);
    let n = 4099u32;
    let (x, _) = inputs(n as usize);
    let dx = gpu.upload(&x).unwrap();
    let mut out = gpu.upload(&vec![f32::NAN; n as usize]).unwrap();
    let mut halves = gpu.upload(&vec![f32::NAN; n as usize]).unwrap();
    let mut wide = gpu.zeros::<u64>(n as usize).unwrap();
    let backend = Backend::Gpu(Box::new(gpu));
    let input = ptxkit_runtime::Array::address(&dx, &backend).unwrap() as *const f32;
    let map = Affine {
        scale: 1.5,
        n,
        offset: -0.25,
        input,
    };
    // SAFETY: every array holds n elements on this GPU.
    unsafe {
        let out = ptxkit_runtime::Array::address_mut(&mut out, &backend).unwrap() as *mut f32;
        run(&backend, &affine, n, (out, map)).unwrap();
        let halves = ptxkit_runtime::Array::address_mut(&mut halves, &backend).unwrap() as *mut f32;
        run(&backend, &fill_f32, n, (halves, n)).unwrap();
        let wide = ptxkit_runtime::Array::address_mut(&mut wide, &backend).unwrap() as *mut u64;
        run(&backend, &fill_u64, n, (wide, n)).unwrap();
        run(&backend, &hello, 3 * BLOCK, (n,)).unwrap();
    }
    let gpu = backend.gpu().unwrap();
    let out = gpu.download(&out).unwrap();
    for (i, (got, x)) in out.iter().zip(&x).enumerate() {
        assert_eq!(*got, (*x as f64 * 1.5 - 0.25) as f32, "affine at {i}");
    }
    assert!(
        gpu.download(&halves)
            .unwrap()
            .iter()
            .enumerate()
            .all(|(i, &v)| v == i as f32 * 0.5 + 3.0)
    );
    assert!(
        gpu.download(&wide)
            .unwrap()
            .iter()
            .enumerate()
            .all(|(i, &v)| v == (i as u64) << 33)
    );
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn the_crates_launch_bounds_reach_ptxas() {
    let gpu = gpu_with(true);
    let max_threads = |entry: &str| {
        gpu.function(ToolkitCheckKernels::NAME, entry, None)
            .unwrap()
            .attribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
            .unwrap()
    };
    assert_eq!(max_threads("bounded"), BLOCK as i32);
    assert!(max_threads("affine") > BLOCK as i32, "affine has no bounds");
}

/// Set in the child process the sanitizer test starts: only there does the next test write past
/// the end.
const SANITIZER_PROBE: &str = "PTXKIT_SANITIZER_PROBE";

#[test]
#[ignore = "needs an NVIDIA GPU and compute-sanitizer; the runner runs it with --include-ignored"]
fn compute_sanitizer_names_the_rust_line_of_a_write_past_the_end() {
    let own = std::env::current_exe().unwrap();
    let output = std::process::Command::new("compute-sanitizer")
        .args(["--tool", "memcheck"])
        .arg(&own)
        .args([
            "--include-ignored",
            "--exact",
            "writes_past_the_end_under_the_sanitizer",
            "--nocapture",
        ])
        .env(SANITIZER_PROBE, "1")
        .output()
        .expect("compute-sanitizer on PATH (/usr/local/cuda/bin)");
    let report = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    let source = include_str!("../kernels/src/lib.rs");
    let line = source
        .lines()
        .position(|l| l.contains("*out.add(n as usize) = 1"))
        .map(|i| i + 1)
        .unwrap();
    assert!(report.contains("Invalid __global__ write"), "{report}");
    assert!(
        report.contains(&format!("lib.rs:{line}")),
        "the sanitizer did not name lib.rs:{line}:\n{report}"
    );
}

#[test]
#[ignore = "run by compute_sanitizer_names_the_rust_line_of_a_write_past_the_end"]
fn writes_past_the_end_under_the_sanitizer() {
    if std::env::var_os(SANITIZER_PROBE).is_none() {
        return;
    }
    let backend = Backend::Gpu(Box::new(gpu_with(true)));
    let mut out = backend.gpu().unwrap().zeros::<u32>(64).unwrap();
    let out = ptxkit_runtime::Array::address_mut(&mut out, &backend).unwrap() as *mut u32;
    // SAFETY: none: the kernel writes one past the end, for the sanitizer to find.
    let _ = unsafe { run(&backend, &past_the_end, 64, (out, 64)) };
}
