// Hopper helpers of the wgmma twins (sm_90a): shared-memory matrix descriptors of the 128-byte
// swizzle, mbarrier waits and arrivals, and 2-D TMA copies, as kernels::device::{wgmma, mbarrier,
// tma} give them to the Rust kernels.
#pragma once

__device__ __forceinline__ unsigned long long descriptor(unsigned address, unsigned leading, unsigned stride) {
    auto field = [](unsigned bytes) { return (unsigned long long)((bytes >> 4) & 0x3fff); };
    return field(address) | (field(leading) << 16) | (field(stride) << 32) | (1ull << 62);
}

__device__ __forceinline__ void barrier_wait(unsigned barrier, unsigned parity) {
    asm volatile(
        "{ .reg .pred done; retry: mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1; @!done bra retry; }" ::"r"(
            barrier),
        "r"(parity));
}

__device__ __forceinline__ void tma_load(unsigned dst, const void* map, unsigned x, unsigned y, unsigned barrier) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
            dst),
        "l"(map), "r"(x), "r"(y), "r"(barrier)
        : "memory");
}

__device__ __forceinline__ void barrier_arrive(unsigned barrier) {
    asm volatile("{ .reg .b64 state; mbarrier.arrive.shared::cta.b64 state, [%0]; }" ::"r"(barrier));
}
