#pragma once
// kernels::scan::pipelined: the warp look-back in resident blocks that take tile after tile by
// ticket, each thread copying its runs of the next tile into the other half of a shared double
// buffer (cp.async) while the block looks back for and stores the current tile.
#include "look_back.cuh"

#define PIPELINED_BLOCKS_PER_SM 2

__device__ __forceinline__ unsigned in_tile(unsigned c) {
    return (threadIdx.x / 32) * (32 * PER_THREAD) + c * 128 + 4 * (threadIdx.x % 32);
}

// Starts the thread's runs of `tile` into `buffer` (cp.async where the run lies inside the input,
// else plain loads stored at once, 0 past n); commits a group either way.
template <typename T>
__device__ __forceinline__ void fetch(unsigned* buffer, const T* input, unsigned tile, unsigned n) {
    bool vector = ((unsigned long long)input & 15) == 0;
#pragma unroll
    for (unsigned c = 0; c < RUNS; ++c) {
        unsigned offset = in_tile(c), first = saturating_add(tile * SCAN_TILE, offset);
        if (vector && first + 4 >= first && first + 4 <= n) {
            unsigned shared = (unsigned)__cvta_generic_to_shared(buffer + offset);
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(shared), "l"(input + first) : "memory");
        } else {
            unsigned bits[4];
#pragma unroll
            for (unsigned k = 0; k < 4; ++k) {
                unsigned i = saturating_add(first, k);
                bits[k] = to_bits(i < n ? input[i] : T(0));
            }
            *(uint4*)(buffer + offset) = make_uint4(bits[0], bits[1], bits[2], bits[3]);
        }
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
}

template <typename T>
__device__ __forceinline__ void pipelined_body(const T* input, T* output, T* scratch, unsigned n, unsigned exclusive,
                                               unsigned phase) {
    unsigned tiles = (n + SCAN_TILE - 1) / SCAN_TILE;
    unsigned long long* statuses = (unsigned long long*)scratch;
    unsigned* ticket = (unsigned*)(statuses + tiles);
    unsigned t = threadIdx.x;
    if (phase == 0) {
        for (unsigned s = blockIdx.x * THREADS + t; s < tiles; s += gridDim.x * THREADS) publish(statuses + s, 0);
        if (blockIdx.x == 0 && t == 0) *(volatile unsigned*)ticket = 0;
        return;
    }
    // buffers (2 tiles, as bits), sums, 2 ticket slots (first, next), prefix: as
    // kernels::scan::pipelined carves them.
    extern __shared__ __align__(16) unsigned char shared_bytes[];
    unsigned* buffers = (unsigned*)shared_bytes;
    T* sums = (T*)(buffers + 2 * SCAN_TILE);
    unsigned* tickets = (unsigned*)(sums + WARPS + 1);
    T* prefix = (T*)(tickets + 2);
    if (t == 0) tickets[0] = atomicAdd(ticket, 1u);
    __syncthreads();
    unsigned tile = tickets[0];
    if (tile >= tiles) return;
    fetch(buffers, input, tile, n);
    unsigned buffer = 0;
    for (;;) {
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        T run[PER_THREAD];
#pragma unroll
        for (unsigned c = 0; c < RUNS; ++c) {
            uint4 four = *(const uint4*)(buffers + buffer * SCAN_TILE + in_tile(c));
            run[4 * c] = from_bits<T>(four.x);
            run[4 * c + 1] = from_bits<T>(four.y);
            run[4 * c + 2] = from_bits<T>(four.z);
            run[4 * c + 3] = from_bits<T>(four.w);
        }
        if (t == 0) tickets[1] = atomicAdd(ticket, 1u);
        T totals[RUNS], in_tile_prefix[RUNS], aggregate;
        run_totals(run, totals);
        block_exclusive(sums, totals, in_tile_prefix, &aggregate);
        unsigned next = tickets[1];
        if (next < tiles) fetch(buffers + (buffer ^ 1) * SCAN_TILE, input, next, n);
        if (t < 32) {
            T before = WholeWarp::prefix(statuses, tile, aggregate, t);
            if (t == 0) *prefix = before;
        }
        __syncthreads();
        T before = *prefix, prefixes[RUNS];
#pragma unroll
        for (unsigned c = 0; c < RUNS; ++c) prefixes[c] = plus(before, in_tile_prefix[c]);
        store_run(output, tile, n, run, prefixes, exclusive != 0);
        if (next >= tiles) return;
        tile = next;
        buffer ^= 1;
    }
}
