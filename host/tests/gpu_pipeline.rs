//! `host managed pipeline` on the GPU at a small size, and the chunk views and range prefetches it
//! is built from. Without a GPU these show as ignored; the runner runs them with `--include-ignored`.

mod turn;

use kernels::elementwise::Elementwise;
use kernels::{Source, vec_add};
use kernels_host::families::elementwise;
use ptxkit_runtime::Error;
use ptxkit_runtime::{ManagedBuffer, MemoryLocation};
use turn::open;

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn managed_pipeline_checks_every_way_exactly_and_draws_the_timeline() {
    let backend = open();
    let settings = host::demos::Settings {
        warmup: 1,
        runs: 2,
        rng: 1,
    };
    let path = std::env::temp_dir().join(format!("host-pipeline-{}.svg", std::process::id()));
    // 64 MiB in chunks of 8 MiB: eight chunks, three in flight at once; then chunks of 6 MiB, the
    // last one 4 MiB.
    for (chunk_mib, timeline) in [(8, Some(path.as_path())), (6, None)] {
        let plan = host::demos::pipeline::Plan::new(64 << 20, chunk_mib << 20).unwrap();
        let rows = host::demos::pipeline::run(&backend, &settings, &plan, timeline).unwrap();
        // Two pinned copies (the ceiling), then the five ways (the prefetch pipeline both ways and
        // to the GPU only).
        assert_eq!(rows.len(), 7);
        for row in &rows {
            assert!(!row.failed(), "{} at {}: {}", row.variant, row.size, row.check);
            assert!(row.rate.is_some_and(|r| r > 0.0), "{} has no rate", row.variant);
        }
    }
    let svg = std::fs::read_to_string(&path).expect("--timeline writes the file");
    std::fs::remove_file(&path).unwrap();
    assert!(svg.starts_with("<svg"), "not an SVG: {}", &svg[..svg.len().min(200)]);
    assert!(svg.contains("prefetch pipeline") && svg.contains("copy pipeline"));
    // A bar per move and kernel: 8 chunks × 3 lanes in each of the two pipelines, at least.
    assert!(svg.matches("<rect").count() >= 2 * 3 * 8);
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn a_managed_chunk_launch_writes_only_its_range_and_prefetches_on_other_streams_are_waited_for() {
    let backend = open();
    let gpu = backend.gpu().expect("opened on a GPU");
    let n = 1 << 20;
    let mut buffer = ManagedBuffer::new(gpu, n, 1.5f32).unwrap();
    let input = ManagedBuffer::new(gpu, 2000, 2.0f32).unwrap();
    let side = gpu.context().new_stream().unwrap();
    buffer
        .prefetch_range_on(gpu, &side, 1000..3000, MemoryLocation::Device)
        .unwrap();
    {
        let mut chunk = buffer.chunk_mut(1000..3000).unwrap();
        let problem = Elementwise::new(2000).unwrap();
        elementwise::launch(
            &backend,
            &vec_add::KERNEL,
            Source::Rust,
            &problem,
            &input,
            &input,
            &mut chunk,
        )
        .unwrap();
    }
    // The move back runs on the side stream; the buffer's last use still covers it.
    buffer
        .prefetch_range_on(gpu, &side, 0..n, MemoryLocation::Host)
        .unwrap();
    let values = buffer.read().unwrap();
    assert!(values[..1000].iter().all(|&v| v == 1.5));
    assert!(values[1000..3000].iter().all(|&v| v == 4.0));
    assert!(values[3000..].iter().all(|&v| v == 1.5));
    assert!(side.synchronize().is_ok());
    assert!(matches!(
        buffer.chunk_mut(n - 1..n + 1),
        Err(Error::InvalidInput { .. })
    ));
    assert!(matches!(
        buffer.prefetch_range_on(gpu, &side, 5..5, MemoryLocation::Host),
        Err(Error::InvalidInput { .. })
    ));
}
