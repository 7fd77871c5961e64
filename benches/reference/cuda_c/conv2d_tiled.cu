// Tiled convolution (kernels::conv2d::tiled): the 32×32 output tile's input with its halo, and the
// filter, in shared memory; 32×8 threads, four outputs each.
#include "conv2d.cuh"

#define TILE 32u
#define ROWS_PER_PASS 8u
#define HALO_TILE (TILE + 2 * MAX_RADIUS)

template <unsigned R>
__device__ void tile_body(const float* image, const float* filter, float* output, unsigned height, unsigned width) {
    extern __shared__ float shared[];
    float* input = shared;
    float* weights = shared + HALO_TILE * HALO_TILE;
    unsigned tx = threadIdx.x, ty = threadIdx.y;
    unsigned t = ty * TILE + tx;
    const unsigned side = 2 * R + 1, wide = TILE + 2 * R;
    unsigned y0 = blockIdx.y * TILE, x0 = blockIdx.x * TILE;
    for (unsigned i = t; i < wide * wide; i += TILE * ROWS_PER_PASS) {
        unsigned r = i / wide, c = i % wide;
        unsigned row = y0 + r - R, col = x0 + c - R;
        input[r * HALO_TILE + c] = (row < height && col < width) ? image[row * width + col] : 0.0f;
    }
    if (t < side * side) weights[t] = filter[t];
    __syncthreads();
#pragma unroll
    for (unsigned pass = 0; pass < TILE / ROWS_PER_PASS; ++pass) {
        unsigned r = ty + pass * ROWS_PER_PASS;
        unsigned y = y0 + r, x = x0 + tx;
        float sum = 0.0f;
#pragma unroll
        for (unsigned i = 0; i < side; ++i)
#pragma unroll
            for (unsigned j = 0; j < side; ++j) sum += weights[i * side + j] * input[(r + i) * HALO_TILE + tx + j];
        if (y < height && x < width) output[y * width + x] = sum;
    }
}

extern "C" __global__ void conv2d_tiled_cuda(const float* image, size_t image_len, const float* filter,
                                             size_t filter_len, float* output, size_t output_len, unsigned height,
                                             unsigned width, unsigned radius) {
    WITH_RADIUS(radius, tile_body<R>(image, filter, output, height, width))
}
