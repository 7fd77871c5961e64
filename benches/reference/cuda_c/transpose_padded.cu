// Transpose through a 32×33 (padded) shared tile (kernels::transpose::padded).
#include "transpose_tiles.cuh"

extern "C" __global__ void transpose_padded_cuda(const float* input, size_t input_len, float* output, size_t output_len,
                                                 unsigned rows, unsigned cols) {
    tiled_transpose<TILE + 1, false>(input, output, rows, cols);
}
