// kernels::reduce::sequential: the tree folded in halves (thread t < s adds t + s).
#include "reduce.cuh"
extern "C" __global__ void reduce_sequential_cuda(const float* input, size_t input_len, float* output, size_t output_len,
                                             unsigned* ticket, size_t ticket_len, unsigned n) {
    extern __shared__ float sums[];
    unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    sums[t] = i < n ? input[i] : 0.0f;
    __syncthreads();
    fold(sums, THREADS / 2, 0);
    if (t == 0) output[blockIdx.x] = sums[0];
}
