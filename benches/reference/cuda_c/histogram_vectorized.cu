// kernels::histogram::vectorized: bins per warp, 16 bytes per load.
#include "histogram.cuh"
#define WARPS (THREADS / 32u)
extern "C" __global__ void histogram_vectorized_cuda(const unsigned char* input, size_t input_len, unsigned* bins,
                                                     size_t bins_len, unsigned n) {
    extern __shared__ unsigned counts[];
    unsigned t = threadIdx.x, mine = t / 32 * BINS;
#pragma unroll
    for (unsigned w = 0; w < WARPS; ++w) counts[w * THREADS + t] = 0;
    __syncthreads();
    unsigned threads = gridDim.x * THREADS, g = blockIdx.x * THREADS + t;
    if (((unsigned long long)input & 15) == 0) {
        unsigned vectors = n / 16;
        const uint4* words = (const uint4*)input;
        for (unsigned v = g; v < vectors; v += threads) {
            uint4 loaded = words[v];
            unsigned parts[4] = {loaded.x, loaded.y, loaded.z, loaded.w};
#pragma unroll
            for (unsigned w = 0; w < 4; ++w)
#pragma unroll
                for (unsigned k = 0; k < 4; ++k) atomicAdd(&counts[mine + ((parts[w] >> (8 * k)) & 0xffu)], 1u);
        }
        unsigned tail = 16 * vectors + g;
        if (tail < n) atomicAdd(&counts[mine + input[tail]], 1u);
    } else {
        for (unsigned i = g; i < n; i += threads) atomicAdd(&counts[mine + input[i]], 1u);
    }
    __syncthreads();
    unsigned total = 0;
#pragma unroll
    for (unsigned w = 0; w < WARPS; ++w) total += counts[w * BINS + t];
    if (total != 0) atomicAdd(&bins[t], total);
}
