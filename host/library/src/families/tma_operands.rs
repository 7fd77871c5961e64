//! A and B of the TMA matmul rungs (bf16 and TF32) as their tensor maps describe them: where they
//! are when TMA can read them there, else row-padded copies ([`Gpu::padded_copies`]). A matrix of
//! odd width (an LM head's 50257 columns) then runs on the TMA path at the cost of one copy,
//! instead of the rung's `cp.async` fallback, which also loads such rows an element at a time.

use kernels::matmul_bf16::TensorMaps;
use ptxkit_runtime::{Gpu, PaddedCopies, Pitched, Result, TensorMap};

/// How a family encodes one operand's map: its address, (rows, columns), the bytes from one row
/// to the next, and the box.
pub type Encode = fn(u64, (u32, u32), u64, (u32, u32)) -> Result<TensorMap>;

/// The maps of A (m × k) and B (k × n) of `element_bytes`-byte elements at `a` and `b`, in boxes
/// `a_box` and `b_box`, with the copies they describe where the operands could not be read in
/// place: keep the copies until the launch reading them is enqueued.
pub fn operand_maps<'g>(
    gpu: &'g Gpu,
    encode: Encode,
    element_bytes: u64,
    (m, n, k): (u32, u32, u32),
    (a, b): (u64, u64),
    (a_box, b_box): ((u32, u32), (u32, u32)),
) -> Result<(*const TensorMaps, Option<PaddedCopies<'g>>)> {
    let given = [
        Pitched::dense(a, m.into(), element_bytes * u64::from(k)),
        Pitched::dense(b, k.into(), element_bytes * u64::from(n)),
    ];
    let unready: Vec<Pitched> = given.iter().copied().filter(|p| !p.tma_ready()).collect();
    let copies = match unready.is_empty() {
        true => None,
        false => Some(gpu.padded_copies(&unready)?),
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
    let a_map = encode(a_read.address, (m, k), a_read.pitch, a_box)?;
    let b_map = encode(b_read.address, (k, n), b_read.pitch, b_box)?;
    let maps = gpu.tensor_maps(&[a_map, b_map])? as *const TensorMaps;
    Ok((maps, copies))
}
