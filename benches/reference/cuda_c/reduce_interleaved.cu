// kernels::reduce::interleaved: the tree with interleaved addressing (t % 2s == 0 adds).
#include "reduce.cuh"
extern "C" __global__ void reduce_interleaved_cuda(const float* input, size_t input_len, float* output, size_t output_len,
                                             unsigned* ticket, size_t ticket_len, unsigned n) {
    extern __shared__ float sums[];
    unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    sums[t] = i < n ? input[i] : 0.0f;
    __syncthreads();
    for (unsigned s = 1; s < THREADS; s *= 2) {
        if (t % (2 * s) == 0) sums[t] = sums[t] + sums[t + s];
        __syncthreads();
    }
    if (t == 0) output[blockIdx.x] = sums[0];
}
