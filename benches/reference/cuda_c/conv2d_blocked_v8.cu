// Register-blocked convolution, 8 outputs per thread (kernels::conv2d::blocked, KERNEL_V8).
#include "conv2d_blocked.cuh"

extern "C" __global__ void __launch_bounds__(256, 3)
    conv2d_blocked_v8_cuda(const float* image, size_t image_len, const float* filter, size_t filter_len, float* output,
                           size_t output_len, unsigned height, unsigned width, unsigned radius) {
    WITH_RADIUS(radius, (strip_body<8, R>(image, filter, output, height, width)))
}
