// kernels::softmax::online: running maximum and sum in one read, then the outputs.
#include "softmax.cuh"
extern "C" __global__ void softmax_online_cuda(const float* input, size_t input_len, float* output, size_t output_len,
                                               unsigned rows, unsigned cols) {
    extern __shared__ float shared[];
    unsigned t = threadIdx.x;
    size_t base = (size_t)blockIdx.x * cols;
    Running r = RUNNING_EMPTY;
    for (unsigned c = t; c < cols; c += THREADS) r = running_add(r, input[base + c]);
    Running row = block_running(shared, shared + WARPS, r);
    for (unsigned c = t; c < cols; c += THREADS) output[base + c] = fast_exp(input[base + c] - row.max) / row.sum;
}
