// kernels::histogram::global: one global atomic per byte.
#include "histogram.cuh"
extern "C" __global__ void histogram_global_cuda(const unsigned char* input, size_t input_len, unsigned* bins,
                                                 size_t bins_len, unsigned n) {
    unsigned threads = gridDim.x * THREADS;
    for (unsigned i = blockIdx.x * THREADS + threadIdx.x; i < n; i += threads) atomicAdd(&bins[input[i]], 1u);
}
