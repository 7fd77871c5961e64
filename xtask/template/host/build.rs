//! Builds the kernel crate to PTX (one module per GPU architecture) and embeds it.

fn main() {
    if let Err(error) = ptxkit_build::PtxBuilder::new("../kernels").embed() {
        eprintln!("{error}");
        println!("cargo::error={}", error.summary());
        std::process::exit(1);
    }
}
