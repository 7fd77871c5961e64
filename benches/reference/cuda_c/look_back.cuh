// The single-pass scan of kernels::scan::look_back, with the walk over the tiles before a tile as
// a parameter (kernels::scan::look_back::Walk): tiles by ticket, 8-byte statuses (flag high,
// value low), phase 0 resets them.
#pragma once
#include "scan.cuh"

#define AGGREGATE 1ull
#define INCLUSIVE 2ull

__device__ __forceinline__ unsigned long long status(unsigned long long flag, float value) {
    return flag << 32 | (unsigned long long)__float_as_uint(value);
}
__device__ __forceinline__ void publish(unsigned long long* at, unsigned long long word) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(at), "l"(word) : "memory");
}
__device__ __forceinline__ unsigned long long peek(const unsigned long long* at) {
    unsigned long long word;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(word) : "l"(at) : "memory");
    return word;
}

// Walk::prefix(statuses, tile, aggregate, lane) is called by every lane of warp 0 and publishes the
// tile's statuses; lane 0's result is the sum of every element before the tile.
template <typename Walk>
__device__ __forceinline__ void look_back_body(const float* input, float* output, float* scratch, unsigned n,
                                               unsigned exclusive, unsigned phase) {
    unsigned tiles = (n + SCAN_TILE - 1) / SCAN_TILE;
    unsigned long long* statuses = (unsigned long long*)scratch;
    unsigned* ticket = (unsigned*)(statuses + tiles);
    unsigned t = threadIdx.x;
    if (phase == 0) {
        if (t == 0) {
            publish(statuses + blockIdx.x, 0);
            if (blockIdx.x == 0) *(volatile unsigned*)ticket = 0;
        }
        return;
    }
    extern __shared__ float sums[];
    unsigned* my_ticket = (unsigned*)(sums + WARPS + 1);
    float* prefix = (float*)(my_ticket + 1);
    if (t == 0) *my_ticket = atomicAdd(ticket, 1u);
    __syncthreads();
    unsigned tile = *my_ticket;
    float run[PER_THREAD];
    load_run(input, tile, n, run);
    float totals[RUNS], in_tile[RUNS], aggregate;
    run_totals(run, totals);
    block_exclusive(sums, totals, in_tile, &aggregate);
    if (t < 32) {
        float before = Walk::prefix(statuses, tile, aggregate, t);
        if (t == 0) *prefix = before;
    }
    __syncthreads();
    float before = *prefix, prefixes[RUNS];
#pragma unroll
    for (unsigned c = 0; c < RUNS; ++c) prefixes[c] = before + in_tile[c];
    store_run(output, tile, n, run, prefixes, exclusive != 0);
}
