// kernels::histogram_f32::shared: bins per block in shared memory, merged once per block.
#include "histogram_f32.cuh"
extern "C" __global__ void histogram_f32_shared_cuda(const float* input, size_t input_len, unsigned* bins, size_t bins_len,
                                                     unsigned n, float lo, float hi) {
    extern __shared__ unsigned counts[];
    unsigned t = threadIdx.x;
    counts[t] = 0;
    __syncthreads();
    float scale = bin_scale(lo, hi);
    unsigned threads = gridDim.x * THREADS;
    for (unsigned i = blockIdx.x * THREADS + t; i < n; i += threads) {
        int b = bin_of(input[i], lo, hi, scale);
        if (b >= 0) atomicAdd(&counts[b], 1u);
    }
    __syncthreads();
    unsigned count = counts[t];
    if (count != 0) atomicAdd(&bins[t], count);
}
