// Transpose through a dense 32×32 tile with XOR-swizzled columns (kernels::transpose::swizzled).
#include "transpose_tiles.cuh"

extern "C" __global__ void transpose_swizzled_cuda(const float* input, size_t input_len, float* output, size_t output_len,
                                                   unsigned rows, unsigned cols) {
    tiled_transpose<TILE, true>(input, output, rows, cols);
}
