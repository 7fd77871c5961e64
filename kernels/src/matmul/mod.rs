//! `C = A·B` for row-major `A` (m×k), `B` (k×n) and `C` (m×n), any m, n, k ≥ 1: one idea per file.
//!
//! * [`naive`]: one thread per output element, every operand read from global memory;
//! * [`tiled`]: 32×32 tiles of A and B staged in shared memory and reused by the whole block;
//! * [`padded`]: the same with each tile row padded by one element against bank conflicts.

pub mod naive;
pub mod padded;
pub mod tiled;
