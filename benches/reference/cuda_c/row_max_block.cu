// kernels::rows::block, the max: a block per row.
#include "rows.cuh"
extern "C" __global__ void row_max_block_cuda(const float* input, size_t input_len, float* output, size_t output_len,
                                   float* partials, size_t partials_len, unsigned* tickets, size_t tickets_len,
                                   unsigned rows, unsigned cols) {
    row_block<MaxOp>(input, output, cols);
}
