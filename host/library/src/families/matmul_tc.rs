//! The TF32 matmul ladder's safe launch: the f32 ladder's arrays, plus the tensor maps of A and B
//! that the `wgmma` rung's TMA producer copies by. Its demo is [`super::matmul::MATMUL_TC`].

use super::check_len;
use super::tma_operands::operand_maps;
use kernels::Source;
use kernels::matmul_tc::{MatmulTc, TensorMaps, specialized};
use ptxkit::Kernel;
use ptxkit_runtime::Backend;
use ptxkit_runtime::Result;
use ptxkit_runtime::array::Array;
use ptxkit_runtime::{PaddedCopies, f32_swizzled_pitched};

/// Bytes of one f32.
const F32_BYTES: u64 = 4;

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
    // The copies stay locked until the launch is enqueued.
    let (maps, _copies) = tensor_maps(backend, kernel, problem, (a_address, b_address))?;
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

/// The tensor maps of A and B for the `wgmma` rungs on a GPU (of row-padded copies where TMA cannot
/// read them in place), with the copies; null otherwise (the other rungs read no maps; on the
/// emulator the rung copies by `cp.async`).
fn tensor_maps<'g>(
    backend: &'g Backend,
    kernel: &Kernel<MatmulTc>,
    problem: &MatmulTc,
    operands: (u64, u64),
) -> Result<(*const TensorMaps, Option<PaddedCopies<'g>>)> {
    let MatmulTc { m, n, k, .. } = *problem;
    match (backend, specialized::tile_rows(kernel)) {
        (Backend::Gpu(gpu), Some(rows)) => operand_maps(
            (backend, gpu),
            f32_swizzled_pitched,
            F32_BYTES,
            (m, n, k),
            operands,
            (specialized::a_box(rows), specialized::B_BOX),
        ),
        _ => Ok((std::ptr::null(), None)),
    }
}
