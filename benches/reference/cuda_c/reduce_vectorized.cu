// kernels::reduce::vectorized: a grid of at most the resident blocks, float4 walks, one block sum each.
#include "reduce.cuh"
extern "C" __global__ void reduce_vectorized_cuda(const float* input, size_t input_len, float* output, size_t output_len,
                                             unsigned* ticket, size_t ticket_len, unsigned n) {
    extern __shared__ float sums[];
    float total = block_sum(sums, thread_sum(input, n));
    if (threadIdx.x == 0) output[blockIdx.x] = total;
}
