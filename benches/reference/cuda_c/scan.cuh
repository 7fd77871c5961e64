// Pieces shared by the scan twins (kernels::scan): 256 threads; phase 0 scans tiles (or resets
// the look-back's statuses), phase 1 adds the tiles' prefixes (or runs the look-back scan).
#pragma once

#define THREADS 256u
#define WARPS (THREADS / 32u)
#define RUNS 4u
#define PER_THREAD (4u * RUNS)
#define SCAN_TILE (PER_THREAD * THREADS)

// The warp's inclusive scan by shuffles up (kernels::scan::warp_inclusive).
__device__ __forceinline__ float warp_inclusive(float value) {
    unsigned lane = threadIdx.x % 32;
    for (unsigned d = 1; d < 32; d *= 2) {
        float below = __shfl_up_sync(0xffffffffu, value, d);
        if (lane >= d) value = below + value;
    }
    return value;
}

// Each run's exclusive prefix over the block, and the block's total (kernels::scan::block_exclusive):
// warp by warp, run 0 of every lane before run 1; sums holds WARPS + 1 floats.
__device__ __forceinline__ void block_exclusive(float* sums, const float totals[RUNS], float prefixes[RUNS],
                                                float* block_total) {
    unsigned t = threadIdx.x, lane = t % 32, warp = t / 32;
    float warp_total = 0.0f;
#pragma unroll
    for (unsigned c = 0; c < RUNS; ++c) {
        float inclusive = warp_inclusive(totals[c]);
        float below = __shfl_up_sync(0xffffffffu, inclusive, 1);
        float before = lane == 0 ? 0.0f : below;
        float all = __shfl_sync(0xffffffffu, inclusive, 31);
        if (c == 0) {
            prefixes[0] = before;
            warp_total = all;
        } else {
            prefixes[c] = warp_total + before;
            warp_total = warp_total + all;
        }
    }
    if (lane == 31) sums[warp] = warp_total;
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
    float warp_prefix = sums[warp];
#pragma unroll
    for (unsigned c = 0; c < RUNS; ++c) prefixes[c] = warp_prefix + prefixes[c];
}

// Where the thread's run c of a tile starts: runs of 4 striped across the warp
// (kernels::scan::warp_shuffle::run_start); saturates past 2^32 - 1.
__device__ __forceinline__ unsigned run_start(unsigned tile, unsigned c) {
    unsigned in_tile = (threadIdx.x / 32) * (32 * PER_THREAD) + c * 128 + 4 * (threadIdx.x % 32);
    unsigned base = tile * SCAN_TILE;
    return base + in_tile < base ? 0xffffffffu : base + in_tile;
}

__device__ __forceinline__ unsigned saturating_add(unsigned a, unsigned b) { return a + b < a ? 0xffffffffu : a + b; }

// The thread's runs of a tile, 0 past n (kernels::scan::warp_shuffle::load_run).
__device__ __forceinline__ void load_run(const float* input, unsigned tile, unsigned n, float run[PER_THREAD]) {
    bool vector = ((unsigned long long)input & 15) == 0;
#pragma unroll
    for (unsigned c = 0; c < RUNS; ++c) {
        unsigned first = run_start(tile, c);
        if (vector && first + 4 >= first && first + 4 <= n) {
            float4 a = *(const float4*)(input + first);
            run[4 * c] = a.x; run[4 * c + 1] = a.y; run[4 * c + 2] = a.z; run[4 * c + 3] = a.w;
        } else {
#pragma unroll
            for (unsigned k = 0; k < 4; ++k) {
                unsigned i = saturating_add(first, k);
                run[4 * c + k] = i < n ? input[i] : 0.0f;
            }
        }
    }
}

// Writes the thread's runs laid out as load_run reads them (kernels::scan::warp_shuffle::write_runs).
__device__ __forceinline__ void write_runs(float* output, unsigned tile, unsigned n, const float values[PER_THREAD]) {
    bool vector = ((unsigned long long)output & 15) == 0;
#pragma unroll
    for (unsigned c = 0; c < RUNS; ++c) {
        unsigned first = run_start(tile, c);
        if (vector && first + 4 >= first && first + 4 <= n) {
            *(float4*)(output + first) = make_float4(values[4 * c], values[4 * c + 1], values[4 * c + 2], values[4 * c + 3]);
        } else {
#pragma unroll
            for (unsigned k = 0; k < 4; ++k) {
                unsigned i = saturating_add(first, k);
                if (i < n) output[i] = values[4 * c + k];
            }
        }
    }
}

__device__ __forceinline__ void run_totals(const float run[PER_THREAD], float totals[RUNS]) {
#pragma unroll
    for (unsigned c = 0; c < RUNS; ++c) {
        float total = 0.0f;
#pragma unroll
        for (unsigned k = 0; k < 4; ++k) total += run[4 * c + k];
        totals[c] = total;
    }
}

// Each run scanned on top of its prefix, inclusive or exclusive (kernels::scan::warp_shuffle::store_run).
__device__ __forceinline__ void store_run(float* output, unsigned tile, unsigned n, const float run[PER_THREAD],
                                          const float prefixes[RUNS], bool exclusive) {
    float scanned[PER_THREAD];
#pragma unroll
    for (unsigned c = 0; c < RUNS; ++c) {
        float sum = prefixes[c];
#pragma unroll
        for (unsigned k = 0; k < 4; ++k) {
            float before = sum;
            sum = sum + run[4 * c + k];
            scanned[4 * c + k] = exclusive ? before : sum;
        }
    }
    write_runs(output, tile, n, scanned);
}
