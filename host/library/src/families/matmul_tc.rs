//! The TF32 matmul ladder's safe launch: the f32 ladder's arrays, plus the tensor maps of A and B
//! that the `wgmma` rung's TMA producer copies by. Its demo is [`super::matmul::MATMUL_TC`].

use super::check_len;
use kernels::Source;
use kernels::matmul_tc::{MatmulTc, TensorMaps, specialized};
use ptxkit::Kernel;
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::array::Array;
use ptxkit_runtime::f32_swizzled;

/// `C = A·B` with `kernel` of the TF32 ladder: checks that A, B and C hold m·k, k·n and m·n
/// elements and live where `backend` can reach them, then launches.
pub fn launch(
    backend: &Backend,
    kernel: &Kernel<MatmulTc>,
    source: Source,
    problem: &MatmulTc,
    a: &impl Array<f32>,
    b: &impl Array<f32>,
    c: &mut impl Array<f32>,
) -> Result<()> {
    let (a_len, b_len, c_len) = problem.lengths();
    check_len("A", a.len(), a_len)?;
    check_len("B", b.len(), b_len)?;
    check_len("C", c.len(), c_len)?;
    let (a_address, b_address) = (a.address(backend)?, b.address(backend)?);
    let maps = tensor_maps(backend, kernel, problem, (a_address, b_address))?;
    // The zeroed counters of the rungs that split k, where the grid does (none otherwise).
    let shape = backend.launch_shape_from(source.module(), kernel, problem)?;
    let arrivals = backend.zeroed_counters(kernels::matmul_tc::arrivals_needed(kernel, problem, shape.grid))?;
    let args = (
        a_address as *const f32,
        b_address as *const f32,
        c.address_mut(backend)? as *mut f32,
        problem.m,
        problem.n,
        problem.k,
        maps,
        arrivals.as_ptr(),
    );
    // SAFETY: each pointer is its array's address on this backend, and A, B and C hold the m·k, k·n
    // and m·n elements the kernels read or write for this problem; `maps`, where not null,
    // describes A and B; `arrivals` holds the zeroed counters the small-m rung needs for `shape`,
    // the launch shape `launch_from` would compute.
    unsafe { backend.launch_fn(source.module(), &kernel.code, &shape, args, &[a, b, &*c]) }
}

/// The tensor maps of A and B for the `wgmma` rung on a GPU, where TMA can take the shape (rows
/// of 16-byte multiples, aligned matrices); null otherwise (the kernel then copies by
/// `cp.async`, and the other rungs never read them).
fn tensor_maps(
    backend: &Backend,
    kernel: &Kernel<MatmulTc>,
    problem: &MatmulTc,
    (a, b): (u64, u64),
) -> Result<*const TensorMaps> {
    let MatmulTc { m, n, k, .. } = *problem;
    let fits = k.is_multiple_of(4) && n.is_multiple_of(4) && a.is_multiple_of(16) && b.is_multiple_of(16);
    match backend {
        Backend::Gpu(gpu) if fits && kernel.entry() == specialized::KERNEL.entry() => {
            let a_map = f32_swizzled(a, (m, k), specialized::A_BOX)?;
            let b_map = f32_swizzled(b, (k, n), specialized::B_BOX)?;
            Ok(gpu.tensor_maps(&[a_map, b_map])? as *const TensorMaps)
        }
        _ => Ok(std::ptr::null()),
    }
}
