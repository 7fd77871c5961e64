//! Thread-block clusters (sm_90): the blocks of a cluster run at the same time on SMs of one GPC,
//! and each reaches the others' shared memory and `mbarrier`s (the `.shared::cluster` window), so
//! one TMA copy can land in all of them at once ([`super::tma::load_2d_multicast`]). A kernel asks
//! for clusters by its launch bounds (`#[launch_bounds(block, blocks_per_sm, cluster = n)]`, along
//! x), so a cluster's blocks are `n` consecutive block indices.

use core::arch::asm;

/// This block's rank in its cluster (`%cluster_ctarank`): 0 to the cluster's size − 1.
#[inline(always)]
pub fn block_rank() -> u32 {
    let rank: u32;
    // SAFETY: reads a special register.
    unsafe { asm!("mov.u32 {r}, %cluster_ctarank;", r = out(reg32) rank, options(pure, nomem, nostack)) };
    rank
}

/// This block's cluster along x (`%clusterid.x`).
#[inline(always)]
pub fn cluster_index() -> u32 {
    let index: u32;
    // SAFETY: reads a special register.
    unsafe { asm!("mov.u32 {r}, %clusterid.x;", r = out(reg32) index, options(pure, nomem, nostack)) };
    index
}

/// The grid's clusters along x (`%nclusterid.x`).
#[inline(always)]
pub fn clusters() -> u32 {
    let count: u32;
    // SAFETY: reads a special register.
    unsafe { asm!("mov.u32 {r}, %nclusterid.x;", r = out(reg32) count, options(pure, nomem, nostack)) };
    count
}

/// The address in the `.shared::cluster` window of what lies at `local` (a `.shared` window
/// address of this block) in block `rank` of the cluster (`mapa`).
#[inline(always)]
pub fn peer_address(local: u32, rank: u32) -> u32 {
    let address: u32;
    // SAFETY: register arithmetic only.
    unsafe {
        asm!(
            "mapa.shared::cluster.u32 {a}, {l}, {r};",
            a = out(reg32) address, l = in(reg32) local, r = in(reg32) rank, options(pure, nomem, nostack),
        )
    };
    address
}

/// Every thread of the cluster that has not exited arrives, then waits for the others
/// (`barrier.cluster`): what each wrote before is seen by the others after (release, acquire).
/// Before a block's `mbarrier`s are used by another block, and before a block exits whose shared
/// memory another may still reach.
#[inline(always)]
pub fn sync() {
    // SAFETY: a barrier; memory effects are its release and acquire.
    unsafe {
        asm!(
            "barrier.cluster.arrive.release;",
            "barrier.cluster.wait.acquire;",
            options(nostack)
        )
    };
}

/// Makes this thread's `mbarrier.init`s visible to the cluster's other blocks (with a
/// [`sync`] after it): their arrivals and copies may then reach the barriers.
#[inline(always)]
pub fn fence_barrier_init() {
    // SAFETY: a fence.
    unsafe { asm!("fence.mbarrier_init.release.cluster;", options(nostack)) };
}
