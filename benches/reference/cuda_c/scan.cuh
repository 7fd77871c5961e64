// Pieces shared by the scan twins (kernels::scan): 256 threads; phase 0 scans tiles (or resets
// the look-back's statuses), phase 1 adds the tiles' prefixes (or runs the look-back scan).
#pragma once

#define THREADS 256u
#define WARPS (THREADS / 32u)
#define PER_THREAD 8u
#define TILE_2048 (PER_THREAD * THREADS)

// The warp's inclusive scan by shuffles up (kernels::scan::warp_inclusive).
__device__ __forceinline__ float warp_inclusive(float value) {
    unsigned lane = threadIdx.x % 32;
    for (unsigned d = 1; d < 32; d *= 2) {
        float below = __shfl_up_sync(0xffffffffu, value, d);
        if (lane >= d) value = below + value;
    }
    return value;
}

// Each thread's exclusive prefix of `total` over the block and the block's total
// (kernels::scan::block_exclusive); sums holds WARPS + 1 floats.
__device__ __forceinline__ float block_exclusive(float* sums, float total, float* block_total) {
    unsigned t = threadIdx.x, lane = t % 32, warp = t / 32;
    float inclusive = warp_inclusive(total);
    float below = __shfl_up_sync(0xffffffffu, inclusive, 1);
    float in_warp = lane == 0 ? 0.0f : below;
    if (lane == 31) sums[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
        float mine = lane < WARPS ? sums[lane] : 0.0f;
        float scanned = warp_inclusive(mine);
        float below_w = __shfl_up_sync(0xffffffffu, scanned, 1);
        if (lane < WARPS) {
            sums[lane] = lane == 0 ? 0.0f : below_w;
            if (lane == WARPS - 1) sums[WARPS] = scanned;
        }
    }
    __syncthreads();
    *block_total = sums[WARPS];
    return sums[warp] + in_warp;
}

// The thread's 8 elements of a 2048-element tile, 0 past n (kernels::scan::warp_shuffle::load_run).
__device__ __forceinline__ void load_run(const float* input, unsigned tile, unsigned n, float run[PER_THREAD]) {
    unsigned first = tile * TILE_2048 + threadIdx.x * PER_THREAD;
    if (first + PER_THREAD >= first && first + PER_THREAD <= n && ((unsigned long long)input & 15) == 0) {
        float4 a = *(const float4*)(input + first), b = *(const float4*)(input + first + 4);
        run[0] = a.x; run[1] = a.y; run[2] = a.z; run[3] = a.w;
        run[4] = b.x; run[5] = b.y; run[6] = b.z; run[7] = b.w;
    } else {
#pragma unroll
        for (unsigned k = 0; k < PER_THREAD; ++k) {
            unsigned i = first + k < first ? 0xffffffffu : first + k;
            run[k] = i < n ? input[i] : 0.0f;
        }
    }
}

__device__ __forceinline__ float run_total(const float run[PER_THREAD]) {
    float total = 0.0f;
#pragma unroll
    for (unsigned k = 0; k < PER_THREAD; ++k) total += run[k];
    return total;
}

__device__ __forceinline__ void store_run(float* output, unsigned tile, unsigned n, const float run[PER_THREAD],
                                          float prefix, bool exclusive) {
    unsigned first = tile * TILE_2048 + threadIdx.x * PER_THREAD;
    float sum = prefix;
#pragma unroll
    for (unsigned k = 0; k < PER_THREAD; ++k) {
        float before = sum;
        sum = sum + run[k];
        unsigned i = first + k < first ? 0xffffffffu : first + k;
        if (i < n) output[i] = exclusive ? before : sum;
    }
}
