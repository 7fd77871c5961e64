// Pieces shared by the softmax twins (kernels::softmax): one block of 256 threads per row, e^x as
// ex2.approx.ftz of x·log2(e) (kernels::device::exp), running (maximum, sum) pairs.
#pragma once
#include <math.h>

#define THREADS 256u
#define WARPS (THREADS / 32u)

__device__ __forceinline__ float fast_exp(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x * 1.44269504088896340736f));
    return y;
}

struct Running {
    float max, sum;
};

__device__ __forceinline__ Running running_add(Running r, float x) {
    if (x > r.max) return {x, r.sum * fast_exp(r.max - x) + 1.0f};
    return {r.max, r.sum + fast_exp(x - r.max)};
}

__device__ __forceinline__ Running running_merge(Running a, Running b) {
    if (b.max == -INFINITY) return a;
    if (a.max == -INFINITY) return b;
    float max = b.max > a.max ? b.max : a.max;
    return {max, a.sum * fast_exp(a.max - max) + b.sum * fast_exp(b.max - max)};
}

// kernels::softmax::block_running: butterfly per warp, warps' pairs through shared memory.
__device__ __forceinline__ Running block_running(float* maxes, float* sums, Running r) {
    for (unsigned mask = 16; mask > 0; mask /= 2)
        r = running_merge(r, {__shfl_xor_sync(0xffffffffu, r.max, mask), __shfl_xor_sync(0xffffffffu, r.sum, mask)});
    unsigned warp = threadIdx.x / 32;
    if (threadIdx.x % 32 == 0) {
        maxes[warp] = r.max;
        sums[warp] = r.sum;
    }
    __syncthreads();
    Running all = {-INFINITY, 0.0f};
    for (unsigned w = 0; w < WARPS; ++w) all = running_merge(all, {maxes[w], sums[w]});
    __syncthreads();
    return all;
}

__device__ __forceinline__ float block_max(float* maxes, float m) {
    for (unsigned mask = 16; mask > 0; mask /= 2) {
        float other = __shfl_xor_sync(0xffffffffu, m, mask);
        m = other > m ? other : m;
    }
    if (threadIdx.x % 32 == 0) maxes[threadIdx.x / 32] = m;
    __syncthreads();
    float all = -INFINITY;
    for (unsigned w = 0; w < WARPS; ++w) all = maxes[w] > all ? maxes[w] : all;
    __syncthreads();
    return all;
}

__device__ __forceinline__ float block_sum(float* sums, float s) {
    for (unsigned mask = 16; mask > 0; mask /= 2) s += __shfl_xor_sync(0xffffffffu, s, mask);
    if (threadIdx.x % 32 == 0) sums[threadIdx.x / 32] = s;
    __syncthreads();
    float all = 0.0f;
    for (unsigned w = 0; w < WARPS; ++w) all += sums[w];
    __syncthreads();
    return all;
}
