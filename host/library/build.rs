//! Builds the library's kernels to PTX with the same builder a user's build script uses, so that
//! this crate embeds them on a fresh clone with no earlier step.

fn main() {
    // ptxas checks the PTX in `cargo xtask build-ptx`, not in every build.
    let builder = ptxkit_build::PtxBuilder::new("../../kernels").check_with_ptxas(ptxkit_build::PtxasCheck::Off);
    if let Err(error) = builder.embed() {
        // A build script's panic would print a backtrace hint; this says only what went wrong.
        eprintln!("error: {error}");
        println!("cargo::error=building the kernels' PTX failed: {}", error.summary());
        std::process::exit(1);
    }
}
