//! How fast the emulator runs: a barrier per thread, and the real kernels at sizes the demos use.
//! `cargo run --release -p kernels --example emulator_speed [barriers] [elements] [matrix side]`
//! (defaults 1000, 2^20, 512); the perf log keeps the figures (before and after the coroutine
//! emulator, same machine).

use kernels::elementwise::Elementwise;
use kernels::matmul::Matmul;
use ptxkit::device::{GlobalSlice, GlobalSliceMut, sync_threads, thread_idx};
use ptxkit::{Kernel, LaunchShape, Problem, kernel};
use std::time::Instant;

kernel! {
    /// Meets at `barriers` barriers and does nothing else.
    unsafe fn barriers_only(out: *mut u32, barriers: u32) {
        for _ in 0..barriers {
            sync_threads();
        }
        // SAFETY: one word per thread.
        unsafe { *out.add(thread_idx().x as usize) = barriers };
    }
}

fn time(what: &str, run: impl FnOnce()) -> f64 {
    let start = Instant::now();
    run();
    let seconds = start.elapsed().as_secs_f64();
    println!("{what}: {seconds:.3} s");
    seconds
}

fn run<P: Problem>(kernel: &Kernel<P>, problem: &P, args: P::Args) {
    let shape: LaunchShape = kernel.launch_shape(problem, ptxkit::Occupancy::EMULATOR);
    // SAFETY: the callers pass arrays of the problem's lengths.
    unsafe { kernel.code.emulate(&shape, args) }.unwrap_or_else(|e| panic!("{e}"));
}

fn main() {
    let arg = |i: usize, default: usize| std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    let (barriers, n, side) = (arg(1, 1000) as u32, arg(2, 1 << 20), arg(3, 512));
    let threads = 1024u32;
    let mut out = vec![0u32; threads as usize];
    let shape = LaunchShape {
        grid: ptxkit::Dim3::x(1),
        block: ptxkit::Dim3::x(threads),
        shared_bytes: 0,
    };
    let seconds = time(&format!("{barriers} barriers × {threads} threads"), || {
        // SAFETY: one word per thread.
        unsafe { barriers_only.emulate(&shape, (out.as_mut_ptr(), barriers)) }.unwrap();
    });
    println!(
        "  {:.1} ns per thread per barrier",
        seconds * 1e9 / (barriers as f64 * threads as f64)
    );

    let (a, b, mut c) = (vec![1.0f32; n], vec![2.0f32; n], vec![0.0f32; n]);
    let problem = Elementwise::new(n).unwrap();
    time(&format!("vec_add, {n} elements"), || {
        run(
            &kernels::vec_add::KERNEL,
            &problem,
            (
                GlobalSlice::new(&a),
                GlobalSlice::new(&b),
                GlobalSliceMut::new(&mut c),
                problem.n,
            ),
        )
    });
    time(&format!("shared_mem_add, {n} elements"), || {
        run(
            &kernels::shared_mem_add::KERNEL,
            &problem,
            (
                GlobalSlice::new(&a),
                GlobalSlice::new(&b),
                GlobalSliceMut::new(&mut c),
                problem.n,
            ),
        )
    });
    let (a, b, mut c) = (
        vec![1.0f32; side * side],
        vec![1.0f32; side * side],
        vec![0.0f32; side * side],
    );
    let problem = Matmul::new(side, side, side).unwrap();
    for kernel in kernels::matmul::FAMILY.kernels {
        time(&format!("{}, {side}³", kernel.entry()), || {
            run(
                kernel,
                &problem,
                (
                    a.as_ptr(),
                    b.as_ptr(),
                    c.as_mut_ptr(),
                    problem.m,
                    problem.n,
                    problem.k,
                    std::ptr::null_mut(),
                ),
            )
        });
    }
}
