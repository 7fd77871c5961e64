// The tiled matmul of kernels::matmul::tiled, over tiles whose rows are PITCH floats apart: 32 for
// dense tiles, 33 for padded ones. Block 32×32, 2 · 32 · PITCH floats of dynamic shared memory.
#pragma once

#define TILE 32u

template <unsigned PITCH>
__device__ void tiled_matmul(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k) {
    extern __shared__ float shared[];
    float* a_tile = shared;
    float* b_tile = shared + TILE * PITCH;
    unsigned tx = threadIdx.x, ty = threadIdx.y;
    unsigned row = blockIdx.y * TILE + ty;
    unsigned col = blockIdx.x * TILE + tx;
    float sum = 0.0f;
    for (unsigned step = 0; step < (k + TILE - 1) / TILE; ++step) {
        unsigned a_col = step * TILE + tx;
        unsigned b_row = step * TILE + ty;
        a_tile[ty * PITCH + tx] = (row < m && a_col < k) ? a[row * k + a_col] : 0.0f;
        b_tile[ty * PITCH + tx] = (b_row < k && col < n) ? b[b_row * n + col] : 0.0f;
        __syncthreads();
        for (unsigned i = 0; i < TILE; ++i) sum += a_tile[ty * PITCH + i] * b_tile[i * PITCH + tx];
        __syncthreads();
    }
    if (row < m && col < n) c[row * n + col] = sum;
}
