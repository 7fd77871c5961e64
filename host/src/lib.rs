//! The `host` binary's library: what each command prints ([`demos`]), for the binary and the
//! benches. The launches, checks and choices it runs are `kernels-host`'s; the GPU, the emulator
//! and memory are `ptxkit-runtime`'s.

pub mod demos;
