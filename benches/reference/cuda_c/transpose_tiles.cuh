// The tiled transposes of kernels::transpose::{tiled, padded, swizzled}: a 32×32 tile, 32×8
// threads, each moving 4 elements each way; rows are PITCH floats apart and element (r, c) is
// stored in column COLUMN(r, c).
#pragma once

#define TILE 32u
#define ROWS_PER_PASS 8u

template <unsigned PITCH, bool SWIZZLE>
__device__ void tiled_transpose(const float* input, float* output, unsigned rows, unsigned cols) {
    extern __shared__ float tile[];
    unsigned x = threadIdx.x, y = threadIdx.y;
    unsigned tile_row = blockIdx.y * TILE, tile_col = blockIdx.x * TILE;
#pragma unroll
    for (unsigned pass = 0; pass < TILE / ROWS_PER_PASS; ++pass) {
        unsigned r = y + pass * ROWS_PER_PASS, c = x;
        unsigned row = tile_row + r, col = tile_col + c;
        if (row < rows && col < cols) tile[r * PITCH + (SWIZZLE ? c ^ r : c)] = input[row * cols + col];
    }
    __syncthreads();
#pragma unroll
    for (unsigned pass = 0; pass < TILE / ROWS_PER_PASS; ++pass) {
        unsigned r = x, c = y + pass * ROWS_PER_PASS;
        unsigned row = tile_row + r, col = tile_col + c;
        if (row < rows && col < cols) output[col * rows + row] = tile[r * PITCH + (SWIZZLE ? c ^ r : c)];
    }
}
