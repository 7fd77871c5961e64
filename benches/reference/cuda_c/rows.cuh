// Pieces shared by the row-reduction twins (kernels::rows): a block of 256 threads per row, or a
// warp per row (8 per block); SUM or MAX as the combining operation (kernels::reduce::Combine).
#pragma once
#include <math.h>

#define THREADS 256u
#define WARPS (THREADS / 32u)

struct SumOp {
    static __device__ __forceinline__ float identity() { return 0.0f; }
    static __device__ __forceinline__ float combine(float a, float b) { return a + b; }
};

struct MaxOp {
    static __device__ __forceinline__ float identity() { return -INFINITY; }
    // NaN when either is, as the Rust twin: one max.NaN.f32 (b > a alone drops a NaN that comes
    // second; fmaxf drops any).
    static __device__ __forceinline__ float combine(float a, float b) {
        float larger;
        asm("max.NaN.f32 %0, %1, %2;" : "=f"(larger) : "f"(a), "f"(b));
        return larger;
    }
};

template <typename Op>
__device__ __forceinline__ float warp_combine(float value) {
    for (unsigned mask = 16; mask > 0; mask /= 2) value = Op::combine(value, __shfl_xor_sync(0xffffffffu, value, mask));
    return value;
}

template <typename Op>
__device__ __forceinline__ void row_block(const float* input, float* output, unsigned cols) {
    extern __shared__ float partials[];
    unsigned row = blockIdx.x, t = threadIdx.x, warp = t / 32, lane = t % 32;
    size_t base = (size_t)row * cols;
    float mine = Op::identity();
    for (unsigned c = t; c < cols; c += THREADS) mine = Op::combine(mine, input[base + c]);
    float value = warp_combine<Op>(mine);
    if (lane == 0) partials[warp] = value;
    __syncthreads();
    if (warp == 0) {
        float total = warp_combine<Op>(lane < WARPS ? partials[lane] : Op::identity());
        if (t == 0) output[row] = total;
    }
}

template <typename Op>
__device__ __forceinline__ void row_warp(const float* input, float* output, unsigned rows, unsigned cols) {
    unsigned row = blockIdx.x * WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows) return;
    size_t base = (size_t)row * cols;
    float mine = Op::identity();
    for (unsigned c = lane; c < cols; c += 32) mine = Op::combine(mine, input[base + c]);
    float total = warp_combine<Op>(mine);
    if (lane == 0) output[row] = total;
}
