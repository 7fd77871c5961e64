//! Builds the check's kernel crate to PTX with line information, as a user's build script would.

fn main() {
    let builder = ptxkit_build::PtxBuilder::new("kernels").line_info(true);
    if let Err(error) = builder.embed() {
        eprintln!("{error}");
        println!("cargo::error={}", error.summary());
        std::process::exit(1);
    }
}
