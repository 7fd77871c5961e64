// kernels::reduce::warp_shuffle: the first add, the folded tree down to 64 sums, then shuffles in warp 0.
#include "reduce.cuh"
extern "C" __global__ void reduce_warp_shuffle_cuda(const float* input, size_t input_len, float* output, size_t output_len,
                                             unsigned* ticket, size_t ticket_len, unsigned n) {
    extern __shared__ float sums[];
    unsigned t = threadIdx.x, i = blockIdx.x * 2 * THREADS + t;
    unsigned second = i + THREADS < i ? 0xffffffffu : i + THREADS;
    sums[t] = element_or_zero(input, i, n) + element_or_zero(input, second, n);
    __syncthreads();
    fold(sums, THREADS / 2, 32);
    if (t < 32) {
        float sum = warp_sum(sums[t] + sums[t + 32]);
        if (t == 0) output[blockIdx.x] = sum;
    }
}
