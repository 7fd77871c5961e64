// kernels::softmax::three_pass: the row's maximum, the sum of exponentials, the outputs.
#include "softmax.cuh"
extern "C" __global__ void softmax_three_pass_cuda(const float* input, size_t input_len, float* output,
                                                   size_t output_len, unsigned rows, unsigned cols) {
    extern __shared__ float shared[];
    float *maxes = shared, *sums = shared + WARPS;
    unsigned t = threadIdx.x;
    size_t base = (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (unsigned c = t; c < cols; c += THREADS) m = input[base + c] > m ? input[base + c] : m;
    float max = block_max(maxes, m);
    float s = 0.0f;
    for (unsigned c = t; c < cols; c += THREADS) s += fast_exp(input[base + c] - max);
    float sum = block_sum(sums, s);
    for (unsigned c = t; c < cols; c += THREADS) output[base + c] = fast_exp(input[base + c] - max) / sum;
}
