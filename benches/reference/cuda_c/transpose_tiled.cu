// Transpose through a dense 32×32 shared tile (kernels::transpose::tiled).
#include "transpose_tiles.cuh"

extern "C" __global__ void transpose_tiled_cuda(const float* input, size_t input_len, float* output, size_t output_len,
                                                unsigned rows, unsigned cols) {
    tiled_transpose<TILE, false>(input, output, rows, cols);
}
