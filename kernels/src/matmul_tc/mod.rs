//! Matmul on the tensor cores: the same `C = A·B` as [`crate::matmul`] (the same problem type and
//! launch), its operands read as the tensor cores read them. A ladder of its own, because its
//! precision is not the f32 ladder's: TF32 keeps 10 of f32's 23 mantissa bits of each operand
//! (products then exact, sums in f32), so results are checked against the product of the operands
//! as read (`reference::Operands::Tf32`).

pub mod mma_tf32;

use crate::Family;
use crate::matmul::Matmul;

/// The tensor-core matmul kernels, in ladder order: the registry's list.
pub const FAMILY: Family<Matmul> = Family::new("matmul_tc", &[mma_tf32::KERNEL]);
