//! The stencil from the host: on a GPU with the kernel crate's PTX loaded, or on the emulator.

use ptxkit_runtime::{Backend, BackendChoice, Result};
use {{crate}}::{KERNEL, Stencil};

// `{{Type}}`: the kernel crate's PTX, as the build script embedded it.
ptxkit_runtime::include_kernels!({{crate}});

/// The GPU, with the kernels loaded, where there is one; else the emulator, and why.
pub fn open() -> Result<(Backend, Option<String>)> {
    let (mut backend, notice) = Backend::choose(BackendChoice::Auto, None)?;
    backend.load::<{{Type}}>()?;
    Ok((backend, notice))
}

/// The stencil of `x` on `backend`, through the checked launch.
pub fn stencil(backend: &Backend, x: &[f32]) -> Result<Vec<f32>> {
    let problem = Stencil { n: u32::try_from(x.len()).map_err(|_| ptxkit_runtime::Error::InvalidInput {
        what: "x".into(),
        reason: format!("{} elements, beyond the kernel's 32-bit index", x.len()),
    })? };
    match backend {
        Backend::Gpu(gpu) => {
            let input = gpu.upload(x)?;
            let mut out = gpu.upload(&vec![f32::NAN; x.len()])?;
            launch(backend, &problem, &input, &mut out)?;
            gpu.download(&out)
        }
        Backend::Emu => {
            let (input, mut out) = (x.to_vec(), vec![f32::NAN; x.len()]);
            launch(backend, &problem, &input, &mut out)?;
            Ok(out)
        }
    }
}

fn launch(
    backend: &Backend,
    problem: &Stencil,
    input: &impl ptxkit_runtime::Array<f32>,
    out: &mut impl ptxkit_runtime::Array<f32>,
) -> Result<()> {
    let n = problem.n as usize;
    ptxkit_runtime::check_len("x", input.len(), n)?;
    ptxkit_runtime::check_len("out", out.len(), n)?;
    let args = (input.view(backend)?.head(n), out.view_mut(backend)?.head(n));
    // SAFETY: both views are their arrays' on this backend, borrowed for the launch; the grid
    // covers n elements, and the kernel indexes within its views.
    unsafe { backend.launch(&KERNEL, problem, args, &[input, &*out]) }?;
    if let Backend::Gpu(gpu) = backend {
        gpu.synchronize()?;
    }
    Ok(())
}
