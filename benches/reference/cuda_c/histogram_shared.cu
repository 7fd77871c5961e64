// kernels::histogram::shared: bins per block in shared memory, merged once per block.
#include "histogram.cuh"
extern "C" __global__ void histogram_shared_cuda(const unsigned char* input, size_t input_len, unsigned* bins,
                                                 size_t bins_len, unsigned n) {
    extern __shared__ unsigned counts[];
    unsigned t = threadIdx.x;
    counts[t] = 0;
    __syncthreads();
    unsigned threads = gridDim.x * THREADS;
    for (unsigned i = blockIdx.x * THREADS + t; i < n; i += threads) atomicAdd(&counts[input[i]], 1u);
    __syncthreads();
    unsigned count = counts[t];
    if (count != 0) atomicAdd(&bins[t], count);
}
