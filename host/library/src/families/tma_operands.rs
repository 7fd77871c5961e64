//! A and B of the TMA matmul rungs (bf16 and TF32) as their tensor maps describe them: where they
//! are when TMA can read them there, else row-padded copies ([`Gpu::padded_copies_by`], made by
//! the library's own kernel, [`kernels::matmul::pad_rows`]). A matrix of odd width (an LM head's
//! 50257 columns) then runs on the TMA path at the cost of one copy, instead of the rung's
//! `cp.async` fallback, which also loads such rows an element at a time.

use kernels::matmul::pad_rows::{self, PadRows};
use kernels::matmul_bf16::TensorMaps;
use ptxkit_runtime::{Backend, Gpu, PaddedCopies, Pitched, Result, TensorMap};

/// How a family encodes one operand's map: its address, (rows, columns), the bytes from one row
/// to the next, and the box.
pub type Encode = fn(u64, (u32, u32), u64, (u32, u32)) -> Result<TensorMap>;

/// The maps of A (m × k) and B (k × n) of `element_bytes`-byte elements at `a` and `b` on `gpu`
/// (`backend`'s), in boxes `a_box` and `b_box`, with the copies they describe where the operands
/// could not be read in place: keep the copies until the launch reading them is enqueued.
pub fn operand_maps<'g>(
    gpu: (&'g Backend, &'g Gpu),
    encode: Encode,
    element_bytes: u64,
    (m, n, k): (u32, u32, u32),
    operands: (u64, u64),
    boxes: ((u32, u32), (u32, u32)),
) -> Result<(*const TensorMaps, Option<PaddedCopies<'g>>)> {
    matrix_maps(gpu, encode, element_bytes, ((m, k), (k, n)), operands, boxes)
}

/// As [`operand_maps`] for any two row-major matrices of (rows, columns) `a_shape` and
/// `b_shape`: the FP8 products' A and Bᵀ, both k wide.
pub fn matrix_maps<'g>(
    (backend, gpu): (&'g Backend, &'g Gpu),
    encode: Encode,
    element_bytes: u64,
    (a_shape, b_shape): ((u32, u32), (u32, u32)),
    (a, b): (u64, u64),
    (a_box, b_box): ((u32, u32), (u32, u32)),
) -> Result<(*const TensorMaps, Option<PaddedCopies<'g>>)> {
    let given = [
        Pitched::dense(a, a_shape.0.into(), element_bytes * u64::from(a_shape.1)),
        Pitched::dense(b, b_shape.0.into(), element_bytes * u64::from(b_shape.1)),
    ];
    let unready: Vec<Pitched> = given.iter().copied().filter(|p| !p.tma_ready()).collect();
    let copies = match unready.is_empty() {
        true => None,
        false => Some(gpu.padded_copies_by(&unready, |from, to| pad(backend, gpu, element_bytes, from, to))?),
    };
    // Each operand where the kernel reads it: the copies in the order of `unready`.
    let mut copied = (0..unready.len()).filter_map(|i| copies.as_ref().map(|c| c.get(i)));
    let [a_read, b_read] = given.map(|p| match p.tma_ready() {
        true => Some(p),
        false => copied.next(),
    });
    let (Some(a_read), Some(b_read)) = (a_read, b_read) else {
        unreachable!("one copy per operand TMA cannot read in place");
    };
    let a_map = encode(a_read.address, a_shape, a_read.pitch, a_box)?;
    let b_map = encode(b_read.address, b_shape, b_read.pitch, b_box)?;
    let maps = gpu.tensor_maps(&[a_map, b_map])? as *const TensorMaps;
    Ok((maps, copies))
}

/// Enqueues the row-padded copy of `from` into the scratch rows `to` (a [`Gpu::padded_copies_by`]
/// pair) by [`pad_rows`] where it can: a dense matrix of 2- or 4-byte elements aligned to them, in
/// rows as far apart as the kernel pads them, within its 32-bit indices; else by the driver's 2D
/// copy.
fn pad(backend: &Backend, gpu: &Gpu, element_bytes: u64, from: Pitched, to: Pitched) -> Result<()> {
    let problem = usize::try_from(from.row_bytes / element_bytes)
        .ok()
        .and_then(|cols| PadRows::new(from.rows as usize, cols, element_bytes as usize).ok())
        .filter(|p| {
            from.pitch == from.row_bytes
                && from.row_bytes.is_multiple_of(element_bytes)
                && from.address.is_multiple_of(element_bytes)
                && to.address.is_multiple_of(16)
                && to.pitch == u64::from(p.pitch()) * element_bytes
        });
    let Some(problem) = problem else {
        // SAFETY: `from` is the caller's matrix and `to` the scratch sized for it, both device
        // memory of this GPU, alive until the copy has run (what `padded_copies_by` hands over).
        return unsafe { gpu.copy_rows(from, to) };
    };
    let shape = backend.launch_shape(&pad_rows::KERNEL, &problem)?;
    let args = (
        from.address as *const u8,
        to.address as *mut u32,
        problem.rows,
        problem.cols,
        problem.bytes,
    );
    // SAFETY: `from` holds rows · cols dense elements of `bytes` bytes, aligned to them; `to` holds
    // rows · pitch, 16-byte aligned (both tested above); the shape is the kernel's for the problem;
    // both are device memory alive until the copy has run. The caller's arrays are marked used by
    // the matmul launch that follows on the same stream.
    unsafe { backend.launch_fn(None, &pad_rows::KERNEL.code, &shape, args, &[]) }
}
