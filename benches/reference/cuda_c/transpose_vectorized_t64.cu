// The vectorised transpose with 64×64 tiles (kernels::transpose::vectorized, KERNEL_64).
#include "transpose_vectorized.cuh"

extern "C" __global__ void transpose_vectorized_t64_cuda(const float* input, size_t input_len, float* output, size_t output_len,
                                                         unsigned rows, unsigned cols) {
    vectorized_transpose<64>(input, output, rows, cols);
}
