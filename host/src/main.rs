//! `host`: for now it lists the embedded PTX; the GPU demos build on this.

use host::ptx::{EMBEDDED, isa_version};

fn main() {
    println!("Embedded PTX (built from kernels/ by host/build.rs):");
    for module in EMBEDDED {
        println!(
            "  {} (compute capability {}.{}, PTX ISA {}): {} bytes",
            module.arch,
            module.compute_capability.0,
            module.compute_capability.1,
            isa_version(module.ptx).unwrap_or("?"),
            module.ptx.len()
        );
    }
    println!("Kernels:");
    for kernel in kernels::KERNELS {
        println!(
            "  {:<20} block {}x{}x{}, {} bytes of shared memory per block",
            kernel.entry, kernel.block.x, kernel.block.y, kernel.block.z, kernel.shared_bytes
        );
    }
}
