// kernels::rows::warp, the sum: a warp per row.
#include "rows.cuh"
extern "C" __global__ void row_sum_warp_cuda(const float* input, size_t input_len, float* output, size_t output_len,
                                   float* partials, size_t partials_len, unsigned* tickets, size_t tickets_len,
                                   unsigned rows, unsigned cols) {
    row_warp<SumOp>(input, output, rows, cols);
}
