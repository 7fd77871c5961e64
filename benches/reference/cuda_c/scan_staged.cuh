// kernels::scan::staged: the ordered warp look-back with the tile staged in shared memory
// (cp.async, 16 bytes where the tile is whole and aligned, zero fill past n), read to sum the
// runs and read again to store after the look-back, so that no register holds the tile while
// the block waits.
#pragma once
#include "look_back.cuh"

// kernels::scan::staged::BLOCKS_PER_SM: six tiles of 32 KiB per SM, at most 40 registers.
#define STAGED_BLOCKS_PER_SM 6

// kernels::scan::pipelined::in_tile: where thread t's run c sits inside a tile.
__device__ __forceinline__ unsigned staged_offset(unsigned t, unsigned c) {
    return (t / 32) * (32 * PER_THREAD) + 4 * (t % 32) + c * 128;
}
__device__ __forceinline__ bool whole(unsigned tile, unsigned n) {
    unsigned long long end = (unsigned long long)(tile + 1) * SCAN_TILE;
    return end <= n;
}
__device__ __forceinline__ void copy_async(unsigned* dst, const void* src, unsigned bytes, unsigned valid_bytes) {
    unsigned shared = (unsigned)__cvta_generic_to_shared(dst);
    if (bytes == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(shared), "l"(src), "r"(valid_bytes) : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(shared), "l"(src), "r"(valid_bytes) : "memory");
}

// 16 bytes at a time where the tile is whole and the input aligned, else an element at a time with
// zero fill past n (a partial 16-byte copy reads all 16 as compute-sanitizer sees it).
template <typename T>
__device__ __forceinline__ void stage(unsigned* staged, const T* input, unsigned tile, unsigned n) {
    unsigned t = threadIdx.x;
    bool vector = ((unsigned long long)input & 15) == 0;
    if (vector && whole(tile, n)) {
        const T* first = input + tile * SCAN_TILE + staged_offset(t, 0);
#pragma unroll
        for (unsigned c = 0; c < RUNS; ++c) copy_async(staged + staged_offset(t, c), first + c * 128, 16, 16);
    } else {
#pragma unroll
        for (unsigned c = 0; c < RUNS; ++c)
#pragma unroll
            for (unsigned k = 0; k < 4; ++k) {
                unsigned i = saturating_add(tile * SCAN_TILE, staged_offset(t, c) + k);
                copy_async(staged + staged_offset(t, c) + k, i < n ? input + i : input, 4, i < n ? 4 : 0);
            }
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
}

template <typename T>
__device__ __forceinline__ void read_four(const unsigned* staged, unsigned t, unsigned c, T four[4]) {
    uint4 bits = *(const uint4*)(staged + staged_offset(t, c));
    four[0] = from_bits<T>(bits.x);
    four[1] = from_bits<T>(bits.y);
    four[2] = from_bits<T>(bits.z);
    four[3] = from_bits<T>(bits.w);
}

template <typename T>
__device__ __forceinline__ void staged_body(const T* input, T* output, T* scratch, unsigned n, unsigned exclusive,
                                            unsigned phase) {
    unsigned tiles = (n + SCAN_TILE - 1) / SCAN_TILE;
    unsigned long long* statuses = (unsigned long long*)scratch;
    unsigned t = threadIdx.x;
    if (phase == 0) {
        unsigned i = blockIdx.x * THREADS + t;
        if (i < tiles) publish(statuses + i, 0);
        else if (i == tiles) *(volatile unsigned*)(statuses + tiles) = 0;
        return;
    }
    // The layout of kernels::scan::staged: the tile, the warp totals, the prefix.
    extern __shared__ __align__(16) unsigned char shared_bytes[];
    unsigned* staged = (unsigned*)shared_bytes;
    T* sums = (T*)(staged + SCAN_TILE);
    T* prefix = sums + WARPS + 1;
    unsigned tile = blockIdx.x;
    stage(staged, input, tile, n);
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    T totals[RUNS], in_tile[RUNS], aggregate;
#pragma unroll
    for (unsigned c = 0; c < RUNS; ++c) {
        T four[4];
        read_four(staged, t, c, four);
        totals[c] = plus(plus(plus(four[0], four[1]), four[2]), four[3]);
    }
    block_exclusive(sums, totals, in_tile, &aggregate);
    if (t < 32) {
        T before = WholeWarp::prefix(statuses, tile, aggregate, t);
        if (t == 0) *prefix = before;
    }
    __syncthreads();
    T before = *prefix;
    bool vector = ((unsigned long long)output & 15) == 0, all = vector && whole(tile, n);
#pragma unroll
    for (unsigned c = 0; c < RUNS; ++c) {
        T four[4], sum = plus(before, in_tile[c]);
        read_four(staged, t, c, four);
#pragma unroll
        for (unsigned k = 0; k < 4; ++k) {
            T value = four[k];
            four[k] = exclusive ? sum : plus(sum, value);
            sum = plus(sum, value);
        }
        unsigned first = all ? tile * SCAN_TILE + staged_offset(t, c) : saturating_add(tile * SCAN_TILE, staged_offset(t, c));
        if (all || (vector && n >= 4 && first <= n - 4)) {
            *(uint4*)(output + first) = make_uint4(to_bits(four[0]), to_bits(four[1]), to_bits(four[2]), to_bits(four[3]));
        } else {
#pragma unroll
            for (unsigned k = 0; k < 4; ++k) {
                unsigned i = saturating_add(first, k);
                if (i < n) output[i] = four[k];
            }
        }
    }
}
