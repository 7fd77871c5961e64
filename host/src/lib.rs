//! The host side of the project. For now: the kernels' PTX, built by `build.rs` and embedded here.
//! The GPU runtime (context, launches, managed memory) builds on this.

pub mod ptx;
