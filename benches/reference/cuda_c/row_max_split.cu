// kernels::rows::split, the max: a block per piece of a row, the pieces combined by the row's last
// block.
#include "rows.cuh"
// Eight blocks per SM, as the Rust kernel's registers allow.
extern "C" __global__ void __launch_bounds__(THREADS, 8)
    row_max_split_cuda(const float* input, size_t input_len, float* output, size_t output_len,
                                   float* partials, size_t partials_len, unsigned* tickets, size_t tickets_len,
                                   unsigned rows, unsigned cols) {
    row_split<MaxOp>(input, output, partials, tickets, rows, cols);
}
