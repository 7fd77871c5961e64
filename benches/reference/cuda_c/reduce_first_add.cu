// kernels::reduce::first_add: two elements (256 apart) added as they are loaded, then the folded tree.
#include "reduce.cuh"
extern "C" __global__ void reduce_first_add_cuda(const float* input, size_t input_len, float* output, size_t output_len,
                                             unsigned* ticket, size_t ticket_len, unsigned n) {
    extern __shared__ float sums[];
    unsigned t = threadIdx.x, i = blockIdx.x * 2 * THREADS + t;
    unsigned second = i + THREADS < i ? 0xffffffffu : i + THREADS;
    sums[t] = element_or_zero(input, i, n) + element_or_zero(input, second, n);
    __syncthreads();
    fold(sums, THREADS / 2, 0);
    if (t == 0) output[blockIdx.x] = sums[0];
}
