// The vectorised transpose with 32×32 tiles (kernels::transpose::vectorized, KERNEL_32).
#include "transpose_vectorized.cuh"

extern "C" __global__ void transpose_vectorized_t32_cuda(const float* input, size_t input_len, float* output, size_t output_len,
                                                         unsigned rows, unsigned cols) {
    vectorized_transpose<32>(input, output, rows, cols);
}
