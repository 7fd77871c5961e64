//! What the emulator suite and the GPU suite share: every registered kernel of every family, run
//! over a family's sizes and checked against its f64 reference.

use kernels::Source;
use kernels::testing::{RNG_ENV, rng_stream};
use kernels_host::families::{self, FAMILIES, FamilyDemo, Size};
use ptxkit_runtime::Backend;

/// Environment variable that limits the family suites to some families (`matmul,scan`), so that a
/// runner call with little device time checks what changed. Unset: every family. The suite says
/// which families it ran.
pub const FAMILIES_ENV: &str = "TEST_FAMILIES";

/// The families [`FAMILIES_ENV`] asks for (every one when it is unset); a name that is no family
/// fails the test.
fn wanted_families() -> Vec<&'static dyn FamilyDemo> {
    let Ok(list) = std::env::var(FAMILIES_ENV) else {
        return FAMILIES.to_vec();
    };
    let names: Vec<&str> = list.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    for name in &names {
        assert!(
            FAMILIES.iter().any(|f| f.name() == *name),
            "{FAMILIES_ENV} names {name}, which is not a family"
        );
    }
    let wanted: Vec<_> = FAMILIES.iter().copied().filter(|f| names.contains(&f.name())).collect();
    eprintln!(
        "{FAMILIES_ENV}: checking only {} of {} families",
        names.join(", "),
        FAMILIES.len()
    );
    wanted
}

/// Runs every kernel of every family (or those [`FAMILIES_ENV`] names) at the sizes `sizes` gives
/// each family, on `backend`, with outputs poisoned before each launch and guards checked after;
/// fails with every failure listed.
pub fn check_every_kernel(backend: &Backend, sizes: impl Fn(&dyn FamilyDemo) -> Vec<Size>) {
    let stream = rng_stream();
    let mut failures = Vec::new();
    let mut launches = 0;
    for family in wanted_families() {
        let started = std::time::Instant::now();
        for size in sizes(family) {
            let label = format!("{} at {}", family.name(), family.label(size));
            if let Err(e) = family.check(backend, size, 1) {
                failures.push(format!("{label}: {e}"));
                continue;
            }
            let mut case = match family.prepare(backend, size, stream, 1) {
                Ok(case) => case,
                Err(e) => {
                    failures.push(format!("{label}: preparing the inputs failed: {e}"));
                    continue;
                }
            };
            for (index, kernel) in family.kernels().iter().enumerate() {
                if !families::runs_here(backend, kernel, Source::Rust) {
                    // Only the sm_90a kernels; their refusal has a test of its own.
                    eprintln!("{}: not run on this backend (sm_90a only)", kernel.entry);
                    continue;
                }
                let outcome = case
                    .poison()
                    .and_then(|()| case.launch(index, Source::Rust, 0))
                    .map_err(|e| e.to_string())
                    .and_then(|()| case.check(0));
                launches += 1;
                if let Err(why) = outcome {
                    failures.push(format!("{} at {}: {why}", kernel.entry, family.label(size)));
                }
            }
        }
        // Progress on a long run (the GPU suite's large sizes take minutes), and where it stopped
        // if a time limit ends it.
        eprintln!("{}: checked in {:.1} s", family.name(), started.elapsed().as_secs_f64());
    }
    assert!(launches > 0, "no kernel was run");
    assert!(
        failures.is_empty(),
        "{} of {launches} launches failed (random stream {stream}; rerun with {RNG_ENV}={stream}):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
