// kernels::histogram_f32::global: one global atomic per sample in range.
#include "histogram_f32.cuh"
extern "C" __global__ void histogram_f32_global_cuda(const float* input, size_t input_len, unsigned* bins, size_t bins_len,
                                                     unsigned n, float lo, float hi) {
    float scale = bin_scale(lo, hi);
    unsigned threads = gridDim.x * THREADS;
    for (unsigned i = blockIdx.x * THREADS + threadIdx.x; i < n; i += threads) {
        int b = bin_of(input[i], lo, hi, scale);
        if (b >= 0) atomicAdd(&bins[b], 1u);
    }
}
