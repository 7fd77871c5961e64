// kernels::reduce::strided: the tree with the working threads packed (thread t adds at 2st).
#include "reduce.cuh"
extern "C" __global__ void reduce_strided_cuda(const float* input, size_t input_len, float* output, size_t output_len,
                                             unsigned* ticket, size_t ticket_len, unsigned n) {
    extern __shared__ float sums[];
    unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    sums[t] = i < n ? input[i] : 0.0f;
    __syncthreads();
    for (unsigned s = 1; s < THREADS; s *= 2) {
        unsigned at = 2 * s * t;
        if (at < THREADS) sums[at] = sums[at] + sums[at + s];
        __syncthreads();
    }
    if (t == 0) output[blockIdx.x] = sums[0];
}
