// kernels::histogram::aggregated: bins per warp, lanes with equal bytes counted by one atomic.
#include "histogram.cuh"
#define WARPS (THREADS / 32u)
__device__ __forceinline__ void count(unsigned* counts, unsigned mine, unsigned lane, unsigned byte) {
    unsigned peers = __match_any_sync(0xffffffffu, byte);
    if (byte < BINS && __ffs(peers) - 1 == (int)lane) atomicAdd(&counts[mine + byte], __popc(peers));
}
extern "C" __global__ void histogram_aggregated_cuda(const unsigned char* input, size_t input_len, unsigned* bins,
                                                     size_t bins_len, unsigned n) {
    extern __shared__ unsigned counts[];
    unsigned t = threadIdx.x, lane = t % 32, mine = t / 32 * BINS;
#pragma unroll
    for (unsigned w = 0; w < WARPS; ++w) counts[w * THREADS + t] = 0;
    __syncthreads();
    unsigned threads = gridDim.x * THREADS, g = blockIdx.x * THREADS + t, warp_first = g - lane;
    unsigned vectors = ((unsigned long long)input & 15) == 0 ? n / 16 : 0;
    const uint4* words = (const uint4*)input;
    for (unsigned v = warp_first; v < vectors; v += threads) {
        bool has = v + lane < vectors;
        uint4 loaded = has ? words[v + lane] : make_uint4(0, 0, 0, 0);
        unsigned parts[4] = {loaded.x, loaded.y, loaded.z, loaded.w};
#pragma unroll
        for (unsigned w = 0; w < 4; ++w)
#pragma unroll
            for (unsigned k = 0; k < 4; ++k) count(counts, mine, lane, has ? (parts[w] >> (8 * k)) & 0xffu : BINS);
    }
    for (unsigned i = 16 * vectors + warp_first; i < n; i += threads)
        count(counts, mine, lane, i + lane < n ? input[i + lane] : BINS);
    __syncthreads();
    unsigned total = 0;
#pragma unroll
    for (unsigned w = 0; w < WARPS; ++w) total += counts[w * BINS + t];
    if (total != 0) atomicAdd(&bins[t], total);
}
