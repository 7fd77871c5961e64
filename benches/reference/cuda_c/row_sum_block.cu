// kernels::rows::block, the sum: a block per row.
#include "rows.cuh"
extern "C" __global__ void row_sum_block_cuda(const float* input, float* output, unsigned rows, unsigned cols) {
    row_block<SumOp>(input, output, cols);
}
