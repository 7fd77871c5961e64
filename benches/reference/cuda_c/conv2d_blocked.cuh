// The register-blocked convolution of kernels::conv2d::blocked: each of 32×8 threads computes V
// consecutive outputs of one column, the filter in registers (up to 5×5), each input row it loads
// from the shared tile used by every output it feeds.
#pragma once
#include "conv2d.cuh"

#define WIDTH 32u
#define THREAD_ROWS 8u

template <unsigned V, unsigned R>
__device__ void strip_body(const float* image, const float* filter, float* output, unsigned height, unsigned width) {
    extern __shared__ float input[];
    const unsigned pitch = WIDTH + 2 * MAX_RADIUS;
    unsigned tx = threadIdx.x, ty = threadIdx.y;
    unsigned t = ty * WIDTH + tx;
    const unsigned side = 2 * R + 1, tall = THREAD_ROWS * V + 2 * R, wide = WIDTH + 2 * R;
    unsigned y0 = blockIdx.y * THREAD_ROWS * V, x0 = blockIdx.x * WIDTH;
    // The filter in registers up to 5×5; a 7×7 filter is read where it is used (from the L1).
    const bool in_registers = R <= 2;
    float weights[in_registers ? side : 1][in_registers ? side : 1];
    if (in_registers) {
#pragma unroll
        for (unsigned i = 0; i < side; ++i)
#pragma unroll
            for (unsigned j = 0; j < side; ++j) weights[in_registers ? i : 0][in_registers ? j : 0] = filter[i * side + j];
    }
    for (unsigned i = t; i < tall * wide; i += WIDTH * THREAD_ROWS) {
        unsigned r = i / wide, c = i % wide;
        unsigned row = y0 + r - R, col = x0 + c - R;
        input[r * pitch + c] = (row < height && col < width) ? image[row * width + col] : 0.0f;
    }
    __syncthreads();
    unsigned first = ty * V;
    float sums[V];
#pragma unroll
    for (unsigned o = 0; o < V; ++o) sums[o] = 0.0f;
    // One input row of the thread's window feeds every output in [low, high) it is a row of the
    // window of.
    auto input_row = [&](unsigned r, unsigned low, unsigned high) {
        float values[side];
#pragma unroll
        for (unsigned j = 0; j < side; ++j) values[j] = input[(first + r) * pitch + tx + j];
#pragma unroll
        for (unsigned o = 0; o < V; ++o)
            if (low <= o && o < high && r >= o && r - o < side)
#pragma unroll
                for (unsigned j = 0; j < side; ++j)
                    sums[o] += (in_registers ? weights[in_registers ? r - o : 0][in_registers ? j : 0]
                                             : filter[(r - o) * side + j]) * values[j];
    };
    // Rows written out up to 5×5; at 7×7 four outputs at a time, their rows one at a time, as in
    // the Rust kernel.
    if (in_registers) {
#pragma unroll
        for (unsigned r = 0; r < V + 2 * R; ++r) input_row(r, 0, V);
    } else {
#pragma unroll 1
        for (unsigned low = 0; low < V; low += 4)
#pragma unroll 1
            for (unsigned r = low; r < low + 4 + 2 * R; ++r) input_row(r, low, low + 4);
    }
#pragma unroll
    for (unsigned o = 0; o < V; ++o) {
        unsigned y = y0 + first + o, x = x0 + tx;
        if (y < height && x < width) output[y * width + x] = sums[o];
    }
}
