// kernels::histogram_f32::warp_bins: bins per warp, four samples per 16-byte load.
#include "histogram_f32.cuh"
#define WARPS (THREADS / 32u)
extern "C" __global__ void histogram_f32_warp_bins_cuda(const float* input, size_t input_len, unsigned* bins, size_t bins_len,
                                                        unsigned n, float lo, float hi) {
    extern __shared__ unsigned counts[];
    unsigned t = threadIdx.x, mine = t / 32 * BINS;
#pragma unroll
    for (unsigned w = 0; w < WARPS; ++w) counts[w * THREADS + t] = 0;
    __syncthreads();
    float scale = bin_scale(lo, hi);
    unsigned threads = gridDim.x * THREADS, g = blockIdx.x * THREADS + t;
    unsigned vectors = ((unsigned long long)input & 15) == 0 ? n / 4 : 0;
    for (unsigned v = g; v < vectors; v += threads) {
        float4 four = ((const float4*)input)[v];
        float parts[4] = {four.x, four.y, four.z, four.w};
#pragma unroll
        for (unsigned k = 0; k < 4; ++k) {
            int b = bin_of(parts[k], lo, hi, scale);
            if (b >= 0) atomicAdd(&counts[mine + b], 1u);
        }
    }
    for (unsigned i = 4 * vectors + g; i < n; i += threads) {
        int b = bin_of(input[i], lo, hi, scale);
        if (b >= 0) atomicAdd(&counts[mine + b], 1u);
    }
    __syncthreads();
    unsigned total = 0;
#pragma unroll
    for (unsigned w = 0; w < WARPS; ++w) total += counts[w * BINS + t];
    if (total != 0) atomicAdd(&bins[t], total);
}
