// Direct convolution (kernels::conv2d::direct): one thread per output, block 32×8.
#include "conv2d.cuh"

template <unsigned R>
__device__ float pixel(const float* image, const float* filter, unsigned height, unsigned width, unsigned y, unsigned x) {
    const unsigned side = 2 * R + 1;
    float sum = 0.0f;
#pragma unroll
    for (unsigned i = 0; i < side; ++i) {
        unsigned row = y + i;
        if (row < R || row >= height + R) continue;
#pragma unroll
        for (unsigned j = 0; j < side; ++j) {
            unsigned col = x + j;
            if (col < R || col >= width + R) continue;
            sum += filter[i * side + j] * image[(row - R) * width + col - R];
        }
    }
    return sum;
}

extern "C" __global__ void conv2d_direct_cuda(const float* image, size_t image_len, const float* filter,
                                              size_t filter_len, float* output, size_t output_len, unsigned height,
                                              unsigned width, unsigned radius) {
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
    if (y < height && x < width) {
        float sum;
        WITH_RADIUS(radius, sum = pixel<R>(image, filter, height, width, y, x))
        output[y * width + x] = sum;
    }
}
