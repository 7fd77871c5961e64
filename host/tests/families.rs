//! Every registered kernel on the CPU emulator, over each family's edge sizes. A kernel is tested
//! here by being registered.

mod common;

use ptxkit::emu::{Schedule, with_schedule};
use ptxkit_runtime::Backend;

#[test]
fn every_registered_kernel_matches_its_reference_on_edge_sizes_on_the_emulator() {
    common::check_every_kernel(&Backend::Emu, |family| family.sizes().edge);
}

/// The same check with the blocks in another order: no kernel of the library may depend on the
/// order its blocks run in, which CUDA does not promise. A failed launch names its schedule (the
/// seed from the test's random stream, `KERNELS_TEST_RNG`).
fn check_every_kernel_under(schedule: impl Fn(u64) -> Schedule) {
    let schedule = schedule(kernels::testing::rng_stream());
    eprintln!("blocks in the {schedule} schedule");
    with_schedule(schedule, || {
        common::check_every_kernel(&Backend::Emu, |family| family.sizes().edge)
    });
}

#[test]
fn every_registered_kernel_matches_its_reference_with_blocks_in_reverse_order() {
    check_every_kernel_under(|_| Schedule::Reverse);
}

#[test]
fn every_registered_kernel_matches_its_reference_with_blocks_in_random_order() {
    check_every_kernel_under(|seed| Schedule::Random { seed });
}

#[test]
fn every_registered_kernel_matches_its_reference_with_blocks_interleaved_at_atomics() {
    check_every_kernel_under(|seed| Schedule::Interleaved { seed });
}

#[test]
fn every_family_has_edge_sizes_and_a_smoke_size_its_kernels_accept() {
    for family in kernels_host::families::FAMILIES {
        assert!(!family.sizes().edge.is_empty(), "{} has no edge sizes", family.name());
        for size in family
            .sizes()
            .edge
            .into_iter()
            .chain([family.sizes().smoke, family.cli().default])
        {
            family
                .plan(size)
                .unwrap_or_else(|e| panic!("{} rejects its own size {size:?}: {e}", family.name()));
        }
    }
}

#[test]
fn every_registry_family_has_a_host_side_and_back() {
    let registry: Vec<&str> = kernels::registry::FAMILIES.iter().map(|f| f.name()).collect();
    let host: Vec<&str> = kernels_host::families::FAMILIES.iter().map(|f| f.name()).collect();
    assert_eq!(
        registry, host,
        "kernels::registry::FAMILIES and kernels_host::families::FAMILIES must list the same families"
    );
}

#[test]
fn every_configuration_a_family_names_is_one_of_its_kernels() {
    for family in kernels_host::families::FAMILIES {
        let entries: Vec<&str> = family.kernels().iter().map(|k| k.entry).collect();
        for configuration in family.choice().configurations() {
            assert!(
                entries.contains(configuration),
                "{} names {configuration} as a configuration, but has no such kernel",
                family.name()
            );
        }
    }
}

#[test]
fn the_emulator_refuses_the_sm90a_kernels_before_running_them() {
    let backend = Backend::Emu;
    let mut refused = 0;
    for family in kernels_host::families::FAMILIES {
        for (index, kernel) in family.kernels().iter().enumerate() {
            if !kernel.sm90a_only {
                continue;
            }
            assert!(
                !kernels_host::families::runs_here(&backend, kernel, kernels::Source::Rust),
                "{}",
                kernel.entry
            );
            let mut case = family.prepare(&backend, family.sizes().smoke, 1, 1).unwrap();
            case.poison().unwrap();
            let error = case.launch(index, kernels::Source::Rust, 0).unwrap_err();
            assert!(
                matches!(error, ptxkit_runtime::Error::NeedsSm90a { .. }) && error.to_string().contains(kernel.entry),
                "{}: {error}",
                kernel.entry
            );
            // Refused before anything ran: the output is still the poison.
            let check = case.check(0).unwrap_err();
            assert!(check.contains("NaN"), "{}: {check}", kernel.entry);
            refused += 1;
        }
    }
    assert!(refused >= 1, "no kernel is marked sm_90a-only");
}
