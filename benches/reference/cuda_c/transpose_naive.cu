// Transpose with no shared memory (kernels::transpose::naive): reads coalesced, writes strided.
// Block 32×8, each thread 4 rows of one column of a 32×32 tile.
#define TILE 32u
#define ROWS_PER_PASS 8u

extern "C" __global__ void transpose_naive_cuda(const float* input, size_t input_len, float* output, size_t output_len,
                                                unsigned rows, unsigned cols) {
    unsigned col = blockIdx.x * TILE + threadIdx.x;
    unsigned first_row = blockIdx.y * TILE + threadIdx.y;
    if (col < cols) {
#pragma unroll
        for (unsigned pass = 0; pass < TILE / ROWS_PER_PASS; ++pass) {
            unsigned row = first_row + pass * ROWS_PER_PASS;
            if (row < rows) output[col * rows + row] = input[row * cols + col];
        }
    }
}
