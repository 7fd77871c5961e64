// kernels::rows::block, the max: a block per row.
#include "rows.cuh"
extern "C" __global__ void row_max_block_cuda(const float* input, float* output, unsigned rows, unsigned cols) {
    row_block<MaxOp>(input, output, cols);
}
