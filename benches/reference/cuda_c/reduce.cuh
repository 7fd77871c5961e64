// Pieces shared by the reduction twins (kernels::reduce): 256 threads per block, one partial sum
// per block into output[blockIdx.x] (the one-pass kernel: output[1 + b], the total in output[0]).
// The Rust kernels take typed views of global memory, each a pointer and its length as two PTX
// parameters (ptxkit::KernelParam): the twins take the same (`input, input_len, ...`), so that one
// launch passes both.
#pragma once

#define THREADS 256u
#define WARPS (THREADS / 32u)
#define LOADS_IN_FLIGHT 4u

// The warp's sum in every lane: a butterfly of xor-shuffles (kernels::reduce::warp_sum).
__device__ __forceinline__ float warp_sum(float value) {
    for (unsigned mask = 16; mask > 0; mask /= 2) value += __shfl_xor_sync(0xffffffffu, value, mask);
    return value;
}

// The block's sum, valid in thread 0: warp sums through `sums`, then warp 0 (kernels::reduce::block_sum).
__device__ __forceinline__ float block_sum(float* sums, float value) {
    unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    value = warp_sum(value);
    if (lane == 0) sums[warp] = value;
    __syncthreads();
    float total = 0.0f;
    if (warp == 0) total = warp_sum(lane < WARPS ? sums[lane] : 0.0f);
    return total;
}

// The folded tree over one partial sum per thread, from step `first` down to step `last` (kernels::reduce::sequential).
__device__ __forceinline__ void fold(float* sums, unsigned first, unsigned last) {
    unsigned t = threadIdx.x;
    for (unsigned s = first; s > last; s /= 2) {
        if (t < s) sums[t] = sums[t] + sums[t + s];
        __syncthreads();
    }
}

__device__ __forceinline__ float element_or_zero(const float* input, unsigned i, unsigned n) {
    return i < n ? input[i] : 0.0f;
}

// This thread's share, walked in float4s a grid apart, four in flight (kernels::reduce::vectorized::thread_sum).
__device__ __forceinline__ float thread_sum(const float* input, unsigned n) {
    unsigned threads = gridDim.x * THREADS;
    unsigned g = blockIdx.x * THREADS + threadIdx.x;
    float lanes[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (((unsigned long long)input & 15) == 0) {
        unsigned quads = n / 4;
        unsigned q = g;
        const float4* vectors = (const float4*)input;
        for (; q + (LOADS_IN_FLIGHT - 1) * threads < quads; q += LOADS_IN_FLIGHT * threads) {
            float4 loaded[LOADS_IN_FLIGHT];
#pragma unroll
            for (unsigned k = 0; k < LOADS_IN_FLIGHT; ++k) loaded[k] = vectors[q + k * threads];
#pragma unroll
            for (unsigned k = 0; k < LOADS_IN_FLIGHT; ++k) {
                lanes[0] += loaded[k].x;
                lanes[1] += loaded[k].y;
                lanes[2] += loaded[k].z;
                lanes[3] += loaded[k].w;
            }
        }
        for (; q < quads; q += threads) {
            float4 value = vectors[q];
            lanes[0] += value.x;
            lanes[1] += value.y;
            lanes[2] += value.z;
            lanes[3] += value.w;
        }
        unsigned tail = 4 * quads + g;
        if (tail < n) lanes[0] += input[tail];
    } else {
        for (unsigned i = g; i < n; i += threads) lanes[0] += input[i];
    }
    return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}
