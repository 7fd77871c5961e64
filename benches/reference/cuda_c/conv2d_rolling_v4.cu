// Rolling rows, 4 outputs per lane (kernels::conv2d::rolling, KERNEL_V4).
#include "conv2d_rolling.cuh"

extern "C" __global__ void __launch_bounds__(128, 6)
    conv2d_rolling_v4_cuda(const float* image, size_t image_len, const float* filter, size_t filter_len, float* output,
                           size_t output_len, unsigned height, unsigned width, unsigned radius) {
    rolling<4>(image, filter, output, height, width, radius);
}
