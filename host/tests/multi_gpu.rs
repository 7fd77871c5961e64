//! Several devices: the row split of a matmul over emulated devices (runs everywhere, CI included),
//! the multi-GPU scenarios on one GPU that plays every part (`--devices 0,0`) and NCCL with one
//! rank, and every scenario on two GPUs. Tests that need a GPU show as ignored without one; the
//! runner runs them with `--include-ignored`, and on a one-GPU runner with `--skip two_gpus`.

use host::demos::multi_gpu::{self, Plan, Scenario, split};
use host::demos::{Row, Settings, Status};
use kernels::reference::Operands;
use kernels_host::families::matmul::Oracle;
use ptxkit_runtime::Backend;
use ptxkit_runtime::{DeviceList, Topology};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn operands([m, n, k]: [usize; 3], seed: u64) -> (Vec<f32>, Vec<f32>) {
    let mut random = StdRng::seed_from_u64(seed);
    let a = (0..m * k).map(|_| random.random_range(-1.0..1.0)).collect();
    let b = (0..k * n).map(|_| random.random_range(-1.0..1.0)).collect();
    (a, b)
}

#[test]
fn the_row_split_over_emulated_devices_equals_one_device_bit_for_bit() {
    // Fewer rows than devices (empty parts), odd shapes, one more than a tile's rows.
    for (shape, devices) in [([1, 1, 1], 2), ([3, 5, 7], 4), ([67, 45, 33], 2), ([129, 31, 17], 3)] {
        let (a, b) = operands(shape, 7);
        let backends: Vec<Backend> = (0..devices).map(|_| Backend::Emu).collect();
        let (whole, entry) = split::whole_product(&backends[0], &a, &b, shape).unwrap();
        let (parts, entries) = split::split_product(&backends, &a, &b, shape).unwrap();
        let [m, n, k] = shape;
        let oracle = Oracle::new(&a, &b, (m, n, k), 1, Operands::F32);
        let verdict = split::check_split(&parts, &entries, &whole, entry, &oracle);
        assert!(
            verdict.as_ref().is_ok_and(|v| v.contains("bit for bit")),
            "{shape:?} on {devices}: {verdict:?}"
        );
    }
}

#[test]
fn a_split_that_loses_a_row_fails_its_check() {
    let shape = [67, 45, 33];
    let (a, b) = operands(shape, 3);
    let backends = [Backend::Emu, Backend::Emu];
    let (whole, entry) = split::whole_product(&backends[0], &a, &b, shape).unwrap();
    let (mut parts, entries) = split::split_product(&backends, &a, &b, shape).unwrap();
    // The second device's first row, as if its block had started one row late.
    let start = split::row_blocks(67, 2)[1].start;
    parts[start * 45..(start + 1) * 45].copy_from_slice(&whole[(start - 1) * 45..start * 45]);
    let oracle = Oracle::new(&a, &b, (67, 45, 33), 1, Operands::F32);
    assert!(split::check_split(&parts, &entries, &whole, entry, &oracle).is_err());
}

#[test]
fn the_emulator_runs_the_split_and_skips_what_needs_gpus() {
    let backends = [Backend::Emu, Backend::Emu];
    let plan = Plan::new(Scenario::ALL.to_vec(), 1024, [64, 64, 64]).unwrap();
    let rows = multi_gpu::run(&backends, &settings(), &plan).unwrap();
    let statuses: Vec<Status> = rows.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [Status::Skipped, Status::Skipped, Status::Passed, Status::Skipped]
    );
}

fn settings() -> Settings {
    Settings {
        warmup: 1,
        runs: 3,
        rng: 11,
    }
}

fn all_pass(rows: &[Row]) {
    assert!(!rows.is_empty());
    for row in rows {
        assert_eq!(
            row.status,
            Status::Passed,
            "{} {}: {}",
            row.demo,
            row.variant,
            row.check
        );
    }
}

fn gpus(list: &[usize]) -> Vec<Backend> {
    multi_gpu::backends_of(kernels_host::open_gpus(&DeviceList::These(list.to_vec())).unwrap())
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn one_gpu_playing_two_parts_runs_peer_managed_and_split() {
    let backends = gpus(&[0, 0]);
    let plan = Plan::new(
        vec![Scenario::Peer, Scenario::Managed, Scenario::Split],
        1 << 22,
        [509, 257, 131],
    )
    .unwrap();
    all_pass(&multi_gpu::run(&backends, &settings(), &plan).unwrap());
}

#[test]
#[ignore = "needs an NVIDIA GPU and NCCL (PyTorch's); the runner runs it with --include-ignored"]
fn nccl_with_one_rank_sums_the_k_split_product() {
    let backends = gpus(&[0]);
    let plan = Plan::new(vec![Scenario::Collective], 1024, [300, 129, 257]).unwrap();
    all_pass(&multi_gpu::run(&backends, &settings(), &plan).unwrap());
}

#[test]
#[ignore = "needs an NVIDIA GPU; the runner runs it with --include-ignored"]
fn nccl_refuses_a_device_listed_twice() {
    let backends = gpus(&[0, 0]);
    let plan = Plan::new(vec![Scenario::Collective], 1024, [64, 64, 64]).unwrap();
    let error = multi_gpu::run(&backends, &settings(), &plan).unwrap_err().to_string();
    assert!(error.contains("appears twice"), "{error}");
}

#[test]
#[ignore = "needs two NVIDIA GPUs; the runner runs it with --include-ignored on a two-GPU machine"]
fn two_gpus_pass_every_scenario() {
    let backends = gpus(&[0, 1]);
    // 64 MiB: enough for the mapped read's check that no page migrated.
    let plan = Plan::new(Scenario::ALL.to_vec(), 1 << 24, [509, 257, 131]).unwrap();
    all_pass(&multi_gpu::run(&backends, &settings(), &plan).unwrap());
}

#[test]
#[ignore = "needs two NVIDIA GPUs; the runner runs it with --include-ignored on a two-GPU machine"]
fn two_gpus_report_their_link_both_ways() {
    let gpus = kernels_host::open_gpus(&DeviceList::These(vec![0, 1])).unwrap();
    let topology = Topology::of(&gpus).unwrap();
    assert_eq!(topology.pairs.len(), 2);
    assert!(topology.pairs.iter().all(|p| p.peer_access), "{topology:?}");
}
